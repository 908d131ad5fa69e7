"""``fsdp-skill verify``: run knowledge snippets or your own scripts on a real process group.

    fsdp-skill verify SNIPPET_ID|SECTION_ID... | --all | --topic T | PATH.py... [-- SCRIPT_ARGS...]
        [--world-size N] [--backend auto|gloo|nccl] [--timeout S] [--launcher warm|torchrun]
        [--cpu] [--no-cache] [--json] [--python PATH]
        [--nnodes N --node-rank R --rdzv-backend c10d --rdzv-endpoint HOST:PORT --rdzv-id ID]

Several hosts (``--launcher torchrun`` only, one target): the node flags are passed through to torch
elastic; ``--world-size`` is then the processes of *this* node (torchrun's ``--nproc_per_node``), the
job has ``nnodes x world-size`` ranks, and the report shows this node's ranks under their global numbers.
Such a verdict is never cached.

Everything after ``--`` is passed to the one script given (its ``sys.argv[1:]`` on every rank), as in
``torchrun --nproc_per_node=N PATH.py ARGS...``.

``--cpu`` is a CPU dry run (:mod:`fsdp_skill.runtime.dryrun`): every rank runs a CUDA script on gloo with CUDA
placement mapped to the CPU; the report's first line says "CPU dry run".

Exit codes: 0 every verdict passed or was skipped, 1 some verdict failed or timed out (or the harness
could not run), 2 bad usage (unknown snippet id, missing file, ids together with --all ...) or a CPU dry run
that cannot happen ("cannot dry-run on CPU: <what>, at <file:line>").
Verifying your own script is a debugging aid: a failed or timed-out verdict comes with hints naming the
knowledge sections that explain the error (:func:`hint_for`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fsdp_skill.adapters.exitcodes import EXIT_FAIL, EXIT_OK, EXIT_USAGE
from fsdp_skill.adapters.options import PYTHON_HELP
from fsdp_skill.errors import UsageError

if TYPE_CHECKING:  # the CLI imports the runtime only when it runs something
    from fsdp_skill.runtime.models import Verdict

_MARK = {"passed": "PASS", "failed": "FAIL", "timeout": "TIMEOUT", "skipped": "SKIP", "unverified": "----"}


def add_verify_parser(subparsers) -> None:
    """Register the ``verify`` subcommand on an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "verify",
        help="run snippets or scripts on a real multi-process process group",
        usage="fsdp-skill verify [options] SNIPPET_ID|SECTION_ID... | --all | --topic T | PATH.py... [-- SCRIPT_ARGS...]",
        description="Run knowledge snippets (by id, --topic or --all) or your own scripts (PATH.py) on "
        "world_size real processes, the way torchrun launches them, and report per-rank results. "
        "A script runs in place, from the current directory; everything after '--' is passed "
        "to the one script given, as 'torchrun --nproc_per_node=N PATH.py ARGS...' would.",
    )
    p.add_argument(
        "targets", nargs="*", metavar="SNIPPET_ID|PATH.py", help="snippet ids, section ids (their snippets) and/or script paths"
    )
    p.add_argument("--all", action="store_true", help="verify every snippet of the knowledge base")
    p.add_argument("--topic", action="append", default=[], metavar="T", help="verify every snippet of topic T (repeatable)")
    p.add_argument(
        "--world-size", type=int, default=None, metavar="N", help="ranks to launch (default: the snippet's, 2 for scripts)"
    )
    p.add_argument(
        "--backend",
        choices=("auto", "gloo", "nccl"),
        default=None,
        help="process-group backend (default: the snippet's, auto for scripts)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="seconds before a run is killed as hung (default: the snippet's, 60 for scripts)",
    )
    p.add_argument(
        "--launcher", choices=("warm", "torchrun"), default="warm", help="warm (fork from a preloaded parent, fast) or torchrun"
    )
    p.add_argument(
        "--cpu",
        action="store_true",
        help="CPU dry run: run a CUDA script on gloo ranks with CUDA placement mapped to the CPU "
        "(exit 2 when it needs what the CPU cannot stand in for: a CUDA extension, fp8, ...)",
    )
    p.add_argument("--no-cache", action="store_true", help="run even when a cached verdict exists (the fresh verdict is stored)")
    p.add_argument("--json", action="store_true", help="print a JSON list of verdicts (each with its 'hints')")
    p.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    n = p.add_argument_group("several hosts (--launcher torchrun; --world-size is then processes per node)")
    n.add_argument("--nnodes", type=int, default=None, metavar="N", help="hosts in the job (torchrun --nnodes)")
    n.add_argument(
        "--node-rank", type=int, default=None, metavar="R", help="this host's rank (static rendezvous; c10d orders hosts itself)"
    )
    n.add_argument(
        "--rdzv-backend", default=None, metavar="B", help="rendezvous backend: c10d (recommended), static, etcd, etcd-v2"
    )
    n.add_argument("--rdzv-endpoint", default=None, metavar="HOST:PORT", help="rendezvous address, the same on every host")
    n.add_argument("--rdzv-id", default=None, metavar="ID", help="job id, the same on every host")
    n.add_argument("--master-addr", default=None, metavar="HOST", help="static rendezvous without --rdzv-endpoint: rank 0's host")
    n.add_argument("--master-port", type=int, default=None, metavar="PORT", help="static rendezvous: rank 0's port")
    p.set_defaults(func=run_verify)


_NODE_FLAGS = ("nnodes", "node_rank", "rdzv_backend", "rdzv_endpoint", "rdzv_id", "master_addr", "master_port")


def _nodes(args):
    """The multi-node settings of ``args`` (None when no node flag is given); raises InputError (exit 2)
    for a combination torch elastic cannot run."""
    given = [f for f in _NODE_FLAGS if getattr(args, f, None) is not None]
    if not given:
        return None
    flags = ", ".join("--" + f.replace("_", "-") for f in given)
    if args.launcher != "torchrun":
        raise UsageError(f"{flags} need --launcher torchrun (the warm launcher runs on one host)")
    if args.nnodes is None:
        raise UsageError(f"{flags} need --nnodes N")
    from fsdp_skill.runtime.torchrun import Nodes

    nodes = Nodes(**{f: getattr(args, f) for f in _NODE_FLAGS})
    nodes.validate()
    return nodes


def _is_path(target: str) -> bool:
    return target.endswith(".py") or os.path.exists(target)  # snippet ids ('topic/name') never end in .py


def _jobs(args) -> list:
    """Jobs for the requested targets; raises UsageError / NotFoundError (exit 2) on bad usage."""
    from fsdp_skill.core.verify.snippets import job_for, script_job, select_snippets

    if args.all and (args.targets or args.topic):
        raise UsageError("give snippet ids / paths, --topic or --all, not several of them")
    if args.targets and args.topic:
        raise UsageError("give snippet ids / paths or --topic, not both")
    if not (args.all or args.topic or args.targets):
        raise UsageError("nothing to verify: give SNIPPET_ID..., PATH.py..., --topic T or --all")
    from fsdp_skill.runtime.api import MAX_TIMEOUT_S, MAX_WORLD_SIZE

    if args.world_size is not None and not 1 <= args.world_size <= MAX_WORLD_SIZE:
        raise UsageError(f"--world-size must be from 1 to {MAX_WORLD_SIZE} (ranks on this host), not {args.world_size}")
    if args.timeout is not None and not 0 < args.timeout <= MAX_TIMEOUT_S:
        raise UsageError(
            f"--timeout must be a positive number of seconds, at most {MAX_TIMEOUT_S:g} (a day), not {args.timeout:g}"
        )
    nodes = _nodes(args)
    if nodes is not None and (args.all or args.topic or len(args.targets) != 1):
        raise UsageError(f"several nodes (--nnodes {nodes.nnodes}) verify one target at a time, the same on every node")
    overrides = {"world_size": args.world_size, "backend": args.backend, "timeout": args.timeout}
    script_args = getattr(args, "script_args", None) or []
    if script_args and (args.all or args.topic or len(args.targets) != 1 or not _is_path(args.targets[0])):
        raise UsageError("arguments after '--' are for one script: give exactly one PATH.py before '--'")
    jobs = []
    if args.all or args.topic:
        jobs = [job_for(s, **overrides) for s in select_snippets(topics=args.topic, all_snippets=args.all)]
    for t in args.targets:  # a section id means its snippets; an unknown id is a NotFoundError naming close ids
        if _is_path(t):
            jobs.append(script_job(t, args=script_args, **overrides))
        else:
            jobs.extend(job_for(s, **overrides) for s in select_snippets([t]))
    if nodes is not None:
        jobs = [dataclasses.replace(j, nodes=nodes) for j in jobs]
    if args.cpu:
        jobs = [dataclasses.replace(j, dry_run="cpu") for j in jobs]
    return jobs


def check_cpu(args) -> None:
    """Raise UsageError (exit 2) for options a CPU dry run cannot go with: NCCL, several nodes."""
    if not getattr(args, "cpu", False):
        return
    if args.backend == "nccl":
        raise UsageError("--cpu runs the ranks on gloo: it cannot go with --backend nccl")
    if getattr(args, "nnodes", None) is not None:
        raise UsageError("--cpu runs on this host: it cannot go with --nnodes")


def exit_code(verdicts: Sequence[Verdict]) -> int:
    """1 when a verdict failed or timed out, else 2 when a CPU dry run could not happen, else 0."""
    from fsdp_skill.runtime.dryrun import refused

    if any(v.status in ("failed", "timeout") for v in verdicts):
        return EXIT_FAIL
    return EXIT_USAGE if any(refused(v) for v in verdicts) else EXIT_OK


def run_verify(args) -> int:
    """Handler of ``fsdp-skill verify``: returns the exit code (0 ok, 1 failed/timeout; usage errors raise)."""
    from fsdp_skill.core.verify.hints import hint_for

    check_cpu(args)
    jobs = _jobs(args)
    names = [j.snippet_id or j.filename for j in jobs]
    verdicts = _run(jobs, args)
    hints = [hint_for(v) for v in verdicts]
    if args.json:
        out = []
        for name, v, h in zip(names, verdicts, hints, strict=True):
            item = v.model_dump(mode="json")
            item["hints"] = h
            if v.snippet_id is None:
                item["script"] = name
            out.append(item)
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    else:
        for name, v, h in zip(names, verdicts, hints, strict=True):
            sys.stdout.write(format_verdict(v, name, h))
        if len(verdicts) > 1:
            sys.stdout.write(_summary(verdicts) + "\n")
    return exit_code(verdicts)


def _run(jobs, args):
    from fsdp_skill.core.verify.snippets import DEFAULT_VERIFIER

    verifier = args.verifier or DEFAULT_VERIFIER
    if len(jobs) < 2:
        return verifier.run(jobs, launcher=args.launcher, use_cache=not args.no_cache)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(
        TextColumn("verifying"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("", total=len(jobs))

        def progress(done, total, verdict):
            bar.update(task, completed=done, description=f"{verdict.snippet_id or ''} {verdict.status}")

        return verifier.run(jobs, launcher=args.launcher, use_cache=not args.no_cache, progress=progress)


def _summary(verdicts) -> str:
    counts = {s: sum(v.status == s for v in verdicts) for s in ("passed", "failed", "timeout", "skipped")}
    cached = sum(v.cached for v in verdicts)
    return ", ".join(f"{n} {s}" for s, n in counts.items()) + f" ({cached} from cache)"


def format_verdict(v: Verdict, name: str, hints: Sequence[str] = ()) -> str:
    """A readable, plain-text report of one verdict: status line, then per-rank details when it did not pass."""
    where = (
        f"{v.launcher or '-'}, {v.backend} x{v.world_size}"
        + (f" on {v.nnodes} nodes" if v.nnodes else "")
        + (", cached" if v.cached else "")
    )
    dry = f"{v.dry_run.upper()} dry run, " if v.dry_run else ""  # 'CPU dry run, warm, gloo x2'
    lines = [f"{_MARK.get(v.status, v.status)}  {name}  ({(v.seconds or 0):.2f} s, {dry}{where})"]
    if v.status != "passed" and v.reason:
        first, *rest = v.reason.splitlines()
        lines.append(f"  {first}")
        lines.extend(f"    {ln}" for ln in rest)  # a multi-line error message, whole
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
