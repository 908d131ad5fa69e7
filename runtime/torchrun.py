"""The ``torchrun`` launcher: ``python -m torch.distributed.run --standalone --nproc_per_node=N -- script.py ARGS``.

torch's own machinery (elastic agent, c10d rendezvous on a kernel-chosen port, worker restarts off) runs
the script unchanged; this module only supervises the agent and reads what it leaves:
  * per-rank output from ``--tee 3`` (console lines prefixed ``[default<local_rank>]:``, interleaved as
    written) and per-rank ``stderr.log`` files from ``--log-dir`` / ``--redirects 3`` for tracebacks;
  * per-rank exit codes from the agent's failure summary (``rank : 1 (local_rank: 1) / exitcode : -9``);
  * at the timeout, ``SIGABRT`` to each worker with ``PYTHONFAULTHANDLER=1`` in its environment, so
    faulthandler prints every thread's stack into the worker's stderr before it dies; then ``killpg``.
On Linux the agent runs under a shepherd (:mod:`fsdp_skill.runtime.shepherd`, a child subreaper in its
own session): torch elastic starts each worker in a session of its own, and a worker may start processes
of its own, so no process group holds them all; the shepherd kills and reaps every descendant when the
agent exits, when the run times out or is interrupted (SIGTERM from here) and when this process dies
(EOF on its stdin), and removes the run directory in that last case.  Ranks are reported only after the
shepherd has exited, i.e. after every process of the run is reaped.  Elsewhere the agent runs in its own
session and its process group is killed, as before.

Several hosts (:class:`Nodes`): instead of ``--standalone`` the agent gets ``--nnodes``, ``--node-rank``,
``--rdzv-backend``, ``--rdzv-endpoint``, ``--rdzv-id`` (and ``--master-addr/--master-port`` for the
static rendezvous) and this node runs ``nproc_per_node`` of the ``nnodes * nproc_per_node`` global ranks.
Which global ranks they are is decided by the rendezvous (c10d orders nodes itself), so it is read from
the run: each console line is prefixed ``[default<local_rank>@<rank>]:`` (torch elastic's
``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE``), the workers' ``RANK``/``LOCAL_RANK`` are read from
``/proc`` while they live, and the failure summary names both.
"""

from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from fsdp_skill.errors import HarnessError, InvalidArgument
from fsdp_skill.runtime import orphans, procfs
from fsdp_skill.runtime.models import Verdict
from fsdp_skill.runtime.report import RawRank, RawRun, read_text

DUMP_WAIT_S = 2.0
_PREFIX = re.compile(r"^\[default(\d+)(?:@(\d+))?\]:")
_ANY_PREFIX = re.compile(r"\[default(\d+)(?:@(\d+))?\]:")
PREFIX_TEMPLATE = "[default${local_rank}@${rank}]:"
RDZV_BACKENDS = ("c10d", "static", "etcd", "etcd-v2")
_ENDPOINT = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::(\d{1,5}))?$")
_RDZV_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


