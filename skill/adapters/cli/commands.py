"""Terminal commands of the CLI adapter: ``ask``, ``show``, ``verify`` and ``export``.

Thin by design: each handler parses nothing itself (argparse did), calls the core and prints; errors of
the tree propagate to :func:`fsdp_skill.main.main`, which maps them once (:mod:`fsdp_skill.adapters.exitcodes`).
"""
from __future__ import annotations

import sys

from fsdp_skill.adapters.cli.verify import add_verify_parser
from fsdp_skill.adapters.exitcodes import EXIT_ABSTAINED, EXIT_OK
from fsdp_skill.core.state import PYTHON_HELP
from fsdp_skill.errors import QueryError


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
    answer = ask(question, k=args.k, verify=not args.no_verify, progress=_progress, verifier=args.verifier)
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
    from fsdp_skill.adapters.cli.render import section_markdown
    from fsdp_skill.core.knowledge import load_knowledge

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


def cmd_export(args) -> int:
    """``fsdp-skill export``: verified snippets as scripts + manifest.json + test_exported.py."""
    from fsdp_skill.core.export import export_snippets
    from fsdp_skill.core.snippets import select_snippets

    specs = select_snippets(args.snippet_ids, topics=args.topic, all_snippets=args.all)
    print(f"verifying {len(specs)} snippet(s) (cached verdicts are instant; a first run launches real ranks)…",
          file=sys.stderr)
    manifest = export_snippets(specs, args.out, include_unverified=args.include_unverified, progress=_progress,
                               verifier=args.verifier)
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


def add_commands(sub) -> None:
    """Register ``ask``, ``show``, ``verify`` and ``export`` on the ``fsdp-skill`` subparsers."""
    a = sub.add_parser("ask", help="answer a question (English or Chinese, or a pasted traceback)")
    a.add_argument("question", nargs="+", help="the question; '-' reads it from standard input")
    a.add_argument("-k", type=int, default=3, help="number of sections to return (1-20, default 3)")
    fmt = a.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the Answer as JSON (the stable contract)")
    fmt.add_argument("--markdown", action="store_true", help="print the answer as markdown")
    a.add_argument("--no-verify", action="store_true", help="return snippets as 'unverified' without running them")
    a.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    a.set_defaults(func=cmd_ask)
    s = sub.add_parser("show", help="print one knowledge section")
    s.add_argument("section_id", nargs="?", help="section id, e.g. fsdp2/meta-device-init")
    s.add_argument("--list", action="store_true", help="list every section id and title")
    s.add_argument("--json", action="store_true", help="print the section as JSON")
    s.set_defaults(func=cmd_show)
    add_verify_parser(sub)
    e = sub.add_parser("export", help="write verified snippets as torchrun-ready scripts with a manifest and a test runner")
    e.add_argument("snippet_ids", nargs="*", metavar="SNIPPET_ID", help="snippet ids, e.g. join/ddp-join")
    e.add_argument("--topic", action="append", default=[], metavar="T",
                   help="export every snippet of topic T, e.g. mixed-precision (repeatable)")
    e.add_argument("--all", action="store_true", help="export every snippet of the knowledge base")
    e.add_argument("--out", required=True, metavar="DIR", help="directory to write into (created if missing)")
    e.add_argument("--include-unverified", action="store_true",
                   help="also export snippets that did not pass (failed, timeout, skipped), marked NOT VERIFIED")
    e.add_argument("--json", action="store_true", help="print the manifest as JSON")
    e.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    e.set_defaults(func=cmd_export)
