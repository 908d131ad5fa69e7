"""Turning what the ranks left behind (exit statuses, logs, tracebacks, faulthandler dumps) into a Verdict.

Shared by both launchers.  The one piece of real parsing is :func:`blocked_at`: from a faulthandler dump
it finds the innermost frame inside the user's script and the function the script called there, giving
e.g. ``'all_reduce at snippet.py:14'`` for a rank stuck in a collective.  What a rank's output says about
its own error (whole messages, native crashes, harness frames removed) is read by :mod:`.frames`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

from fsdp_skill.runtime.frames import exception_message, in_torch_distributed, native_error, scrub
from fsdp_skill.runtime.models import RankResult, Status, Verdict

TAIL_LINES = 40
TAIL_CHARS = 6000
_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+) in (?P<func>.+?)\s*$')
_TB_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+)')
_THREAD = re.compile(r"^(Current thread|Thread) 0x[0-9a-f]+")
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_KEYWORDS = {
    "if",
    "elif",
    "while",
    "for",
    "return",
    "with",
    "assert",
    "not",
    "and",
    "or",
    "in",
    "lambda",
    "yield",
    "await",
    "print",
    "def",
    "class",
    "del",
    "raise",
    "except",
    "is",
}
# Errors a rank raises because *another* rank died or left (gloo/NCCL/store messages): never the root cause
# when some other rank failed for its own reason.
_CONSEQUENTIAL = re.compile(
    r"Connection closed by peer|Connection reset by peer|remote worker|Broken pipe|communicator was aborted"
    r"|NCCL communicator|Socket Timeout|failed to recv|DistNetworkError|Connection refused",
    re.I,
)
EXC_CHARS = 200
_GENERIC = {
    "wrapper",
    "inner",
    "_fn",
    "decorate_context",
    "__call__",
    "_call_impl",
    "_wrapped_call_impl",
    "wrapped",
    "fn",
    "func",
    "_inner",
}


@dataclass
class RawRank:
    """What a launcher observed about one rank before parsing."""

    rank: int
    exit_code: int | None = None
    signal: str | None = None
    killed_by_harness: bool = False
    log: str = ""
    traceback: str | None = None
    stack: str | None = None
    order: int | None = None  # position in the order ranks were seen to exit (0 = first), if known
    script_exit: int | None = None  # the script's own exit code, when the launcher saw it end (warm: before finalization)


@dataclass
class RawRun:
    """What a launcher observed about one run; :func:`make_verdict` turns it into a Verdict."""

    seconds: float
    timed_out: bool
    ranks: list[RawRank] = field(default_factory=list)
    first_failure: int | None = None
    torch_version: str | None = None
    error: str | None = None  # a launcher-level failure the ranks did not report (e.g. torchrun's rendezvous)


def tail(text: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    """The last ``lines`` lines of ``text`` (at most ``chars`` characters)."""
    out = "\n".join(text.rstrip("\n").splitlines()[-lines:])
    return out[-chars:]


def bounded_tail(text: str, limit: int) -> tuple[str, int]:
    """``(kept, dropped)``: the last ``limit`` bytes of ``text`` as UTF-8 (a character cut in two at the start is
    dropped whole) and how many bytes before them were cut (0: ``text`` is whole)."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text, 0
    kept = data[len(data) - limit :]
    start = next((i for i, b in enumerate(kept[:4]) if b & 0xC0 != 0x80), 0)  # skip a split character's tail bytes
    return kept[start:].decode("utf-8", errors="replace"), len(data) - len(kept) + start


def _same_file(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)


def _threads(dump: str) -> list[list[tuple[str, int, str]]]:
    """Frames per thread of a faulthandler dump, innermost first."""
    threads: list[list[tuple[str, int, str]]] = []
    for line in dump.splitlines():
        if _THREAD.match(line) or (not threads and _FRAME.match(line)):
            threads.append([])
        m = _FRAME.match(line)
        if m and threads:
            threads[-1].append((m["file"], int(m["line"]), m["func"]))
    return [t for t in threads if t]


def _calls_on_line(source_line: str) -> list[str]:
    code = source_line.split("#", 1)[0]
    return [n for n in _CALL.findall(code) if n not in _KEYWORDS]


