"""The verification harness on real gloo process groups (world_size 2, CPU).

Scripts live in tests/data/scripts/.  Every test that runs ranks uses the process-wide warm launcher
(started once for the module); the torchrun tests pay torchrun's own start-up.  The only timing assertion
is the hang bound (timeout + 5 s).
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import fsdp_skill.runtime as runtime
from fsdp_skill.errors import InvalidArgument
from fsdp_skill.runtime import Job, Verdict, cache, host, launch, procfs, warm
from fsdp_skill.runtime import report as runtime_report
from fsdp_skill.runtime.report import blocked_at

SCRIPTS = Path(__file__).parent / "data" / "scripts"
pytestmark = pytest.mark.slow


def script(name: str) -> str:
    return (SCRIPTS / name).read_text()


def verify(name: str, **kw):
    kw.setdefault("use_cache", False)
    kw.setdefault("timeout", 60.0)
    return runtime.verify_code(script(name), filename=name, **kw)


def line_of(name: str, needle: str) -> int:
    return next(i for i, ln in enumerate(script(name).splitlines(), 1) if needle in ln)


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rfind(b")") + 2 :].split()[1])


def running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (a zombie re-parented to PID 1 is init's to reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z"


def descendants(root: int) -> list[int]:
    """Pids whose parent chain reaches ``root`` (zombies included: they still have an entry)."""
    parents = {int(p): _ppid(int(p)) for p in os.listdir("/proc") if p.isdigit()}
    out, frontier = [], {root}
    while frontier:
        kids = {p for p, pp in parents.items() if pp in frontier}
        out.extend(kids)
        frontier = kids
    return out


def assert_no_leftovers(timeout: float = 5.0) -> None:
    """The zygote has no children left once a verdict is returned (ranks and store reaped)."""
    pid = warm.current_pid()
    assert pid is not None
    deadline = time.monotonic() + timeout
    while descendants(pid) and time.monotonic() < deadline:  # only other tests' runs could linger
        time.sleep(0.05)
    assert descendants(pid) == []


def test_passing_script_gets_torchrun_env():
    v = verify("allreduce_env.py")
    assert v.status == "passed", v.reason + "\n" + "\n".join(r.output_tail for r in v.ranks)
    assert (v.backend, v.world_size, v.device, v.launcher, v.cached) == ("gloo", 2, "cpu", "warm", False)
    assert v.torch_version.startswith("2.") and v.seconds > 0 and v.checked_at.endswith("+00:00")
    assert v.code_sha256 == cache.code_sha256(script("allreduce_env.py"))
    assert [r.exit_code for r in v.ranks] == [0, 0]
    assert "rank 0 sum [3.0, 3.0]" in v.ranks[0].output_tail
    assert "rank 1 sum [3.0, 3.0]" in v.ranks[1].output_tail
    assert_no_leftovers()


def test_fsdp2_script_passes():
    v = verify("fsdp2_train.py")
    assert v.status == "passed", v.reason


def test_rank_that_raises_fails_with_its_traceback():
    v = verify("raise_rank1.py")
    assert v.status == "failed"
    assert v.reason.startswith("rank 1 raised ValueError: boom on rank 1 at raise_rank1.py:7"), v.reason
    r1 = v.ranks[1]
    assert r1.exit_code == 1 and "ValueError: boom on rank 1" in r1.traceback
    assert 'raise_rank1.py", line 7' in r1.traceback and "runpy" not in r1.traceback
    assert "ValueError: boom on rank 1" in r1.output_tail  # stderr is captured too
    r0 = v.ranks[0]
    assert r0.killed_by_harness or r0.exit_code is not None  # killed, or it exited on its own
    assert_no_leftovers()


def test_rank_killed_by_signal():
    v = verify("sigkill_rank1.py")
    assert v.status == "failed"
    assert v.ranks[1].signal == "SIGKILL" and v.ranks[1].exit_code is None
    assert not v.ranks[1].killed_by_harness
    assert v.reason.startswith("rank 1 was killed by SIGKILL"), v.reason


def test_nonzero_exit_fails():
    v = verify("exit_code_3.py")
    assert v.status == "failed" and v.ranks[0].exit_code == 3 and v.ranks[1].exit_code == 0
    assert v.reason == "rank 0 exited with code 3; rank 1 exited 0"


GLIBC = pytest.mark.skipif(sys.platform != "linux", reason="registers abort() with glibc's __cxa_atexit")


@GLIBC
@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_crash_in_interpreter_teardown_fails_the_run(launcher, monkeypatch):
    """A rank that aborts after its last line (in C teardown) fails warm as it fails under torchrun."""
    monkeypatch.delenv("FSDP_SKILL_WARM_EXIT", raising=False)
    v = verify("abort_at_exit.py", launcher=launcher)
    assert v.status == "failed", v.reason
    assert v.ranks[1].signal == "SIGABRT" and "work done" in v.ranks[1].output_tail, v.reason
    # recognised as a teardown crash: rerun once (it crashes again here), and the report says what it was
    assert v.ranks[1].teardown_crash and not v.ranks[0].teardown_crash and v.teardown_retries == 1, v
    assert v.reason.startswith(
        "rank 1 finished its script (exit 0), then was killed by SIGABRT while the interpreter shut down"
    ), v.reason
    assert "this is a second run: the first failed only in interpreter teardown (rank 1 finished" in v.reason
    from fsdp_skill.core.verify.hints import hint_for

    assert "init/destroy-process-group" in hint_for(v)


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_a_users_script_crashing_in_teardown_is_reported_once_not_rerun(launcher, tmp_path, monkeypatch):
    monkeypatch.delenv("FSDP_SKILL_WARM_EXIT", raising=False)
    path = tmp_path / "abort_at_exit.py"
    path.write_text(script("abort_at_exit.py"))
    job = runtime.Job(code=path.read_text(), filename=path.name, debug=True, path=str(path), cwd=str(tmp_path))
    (v,) = runtime.verify_many([job], launcher=launcher)
    assert v.status == "failed" and v.ranks[1].teardown_crash and v.teardown_retries == 0, v.reason
    assert "second run" not in v.reason


TEMP_PROBE = """\
import os
import tempfile

