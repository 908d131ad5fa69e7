"""``fsdp-skill verify``: run knowledge snippets or your own scripts on a real process group.

    fsdp-skill verify SNIPPET_ID... | --all | --topic T | PATH.py...
        [--world-size N] [--backend auto|gloo|nccl] [--timeout S] [--launcher warm|torchrun]
        [--no-cache] [--json]

Exit codes: 0 every verdict passed or was skipped, 1 some verdict failed or timed out (or the harness
could not run), 2 bad usage (unknown snippet id, missing file, ids together with --all ...).
Verifying your own script is a debugging aid: a failed or timed-out verdict comes with hints naming the
knowledge sections that explain the error (:func:`hint_for`).
"""
from __future__ import annotations

import json
import os
import re
import sys

from fsdp_skill.errors import QueryError

EXIT_OK, EXIT_FAIL = 0, 1
_MARK = {"passed": "PASS", "failed": "FAIL", "timeout": "TIMEOUT", "skipped": "SKIP", "unverified": "----"}


def add_verify_parser(subparsers) -> None:
    """Register the ``verify`` subcommand on an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "verify", help="run snippets or scripts on a real multi-process process group",
        description="Run knowledge snippets (by id, --topic or --all) or your own scripts (PATH.py) on "
                    "world_size real processes, the way torchrun launches them, and report per-rank results.")
    p.add_argument("targets", nargs="*", metavar="SNIPPET_ID|PATH.py", help="snippet ids and/or script paths")
    p.add_argument("--all", action="store_true", help="verify every snippet of the knowledge base")
    p.add_argument("--topic", action="append", default=[], metavar="T", help="verify every snippet of topic T (repeatable)")
    p.add_argument("--world-size", type=int, default=None, metavar="N", help="ranks to launch (default: the snippet's, 2 for scripts)")
    p.add_argument("--backend", choices=("auto", "gloo", "nccl"), default=None, help="process-group backend (default: the snippet's, auto for scripts)")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="seconds before a run is killed as hung (default: the snippet's, 60 for scripts)")
    p.add_argument("--launcher", choices=("warm", "torchrun"), default="warm", help="warm (fork from a preloaded parent, fast) or torchrun")
    p.add_argument("--no-cache", action="store_true", help="run even when a cached verdict exists (the fresh verdict is stored)")
    p.add_argument("--json", action="store_true", help="print a JSON list of verdicts (each with its 'hints')")
    p.set_defaults(func=run_verify)


def _is_path(target: str) -> bool:
    return target.endswith(".py") or os.path.exists(target)  # snippet ids ('topic/name') never end in .py


def _jobs(args) -> list:
    """Jobs for the requested targets; raises QueryError / NotFoundError (exit 2) on bad usage."""
    import fsdp_skill.runtime as runtime

    if args.all and (args.targets or args.topic):
        raise QueryError("give snippet ids / paths, --topic or --all, not several of them")
    if args.targets and args.topic:
        raise QueryError("give snippet ids / paths or --topic, not both")
    if not (args.all or args.topic or args.targets):
        raise QueryError("nothing to verify: give SNIPPET_ID..., PATH.py..., --topic T or --all")
    if args.world_size is not None and args.world_size < 1:
        raise QueryError(f"--world-size must be at least 1, not {args.world_size}")
    if args.timeout is not None and args.timeout <= 0:
        raise QueryError(f"--timeout must be a positive number of seconds, not {args.timeout:g}")

    jobs = []
    ids = [t for t in args.targets if not _is_path(t)]
    kb = None
    if args.all or args.topic or ids:
        from fsdp_skill.core.knowledge import load_knowledge

        kb = load_knowledge()
    if args.all:
        jobs = [_spec_job(s, args) for s in kb.snippets.values()]
    elif args.topic:
        unknown = [t for t in args.topic if t not in kb.topics]
        if unknown:
            raise QueryError(f"unknown topic {unknown[0]!r}; topics: {', '.join(kb.topics)}")
        jobs = [_spec_job(s, args) for s in kb.snippets.values() if kb.sections[s.section_id].topic in args.topic]
    for t in args.targets:
        if not _is_path(t):
            jobs.append(_spec_job(kb.snippet(t), args))  # NotFoundError (exit 2) names close ids
            continue
        try:
            with open(t, encoding="utf-8") as f:
                code = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise QueryError(f"cannot read {t}: {getattr(exc, 'strerror', None) or exc}") from None
        jobs.append(runtime.Job(code=code, world_size=args.world_size or 2, backend=args.backend or "auto",
                                timeout=60.0 if args.timeout is None else args.timeout,
                                filename=os.path.basename(t), debug=True))
    return jobs


def _spec_job(spec, args):
    import fsdp_skill.runtime as runtime

    return runtime.Job(code=spec.code, world_size=args.world_size or spec.world_size,
                       backend=args.backend or spec.backend,
                       timeout=args.timeout if args.timeout is not None else spec.timeout,
                       requires=tuple(spec.requires), snippet_id=spec.id, filename=spec.filename)


def run_verify(args) -> int:
    """Handler of ``fsdp-skill verify``: returns the exit code (0 ok, 1 failed/timeout; usage errors raise)."""
    import fsdp_skill.runtime as runtime

    jobs = _jobs(args)
    names = [j.snippet_id or j.filename for j in jobs]
    verdicts = _run(jobs, args, runtime)
    hints = [hint_for(v) for v in verdicts]
    if args.json:
        out = []
        for name, v, h in zip(names, verdicts, hints):
            item = v.model_dump(mode="json")
            item["hints"] = h
            if v.snippet_id is None:
                item["script"] = name
            out.append(item)
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    else:
        for name, v, h in zip(names, verdicts, hints):
            sys.stdout.write(format_verdict(v, name, h))
        if len(verdicts) > 1:
            sys.stdout.write(_summary(verdicts) + "\n")
    return EXIT_FAIL if any(v.status in ("failed", "timeout") for v in verdicts) else EXIT_OK


def _run(jobs, args, runtime):
    if len(jobs) < 2:
        return runtime.verify_many(jobs, launcher=args.launcher, use_cache=not args.no_cache)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(TextColumn("verifying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=console, transient=True) as bar:
        task = bar.add_task("", total=len(jobs))

        def progress(done, total, verdict):
            bar.update(task, completed=done, description=f"{verdict.snippet_id or ''} {verdict.status}")

        return runtime.verify_many(jobs, launcher=args.launcher, use_cache=not args.no_cache, progress=progress)


def _summary(verdicts) -> str:
    counts = {s: sum(v.status == s for v in verdicts) for s in ("passed", "failed", "timeout", "skipped")}
    cached = sum(v.cached for v in verdicts)
    return ", ".join(f"{n} {s}" for s, n in counts.items()) + f" ({cached} from cache)"


def format_verdict(v, name: str, hints: list[str] = ()) -> str:
    """A readable, plain-text report of one verdict: status line, then per-rank details when it did not pass."""
    where = f"{v.launcher or '-'}, {v.backend} x{v.world_size}" + (", cached" if v.cached else "")
    lines = [f"{_MARK.get(v.status, v.status)}  {name}  ({(v.seconds or 0):.2f} s, {where})"]
    if v.status != "passed" and v.reason:
        lines.append(f"  {v.reason}")
    if v.status in ("failed", "timeout"):
        for r in v.ranks:
            if r.killed_by_harness:
                state = f"killed by the harness ({r.signal})"
            elif r.signal:
                state = f"killed by {r.signal}"
            else:
                state = f"exit code {r.exit_code}"
            lines.append(f"  rank {r.rank}: {state}" + (f"; blocked in {r.blocked_at}" if r.blocked_at else ""))
            if r.traceback:
                lines.extend("    | " + ln for ln in r.traceback.rstrip().splitlines()[-12:])
            elif r.output_tail and not r.blocked_at:
                lines.extend("    > " + ln for ln in r.output_tail.rstrip().splitlines()[-8:])
    for h in hints:
        lines.append(f"  hint: `fsdp-skill show {h}`" if "/" in h else f"  hint: knowledge topic '{h}' (`fsdp-skill ask ...`)")
    return "\n".join(lines) + "\n"


# (pattern over the verdict's text, knowledge section id).  Checked in order; see hint_for.
HINTS: list[tuple[re.Pattern, str]] = [(re.compile(p, re.I), sid) for p, sid in [
    (r"Address already in use|EADDRINUSE", "debugging/address-in-use"),
    (r"Expected all tensors to be on the same device", "debugging/fsdp-same-device"),
    (r"Duplicate GPU detected", "debugging/duplicate-gpu"),
    (r"environment variable \w+ expected, but not set", "debugging/master-addr-not-set"),
    (r"Watchdog caught collective operation timeout", "debugging/nccl-watchdog-timeout"),
    (r"waiting for clients|DistStoreError|store based barrier", "debugging/init-timeout"),
    (r"Detected mismatch between collectives", "debugging/distributed-debug-detail"),
    (r"Expected to have finished reduction in the prior iteration", "debugging/ddp-unused-parameters"),
    (r"expected scalar type \w+ but found|must have the same dtype", "debugging/dtype-mismatch"),
    (r"No backend type associated with device type|PREMUL_SUM", "debugging/backend-unsupported-op"),
]]
_PEER_GONE = re.compile(r"Connection closed by peer|Connection reset by peer", re.I)


def hint_for(verdict, kb=None) -> list[str]:
    """Knowledge ids that explain a failed or timed-out verdict (empty for other statuses).

    Each id is a section id ('join/uneven-inputs-hang') when the knowledge base holds it, else its topic
    id ('join'); hints whose topic is absent are dropped.  Heuristics: ranks blocked in different places
    or a rank that exited while another waited (a hang, or gloo's "Connection closed by peer") point at
    uneven inputs ('join'); a timeout points at finding the stuck rank; known error messages map to
    the debugging sections in :data:`HINTS`.
    """
    if verdict.status not in ("failed", "timeout"):
        return []
    text = "\n".join([verdict.reason or ""] + [r.traceback or r.output_tail or "" for r in verdict.ranks])
    wanted: list[str] = []
    exited_ok = any(r.exit_code == 0 for r in verdict.ranks)
    if verdict.status == "timeout":
        places = {(r.blocked_at or "").split(" (inside")[0] for r in verdict.ranks if r.killed_by_harness}
        if exited_ok or len(places) > 1:
            wanted.append("join/uneven-inputs-hang")
        wanted.append("debugging/find-stuck-rank")
    elif exited_ok and _PEER_GONE.search(text):
        wanted.append("join/uneven-inputs-hang")
    wanted += [sid for pattern, sid in HINTS if pattern.search(text)]
    return _resolve(list(dict.fromkeys(wanted)), kb)


def _resolve(ids: list[str], kb) -> list[str]:
    if kb is None:
        try:
            from fsdp_skill.core.knowledge import load_knowledge

            kb = load_knowledge()
        except Exception:  # hints are a courtesy: without a knowledge base, fall back to topic ids
            return list(dict.fromkeys(i.split("/")[0] for i in ids))
    out = []
    for sid in ids:
        topic = sid.split("/")[0]
        if sid in kb.sections:
            out.append(sid)
        elif topic in kb.topics:
            out.append(topic)
    return list(dict.fromkeys(out))
