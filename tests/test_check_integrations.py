"""The checker's other doors: the flake8 plugin (called directly, and through `flake8 --select FSD` when flake8
is installed), the pre-commit hook definition, and `check --run` (findings and the run's verdict in one report)."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fsdp_skill.adapters.flake8 import Plugin
from fsdp_skill.core.check import RULE_RANGE, RULES, check_source
from fsdp_skill.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "check"


def test_flake8_plugin_yields_the_checkers_findings():
    path = DATA / "FSD001_bad.py"
    code = path.read_text(encoding="utf-8")
    got = list(Plugin(ast.parse(code), str(path)).run())
    want = check_source(code, str(path))
    assert [(line, col + 1, msg.split(" ", 1)[0]) for line, col, msg, _ in got] == [(f.line, f.col, f.code) for f in want]
    line, col, msg, kind = got[0]
    assert kind is Plugin and msg.startswith("FSD001 ") and msg.endswith(f"[{want[0].section}]")
    assert list(Plugin(ast.parse((DATA / "FSD001_good.py").read_text(encoding="utf-8"))).run()) == []
    assert Plugin.name == "fsdp-skill" and Plugin.version


def test_flake8_plugin_imports_neither_flake8_nor_torch():
    code = (
        "import sys\nimport fsdp_skill.adapters.flake8 as p, ast\n"
        "list(p.Plugin(ast.parse('import torch\\nx = 1\\n')).run())\n"
        "bad = [m for m in ('torch', 'flake8') if m in sys.modules]\nassert not bad, bad\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_flake8_entry_point_is_registered():
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="flake8.extension") if e.name == "FSD"]
    assert ep.value == "fsdp_skill.adapters.flake8:Plugin" and ep.load() is Plugin


@pytest.mark.skipif(importlib.util.find_spec("flake8") is None, reason="flake8 is not installed")
def test_flake8_select_fsd_runs_the_rules(tmp_path):
    bad = tmp_path / "train.py"
    bad.write_text((DATA / "FSD001_bad.py").read_text(encoding="utf-8"), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "flake8", "--select", "FSD", str(bad)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    want = [f"{bad}:{f.line}:{f.col}: {f.code} {f.message}" for f in check_source(bad.read_text(encoding="utf-8"), str(bad))]
    assert [ln.rsplit(" [", 1)[0] for ln in r.stdout.splitlines()] == want
    # flake8's own noqa applies
    lines = bad.read_text(encoding="utf-8").splitlines()
    bad.write_text("\n".join(ln.replace("# <- FSD001", "# noqa: FSD001") for ln in lines) + "\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "flake8", "--select", "FSD", str(bad)], capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout) == (0, ""), r.stdout + r.stderr


def test_pre_commit_hook_names_the_check_command():
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "fsdp-skill-check" and hook["language"] == "python" and hook["types"] == ["python"]
    exe, *argv = shlex.split(hook["entry"])
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'{exe} = "fsdp_skill.main:main"' in pyproject  # a console script of this package
    args = build_parser().parse_args([*argv, "a.py", "b.py"])  # pre-commit appends the staged files
    assert args.command == "check" and args.paths == ["a.py", "b.py"]


_RANGE = re.compile(r"\bFSD\d{3}-FSD\d{3}\b")


def test_rule_codes_form_the_range_the_doors_give():
    """RULE_RANGE ("FSD001-FSD036", RULES' first and last code) is what the tool description, the hook and README
    say: the codes run without a gap from the first to the last (a retired code would make the range a lie)."""
    first = int(min(RULES)[3:])
    assert sorted(RULES) == [f"FSD{i:03d}" for i in range(first, first + len(RULES))]


def test_check_script_tool_description_gives_the_rule_range():
    from fsdp_skill.core.toolspec import tool_spec

    assert _RANGE.findall(tool_spec("check_script").description) == [RULE_RANGE]


@pytest.mark.parametrize("name", [".pre-commit-hooks.yaml", "README.md"])
def test_rule_ranges_written_in_data_files_match_the_rules(name):
    """The hook's description and README are written by hand: every range of rule codes they give is RULES'."""
    text = (ROOT / name).read_text(encoding="utf-8")
    assert set(_RANGE.findall(text)) <= {RULE_RANGE}, f"{name} gives a rule range other than {RULE_RANGE}"
    if name == ".pre-commit-hooks.yaml":
        (hook,) = yaml.safe_load(text)
        assert f"(rules {RULE_RANGE})" in hook["description"]


# --- check --run: static findings and the run's verdict in one report -------------------------------------
CLEAN_SCRIPT = """\
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    try:
        t = torch.ones(1) * (dist.get_rank() + 1)
        dist.all_reduce(t)
        assert t.item() == sum(range(1, dist.get_world_size() + 1))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def _copy(tmp_path, name: str) -> str:
    p = tmp_path / name
    p.write_text((DATA / name).read_text(encoding="utf-8"), encoding="utf-8")
    return str(p)


def test_check_run_merges_findings_and_verdict_json(tmp_path, fake_verifier, capsys):
    from fsdp_skill.main import main

    path = _copy(tmp_path, "FSD001_bad.py")
    assert main(["check", "--run", "--json", "--world-size", "3", "--timeout", "30", path], verifier=fake_verifier) == 1
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"findings", "verdict"}
    assert [f["code"] for f in out["findings"]] == ["FSD001", "FSD001"]
    v = out["verdict"]
    assert v["status"] == "passed" and v["world_size"] == 3 and v["script"] == path and v["hints"] == []
    assert fake_verifier.runs == [None]  # the script ran once (a script job has no snippet id)