made = tempfile.mkdtemp(prefix="torchelastic_")  # what a snippet that starts its own elastic agent leaves
assert os.path.dirname(made) == os.environ["TMPDIR"] == tempfile.gettempdir(), (made, os.environ.get("TMPDIR"))
print("TEMP", made)
"""


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_code_without_a_file_gets_a_private_tmpdir_removed_with_the_run(launcher):
    """Knowledge snippets (and code sent over HTTP/MCP) write temporary files inside their run directory, so
    nothing they leave in TMPDIR (torch elastic's torchelastic_* directories) outlives the run."""
    (v,) = runtime.verify_many([runtime.Job(code=TEMP_PROBE, world_size=2, debug=True)], launcher=launcher)
    assert v.status == "passed", v.reason
    made = {line.split()[1] for r in v.ranks for line in r.output_tail.splitlines() if line.startswith("TEMP ")}
    assert len(made) == 2 and all("/run-" in p and not os.path.exists(p) for p in made), made


def _teardown_verdict(status: str, *, crash: bool = True, other_exit: int = 0) -> Verdict:
    ranks = [
        runtime.RankResult(rank=0, exit_code=other_exit),
        runtime.RankResult(rank=1, signal="SIGABRT" if crash else None, exit_code=None if crash else 0, teardown_crash=crash),
    ]
    if status == "passed":
        ranks = [runtime.RankResult(rank=r, exit_code=0) for r in (0, 1)]
    return Verdict(
        status=status,
        reason=f"{status} run",
        world_size=2,
        backend="gloo",
        seconds=1.0,
        launcher="warm",
        ranks=ranks,
        torch_version="2.13.0+cpu",
    )


@pytest.mark.parametrize("case", ["teardown then pass", "user script", "real failure too"])
def test_only_a_teardown_failure_of_a_snippet_is_rerun(case, monkeypatch):
    runs = [_teardown_verdict("failed", other_exit=3 if case == "real failure too" else 0), _teardown_verdict("passed")]
    calls = []

    def fake_run(job, place, sha, launcher, facts):
        calls.append(job)
        return runs[len(calls) - 1]

    monkeypatch.setattr(launch, "run", fake_run)
    job = runtime.Job(code="print(1)\n", debug=case == "user script")
    v = runtime.verify_many([job], use_cache=False)[0]
    if case == "teardown then pass":
        assert len(calls) == 2 and v.status == "passed" and v.teardown_retries == 1
        assert v.reason == ("passed run; this is a second run: the first failed only in interpreter teardown (failed run)")
    else:
        assert len(calls) == 1 and v.status == "failed" and v.teardown_retries == 0


def test_teardown_crash_needs_a_finished_script_or_torchs_signature():
    from fsdp_skill.runtime.report import RawRank, teardown_crash

    term = "terminate called without an active exception\n"
    dump_no_frame = "Fatal Python error: Aborted\n\nThread 0x1 (most recent call first):\n  <no Python frame>\n"
    dump_frame = 'Fatal Python error: Aborted\n\nCurrent thread 0x1 (most recent call first):\n  File "x.py", line 3 in f\n'
    assert teardown_crash(RawRank(rank=1, signal="SIGABRT", script_exit=0))
    assert teardown_crash(RawRank(rank=1, signal="SIGSEGV", script_exit=0))  # warm: anything after the script ended
    assert not teardown_crash(RawRank(rank=1, signal="SIGABRT", script_exit=1))
    assert not teardown_crash(RawRank(rank=1, signal="SIGABRT", script_exit=0, killed_by_harness=True))
    assert not teardown_crash(RawRank(rank=1, exit_code=0, script_exit=0))
    assert teardown_crash(RawRank(rank=1, signal="SIGABRT", log=term + dump_no_frame))  # torchrun: the signature
    assert teardown_crash(RawRank(rank=1, signal="SIGABRT", log=term))
    assert not teardown_crash(RawRank(rank=1, signal="SIGABRT", log=term + dump_frame))  # mid-script
    assert not teardown_crash(RawRank(rank=1, signal="SIGABRT", log=dump_no_frame))
    assert not teardown_crash(RawRank(rank=1, signal="SIGSEGV", log=term + dump_no_frame))


@GLIBC
def test_fast_warm_exit_is_blind_to_teardown_crashes(monkeypatch):
    monkeypatch.setenv("FSDP_SKILL_WARM_EXIT", "fast")
    assert verify("abort_at_exit.py").status == "passed"


def test_hang_is_a_timeout_with_each_rank_location(monkeypatch):
    monkeypatch.setenv("FSDP_SKILL_CONFIRM_TIMEOUTS", "0")  # the warm launcher's own report
    v = verify("hang_skip_allreduce.py", timeout=3.0)
    assert v.status == "timeout"
    assert v.seconds < 3.0 + 5.0  # the job's own duration (launcher start-up excluded): killed at its timeout
    allreduce = line_of("hang_skip_allreduce.py", "dist.all_reduce(t)")
    sleep = line_of("hang_skip_allreduce.py", "time.sleep(600)")
    r0, r1 = v.ranks
    assert r0.blocked_at == f"all_reduce at hang_skip_allreduce.py:{allreduce}"
    assert r1.blocked_at == f"sleep at hang_skip_allreduce.py:{sleep}"
    assert r0.killed_by_harness and r1.killed_by_harness and r0.signal == "SIGKILL"
    assert "in all_reduce" in r0.stack and "hang_skip_allreduce.py" in r1.stack
    assert v.reason == (
        f"timed out after 3 s: rank 0 blocked in all_reduce at hang_skip_allreduce.py:{allreduce}; "
        f"rank 1 blocked in sleep at hang_skip_allreduce.py:{sleep}"
    )
    assert_no_leftovers()


def test_warm_timeout_is_confirmed_under_torchrun(monkeypatch):
    calls = []

    def fake_run(job, place, sha, launcher, facts):
        calls.append(launcher)
        status = "timeout" if launcher == "warm" else "passed"
        ranks = [runtime.RankResult(rank=r, exit_code=0 if status == "passed" else None) for r in range(job.world_size)]
        # what a real run records: the cache keeps it only when it agrees with its key
        return Verdict(
            status=status,
            reason=f"{launcher} says {status}",
            launcher=launcher,
            seconds=1.5,
            code_sha256=sha,
            backend=place.backend,
            world_size=job.world_size,
            ranks=ranks,
            **launch.environment(facts),
        )

    monkeypatch.setattr("fsdp_skill.runtime.launch.run", fake_run)
    v = runtime.verify_code("x = 1", timeout=1.0, use_cache=False)
    assert calls == ["warm", "torchrun"]
    assert v.status == "passed" and v.launcher == "torchrun" and v.seconds == 3.0
    assert v.reason.startswith("torchrun says passed [the warm launcher had timed out (warm says timeout)")
    assert runtime.cached_verdict("x = 1").status == "passed"


def test_four_verifications_at_once_do_not_clash():
    results: list = [None] * 4

    def work(i: int) -> None:
        results[i] = verify("allreduce_env.py")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert [v.status for v in results] == ["passed"] * 4, [v.reason for v in results]
    assert_no_leftovers()


def test_cache_hit_does_not_run(monkeypatch):
    code = script("allreduce_env.py")
    assert runtime.cached_verdict(code) is None
    first = runtime.verify_code(code, filename="allreduce_env.py", snippet_id="demo/a")
    assert first.status == "passed" and not first.cached

    def boom(*a, **k):
        raise AssertionError("a cache hit must not run anything")

    monkeypatch.setattr("fsdp_skill.runtime.launch.run", boom)
    hit = runtime.verify_code(code, filename="allreduce_env.py", snippet_id="demo/b")
    assert hit.cached and hit.status == "passed" and hit.snippet_id == "demo/b"
    assert hit.ranks == first.ranks and hit.checked_at == first.checked_at
    assert runtime.cached_verdict(code).cached
    assert runtime.cached_verdict(code, world_size=4) is None  # world_size is part of the key


def test_corrupt_cache_entry_is_a_miss_and_is_rewritten(fsdp_skill_home):
    code = script("exit_code_3.py")
    v = runtime.verify_code(code, filename="exit_code_3.py")
    assert v.status == "failed"  # failed verdicts are cached too
    files = list((fsdp_skill_home / "verdicts").glob("*.json"))
    assert len(files) == 1
    files[0].write_text("{not json")
    assert runtime.cached_verdict(code) is None
    again = runtime.verify_code(code, filename="exit_code_3.py")
    assert not again.cached and again.status == "failed"
    assert json.loads(files[0].read_text())["status"] == "failed"
    assert runtime.cached_verdict(code).cached


def test_requires_cuda_is_skipped_without_running(monkeypatch):
    if host.cuda_device_count() >= 2:
        pytest.skip("this host has 2 CUDA devices; the skip path is for GPU-less hosts")
    monkeypatch.setattr("fsdp_skill.runtime.launch.run", lambda *a, **k: pytest.fail("a skipped snippet must not run"))
    v = runtime.verify_code("raise SystemExit(1)", requires=["cuda"])
    assert v.status == "skipped" and v.reason.startswith("requires cuda: world_size(2) > CUDA devices(")
    assert runtime.cached_verdict("raise SystemExit(1)", requires=["cuda"]).status == "skipped"
    assert runtime.verify_code("x = 1", backend="nccl").status == "skipped"


def test_verify_many_reports_progress(monkeypatch):
    seen = []
    jobs = [
        Job(code=script("allreduce_env.py"), filename="allreduce_env.py", snippet_id="a"),
        Job(code="x = 1", requires=("cuda",), snippet_id="b")
        if host.cuda_device_count() < 2
        else Job(code=script("exit_code_3.py"), filename="exit_code_3.py", snippet_id="b"),
    ]
    out = runtime.verify_many(jobs, progress=lambda done, total, v: seen.append((done, total, v.snippet_id)))
    assert [v.snippet_id for v in out] == ["a", "b"] and out[0].status == "passed"
    assert seen == [(1, 2, "a"), (2, 2, "b")]


def test_bad_arguments_raise_value_error():
    with pytest.raises(InvalidArgument, match="backend"):
        runtime.verify_code("x = 1", backend="mpi")
    with pytest.raises(InvalidArgument, match="launcher"):
        runtime.verify_code("x = 1", launcher="mpirun")
    with pytest.raises(InvalidArgument, match="timeout"):
        runtime.verify_code("x = 1", timeout=0)


@pytest.mark.parametrize(
    "env, message",
    [
        ({"A=B": "x"}, "name 'A=B' cannot be set"),
        ({"": "x"}, "name '' cannot be set"),
        ({"A\0B": "x"}, "cannot be set: it must be non-empty, without '=' or NUL"),
        ({"X": "a\0b"}, "environment variable X: its value must be a string without NUL"),
    ],
    ids=["equals", "empty", "nul-name", "nul-value"],
)
def test_an_environment_no_process_can_hold_is_refused_before_the_run(env, message, tmp_path):
    """A variable os.environ would refuse in the rank (which then failed, exit 70, as if the script had: probe 29
    N22) is one InvalidArgument before anything starts."""
    from fsdp_skill.runtime.job import validate

    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    job = runtime.Job(code="print(1)\n", path=str(script), filename="train.py", env=env)
    with pytest.raises(InvalidArgument, match=message):
        validate(job, "warm")


def test_torchrun_launcher_passes_and_fails():
    good = verify("allreduce_env.py", launcher="torchrun")
    assert good.status == "passed", good.reason + "\n" + "\n".join(r.output_tail for r in good.ranks)
    assert good.launcher == "torchrun" and "rank 1 sum [3.0, 3.0]" in good.ranks[1].output_tail
    bad = verify("raise_rank1_plain.py", launcher="torchrun")  # no torch import: cheap under torchrun
    assert bad.status == "failed", bad.reason
    line = line_of("raise_rank1_plain.py", "raise ValueError")
    assert bad.reason.startswith(f"rank 1 raised ValueError: boom on rank 1 at raise_rank1_plain.py:{line}"), bad.reason
    assert "ValueError: boom on rank 1" in bad.ranks[1].traceback and bad.ranks[1].exit_code == 1
    zygote = warm.current_pid()
    launcher = {zygote, *descendants(zygote)}
    if _ppid(zygote) != os.getpid():  # the zygote runs under its shepherd (Linux)
        launcher.add(_ppid(zygote))
    # torchrun and its workers are reaped; multiprocessing's resource tracker, which a spawn-context pool of another
    # test (the HTTP check worker's) started in this process and which lives as long as it, is not theirs
    assert set(descendants(os.getpid())) - launcher - _resource_trackers() == set()


def test_env_read_at_torch_import_is_honoured():
    v = verify("debug_level_env.py")
    assert v.status == "passed", v.reason + "\n" + "\n".join(r.output_tail for r in v.ranks)


def test_import_runtime_and_cache_lookup_do_not_import_torch(tmp_path):
    code = textwrap.dedent("""
        import sys
        import fsdp_skill.runtime as runtime
        from fsdp_skill.runtime.host import cuda_device_count
        assert runtime.cached_verdict("x = 1") is None
        cuda = runtime.cached_verdict("x = 1", requires=["cuda"])
        if cuda_device_count() < 2:
            assert cuda.status == "skipped" and "CUDA" in cuda.reason, cuda
        else:
            assert cuda is None
        assert "torch" not in sys.modules, "torch was imported"
    """)
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, FSDP_SKILL_HOME=str(tmp_path)))


