"""skill/SKILL.md: Agent Skills front matter, and every `fsdp-skill ...` command in its code fences works
(run in-process through fsdp_skill.main.main, for real, in a temporary working directory and state dir)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from fsdp_skill.main import main

SKILL_MD = Path(__file__).resolve().parent.parent / "skill" / "SKILL.md"
TEXT = SKILL_MD.read_text(encoding="utf-8")
# A tiny script for the `fsdp-skill verify ... train.py` example: a gloo all_reduce on 2 ranks.
TRAIN_PY = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
try:
    t = torch.ones(1) * (dist.get_rank() + 1)
    dist.all_reduce(t)
    assert t.item() == sum(range(1, dist.get_world_size() + 1))
finally:
    dist.destroy_process_group()
"""


def front_matter() -> dict:
    m = re.match(r"---\n(.*?)\n---\n", TEXT, re.S)
    assert m, "SKILL.md must start with YAML front matter between '---' lines"
    return yaml.safe_load(m.group(1))


def fenced_commands() -> list[str]:
    cmds = []
    for info, body in re.findall(r"^```(\w*)[^\n]*\n(.*?)^```", TEXT, re.S | re.M):
        if info in ("bash", "sh", "shell", "console"):
            cmds += [
                line.strip().removeprefix("$ ")
                for line in body.splitlines()
                if line.strip().removeprefix("$ ").startswith("fsdp-skill ")
            ]
    return cmds


def test_front_matter():
    fm = front_matter()
    assert fm["name"] == "fsdp-skill"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", fm["name"]) and len(fm["name"]) <= 64
    desc = fm["description"]
    assert isinstance(desc, str) and 0 < len(desc) <= 1024
    for term in [
        "FSDP",
        "FSDP2",
        "fully_shard",
        "sharding",
        "mixed precision",
        "offload",
        "Join",
        "backends",
        "init_process_group",
        "分片",
        "混合精度",
        "卸载",
        "不均匀输入",
        "后端",
        "初始化",
    ]:
        assert term in desc, term
    assert set(fm) <= {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
    assert len(fm.get("compatibility", "")) <= 500


def test_body_covers_commands_and_verdicts():
    body = TEXT.split("\n---\n", 1)[1]
    for cmd in ["fsdp-skill ask --json", "fsdp-skill show", "fsdp-skill verify", "fsdp-skill export", "fsdp-skill check"]:
        assert cmd in body, cmd
    for word in ["passed", "failed", "timeout", "skipped", "unverified", "`backend`", "`world_size`", "`cached`"]:
        assert word in body, word


def test_commands_are_found():
    cmds = fenced_commands()
    assert len(cmds) >= 8
    assert {shlex.split(c)[1] for c in cmds} == {"ask", "show", "verify", "export", "check", "plan"}


def test_every_tool_is_in_the_mcp_table():
    from fsdp_skill.core.toolspec import tool_specs

    rows = TEXT.split("| tool | annotations | what it does |", 1)[1].split("\n\n", 1)[0]
    table = set(re.findall(r"^\| `(\w+)` \|", rows, re.M))
    assert {s.name for s in tool_specs()} | {"verify_script", "read_run_file"} == table


def test_check_is_documented_with_its_doors_and_exit_codes():
    body = TEXT.split("\n---\n", 1)[1]
    for text in [
        "fsdp-skill check --run",
        "POST /v1/check",
        "`check_script`",
        "Exit codes of `check`",
        "FSD000",
        "before running",
        "`findings[]`",
    ]:
        assert text in body, text


@pytest.mark.slow
def test_every_fenced_command_works(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN_PY, encoding="utf-8")
    for cmd in fenced_commands():
        argv = shlex.split(cmd)[1:]
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 0, f"`{cmd}` exited {code}\n{err[-3000:]}"
        if "--json" in argv:
            data = json.loads(out)
            if argv[0] == "ask":
                assert not data["abstained"] and data["sections"]
                verdicts = [sn["verification"]["status"] for s in data["sections"] for sn in s["snippets"]]
                assert "unverified" not in verdicts  # ask verified its snippets for real
            if argv[0] == "verify":
                assert data and all(v["status"] == "passed" for v in data), data
            if argv[0] == "check":  # train.py is clean; --run adds the verdict of a real run
                assert (
                    data == [] if "--run" not in argv else (data["findings"] == [] and data["verdict"]["status"] == "passed")
                ), data
        elif argv[0] != "check":  # a clean check prints nothing, like every linter
            assert out.strip(), f"`{cmd}` printed nothing"
    scripts = tmp_path / "fsdp_scripts"
    manifest = json.loads((scripts / "manifest.json").read_text(encoding="utf-8"))
    ids = {e["id"] for e in manifest["entries"]}
    for argv in (shlex.split(c)[1:] for c in fenced_commands()):
        if argv[0] == "export":  # every export into the same directory is in its one manifest
            if "--topic" in argv:
                assert any(i.startswith(argv[argv.index("--topic") + 1] + "/") for i in ids)
            else:
                assert argv[1] in ids
    assert manifest["entries"] and all(e["verified"] for e in manifest["entries"])
    assert (scripts / "test_exported.py").is_file()