def test_check_run_clean_and_passing_exits_0_failing_run_exits_1(tmp_path, fake_verifier, capsys):
    from fsdp_skill.main import main

    path = tmp_path / "train.py"
    path.write_text(CLEAN_SCRIPT, encoding="utf-8")
    assert main(["check", "--run", str(path)], verifier=fake_verifier) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"PASS  {path}  (") and "gloo x2" in out
    fake_verifier.status[None] = "failed"
    path.write_text(CLEAN_SCRIPT + "\n", encoding="utf-8")  # new code: not the cached verdict
    assert main(["check", "--run", "--json", "--launcher", "torchrun", str(path)], verifier=fake_verifier) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["findings"] == [] and out["verdict"]["status"] == "failed" and out["verdict"]["launcher"] == "torchrun"


def test_check_run_text_lists_findings_then_verdict(tmp_path, fake_verifier, capsys):
    from fsdp_skill.main import main

    path = _copy(tmp_path, "FSD001_bad.py")
    assert main(["check", "--run", path], verifier=fake_verifier) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split(": ", 2)[1].split()[0] for ln in lines[:2]] == ["FSD001", "FSD001"]
    assert lines[2].startswith(f"PASS  {path}")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--run", "a.py", "b.py"], "exactly one PATH.py"),
        (["--run", "-"], "exactly one PATH.py"),
        (["--run", "--world-size", "0", "x.py"], "--world-size must be from 1 to 64"),
        (["--run", "--world-size", "100000", "x.py"], "--world-size must be from 1 to 64"),
        (["--run", "--timeout", "0", "x.py"], "--timeout must be a positive"),
        (["--run", "--timeout", "1e12", "x.py"], "at most 86400"),
        (["--world-size", "2", "x.py"], "--world-size only apply with --run"),
        (["--python", "/usr/bin/python3", "x.py"], "--python only apply with --run"),
        (["x.py", "--", "--steps", "3"], "arguments after '--' only apply with --run"),
    ],
    ids=[
        "two paths",
        "stdin",
        "world size 0",
        "world size 100000",
        "timeout 0",
        "timeout 1e12",
        "no --run",
        "python without --run",
        "script args without --run",
    ],
)
def test_check_run_bad_usage_exits_2(argv, message, fake_verifier, capsys):
    from fsdp_skill.main import main

    assert main(["check", *argv], verifier=fake_verifier) == 2
    assert message in capsys.readouterr().err and fake_verifier.runs == []


def test_check_run_passes_the_scripts_own_arguments(tmp_path, fake_verifier, capsys):
    from fsdp_skill.main import main

    path = tmp_path / "train.py"
    path.write_text(CLEAN_SCRIPT, encoding="utf-8")
    assert main(["check", "--run", str(path), "--", "--steps", "3", "--", "x"], verifier=fake_verifier) == 0
    assert [list(j.args) for j in fake_verifier.jobs] == [["--steps", "3", "--", "x"]]


