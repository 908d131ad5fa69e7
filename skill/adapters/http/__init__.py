"""HTTP adapter (FastAPI + uvicorn): ``fsdp-skill serve``; the app itself is :mod:`fsdp_skill.adapters.http.app`.

This module is imported on every CLI start, so FastAPI and uvicorn load only inside the handler.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

from fsdp_skill.adapters.exitcodes import EXIT_OK
from fsdp_skill.adapters.options import PYTHON_HELP


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


def _seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not 0 < s < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, got {text}")
    return s


def _host(text: str) -> str:
    """``--host``: an address or name; IPv6 may be written in URL brackets (``[::1]``), which are removed."""
    host = text.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        raise argparse.ArgumentTypeError(f"host must be an address or a name, got {text!r}")
    return host


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def check_bind(host: str, port: int) -> None:
    """Bind ``host:port`` once and release it, so a busy port is one line before uvicorn starts.

    Raises InvalidArgument (exit 2) for a host that does not resolve or is not an address of this machine,
    SkillError (exit 1) when the port is in use or not permitted.
    """
    import errno
    import socket

    from fsdp_skill.errors import InvalidArgument, SkillError

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise InvalidArgument(f"--host {host}: cannot resolve it ({exc.strerror})") from None
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind(addr)
        except OSError as exc:
            where = f"{_url_host(host)}:{port}"
            if exc.errno == errno.EADDRNOTAVAIL:
                raise InvalidArgument(f"--host {host} is not an address of this machine") from None
            if exc.errno == errno.EADDRINUSE:
                raise SkillError(
                    f"cannot serve on {where}: the address is already in use (another server? pick another --port)"
                ) from None
            raise SkillError(f"cannot serve on {where}: {exc.strerror or exc}") from None


def cmd_serve(args) -> int:
    """``fsdp-skill serve``: the HTTP API (loopback unless --host says otherwise).

    Raises MissingDependency (exit 2) when FastAPI or uvicorn is not installed (extra ``serve``), and the
    errors of :func:`check_bind` (a busy port is exit 1, one line; never uvicorn's exit 3).
    """
    from fsdp_skill.core.extras import require
    from fsdp_skill.core.knowledge.cards import load_knowledge

    require("serve", "fsdp-skill serve")

    kb = load_knowledge()  # a bad card fails here with file:line, before the port is bound
    check_bind(args.host, args.port)
    if not _is_loopback(args.host):
        print(
            f"fsdp-skill: warning: serving on {args.host}: anyone who can reach port {args.port} can ask questions "
            f"and trigger verification runs of knowledge snippets (no route runs client code)",
            file=sys.stderr,
        )
    print(
        f"fsdp-skill: {len(kb.sections)} sections, {len(kb.snippets)} snippets; API docs at "
        f"http://{_url_host(args.host)}:{args.port}/docs",
        file=sys.stderr,
    )
    from fsdp_skill.core.interpreter import target_python, torch_version

    print(f"fsdp-skill: target interpreter {target_python()} (torch {torch_version() or 'not installed'})", file=sys.stderr)
    from fsdp_skill.adapters.http.app import serve

    try:
        serve(host=args.host, port=args.port, workers=args.workers, log_level=args.log_level, read_timeout=args.read_timeout)
    except SystemExit as exc:  # uvicorn exits 3 when it cannot start (3 means "abstained" here)
        if exc.code in (None, 0):
            return EXIT_OK
        from fsdp_skill.errors import SkillError

        raise SkillError(
            f"the HTTP server on {_url_host(args.host)}:{args.port} could not start (uvicorn exit {exc.code}; see its log above)"
        ) from None
    return EXIT_OK


def add_commands(sub) -> None:
    """Register ``serve`` on the ``fsdp-skill`` subparsers."""
    s = sub.add_parser("serve", help="serve the HTTP API (FastAPI + uvicorn; OpenAPI at /docs)")
    s.add_argument(
        "--host", type=_host, default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only; IPv6 as ::1 or [::1])"
    )
    s.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    s.add_argument("--workers", type=_positive, default=1, help="uvicorn worker processes (default 1)")
    s.add_argument(
        "--read-timeout",
        type=_seconds,
        default=30.0,
        metavar="S",
        help="close a connection whose next request has not arrived whole S seconds after it opened "
        "or after its previous response (default 30; a request being handled is never cut)",
    )
    s.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn log level (default info)",
    )
    s.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    s.set_defaults(func=cmd_serve)
