"""runtime/procfs.py: the process facts the launchers read from /proc, checked against processes this test starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from fsdp_skill.runtime import procfs

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")

# A child that starts a grandchild in a session of its own, prints both pids and waits.
FAMILY = (
    "import subprocess, sys, time\n"
    "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
    "print(g.pid, flush=True)\n"
    "time.sleep(60)\n"
)


@pytest.fixture
def family():
    env = dict(os.environ, PROCFS_MARK="yes")
    child = subprocess.Popen(
        [sys.executable, "-c", FAMILY, "an arg", "two words"], stdout=subprocess.PIPE, env=env, start_new_session=True
    )
    grandchild = int(child.stdout.readline())
    yield child, grandchild
    for pid in (grandchild, child.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    child.wait()
    child.stdout.close()


def test_stat_names_parent_group_session_and_state(family):
    child, grandchild = family
    st = procfs.stat(child.pid)
    assert (st.ppid, st.pgrp, st.session) == (os.getpid(), child.pid, child.pid)  # it leads its own session
    assert st.state in "RSD"
    g = procfs.stat(grandchild)
    assert g.ppid == child.pid and g.session == grandchild != child.pid
    assert procfs.alive(child.pid) and procfs.exists(child.pid)


def test_a_zombie_exists_but_is_not_alive_and_a_reaped_pid_is_gone(family):
    child, _ = family
    os.kill(child.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while procfs.alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert procfs.stat(child.pid).state == "Z" and procfs.exists(child.pid) and not procfs.alive(child.pid)
    child.wait()
    assert procfs.stat(child.pid) is None and not procfs.exists(child.pid) and not procfs.alive(child.pid)
    assert procfs.environ(child.pid) is None and procfs.cmdline(child.pid) is None


def test_children_and_descendants(family):
    child, grandchild = family
    assert child.pid in procfs.children(os.getpid())
    assert procfs.children(child.pid) == [grandchild]
    assert set(procfs.descendants(os.getpid())) >= {child.pid, grandchild}
    assert procfs.descendants(child.pid) == [grandchild]
    tree = {1: [2, 3], 2: [4], 4: [5]}
    assert sorted(procfs.descendants(1, tree)) == [2, 3, 4, 5] and procfs.descendants(3, tree) == []


def test_environ_and_cmdline(family):
    child, _ = family
    env = procfs.environ(child.pid)
    assert env["PROCFS_MARK"] == "yes" and env["PATH"] == os.environ["PATH"]
    assert procfs.cmdline(child.pid) == [sys.executable, "-c", FAMILY, "an arg", "two words"]


def test_threads_of_this_process():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="procfs-probe")
    t.start()
    try:
        assert procfs.thread_count() == len(os.listdir("/proc/self/task")) >= 2
        names = procfs.thread_names()
        with open("/proc/self/comm") as f:
            main = f.read().strip()  # the main thread's name is the process's
        assert len(names) == procfs.thread_count() and main in names
    finally:
        stop.set()
        t.join()


def test_signame():
    assert procfs.signame(9) == "SIGKILL" and procfs.signame(int(signal.SIGABRT)) == "SIGABRT"
    assert procfs.signame(99) == "signal 99"


def test_without_proc_every_reader_answers_as_for_a_process_that_is_gone(monkeypatch, tmp_path):
    monkeypatch.setattr(procfs, "PROC", str(tmp_path / "no-proc"))
    pid = os.getpid()
    assert procfs.stat(pid) is None and not procfs.alive(pid) and not procfs.exists(pid)
    assert procfs.pids() == [] and procfs.children_map() == {} and procfs.children(pid) == []
    assert procfs.environ(pid) is None and procfs.cmdline(pid) is None and procfs.thread_names() == []
    assert procfs.thread_count() == threading.active_count()
