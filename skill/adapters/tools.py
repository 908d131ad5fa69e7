"""Function-call adapter: the agent tools as OpenAI / Anthropic function schemas, and running their calls.

``fsdp-skill tools --format openai|anthropic`` prints :func:`function_schemas`; :func:`invoke` runs a tool
call that such a framework returns.  The tools themselves (names, inputs, outputs, core calls) are
:mod:`fsdp_skill.core.toolspec`, shared with the MCP adapter.

Every CLI start imports this module to register ``tools``, so pydantic and the tool catalogue (which imports
the whole core) load only inside the functions that use them.
"""

from __future__ import annotations

import copy
import json
import sys
from typing import TYPE_CHECKING, Literal

from fsdp_skill.errors import InvalidArgument

if TYPE_CHECKING:
    from pydantic import BaseModel

    from fsdp_skill.records import Record

EXIT_OK = 0


def _strip_titles(schema):
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def parameters_schema(model: type[BaseModel]) -> dict:
    """JSON schema of a tool's input model, as function-call ``parameters`` (no titles)."""
    schema = _strip_titles(copy.deepcopy(model.model_json_schema()))
    schema.pop("description", None)
    return schema


def function_schemas(fmt: Literal["openai", "anthropic"] = "openai") -> list[dict]:
    """Function-call schemas of every tool, for OpenAI-style ``tools=`` or Anthropic-style ``tools=``."""
    from fsdp_skill.core.toolspec import tool_specs

    out = []
    for spec in tool_specs():
        params = parameters_schema(spec.input)
        if fmt == "openai":
            out.append(
                {"type": "function", "function": {"name": spec.name, "description": spec.description, "parameters": params}}
            )
        elif fmt == "anthropic":
            out.append({"name": spec.name, "description": spec.description, "input_schema": params})
        else:
            raise InvalidArgument(f"unknown format {fmt!r}; use 'openai' or 'anthropic'")
    return out


def invoke(name: str, arguments: dict | str | None, *, verifier=None) -> BaseModel | Record:
    """Run one tool call from a function-calling framework: validate ``arguments`` (dict or JSON text), call the core.

    The result is the tool's output type (a pydantic model, or a record of :mod:`fsdp_skill.records`); either
    one's ``model_dump_json()`` is the tool result to send back.

    ``verifier``: a :class:`fsdp_skill.core.verify.snippets.Verifier` (None: the runtime's).
    Raises NotFoundError (unknown tool or id), QueryError (bad question), InvalidArgument (bad arguments), HarnessError.
    """
    from pydantic import ValidationError

    from fsdp_skill.core.toolspec import tool_spec

    spec = tool_spec(name)
    try:
        if isinstance(arguments, str):
            arguments = json.loads(arguments or "{}")
        args = spec.input.model_validate(arguments or {})
    except (ValueError, ValidationError) as exc:
        raise InvalidArgument(f"invalid arguments for tool {name!r}: {exc}") from exc
    return spec.call(args, verifier)


def cmd_tools(args) -> int:
    """``fsdp-skill tools --format openai|anthropic``: function-call schemas as JSON."""
    sys.stdout.write(json.dumps(function_schemas(args.format), ensure_ascii=False, indent=2) + "\n")
    return EXIT_OK


def add_commands(sub) -> None:
    """Register ``tools`` on the ``fsdp-skill`` subparsers."""
    t = sub.add_parser("tools", help="print function-call schemas of the tools (JSON) for non-MCP frameworks")
    t.add_argument("--format", choices=["openai", "anthropic"], default="openai", help="schema flavour (default openai)")
    t.set_defaults(func=cmd_tools)