@pytest.mark.slow
@pytest.mark.torch
def test_check_run_for_real_on_gloo(tmp_path, capsys):
    """The script asserts its own arguments on every rank: ``check --run PATH -- ARGS`` runs it as torchrun would."""
    from fsdp_skill.main import main

    path = tmp_path / "train.py"
    path.write_text(
        "import sys\n"
        + CLEAN_SCRIPT.replace("def main():\n", "def main():\n    assert sys.argv[1:] == ['--steps', '3'], sys.argv\n"),
        encoding="utf-8",
    )
    assert main(["check", "--run", "--json", "--world-size", "2", "--timeout", "60", str(path), "--", "--steps", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["findings"] == [] and out["verdict"]["status"] == "passed", out["verdict"].get("reason")
    assert out["verdict"]["backend"] == "gloo" and out["verdict"]["world_size"] == 2


# --- ask given code: the checks run on it and the sections of the findings come first ------------------
OPTIMIZER_FIRST = """\
Why does my loss never go down? Training runs without errors on 2 GPUs.

```python
import torch
from torch.distributed.fsdp import fully_shard

model = build_model()
optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
for block in model.layers:
    fully_shard(block)
fully_shard(model)
```
"""
QUESTION_SETS = [
    DATA.parent / "questions.jsonl",
    DATA.parent / "blind_questions.jsonl",
    DATA.parent / "public_blind.jsonl",
    DATA.parent / "public_tuning.jsonl",
]


def _questions() -> list[str]:
    return [json.loads(ln)["question"] for p in QUESTION_SETS for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]


def test_ask_with_a_code_block_ranks_the_findings_sections_first():
    from fsdp_skill.core.answer import ask

    a = ask(OPTIMIZER_FIRST, k=3, verify=False, with_api=False)
    assert not a.abstained
    assert a.sections[0].id == "fsdp2/optimizer-after-fully-shard"
    (f,) = a.findings
    assert (f.code, f.line, f.path, f.section) == ("FSD001", 5, "<code block>", "fsdp2/optimizer-after-fully-shard")
    assert len(a.sections) == 3  # the rest are the routed sections


def test_ask_on_a_pasted_script_without_fences():
    from fsdp_skill.core.answer import ask

    script = (DATA / "FSD003_bad.py").read_text(encoding="utf-8")
    a = ask(script, k=2, verify=False, with_api=False)
    assert {f.code for f in a.findings} == {"FSD003"} and a.sections[0].id == a.findings[0].section


@pytest.mark.parametrize(
    "text, blocks",
    [
        ("How do I wrap a model with fully_shard(model)?", 0),
        (
            'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    dist.barrier()\n'
            "RuntimeError: NCCL error",
            0,
        ),
        ("```\nx = 1\n```\nand\n```py\ny = 2\n```", 2),
        ("```bash\ntorchrun --nproc_per_node=2 train.py\n```", 0),
        ("```python\ndef broken(:\n```", 0),  # does not parse: not checked
        ("import torch\nmodel = Net()\nfully_shard(model)\n", 1),
    ],
    ids=["prose", "traceback", "two fences", "shell fence", "broken fence", "bare script"],
)
def test_code_blocks(text, blocks):
    from fsdp_skill.core.code_blocks import code_blocks

    assert len(code_blocks(text)) == blocks


def test_questions_without_code_route_exactly_as_before(monkeypatch):
    """Every question of the routing sets has no code, and routes the same with the checker taken out of ask."""
    from fsdp_skill.core import answer as answer_mod
    from fsdp_skill.core.code_blocks import code_blocks

    questions = _questions()
    assert len(questions) > 150 and not [q for q in questions if code_blocks(q)]
    with_check = [answer_mod.ask(q, k=3, verify=False, with_api=False) for q in questions]
    monkeypatch.setattr(answer_mod, "code_findings", lambda question: [])
    without = [answer_mod.ask(q, k=3, verify=False, with_api=False) for q in questions]
    for q, a, b in zip(questions, with_check, without, strict=True):
        assert a.findings == [] and (a.abstained, [(s.id, s.score) for s in a.sections]) == (
            b.abstained,
            [(s.id, s.score) for s in b.sections],
        ), q


def test_ask_cli_shows_the_findings(capsys):
    from fsdp_skill.main import main

    assert main(["ask", "--no-verify", OPTIMIZER_FIRST]) == 0
    out = capsys.readouterr().out
    assert "mistakes found in your code" in out and "FSD001" in out
    assert main(["ask", "--markdown", "--no-verify", OPTIMIZER_FIRST]) == 0
    assert "**Mistakes found in your code**" in capsys.readouterr().out
    assert main(["ask", "--json", "--no-verify", OPTIMIZER_FIRST]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in data["findings"]] == ["FSD001"]
    assert data["sections"][0]["id"] == "fsdp2/optimizer-after-fully-shard"
