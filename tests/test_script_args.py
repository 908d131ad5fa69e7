"""`fsdp-skill verify PATH.py -- ARGS`: everything after `--` is the script's own sys.argv[1:], on both launchers."""

from __future__ import annotations

import json

import pytest

from fsdp_skill.main import main


class Recording:
    """A verifier that records the jobs it is given (verdicts from the fake one)."""

    def __init__(self, fake):
        self.fake, self.jobs = fake, []

    def cached(self, job):
        return None

    def run(self, jobs, *, launcher="warm", use_cache=True, progress=None):
        self.jobs.extend(jobs)
        return self.fake.run(jobs, launcher=launcher, use_cache=use_cache, progress=progress)


@pytest.mark.parametrize("tail", [["--epochs", "1"], ["--", "-x", "--json"], []], ids=["options", "dashes", "none"])
def test_arguments_after_double_dash_reach_the_job(tmp_path, monkeypatch, fake_verifier, capsys, tail):
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    rec = Recording(fake_verifier)
    argv = ["verify", "--json", "train.py"] + (["--", *tail] if tail else [])
    assert main(argv, verifier=rec) == 0
    (job,) = rec.jobs
    assert list(job.args) == tail and job.cwd == str(tmp_path) and job.path == str(tmp_path / "train.py")
    assert json.loads(capsys.readouterr().out)[0]["status"] == "passed"


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "join/ddp-join", "--", "--epochs", "1"],
        ["verify", "a.py", "b.py", "--", "--epochs", "1"],
        ["verify", "--topic", "join", "--", "-x"],
    ],
    ids=["snippet id", "two scripts", "topic"],
)
def test_arguments_need_exactly_one_script(tmp_path, monkeypatch, fake_verifier, capsys, argv):
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    assert main(argv, verifier=fake_verifier) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "arguments after '--' are for one script" in err
    assert fake_verifier.runs == []


SCRIPT = """\
import os
import sys

import torch.distributed as dist

dist.init_process_group("gloo")
assert sys.argv[1:] == ["--epochs", "1", "--name", "a b"], sys.argv
assert sys.argv[0] == os.path.abspath(__file__)
dist.destroy_process_group()
"""


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_script_sees_its_arguments(tmp_path, monkeypatch, capsys, launcher):
    (tmp_path / "train.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    argv = ["verify", "--json", "--launcher", launcher, "--timeout", "120", "train.py", "--", "--epochs", "1", "--name", "a b"]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)[0]
    assert code == 0 and out["status"] == "passed", out
    code = main(argv[:-1] + ["c"])  # another argument value: the script's assert fails
    out = json.loads(capsys.readouterr().out)[0]
    assert code == 1 and out["status"] == "failed" and "AssertionError" in out["reason"], out
