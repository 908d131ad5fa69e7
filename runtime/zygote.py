# file-run: started as a file under the user's interpreter; standard library and torch only (tests/test_layers.py)
# private internals used here: CPython's weakref.finalize._registry (torch.library finalizers skipped at a rank's exit;
#   read with getattr), the private torch modules of PRELOAD (imported only if present: a missing one is skipped)
"""Fork server ("zygote") of the warm launcher: ``python .../runtime/zygote.py --fd N``.

Why: ``import torch`` and the lazy imports of the first ``fully_shard`` cost seconds per process; ranks
forked from a process that already holds those modules start in milliseconds.

Fork safety.  Only a single-threaded process may fork safely, so the zygote
  * imports torch and the distributed stack (``PRELOAD``) with ``OPENBLAS_NUM_THREADS=1`` (numpy's
    OpenBLAS would otherwise start a thread server at import) and refuses to serve (``fatal``) unless
    ``/proc/self/task`` holds exactly one thread after the imports;
  * never creates a process group, a TCPStore, a tensor or a CUDA context, so no intra-op pool, no
    c10d thread and no driver state exists at fork time;
  * supervises in one thread with ``selectors`` (pidfds for rank exits, a signal wakeup fd, the control
    socket): it never starts a thread of its own.
Each job gets a *store child* (forked first; it hosts the job's TCPStore on a kernel-chosen loopback
port, the way torchrun's agent does, so concurrent jobs never race for a port; ranks connect as
clients with ``TORCHELASTIC_USE_AGENT_STORE=True``) and one child per rank.  All of them share one
process group whose leader is the store child, so ``killpg`` also catches anything a rank spawned;
every child has ``PR_SET_PDEATHSIG=SIGKILL`` so nothing outlives a crashed zygote.  Ranks are reaped
only after ``killpg``, so a pid or process group id is never reused while it is still signalled.
A rank's own children may leave the group (``start_new_session=True``) and outlive their rank, so the
zygote is a child subreaper (Linux): an orphan is reparented to it.  When a job ends, every descendant
of its store and ranks and every orphan not marked with another running job's ``TORCHELASTIC_RUN_ID``
is SIGKILLed and reaped before the result is sent (an orphan that dropped that variable while another
job runs is killed too).  If the zygote dies, its shepherd (:mod:`fsdp_skill.runtime.shepherd`) kills
what is left.

Supervision (like torch's MultiProcessTestCase): on the first failing rank the others get a short
grace, then their Python stacks are dumped (SIGUSR1 -> faulthandler) and they are killed; at the
timeout every live rank's stack is dumped and the job is killed.  The zygote exits, killing and
reaping every job, on ``shutdown``, on EOF of the control socket (the client died) and on SIGTERM.

Fidelity (what a forked rank does the way ``python script.py`` under torchrun does, and where not):
  * same environment variables as a torchrun worker, script run as ``__main__`` from its own file, cwd a
    fresh directory, OMP_NUM_THREADS=1 unless set (torchrun's default for several ranks per node);
  * torch settings read once at ``import torch`` (TORCH_DISTRIBUTED_DEBUG, TORCH_LOGS) are re-read at
    the script's first torch import (:mod:`fsdp_skill.runtime.worker`); others keep the zygote's values;
  * exit: non-daemon threads joined, atexit handlers run, the script's globals dropped and garbage
    collected, then by default the interpreter's real finalization and ``exit()`` (C++ static destructors
    too), so torch 2.13's occasional crash at exit ("terminate called without an active exception",
    seen in 3 of 20 torchrun runs of small DDP/DTensor scripts that do not release their process group)
    fails a warm run as it fails under torchrun.  ``FSDP_SKILL_WARM_EXIT=fast`` skips that teardown with
    ``os._exit`` (~0.3 s less per rank, and blind to the race);
  * all ranks share the zygote's str hash seed (a fresh interpreter draws one per process) and run
    under SCHED_BATCH (see _rank_main); a warm ``timeout`` is rechecked under torchrun (fsdp_skill.runtime.policy).

Protocol: JSON lines on the socket given as ``--fd``.
  zygote -> client: {"type": "ready", "pid", "torch_version", "preload_s", "modules"} | {"type": "fatal", "message"}
  client -> zygote: {"type": "run", "id", "script", "workdir", "rundir", "world_size", "timeout", "env", "args"}
  zygote -> client: {"type": "result", "id", "ok": true, "seconds", "timed_out", "first_failure", "ranks": [...]}
                    {"type": "result", "id", "ok": false, "error"}
  client -> zygote: {"type": "shutdown"} -> {"type": "bye"}
Files a rank leaves in ``rundir``: ``rank{N}.log`` (stdout and stderr interleaved), ``rank{N}.stack``
(faulthandler dump) and ``rank{N}.tb`` (traceback of an uncaught exception).
"""

