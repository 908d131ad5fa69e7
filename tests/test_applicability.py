"""Sections declare the torch range they need, and answers mark them on a torch outside it.

The rule that decides a section's minimum comes from its code and API list, not from a list of ids:
FSDP2's public names under ``torch.distributed.fsdp`` need torch 2.6 (2.4/2.5 had them only under
``torch.distributed._composable.fsdp``); the public ``torch.distributed.tensor`` (DTensor) needs 2.5.
"""

from __future__ import annotations

import re

import pytest
from packaging.specifiers import SpecifierSet

from fsdp_skill.core import interpreter
from fsdp_skill.core.knowledge.applicability import applies, parse_spec
from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.core.verify.snippets import section_out
from fsdp_skill.errors import KnowledgeError

KB = load_knowledge()
FSDP2_NAMES = (
    r"(?:fully_shard|FSDPModule|MixedPrecisionPolicy|CPUOffloadPolicy|OffloadPolicy|register_fsdp_forward_method|UnshardHandle)"
)
NEEDS = [
    (
        "2.6",
        re.compile(rf"from torch\.distributed\.fsdp import[^\n]*\b{FSDP2_NAMES}\b|torch\.distributed\.fsdp\.{FSDP2_NAMES}\b"),
    ),
    (
        "2.5",
        re.compile(
            r"from torch\.distributed\.tensor(?:\.[a-z_]+)* import|torch\.distributed\.tensor\.(?:DTensor|distribute_tensor)"
        ),
    ),
]


def minimum(section) -> str | None:
    material = "\n".join([*section.apis, *(s.code for s in section.snippets)])
    return next((v for v, pattern in NEEDS if pattern.search(material)), None)


@pytest.mark.parametrize("section_id", list(KB.sections))
def test_section_declares_the_torch_it_needs(section_id):
    section = KB.sections[section_id]
    need = minimum(section)
    if need is None:
        return
    assert section.torch, f"{section_id} ({section.card}:{section.line}) uses APIs of torch >= {need} but declares no 'torch:'"
    spec = SpecifierSet(section.torch)
    below = f"{need.split('.')[0]}.{int(need.split('.')[1]) - 1}"
    assert not spec.contains(below) and spec.contains("2.13.0"), (section_id, section.torch, need)


def test_every_declared_range_admits_the_tested_torch():
    for section in KB.sections.values():
        if section.torch:
            assert SpecifierSet(section.torch).contains("2.13.0"), (section.id, section.torch)


@pytest.mark.parametrize(
    ("spec", "version", "expected"),
    [
        (">=2.6", "2.13.0+cpu", (True, None)),
        (">=2.6", "2.6.0a0+git123", (True, None)),
        (">=2.6", "2.4.1+cu121", (False, "needs torch >=2.6; yours is 2.4.1+cu121")),
        ("<2.9", "2.13.0", (False, "needs torch <2.9; yours is 2.13.0")),
        (None, "2.4.1", (None, None)),
        (">=2.6", None, (None, None)),
        (">=2.6", "not-a-version", (None, None)),
    ],
)
def test_applies(spec, version, expected):
    assert applies(spec, version) == expected


@pytest.mark.parametrize("text", ["2.6", "newer", ""])
def test_malformed_range_is_refused(text):
    with pytest.raises(ValueError, match="version specifier"):
        parse_spec(text)


def test_malformed_range_in_a_card_names_file_and_line(tmp_path):
    (tmp_path / "t.md").write_text(
        "---\nid: t\ntitle: T\ntopic: t\naliases: [t]\nsources: [https://docs.pytorch.org/docs/stable/distributed.html]\n---\n\n"
        "## A section\n<!--\nslug: a\ntorch: newer\nsources: [https://docs.pytorch.org/docs/stable/distributed.html]\n-->\n\nText.\n",
        encoding="utf-8",
    )
    with pytest.raises(KnowledgeError, match=r"t\.md:\d+: .*version specifier"):
        load_knowledge(tmp_path)


