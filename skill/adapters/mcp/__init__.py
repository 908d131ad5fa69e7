"""MCP adapter (the MCP SDK over stdio): ``fsdp-skill mcp``; the server is :mod:`fsdp_skill.adapters.mcp.server`.

This module is imported on every CLI start, so the mcp SDK loads only inside the handler.
"""

from __future__ import annotations

from fsdp_skill.adapters.exitcodes import EXIT_OK
from fsdp_skill.adapters.options import PYTHON_HELP


def cmd_mcp(args) -> int:
    """``fsdp-skill mcp [--allow-run-scripts]``: an MCP server on stdin/stdout (for agent clients); the flag
    adds the ``verify_script`` tool, which runs code the client sends.

    Raises MissingDependency (exit 2) when the MCP SDK is not installed (extra ``mcp``).
    """
    from fsdp_skill.core.extras import require
    from fsdp_skill.core.knowledge.cards import load_knowledge

    require("mcp", "fsdp-skill mcp")

    load_knowledge()  # fail before the handshake on a bad card
    from fsdp_skill.adapters.mcp.server import run_stdio

    run_stdio(allow_run_scripts=args.allow_run_scripts)
    return EXIT_OK


def add_commands(sub) -> None:
    """Register ``mcp`` on the ``fsdp-skill`` subparsers."""
    m = sub.add_parser("mcp", help="serve the tools over MCP on stdin/stdout (for agent clients)")
    m.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    m.add_argument(
        "--allow-run-scripts",
        action="store_true",
        help="add the verify_script tool: run scripts the client sends (its own code, arguments and "
        "environment) on this host, in working directories kept for the session",
    )
    m.set_defaults(func=cmd_mcp)
