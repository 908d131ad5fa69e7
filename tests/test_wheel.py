"""The built wheel, installed as a user installs it, answers and verifies from outside the checkout.

Both venvs are new and offline (tests/helpers/venvs.py): the wheel is installed with ``--no-deps`` and
its dependencies come from this test venv, all of them or only the light core's.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest
from helpers.venvs import ROOT, build_wheel, core_closure, fresh_venv

from fsdp_skill.core.knowledge.cards import load_knowledge

pytestmark = pytest.mark.slow
QUESTION = "how do I shard a model with fully_shard and mixed precision bf16?"
SNIPPET = "fsdp2/dtensor-to-local"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def run(bin_dir: Path, *args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSDP_SKILL_")}
    env.update(FSDP_SKILL_HOME=str(home), PATH=f"{bin_dir}:{env.get('PATH', '')}")
    return subprocess.run([str(bin_dir / "fsdp-skill"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_wheel_carries_every_card(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    cards = sorted(p.name for p in (ROOT / "knowledge").glob("*.md"))
    assert cards and all(f"fsdp_skill/knowledge/{c}" in names for c in cards), cards
    zh = sorted(p.name for p in (ROOT / "knowledge" / "zh").glob("*.md"))  # the Chinese bodies and glossary
    assert "glossary.md" in zh and all(f"fsdp_skill/knowledge/zh/{c}" in names for c in zh), zh
    records = sorted(p.name for p in (ROOT / "knowledge" / "compat").glob("*.json"))  # the compatibility record
    assert records and all(f"fsdp_skill/knowledge/compat/{r}" in names for r in records), records
    assert "fsdp_skill/runtime/zygote.py" in names and "fsdp_skill/SKILL.md" in names
    assert not any(n.startswith(("skill/", "runtime/", "knowledge/", "tests/")) for n in names)


def test_installed_wheel_answers_shows_and_verifies_outside_the_checkout(wheel, tmp_path):
    bin_dir = fresh_venv(tmp_path / "venv", wheel, deps="all")
    elsewhere, home = tmp_path / "elsewhere", tmp_path / "home"
    elsewhere.mkdir()
    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import fsdp_skill.core.knowledge.cards as k; print(k.default_knowledge_dir())"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(tmp_path / "venv")) and where.endswith("site-packages/fsdp_skill/knowledge"), where

    ask = run(bin_dir, "ask", "--json", "--no-verify", QUESTION, cwd=elsewhere, home=home)
    assert ask.returncode == 0, ask.stderr
    answer = json.loads(ask.stdout)
    assert answer["sections"] and not answer["abstained"]
    assert all(s["text_zh"] for s in answer["sections"])  # the installed wheel has the Chinese bodies too

    kb = load_knowledge()
    listing = run(bin_dir, "show", "--list", cwd=elsewhere, home=home)
    assert listing.returncode == 0, listing.stderr
    assert len(listing.stdout.strip().splitlines()) == len(kb.sections)

    verify = run(bin_dir, "verify", "--json", SNIPPET, cwd=elsewhere, home=home)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    (verdict,) = json.loads(verify.stdout)
    assert verdict["status"] == "passed" and verdict["world_size"] == 2, verdict


def test_light_core_answers_without_torch_and_says_how_to_enable_the_rest(wheel, tmp_path):
    names = {d.metadata["Name"].lower() for d in core_closure()}
    assert not names & {"torch", "fastapi", "uvicorn", "mcp"}, names
    bin_dir = fresh_venv(tmp_path / "venv", wheel, deps="core")
    elsewhere, home = tmp_path / "elsewhere", tmp_path / "home"
    elsewhere.mkdir()
    probe = subprocess.run(
        [
            str(bin_dir / "python"),
            "-c",
            "import importlib.util as u; print([m for m in ('torch', 'fastapi', 'mcp') if u.find_spec(m)])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "[]"  # really a light environment

    ask = run(bin_dir, "ask", "--json", QUESTION, cwd=elsewhere, home=home)
    assert ask.returncode == 0, ask.stderr
    assert json.loads(ask.stdout)["sections"]

    for argv, extra in ((["verify", SNIPPET], "torch"), (["serve"], "serve"), (["mcp"], "mcp")):
        out = run(bin_dir, *argv, cwd=elsewhere, home=home)
        assert out.returncode == 2, (argv, out.stdout, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and f"fsdp-skill[{extra}]" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
