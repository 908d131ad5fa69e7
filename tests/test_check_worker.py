"""``/v1/check``'s worker process (fsdp_skill.adapters.http.check_worker): the same report as check_code, errors
carried back, a dead worker replaced, no worker left after close, a shutdown of the app or the death of its owner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from fsdp_skill.adapters.http.app import create_app
from fsdp_skill.adapters.http.check_worker import CheckWorker
from fsdp_skill.core.check import check_code
from fsdp_skill.errors import HarnessError, InvalidArgument
from fsdp_skill.runtime import procfs

CHECK_DATA = Path(__file__).resolve().parent / "data" / "check"


def gone(pid: int, within: float = 15.0) -> bool:
    """Whether process ``pid`` ends (or is left a zombie, with nobody to reap it) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not procfs.alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def worker():
    w = CheckWorker()
    yield w
    w.close()


def test_the_report_is_check_codes_made_in_another_process(worker):
    code = (CHECK_DATA / "FSD003_bad.py").read_text(encoding="utf-8")
    assert worker.pids() == []  # started on the first check
    report = worker.check(code, "train.py", ignore=["FSD014"])
    assert report == check_code(code, "train.py", ignore=["FSD014"])
    assert report.findings and {f.path for f in report.findings} == {"train.py"}
    (pid,) = worker.pids()
    assert pid != os.getpid()
    assert worker.check("x = 1\n", "y.py").counts["total"] == 0
    assert worker.pids() == [pid]  # kept between checks


def test_invalid_argument_travels_back_and_the_worker_stays(worker):
    with pytest.raises(InvalidArgument, match="E501"):
        worker.check("x = 1\n", "t.py", select=["E501"])
    (pid,) = worker.pids()
    assert worker.check("x = 1\n", "t.py").counts["total"] == 0
    assert worker.pids() == [pid]


def test_a_killed_worker_is_replaced(worker):
    worker.check("x = 1\n", "t.py")
    (pid,) = worker.pids()
    os.kill(pid, signal.SIGKILL)
    assert gone(pid)
    try:  # whether the executor noticed the death before this call decides which of the two it is
        worker.check("x = 1\n", "t.py")
    except HarnessError as e:
        assert "worker process ended" in str(e)
    report = worker.check((CHECK_DATA / "FSD001_bad.py").read_text(encoding="utf-8"), "t.py")
    assert [f.code for f in report.findings] == ["FSD001", "FSD001"]
    (fresh,) = worker.pids()
    assert fresh != pid


def test_close_stops_the_worker_and_refuses_later_checks():
    w = CheckWorker()
    w.check("x = 1\n", "t.py")
    (pid,) = w.pids()
    w.close()
    assert gone(pid) and w.pids() == []
    with pytest.raises(HarnessError, match="shutting down"):
        w.check("x = 1\n", "t.py")


def test_the_apps_shutdown_stops_its_check_worker():
    with TestClient(create_app()) as client:
        r = client.post("/v1/check", json={"code": (CHECK_DATA / "FSD001_bad.py").read_text(encoding="utf-8")})
        assert r.status_code == 200 and r.json()["counts"]["error"] == 2
        before = set(_spawned_children(os.getpid()))
        assert before, "the check ran in no child process"
    assert all(gone(pid) for pid in before)


def test_the_worker_ends_when_its_owner_is_killed(tmp_path):
    owner = tmp_path / "owner.py"
    owner.write_text(
        textwrap.dedent(
            """
            import sys, time
            from fsdp_skill.adapters.http.check_worker import CheckWorker
            if __name__ == "__main__":
                w = CheckWorker()
                w.check("import torch.distributed as dist\\n", "t.py")
                print(w.pids()[0], flush=True)
                time.sleep(120)
            """
        ),
        encoding="utf-8",
    )
    proc = subprocess.Popen([sys.executable, str(owner)], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())
        proc.kill()
        proc.wait(timeout=10)
        assert gone(pid), f"the check worker {pid} outlived its owner"
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()


def _spawned_children(pid: int) -> list[int]:
    """Process ids of multiprocessing's spawned workers whose parent is ``pid`` (its resource tracker, also a child,
    is not one)."""
    return [c for c in procfs.children(pid) if any("spawn_main" in a for a in procfs.cmdline(c) or [])]
