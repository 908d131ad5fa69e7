"""Entry point of the ``fsdp-skill`` command: the composition root of the adapters.

It builds one argparse tree from each adapter's ``add_commands`` (CLI: ask, show, verify, check, plan, export;
HTTP: serve; MCP: mcp; function calls: tools), runs the chosen handler and maps errors of the tree to
exit codes once (:mod:`fsdp_skill.adapters.exitcodes`).  Adapters never import each other; this module is
the only one that knows them all (:data:`COMMANDS`).  Only the adapter of the command being run registers
its parsers (the others' commands are bare names, so usage lines list every command), so ``ask`` imports
neither the HTTP nor the MCP adapter; heavy dependencies (FastAPI, the mcp SDK, pydantic's tool schemas,
torch) load inside handlers.
"""

from __future__ import annotations

import argparse
import codecs
import io
import json
import os
import sys

from fsdp_skill.adapters.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, exit_for
from fsdp_skill.errors import SkillError

ESCAPE_ERRORS = "fsdp-skill-escape"  # the codec error handler of stdout when its encoding is strict


def _escape(exc: UnicodeError) -> tuple[str, int]:
    """A character stdout cannot encode (a non-ASCII one under ``PYTHONIOENCODING=ascii``, an unpaired surrogate
    from a file name) as ``\\uXXXX`` (astral ones as a surrogate pair), which reads right on a terminal and keeps a
    JSON document valid JSON: outside strings JSON text is ASCII, so such a character is always inside one."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start : exc.end]:
        n = ord(ch)
        if n > 0xFFFF:
            n -= 0x10000
            out.append(f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}")
        else:
            out.append(f"\\u{n:04x}")
    return "".join(out), exc.end


codecs.register_error(ESCAPE_ERRORS, _escape)


def tolerant_stdout() -> None:
    """Make a strict stdout escape what its encoding cannot hold instead of raising UnicodeEncodeError (stderr
    already backslash-escapes, as Python sets it up); a stdout that is not a text stream or has another handler
    (``surrogateescape`` in the C locale) is left as it is."""
    stream = sys.stdout
    if getattr(stream, "errors", None) == "strict" and isinstance(stream, io.TextIOWrapper):
        try:
            stream.reconfigure(errors=ESCAPE_ERRORS)
        except (OSError, ValueError):  # closed, or a wrapper that refuses
            pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own exit code is 2 as well; keep its message one line
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


# Every subcommand, in the order of ``fsdp-skill --help``, and the adapter module whose ``add_commands``
# registers it (tests/test_cli.py checks this table against the adapters).
COMMANDS: dict[str, str] = {
    "ask": "cli",
    "show": "cli",
    "verify": "cli",
    "check": "cli",
    "plan": "cli",
    "export": "cli",
    "serve": "http",
    "mcp": "mcp",
    "tools": "tools",
}


def _register(adapter: str, sub, command: str | None = None) -> None:
    """Let ``adapter`` (a value of :data:`COMMANDS`) register its subcommands on ``sub``; the CLI adapter gives only
    ``command`` (the one about to run, when it is one of its own) its options."""
    if adapter == "cli":
        from fsdp_skill.adapters.cli.commands import add_commands as cli_commands

        cli_commands(sub, only=command)
        return
    if adapter == "http":
        from fsdp_skill.adapters.http import add_commands
    elif adapter == "mcp":
        from fsdp_skill.adapters.mcp import add_commands
    elif adapter == "tools":
        from fsdp_skill.adapters.tools import add_commands
    else:
        raise ValueError(f"unknown adapter {adapter!r}")
    add_commands(sub)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argparse tree of ``fsdp-skill``: with ``command`` (a key of :data:`COMMANDS`, the one about to run)
    only its adapter's subcommands get their options and the others are bare names, so ``ask`` imports
    neither the HTTP nor the MCP adapter and ``check`` neither the router (numpy) nor the runtime (see
    benchmarks/bench_ask.py, bench_check.py); without (``--help``, an unknown command) every adapter's tree."""
    p = _Parser(
        prog="fsdp-skill",
        description="Expert answers on PyTorch FSDP and torch.distributed, with code patterns run on a real process group.",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    chosen = COMMANDS.get(command) if command else None
    for adapter in dict.fromkeys(COMMANDS.values()):
        if chosen is None or adapter == chosen:
            _register(adapter, sub, command if chosen else None)
        else:  # one bare parser per adapter, its other commands as aliases (each parser costs argparse's gettext)
            first, *others = (c for c, a in COMMANDS.items() if a == adapter)
            sub.add_parser(first, aliases=others)
    return p


def main(argv: list[str] | None = None, *, verifier=None) -> int:
    """Run ``fsdp-skill ARGS``; returns the exit code (see :mod:`fsdp_skill.adapters.exitcodes`).

    ``verifier`` (a :class:`fsdp_skill.core.verify.snippets.Verifier`; None: the runtime's) backs every verdict.
    A command's ``--python PATH`` is validated (a bad one exits 2) and selects the target interpreter
    (``$FSDP_SKILL_PYTHON``) before its handler runs.  Output never fails on stdout's encoding
    (:func:`tolerant_stdout`).
    """
    tolerant_stdout()
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    command = next((c for c in ("verify", "check") if c in argv), None)
    if command and "--" in argv[argv.index(command) :]:  # verify / check --run SCRIPT.py -- ARGS: the script's own
        cut = argv.index("--", argv.index(command))
        argv, script_args = argv[:cut], argv[cut + 1 :]
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    args.verifier = verifier
    args.script_args = script_args
    args.argv = argv
    try:
        if args.command not in ("tools", "check"):  # an unusable $FSDP_SKILL_HOME is one line (exit 1) before any work
            from fsdp_skill.core.state import state_dir

            state_dir()
        static = args.command == "check" and not getattr(args, "run", False)
        if hasattr(args, "python") and not static:  # commands that run or introspect torch: the target interpreter
            from fsdp_skill.core.interpreter import use_python
            from fsdp_skill.runtime.target import limit_probes

            timeout = getattr(args, "timeout", None)
            limit_probes(timeout if isinstance(timeout, (int, float)) and timeout > 0 else None)
            use_python(args.python)
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe (``| head -1``) surfaces here, not at interpreter exit
        return code
    except SkillError as exc:
        code, name = exit_for(exc)
        print(f"fsdp-skill: error: {exc}", file=sys.stderr)
        if getattr(args, "json", False):
            sys.stdout.write(json.dumps({"error": str(exc), "code": name}) + "\n")
        return code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as ``cat`` does
        _silence_stdout()
        return EXIT_OK


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not report the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