@dataclass(frozen=True)
class Nodes:
    """Where this node stands in a multi-node torchrun job (the arguments passed through to torch elastic).

    ``nnodes`` hosts each run ``nproc_per_node`` ranks (the job's world_size, per node); ``node_rank`` is
    this node's (needed by the static rendezvous; c10d orders nodes itself); ``rdzv_endpoint`` is
    ``HOST[:PORT]`` of the rendezvous (the c10d store runs on the node that owns that address);
    ``rdzv_id`` names the job (the same on every node); ``master_addr``/``master_port`` only for the
    static rendezvous without an endpoint.
    """

    nnodes: int
    node_rank: int | None = None
    rdzv_backend: str | None = None
    rdzv_endpoint: str | None = None
    rdzv_id: str | None = None
    master_addr: str | None = None
    master_port: int | None = None

    def validate(self) -> None:
        """Raise InvalidArgument (one line, the numbers in it) for an impossible combination."""
        if not isinstance(self.nnodes, int) or self.nnodes < 1:
            raise InvalidArgument(f"--nnodes must be at least 1, not {self.nnodes}")
        if self.node_rank is not None and not 0 <= self.node_rank < self.nnodes:
            raise InvalidArgument(f"--node-rank({self.node_rank}) must be in 0..nnodes-1 ({self.nnodes - 1})")
        backend = self.rdzv_backend or "static"
        if backend not in RDZV_BACKENDS:
            raise InvalidArgument(f"--rdzv-backend must be one of {', '.join(RDZV_BACKENDS)}, not {backend!r}")
        if self.rdzv_endpoint is not None:
            m = _ENDPOINT.match(self.rdzv_endpoint)
            if not m or (m[1] is not None and not 0 < int(m[1]) < 65536):
                raise InvalidArgument(f"--rdzv-endpoint must be HOST[:PORT] with a port in 1..65535, not {self.rdzv_endpoint!r}")
        if self.rdzv_id is not None and not _RDZV_ID.match(self.rdzv_id):
            raise InvalidArgument(f"--rdzv-id must be 1-128 letters, digits, '.', '_' or '-', not {self.rdzv_id!r}")
        if (self.master_addr is not None or self.master_port is not None) and backend != "static":
            raise InvalidArgument(f"--master-addr/--master-port go with the static rendezvous, not --rdzv-backend {backend}")
        if self.master_addr is not None and not _ENDPOINT.match(self.master_addr):
            raise InvalidArgument(f"--master-addr must be a host name or address, not {self.master_addr!r}")
        if self.master_port is not None and not 0 < self.master_port < 65536:
            raise InvalidArgument(f"--master-port must be in 1..65535, not {self.master_port}")
        if self.nnodes > 1 and self.rdzv_endpoint is None and self.master_addr is None:
            raise InvalidArgument(f"--nnodes {self.nnodes} needs --rdzv-endpoint HOST:PORT (the same on every node)")
        if self.nnodes > 1 and backend == "static" and self.node_rank is None:
            raise InvalidArgument(f"--nnodes {self.nnodes} with the static rendezvous needs --node-rank")

    def args(self, nproc_per_node: int) -> list[str]:
        """torchrun's arguments for this node (instead of ``--standalone``)."""
        out = [f"--nnodes={self.nnodes}", f"--nproc_per_node={nproc_per_node}"]
        for flag, value in (
            ("--node-rank", self.node_rank),
            ("--rdzv-backend", self.rdzv_backend),
            ("--rdzv-endpoint", self.rdzv_endpoint),
            ("--rdzv-id", self.rdzv_id),
            ("--master-addr", self.master_addr),
            ("--master-port", self.master_port),
        ):
            if value is not None:
                out.append(f"{flag}={value}")
        return out

    def describe(self) -> str:
        """e.g. ``'2 nodes, c10d rendezvous at 127.0.0.1:29400 (id job1)'``."""
        where = self.rdzv_endpoint or f"{self.master_addr}:{self.master_port or 29500}"
        return f"{self.nnodes} nodes, {self.rdzv_backend or 'static'} rendezvous at {where} (id {self.rdzv_id or 'none'})"


def across_nodes(verdict: Verdict, nodes: Nodes, per_node: int, error: str | None) -> Verdict:
    """A multi-node verdict: world_size is the global one (nnodes x ``per_node``), ranks are this node's under
    their global numbers, and the reason says which part of the job this node ran; ``error`` is the run's
    launcher-level error (:attr:`RawRun.error`), the reason of a rendezvous that timed out."""
    total = nodes.nnodes * per_node
    mine = [r.rank for r in verdict.ranks]
    part = (
        (f"ranks {min(mine)}-{max(mine)} of {total}" if len(mine) > 1 else f"rank {mine[0]} of {total}")
        if mine
        else f"none of the {total} ranks"
    )
    reason = verdict.reason
    if verdict.status == "passed":
        reason = f"this node's {len(mine)} ranks exited 0 ({part}; {nodes.describe()})"
    elif verdict.status == "timeout" and not mine and error:
        reason = error
    else:
        first, _, rest = (reason or "").partition("\n")
        reason = f"{first} [this node ran {part}; {nodes.describe()}]" + (f"\n{rest}" if rest else "")
    return verdict.model_copy(update={"world_size": total, "nnodes": nodes.nnodes, "reason": reason})