from __future__ import annotations

import importlib
import io
import json
import os
import selectors
import signal
import socket
import sys
import tempfile
import time
import types


def load_sibling(name: str) -> types.ModuleType:
    """Module ``name`` (its file beside this one) as a private module object, not registered in
    ``sys.modules``: a rank's script sees no module of fsdp-skill, the way it would under torchrun."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_fsdp_skill_rank_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_worker = load_sibling("worker")
_shepherd = load_sibling("shepherd")
_procfs = load_sibling("procfs")
_knobs = load_sibling("knobs")
install_import_time_env_sync, rank_env, run_script = (_worker.install_import_time_env_sync, _worker.rank_env, _worker.run_script)

# Modules imported before the first fork.  torch._dynamo and friends are what the first fully_shard /
# optimizer step would otherwise import lazily (measured with benchmarks/bench_verify.py --modules).
PRELOAD: tuple[str, ...] = (
    "torch",
    "torch.distributed",
    "torch.distributed.fsdp",
    "torch.distributed.tensor",
    "torch.distributed.tensor.parallel",
    "torch.distributed.device_mesh",
    "torch._dynamo",
    "torch.distributed.checkpoint",
    "torch.distributed.checkpoint.state_dict",
    "torch.distributed.algorithms.join",
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper",
    "torch.distributed.optim",
    "torch.distributed.elastic.multiprocessing.errors",
    "torch.nn.parallel",
    "torch.optim",
    "torch.utils.data",
    "torch.profiler",
    "torch.profiler._cupti_monitor",  # imported by the first optimizer step / FSDP forward
    "torch.distributed.checkpoint._fsspec_filesystem",  # dcp.save/load (imports fsspec)
    "torch.utils.serialization",
)
FAIL_GRACE_S = 0.5  # after the first failing rank, how long the others may exit on their own
DUMP_WAIT_S = 1.5  # how long to wait for faulthandler dumps before SIGKILL
STORE_START_S = 30.0  # how long the store child may take to report its port
_PR_SET_PDEATHSIG = 1


def _set_pdeathsig() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # not Linux: the zygote still kills its process groups on exit
        pass


class _Rank:
    __slots__ = ("rank", "pid", "pidfd", "go", "exit_code", "signal", "done", "killed", "dumped", "order")

    def __init__(self, rank: int, pid: int, go: int | None):
        self.rank, self.pid = rank, pid
        self.pidfd: int | None = None  # readable once the rank exits (Linux >= 5.3)
        self.go: int | None = go  # write end of the pipe the rank waits on for the store's port
        self.exit_code: int | None = None
        self.signal: str | None = None
        self.done = self.killed = self.dumped = False
        self.order: int | None = None  # 0 for the first rank seen to exit, 1 for the next, ...


class _Job:
    def __init__(self, msg: dict):
        self.id = msg["id"]
        self.script = msg["script"]
        self.args = [str(a) for a in msg.get("args", [])]
        self.workdir = msg["workdir"]
        self.rundir = msg["rundir"]
        self.world_size = int(msg["world_size"])
        self.timeout = float(msg["timeout"])
        self.env = dict(msg["env"])
        self.state = "running"  # running -> dumping -> killing -> (finalized)
        self.t0 = time.monotonic()
        self.store_pid: int | None = None
        self.store_fd: int | None = None
        self.store_buf = b""
        self.port: int | None = None
        self.ranks: list[_Rank] = []
        self.deadline = self.t0 + self.timeout
        self.first_failure: int | None = None
        self.fail_time: float | None = None
        self.timed_out = False
        self.dump_until = 0.0
        self.dump_sizes: dict[int, int] = {}

    @property
    def pgid(self) -> int | None:
        return self.store_pid

    def live(self) -> list[_Rank]:
        return [r for r in self.ranks if not r.done]


class Zygote:
    """The fork server's event loop (one thread).  Create it after the preload, then call :meth:`serve`."""

    def __init__(self, sock: socket.socket, torch_version: str):
        self.sock = sock
        self.torch_version = torch_version
        self.pid = os.getpid()
        self.preload_env = dict(os.environ)  # what torch saw when it was imported
        self.sel = selectors.DefaultSelector()
        self.jobs: dict[str, _Job] = {}
        self.inbuf = b""
        self.stopping = False
        self.has_pidfd = hasattr(os, "pidfd_open")
        self.wake_r, self.wake_w = os.pipe()
        for fd in (self.wake_r, self.wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGTERM, lambda *_: None)  # handled via the wakeup fd
        signal.signal(signal.SIGHUP, lambda *_: None)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the client decides what Ctrl-C means
        # Ranks inherit SIGUSR1 blocked and unblock it once faulthandler is registered, so an early dump
        # request cannot kill a rank that is still setting up.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        self.sel.register(self.sock, selectors.EVENT_READ, ("ctl",))
        self.sel.register(self.wake_r, selectors.EVENT_READ, ("wake",))
        self.subreaper = _shepherd.prctl(_shepherd.PR_SET_CHILD_SUBREAPER, 1)

    # ------------------------------------------------------------------ event loop
    def serve(self) -> int:
        """Run until shutdown, EOF on the control socket or SIGTERM; returns the exit code."""
        while not self.stopping:
            for key, _ in self.sel.select(self._next_timeout()):
                self._dispatch(key.data)
            now = time.monotonic()
            for job in list(self.jobs.values()):
                self._advance(job, now)
        self._abort_all("the warm launcher is shutting down")
        self._send({"type": "bye"})
        return 0

    def _next_timeout(self) -> float:
        now = time.monotonic()
        waits = [1.0]
        for job in self.jobs.values():
            if job.state in ("dumping", "killing") or (job.state == "running" and not self.has_pidfd):
                waits.append(0.02)
            waits.append(job.deadline - now)
            if job.fail_time is not None and job.state == "running":
                waits.append(job.fail_time + FAIL_GRACE_S - now)
        return max(0.0, min(waits))

    def _dispatch(self, data: tuple) -> None:
        kind = data[0]
        if kind == "ctl":
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.stopping = True
                return
            self.inbuf += chunk
            while b"\n" in self.inbuf:
                line, self.inbuf = self.inbuf.split(b"\n", 1)
                if line.strip():
                    self._handle(json.loads(line))
        elif kind == "wake":
            try:
                while os.read(self.wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            # Only SIGTERM / SIGHUP have Python handlers that write here.
            self.stopping = True
        elif kind == "store":
            self._read_store(data[1])
        elif kind == "rank":
            job, rank = data[1], data[2]
            self._poll_rank(job, rank)

    def _handle(self, msg: dict) -> None:
        if msg.get("type") == "run":
            try:
                job = _Job(msg)
            except (KeyError, TypeError, ValueError) as exc:
                self._send({"type": "result", "id": msg.get("id"), "ok": False, "error": f"bad request: {exc}"})
                return
            self.jobs[job.id] = job
            try:
                self._start_ranks(job, self._start_store(job))
            except OSError as exc:
                self._fail_job(job, f"could not fork: {exc}")
        elif msg.get("type") == "shutdown":
            self.stopping = True

    # ------------------------------------------------------------------ job state machine
    def _advance(self, job: _Job, now: float) -> None:
        if job.id not in self.jobs:
            return
        if job.port is None:
            if now >= job.t0 + STORE_START_S:
                self._fail_job(job, f"the store process did not report a port within {STORE_START_S:g} s{self._store_log(job)}")
            return
        if not self.has_pidfd:
            for r in job.live():
                self._poll_rank(job, r)
        live = job.live()
        if not live:
            self._finalize(job)
            return
        if job.state == "running":
            if job.fail_time is not None and now >= job.fail_time + FAIL_GRACE_S:  # set with first_failure
                self._start_dump(job, now)
            elif now >= job.deadline:
                job.timed_out = True
                self._start_dump(job, now)
        elif job.state == "dumping":
            sizes = {r.rank: self._stack_size(job, r.rank) for r in live}
            complete = all(sizes[k] > 0 and job.dump_sizes.get(k) == sizes[k] for k in sizes)
            job.dump_sizes = sizes
            if complete or now >= job.dump_until:
                self._kill(job)

    def _start_dump(self, job: _Job, now: float) -> None:
        job.state = "dumping"
        job.dump_until = now + DUMP_WAIT_S
        job.deadline = job.dump_until
        job.dump_sizes = {}
        for r in job.live():
            try:
                os.kill(r.pid, signal.SIGUSR1)  # the rank is unreaped, so this pid is still ours
                r.dumped = True
            except ProcessLookupError:
                pass

    def _kill(self, job: _Job) -> None:
        job.state = "killing"
        job.deadline = time.monotonic() + 3600.0
        for r in job.live():
            r.killed = True
            try:
                os.kill(r.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._killpg(job)

    def _killpg(self, job: _Job) -> None:
        if job.pgid is not None:
            try:
                os.killpg(job.pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _finalize(self, job: _Job) -> None:
        # The store child (group leader) is not reaped yet, so the group id is still ours to signal.
        self._killpg(job)
        self._kill_strays(job)
        for r in job.ranks:
            self._reap(r.pid)
        if job.store_pid is not None:
            self._reap(job.store_pid)
        self._close_job_fds(job)
        del self.jobs[job.id]
        self._send(
            {
                "type": "result",
                "id": job.id,
                "ok": True,
                "seconds": round(time.monotonic() - job.t0, 4),
                "timed_out": job.timed_out,
                "first_failure": job.first_failure,
                "port": job.port,
                "torch_version": self.torch_version,
                "ranks": [
                    {
                        "rank": r.rank,
                        "pid": r.pid,
                        "exit_code": r.exit_code,
                        "signal": r.signal,
                        "killed_by_harness": r.killed,
                        "dumped": r.dumped,
                        "order": r.order,
                    }
                    for r in job.ranks
                ],
            }
        )

    def _fail_job(self, job: _Job, error: str) -> None:
        for r in job.live():
            r.killed = True
        self._killpg(job)
        self._kill_strays(job)
        for r in job.ranks:
            self._reap(r.pid)
        if job.store_pid is not None:
            self._reap(job.store_pid)
        self._close_job_fds(job)
        self.jobs.pop(job.id, None)
        self._send({"type": "result", "id": job.id, "ok": False, "error": error})

    def _abort_all(self, error: str) -> None:
        for job in list(self.jobs.values()):
            self._fail_job(job, error)

    # ------------------------------------------------------------------ processes
    def _kill_strays(self, job: _Job) -> None:
        """SIGKILL and reap every process ``job`` caused besides its store and ranks (themselves killed by
        the caller and reaped after this): their descendants, and orphans reparented to the zygote that do
        not belong to another running job.  Repeats until none is left (a dying parent's children are
        reparented to us).  Without the subreaper only the descendants of live ranks are found."""
        own = {r.pid for r in job.ranks} | ({job.store_pid} if job.store_pid else set())
        others = {
            p
            for j in self.jobs.values()
            if j is not job
            for p in [*(r.pid for r in j.ranks), *([j.store_pid] if j.store_pid else [])]
        }
        while True:
            tree = _procfs.children_map()
            roots = list(own)
            for pid in tree.get(self.pid, ()):
                if pid not in own and pid not in others and self._run_id(pid) not in self._other_run_ids(job):
                    roots.append(pid)
            victims = [p for root in roots for p in [root, *_procfs.descendants(root, tree)] if p not in own]
            if not victims:
                return
            for pid in victims:
                _shepherd.kill(pid)
            for pid in victims:
                if pid in tree.get(self.pid, ()):
                    self._reap(pid)
            time.sleep(0.005)

    def _other_run_ids(self, job: _Job) -> set[str]:
        return {f"fsdp-skill-{j.id}" for j in self.jobs.values() if j is not job}

    @staticmethod
    def _run_id(pid: int) -> str | None:
        env = _procfs.environ(pid)
        return None if env is None else env.get("TORCHELASTIC_RUN_ID")

    def _reap(self, pid: int) -> None:
        while True:
            try:
                os.waitpid(pid, 0)
                return
            except ChildProcessError:
                return
            except InterruptedError:
                continue

    def _poll_rank(self, job: _Job, r: _Rank) -> None:
        if r.done:
            return
        try:
            info = os.waitid(os.P_PID, r.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
            r.done = True
        if info is not None:
            r.done = True
            if info.si_code == os.CLD_EXITED:
                r.exit_code = info.si_status
            else:
                r.signal = _procfs.signame(info.si_status)
        if not r.done:
            return
        r.order = sum(1 for other in job.ranks if other.order is not None)
        self._drop_fd(r.pidfd)
        r.pidfd = None
        failed = r.exit_code != 0 or r.signal is not None
        if failed and job.first_failure is None and job.state == "running" and not r.killed:
            job.first_failure = r.rank
            job.fail_time = time.monotonic()

    def _drop_fd(self, fd: int | None) -> None:
        """Unregister ``fd`` from the selector (if it is there) and close it (None: nothing to do)."""
        if fd is not None:
            try:
                self.sel.unregister(fd)
            except (KeyError, ValueError):
                pass
            os.close(fd)
        return None

    def _stack_size(self, job: _Job, rank: int) -> int:
        try:
            return os.stat(os.path.join(job.rundir, f"rank{rank}.stack")).st_size
        except OSError:
            return 0

    def _store_log(self, job: _Job) -> str:
        try:
            with open(os.path.join(job.rundir, "store.log"), encoding="utf-8", errors="replace") as f:
                text = f.read().strip()
        except OSError:
            return ""
        return f": {text.splitlines()[-1]}" if text else ""

    def _close_job_fds(self, job: _Job) -> None:
        self._drop_fd(job.store_fd)
        job.store_fd = None
        for r in job.ranks:
            if r.go is not None:
                os.close(r.go)
                r.go = None
            self._drop_fd(r.pidfd)
            r.pidfd = None

    def _own_fds(self) -> list[int]:
        fds = [self.wake_r, self.wake_w]
        for job in self.jobs.values():
            if job.store_fd is not None:
                fds.append(job.store_fd)
            fds.extend(r.pidfd for r in job.ranks if r.pidfd is not None)
            fds.extend(r.go for r in job.ranks if r.go is not None)
        return fds

    def _fork(self, child) -> int:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # child: never return into the event loop
            code = 70
            try:
                code = child()
            except BaseException:
                try:
                    import traceback

                    traceback.print_exc()
                    sys.stderr.flush()
                except BaseException:
                    pass
            finally:
                os._exit(code if isinstance(code, int) else 70)
        return pid

    def _child_setup(self, pgid: int, log_path: str, keep: tuple[int, ...] = (), close: tuple[int, ...] = ()) -> None:
        """First steps of every child: own process group, die with the zygote, drop the zygote's fds,
        default signal handlers, stdin from /dev/null and stdout+stderr into ``log_path``."""
        os.setpgid(0, pgid)
        _set_pdeathsig()
        if os.getppid() != self.pid:
            os._exit(70)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        fd = self.sock.detach()
        os.close(fd)
        self.sel.close()  # closes the epoll fd only
        for fd in [*self._own_fds(), *close]:
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)

    def _start_store(self, job: _Job) -> int:
        """Fork the job's store child, the leader of the job's process group; returns its pid (the group id)."""
        r, w = os.pipe()

        def store_main() -> int:
            self._child_setup(0, os.path.join(job.rundir, "store.log"), keep=(w,), close=(r,))
            from datetime import timedelta

            import torch.distributed as dist

            store = dist.TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=job.timeout + 300), wait_for_workers=False)
            os.write(w, f"{store.port}\n".encode())
            os.close(w)
            while True:
                signal.pause()

        pid = self._fork(store_main)
        os.close(w)
        job.store_pid = pid
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        os.set_blocking(r, False)
        job.store_fd = r
        self.sel.register(r, selectors.EVENT_READ, ("store", job))
        return pid

    def _read_store(self, job: _Job) -> None:
        if job.store_fd is None:  # the port is known already
            return
        try:
            chunk = os.read(job.store_fd, 64)
        except BlockingIOError:
            return
        job.store_buf += chunk
        if b"\n" in job.store_buf:
            job.port = int(job.store_buf.split(b"\n", 1)[0])
            self._drop_fd(job.store_fd)
            job.store_fd = None
            for r in job.ranks:  # release the ranks waiting for the port
                if r.go is None:
                    continue
                try:
                    os.write(r.go, f"{job.port}\n".encode())
                except OSError:
                    pass
                os.close(r.go)
                r.go = None
        elif not chunk:
            self._fail_job(job, f"the store process exited before reporting a port{self._store_log(job)}")

    def _start_ranks(self, job: _Job, pgid: int) -> None:
        """Fork every rank now, into process group ``pgid`` (the store child's); each waits on its own pipe for
        the store's port (sent by _read_store)."""
        for rank in range(job.world_size):
            go_r, go_w = os.pipe()
            try:
                pid = self._fork(lambda rank=rank, go_r=go_r, go_w=go_w: self._rank_main(job, rank, pgid, go_r, go_w))
            except OSError:
                os.close(go_w)
                raise
            finally:
                os.close(go_r)
            try:
                os.setpgid(pid, pgid)
            except OSError:
                pass
            r = _Rank(rank, pid, go_w)
            job.ranks.append(r)
            if self.has_pidfd:
                try:
                    r.pidfd = os.pidfd_open(pid)
                    self.sel.register(r.pidfd, selectors.EVENT_READ, ("rank", job, r))
                except OSError:
                    self.has_pidfd = False

    def _rank_main(self, job: _Job, rank: int, pgid: int, go_r: int, go_w: int) -> int:
        """Body of a rank process: torchrun's environment, faulthandler, then the script as __main__."""
        self._child_setup(pgid, os.path.join(job.rundir, f"rank{rank}.log"), keep=(go_r,), close=(go_w,))
        import faulthandler
        import random
        import weakref

        # Finalizers of the preload only unregister torch.library kernels from this process's dispatcher
        # at exit (~60 ms of atexit work per rank, invisible outside the process); a script's own stay.
        for info in list(
            getattr(weakref.finalize, "_registry", {}).values()
        ):  # CPython's private table (absent: nothing to skip)
            if getattr(info.func, "__module__", None) == "torch.library":
                info.atexit = False
        os.chdir(job.workdir)
        port = b""
        while not port.endswith(b"\n"):
            chunk = os.read(go_r, 64)
            if not chunk:
                return 70  # the job was abandoned before the store came up
            port += chunk
        os.close(go_r)
        env = dict(job.env)
        # The client's knob for this job ('fast': os._exit, no finalizing); the script never sees it.
        exit_mode = env.pop(_knobs.WARM_EXIT, "finalize")
        env.update(rank_env(rank, job.world_size, int(port), run_id=job.id))
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = None  # a fresh interpreter reads TMPDIR when first asked; the zygote may have cached its own
        stack_file = open(os.path.join(job.rundir, f"rank{rank}.stack"), "w")
        faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True, chain=False)
        faulthandler.enable(file=sys.stderr, all_threads=True)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, io.TextIOWrapper):
                try:
                    stream.reconfigure(line_buffering=True)
                except ValueError:
                    pass
        random.seed()  # a fresh interpreter seeds from the OS; a fork would share the zygote's state
        if "numpy" in sys.modules:
            try:
                sys.modules["numpy"].random.seed()
            except Exception:
                pass
        import torch

        torch.default_generator.seed()  # a fresh interpreter seeds torch's CPU generator from the OS too (CUDA's not)

        # torchrun sets OMP_NUM_THREADS=1 for several ranks per node; the zygote never started the pool.
        threads = os.environ.get("OMP_NUM_THREADS", "")
        if threads.isdigit() and int(threads) > 0:
            torch.set_num_threads(int(threads))
        install_import_time_env_sync(self.preload_env)
        # SCHED_BATCH (no wake-up preemption): a rank forked with torch preloaded otherwise loses a torch
        # 2.13 teardown race far more often than torchrun's ranks do (a gloo worker, preempted by the
        # main thread it woke, still holds a work whose thread-local state owns a Python object when
        # ProcessGroupGloo's destructor joins it with the GIL held: a deadlock).  Measured: 9/32 -> 1/32
        # hangs of a DDP script, same speed.  Remaining warm timeouts are rechecked under torchrun.
        try:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        except (AttributeError, OSError):
            pass
        code = run_script(job.script, os.path.join(job.rundir, f"rank{rank}.tb"), job.args)
        try:  # the script is over: a crash from here on is the interpreter's teardown, not the script
            with open(os.path.join(job.rundir, f"rank{rank}.exit"), "w") as f:
                f.write(str(code))
        except OSError:
            pass
        if exit_mode != "fast":
            # The interpreter's own finalization, then exit(): C++ static destructors run as in a fresh
            # process, which reproduces torch's occasional crash at exit ("terminate called without an
            # active exception") the way users meet it under torchrun; ~0.3 s per rank.  Never returns.
            import ctypes

            ctypes.pythonapi.Py_Exit(code)
        return code

    def _send(self, msg: dict) -> None:
        try:
            self.sock.sendall((json.dumps(msg) + "\n").encode())
        except OSError:
            self.stopping = True