def blocked_at(dump: str | None, script: str, code: str | None = None) -> str | None:
    """Where a rank waited, from its faulthandler dump: ``'<callee> at <script name>:<line>'``.

    The frame is the innermost one inside ``script`` (of the thread running the script's module code);
    the callee is the name called on that source line that also appears among the inner frames (so
    decorators such as c10d's ``wrapper`` are skipped), else the first call written on the line.  When
    the innermost frame is elsewhere (inside torch), ``' (inside <function>)'`` is appended.  Returns
    None when the dump has no frame.
    """
    if not dump:
        return None
    threads = _threads(dump)
    if not threads:
        return None
    name = os.path.basename(script)
    best = None
    for frames in threads:
        idx = next((i for i, f in enumerate(frames) if _same_file(f[0], script)), None)
        if idx is None:
            continue
        if best is None or frames[-1][2] == "<module>" and _same_file(frames[-1][0], script):
            best = (frames, idx)
            if frames[-1][2] == "<module>":
                break
    if best is None:
        file, line, func = threads[0][0]
        return f"{func} at {os.path.basename(file)}:{line}"
    frames, idx = best
    _, line, func = frames[idx]
    inner = [f[2] for f in frames[:idx]]
    source = ""
    if code is not None:
        lines = code.splitlines()
        if 0 < line <= len(lines):
            source = lines[line - 1]
    calls = _calls_on_line(source)
    callee = next((c for c in calls if c in inner), None)
    if callee is None and calls:
        callee = calls[0]
    if callee is None:
        callee = next((f for f in reversed(inner) if f not in _GENERIC), None)
    where = f"{name}:{line}"
    text = f"{callee} at {where}" if callee else f"{func} at {where}"
    if inner and inner[0] != callee and inner[0] not in _GENERIC:
        text += f" (inside {inner[0]})"
    return text


def traceback_location(tb: str | None, script: str) -> str | None:
    """``'snippet.py:6'``: the last frame of ``tb`` inside ``script``, or None."""
    if not tb:
        return None
    loc = None
    for line in tb.splitlines():
        m = _TB_FRAME.match(line)
        if m and _same_file(m["file"], script):
            loc = f"{os.path.basename(script)}:{m['line']}"
    return loc


def exception_line(tb: str | None, limit: int = EXC_CHARS) -> str | None:
    """The final ``Type: message`` of a traceback on one line: its first line, shortened to ``limit``
    characters, with ``…`` when the message goes on (see :func:`exception_message` for all of it)."""
    msg = exception_message(tb)
    if not msg:
        return None
    line = msg.splitlines()[0].strip()
    if "\n" in msg and len(line) < limit:
        line += " …"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def root_cause(ranks: list[RankResult], order: dict[int, int], first_failure: int | None) -> RankResult | None:
    """The failed rank to blame: the earliest to exit among those that failed for their own reason.

    A rank killed by the harness, or one whose error only says that a peer went away (gloo's
    "Connection closed by peer", NCCL aborts), is blamed only when no other rank failed; among the rest,
    a rank whose failure has a location (``error_at``: the script line or the collective it died in) comes
    before one that only aborted (e.g. a peer's SIGABRT with no message, which can exit first).
    """
    bad = [r for r in ranks if r.exit_code != 0 or r.signal is not None]
    if not bad:
        return None

    def key(r: RankResult):
        consequential = bool(r.traceback and _CONSEQUENTIAL.search(exception_message(r.traceback) or ""))
        position = order.get(r.rank, 1 << 30) if order else (0 if r.rank == first_failure else 1)
        return (r.killed_by_harness, r.teardown_crash, consequential, r.error_at is None, position, r.rank)

    return min(bad, key=key)


def _describe(rr: RankResult) -> str:
    if rr.killed_by_harness:
        if rr.blocked_at:
            return f"blocked in {rr.blocked_at}"
        # SIGUSR1 is the harness's own request for a stack dump, which ends a rank already past faulthandler
        return "was stopped by the launcher" + (f" ({rr.signal})" if rr.signal and rr.signal != "SIGUSR1" else "")
    if rr.signal:
        return f"was killed by {rr.signal}"
    if rr.exit_code == 0:
        return "exited 0"
    exc = exception_line(rr.traceback)
    return f"exited with code {rr.exit_code}" + (f" ({exc})" if exc else "")


def _failure(rr: RankResult) -> tuple[str, str | None]:
    """``(summary, message)``: one line naming the rank, its error and where; a multi-line error message is
    returned whole as ``message`` to go under it."""
    msg = rr.error or ""
    multi = "\n" in msg
    if rr.traceback:
        what = msg.split(":", 1)[0] if multi else (msg or "an exception")
        text = f"rank {rr.rank} raised {what}" + (f" at {rr.error_at}" if rr.error_at else "")
    elif rr.teardown_crash:
        text = (
            f"rank {rr.rank} finished its script (exit 0), then was killed by {rr.signal} while the "
            f"interpreter shut down (its results were complete)"
        )
        if msg and not multi:
            text += f": {msg}"
    elif rr.signal:
        text = f"rank {rr.rank} was killed by {rr.signal}" + (f" in {rr.error_at}" if rr.error_at else "")
        if msg and not multi:
            text += f": {msg}"
    else:
        text = f"rank {rr.rank} exited with code {rr.exit_code}"
    return text, (msg if multi else None)


_TERMINATE = "terminate called without an active exception"


