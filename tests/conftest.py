"""Shared fixtures: every test gets its own state directory, so no test reads or writes a user's cache."""
import pytest


@pytest.fixture(autouse=True)
def fsdp_skill_home(tmp_path, monkeypatch):
    """Point ``$FSDP_SKILL_HOME`` (cache, verdicts) at a fresh temp dir for each test."""
    home = tmp_path / "fsdp-skill-home"
    monkeypatch.setenv("FSDP_SKILL_HOME", str(home))
    return home