def preload(modules: tuple[str, ...] = PRELOAD) -> tuple[str, list[str]]:
    """Import ``modules`` (torch first); returns (torch.__version__, modules that failed to import)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # torch.cuda.is_available() through NVML, not the CUDA runtime: a CUDA driver initialized before
    # fork() is unusable in the children (torch documents this variable for exactly that case).
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    inductor_dir = _default_inductor_dir()
    had_inductor_dir = inductor_dir is not None and os.path.exists(inductor_dir)
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            if name == "torch":
                raise
            missing.append(name)
    import torch

    if inductor_dir is not None and not had_inductor_dir:
        # importing torch._dynamo makes inductor's default cache folder ($TMPDIR/torchinductor_<user>); a run that
        # compiles makes it again (its cache_dir() creates it on each use), so an empty one is not left behind
        try:
            os.rmdir(inductor_dir)
        except OSError:
            pass
    return torch.__version__, missing


def _default_inductor_dir() -> str | None:
    """Inductor's default cache folder, ``<tempdir>/torchinductor_<user>`` as torch names it (None where
    ``TORCHINDUCTOR_CACHE_DIR`` chooses one: the user's own, left alone)."""
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return None
    import getpass
    import re
    import tempfile

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid: torch names the folder by the uid
        user = f"uid_{os.getuid()}"
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


