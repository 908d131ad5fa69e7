"""MCP adapter: an MCP server over stdio (``fsdp-skill mcp``) exposing the tools of :mod:`fsdp_skill.core.toolspec`.

Built on the ``mcp`` SDK 2.x ``MCPServer`` (the former FastMCP).  Each tool's arguments are the fields
of its pydantic input model (so ``inputSchema`` equals the function-call ``parameters`` printed by
``fsdp-skill tools``) and its result is the output type (a pydantic model or a record; ``outputSchema`` +
structured content, both from pydantic's ``TypeAdapter`` of that type).

The core is synchronous and verification launches processes, so every call runs in a worker thread,
off the server's event loop, except a tool whose spec has an async form (``plan_memory``): its arguments are
checked at once and its plan waits in the process's plan queue (:mod:`fsdp_skill.core.plan.queue`, the one
``POST /v1/plan`` uses) without a thread; a full queue is a tool error at once ("the plan queue is full ...
retry in about N s").  Errors the caller can fix (bad question, unknown id, refused export)
come back as tool errors (``isError: true``) whose text says what to change; so do arguments that do not
match the input model exactly (validated strictly: ``"k": "3"`` is not coerced, unknown fields are refused,
as over HTTP).  Each tool carries annotations (readOnlyHint, idempotentHint, destructiveHint, openWorldHint)
from its spec.  ``verify_script`` (code sent by the caller) and ``read_run_file`` (a file its run wrote) are
registered only when ``build_server`` gets a ``script_dir``, which only ``fsdp-skill mcp --allow-run-scripts`` passes.  Framing and JSON-RPC errors:
:mod:`fsdp_skill.adapters.mcp.stdio`.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import ToolAnnotations
from pydantic import BaseModel

from fsdp_skill.core.toolspec import ToolSpec, script_tool_specs, tool_specs
from fsdp_skill.errors import SkillError

INSTRUCTIONS = (
    "Expert answers on PyTorch FSDP / FSDP2 and torch.distributed (sharding 分片, mixed precision 混合精度, "
    "CPU offload 卸载, Join 不均匀输入, backends 后端, init_process_group 初始化, checkpoint 检查点), whose code "
    "snippets are run on a real multi-process process group. Call `ask` first; recommend snippets whose "
    "verification.status is 'passed'; use `verify_snippet` for 'unverified' ones and `export_snippet` for a file; "
    "`list_sections` lists section and snippet ids; `check_script` reviews a training script statically "
    "(call it before running a script you wrote)."
)


class StrictArguments(FuncMetadata):
    """The SDK's argument handling with the tool's own input model, validated strictly: no JSON-in-string
    pre-parsing, no type coercion ("3" is not an int), unknown fields refused (the models forbid extras)."""

    input_model: Any = None

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        """The validated arguments the call gave, as keyword arguments (a field left out stays out, so the tool's
        model still knows it was not given); raises pydantic's ValidationError (a tool error)."""
        model: BaseModel = self.input_model.model_validate(arguments_to_validate, strict=True)
        return {name: getattr(model, name) for name in model.model_fields_set}


def _tool_function(spec: ToolSpec, verifier=None):
    """An async function whose keyword parameters are the fields of ``spec.input`` and whose result is ``spec.output``."""

    async def tool(**kwargs: Any):
        args = spec.input(**kwargs)
        try:
            if spec.acall is not None:  # plan_memory: checked at once, then the plan queue (no thread while it waits)
                return await spec.acall(args, verifier)
            return await anyio.to_thread.run_sync(spec.call, args, verifier)
        except SkillError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    # The signature only names the arguments: their schema and validation are spec.input's (see mcp_tool).
    params = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=field.annotation,
            default=inspect.Parameter.empty if field.is_required() else None,
        )
        for name, field in spec.input.model_fields.items()
    ]
    # inspect.signature reads __signature__, an attribute functions do not declare
    tool.__signature__ = inspect.Signature(params, return_annotation=spec.output)  # type: ignore[attr-defined]
    tool.__name__ = spec.name
    tool.__doc__ = spec.description
    return tool