def teardown_crash(raw: RawRank) -> bool:
    """Whether ``raw`` finished its script and then died while the interpreter shut down.

    Warm ranks report their script's exit code before finalizing (``script_exit``): a signal after a 0 is a
    teardown crash.  Under torchrun the exit code of the script is not seen, so only torch 2.13's known
    teardown race counts: a SIGABRT from ``std::terminate`` ("terminate called without an active
    exception") whose fatal-error dump shows the main thread outside any Python frame (or no dump: the
    abort came after faulthandler was finalized).  A gloo worker thread that releases a finished
    collective's tensors after ``Py_FinalizeEx`` began cannot take the GIL; CPython ends that thread with
    ``pthread_exit``, whose unwinding through C++ code calls ``std::terminate``.
    """
    if not raw.signal or raw.killed_by_harness:
        return False
    if raw.script_exit is not None:
        return raw.script_exit == 0
    if raw.signal != "SIGABRT" or _TERMINATE not in raw.log:
        return False
    dump = raw.log[raw.log.find("Fatal Python error") :] if "Fatal Python error" in raw.log else ""
    return not dump or ("<no Python frame>" in dump and 'File "' not in dump)


def _own_error(raw: RawRank, tb: str | None, script: str, code: str) -> tuple[str | None, str | None, str | None]:
    """``(error, error_at, frames)`` of a rank that failed for its own reason: its exception, or the message of
    a native crash in its log; ``frames`` is the traceback or crash dump they came from."""
    if tb:
        return exception_message(tb), traceback_location(tb, script), tb
    if raw.signal and not raw.killed_by_harness:
        message, dump = native_error(raw.log)
        if message:
            return message, blocked_at(dump, script, code), dump
    return None, None, None


def _reason(ranks: list[RankResult], first: RankResult, in_collective: bool) -> str:
    summary, message = _failure(first)
    others = []
    for r in ranks:
        if r is first:
            continue
        text = f"rank {r.rank} {_describe(r)}"
        if in_collective and r.exit_code == 0 and r.signal is None:
            text += (
                f", but its results are suspect: rank {first.rank} failed inside a torch.distributed call "
                f"(a collective both ranks took part in), so what rank {r.rank} received there may be wrong"
            )
        others.append(text)
    return summary + ("; " + "; ".join(others) if others else "") + (f"\n{message}" if message else "")


def make_verdict(
    run: RawRun,
    *,
    script: str,
    code: str,
    code_sha256: str,
    snippet_id: str | None,
    backend: str,
    device: str,
    world_size: int,
    timeout: float,
    launcher: str,
    torch_version: str | None,
    keep_output: int = 0,
) -> Verdict:
    """Build the Verdict of a finished run: ``passed`` only if every rank exited 0 and nothing timed out.

    Harness frames are removed from every rank's output, traceback and stack (:func:`frames.scrub`); a rank
    that failed for its own reason carries its whole error message and the user's line (``error``,
    ``error_at``), which the reason repeats.  With ``keep_output`` (bytes) each rank also carries its whole
    output, or its last ``keep_output`` bytes (``output``, ``output_dropped_bytes``).
    """
    ranks, frames_of = [], {}
    for raw in sorted(run.ranks, key=lambda r: r.rank):
        tb, stack = scrub(raw.traceback) or None, scrub(raw.stack) or None
        error, error_at, frames_of[raw.rank] = _own_error(raw, tb, script, code)
        log = scrub(raw.log) or ""
        output, dropped = bounded_tail(log, keep_output) if keep_output > 0 else (None, 0)
        ranks.append(
            RankResult(
                rank=raw.rank,
                exit_code=raw.exit_code,
                signal=raw.signal,
                killed_by_harness=raw.killed_by_harness,
                output_tail=tail(log),
                output=output,
                output_dropped_bytes=dropped,
                traceback=tb,
                stack=stack,
                blocked_at=None if raw.signal and error else blocked_at(stack, script, code),  # crashed, not blocked
                error=error,
                error_at=error_at,
                teardown_crash=teardown_crash(raw),
            )
        )
    bad = [r for r in ranks if r.exit_code != 0 or r.signal is not None]
    status: Status
    if run.timed_out:
        status = "timeout"
        reason = f"timed out after {timeout:g} s: " + "; ".join(f"rank {r.rank} {_describe(r)}" for r in ranks)
    elif bad or run.error or len(ranks) < world_size:
        status = "failed"
        order = {r.rank: r.order for r in run.ranks if r.order is not None}
        first = root_cause(ranks, order, run.first_failure)
        if first is None:
            reason = run.error or f"only {len(ranks)} of {world_size} ranks reported"
        elif first.killed_by_harness and run.error:  # no rank failed by itself: the launcher's error says why
            reason = run.error + ": " + "; ".join(f"rank {r.rank} {_describe(r)}" for r in ranks)
        else:
            reason = _reason(ranks, first, in_torch_distributed(frames_of.get(first.rank)))
    else:
        status = "passed"
        reason = f"all {world_size} ranks exited 0"
    return Verdict(
        status=status,
        reason=reason,
        snippet_id=snippet_id,
        code_sha256=code_sha256,
        backend=backend,
        world_size=world_size,
        device=device,
        torch_version=run.torch_version or torch_version,
        seconds=round(run.seconds, 3),
        launcher=launcher,
        ranks=ranks,
        cached=False,
        checked_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def read_text(path: str) -> str:
    """Content of ``path`` (undecodable bytes replaced), or '' when it does not exist."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""
