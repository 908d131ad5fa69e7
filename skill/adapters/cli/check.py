"""``fsdp-skill check PATH... [-]``: the static checker on the terminal (thin over :mod:`fsdp_skill.core.check`).

Output is one linter line per finding, ``path:line:col: FSD0xx message [section-id]`` (``--json``: a list of
findings), and a count on stderr. Exit 0 when clean, 1 when there are findings (a file that does not parse, cannot
be decoded as Python decodes it, or runs past its budget is finding FSD000), 2 for bad input (missing path, not a
.py file, unknown code in --select/--ignore, a bad FSDP_SKILL_CHECK_BUDGET).

``check --run PATH.py [-- ARGS]`` also runs the one script under ``verify`` (``--world-size``, ``--backend``,
``--timeout``, ``--launcher``, ``--python``, ``--cpu`` and the script's own arguments after ``--``, as there) and reports both: the findings, then the verdict (``--json``: an object
``{"findings": [...], "verdict": {...}}``, the verdict as ``verify --json`` prints it, with its ``hints``).
Exit 1 when there is a finding or the run failed or timed out (a run skipped on this host is not a failure), else 2
when a CPU dry run (``--cpu``) cannot happen ("cannot dry-run on CPU: ...").

``--output-format text|json|github|sarif`` (``--json`` is ``json``): GitHub workflow annotations, one
``::error file=...,line=...,col=...,title=FSD0xx::message`` per finding, or a SARIF 2.1.0 log for code scanning.

``--fix`` rewrites the files in place with the mechanical fixes (:mod:`fsdp_skill.core.check.fix`), says on stderr
what it fixed and what it could not, and reports the findings left (exit 1 if any remain, else 0); ``--diff``
prints the fixes as a unified diff and writes nothing (exit 1 when there is something to fix, else 0), as ruff does.
"""

from __future__ import annotations

import json
import sys

from fsdp_skill.adapters.exitcodes import EXIT_FAIL, EXIT_OK, EXIT_USAGE
from fsdp_skill.errors import InvalidArgument

_RUN_FLAGS = {
    "world_size": "--world-size",
    "backend": "--backend",
    "timeout": "--timeout",
    "launcher": "--launcher",
    "python": "--python",
    "cpu": "--cpu",
}


def cmd_check(args) -> int:
    from fsdp_skill.core.check import RULES, check_paths

    if args.rules:
        for r in RULES.values():
            print(f"{r.code}\t{r.severity}\t{r.summary}\t{r.section}\t{r.snippet}")
        return EXIT_OK
    if not args.paths:
        raise InvalidArgument("give at least one PATH (a file, a directory, or '-' for standard input)")
    if args.run:
        _validate_run(args)
    else:
        given = [flag for name, flag in _RUN_FLAGS.items() if getattr(args, name) is not None]
        given += ["arguments after '--'"] if getattr(args, "script_args", None) else []
        if given:
            raise InvalidArgument(f"{', '.join(given)} only apply with --run (check alone never runs the script)")
    fmt = _output_format(args)
    if args.fix or args.diff:
        return _fix(args, fmt)
    findings = check_paths(args.paths, select=args.select, ignore=args.ignore)
    verdict, text = _run(args) if args.run else (None, "")
    _print_findings(findings, fmt, verdict)
    if fmt == "text":
        sys.stdout.write(text)
    failed = verdict is not None and verdict["status"] in ("failed", "timeout")
    if findings or failed:
        return EXIT_FAIL
    return EXIT_USAGE if verdict is not None and _refused(verdict) else EXIT_OK


def _refused(verdict: dict) -> bool:
    """Whether the verdict (as JSON) is a CPU dry run that could not happen."""
    from fsdp_skill.runtime.dryrun import REFUSAL_PREFIX

    return (
        bool(verdict.get("dry_run"))
        and verdict["status"] == "skipped"
        and (verdict.get("reason") or "").startswith(REFUSAL_PREFIX)
    )


def _output_format(args) -> str:
    fmt = getattr(args, "output_format", None)
    if args.json and fmt not in (None, "json"):
        raise InvalidArgument(f"--json is --output-format json; it cannot go with --output-format {fmt}")
    fmt = "json" if args.json else fmt or "text"
    if args.run and fmt not in ("text", "json"):
        raise InvalidArgument(f"--run reports the findings and the verdict as text or json, not {fmt}")
    if args.fix and args.diff:
        raise InvalidArgument("--fix writes the fixes and --diff only shows them: give one")
    if (args.fix or args.diff) and args.run:
        raise InvalidArgument("--fix / --diff do not run the script: fix first, then check --run")
    if args.diff and fmt != "text":
        raise InvalidArgument(f"--diff prints a unified diff, not {fmt}")
    if args.fix and "-" in args.paths:
        raise InvalidArgument("--fix rewrites files in place: give paths, not '-' (--diff shows the fix of standard input)")
    return fmt


def _print_findings(findings, fmt: str, verdict: dict | None = None) -> None:
    if fmt == "json":
        found = [f.for_display().model_dump() for f in findings]
        out = found if verdict is None else {"findings": found, "verdict": verdict}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    elif fmt == "github":
        from fsdp_skill.core.check.report import github_annotations

        sys.stdout.write(github_annotations(findings))
    elif fmt == "sarif":
        from fsdp_skill.core.check.report import sarif_log

        sys.stdout.write(json.dumps(sarif_log(findings, version=_version()), ensure_ascii=False, indent=2) + "\n")
    else:
        for f in findings:
            print(f.line_text())
        if findings:
            files = len({f.path for f in findings})
            print(f"{len(findings)} finding(s) in {files} file(s); explain one with: fsdp-skill show SECTION-ID", file=sys.stderr)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fsdp-skill")
    except PackageNotFoundError:  # a source tree that is not installed
        return "0"


