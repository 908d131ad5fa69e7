"""``fsdp-skill verify``: exit codes, the report, --json, usage errors, and hints for failing scripts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsdp_skill.core.hints import hint_for
from fsdp_skill.core.knowledge import load_knowledge
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
    code, out, _ = run_cli(capsys, str(SCRIPTS / "exit_code_3.py"), str(SCRIPTS / "hang_skip_allreduce.py"),
                           "--timeout", "3", "--json", "--no-cache")
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


@pytest.mark.parametrize("argv, message", [
    (["missing.py"], "cannot read missing.py"),
    (["no-such/snippet"], "unknown snippet id 'no-such/snippet'"),
    (["--all", "x.py"], "not several of them"),
    ([], "nothing to verify"),
    (["--topic", "no-such-topic"], "unknown topic 'no-such-topic'"),
], ids=["missing-file", "unknown-id", "ids-and-all", "nothing", "unknown-topic"])
def test_bad_usage_exits_2_with_one_line(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def _verdict(status, reason="", ranks=()):
    return Verdict(status=status, reason=reason, ranks=[RankResult(**r) for r in ranks])


KB = load_knowledge()


def test_hints_for_common_failures():
    hang = _verdict("timeout", ranks=[dict(rank=0, killed_by_harness=True, blocked_at="all_reduce at s.py:4"),
                                      dict(rank=1, exit_code=0)])
    assert hint_for(hang, KB) == ["join/uneven-inputs-hang", "debugging/find-stuck-rank"]
    same_place = _verdict("timeout", ranks=[dict(rank=r, killed_by_harness=True, blocked_at="barrier at s.py:9")
                                            for r in (0, 1)])
    assert hint_for(same_place, KB) == ["debugging/find-stuck-rank"]
    port = _verdict("failed", ranks=[dict(rank=0, exit_code=1, traceback="RuntimeError: Address already in use")])
    assert hint_for(port, KB) == ["debugging/address-in-use"]
    device = _verdict("failed", "rank 0 raised RuntimeError: Expected all tensors to be on the same device")
    assert hint_for(device, KB) == ["debugging/fsdp-same-device"]
    from fsdp_skill.core.hints import _resolve

    assert _resolve(["debugging/no-such-section", "nosuchtopic/x"], KB) == ["debugging"]  # absent section: its topic
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