def test_answer_marks_a_section_on_an_older_torch(monkeypatch):
    section = next(s for s in KB.sections.values() if s.torch == ">=2.6")
    monkeypatch.setattr(interpreter, "torch_version", lambda: "2.4.1+cu121")
    out = section_out(section, 1.0, {}, KB)
    assert (out.torch_requires, out.applies) == (">=2.6", False)
    assert out.applicability == "needs torch >=2.6; yours is 2.4.1+cu121"
    monkeypatch.setattr(interpreter, "torch_version", lambda: "2.13.0+cpu")
    assert section_out(section, 1.0, {}, KB).applies is True


SPECS = [
    ">=2.6",
    "==2.6.*",
    "!=2.6.*",
    "==2.*",
    ">=2.6,!=2.9.*",
    "<2.8",
    ">=2.4,<2.8",
    " >= 2.6 , != 2.7.1 ",
    "==2.6",
    "==2.6.0",
    "!=2.13",
    ">2.6",
    "<=2.6.0",
    ">2.6.0",
    ">=2",
    "<3",
    "~=2.6",
    "==2.6.*",
    ">=2.6,",
    ">=2.6rc1",
    "===2.6.0",
    ">=v2.6",
]
VERSIONS = [
    "2.6",
    "2.6.0",
    "2.6.0+cpu",
    "2.6.0a0+git1234",
    "2.6.0rc1",
    "2.6.0.dev20240101",
    "2.6.0.post1",
    "2.7.1",
    "2.7.1+cu121",
    "2.8.0",
    "2.13.0+cpu",
    "2.5.1",
    "3.0.0",
    "2",
    "2.6.0-rc1",
    "2.6.0RC1",
    "2.x",
    "",
    "nightly",
    "2.6.0+cpu.cxx11.abi",
    "v2.6.0",
]


@pytest.mark.parametrize("spec", SPECS)
def test_the_plain_comparison_gives_what_packaging_gives(spec):
    """applies() compares plain specifiers without packaging; for every spec and version it answers as packaging's
    SpecifierSet.contains of the version's release (pre-releases allowed), and an unparsable version gives None."""
    from packaging.version import InvalidVersion, Version

    from fsdp_skill.core.knowledge import applicability

    for version in VERSIONS:
        try:
            want = SpecifierSet(spec).contains(Version(Version(version).base_version), prereleases=True)
        except InvalidVersion:
            want = None
        got, note = applicability.applies.__wrapped__(spec, version)
        assert got == (want if version else None), (spec, version)
        assert (note is not None) == (got is False)


def test_the_common_case_needs_no_packaging():
    from fsdp_skill.core.knowledge import applicability

    assert applicability._plain_contains(">=2.6", "2.13.0+cpu") is True
    assert applicability._plain_contains(">=2.6", "2.5.1") is False
    assert applicability._plain_contains("~=2.6", "2.13.0") is None  # packaging decides
    assert applicability._plain_contains("==2.6.*", "2.6.0+cu124") is True  # the version notes' prefix form
    assert applicability._plain_contains("==2.6.*", "2.9.1") is False
    assert applicability._plain_contains(">=2.6", "2.6.0-rc1") is None


@pytest.mark.parametrize(
    "version",
    ["2.14.1+cu130", "2.14.1", "2.6", "2.6.0", "2.10.0a0+git1234", "2.13.0+cpu", "2.9.1.post2", "2.11.0.dev20260101", "3"],
)
def test_release_equals_packaging_without_trailing_zeros(version):
    """``release`` (used to order the compatibility record and match "the same release") is packaging's release
    tuple with trailing zeros dropped, for every shape of version torch prints; a non-version is ()."""
    from packaging.version import Version

    from fsdp_skill.core.knowledge.applicability import release

    want = list(Version(version).release)
    while want and want[-1] == 0:
        want.pop()
    assert release(version) == tuple(want)
    assert release("not a version") == () and release("") == ()
