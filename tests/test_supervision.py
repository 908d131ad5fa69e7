"""Supervision: every process a run causes (ranks, their children, grandchildren in sessions of their own)
is killed and reaped when the run ends, times out, or its caller (CLI, server) is interrupted, terminated
or SIGKILLed; a rank that kills the warm zygote still leaves a verdict for every job of the batch.

The scripts (tests/data/scripts/) write their pids to ``$SUPERVISION_PIDS``; the tests check the process
table for those pids.  Waits are bounded polls (up to 30 s), never timing assertions.  Linux only (/proc).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import fsdp_skill.runtime as runtime
from fsdp_skill.runtime import Job, launch

SCRIPTS = Path(__file__).parent / "data" / "scripts"
CLI = [sys.executable, "-c", "import sys; from fsdp_skill.main import main; sys.exit(main())"]
# As from a terminal: Ctrl-C raises KeyboardInterrupt even when this test runs in a background job, whose
# processes start with SIGINT ignored (a CLI started that way rightly ignores it, and the SIGINT case would hang)
CLI_INTERRUPTIBLE = [
    sys.executable,
    "-c",
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from fsdp_skill.main import main; sys.exit(main())",
]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="supervision needs Linux (/proc, prctl)"),
]


def script(name: str) -> str:
    return (SCRIPTS / name).read_text()


def exists(pid: int) -> bool:
    """Whether ``pid`` has an entry in the process table (running or a zombie nobody reaped)."""
    return os.path.exists(f"/proc/{pid}")


def pids_in(folder: Path) -> list[int]:
    return [int(p) for f in sorted(folder.glob("rank*.pids")) for p in f.read_text().split()]


def wait_for(cond, limit: float = 30.0) -> bool:
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def pids_dir(tmp_path, monkeypatch):
    folder = tmp_path / "pids"
    folder.mkdir()
    monkeypatch.setenv("SUPERVISION_PIDS", str(folder))
    monkeypatch.delenv("SUPERVISION_HANG", raising=False)
    return folder


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_children_and_detached_grandchildren_are_reaped_with_the_run(pids_dir, launcher):
    """Each rank starts ``sleep`` in a session of its own and a plain ``sleep`` child, then exits 0: once the
    verdict is returned, neither the ranks nor either sleeper is in the process table."""
    v = runtime.verify_code(
        script("spawn_children.py"), filename="spawn_children.py", launcher=launcher, use_cache=False, timeout=60
    )
    assert v.status == "passed", v.reason
    pids = pids_in(pids_dir)
    assert len(pids) == 6, pids
    assert [p for p in pids if exists(p)] == []


def test_rank_ignoring_sigabrt_is_reported_killed_only_once_reaped(pids_dir):
    """At a torchrun timeout the ranks get SIGABRT (stack dump); ranks that ignore it are SIGKILLed and
    reaped before the verdict says so."""
    v = runtime.verify_code(
        script("ignore_sigabrt.py"), filename="ignore_sigabrt.py", launcher="torchrun", use_cache=False, timeout=5
    )
    assert v.status == "timeout", v.reason
    pids = pids_in(pids_dir)
    assert len(pids) == 2
    assert [p for p in pids if exists(p)] == []
    assert [(r.signal, r.killed_by_harness) for r in v.ranks] == [("SIGKILL", True)] * 2


def test_rank_killing_the_zygote_fails_its_job_and_the_batch_goes_on(pids_dir):
    """A rank that SIGKILLs its parent (the warm zygote): that job is rerun once on a fresh zygote, then
    failed with the reason; the next job of the batch passes; the detached sleepers are gone."""
    jobs = [
        Job(code=script("kill_parent.py"), filename="kill_parent.py", snippet_id="killer"),
        Job(code=script("allreduce_env.py"), filename="allreduce_env.py", snippet_id="after"),
    ]
    out = runtime.verify_many(jobs, use_cache=False)
    assert [v.snippet_id for v in out] == ["killer", "after"]
    assert out[0].status == "failed" and out[0].reason == launch.ZYGOTE_DIED, out[0].reason
    assert out[1].status == "passed", out[1].reason
    pids = pids_in(pids_dir)
    assert len(pids) == 4, pids  # rank 0 and its sleeper, in each of the two attempts
    assert wait_for(lambda: not any(exists(p) for p in pids)), [p for p in pids if exists(p)]


@pytest.mark.parametrize(
    "launcher,sig",
    [
        ("torchrun", signal.SIGTERM),
        ("torchrun", signal.SIGKILL),
        ("torchrun", signal.SIGINT),
        ("warm", signal.SIGTERM),
        ("warm", signal.SIGKILL),
        ("warm", signal.SIGINT),
    ],
    ids=lambda v: v.name if isinstance(v, signal.Signals) else v,
)
def test_signalled_cli_leaves_no_process_and_no_run_directory(tmp_path, pids_dir, launcher, sig):
    """``fsdp-skill verify --launcher L hang.py`` signalled mid-run: every rank and every sleeper it started
    disappears and no run directory is left in $TMPDIR."""
    work = tmp_path / "project"
    work.mkdir()
    (work / "hang.py").write_text(script("spawn_children.py"))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(os.environ, SUPERVISION_HANG="1", TMPDIR=str(tmpdir), FSDP_SKILL_CONFIRM_TIMEOUTS="0")
    proc = subprocess.Popen(
        [*CLI_INTERRUPTIBLE, "verify", "hang.py", "--launcher", launcher, "--timeout", "120"],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_for(lambda: len(list(pids_dir.glob("rank*.pids"))) == 2, 120), proc.stderr.read1().decode()
        pids = pids_in(pids_dir)
        assert all(exists(p) for p in pids)
        proc.send_signal(sig)
        proc.wait(60)
        assert wait_for(lambda: not any(exists(p) for p in pids)), [p for p in pids if exists(p)]
        ours = ("run-*", "fsdp-skill-warm-*")  # not torch's own caches (torchinductor_*)
        assert wait_for(lambda: not any(p for g in ours for p in tmpdir.glob(g))), list(tmpdir.iterdir())
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CARD = (
    textwrap.dedent("""\
    ---
    id: hang
    title: A snippet that hangs
    topic: hang
    aliases: [hang]
    sources:
      - https://docs.pytorch.org/docs/stable/distributed.html
    ---

    # Hang

    ## A rank that never returns
    <!--
    slug: never-returns
    apis: [torch.distributed.init_process_group]
    sources: [https://docs.pytorch.org/docs/stable/distributed.html]
    -->

    Both ranks start a sleeper in a session of their own, then sleep.

    ```python verify world_size=2 timeout=120 name=sleepers
    """)
    + script("spawn_children.py")
    + "```\n"
)


