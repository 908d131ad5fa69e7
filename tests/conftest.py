"""Shared fixtures.

State: ``$FSDP_SKILL_HOME`` points at a temporary directory for the whole session from the moment this
file is imported (so module-level ``load_knowledge()`` during collection never writes a user's cache), and
at a fresh directory of its own for each test (autouse).

Verification: :class:`FakeVerifier` (fixture ``fake_verifier``) is the one stand-in for the runtime; tests
pass it to the code under test (``ask(verifier=...)``, ``main(argv, verifier=...)``, ``create_app(verifier)``,
``build_server(verifier)``) instead of patching modules.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading

import pytest

from fsdp_skill.runtime.models import Verdict

_SESSION_HOME = tempfile.mkdtemp(prefix="fsdp-skill-test-home-")
os.environ["FSDP_SKILL_HOME"] = _SESSION_HOME


def pytest_unconfigure(config):
    shutil.rmtree(_SESSION_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def fsdp_skill_home(tmp_path, monkeypatch):
    """Point ``$FSDP_SKILL_HOME`` (cache, verdicts) at a fresh temp dir for each test, and start it with the
    tool's own interpreter as the target (``--python`` sets ``$FSDP_SKILL_PYTHON``; it is removed afterwards)."""
    home = tmp_path / "fsdp-skill-home"
    monkeypatch.setenv("FSDP_SKILL_HOME", str(home))
    os.environ.pop("FSDP_SKILL_PYTHON", None)
    yield home
    os.environ.pop("FSDP_SKILL_PYTHON", None)


class FakeVerifier:
    """A :class:`fsdp_skill.core.verify.snippets.Verifier` that runs nothing.

    ``status`` maps snippet ids to the verdict status a run gives (default 'passed'); ``gate(jobs)`` is
    called before each batch (to hold runs in flight); ``runs`` records the snippet ids run, in order (``jobs``
    the jobs);
    verdicts are cached in memory by code hash, like the real cache.
    """

    def __init__(self, status: dict[str, str] | None = None, gate=None):
        self.status = dict(status or {})
        self.gate = gate
        self.runs: list[str | None] = []
        self.jobs: list = []  # the jobs run (not those answered from the cache), in order
        self.cache: dict[str, Verdict] = {}
        self.lock = threading.Lock()

    @staticmethod
    def sha(code: str) -> str:
        return hashlib.sha256(code.encode()).hexdigest()

    def cached(self, job) -> Verdict | None:
        v = self.cache.get(self.sha(job.code))
        return v.model_copy(update={"cached": True}) if v else None

    def run(self, jobs, *, launcher="warm", use_cache=True, progress=None) -> list[Verdict]:
        if self.gate:
            self.gate(jobs)
        out = []
        for i, job in enumerate(jobs, 1):
            hit = self.cached(job) if use_cache and not job.debug else None
            if hit is None:
                with self.lock:
                    self.runs.append(job.snippet_id)
                    self.jobs.append(job)
                status = self.status.get(job.snippet_id, "passed")
                hit = Verdict(
                    status=status,
                    reason=None if status == "passed" else f"fake {status}",
                    snippet_id=job.snippet_id,
                    code_sha256=self.sha(job.code),
                    backend="gloo",
                    world_size=job.world_size,
                    device="cpu",
                    torch_version="2.13.0+cpu",
                    seconds=0.01,
                    launcher=launcher,
                    checked_at="2026-01-01T00:00:00+00:00",
                )
                self.cache[self.sha(job.code)] = hit
            out.append(hit)
            if progress is not None:
                progress(i, len(jobs), hit)
        return out


@pytest.fixture
def fake_verifier() -> FakeVerifier:
    """A fresh :class:`FakeVerifier` (every run passes unless ``fake_verifier.status[id]`` says otherwise)."""
    return FakeVerifier()