def _fix(args, fmt: str) -> int:
    """``--fix`` (write, report what is left) or ``--diff`` (print the diffs, write nothing)."""
    from fsdp_skill.core.check.fix import unified_diff
    from fsdp_skill.core.check.fix_files import fix_paths
    from fsdp_skill.core.check.models import printable

    results = fix_paths(args.paths, select=args.select, ignore=args.ignore)
    fixed = sum(len(r.result.fixed) for r in results)
    for r in results:
        for f, why in r.result.unfixed:
            print(f"{printable(f.path)}:{f.line}:{f.col}: {f.code} not fixable: {why}", file=sys.stderr)
    if args.diff:
        for r in results:
            sys.stdout.write(unified_diff(r.before, r.result.source, printable(r.path)))
        if fixed:
            print(f"Would fix {fixed} finding(s) in {sum(r.result.changed for r in results)} file(s).", file=sys.stderr)
        return EXIT_FAIL if fixed else EXIT_OK
    for r in results:
        r.write()
        for f in r.result.fixed:
            print(f"{printable(f.path)}:{f.line}:{f.col}: {f.code} fixed: {f.fix}", file=sys.stderr)
    remaining = [f for r in results for f in r.remaining]
    _print_findings(remaining, fmt)
    print(f"Fixed {fixed} finding(s); {len(remaining)} remaining.", file=sys.stderr)
    return EXIT_FAIL if remaining else EXIT_OK


def _validate_run(args) -> None:
    if len(args.paths) != 1 or args.paths[0] == "-" or not args.paths[0].endswith(".py"):
        raise InvalidArgument("--run runs one script: give exactly one PATH.py (not a directory or '-')")
    from fsdp_skill.runtime.api import MAX_TIMEOUT_S, MAX_WORLD_SIZE

    if args.world_size is not None and not 1 <= args.world_size <= MAX_WORLD_SIZE:
        raise InvalidArgument(f"--world-size must be from 1 to {MAX_WORLD_SIZE} (ranks on this host), not {args.world_size}")
    if args.timeout is not None and not 0 < args.timeout <= MAX_TIMEOUT_S:
        raise InvalidArgument(
            f"--timeout must be a positive number of seconds, at most {MAX_TIMEOUT_S:g} (a day), not {args.timeout:g}"
        )
    if args.cpu and args.backend == "nccl":
        raise InvalidArgument("--cpu runs the ranks on gloo: it cannot go with --backend nccl")


def _run(args) -> tuple[dict, str]:
    """Run the one script as ``verify PATH.py`` would: its verdict as ``verify --json`` prints it, and as text."""
    from fsdp_skill.adapters.cli.verify import format_verdict
    from fsdp_skill.core.verify.hints import hint_for
    from fsdp_skill.core.verify.snippets import DEFAULT_VERIFIER, script_job

    path = args.paths[0]
    job = script_job(
        path,
        world_size=args.world_size,
        backend=args.backend,
        timeout=args.timeout,
        args=getattr(args, "script_args", None) or [],
        dry_run="cpu" if args.cpu else None,
    )
    v = (args.verifier or DEFAULT_VERIFIER).run([job], launcher=args.launcher or "warm", use_cache=False)[0]
    hints = hint_for(v)
    item = v.model_dump(mode="json")
    item["hints"] = hints
    item["script"] = path
    return item, format_verdict(v, path, hints)


def add_check_parser(sub) -> None:
    """Register ``check`` on the ``fsdp-skill`` subparsers."""
    c = sub.add_parser("check", help="find FSDP / torch.distributed mistakes in scripts, statically (no torch import)")
    c.add_argument("paths", nargs="*", metavar="PATH", help="files, directories (every *.py below) or '-' (stdin)")
    c.add_argument(
        "--json", action="store_true", help="print the findings as a JSON list (with --run: an object {findings, verdict})"
    )
    c.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="CODES",
        help="only these code prefixes, comma-separated (e.g. FSD00,FSD011); repeatable",
    )
    c.add_argument(
        "--ignore", action="append", default=[], metavar="CODES", help="drop these code prefixes, comma-separated; repeatable"
    )
    c.add_argument(
        "--output-format",
        choices=("text", "json", "github", "sarif"),
        default=None,
        help="text (default), json (as --json), github (workflow annotations) or sarif (SARIF 2.1.0 for code scanning)",
    )
    c.add_argument("--fix", action="store_true", help="apply the mechanical fixes in place and report what remains")
    c.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; change nothing")
    c.add_argument("--rules", action="store_true", help="list the rules (code, severity, what, section, snippet) and exit")
    r = c.add_argument_group("--run: also run the one PATH.py on a real process group, as `verify PATH.py` does")
    r.add_argument("--run", action="store_true", help="run the script under verify too and report both")
    r.add_argument("--world-size", type=int, default=None, metavar="N", help="ranks to launch (default 2)")
    r.add_argument("--backend", choices=("auto", "gloo", "nccl"), default=None, help="process-group backend (default auto)")
    r.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="seconds before the run is killed as hung (default 60)"
    )
    r.add_argument("--launcher", choices=("warm", "torchrun"), default=None, help="warm (default) or torchrun")
    r.add_argument(
        "--cpu",
        action="store_true",
        default=None,
        help="CPU dry run: run a CUDA script on gloo ranks with CUDA placement mapped to the CPU (exit 2 when it cannot)",
    )
    r.add_argument(
        "--python",
        metavar="PATH",
        default=None,
        help="the Python interpreter (with torch) that runs the script (default: $FSDP_SKILL_PYTHON, else this one)",
    )
    c.set_defaults(func=cmd_check)