_RANK_PREFIX = re.compile(r"^\[rank\d+\]: ?", re.M)
_SUMMARY = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)\s*\n\s*exitcode\s*:\s*(-?\d+)")


def _ranks_of(pid: int) -> tuple[int, int] | None:
    """(LOCAL_RANK, RANK) from the environment of worker ``pid``, or None when it is not a worker (or gone)."""
    env = procfs.environ(pid)
    if env is None:
        return None
    try:
        return int(env["LOCAL_RANK"]), int(env["RANK"])
    except (KeyError, ValueError):
        return None


def _note_ranks(proc: subprocess.Popen, seen: dict[int, int]) -> None:
    """Add the live workers of the run ``proc`` to ``seen`` (local rank -> global rank)."""
    for pid in _workers(proc):
        ranks = _ranks_of(pid)
        if ranks is not None:
            seen.setdefault(*ranks)


def _exited(pid: int) -> bool:
    """Whether child ``pid`` has exited (without reaping it)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _wait(proc: subprocess.Popen, timeout: float, seen: dict[int, int] | None = None) -> bool:
    """Wait up to ``timeout`` seconds for the agent to exit, leaving it unreaped; True if it exited.
    With ``seen``, the live workers' ranks are noted in it meanwhile (about every 0.1 s)."""
    deadline = time.monotonic() + timeout
    delay, noted = 0.005, 0.0
    while not _exited(proc.pid):
        if seen is not None and time.monotonic() - noted >= 0.1:
            _note_ranks(proc, seen)
            noted = time.monotonic()
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 1.5, 0.05)
    return True


SHEPHERD = sys.platform == "linux"
SHEPHERD_SCRIPT = str(Path(__file__).resolve().with_name("shepherd.py"))
_live: set[subprocess.Popen] = set()  # shepherds of runs in progress (see abort_all)
_aborted: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


SUPERVISOR_KILLED = (
    "the run's supervisor was killed during the run (torchrun exited with code {code}): does the "
    "script, or a process it starts, kill its parent processes? Ranks without an exit code were "
    "killed by the harness"
)


def _died_by_signal(returncode: int | None) -> bool:
    """Whether the agent (or, on Linux, its shepherd) was killed by a signal: a negative status, or the
    shepherd's ``128+N`` for an agent killed by signal N."""
    return returncode is not None and (returncode < 0 or (SHEPHERD and returncode > 128))


def _remove_elastic_tmp(logdir: str, tmpdir: str | None) -> None:
    """Remove the ``torchelastic_*`` directories torch elastic made in ``tmpdir`` (default: the system's) for
    this run and left behind (an agent stopped before its own clean-up).  They are recognised by the run's
    ``<run_id>_<suffix>`` entries, named as in ``logdir``; nobody else's are touched."""
    import shutil
    import tempfile

    runs = {name.rsplit("_", 1)[0] for name in _listdir(logdir)}
    if not runs:
        return
    for d in glob.glob(os.path.join(tmpdir or tempfile.gettempdir(), "torchelastic_*")):
        if any(name.rsplit("_", 1)[0] in runs for name in _listdir(d)):
            shutil.rmtree(d, ignore_errors=True)


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _kill_and_reap(proc: subprocess.Popen) -> None:
    """End the run: the shepherd kills and reaps every process of it (or, without one, kill the agent's
    process group); returns once ``proc`` is reaped."""
    try:
        if SHEPHERD:
            os.kill(proc.pid, signal.SIGTERM)  # unreaped, so this pid is still the shepherd
        else:
            os.killpg(proc.pid, signal.SIGKILL)  # the agent is unreaped, so its group id is still ours
    except (ProcessLookupError, PermissionError):
        pass
    while True:
        try:
            proc.wait()
            break
        except KeyboardInterrupt:  # a second Ctrl-C: the shepherd is already killing; still reap it
            continue
    if proc.stdin is not None:
        proc.stdin.close()
    with _live_lock:
        _live.discard(proc)


