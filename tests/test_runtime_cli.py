"""``fsdp-skill verify``: exit codes, the report, --json, usage errors, and hints for failing scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.core.verify.hints import hint_for
from fsdp_skill.main import main
from fsdp_skill.runtime.models import RankResult, Verdict

SCRIPTS = Path(__file__).parent / "data" / "scripts"


def run_cli(capsys, *argv):
    code = main(["verify", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_passing_script_exits_0(capsys):
    code, out, _ = run_cli(capsys, str(SCRIPTS / "allreduce_env.py"), "--no-cache")
    assert code == 0
    assert out.startswith("PASS  allreduce_env.py  (")


@pytest.mark.slow
def test_failing_and_hanging_scripts_exit_1_with_json(capsys, monkeypatch):
    monkeypatch.setenv("FSDP_SKILL_CONFIRM_TIMEOUTS", "0")
    code, out, _ = run_cli(
        capsys, str(SCRIPTS / "exit_code_3.py"), str(SCRIPTS / "hang_skip_allreduce.py"), "--timeout", "3", "--json", "--no-cache"
    )
    assert code == 1
    failed, hung = json.loads(out)
    assert failed["status"] == "failed" and failed["script"] == "exit_code_3.py" and failed["hints"] == []
    assert hung["status"] == "timeout" and hung["ranks"][0]["blocked_at"].startswith("all_reduce at ")
    assert hung["hints"] == ["join/uneven-inputs-hang", "debugging/find-stuck-rank"]
    assert {"status", "reason", "ranks", "cached", "checked_at", "launcher", "torch_version"} <= set(failed)


@pytest.mark.slow
def test_report_shows_each_rank_and_the_hang_location(capsys):
    code, out, _ = run_cli(capsys, str(SCRIPTS / "raise_rank1.py"), "--no-cache")
    assert code == 1
    assert "FAIL  raise_rank1.py" in out and "rank 1 raised ValueError: boom on rank 1" in out
    assert "  rank 1: exit code 1" in out and "    | ValueError: boom on rank 1" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["missing.py"], "cannot read missing.py"),
        (["no-such/snippet"], "unknown snippet id 'no-such/snippet'"),
        (["--all", "x.py"], "not several of them"),
        ([], "nothing to verify"),
        (["--topic", "no-such-topic"], "unknown topic 'no-such-topic'"),
    ],
    ids=["missing-file", "unknown-id", "ids-and-all", "nothing", "unknown-topic"],
)
def test_bad_usage_exits_2_with_one_line(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def _verdict(status, reason="", ranks=()):
    return Verdict(status=status, reason=reason, ranks=[RankResult(**r) for r in ranks])


KB = load_knowledge()


def test_hints_for_common_failures():
    hang = _verdict(
        "timeout", ranks=[dict(rank=0, killed_by_harness=True, blocked_at="all_reduce at s.py:4"), dict(rank=1, exit_code=0)]
    )
    assert hint_for(hang, KB) == ["join/uneven-inputs-hang", "debugging/find-stuck-rank"]
    same_place = _verdict("timeout", ranks=[dict(rank=r, killed_by_harness=True, blocked_at="barrier at s.py:9") for r in (0, 1)])
    assert hint_for(same_place, KB) == ["debugging/find-stuck-rank"]
    port = _verdict("failed", ranks=[dict(rank=0, exit_code=1, traceback="RuntimeError: Address already in use")])
    assert hint_for(port, KB) == ["debugging/address-in-use"]
    device = _verdict("failed", "rank 0 raised RuntimeError: Expected all tensors to be on the same device")
    assert hint_for(device, KB) == ["debugging/fsdp-same-device"]
    assert hint_for(_verdict("passed"), KB) == []


@pytest.mark.slow
def test_rank0_only_full_state_dict_hang_points_at_the_full_state_dict_section(capsys, monkeypatch):
    """The hang is matched like a question: the API rank 0 was blocked in names the section to read."""
    monkeypatch.setenv("FSDP_SKILL_CONFIRM_TIMEOUTS", "0")
    code, out, _ = run_cli(capsys, str(SCRIPTS / "rank0_full_state_dict_hang.py"), "--timeout", "8", "--json")
    (v,) = json.loads(out)
    assert code == 1 and v["status"] == "timeout"
    assert v["ranks"][0]["blocked_at"].startswith("get_model_state_dict at ")
    assert v["hints"][0] == "checkpoint/fsdp2-full-state-dict", v["hints"]
    assert "debugging/find-stuck-rank" in v["hints"]


@pytest.mark.slow
def test_report_of_a_native_abort_shows_the_cause_and_a_hint(capsys):
    script = SCRIPTS / "dtype_mismatch_all_gather.py"
    line = next(i for i, ln in enumerate(script.read_text().splitlines(), 1) if "dist.all_gather(" in ln)
    code, out, _ = run_cli(capsys, str(script), "--no-cache")
    assert code == 1
    assert f"rank 1 was killed by SIGABRT in all_gather at dtype_mismatch_all_gather.py:{line}: gloo::EnforceNotMet" in out
    assert "Received data size doesn't match expected size" in out and "results are suspect" in out
    assert "  hint: `fsdp-skill show debugging/distributed-debug-detail`" in out
    for name in ("zygote.py", "worker.py", "runpy", "Extension modules"):
        assert name not in out, out
    code, out, _ = run_cli(capsys, str(script), "--no-cache", "--json")
    (v,) = json.loads(out)
    assert v["ranks"][1]["error_at"] == f"all_gather at dtype_mismatch_all_gather.py:{line}"
    assert "debugging/distributed-debug-detail" in v["hints"] and "zygote" not in out


@pytest.mark.slow
def test_report_keeps_a_multi_line_message_whole(capsys):
    code, out, _ = run_cli(capsys, str(SCRIPTS / "two_line_message.py"), "--no-cache")
    assert code == 1
    assert "  rank 1 raised ValueError at two_line_message.py:6; rank 0 " in out
    assert "\n    ValueError: first line of the message\n    second line of the message\n" in out


def test_hint_for_a_collective_size_mismatch():
    abort = _verdict(
        "failed",
        ranks=[
            dict(
                rank=1,
                signal="SIGABRT",
                error="gloo::EnforceNotMet: [enforce fail at pair.cc:456] Received data size doesn't match expected size.",
            )
        ],
    )
    assert hint_for(abort, KB) == ["debugging/distributed-debug-detail"]


def test_frames_scrub_and_native_error_parse_a_warm_abort_log():
    """The parsing behind the reports, on a log shaped as a warm rank leaves it (torch's "[rank0]:" prefix too)."""
    from fsdp_skill.runtime import frames

    harness = frames._RUNTIME_DIR
    log = (
        "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
        "  what():  [enforce fail at pair.cc:456] 8 vs 4. Received data size doesn't match expected size.\n"
        "Fatal Python error: Aborted\n\nThread 0x01 (most recent call first):\n"
        '  File "/x/torch/distributed/distributed_c10d.py", line 4287 in all_gather\n'
        '  File "/u/s.py", line 13 in main\n  File "<frozen runpy>", line 88 in _run_code\n'
        f'  File "{harness}zygote.py", line 707 in <module>\n\nExtension modules: torch._C (total: 1)\n'
    )
    message, dump = frames.native_error(log)
    assert message == "gloo::EnforceNotMet: [enforce fail at pair.cc:456] 8 vs 4. Received data size doesn't match expected size."
    assert dump.endswith('  File "/u/s.py", line 13 in main\n') and frames.in_torch_distributed(dump)
    tb = (
        "[rank0]: Traceback (most recent call last):\n"
        f'[rank0]:   File "{harness}worker.py", line 86, in run_script\n[rank0]:     alive.append(x)\n'
        '[rank0]:   File "/u/s.py", line 5, in <module>\n[rank0]:     raise E\n[rank0]: ValueError: boom\n'
    )
    assert frames.scrub(tb) == (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/u/s.py", line 5, in <module>\n[rank0]:     raise E\n[rank0]: ValueError: boom\n'
    )
    assert (
        frames.exception_message(
            'Traceback (most recent call last):\n  File "/u/s.py", line 5, in <module>\n    raise E\nValueError: one\n  two\n'
        )
        == "ValueError: one\n  two"
    )
    assert frames.native_error("no crash here") == (None, None)


@pytest.mark.parametrize("kind", ["fifo", "directory", "not-utf8"])
def test_a_script_that_is_not_a_readable_file_is_refused_at_once(capsys, tmp_path, kind):
    """A FIFO named like a script (it would block a plain read forever), a directory and undecodable bytes: one
    line, exit 2, nothing run."""
    import os

    path = tmp_path / "train.py"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"\xff\xfe print(1)\n")
    code, _, err = run_cli(capsys, str(path))
    assert code == 2 and err.count("\n") == 1 and f"cannot read {path}" in err and "Traceback" not in err