def main(argv: list[str] | None = None) -> int:
    """Entry point: preload, check that only one thread exists, announce ``ready`` and serve."""
    import argparse
    import gc

    p = argparse.ArgumentParser(prog="python zygote.py")
    p.add_argument("--fd", type=int, required=True, help="inherited socket of the control channel")
    p.add_argument("--workdir", help="directory of the runs, removed when the zygote exits")
    args = p.parse_args(argv)
    sock = socket.socket(fileno=args.fd)
    sock.setblocking(True)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # `python zygote.py` put our folder first

    def say(msg: dict) -> None:
        sock.sendall((json.dumps(msg) + "\n").encode())

    t0 = time.perf_counter()
    modules = PRELOAD
    if os.environ.get(_knobs.PRELOAD):  # e.g. "torch,torch.distributed" (benchmarks compare preloads)
        modules = tuple(m.strip() for m in os.environ[_knobs.PRELOAD].split(",") if m.strip())
    try:
        version, missing = preload(modules)
    except BaseException as exc:  # noqa: BLE001 - reported to the client, which raises HarnessError
        say({"type": "fatal", "message": f"cannot import torch in the warm launcher: {exc!r}"})
        return 1
    import torch

    if torch.cuda.is_initialized():
        say(
            {
                "type": "fatal",
                "message": "CUDA was initialized while preloading torch; forked ranks could not use it. Use launcher='torchrun'.",
            }
        )
        return 1
    threads = _procfs.thread_count()
    if threads != 1:
        names = _procfs.thread_names()
        say(
            {
                "type": "fatal",
                "message": f"the warm launcher has {threads} threads after preloading torch "
                f"({', '.join(names)}); forking it would be unsafe. Use launcher='torchrun'.",
            }
        )
        return 1
    gc.collect()
    gc.freeze()  # keep preloaded objects out of collections so forked ranks share their pages
    say(
        {
            "type": "ready",
            "pid": os.getpid(),
            "torch_version": version,
            "preload_s": round(time.perf_counter() - t0, 3),
            "modules": len(sys.modules),
            "missing": missing,
        }
    )
    code = Zygote(sock, version).serve()
    if args.workdir:  # the client removes it too, unless it died first
        import shutil

        shutil.rmtree(args.workdir, ignore_errors=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # every child is reaped; skip the interpreter's slow teardown of torch


if __name__ == "__main__":
    sys.exit(main())
