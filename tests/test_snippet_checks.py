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


def _mutation_id(snippet_id: str, mutation: dict) -> str:
    """``snippet-id::what-the-mutation-does`` (its ``why``, as a slug): the test id that names a mutation."""
    return f"{snippet_id}::{re.sub(r'[^a-z0-9]+', '-', mutation['why'].lower()).strip('-')}"


# (snippet id, index of the mutation in its list), one test id each
MUTATION_CASES = [
    pytest.param(spec.id, i, id=_mutation_id(spec.id, m)) for spec in REFERENCE for i, m in enumerate(MUTATIONS.get(spec.id, []))
]


def test_mutation_ids_are_unique():
    """Two mutations of one snippet with the same ``why`` would share a test id (pytest would number them)."""
    ids = [p.id for p in MUTATION_CASES]
    assert sorted({i for i in ids if ids.count(i) > 1}) == []


def _runs_here(spec) -> bool:
    return not ("cuda" in spec.requires and cuda_device_count() < spec.world_size)


@pytest.fixture(scope="module")
def mutation_verdicts(request, tmp_path_factory):
    """(snippet id, mutation index) -> Verdict, for every mutation selected in this session that can run here,
    verified in one batch on one warm launcher (as one test did before each mutation had its own id)."""
    selected = [
        (item.callspec.params["snippet_id"], item.callspec.params["index"])
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_every_mutation_fails"
    ]
    cases = [(sid, i) for sid, i in selected if _runs_here(KB.snippets[sid])]
    jobs = []
    for sid, i in cases:
        spec, m = KB.snippets[sid], MUTATIONS[sid][i]
        jobs.append(job_for(spec.model_copy(update={"code": spec.code.replace(m["replace"], m["with"])})))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FSDP_SKILL_HOME", str(tmp_path_factory.mktemp("mutation-home")))
        verdicts = runtime.verify_many(jobs, use_cache=False) if jobs else []
    return dict(zip(cases, verdicts, strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("snippet_id, index", MUTATION_CASES)
def test_every_mutation_fails(snippet_id, index, mutation_verdicts):
    """Each mutated reference snippet (a rank's gradient scaled, a step skipped, other data, ...) must fail."""
    spec, why = KB.snippets[snippet_id], MUTATIONS[snippet_id][index]["why"]
    if not _runs_here(spec):
        pytest.skip(f"needs {spec.world_size} CUDA devices: its mutations are checked where it can run")
    verdict = mutation_verdicts[(snippet_id, index)]
    assert verdict.status == "failed", (snippet_id, why, verdict.status, verdict.reason)