def tool_annotations(spec: ToolSpec) -> ToolAnnotations:
    """The MCP annotations of a tool, from its spec's hints (no tool reaches outside this host)."""
    if spec.read_only:
        return ToolAnnotations(title=spec.title, read_only_hint=True, open_world_hint=False)
    return ToolAnnotations(
        title=spec.title,
        read_only_hint=False,
        destructive_hint=spec.destructive,
        idempotent_hint=spec.idempotent,
        open_world_hint=False,
    )


def mcp_tool(spec: ToolSpec, verifier=None) -> Tool:
    """The SDK tool of ``spec``: schema from its input model, strict arguments, annotations, structured output.

    The output type (a pydantic model, or a record: a standard-library dataclass, see :mod:`fsdp_skill.records`)
    goes to the SDK as it is: its ``TypeAdapter`` gives ``outputSchema`` and the structured content (the SDK's
    own reading of a dataclass return annotation would rebuild it as a new model from its annotations)."""
    tool = Tool.from_function(
        _tool_function(spec, verifier),
        name=spec.name,
        title=spec.title,
        description=spec.description,
        annotations=tool_annotations(spec),
        structured_output=False,
    )
    tool.parameters = spec.input.model_json_schema(by_alias=True)  # what StrictArguments enforces
    tool.fn_metadata = StrictArguments(
        arg_model=tool.fn_metadata.arg_model,
        output_model=spec.output,  # output_schema: TypeAdapter(spec.output)'s, derived by FuncMetadata
        wrap_output=False,
        input_model=spec.input,
    )
    return tool


def build_server(verifier=None, *, script_dir: str | None = None) -> MCPServer:
    """The MCP server with every tool of :func:`fsdp_skill.core.toolspec.tool_specs` registered; ``verifier``
    (a :class:`fsdp_skill.core.verify.snippets.Verifier`, None: the runtime's) backs every verdict.  With
    ``script_dir`` (an existing directory) ``verify_script`` and ``read_run_file`` are registered too, their
    working directories under it."""
    from importlib.metadata import version

    specs = list(tool_specs())
    if script_dir is not None:
        specs.extend(script_tool_specs(script_dir))
    return MCPServer(
        name="fsdp-skill",
        title="FSDP expert (verified snippets)",
        instructions=INSTRUCTIONS,
        version=version("fsdp-skill"),
        log_level="WARNING",
        tools=[mcp_tool(spec, verifier) for spec in specs],
    )


def run_stdio(*, allow_run_scripts: bool = False) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes it and every request is answered.

    ``allow_run_scripts`` adds ``verify_script`` and ``read_run_file``, whose working directories live in a temporary session
    directory (``fsdp-skill-mcp-PID-*``) removed when the server exits, also on SIGTERM (exit 0); session
    directories of servers that were SIGKILLed (their PID is gone) are removed when the next one starts.
    """
    import signal
    import tempfile

    from fsdp_skill.adapters.mcp.stdio import run

    if not allow_run_scripts:
        run(build_server())
        return
    import shutil

    from fsdp_skill.core.state import state_dir
    from fsdp_skill.core.verify.sent_scripts import check_apart

    _remove_dead_sessions(tempfile.gettempdir())
    with tempfile.TemporaryDirectory(prefix=f"fsdp-skill-mcp-{os.getpid()}-") as session:
        check_apart(session, str(state_dir()))  # no relative path from a workdir reaches the tool's state

        def stop(signum, frame):  # runs never outlive us: each shepherd ends its tree when our pipe closes
            shutil.rmtree(session, ignore_errors=True)
            os._exit(0)

        signal.signal(signal.SIGTERM, stop)
        run(build_server(script_dir=session))


def _remove_dead_sessions(tmp: str) -> None:
    """Remove ``tmp/fsdp-skill-mcp-PID-*`` directories whose server process no longer exists."""
    import re
    import shutil

    for name in os.listdir(tmp):
        m = re.fullmatch(r"fsdp-skill-mcp-(\d+)-\w+", name)
        if not m:
            continue
        try:
            os.kill(int(m[1]), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
        except (PermissionError, OverflowError):  # someone else's live process, or not a pid
            pass
