"""CLI subcommands of the interface adapters: ``serve``, ``mcp``, ``tools`` and ``export``.

Registered through ``fsdp_skill.adapters.cli.commands.SUBCOMMAND_MODULES``.  This module is imported on every CLI start, so
it imports nothing heavy: FastAPI, uvicorn, the mcp SDK and the runtime load inside the handlers.
Handlers return the exit codes of :mod:`fsdp_skill.adapters.cli.commands` (errors propagate to ``fsdp_skill.adapters.cli.commands.main``).
"""
from __future__ import annotations

import ipaddress
import json
import sys

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _port(text: str) -> int:
    import argparse

    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be an integer, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port({port}) must be in 0..65535")
    return port


def _positive(text: str) -> int:
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cmd_serve(args) -> int:
    """``fsdp-skill serve``: the HTTP API (loopback unless --host says otherwise)."""
    from fsdp_skill.core.knowledge import load_knowledge

    kb = load_knowledge()  # a bad card fails here with file:line, before the port is bound
    if not _is_loopback(args.host):
        print(f"fsdp-skill: warning: serving on {args.host}: anyone who can reach port {args.port} can ask questions "
              f"and trigger verification runs of knowledge snippets (no route runs client code)", file=sys.stderr)
    print(f"fsdp-skill: {len(kb.sections)} sections, {len(kb.snippets)} snippets; API docs at "
          f"http://{args.host}:{args.port}/docs", file=sys.stderr)
    from fsdp_skill.adapters.http.app import serve

    serve(host=args.host, port=args.port, workers=args.workers, log_level=args.log_level)
    return EXIT_OK


def cmd_mcp(args) -> int:
    """``fsdp-skill mcp``: an MCP server on stdin/stdout (for agent clients)."""
    from fsdp_skill.core.knowledge import load_knowledge

    load_knowledge()  # fail before the handshake on a bad card
    from fsdp_skill.adapters.mcp.server import run_stdio

    run_stdio()
    return EXIT_OK


def cmd_tools(args) -> int:
    """``fsdp-skill tools --format openai|anthropic``: function-call schemas as JSON."""
    from fsdp_skill.core.toolspec import function_schemas

    sys.stdout.write(json.dumps(function_schemas(args.format), ensure_ascii=False, indent=2) + "\n")
    return EXIT_OK


def cmd_export(args) -> int:
    """``fsdp-skill export``: verified snippets as scripts + manifest.json + test_exported.py."""
    from fsdp_skill.adapters.cli.commands import _progress
    from fsdp_skill.core.export import export_snippets, select_snippets

    specs = select_snippets(args.snippet_ids, topics=args.topic, all_snippets=args.all)
    print(f"verifying {len(specs)} snippet(s) (cached verdicts are instant; a first run launches real ranks)…",
          file=sys.stderr)
    manifest = export_snippets(specs, args.out, include_unverified=args.include_unverified, progress=_progress)
    if args.json:
        sys.stdout.write(manifest.model_dump_json() + "\n")
    else:
        for e in manifest.entries:
            mark = "passed" if e.verified else f"NOT VERIFIED ({e.verdict.status})"
            print(f"{args.out.rstrip('/')}/{e.file}\t{e.id}\t{mark}")
        print(f"wrote {len(manifest.entries)} script(s), manifest.json and test_exported.py to {args.out} "
              f"(re-verify here with: pytest {args.out.rstrip('/')}/test_exported.py)")
    unverified = [e.id for e in manifest.entries if not e.verified]
    if unverified:
        print(f"fsdp-skill: warning: exported NOT VERIFIED: {', '.join(unverified)}", file=sys.stderr)
    return EXIT_OK


def add_parsers(sub) -> None:
    """Register ``serve``, ``mcp``, ``tools`` and ``export`` on the ``fsdp-skill`` subparsers."""
    s = sub.add_parser("serve", help="serve the HTTP API (FastAPI + uvicorn; OpenAPI at /docs)")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    s.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    s.add_argument("--workers", type=_positive, default=1, help="uvicorn worker processes (default 1)")
    s.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn log level (default info)")
    s.set_defaults(func=cmd_serve)

    m = sub.add_parser("mcp", help="serve the tools over MCP on stdin/stdout (for agent clients)")
    m.set_defaults(func=cmd_mcp)

    t = sub.add_parser("tools", help="print function-call schemas of the tools (JSON) for non-MCP frameworks")
    t.add_argument("--format", choices=["openai", "anthropic"], default="openai", help="schema flavour (default openai)")
    t.set_defaults(func=cmd_tools)

    e = sub.add_parser("export", help="write verified snippets as torchrun-ready scripts with a manifest and a test runner")
    e.add_argument("snippet_ids", nargs="*", metavar="SNIPPET_ID", help="snippet ids, e.g. join/ddp-join")
    e.add_argument("--topic", action="append", default=[], metavar="T",
                   help="export every snippet of topic T, e.g. mixed-precision (repeatable)")
    e.add_argument("--all", action="store_true", help="export every snippet of the knowledge base")
    e.add_argument("--out", required=True, metavar="DIR", help="directory to write into (created if missing)")
    e.add_argument("--include-unverified", action="store_true",
                   help="also export snippets that did not pass (failed, timeout, skipped), marked NOT VERIFIED")
    e.add_argument("--json", action="store_true", help="print the manifest as JSON")
    e.set_defaults(func=cmd_export)
