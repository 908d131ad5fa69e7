"""The target interpreter: the Python whose torch runs the ranks and answers API and host questions.

    python()                  the selected interpreter: ``$FSDP_SKILL_PYTHON``, else this one (sys.executable)
    facts(python=None)        Facts of an interpreter (its torch version, CUDA/NCCL build, device count)
    check_python(path, ...)   validate a user-given interpreter; returns its absolute path
    no_torch_reason(python)   the one-line message for an interpreter without torch

The tool may live in its own environment and still verify in the training environment (mypy's
``--python-executable`` does the same for type checking).  The CLI's ``--python PATH`` sets
``$FSDP_SKILL_PYTHON`` for its process, so ``serve --workers N`` passes it on to its workers.

Facts of a foreign interpreter come from one ``python probe.py --frame NONCE`` subprocess
(:mod:`fsdp_skill.runtime.probe`, standard library only; its result line is framed, :mod:`fsdp_skill.runtime.framing`,
so a wrapper script's own output is not read for it), memoised per path for the life of this process; this interpreter's come from the
same code in-process, so the ``ask`` hot path starts no subprocess.  An interpreter is identified by its
absolute path *without* resolving symlinks: a venv's ``bin/python`` links to the base interpreter but has its
own site-packages.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from fsdp_skill.errors import InvalidArgument
from fsdp_skill.runtime import framing, knobs, probe

PROBE_SCRIPT = str(Path(__file__).resolve().with_name("probe.py"))
PROBE_TIMEOUT_S = 60.0  # a cold interpreter start on a loaded machine; the probe itself takes ~30 ms
_probe_limit: list[float] = [PROBE_TIMEOUT_S]  # lowered by limit_probes (a command's own --timeout)


def limit_probes(seconds: float | None) -> None:
    """Give up on an interpreter's probe after ``seconds`` (a command's ``--timeout``) when that is shorter
    than :data:`PROBE_TIMEOUT_S`; None restores the default.  A hanging ``--python`` then fails in the time
    the user asked for, not a minute later."""
    _probe_limit[0] = PROBE_TIMEOUT_S if seconds is None else min(PROBE_TIMEOUT_S, float(seconds))


MIN_PYTHON = (3, 9)  # the zygote uses os.pidfd_open


@dataclass(frozen=True)
class Facts:
    """What one interpreter offers the harness; ``torch_version`` None means torch is not installed there."""

    python: str
    python_version: tuple[int, ...]
    torch_version: str | None
    torch_dir: str | None
    cuda_build: bool
    nccl_build: bool

    @property
    def device_count(self) -> int:
        """CUDA devices its ranks could use now (0 for a CPU build; honors ``CUDA_VISIBLE_DEVICES``)."""
        return probe.device_count(self.cuda_build)

    @property
    def cuda_available(self) -> bool:
        """Whether torch there would see a CUDA device (a CUDA build and at least one visible device)."""
        return self.device_count > 0

    @property
    def nccl_available(self) -> bool:
        """Whether torch there is built with NCCL (a CUDA build on Linux)."""
        return self.nccl_build


def python() -> str:
    """Absolute path of the selected target interpreter: ``$FSDP_SKILL_PYTHON`` or ``sys.executable``."""
    chosen = os.path.expanduser(os.environ.get(knobs.PYTHON) or sys.executable)
    if os.sep not in chosen:  # a bare name such as 'python3' is looked up on PATH, as a shell would
        chosen = shutil.which(chosen) or chosen
    return os.path.abspath(chosen)


def no_torch_reason(python_path: str) -> str:
    """One line saying that ``python_path`` has no torch and how to get verification back."""
    return (
        f"torch is not installed in this environment ({python_path}); install fsdp-skill[torch] or pass "
        f"--python PATH to a Python that has torch"
    )


_FACTS: dict[str, Facts] = {}
_LOCK = threading.Lock()
# ((what chooses the interpreter: $FSDP_SKILL_PYTHON, sys.executable, source, $PATH, $HOME), Facts) of the last call
# without a path: every answer asks several times, and resolving the path again costs more than the rest of the lookup
_Choice = tuple[str | None, str, str | None, str | None, str | None]
_LAST: tuple[_Choice, Facts] | None = None


def _set_last(key: _Choice, found: Facts) -> None:
    global _LAST
    _LAST = (key, found)


def _set_last_none() -> None:
    global _LAST
    _LAST = None


def _is_self(path: str) -> bool:
    return bool(sys.executable) and path == os.path.abspath(sys.executable)


def facts(python_path: str | None = None, source: str | None = None) -> Facts:
    """Facts of ``python_path`` (default: :func:`python`), probed once per path per process.

    Raises InvalidArgument, one line naming ``source`` (default ``--python``, or ``$FSDP_SKILL_PYTHON``
    when that chose the interpreter) and the path, when the interpreter does not exist, is not
    executable, is not a Python or is older than 3.9.  An interpreter without torch is valid.
    """
    if python_path is None:
        chosen = os.environ.get(knobs.PYTHON)
        key = (chosen, sys.executable, source, os.environ.get("PATH"), os.environ.get("HOME"))
        last = _LAST
        if last is not None and last[0] == key:  # the same choice as the last call: skip resolving the path again
            return last[1]
        found = facts(python(), source or (knobs.PYTHON if chosen else "--python"))
        _set_last(key, found)
        return found
    source = source or "--python"
    path = os.path.abspath(python_path)
    with _LOCK:
        hit = _FACTS.get(path)
    if hit is not None:
        return hit
    data = probe.static_facts() if _is_self(path) else _probe(path, source)
    found = Facts(
        python=path,
        python_version=tuple(data["python_version"]),
        torch_version=data["torch_version"],
        torch_dir=data["torch_dir"],
        cuda_build=bool(data["cuda_build"]),
        nccl_build=bool(data["nccl_build"]),
    )
    if found.python_version < MIN_PYTHON:
        raise InvalidArgument(
            f"{source} {path}: Python {'.'.join(map(str, found.python_version))} is too old; "
            f"the harness needs Python >= {'.'.join(map(str, MIN_PYTHON))}"
        )
    with _LOCK:
        _FACTS[path] = found
    return found


def check_python(path: str, source: str = "--python") -> str:
    """Validate a user-given interpreter and return its absolute path (a bare name is looked up on PATH).

    Probes it once (see :func:`facts`).  Raises InvalidArgument with one line naming ``source`` and
    ``path``: no such file, not an executable file, not a Python interpreter, too old.
    """
    if not path:
        raise InvalidArgument(f"{source}: give the path of a Python interpreter")
    path = os.path.expanduser(path)  # an MCP client's config has no shell to expand '~'
    if os.sep not in path:
        path = shutil.which(path) or path
    full = os.path.abspath(path)
    if not os.path.exists(full):
        raise InvalidArgument(f"{source} {path}: no such file")
    if not os.path.isfile(full) or not os.access(full, os.X_OK):
        raise InvalidArgument(f"{source} {path}: not an executable file")
    facts(full, source)
    return full


def _probe(path: str, source: str) -> dict:
    """Run the probe script under ``path``; its JSON, or InvalidArgument saying why ``path`` is not usable."""
    import subprocess  # only for another interpreter: the tool's own is probed in-process (the cached ask path)

    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        what = "no such file" if not os.path.exists(path) else "not an executable file"
        raise InvalidArgument(f"{source} {path}: {what}")
    nonce = framing.new_nonce()
    try:
        proc = _run_bounded([path, PROBE_SCRIPT, framing.FLAG, nonce])
    except subprocess.TimeoutExpired:
        raise InvalidArgument(
            f"{source} {path}: no answer within {_probe_limit[0]:g} s to a probe script; is it a Python interpreter?"
        ) from None
    except OSError as exc:
        raise InvalidArgument(f"{source} {path}: not a Python interpreter ({exc.strerror or exc})") from None
    framed = framing.read(proc.stdout.decode("utf-8", "replace"), nonce)
    if proc.returncode == 0 and framed.results:
        data = framed.results[-1]
        bad = _malformed_facts(data)
        if bad:
            raise InvalidArgument(f"{source} {path}: the probe script's result is malformed ({bad})")
        return data
    old = _old_python_version(path)
    if old:
        raise InvalidArgument(
            f"{source} {path}: Python {old} is too old; the harness needs Python >= {'.'.join(map(str, MIN_PYTHON))}"
        )
    last = framing.last_words(framed, proc.stderr.decode("utf-8", "replace"), proc.returncode)
    raise InvalidArgument(f"{source} {path}: not a Python interpreter (running a Python script gave: {last})")


def _run_bounded(argv: list[str]):  # -> subprocess.CompletedProcess[bytes]
    """Run ``argv`` (an interpreter probe) in a session of its own for at most the probe limit (seconds); on the
    timeout its whole process group is killed and reaped (a wrapper script's own children too, not only the
    interpreter), then TimeoutExpired is raised.

    While it runs this process is a child subreaper (:func:`fsdp_skill.runtime.orphans.watching`), and the probe is
    held (:func:`~fsdp_skill.runtime.orphans.start`: no concurrent sweep takes it for an orphan): a descendant that
    left the probe's session (``setsid``) and kept its stdout is reparented here and swept once the probe is done or
    past its limit, so its open pipe can neither hold the read forever nor outlive the probe. A probe that answered
    and exited while such a descendant held the pipe open still gives its answer."""
    import signal
    import subprocess

    from fsdp_skill.runtime import orphans

    def spawn() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )

    with orphans.watching():
        with orphans.start(spawn) as proc:
            try:
                out, err = proc.communicate(timeout=_probe_limit[0])
            except BaseException as exc:  # the timeout, or an interrupt: the whole group goes, and what escaped it
                answered = proc.poll() is not None  # it exited; something it started still holds the pipe
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                orphans.sweep()
                if not isinstance(exc, subprocess.TimeoutExpired):
                    raise
                try:
                    out, err = proc.communicate(timeout=5)
                except subprocess.TimeoutExpired:  # no subreaper here (not Linux): the pipe's holder is out of reach
                    raise exc from None
                if not answered:
                    raise
        orphans.sweep()  # a descendant that left the probe's session and let the pipe go: not left behind either
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


# the probe's keys and the JSON types of their values (runtime/probe.py's static_facts)
_FACT_TYPES: dict[str, tuple[type, ...]] = {
    "python_version": (list,),
    "torch_version": (str, type(None)),
    "torch_dir": (str, type(None)),
    "cuda_build": (bool,),
    "nccl_build": (bool,),
}


def _malformed_facts(data: object) -> str | None:
    """What is wrong with a probe result (not an object, a key missing or of the wrong type), or None."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    for key, types in _FACT_TYPES.items():
        if key not in data:
            return f"no {key!r}"
        if not isinstance(data[key], types):
            return f"{key!r} is {data[key]!r}"
    version = data["python_version"]
    if not version or not all(isinstance(v, int) and not isinstance(v, bool) for v in version):
        return f"'python_version' is {version!r}"
    return None


def _old_python_version(path: str) -> str | None:
    """'2.7' when ``path`` is a Python too old for the probe script (it prints its version with syntax
    that Python 2 also accepts), else None."""
    import subprocess

    try:
        proc = _run_bounded([path, "-c", "import sys; sys.stdout.write('%d.%d' % sys.version_info[:2])"])
        major, minor = (int(x) for x in proc.stdout.decode("ascii", "replace").strip().split("."))
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return f"{major}.{minor}" if proc.returncode == 0 and (major, minor) < MIN_PYTHON else None


def forget() -> None:
    """Drop the memoised facts (tests that install or remove torch in an interpreter)."""
    with _LOCK:
        _FACTS.clear()
        _set_last_none()
