"""The compatibility record (knowledge/compat/, written by ``scripts/dev matrix``) agrees with the knowledge.

* every record file has the format, names only snippets that exist, and holds one environment;
* a snippet that failed on a torch inside its section's declared ``torch:`` range is declared by a version note of
  its section or card (``versions:`` with a range holding that torch and ``fails`` in the failure reason);
* every snippet's current code has a result in the record of the torch that development and CI pin
  (constraints.txt), so an edited snippet is run by the matrix before it lands;
* answers carry the record per snippet and say what it holds for the torch in use.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fsdp_skill.core.knowledge import compat
from fsdp_skill.core.knowledge.applicability import applies
from fsdp_skill.core.knowledge.cards import load_knowledge, parse_card
from fsdp_skill.core.models import RecordedRun, VersionNote
from fsdp_skill.errors import KnowledgeError
from fsdp_skill.runtime.cache import code_sha256

ROOT = Path(__file__).resolve().parent.parent
KB = load_knowledge(ROOT / "knowledge")
RECORD_FILES = sorted(compat.record_dir(KB.directory).glob("*.json"))
PIN = re.search(r"^torch==(\S+)", (ROOT / "constraints.txt").read_text(), re.M)


def test_the_record_exists_for_several_versions_and_builds():
    data = [json.loads(p.read_text()) for p in RECORD_FILES]
    assert len(data) >= 4, [p.name for p in RECORD_FILES]
    assert {d["build"] for d in data} >= {"cpu", "cuda"}


@pytest.mark.parametrize("path", RECORD_FILES, ids=lambda p: p.name)
def test_a_record_file_has_the_format_and_names_known_snippets(path):
    data = compat._read(path)
    assert data is not None, f"{path.name} is not a record of format {compat.FORMAT}"
    assert path.name == f"torch-{data['torch_version']}.json"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["date"]) and re.fullmatch(r"3\.\d+\.\d+", data["python"])
    unknown = sorted(set(data["snippets"]) - set(KB.snippets))
    assert not unknown, f"{path.name} records snippets that no longer exist (run scripts/dev matrix): {unknown}"
    for sid, row in data["snippets"].items():
        assert re.fullmatch(r"[0-9a-f]{64}", row["code_sha256"]), sid
        assert (row["reason"] is None) == (row["status"] == "passed"), sid


def _undeclared() -> list[str]:
    out = []
    for sid, runs in compat.load_record(KB.directory).items():
        spec = KB.snippets.get(sid)
        if spec is None:
            continue
        section = KB.sections[spec.section_id]
        notes = KB.version_notes(section)
        for sha, run in runs:
            if sha != code_sha256(spec.code) or run.status not in ("failed", "timeout"):
                continue
            if section.torch and applies(section.torch, run.torch_version)[0] is False:
                continue  # outside the declared range: the range says it
            if compat.declared_by(notes, run.torch_version, run.reason) is None:
                out.append(f"{sid} {run.status} on torch {run.torch_version}: {run.reason}")
    return out


def test_every_recorded_failure_inside_a_sections_range_is_declared_by_it():
    undeclared = _undeclared()
    assert not undeclared, (
        "failed inside the declared torch range with no version note (versions: torch/fails/note):\n" + "\n".join(undeclared)
    )


def test_every_snippet_ran_on_the_pinned_torch_in_its_current_form():
    assert PIN, "constraints.txt pins no torch"
    record = compat.load_record(KB.directory)
    missing = [
        sid
        for sid, spec in KB.snippets.items()
        if not any(
            sha == code_sha256(spec.code) and run.torch_version.split("+")[0] == PIN.group(1) for sha, run in record.get(sid, [])
        )
    ]
    assert not missing, f"not run on torch {PIN.group(1)} as they are now (run scripts/dev matrix {PIN.group(1)}): {missing}"


def test_a_version_note_that_declares_nothing_is_not_counted():
    notes = [
        VersionNote(torch="==2.6.*", note="about behaviour"),
        VersionNote(torch="==2.6.*", note="x", fails="has no attribute 'record_event'"),
    ]
    assert compat.declared_by(notes, "2.6.0+cu124", "AttributeError: 'Stream' object has no attribute 'record_event'") is notes[1]
    assert compat.declared_by(notes, "2.9.1", "AttributeError: 'Stream' object has no attribute 'record_event'") is None
    assert compat.declared_by(notes, "2.6.0", "TypeError: unexpected keyword") is None
    assert compat.declared_by(notes[:1], "2.6.0", "anything") is None


def _verdict(sid: str, status: str, version: str = "2.9.1+cu128", reason: str | None = "rank 0 raised X") -> dict:
    return {
        "snippet_id": sid,
        "code_sha256": "a" * 64,
        "status": status,
        "torch_version": version,
        "reason": reason,
        "seconds": 1.234,
    }


def test_record_file_refuses_a_mixed_or_unrun_environment():
    with pytest.raises(ValueError, match="not 2.9.1"):
        compat.record_file(
            [_verdict("a/b", "failed", "2.6.0")], torch_version="2.9.1", build="cuda", python="3.11.7", date="d", host="h"
        )
    with pytest.raises(ValueError, match="not recorded"):
        compat.record_file(
            [_verdict("a/b", "unverified")], torch_version="2.9.1+cu128", build="cuda", python="3", date="d", host="h"
        )
    with pytest.raises(ValueError, match="build"):
        compat.record_file([_verdict("a/b", "passed")], torch_version="2.9.1+cu128", build="gpu", python="3", date="d", host="h")
    data = compat.record_file(
        [_verdict("a/b", "passed", reason=None), _verdict("a/c", "failed", reason="line one\nline two")],
        torch_version="2.9.1+cu128",
        build="cuda",
        python="3.11.7",
        date="2026-12-02",
        host="h",
    )
    assert data["snippets"]["a/c"]["reason"] == "line one" and data["snippets"]["a/b"]["seconds"] == 1.23


def test_load_record_skips_a_malformed_file_and_orders_by_release(tmp_path):
    folder = compat.record_dir(tmp_path)
    folder.mkdir()
    for version, status in (("2.13.0+cpu", "passed"), ("2.6.0+cu124", "failed"), ("2.10.0", "passed")):
        build = compat.build_of(version)
        data = compat.record_file(
            [_verdict("t/s", status, version)], torch_version=version, build=build, python="3.11.7", date="2026-12-02", host="h"
        )
        (folder / f"torch-{version}.json").write_text(json.dumps(data))
    (folder / "torch-broken.json").write_text("{not json")
    (folder / "torch-other.json").write_text(json.dumps({"format": 99, "snippets": {}}))
    runs = compat.recorded_runs(tmp_path, "t/s", "a" * 64)
    assert [r.torch_version for r in runs] == ["2.6.0+cu124", "2.10.0", "2.13.0+cpu"]
    assert compat.recorded_runs(tmp_path, "t/s", "b" * 64) == []  # another code: nothing recorded for it
    assert compat.summary(runs) == "recorded: failed on 2.6.0+cu124; passed on 2.10.0, 2.13.0+cpu"


def test_what_the_record_says_for_the_torch_in_use():
    runs = [
        RecordedRun(
            torch_version="2.6.0+cu124",
            build="cuda",
            status="failed",
            reason="rank 0 raised E",
            date="2026-12-02",
            python="3.11.7",
        ),
        RecordedRun(torch_version="2.13.0+cpu", build="cpu", status="passed", date="2026-12-02", python="3.11.7"),
    ]
    assert compat.for_torch(runs, "2.13.0+cpu") == "your torch 2.13.0+cpu: recorded passed on 2.13.0+cpu (CPU build), 2026-12-02"
    assert compat.for_torch(runs, "2.6.0").startswith(
        "your torch 2.6.0: recorded failed on the same release, 2.6.0+cu124 (CUDA build)"
    )
    assert compat.for_torch(runs, "2.6.0").endswith("— rank 0 raised E")
    outside = compat.for_torch(runs, "2.11.0")
    assert outside is not None and "outside the compatibility record" in outside and "2.6.0+cu124, 2.13.0+cpu" in outside
    assert compat.for_torch(runs, None) is None
    assert "not in the compatibility record" in (compat.for_torch([], "2.13.0") or "")


def test_build_of_reads_the_version_label_and_torch_version():
    assert compat.build_of("2.14.1") == "cpu"
    assert compat.build_of("2.14.1", cuda="13.0") == "cuda"
    assert compat.build_of("2.6.0+cu124") == "cuda"
    assert compat.build_of("2.5.1+rocm6.2") == "rocm"
    assert compat.build_of("2.13.0+cpu") == "cpu"


CARD = """---
id: t
title: T
topic: t
aliases: [a]
sources: [https://docs.pytorch.org/docs/stable/fsdp.html]
versions:
  - torch: "==2.6.*"
    fails: "record_event"
    note: "card-wide note"
---

## S
<!--
slug: s
torch: ">=2.6"
sources: [https://docs.pytorch.org/docs/stable/fsdp.html]
versions:
  - torch: "<2.13"
    note: "section   note"
-->
Body.
"""


def test_version_notes_parse_on_cards_and_sections():
    card = parse_card(CARD, "t.md")
    assert card.versions == [VersionNote(torch="==2.6.*", note="card-wide note", fails="record_event")]
    assert card.sections[0].versions == [VersionNote(torch="<2.13", note="section note")]


@pytest.mark.parametrize(
    "bad",
    [
        '  - torch: "later"\n    note: "n"',
        '  - note: "n"',
        '  - torch: "<2.7"\n    note: "n"\n    when: "x"',
        '  - torch: "<2.7"\n    note: "n"\n    fails: ""',
    ],
)
def test_a_malformed_version_note_names_its_card_and_line(bad):
    text = CARD.replace('  - torch: "<2.13"\n    note: "section   note"', bad)
    with pytest.raises(KnowledgeError, match=r"t\.md:\d+: .*versions"):
        parse_card(text, "t.md")


def test_an_answer_says_where_each_snippet_ran(tmp_path):
    from fsdp_skill.core.answer import ask

    ans = ask("How do I shard a model with fully_shard?", k=3, verify=False)
    shown = [sn for s in ans.sections for sn in s.snippets]
    assert shown
    for sn in shown:
        runs = compat.recorded_runs(KB.directory, sn.id, code_sha256(sn.code))
        assert sn.recorded == runs
        if ans.torch_version is None:  # the torch-free leg: no torch to say anything about
            assert sn.recorded_here is None
        else:
            assert sn.recorded_here and sn.recorded_here.startswith(f"your torch {ans.torch_version}")
