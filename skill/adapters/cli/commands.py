"""Command-line adapter: ``fsdp-skill ask | show | verify | export | serve | mcp | tools``.

Thin by design: it parses arguments, calls the core (:func:`fsdp_skill.core.answer.ask`, the knowledge, the
runtime) and translates results and errors.  Exit codes:

    0  answered (or the command succeeded)
    1  a verdict failed or timed out (``verify``), or an internal error (bad knowledge card, harness)
    2  bad usage or bad input (empty / oversized / binary question, unknown id, k out of range)
    3  ``ask`` abstained: the question is outside FSDP / torch.distributed (the answer says why)
  130  interrupted (Ctrl-C)
"""
from __future__ import annotations

import argparse
import json
import sys

from fsdp_skill.errors import KnowledgeError, NotFoundError, QueryError, SkillError

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_ABSTAINED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own exit code is 2 as well; keep its message one line
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _read_question(words: list[str]) -> str:
    if words == ["-"]:
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise QueryError("standard input is not UTF-8 text") from None
    return " ".join(words)


def _progress(done: int, total: int, verdict) -> None:
    """Progress of the snippets an answer had to run now (cached verdicts do not report here)."""
    if done == 1:
        print(f"verifying {total} snippet(s) on a real process group (first run starts the launcher)…", file=sys.stderr)
    sid = verdict.snippet_id or "script"
    print(f"[{done}/{total}] verified {sid}: {verdict.status} ({(verdict.seconds or 0):.2f} s)", file=sys.stderr)


def cmd_ask(args) -> int:
    """``fsdp-skill ask QUESTION``: print the answer (rich, --markdown or --json)."""
    from fsdp_skill.core.answer import ask

    question = _read_question(args.question)
    answer = ask(question, k=args.k, verify=not args.no_verify, progress=_progress)
    if args.json:
        sys.stdout.write(answer.model_dump_json(indent=None) + "\n")
    elif args.markdown:
        from fsdp_skill.adapters.cli.render import answer_markdown

        sys.stdout.write(answer_markdown(answer))
    else:
        from fsdp_skill.adapters.cli.render import print_answer

        print_answer(answer)
    return EXIT_ABSTAINED if answer.abstained else EXIT_OK


def cmd_show(args) -> int:
    """``fsdp-skill show SECTION_ID``: print one knowledge section (markdown or --json)."""
    from fsdp_skill.core.knowledge import load_knowledge
    from fsdp_skill.adapters.cli.render import section_markdown

    kb = load_knowledge()
    if args.list:
        for s in kb.sections.values():
            print(f"{s.id}\t{s.title}")
        return EXIT_OK
    if not args.section_id:
        raise QueryError("give a SECTION_ID (see `fsdp-skill show --list`)")
    section = kb.section(args.section_id)
    if args.json:
        sys.stdout.write(section.model_dump_json() + "\n")
    else:
        sys.stdout.write(section_markdown(section))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every subcommand."""
    p = _Parser(prog="fsdp-skill", description="Expert answers on PyTorch FSDP and torch.distributed, "
                "with code patterns run on a real process group.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    a = sub.add_parser("ask", help="answer a question (English or Chinese, or a pasted traceback)")
    a.add_argument("question", nargs="+", help="the question; '-' reads it from standard input")
    a.add_argument("-k", type=int, default=3, help="number of sections to return (1-20, default 3)")
    fmt = a.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the Answer as JSON (the stable contract)")
    fmt.add_argument("--markdown", action="store_true", help="print the answer as markdown")
    a.add_argument("--no-verify", action="store_true", help="return snippets as 'unverified' without running them")
    a.set_defaults(func=cmd_ask)
    s = sub.add_parser("show", help="print one knowledge section")
    s.add_argument("section_id", nargs="?", help="section id, e.g. fsdp2/meta-device-init")
    s.add_argument("--list", action="store_true", help="list every section id and title")
    s.add_argument("--json", action="store_true", help="print the section as JSON")
    s.set_defaults(func=cmd_show)
    for module, register in SUBCOMMAND_MODULES:
        import importlib

        getattr(importlib.import_module(module), register)(sub)
    return p


# Subcommands whose modules add their own parsers; each handler imports its heavy parts lazily.
SUBCOMMAND_MODULES: list[tuple[str, str]] = [
    ("fsdp_skill.adapters.cli.verify", "add_verify_parser"),
    ("fsdp_skill.adapters.cli.interfaces", "add_parsers"),
]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fsdp-skill`` console script; returns the exit code (see module docstring)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (QueryError, NotFoundError) as exc:
        _error(args, exc, "bad_input" if isinstance(exc, QueryError) else "not_found")
        return EXIT_USAGE
    except KnowledgeError as exc:
        _error(args, exc, "knowledge_error")
        return EXIT_FAIL
    except SkillError as exc:
        _error(args, exc, "error")
        return EXIT_FAIL
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK


def _error(args, exc: Exception, code: str) -> None:
    print(f"fsdp-skill: error: {exc}", file=sys.stderr)
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps({"error": str(exc), "code": code}) + "\n")


if __name__ == "__main__":
    sys.exit(main())
