"""The ``torchrun`` launcher: ``python -m torch.distributed.run --standalone --nproc_per_node=N script.py``.

torch's own machinery (elastic agent, c10d rendezvous on a kernel-chosen port, worker restarts off) runs
the script unchanged; this module only supervises the agent and reads what it leaves:
  * per-rank output from ``--tee 3`` (console lines prefixed ``[default<local_rank>]:``, interleaved as
    written) and per-rank ``stderr.log`` files from ``--log-dir`` / ``--redirects 3`` for tracebacks;
  * per-rank exit codes from the agent's failure summary (``rank : 1 (local_rank: 1) / exitcode : -9``);
  * at the timeout, ``SIGABRT`` to each worker with ``PYTHONFAULTHANDLER=1`` in its environment, so
    faulthandler prints every thread's stack into the worker's stderr before it dies; then ``killpg``.
The agent runs in its own session; its process group is killed (before the agent is reaped, so the
group id cannot have been reused) whenever the run ends, times out or the caller is interrupted.
"""
from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import sys
import time

from fsdp_skill.runtime.report import RawRank, RawRun, read_text

DUMP_WAIT_S = 2.0
_PREFIX = re.compile(r"^\[default(\d+)\]:")
_RANK_PREFIX = re.compile(r"^\[rank\d+\]: ?", re.M)
_SUMMARY = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)\s*\n\s*exitcode\s*:\s*(-?\d+)")


def _signame(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def _rank_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"RANK="):
            return int(item[5:])
    return None


def _exited(pid: int) -> bool:
    """Whether child ``pid`` has exited (without reaping it)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _wait(proc: subprocess.Popen, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the agent to exit, leaving it unreaped; True if it exited."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while not _exited(proc.pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 1.5, 0.05)
    return True


def _kill_and_reap(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the agent is unreaped, so its group id is still ours
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] != b"Z"


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


def run_torchrun(*, script: str, workdir: str, rundir: str, world_size: int, timeout: float,
                 env: dict[str, str], python: str | None = None, args: list[str] | None = None) -> RawRun:
    """Run ``script`` (``args``: its arguments) under torchrun with ``world_size`` workers of interpreter
    ``python`` (default: this one, ``sys.executable``); returns what was observed.

    ``timeout`` is in seconds.  Raises OSError when the interpreter cannot be started (the caller turns
    it into HarnessError); a failing script is reported in the returned RawRun, never raised.
    """
    logdir = os.path.join(rundir, "torchrun-logs")
    console = os.path.join(rundir, "torchrun.log")
    env = dict(env, PYTHONFAULTHANDLER="1")
    cmd = [python or sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world_size}",
           "--log-dir", logdir, "--redirects", "3", "--tee", "3", script, *(args or [])]
    t0 = time.monotonic()
    with open(console, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = False
    signalled: dict[int, int] = {}
    try:
        if not _wait(proc, timeout):
            timed_out = True
            for pid in _children(proc.pid):
                rank = _rank_of(pid)
                if rank is not None:
                    try:
                        os.kill(pid, signal.SIGABRT)
                        signalled[rank] = pid
                    except ProcessLookupError:
                        pass
            deadline = time.monotonic() + DUMP_WAIT_S
            while any(_alive(p) for p in signalled.values()) and time.monotonic() < deadline:
                time.sleep(0.02)
    finally:
        _kill_and_reap(proc)
    seconds = time.monotonic() - t0
    text = read_text(console)
    per_rank: dict[int, list[str]] = {r: [] for r in range(world_size)}
    for line in text.splitlines():
        m = _PREFIX.match(line)
        if m and int(m[1]) in per_rank:
            per_rank[int(m[1])].append(line[m.end():])
    codes = {int(m[1]): int(m[3]) for m in _SUMMARY.finditer(text)}
    root = None
    if "Root Cause" in text:
        m = _SUMMARY.search(text[text.index("Root Cause"):])
        root = int(m[1]) if m else None
    launched = bool(glob.glob(os.path.join(logdir, "*", "attempt_*")))
    ranks = []
    for r in range(world_size):
        files = sorted(glob.glob(os.path.join(logdir, "*", "attempt_*", str(r), "stderr.log")))
        stderr = _RANK_PREFIX.sub("", read_text(files[-1])) if files else ""
        log = _RANK_PREFIX.sub("", "\n".join(per_rank[r]))
        if not log and files:
            log = read_text(files[-1].replace("stderr.log", "stdout.log")) + stderr
        raw = RawRank(rank=r, log=log, traceback=_traceback(stderr), stack=_fatal_dump(stderr))
        if timed_out and r in signalled:
            raw.signal, raw.killed_by_harness = "SIGABRT", True
        elif r in codes:
            code = codes[r]
            if code < 0:
                raw.signal = _signame(-code)
                raw.killed_by_harness = root is not None and r != root and -code in (signal.SIGTERM, signal.SIGKILL)
            else:
                raw.exit_code = code
        elif proc.returncode == 0 or timed_out or launched:
            raw.exit_code = 0
        else:
            continue
        ranks.append(raw)
    error = None
    if not ranks or (proc.returncode not in (0, None) and not codes and not timed_out):
        lines = [ln for ln in text.splitlines() if ln.strip() and not _PREFIX.match(ln)]
        error = f"torchrun exited with code {proc.returncode}: " + (lines[-1] if lines else "no output")
    return RawRun(seconds=seconds, timed_out=timed_out, ranks=ranks, first_failure=root, error=error)
