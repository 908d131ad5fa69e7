"""HTTP adapter (FastAPI + uvicorn): ``fsdp-skill serve``; the app itself is :mod:`fsdp_skill.adapters.http.app`.

This module is imported on every CLI start, so FastAPI and uvicorn load only inside the handler.
"""
from __future__ import annotations

import argparse
import ipaddress
import sys

from fsdp_skill.adapters.exitcodes import EXIT_OK
from fsdp_skill.core.state import PYTHON_HELP


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be an integer, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port({port}) must be in 0..65535")
    return port


def _positive(text: str) -> int:
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
    """``fsdp-skill serve``: the HTTP API (loopback unless --host says otherwise).

    Raises MissingDependency (exit 2) when FastAPI or uvicorn is not installed (extra ``serve``).
    """
    from fsdp_skill.core.extras import require
    from fsdp_skill.core.knowledge import load_knowledge

    require("serve", "fsdp-skill serve")

    kb = load_knowledge()  # a bad card fails here with file:line, before the port is bound
    if not _is_loopback(args.host):
        print(f"fsdp-skill: warning: serving on {args.host}: anyone who can reach port {args.port} can ask questions "
              f"and trigger verification runs of knowledge snippets (no route runs client code)", file=sys.stderr)
    print(f"fsdp-skill: {len(kb.sections)} sections, {len(kb.snippets)} snippets; API docs at "
          f"http://{args.host}:{args.port}/docs", file=sys.stderr)
    from fsdp_skill.core.state import target_python, torch_version

    print(f"fsdp-skill: target interpreter {target_python()} (torch {torch_version() or 'not installed'})",
          file=sys.stderr)
    from fsdp_skill.adapters.http.app import serve

    serve(host=args.host, port=args.port, workers=args.workers, log_level=args.log_level)
    return EXIT_OK


def add_commands(sub) -> None:
    """Register ``serve`` on the ``fsdp-skill`` subparsers."""
    s = sub.add_parser("serve", help="serve the HTTP API (FastAPI + uvicorn; OpenAPI at /docs)")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    s.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    s.add_argument("--workers", type=_positive, default=1, help="uvicorn worker processes (default 1)")
    s.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn log level (default info)")
    s.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    s.set_defaults(func=cmd_serve)
