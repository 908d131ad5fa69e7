"""Terminal commands of the CLI adapter: ``ask``, ``show``, ``verify`` and ``export``.

Thin by design: each handler parses nothing itself (argparse did), calls the core and prints; errors of
the tree propagate to :func:`fsdp_skill.main.main`, which maps them once (:mod:`fsdp_skill.adapters.exitcodes`).
"""

from __future__ import annotations

import os
import sys

from fsdp_skill.adapters.exitcodes import EXIT_ABSTAINED, EXIT_FAIL, EXIT_OK
from fsdp_skill.adapters.options import PYTHON_HELP
from fsdp_skill.errors import QueryError, UsageError


def _read_question(words: list[str]) -> str:
    if words == ["-"]:
        if sys.stdin is None:  # started with stdin closed (``ask - <&-``)
            raise UsageError("'-' reads the question from standard input, which is closed")
        from fsdp_skill.core.answer import MAX_QUESTION_CHARS

        limit = 4 * MAX_QUESTION_CHARS  # bytes: UTF-8 holds a character in at most 4
        try:
            data = sys.stdin.buffer.read(limit + 1)  # an endless stream is refused past the limit, not read to the end
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read the question from standard input: {exc}") from None
        if len(data) > limit:
            raise QueryError(f"standard input holds more than a question's {MAX_QUESTION_CHARS:,} characters")
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


def _before_run(runs: list[tuple[str, str | None]]) -> None:
    """Before an answer's snippets run: which will, and what the compatibility record already says for this torch."""
    print(
        f"{len(runs)} snippet(s) have no verdict for this environment yet; before they run, the compatibility record:",
        file=sys.stderr,
    )
    for sid, recorded in runs:
        print(f"  {sid}: {recorded or 'no torch here to compare with'}", file=sys.stderr)


def cmd_ask(args) -> int:
    """``fsdp-skill ask QUESTION``: print the answer (rich, --markdown or --json)."""
    from fsdp_skill.core.answer import ask

    question = _read_question(args.question)
    answer = ask(
        question,
        k=args.k,
        verify=not args.no_verify,
        progress=_progress,
        verifier=args.verifier,
        language=args.lang,
        before_run=_before_run,
    )
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
    """``fsdp-skill show SECTION_ID``: print one knowledge section (markdown or --json); ``--list`` lists
    section ids (``--snippets``: snippet ids), as tab-separated lines or a JSON array."""
    from fsdp_skill.adapters.cli.render import section_markdown
    from fsdp_skill.core.knowledge.cards import load_knowledge

    kb = load_knowledge()
    if args.list:
        return _list(kb, args)
    if args.snippets or args.topic:
        raise UsageError("--snippets and --topic go with --list")
    if not args.section_id:
        raise UsageError("give a SECTION_ID (see `fsdp-skill show --list`)")
    section = kb.section(args.section_id)
    if args.json:
        sys.stdout.write(section.model_dump_json() + "\n")
    else:
        sys.stdout.write(section_markdown(section, args.lang))
    return EXIT_OK


def _list(kb, args) -> int:
    """``show --list [--snippets] [--topic T] [--json]``; raises NotFoundError for an unknown topic."""
    import json

    if args.section_id:
        raise UsageError("give a SECTION_ID or --list, not both")
    from fsdp_skill.core.knowledge.catalogue import catalogue

    sections = catalogue(args.topic, kb=kb).sections
    if args.snippets:
        rows = [
            {"id": sp.id, "section": s.id, "world_size": sp.world_size, "requires": sp.requires}
            for s in sections
            for sp in s.snippets
        ]
        lines = [f"{r['id']}\t{r['section']}" for r in rows]
    else:
        rows = [{"id": s.id, "title": s.title, "topic": s.topic, "snippets": len(s.snippets)} for s in sections]
        lines = [f"{r['id']}\t{r['title']}" for r in rows]
    if args.json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write("".join(line + "\n" for line in lines))
    return EXIT_OK


