"""What each knowledge snippet proves: declared on its fence, strong enough for what the code does, and
able to fail (every reference check has mutations, kept as data in knowledge/mutations/, that must fail)."""

from __future__ import annotations

import re

import pytest
import yaml

import fsdp_skill.runtime as runtime
from fsdp_skill.core.knowledge.cards import default_knowledge_dir, load_knowledge
from fsdp_skill.core.verify.snippets import job_for
from fsdp_skill.runtime.host import cuda_device_count

KB = load_knowledge()
SNIPPETS = list(KB.snippets.values())
MUTATIONS_DIR = default_knowledge_dir() / "mutations"
# Code that trains, steps an optimizer, casts precision, offloads, saves/loads or reshards: such a snippet
# must compare its numbers with a reference (or demonstrate a documented error).
NEEDS_REFERENCE = re.compile(
    r"\.backward\(|\.step\(|dcp\.(?:async_)?save|dcp\.load|\bsave_state_dict\(|\bload_state_dict\(|"
    r"set_model_state_dict|set_optimizer_state_dict|set_state_dict|MixedPrecisionPolicy\(|MixedPrecision\(|"
    r"CPUOffloadPolicy\(|CPUOffload\(|\.redistribute\(|distribute_tensor\(|torch\.save\(|torch\.load\("
)


def _mutations() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for path in sorted(MUTATIONS_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for sid, items in data.items():
            out.setdefault(sid, []).extend(items)
    return out


MUTATIONS = _mutations()
REFERENCE = [s for s in SNIPPETS if s.checks == "reference"]


@pytest.mark.parametrize("snippet_id", [s.id for s in SNIPPETS])
def test_snippet_declares_what_it_checks(snippet_id):
    spec = KB.snippets[snippet_id]
    assert spec.checks, f"{spec.id} ({KB.sections[spec.section_id].card}:{spec.line}) declares no checks="
    if NEEDS_REFERENCE.search(spec.code):
        assert spec.checks in ("reference", "raises"), (
            f"{spec.id} trains, casts, offloads, saves/loads or reshards but only checks={spec.checks}"
        )


def test_mutations_name_reference_snippets_and_apply():
    for sid, items in MUTATIONS.items():
        assert sid in KB.snippets and KB.snippets[sid].checks == "reference", sid
        for m in items:
            assert set(m) == {"replace", "with", "why"}, (sid, m)
            assert KB.snippets[sid].code.count(m["replace"]) == 1, (sid, m["replace"])


def test_every_reference_snippet_has_a_mutation():
    missing = [s.id for s in REFERENCE if s.id not in MUTATIONS]
    assert missing == []


def _mutated_jobs():
    jobs = []
    for spec in REFERENCE:
        if "cuda" in spec.requires and cuda_device_count() < spec.world_size:
            continue  # cannot run here: its mutations are checked where it can
        for m in MUTATIONS.get(spec.id, []):
            mutated = spec.model_copy(update={"code": spec.code.replace(m["replace"], m["with"])})
            jobs.append((spec.id, m["why"], job_for(mutated)))
    return jobs


@pytest.mark.slow
def test_every_mutation_fails(tmp_path_factory):
    """Each mutated reference snippet (a rank's gradient scaled, a step skipped, other data, ...) must fail."""
    jobs = _mutated_jobs()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FSDP_SKILL_HOME", str(tmp_path_factory.mktemp("mutation-home")))
        verdicts = runtime.verify_many([j for _, _, j in jobs], use_cache=False)
    table = [(sid, why, v.status) for (sid, why, _), v in zip(jobs, verdicts, strict=True)]
    survivors = [row for row in table if row[2] != "failed"]
    assert survivors == [], survivors
