"""No process of a plan outlives it, and it leaves no temporary folder: processes the user's factory starts (in a
session of their own too), a non-daemon thread it leaves (which no longer delays the result), the owner SIGKILLed or
SIGTERMed mid-plan (the CLI), and a server stopping its plans (``runner.abort_all``).  The process table is read
from ``/proc`` (Linux: the shepherd is Linux's)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fsdp_skill.errors import HarnessError
from fsdp_skill.main import main

pytestmark = [pytest.mark.torch, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shepherd is Linux's")]

NET = """
import os, subprocess, sys, threading, time
import torch
from torch import nn

MARK = {mark!r}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(64, 64) for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def inputs():
    return torch.randn(4, 64)


def _leave_behind():
    # a process in a session of its own (escapes a kill of the plan's process group) and a non-daemon thread
    subprocess.Popen(["sleep", MARK], start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    threading.Thread(target=time.sleep, args=(600,), daemon=False).start()


def leaves():
    _leave_behind()
    return Net()


def hangs():
    _leave_behind()
    open(os.path.join({ready!r}, "started"), "w").close()
    time.sleep(600)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A factory file in the working directory, a private TMPDIR (to see what a plan leaves there) and a marker
    argument unique to this test run (to find the processes the factory started)."""
    mark = str(5000 + os.getpid() % 1000 + int(time.monotonic() * 1000) % 997)
    ready = tmp_path / "ready"
    ready.mkdir()
    (tmp_path / "net.py").write_text(NET.format(mark=mark, ready=str(ready)))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    yield {"mark": mark, "tmpdir": tmpdir, "ready": ready, "dir": tmp_path}
    for pid in _with_mark(mark):  # never leave one behind, whatever the test found
        os.kill(pid, signal.SIGKILL)


def _with_mark(mark: str) -> list[int]:
    """Pids of the live (not zombie) processes whose command line is ``sleep MARK``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmd[:2] == [b"sleep", mark.encode()] and state != "Z":
            out.append(int(entry))
    return out


def _plan_children() -> list[int]:
    """Pids of live planner children (``child.py --frame``) of any owner."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if b"plan/child.py\0--frame" in cmd:
                out.append(int(entry))
    return out


def _gone(check, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not check():
            return True
        time.sleep(0.1)
    return False


def test_what_a_factory_leaves_running_dies_with_the_plan_and_does_not_delay_it(project, capsys):
    t0 = time.monotonic()
    args = ["plan", "--model", "net.py:leaves", "--input", "net.py:inputs", "--world-size", "2", "--json", "--timeout", "300"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["blocks"] == 3
    assert time.monotonic() - t0 < 200  # the non-daemon thread (600 s) did not hold the child's exit
    assert _gone(lambda: _with_mark(project["mark"]), 10), "a process the factory started in its own session is left"
    assert list(project["tmpdir"].iterdir()) == []


def _start_cli(project) -> subprocess.Popen:
    exe = str(Path(sys.executable).with_name("fsdp-skill"))
    env = {**os.environ, "TMPDIR": str(project["tmpdir"])}
    proc = subprocess.Popen(
        [exe, "plan", "--model", "net.py:hangs", "--input", "net.py:inputs", "--world-size", "2", "--timeout", "500"],
        cwd=project["dir"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not (project["ready"] / "started").exists():  # the factory runs: the plan child and its processes exist
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.1)
    assert _with_mark(project["mark"])
    return proc


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_the_owner_killed_mid_plan_leaves_no_process_and_no_folder(project, sig):
    before = set(_plan_children())
    proc = _start_cli(project)
    mine = set(_plan_children()) - before
    assert mine, "the plan's child should be running"
    proc.send_signal(sig)
    proc.wait(timeout=60)
    proc.stderr.close()
    assert _gone(lambda: _with_mark(project["mark"])), "the factory's process outlived its owner"
    assert _gone(lambda: set(_plan_children()) & mine), "the plan's child outlived its owner"
    assert _gone(lambda: list(project["tmpdir"].iterdir())), f"left: {list(project['tmpdir'].iterdir())}"


def test_a_server_stopping_its_plans_kills_the_running_one_and_starts_no_other(project, monkeypatch):
    from fsdp_skill.core.plan import runner

    monkeypatch.setattr(runner, "_stopping", threading.Event())  # this test's own shutdown
    from fsdp_skill.core.plan.report import child_request
    from fsdp_skill.core.plan.spec import Setting

    request = child_request([Setting(mesh=[2])], None, "net.py:hangs", "net.py:inputs")
    errors: list[BaseException] = []

    def plan() -> None:
        try:
            runner.run_child(request, timeout=500)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    thread = threading.Thread(target=plan)
    thread.start()
    deadline = time.monotonic() + 120
    while not (project["ready"] / "started").exists():
        assert thread.is_alive() and time.monotonic() < deadline, errors
        time.sleep(0.1)
    runner.abort_all()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], HarnessError) and "shutting down" in str(errors[0])
    assert _gone(lambda: _with_mark(project["mark"]))
    assert list(project["tmpdir"].iterdir()) == []
    with pytest.raises(HarnessError, match="not started"):
        runner.run_child(request, timeout=10)