def cmd_export(args) -> int:
    """``fsdp-skill export``: verified snippets as scripts + manifest.json + test_exported.py.

    Exit 0 when every selected snippet that can run here passed (``--all`` / ``--topic`` leave out, and
    list, the ones skipped on this host), 1 when one failed, timed out or was refused; bad input raises."""
    from fsdp_skill.core.verify.export import check_out_dir, export_snippets
    from fsdp_skill.core.verify.snippets import select_snippets

    specs = select_snippets(args.snippet_ids, topics=args.topic, all_snippets=args.all)
    check_out_dir(args.out)
    print(f"verifying {len(specs)} snippet(s) (cached verdicts are instant; a first run launches real ranks)…", file=sys.stderr)
    manifest = export_snippets(
        specs,
        args.out,
        include_unverified=args.include_unverified,
        partial=bool(args.all or args.topic),
        progress=_progress,
        verifier=args.verifier,
    )
    new = [e for e in manifest.entries if e.id in set(manifest.exported)]
    if args.json:
        sys.stdout.write(manifest.model_dump_json() + "\n")
    else:
        for e in new:
            mark = "passed" if e.verified else f"NOT VERIFIED ({e.verdict.status})"
            print(f"{os.path.join(args.out, e.file)}\t{e.id}\t{mark}")
        for n in manifest.skipped:
            print(f"-\t{n.id}\tnot exported: {n.status}" + (f" ({n.reason})" if n.reason else ""))
        if new:
            print(
                f"wrote {len(new)} script(s), manifest.json and test_exported.py to {args.out} "
                f"(re-verify here with: pytest {os.path.join(args.out, 'test_exported.py')})"
            )
        else:
            print(f"wrote nothing to {args.out}: no selected snippet passed on this host")
    for note in manifest.notes:
        print(f"fsdp-skill: warning: {args.out}/manifest.json: {note}", file=sys.stderr)
    unverified = [e.id for e in new if not e.verified]
    if unverified:
        print(f"fsdp-skill: warning: exported NOT VERIFIED: {', '.join(unverified)}", file=sys.stderr)
    broken = [n for n in manifest.skipped if n.status != "skipped"]
    if manifest.skipped:
        print(
            f"fsdp-skill: {len(manifest.skipped)} snippet(s) not exported: "
            + "; ".join(f"{n.id} ({n.status})" for n in manifest.skipped)
            + ("" if broken else " — none of them can run on this host"),
            file=sys.stderr,
        )
    return EXIT_FAIL if broken else EXIT_OK


def add_commands(sub, only: str | None = None) -> None:
    """Register ``ask``, ``show``, ``verify``, ``check``, ``plan`` and ``export`` on the ``fsdp-skill`` subparsers.

    ``only`` (one of them, the command about to run): that one gets its options and the others are bare names,
    which is all argparse needs to run it (building every option tree is a few ms of a cached ``ask``)."""
    builders = {
        "ask": _add_ask,
        "show": _add_show,
        "verify": _add_verify,
        "check": _add_check,
        "plan": _add_plan,
        "export": _add_export,
    }
    for name, build in builders.items():
        if only is None or only == name or only not in builders:
            build(sub)
        else:
            sub.add_parser(name)


# verify, check and plan live in modules of their own, imported only to build their parser (about 16 ms of a
# cached ask, which builds only its own: benchmarks/bench_ask.py)
def _add_verify(sub) -> None:
    from fsdp_skill.adapters.cli.verify import add_verify_parser

    add_verify_parser(sub)


def _add_check(sub) -> None:
    from fsdp_skill.adapters.cli.check import add_check_parser

    add_check_parser(sub)


def _add_plan(sub) -> None:
    from fsdp_skill.adapters.cli.plan import add_plan_parser

    add_plan_parser(sub)


def _add_ask(sub) -> None:
    a = sub.add_parser("ask", help="answer a question (English or Chinese, or a pasted traceback)")
    a.add_argument("question", nargs="+", help="the question; '-' reads it from standard input")
    a.add_argument("-k", type=int, default=3, help="number of sections to return (1-20, default 3)")
    fmt = a.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the Answer as JSON (the stable contract)")
    fmt.add_argument("--markdown", action="store_true", help="print the answer as markdown")
    a.add_argument("--no-verify", action="store_true", help="return snippets as 'unverified' without running them")
    a.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    a.add_argument(
        "--lang",
        choices=("auto", "en", "zh"),
        default="auto",
        help="language of the answer: auto (default) follows the question's main language; zh shows the "
        "full Chinese bodies, en the English ones (--json always carries both: text and text_zh)",
    )
    a.set_defaults(func=cmd_ask)


def _add_show(sub) -> None:
    s = sub.add_parser("show", help="print one knowledge section, or list section / snippet ids")
    s.add_argument("section_id", nargs="?", help="section id, e.g. fsdp2/meta-device-init")
    s.add_argument("--list", action="store_true", help="list every section id and title")
    s.add_argument("--snippets", action="store_true", help="with --list: list snippet ids and their sections instead")
    s.add_argument("--topic", action="append", default=[], metavar="T", help="with --list: only topic T (repeatable)")
    s.add_argument("--json", action="store_true", help="print the section (or the --list) as JSON")
    s.add_argument("--lang", choices=("en", "zh"), default="en", help="zh: the section's Chinese title and body")
    s.set_defaults(func=cmd_show)


def _add_export(sub) -> None:
    e = sub.add_parser("export", help="write verified snippets as torchrun-ready scripts with a manifest and a test runner")
    e.add_argument(
        "snippet_ids",
        nargs="*",
        metavar="SNIPPET_ID",
        help="snippet ids, e.g. join/ddp-join, or section ids (all their snippets)",
    )
    e.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="T",
        help="export every snippet of topic T, e.g. mixed-precision (repeatable)",
    )
    e.add_argument(
        "--all",
        action="store_true",
        help="export every snippet that passes here (with --topic too: the rest are listed, not written)",
    )
    e.add_argument("--out", required=True, metavar="DIR", help="directory to write into (created if missing)")
    e.add_argument(
        "--include-unverified",
        action="store_true",
        help="also export snippets that did not pass (failed, timeout, skipped), marked NOT VERIFIED",
    )
    e.add_argument("--json", action="store_true", help="print the manifest as JSON")
    e.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    e.set_defaults(func=cmd_export)