def test_serve_sigterm_exits_0_and_kills_runs_in_flight(tmp_path, pids_dir):
    """``fsdp-skill serve``, a verification of a hanging snippet in flight, then SIGTERM: exit 0, the request
    gets an error, and no rank or sleeper is left."""
    cards = tmp_path / "cards"
    cards.mkdir()
    (cards / "hang.md").write_text(CARD)
    port = _free_port()
    env = dict(os.environ, SUPERVISION_HANG="1", FSDP_SKILL_KNOWLEDGE=str(cards), FSDP_SKILL_CONFIRM_TIMEOUTS="0")
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = None
    try:

        def up() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                return False

        assert wait_for(up, 120), proc.stderr.read1().decode()
        request = (
            b"POST /v1/snippets/hang/sleepers/verify HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
        client = socket.create_connection(("127.0.0.1", port), timeout=120)
        client.sendall(request)
        assert wait_for(lambda: len(list(pids_dir.glob("rank*.pids"))) == 2, 120)
        pids = pids_in(pids_dir)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        reply = client.recv(1 << 16).decode(errors="replace")
        assert reply.startswith("HTTP/1.1 5"), reply[:200]  # the run was stopped, not given a verdict
        assert wait_for(lambda: not any(exists(p) for p in pids)), [p for p in pids if exists(p)]
    finally:
        if client is not None:
            client.close()
        proc.kill()
        proc.wait()
        proc.stderr.close()


SHEPHERD = Path(runtime.__file__).with_name("shepherd.py")


@pytest.mark.parametrize("end", ["caller exits", "SIGTERM"])
def test_shepherd_kills_its_whole_tree(tmp_path, end):
    """The shepherd alone (no torch): its command starts a sleeper in a new session and a plain one.  When
    its caller exits (EOF on its stdin: the caller's death, however it died) or on SIGTERM (the caller's
    request), both sleepers and the command are killed and reaped; only the caller's death removes the
    ``--rmtree`` directory (a live caller still reads its logs)."""
    rundir = tmp_path / "run"
    rundir.mkdir()
    pids = tmp_path / "pids"
    cmd = f"setsid sleep 301 & a=$!; sleep 302 & echo $$ $a $! > {pids}.tmp; mv {pids}.tmp {pids}; wait"
    caller = textwrap.dedent(f"""
        import os, subprocess, sys
        p = subprocess.Popen([sys.executable, "-I", {str(SHEPHERD)!r}, "--rmtree", {str(rundir)!r}, "--",
                              "sh", "-c", {cmd!r}], stdin=subprocess.PIPE)
        print(p.pid, flush=True)
        sys.stdin.readline()  # the test says when to go
        os._exit(0)
    """)
    proc = subprocess.Popen([sys.executable, "-c", caller], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tree: list[int] = []
    try:
        shepherd = int(proc.stdout.readline())
        assert wait_for(pids.exists)
        tree = [int(p) for p in pids.read_text().split()]
        assert all(exists(p) for p in [shepherd, *tree])
        if end == "SIGTERM":
            os.kill(shepherd, signal.SIGTERM)
            assert wait_for(lambda: not any(exists(p) for p in tree)), [p for p in tree if exists(p)]
            assert rundir.exists()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.wait(30) == 0
        assert wait_for(lambda: not any(exists(p) for p in [shepherd, *tree]))
        assert rundir.exists() == (end == "SIGTERM")
    finally:
        for pid in tree:  # only if the test failed: never leave sleepers behind
            if exists(pid):
                os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_rank_killing_the_shepherd_leaves_no_process(pids_dir, launcher):
    """A rank that SIGKILLs the shepherd (its supervisor, found among its ancestors): the orphans come to
    the caller, which kills and reaps them, so once the verdict is returned no rank and no sleeper (in a
    session of its own) is left; the verdict is failed, and under torchrun no rank is reported as having
    exited 0 (its agent died with the shepherd, before any exit code was known)."""
    v = runtime.verify_code(
        script("kill_supervisor.py"), filename="kill_supervisor.py", launcher=launcher, use_cache=False, timeout=60
    )
    pids = pids_in(pids_dir)
    assert pids and len(pids) % 4 == 0, pids  # rank and sleeper, two ranks, once or twice (warm reruns)
    assert [p for p in pids if exists(p)] == []
    assert v.status == "failed", v.reason
    if launcher == "torchrun":
        assert [(r.exit_code, r.signal, r.killed_by_harness) for r in v.ranks] == [(None, "SIGKILL", True)] * 2
        assert "supervisor was killed during the run" in v.reason, v.reason
    else:
        assert v.reason == launch.ZYGOTE_DIED, v.reason


def _kill_left(pids: list[int]) -> None:
    """Only if a test failed: SIGKILL what is left of ``pids`` and reap those that are this process's children."""
    for pid in pids:
        if exists(pid):
            os.kill(pid, signal.SIGKILL)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_a_detached_grandchild_with_no_environment_dies_with_a_run_that_kills_its_shepherd(pids_dir, launcher):
    """Issue 25, row 75: each rank double-forks a sleeper that calls setsid() and execs with an empty
    environment (no mark of the harness on it, in no session of the run), then rank 0 SIGKILLs every ancestor
    up to the shepherd: the sleepers are reparented to the caller, which still kills and reaps them (they are
    in a session other than its own and not a shepherd it started), so once the verdict is returned none is left."""
    v = runtime.verify_code(script("escape_owner.py"), filename="escape_owner.py", launcher=launcher, use_cache=False, timeout=60)
    pids = pids_in(pids_dir)
    try:
        assert pids and len(pids) % 4 == 0, pids  # rank and sleeper, two ranks, once or twice (warm reruns)
        assert [p for p in pids if exists(p)] == []
        assert v.status == "failed", v.reason
    finally:
        _kill_left(pids)


def _ancestors_read(pids_dir: Path) -> tuple[str, dict[int, str]]:
    rows = (pids_dir / "environ.txt").read_text().splitlines()
    owner = rows[0].split(" ", 1)[1]
    return owner, {int(pid): state for pid, state in (row.split() for row in rows[1:])}


@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_a_rank_cannot_read_the_environment_of_its_caller_or_shepherd(pids_dir, launcher):
    """Issue 25, row 90: no variable of the harness hands a rank the caller's pid, and the caller (while the
    run is in progress) and the shepherd are not dumpable, so a rank that walks its ancestors (having given up
    CAP_SYS_PTRACE) cannot read their /proc/PID/environ.  Root reads every process's /proc whatever its
    dumpable flag, so that part is checked only when the tests do not run as root (the flags themselves are
    checked by the tests below)."""
    v = runtime.verify_code(
        script("read_owner_env.py"), filename="read_owner_env.py", launcher=launcher, use_cache=False, timeout=60
    )
    assert v.status == "passed", v.reason
    owner, read = _ancestors_read(pids_dir)
    assert owner == "-"  # FSDP_HARNESS_OWNER is gone from the ranks' environment
    assert os.getpid() in read, read
    if os.geteuid() != 0:
        chain = list(read)
        assert read[os.getpid()] == "denied", read
        assert read[chain[chain.index(os.getpid()) - 1]] == "denied", read  # the shepherd, just below the caller
        assert read[chain[0]] == "readable", read  # the rank's own parent (zygote, agent): the ranks' environment


def test_the_caller_is_not_dumpable_while_a_run_is_in_progress():
    """``orphans.watching`` (every run and plan is inside it) clears this process's dumpable flag for as long as
    some run is in progress and restores it after the last one (nested: two runs in two threads)."""
    from fsdp_skill.runtime import orphans
    from fsdp_skill.runtime import shepherd as sh

    before = sh.prctl_get(sh.PR_GET_DUMPABLE)
    assert before == 1
    with orphans.watching():
        assert sh.prctl_get(sh.PR_GET_DUMPABLE) == 0
        with orphans.watching():
            assert sh.prctl_get(sh.PR_GET_DUMPABLE) == 0
        assert sh.prctl_get(sh.PR_GET_DUMPABLE) == 0
    assert sh.prctl_get(sh.PR_GET_DUMPABLE) == before


def _plain_user() -> tuple[str, object]:
    """An interpreter and a ``preexec_fn`` that run a process as a user other than root with no capability: this
    process's own when it is not root, else uid/gid 65534 with a system interpreter that user can run (skips
    when there is none)."""
    if os.geteuid() != 0:
        return sys.executable, None

    def demote() -> None:
        os.setgid(65534)
        os.setuid(65534)

    for python in ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"):
        check = [python, "-c", f"open({str(SHEPHERD)!r}).close()"]
        if os.path.exists(python) and subprocess.run(check, preexec_fn=demote).returncode == 0:
            return python, demote
    pytest.skip("running as root, and no interpreter that uid 65534 can run with the shepherd's file")


def test_the_shepherd_environment_is_unreadable_but_its_command_is_not(tmp_path):
    """The shepherd marks itself not dumpable: a process of the same (non-root) user cannot read its
    /proc/PID/environ, while the command it runs (dumpable again after execve) stays readable."""
    python, preexec = _plain_user()
    proc = subprocess.Popen(
        [python, "-I", str(SHEPHERD), "--", "sleep", "300"], stdin=subprocess.PIPE, preexec_fn=preexec, env={"X": "1"}
    )
    try:
        assert wait_for(lambda: len(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()) == 1)
        (child,) = (int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split())
        probe = textwrap.dedent("""
            import sys
            for pid in sys.argv[1:]:
                try:
                    open(f"/proc/{pid}/environ", "rb").read()
                    print("readable")
                except OSError:
                    print("denied")
        """)
        out = subprocess.run([python, "-c", probe, str(proc.pid), str(child)], preexec_fn=preexec, capture_output=True, text=True)
        assert out.stdout.split() == ["denied", "readable"], out
    finally:
        proc.stdin.close()  # EOF: the shepherd kills its command and exits
        proc.wait(30)


def test_a_sweep_kills_the_callers_unheld_children_in_other_sessions_only():
    """What a sweep takes for a run's orphan: a child of the caller in a session other than its own that the
    caller did not start through ``orphans.start`` (as a sleeper reparented to it would be).  A child started
    that way (a shepherd) and one in the caller's own session (a probe another thread waits for) are left."""
    from fsdp_skill.runtime import orphans

    sleep = ["sleep", "300"]
    with orphans.watching():
        held = orphans.start(lambda: subprocess.Popen(sleep, start_new_session=True))
        stray = subprocess.Popen(sleep, start_new_session=True)
        probe = subprocess.Popen(sleep)
        try:
            killed = orphans.sweep()
            assert stray.pid in killed, killed
            assert held.pid not in killed and probe.pid not in killed, killed
            assert not exists(stray.pid)  # killed and reaped
            assert held.poll() is None and probe.poll() is None
        finally:
            for proc in (held, stray, probe):
                proc.kill()
                proc.wait()