def abort_all() -> None:
    """Kill every torchrun run of this process now, for a server that shuts down: each caller's
    :func:`run_torchrun` raises HarnessError once every process of its run is reaped."""
    with _live_lock:
        procs = list(_live)
        _aborted.update(procs)
    for proc in procs:
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass


def _is_agent(pid: int) -> bool:
    return any("torch.distributed.run" in arg for arg in procfs.cmdline(pid) or ())


def _workers(proc: subprocess.Popen) -> list[int]:
    """Pids of the worker processes: children of the agent (the shepherd's child; orphans reparented to
    the shepherd are not)."""
    tree = procfs.children_map()
    agents = [c for c in tree.get(proc.pid, ()) if _is_agent(c)] if SHEPHERD else [proc.pid]
    return [pid for agent in agents for pid in tree.get(agent, ())]


def _fatal_dump(stderr: str) -> str | None:
    start = stderr.find("Fatal Python error")
    if start < 0:
        return None
    block = stderr[start:]
    end = block.find("\nExtension modules:")
    return block[:end].strip() if end >= 0 else block.strip()


_COMPILE_ERROR = re.compile(r'^  File "[^"]+", line \d+\n(?:    .*\n)*(?:SyntaxError|IndentationError|TabError): .*$', re.M)


def _traceback(stderr: str) -> str | None:
    start = stderr.find("Traceback (most recent call last):")
    if start < 0:
        m = _COMPILE_ERROR.search(stderr)  # a script that does not compile: Python prints no "Traceback"
        return m.group(0) + "\n" if m else None
    block = stderr[start:]
    end = block.find("Fatal Python error")
    return (block[:end] if end >= 0 else block).strip() + "\n"


