"""MCP adapter: an MCP server over stdio (``fsdp-skill mcp``) exposing the tools of :mod:`fsdp_skill.core.toolspec`.

Built on the ``mcp`` SDK 2.x ``MCPServer`` (the former FastMCP).  Each tool's arguments are the fields
of its pydantic input model (so ``inputSchema`` equals the function-call ``parameters`` printed by
``fsdp-skill tools``) and its result is the pydantic output model (``outputSchema`` + structured content).

The core is synchronous and verification launches processes, so every call runs in a worker thread,
off the server's event loop.  Errors the caller can fix (bad question, unknown id, refused export)
come back as tool errors (``isError: true``) whose text says what to change.
"""
from __future__ import annotations

import inspect
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from fsdp_skill.core.toolspec import ToolSpec, tool_specs
from fsdp_skill.errors import SkillError

INSTRUCTIONS = (
    "Expert answers on PyTorch FSDP / FSDP2 and torch.distributed (sharding 分片, mixed precision 混合精度, "
    "CPU offload 卸载, Join 不均匀输入, backends 后端, init_process_group 初始化, checkpoint 检查点), whose code "
    "snippets are run on a real multi-process process group. Call `ask` first; recommend snippets whose "
    "verification.status is 'passed'; use `verify_snippet` for 'unverified' ones and `export_snippet` for a file."
)


def _tool_function(spec: ToolSpec, verifier=None):
    """An async function whose keyword parameters are the fields of ``spec.input`` and whose result is ``spec.output``."""

    async def tool(**kwargs: Any):
        args = spec.input(**kwargs)
        try:
            return await anyio.to_thread.run_sync(spec.call, args, verifier)
        except SkillError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    params = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[field.annotation, field],
                          default=inspect.Parameter.empty if field.is_required() else field.default)
        for name, field in spec.input.model_fields.items()
    ]
    tool.__signature__ = inspect.Signature(params, return_annotation=spec.output)
    tool.__name__ = spec.name
    tool.__doc__ = spec.description
    return tool


def build_server(verifier=None) -> MCPServer:
    """The MCP server with every tool of :func:`fsdp_skill.core.toolspec.tool_specs` registered; ``verifier``
    (a :class:`fsdp_skill.core.snippets.Verifier`, None: the runtime's) backs every verdict."""
    from importlib.metadata import version

    server = MCPServer(name="fsdp-skill", title="FSDP expert (verified snippets)", instructions=INSTRUCTIONS,
                       version=version("fsdp-skill"), log_level="WARNING")
    for spec in tool_specs():
        server.add_tool(_tool_function(spec, verifier), name=spec.name, title=spec.title, description=spec.description,
                        structured_output=True)
    return server


def run_stdio() -> None:
    """Serve MCP over this process's stdin/stdout until the client closes it."""
    build_server().run("stdio")
