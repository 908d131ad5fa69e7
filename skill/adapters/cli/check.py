"""``fsdp-skill check PATH... [-]``: the static checker on the terminal (thin over :mod:`fsdp_skill.core.check`).

Output is one linter line per finding, ``path:line:col: FSD0xx message [section-id]`` (``--json``: a list of
findings), and a count on stderr. Exit 0 when clean, 1 when there are findings (a file that does not parse is
finding FSD000), 2 for bad input (missing path, not a .py file, not UTF-8, unknown code in --select/--ignore).
"""
from __future__ import annotations

import json
import sys

from fsdp_skill.adapters.exitcodes import EXIT_FAIL, EXIT_OK


def cmd_check(args) -> int:
    from fsdp_skill.core.check import RULES, check_paths

    if args.rules:
        for r in RULES.values():
            print(f"{r.code}\t{r.severity}\t{r.summary}\t{r.section}\t{r.snippet}")
        return EXIT_OK
    if not args.paths:
        from fsdp_skill.errors import InvalidArgument

        raise InvalidArgument("give at least one PATH (a file, a directory, or '-' for standard input)")
    findings = check_paths(args.paths, select=args.select, ignore=args.ignore)
    if args.json:
        sys.stdout.write(json.dumps([f.model_dump() for f in findings], ensure_ascii=False) + "\n")
    else:
        for f in findings:
            print(f.line_text())
        if findings:
            files = len({f.path for f in findings})
            print(f"{len(findings)} finding(s) in {files} file(s); explain one with: fsdp-skill show SECTION-ID",
                  file=sys.stderr)
    return EXIT_FAIL if findings else EXIT_OK


def add_check_parser(sub) -> None:
    """Register ``check`` on the ``fsdp-skill`` subparsers."""
    c = sub.add_parser("check", help="find FSDP / torch.distributed mistakes in scripts, statically (no torch import)")
    c.add_argument("paths", nargs="*", metavar="PATH", help="files, directories (every *.py below) or '-' (stdin)")
    c.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    c.add_argument("--select", action="append", default=[], metavar="CODES",
                   help="only these code prefixes, comma-separated (e.g. FSD00,FSD011); repeatable")
    c.add_argument("--ignore", action="append", default=[], metavar="CODES",
                   help="drop these code prefixes, comma-separated; repeatable")
    c.add_argument("--rules", action="store_true", help="list the rules (code, severity, what, section, snippet) and exit")
    c.set_defaults(func=cmd_check)
