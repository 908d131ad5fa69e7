"""Pasted messages: the atlas locates them, the sections that declare them come first, and every message a
section declares exists in the installed torch (a torch upgrade that rewords one fails here)."""

from __future__ import annotations

import subprocess

import pytest

from fsdp_skill.core.answer import ask
from fsdp_skill.core.atlas.lookup import load_atlas, torch_dir
from fsdp_skill.core.atlas.messages import explain_messages, looks_pasted, same_message, template_matches
from fsdp_skill.core.knowledge.cards import load_knowledge

KB = load_knowledge()
DECLARED = sorted({(s.id, t) for s in KB.sections.values() for t in s.errors})


def _in_torch_files(template: str) -> bool:
    """The longest literal piece of ``template`` occurs in a .py file or a shared library of torch."""
    piece = max((p.strip() for p in template.split("*")), key=len)
    proc = subprocess.run(
        ["grep", "-rlF", "--include=*.py", "--include=*.so*", "-m1", "-e", piece, str(torch_dir())],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return bool(proc.stdout.strip())


def test_sections_declare_messages():
    assert len(DECLARED) >= 20


@pytest.mark.parametrize("section_id, template", DECLARED, ids=[f"{s}:{t[:40]}" for s, t in DECLARED])
@pytest.mark.torch
def test_declared_message_exists_in_installed_torch(section_id, template):
    atlas = load_atlas()
    if any(same_message(template, e.message) for e in atlas.entries):
        return
    assert _in_torch_files(template), f"{section_id} declares a message not found in torch: {template!r}"


def test_template_matching():
    t = "Parameter '*' is shared with a parameter already managed by another FSDP group"
    assert template_matches(
        t, "RuntimeError: Parameter 'lm_head.weight' is shared with a parameter\n already managed by another FSDP group"
    )
    assert not template_matches(t, "Parameter 'x' is managed by another FSDP group")
    assert same_message(
        "Default process group has not been initialized, please make sure to call *.",
        "Default process group has not been initialized, please make sure to call init_process_group.",
    )
    assert not same_message("Default process group has not been initialized", "use_libuv was requested")


@pytest.mark.parametrize(
    "question",
    [
        "How do I use fully_shard with bf16?",
        "两台机器每台 8 张卡，应该用 FULL_SHARD 还是 HYBRID_SHARD？",
        "What is the communication cost of FULL_SHARD compared to SHARD_GRAD_OP?",
    ],
)
def test_ordinary_questions_find_no_message(question):
    assert explain_messages(question, KB) == []


@pytest.mark.torch
def test_pasted_message_is_located_with_source_and_condition():
    q = "ValueError: Default process group has not been initialized, please make sure to call init_process_group."
    assert looks_pasted(q)
    answer = ask(q, k=3, verify=False)
    assert not answer.abstained
    (err,) = [e for e in answer.errors if e.kind == "python"][:1]
    assert err.exception == "ValueError" and err.raised_at.path == "torch/distributed/distributed_c10d.py"
    assert err.raised_at.function == "_get_default_group" and "is_initialized" in (err.condition or "")
    assert err.torch_version and "raised at torch/distributed/distributed_c10d.py:" in err.explanation


@pytest.mark.torch
def test_located_message_without_section_is_said_plainly_and_not_abstained():
    """A message of torch that no section declares is still located, and the answer does not abstain."""
    from fsdp_skill.adapters.cli.render import answer_markdown

    declared = [t for _, t in DECLARED]
    entry = next(
        e
        for e in load_atlas().entries
        if e.kind == "python"
        and e.exception == "ValueError"
        and len(e.message) > 60
        and "*" not in e.message
        and not any(same_message(t, e.message) for t in declared)
    )
    answer = ask(f"ValueError: {entry.message}", k=3, verify=False)
    assert not answer.abstained
    err = answer.errors[0]
    assert err.sections == [] and err.raised_at is not None
    assert (err.raised_at.path, err.raised_at.line) in {
        (e.path, e.line) for e in load_atlas().entries if e.message == entry.message
    }
    assert "no knowledge section explains this message yet" in answer_markdown(answer)


def test_explaining_sections_rank_first():
    for sid, template in DECLARED:
        filled = template.replace("*", "7")
        answer = ask(f"RuntimeError: {filled}", k=3, verify=False)
        assert not answer.abstained, (sid, template)
        explaining = {s for e in answer.errors for s in e.sections}
        assert sid in explaining, (sid, template, answer.errors)
        assert answer.sections[0].id in explaining, (sid, template, [s.id for s in answer.sections])