def _abort_workers(proc: subprocess.Popen, seen: dict[int, int] | None) -> tuple[dict[int, int], set[int]]:
    """SIGABRT every worker of the run ``proc`` (each dumps its stacks through faulthandler) and wait up to
    DUMP_WAIT_S seconds for them to die; returns (local rank -> pid of those signalled (noting their global
    ranks in ``seen``), local ranks still alive: they ignored SIGABRT or are stuck, and are SIGKILLed
    with the rest of the run by :func:`_kill_and_reap`)."""
    signalled: dict[int, int] = {}
    for pid in _workers(proc):
        ranks = _ranks_of(pid)
        if ranks is not None:
            if seen is not None:
                seen.setdefault(*ranks)
            try:
                os.kill(pid, signal.SIGABRT)
                signalled[ranks[0]] = pid
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + DUMP_WAIT_S
    while any(procfs.alive(p) for p in signalled.values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return signalled, {r for r, p in signalled.items() if procfs.alive(p)}


def run_torchrun(
    *,
    script: str,
    workdir: str,
    rundir: str,
    world_size: int,
    timeout: float,
    env: dict[str, str],
    python: str | None = None,
    args: list[str] | None = None,
    nodes: Nodes | None = None,
) -> RawRun:
    """Run ``script ARGS...`` under torchrun with ``world_size`` workers of interpreter ``python`` (default:
    this one, ``sys.executable``); returns what was observed.

    ``nodes`` (multi-node): ``world_size`` is the processes of this node (``--nproc_per_node``) and the
    returned ranks carry their global rank numbers (see the module docstring).  ``timeout`` is in seconds
    (for several nodes it includes waiting for the others at the rendezvous).  Raises OSError when the
    interpreter cannot be started (the caller turns it into HarnessError) and HarnessError when
    :func:`abort_all` stopped the run; a failing script is reported in the returned RawRun, never raised.
    If a rank kills the shepherd, what it leaves is killed and reaped by this process (:mod:`.orphans`).
    """
    with orphans.watching():
        return _run(
            script=script,
            workdir=workdir,
            rundir=rundir,
            world_size=world_size,
            timeout=timeout,
            env=env,
            python=python,
            args=args,
            nodes=nodes,
        )


def _run(
    *,
    script: str,
    workdir: str,
    rundir: str,
    world_size: int,
    timeout: float,
    env: dict[str, str],
    python: str | None,
    args: list[str] | None,
    nodes: Nodes | None,
) -> RawRun:
    logdir = os.path.join(rundir, "torchrun-logs")
    console = os.path.join(rundir, "torchrun.log")
    env = dict(env, PYTHONFAULTHANDLER="1")
    where = ["--standalone", f"--nproc_per_node={world_size}"]
    seen: dict[int, int] | None = None  # local rank -> global rank, multi-node only
    if nodes is not None:
        where, seen = nodes.args(world_size), {}
        env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = PREFIX_TEMPLATE
    cmd = [
        python or sys.executable,
        "-m",
        "torch.distributed.run",
        *where,
        "--log-dir",
        logdir,
        "--redirects",
        "3",
        "--tee",
        "3",
        "--",  # the script's own arguments are never taken for torchrun's (argparse matches option prefixes: --log)
        script,
        *(args or ()),
    ]
    t0 = time.monotonic()
    if SHEPHERD:
        cmd = [cmd[0], "-I", SHEPHERD_SCRIPT, "--rmtree", rundir, "--", *cmd]  # -I: stdlib only, whatever the env
    with open(console, "wb") as out:
        proc = orphans.start(  # held: never taken for a run's orphan by a sweep
            lambda: subprocess.Popen(
                cmd,
                cwd=workdir,
                env=env,
                stdin=subprocess.PIPE if SHEPHERD else subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    with _live_lock:
        _live.add(proc)
    timed_out = False
    signalled: dict[int, int] = {}  # local rank -> pid of a worker sent SIGABRT at the timeout
    ignored: set[int] = set()  # local ranks still alive after it (SIGKILLed)
    try:
        if not _wait(proc, timeout, seen):
            timed_out = True
            signalled, ignored = _abort_workers(proc, seen)
    finally:
        if SHEPHERD and _exited(proc.pid):
            orphans.sweep()  # a dead shepherd (a rank killed it) left the rest to us
        _kill_and_reap(proc)
        _remove_elastic_tmp(logdir, env.get("TMPDIR"))
    with _live_lock:
        if proc in _aborted:
            _aborted.discard(proc)
            raise HarnessError("the run was stopped: the harness is shutting down")
    seconds = time.monotonic() - t0
    text = read_text(console)
    per_rank, known = _console(text, world_size, seen)
    summary = [(int(m[1]), int(m[2]), int(m[3])) for m in _SUMMARY.finditer(text)]
    for rank, local, _ in summary:
        known.setdefault(local, rank)
    glob_of = _global_ranks(world_size, known, nodes)
    codes = {rank: code for rank, _, code in summary}
    root = None
    if "Root Cause" in text:
        m = _SUMMARY.search(text[text.index("Root Cause") :])
        root = int(m[1]) if m else None
    launched = bool(glob.glob(os.path.join(logdir, "*", "attempt_*")))
    supervisor_killed = not timed_out and _died_by_signal(proc.returncode)
    ranks = []
    for r in range(world_size):
        g = glob_of[r]
        files = sorted(glob.glob(os.path.join(logdir, "*", "attempt_*", str(r), "stderr.log")))
        stderr = _RANK_PREFIX.sub("", read_text(files[-1])) if files else ""
        log = _RANK_PREFIX.sub("", "\n".join(per_rank[r]))
        if not log and files:
            log = read_text(files[-1].replace("stderr.log", "stdout.log")) + stderr
        raw = RawRank(rank=g, log=log, traceback=_traceback(stderr), stack=_fatal_dump(stderr))
        if timed_out and r in signalled:
            raw.signal, raw.killed_by_harness = ("SIGKILL" if r in ignored else "SIGABRT"), True
        elif g in codes:
            code = codes[g]
            if code < 0:
                raw.signal = procfs.signame(-code)
                raw.killed_by_harness = root is not None and g != root and -code in (signal.SIGTERM, signal.SIGKILL)
            else:
                raw.exit_code = code
        elif supervisor_killed and launched:  # the agent died without a summary: whatever still ran was killed with it
            raw.signal, raw.killed_by_harness = "SIGKILL", True
        elif proc.returncode == 0 or timed_out or launched:
            raw.exit_code = 0
        else:
            continue
        ranks.append(raw)
    ranks, error = _run_error(
        text, proc.returncode, ranks, bool(codes), timed_out=timed_out, launched=launched, nodes=nodes, timeout=timeout
    )
    return RawRun(seconds=seconds, timed_out=timed_out, ranks=ranks, first_failure=root, error=error)


def _run_error(
    text: str,
    returncode: int | None,
    ranks: list[RawRank],
    summary: bool,
    *,
    timed_out: bool,
    launched: bool,
    nodes: Nodes | None,
    timeout: float,
) -> tuple[list[RawRank], str | None]:
    """``(ranks, error)``: the launcher-level error of a run (None when the ranks tell it all), and the ranks
    to report (none when the rendezvous of several nodes timed out).  ``summary``: the agent printed exit
    codes; ``timeout`` in seconds."""
    if nodes is not None and timed_out and not launched:
        return [], (
            f"timed out after {timeout:g} s waiting for the rendezvous of {nodes.describe()}: "
            "start every node with the same --nnodes, --rdzv-endpoint and --rdzv-id"
        )
    if launched and not timed_out and _died_by_signal(returncode):
        return ranks, SUPERVISOR_KILLED.format(code=returncode)
    if not ranks or (returncode not in (0, None) and not summary and not timed_out):
        lines = [ln for ln in text.splitlines() if ln.strip() and not _PREFIX.match(ln)]
        return ranks, f"torchrun exited with code {returncode}: " + (lines[-1] if lines else "no output")
    return ranks, None


def _console(text: str, nproc: int, seen: dict[int, int] | None) -> tuple[dict[int, list[str]], dict[int, int]]:
    """Each local rank's console lines (prefix removed), and local -> global ranks from ``seen`` and the
    multi-node prefixes.

    torch elastic's tail thread copies each worker's log with ``readline()``, so a line the worker is
    still writing is copied in pieces: the part written so far gets the prefix and no newline, and the
    rest follows later with the prefix again, on the same console line, perhaps after other ranks'
    pieces.  Each piece is joined to its own rank's pending text until a piece ends the line."""
    per_rank: dict[int, list[str]] = {r: [] for r in range(nproc)}
    pending: dict[int, str] = {}
    known = dict(seen or {})
    for line in text.splitlines():
        m = _PREFIX.match(line)
        if not m or int(m[1]) not in per_rank:
            continue
        starts = [p for p in _ANY_PREFIX.finditer(line) if int(p[1]) in per_rank]
        for i, p in enumerate(starts):
            rank = int(p[1])
            if p[2] is not None:
                known.setdefault(rank, int(p[2]))
            piece = line[p.end() : starts[i + 1].start() if i + 1 < len(starts) else len(line)]
            if i + 1 < len(starts):
                pending[rank] = pending.get(rank, "") + piece
            else:
                per_rank[rank].append(pending.pop(rank, "") + piece)
    for rank, rest in pending.items():
        per_rank[rank].append(rest)
    return per_rank, known


def _global_ranks(nproc: int, known: dict[int, int], nodes: Nodes | None) -> list[int]:
    """Global rank of each local rank 0..nproc-1: as observed, else this node's first observed rank plus
    the local rank (torch elastic numbers a node's workers contiguously), else ``node_rank * nproc``
    (static rendezvous), else the local rank (one node)."""
    if nodes is None:
        return list(range(nproc))
    if known:
        local, rank = min(known.items())
        base = rank - local
    else:
        base = (nodes.node_rank or 0) * nproc
    return [known.get(r, base + r) for r in range(nproc)]