def test_killing_the_client_kills_every_rank(tmp_path):
    """SIGTERM to a process that is waiting on a hung verification leaves no zygote and no rank behind."""
    client = textwrap.dedent(f"""
        import fsdp_skill.runtime as runtime
        from fsdp_skill.runtime import warm
        launcher = warm.shared()
        print(launcher.pid, flush=True)
        runtime.verify_code(open({str(SCRIPTS / "hang_skip_allreduce.py")!r}).read(), timeout=120, use_cache=False)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", client], stdout=subprocess.PIPE, text=True, env=dict(os.environ, FSDP_SKILL_HOME=str(tmp_path))
    )
    try:
        zygote = int(proc.stdout.readline())
        deadline = time.monotonic() + 30
        while len(descendants(zygote)) < 3 and time.monotonic() < deadline:  # store + 2 ranks
            time.sleep(0.05)
        family = [zygote, *descendants(zygote)]
        assert len(family) >= 4
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while any(running(p) for p in family) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [p for p in family if running(p)] == []
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_blocked_at_parses_faulthandler_dumps():
    code = "import torch.distributed as dist\n\ndef step(t):\n    dist.all_reduce(t)\n\nstep(x)\n"
    dump = textwrap.dedent("""\
        Thread 0x00007f1 (most recent call first):
          File "/usr/lib/python3.11/threading.py", line 324 in wait

        Current thread 0x00007f2 (most recent call first):
          File "/venv/torch/distributed/distributed_c10d.py", line 3252 in all_reduce
          File "/venv/torch/distributed/c10d_logger.py", line 83 in wrapper
          File "/tmp/run/work/s.py", line 4 in step
          File "/tmp/run/work/s.py", line 6 in <module>
          File "<frozen runpy>", line 88 in _run_code
    """)
    assert blocked_at(dump, "/tmp/run/work/s.py", code) == "all_reduce at s.py:4"
    fsdp = textwrap.dedent("""\
        Current thread 0x00007f2 (most recent call first):
          File "/venv/torch/distributed/distributed_c10d.py", line 4291 in all_gather_into_tensor
          File "/venv/torch/nn/modules/module.py", line 1782 in _call_impl
          File "/tmp/run/work/s.py", line 2 in <module>
    """)
    assert (
        blocked_at(fsdp, "/tmp/run/work/s.py", "x = 1\nloss = model(x).sum()\n")
        == "model at s.py:2 (inside all_gather_into_tensor)"
    )
    assert blocked_at("", "/tmp/s.py") is None


def test_debug_jobs_always_run_and_report_warm_timeouts_as_seen(monkeypatch):
    """A user's own script (Job.debug): no cache lookup, no torchrun confirmation of a timeout."""
    calls = []

    def fake_run(job, place, sha, launcher, facts):
        calls.append(launcher)
        return Verdict(status="timeout", reason="rank 0 blocked", launcher=launcher, seconds=1.0)

    monkeypatch.setattr("fsdp_skill.runtime.launch.run", fake_run)
    job = runtime.Job(code="x = 2", timeout=1.0, filename="mine.py", debug=True)
    first, second = runtime.verify_many([job, job])
    assert calls == ["warm", "warm"]  # run twice (no cache hit), never rerun under torchrun
    assert first.status == second.status == "timeout" and not second.cached


class _DyingZygote:
    """A stand-in for the warm launcher whose zygote dies during the first ``deaths`` runs, then passes."""

    torch_version = "2.13.0+cpu"

    def __init__(self, workdir: str, deaths: int):
        self.workdir, self.deaths, self.runs = workdir, deaths, 0

    def run(self, *, script, workdir, rundir, world_size, timeout, env, args):
        self.runs += 1
        if self.runs <= self.deaths:
            raise warm.LauncherDied("the warm launcher exited during the run")
        return runtime_report.RawRun(
            seconds=0.1, timed_out=False, ranks=[runtime_report.RawRank(rank=r, exit_code=0) for r in range(world_size)]
        )


@pytest.mark.parametrize("deaths, runs, status", [(0, 1, "passed"), (1, 2, "passed"), (2, 2, "failed"), (5, 2, "failed")])
def test_a_dying_zygote_gets_one_fresh_rerun_then_a_failed_verdict(deaths, runs, status, tmp_path, monkeypatch):
    zygote = _DyingZygote(str(tmp_path), deaths)
    monkeypatch.setattr(warm, "shared", lambda python=None: zygote)
    facts = runtime.api.require_torch()
    v = launch.run(Job(code="x = 1\n"), host.resolve("gloo", 2), "0" * 64, "warm", facts)
    assert (zygote.runs, v.status) == (runs, status)
    assert v.reason == (launch.ZYGOTE_DIED if status == "failed" else "all 2 ranks exited 0")
    assert list(tmp_path.iterdir()) == []  # every attempt's run directory is removed


# --------------------------------------------------------------------------- a user's project, run in place
USER_TRAIN = """
import os
import sys

import runtime  # the user's own packages, named like folders of fsdp-skill's repository
import skill
from model import Net

here = os.path.dirname(os.path.abspath(__file__))
assert runtime.OWNER == skill.OWNER == "user", (runtime.__file__, skill.__file__)
assert os.path.dirname(os.path.dirname(runtime.__file__)) == here, runtime.__file__
assert os.path.abspath(__file__) == os.path.join(here, "train.py"), __file__
assert os.getcwd() == here, os.getcwd()
assert sys.argv[1:] == ["--config", "config.txt", "--note", "two words", "--log", "x", "--nnodes", "3", "--help"], sys.argv
with open(sys.argv[2]) as f:  # relative to the working directory, as under torchrun from here
    width = int(f.read())
ours = sorted(m for m in sys.modules if m.split(".")[0] in ("fsdp_skill", "_fsdp_skill_rank_worker"))
assert not ours, f"the tool's modules are visible to the script: {ours}"
assert "pydantic" not in sys.modules, "pydantic leaked into the rank"

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
try:
    t = torch.full((width,), float(dist.get_rank() + 1))
    dist.all_reduce(t)
    assert t.tolist() == [3.0] * width and Net().width == width
finally:
    dist.destroy_process_group()
"""


def _user_project(root):
    root.mkdir()
    for pkg in ("runtime", "skill"):
        (root / pkg).mkdir()
        (root / pkg / "__init__.py").write_text('OWNER = "user"\n')
    (root / "model.py").write_text("class Net:\n    width = 4\n")
    (root / "config.txt").write_text("4\n")
    (root / "train.py").write_text(USER_TRAIN)
    return root


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_user_project_runs_in_place_with_its_own_packages(tmp_path, monkeypatch, capsys, launcher):
    from fsdp_skill.main import main

    project = _user_project(tmp_path / "project")
    monkeypatch.chdir(project)
    code = main(["verify", "train.py", "--launcher", launcher, "--json", "--", *USER_ARGS])
    out = capsys.readouterr().out
    (v,) = json.loads(out)
    assert code == 0 and v["status"] == "passed", out


# --log, --nnodes and --help prefix-match torchrun's own options (--log-dir, --nnodes, --help): they reach the script untouched
USER_ARGS = ["--config", "config.txt", "--note", "two words", "--log", "x", "--nnodes", "3", "--help"]


@pytest.mark.parametrize("broken", [False, True])
def test_user_project_under_plain_torchrun_agrees_with_verify(tmp_path, monkeypatch, capsys, broken):
    """The same project, run by plain torchrun from its directory: passes where verify passes, and fails
    (at the same line) where verify fails, here when the config file is missing."""
    from fsdp_skill.main import main

    project = _user_project(tmp_path / "project")
    if broken:
        (project / "config.txt").unlink()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSDP_SKILL_")}
    plain = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--", "train.py", *USER_ARGS],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    monkeypatch.chdir(project)
    code = main(["verify", "train.py", "--json", "--", *USER_ARGS])
    (v,) = json.loads(capsys.readouterr().out)
    assert (plain.returncode == 0) == (code == 0) == (v["status"] == "passed") == (not broken), plain.stderr[-2000:]
    if broken:
        line = (
            USER_TRAIN.splitlines().index(
                "with open(sys.argv[2]) as f:  # relative to the working directory, as under torchrun from here"
            )
            + 1
        )
        assert f"train.py:{line}" in v["reason"] and "FileNotFoundError" in v["reason"], v["reason"]
        assert f'{project / "train.py"}", line {line}' in plain.stderr, plain.stderr[-2000:]


def test_script_arguments_need_exactly_one_script(tmp_path, monkeypatch, capsys):
    from fsdp_skill.main import main

    project = _user_project(tmp_path / "project")
    monkeypatch.chdir(project)
    for argv in (
        ["verify", "train.py", "train.py", "--", "-x"],
        ["verify", "join/ddp-join", "--", "-x"],
        ["verify", "--all", "--", "-x"],
    ):
        assert main(argv) == 2
        assert "arguments after '--' are for one script" in capsys.readouterr().err


# Reports show the cause (issue 12): the user's error and line, whole, and never the harness's own frames.
HARNESS_NAMES = ("zygote.py", "worker.py", "runpy", "torch/distributed/run.py", "elastic", "Extension modules")


def assert_no_harness_frames(v) -> None:
    """Neither the reason nor any rank's output, traceback or stack names the harness's frames."""
    texts = [v.reason or ""] + [t or "" for r in v.ranks for t in (r.output_tail, r.traceback, r.stack, r.error)]
    for name in HARNESS_NAMES:
        assert not any(name in t for t in texts), (name, texts)


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_native_abort_in_a_collective_shows_the_cpp_message_and_the_users_line(launcher):
    v = verify("dtype_mismatch_all_gather.py", launcher=launcher)
    line = line_of("dtype_mismatch_all_gather.py", "dist.all_gather(")
    assert v.status == "failed" and v.ranks[1].signal == "SIGABRT", v.reason
    assert v.reason.startswith(
        f"rank 1 was killed by SIGABRT in all_gather at dtype_mismatch_all_gather.py:{line}: gloo::EnforceNotMet: "
    ), v.reason
    assert "Received data size doesn't match expected size" in v.reason
    assert v.ranks[1].error.startswith("gloo::EnforceNotMet: [enforce fail at ")
    assert v.ranks[1].error_at == f"all_gather at dtype_mismatch_all_gather.py:{line}"
    assert v.ranks[1].blocked_at is None  # it crashed; it was not blocked
    if v.ranks[0].exit_code == 0:  # warm: rank 0 finishes; torchrun's agent may stop it first (SIGTERM)
        assert "rank 0 exited 0, but its results are suspect: rank 1 failed inside a torch.distributed call" in v.reason
    assert_no_harness_frames(v)


def test_survivor_of_a_collective_abort_is_suspect():
    # warm: rank 1 enters late, so rank 0 usually completes the gather and exits 0 first; on a loaded machine
    # rank 0 may still be inside the gather when rank 1 aborts (then it is stopped, and nothing is "suspect"),
    # so up to three runs are allowed to produce the ordering this test is about
    for _ in range(3):
        v = verify("dtype_mismatch_all_gather.py")
        if v.ranks[0].exit_code == 0:
            break
        assert "suspect" not in v.reason, v.reason
    assert v.ranks[0].exit_code == 0 and "rank 0 gathered" in v.ranks[0].output_tail, v.reason
    assert "; rank 0 exited 0, but its results are suspect" in v.reason.splitlines()[0], v.reason


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_two_line_message_is_kept_whole(launcher):
    v = verify("two_line_message.py", launcher=launcher)
    line = line_of("two_line_message.py", "raise ValueError")
    summary, *message = v.reason.splitlines()
    assert summary.startswith(f"rank 1 raised ValueError at two_line_message.py:{line}"), v.reason
    assert message == ["ValueError: first line of the message", "second line of the message"], v.reason
    assert v.ranks[1].error == "ValueError: first line of the message\nsecond line of the message"
    assert "suspect" not in v.reason  # raised in the script's own code, not in a collective
    assert_no_harness_frames(v)


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_syntax_error_shows_the_script_line_only(launcher):
    code = "import torch.distributed as dist\n\n\ndef f(:\n    pass\n"
    v = runtime.verify_code(code, filename="broken.py", use_cache=False, timeout=60.0, launcher=launcher)
    assert v.status == "failed"
    assert v.reason.startswith("rank ") and " raised SyntaxError: invalid syntax at broken.py:4" in v.reason, v.reason
    for r in v.ranks:
        assert r.exit_code == 1 and r.error == "SyntaxError: invalid syntax" and r.error_at == "broken.py:4"
        assert r.traceback.lstrip().startswith('File "') and "def f(:" in r.traceback, r.traceback
    assert_no_harness_frames(v)


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_segfault_shows_the_users_line(launcher):
    v = verify("segv_rank1.py", launcher=launcher)
    line = line_of("segv_rank1.py", "ctypes.string_at(0)")
    assert v.status == "failed" and v.ranks[1].signal == "SIGSEGV", v.reason
    assert v.reason.startswith(
        f"rank 1 was killed by SIGSEGV in string_at at segv_rank1.py:{line}: Fatal Python error: Segmentation fault"
    ), v.reason
    assert f'segv_rank1.py", line {line} in <module>' in v.ranks[1].output_tail
    assert "SIGUSR1" not in v.reason  # rank 0, asked for its stack while exiting, was ended by the harness
    assert_no_harness_frames(v)


@pytest.mark.parametrize(
    "kw",
    [{"timeout": 1e12}, {"timeout": float("nan")}, {"world_size": 65}, {"world_size": 0}],
    ids=["timeout 1e12", "timeout nan", "world size 65", "world size 0"],
)
def test_runs_are_bounded(kw):
    """A timeout over a day (time_t overflow in the launcher's waits) or more ranks than one host should start
    is refused before anything runs."""
    with pytest.raises(InvalidArgument, match="at most 86400|from 1 to 64"):
        runtime.verify_code("print(1)\n", use_cache=False, **kw)


def test_torch_elastic_temporary_directories_of_a_run_are_removed(tmp_path, monkeypatch):
    """torch elastic leaves ``torchelastic_*`` in TMPDIR when its agent is stopped before its clean-up; the
    launcher removes those of its own run (named like the run's log directory) and no one else's."""
    from fsdp_skill.runtime.torchrun import _remove_elastic_tmp

    logdir, tmp = tmp_path / "logs", tmp_path / "tmp"
    (logdir / "0a1b-run_k2j3").mkdir(parents=True)
    (tmp / "torchelastic_ours" / "0a1b-run_zz9q" / "attempt_0").mkdir(parents=True)
    (tmp / "torchelastic_theirs" / "ffff-other_abcd").mkdir(parents=True)
    _remove_elastic_tmp(str(logdir), str(tmp))
    assert sorted(p.name for p in tmp.iterdir()) == ["torchelastic_theirs"]
    # and a real run under torchrun leaves none in its TMPDIR
    real = tmp_path / "real"
    real.mkdir()
    monkeypatch.setenv("TMPDIR", str(real))
    v = verify("allreduce_env.py", launcher="torchrun")
    assert v.status == "passed", v.reason
    assert not list(real.glob("torchelastic_*"))


def test_built_version_reads_the_build_label_without_importing_torch(tmp_path):
    """PyPI's CUDA wheels say ``2.6.0`` in their metadata (the probe's version) and ``2.6.0+cu124`` in
    ``torch.__version__``: the torchrun launcher's verdict names the latter, as the warm launcher's does."""
    from fsdp_skill.runtime import launch, target

    (tmp_path / "version.py").write_text("from typing import Optional\n__version__ = '2.6.0+cu124'\ndebug = False\n")
    facts = target.Facts("/x/python", (3, 11, 7), "2.6.0", str(tmp_path), True, True)
    assert launch.built_version(facts) == "2.6.0+cu124"
    assert launch.built_version(dataclasses.replace(facts, torch_dir=str(tmp_path / "gone"))) == "2.6.0"
    assert launch.built_version(dataclasses.replace(facts, torch_dir=None)) == "2.6.0"


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_a_verdict_names_the_torch_the_ranks_imported(launcher):
    import torch

    v = verify("allreduce_env.py", launcher=launcher)
    assert v.status == "passed" and v.torch_version == torch.__version__, (v.torch_version, v.reason)


@pytest.mark.parametrize(
    "code,expected",
    [
        ("# -*- coding: latin-1 -*-\nprint('caf\u00e9')\n", b"# -*- coding: latin-1 -*-\nprint('caf\xe9')\n"),
        (
            "#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = '\u20ac'\n",
            b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = '\x80'\n",
        ),
        (
            "x = 1\n# coding: latin-1\ny = '\u00e9'\n",
            "x = 1\n# coding: latin-1\ny = '\u00e9'\n".encode(),
        ),  # line 2 after code: not a declaration
        ("print('caf\u00e9')\n", "print('caf\u00e9')\n".encode()),
        ("# coding: no-such-codec\nx = 1\n", b"# coding: no-such-codec\nx = 1\n"),  # left to Python's SyntaxError
    ],
    ids=["latin-1", "cp1252-line-2", "not-a-declaration", "utf-8", "unknown-codec"],
)
def test_code_is_written_in_the_encoding_it_declares(code, expected):
    """The file a run executes reads back as the code sent (Python decodes it by its coding declaration)."""
    from fsdp_skill.runtime.job import source_bytes

    assert source_bytes(code) == expected


def test_code_its_declared_encoding_cannot_hold_is_a_one_line_error():
    from fsdp_skill.errors import InvalidArgument

    with pytest.raises(
        InvalidArgument, match=r"^the code declares coding 'latin-1', which cannot hold '€' \(line 2\): drop the coding line"
    ):
        runtime.verify_code("# -*- coding: latin-1 -*-\nx = '\u20ac'\n", filename="l.py", use_cache=False, timeout=60.0)


def test_a_latin_1_script_prints_what_it_says():
    v = runtime.verify_code(
        "# -*- coding: latin-1 -*-\nimport sys\nprint('caf\u00e9'.encode('latin-1'))\n",
        filename="l.py",
        world_size=1,
        use_cache=False,
        timeout=60.0,
    )
    assert v.status == "passed" and "b'caf\\xe9'" in v.ranks[0].output_tail, (v.reason, v.ranks[0].output_tail)


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_ranks_draw_different_random_numbers_as_fresh_processes_do(launcher):
    """Each fresh interpreter seeds torch's CPU generator (and Python's, numpy's) from the OS; forked ranks must not
    share the warm zygote's state, or data-dependent bugs (different shapes per rank) never show."""
    code = (
        "import random, torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "print('draw', dist.get_rank(), torch.initial_seed(), torch.randint(0, 10**9, (1,)).item(), random.random())\n"
        "dist.destroy_process_group()\n"
    )
    v = runtime.verify_code(code, filename="draw.py", use_cache=False, timeout=60.0, launcher=launcher)
    assert v.status == "passed", v.reason
    draws = [next(line.split()[2:] for line in r.output_tail.splitlines() if line.startswith("draw")) for r in v.ranks]
    assert len({d[0] for d in draws}) == 2 and len({d[1] for d in draws}) == 2 and len({d[2] for d in draws}) == 2, draws


PRELOAD_PROBE = """\
import os, sys
from fsdp_skill.runtime import zygote
zygote.preload(("torch", "torch._dynamo"))
print(sorted(os.listdir(os.environ["TMPDIR"])))
"""


def test_the_zygotes_preload_leaves_no_empty_inductor_folder_in_tmpdir(tmp_path):
    """Importing torch._dynamo makes $TMPDIR/torchinductor_<user>; the warm launcher's preload removes it again when
    it made it and it is empty, and leaves alone one that was there before (a user's cache)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    run = subprocess.run([sys.executable, "-c", PRELOAD_PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[]", run.stdout
    (tmp_path / f"torchinductor_{getpass.getuser()}").mkdir()
    run = subprocess.run([sys.executable, "-c", PRELOAD_PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert run.stdout.strip() == f"['torchinductor_{getpass.getuser()}']", run.stdout + run.stderr[-2000:]


def _resource_trackers() -> set[int]:
    """Pids of multiprocessing resource trackers among this process's children."""
    return {
        c for c in procfs.children(os.getpid()) if any("multiprocessing.resource_tracker" in a for a in procfs.cmdline(c) or [])
    }
