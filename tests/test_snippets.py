"""Every knowledge snippet runs on a real process group through the harness (ids = snippet ids).

One warm batch (``fsdp_skill.runtime.verify_many``) runs them all; each test then checks its own verdict: passed
on this host, or skipped because it needs CUDA and this host lacks the GPUs (never 'passed' then).
"""

import pytest

import fsdp_skill.runtime as runtime
from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.core.verify.snippets import job_for
from fsdp_skill.runtime.host import cuda_device_count

pytestmark = pytest.mark.slow

KB = load_knowledge()
SNIPPETS = list(KB.snippets.values())


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FSDP_SKILL_HOME", str(tmp_path_factory.mktemp("snippet-home")))
        return _run_all()


def _run_all():
    results = runtime.verify_many([job_for(s) for s in SNIPPETS], use_cache=False)
    return {s.id: v for s, v in zip(SNIPPETS, results, strict=True)}


@pytest.mark.parametrize("snippet_id", [s.id for s in SNIPPETS])
def test_snippet_passes_or_is_skipped_for_cuda(verdicts, snippet_id):
    spec = KB.snippets[snippet_id]
    v = verdicts[snippet_id]
    if "cuda" in spec.requires and cuda_device_count() < spec.world_size:
        assert v.status == "skipped" and "CUDA" in (v.reason or "").upper(), v
        return
    detail = "\n".join(f"rank {r.rank}: exit={r.exit_code} signal={r.signal}\n{r.traceback or r.output_tail}" for r in v.ranks)
    assert v.status == "passed", (
        f"{snippet_id} ({spec.section_id}, {KB.sections[spec.section_id].card}:{spec.line}): {v.reason}\n{detail}"
    )
    assert v.world_size == spec.world_size and v.backend in ("gloo", "nccl") and v.torch_version
    assert v.seconds is not None and v.checked_at and v.launcher == "warm"


def test_knowledge_has_enough_verified_patterns():
    assert len(KB.sections) >= 80
    assert sum(1 for s in SNIPPETS if "cuda" not in s.requires) >= 30
