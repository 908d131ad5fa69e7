"""Verified snippet export: selection, refusal of anything that did not pass, byte-identical code under the
header, manifest, the generated pytest runner, and a real export launched with torchrun (gloo, world_size 2)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.core.verify.export import HEADER_END, export_snippets, split_script
from fsdp_skill.core.verify.snippets import select_snippets
from fsdp_skill.errors import ExportRefused, NotFoundError
from fsdp_skill.main import main

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def kb():
    return load_knowledge()


def cpu_snippets(kb):
    return [s for s in kb.snippets.values() if not s.requires]


# --------------------------------------------------------------------------- selection
def test_select_by_id_topic_all(kb):
    first = next(iter(kb.snippets.values()))
    assert [s.id for s in select_snippets([first.id], kb=kb)] == [first.id]
    topic = kb.section(first.section_id).topic
    by_topic = select_snippets(topics=[topic], kb=kb)
    assert first in by_topic and all(kb.section(s.section_id).topic == topic for s in by_topic)
    assert [s.id for s in select_snippets(all_snippets=True, kb=kb)] == list(kb.snippets)
    assert len(select_snippets([first.id, first.id], kb=kb)) == 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"ids": ["join/no-such"]}, "unknown snippet id 'join/no-such'"),
        ({"topics": ["no-such-topic"]}, "unknown topic 'no-such-topic'"),
        ({}, "no snippets selected"),
    ],
    ids=["unknown id", "unknown topic", "empty selection"],
)
def test_select_errors(kb, kwargs, message):
    with pytest.raises(NotFoundError, match=message):
        select_snippets(kwargs.get("ids", ()), kb=kb, **{k: v for k, v in kwargs.items() if k != "ids"})


# --------------------------------------------------------------------------- export (stand-in runtime)
def test_export_writes_scripts_manifest_runner(kb, tmp_path, fake_verifier):
    fake = fake_verifier
    specs = cpu_snippets(kb)[:3]
    out = tmp_path / "out"
    manifest = export_snippets(specs, out, kb=kb, verifier=fake)
    assert sorted(fake.runs) == sorted(s.id for s in specs)
    written = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert written == json.loads(manifest.model_dump_json())
    assert written["header_end"] + "\n" == HEADER_END and written["include_unverified"] is False
    assert [e["id"] for e in written["entries"]] == [s.id for s in specs]
    for spec, entry in zip(specs, written["entries"], strict=True):
        data = (out / entry["file"]).read_bytes()
        header, code = split_script(data.decode("utf-8"))
        assert code.encode("utf-8") == spec.code.encode("utf-8")  # byte-identical to what was verified
        assert data.endswith(spec.code.encode("utf-8"))
        sha = hashlib.sha256(code.encode("utf-8")).hexdigest()
        assert entry["sha256"] == sha == entry["verdict"]["code_sha256"]
        assert entry["verified"] is True and entry["section"] == spec.section_id
        assert all(line.startswith("#") for line in header.splitlines())
        section = kb.section(spec.section_id)
        for text in (
            f"# snippet:     {spec.id}",
            f"# section:     {section.id}",
            f"# source:      {section.sources[0]}",
            "# verdict:     passed",
            "# torch:       2.13.0",
            "# backend:     gloo",
            f"# world_size:  {spec.world_size}",
            "# exported:    20",
            f"# launch:      {spec.launch}",
        ):
            assert text in header, text
        compile(data, entry["file"], "exec")  # the header keeps the file valid Python
    assert (out / "test_exported.py").is_file()


@pytest.mark.parametrize("status", ["failed", "timeout", "skipped"])
def test_export_refuses_what_did_not_pass(kb, tmp_path, fake_verifier, status):
    good, bad = cpu_snippets(kb)[:2]
    fake_verifier.status[bad.id] = status
    with pytest.raises(ExportRefused) as err:
        export_snippets([good, bad], tmp_path / "out", kb=kb, verifier=fake_verifier)
    assert f"{bad.id} ({status}: fake {status})" in str(err.value) and good.id not in str(err.value)
    assert "--include-unverified" in str(err.value)
    assert not (tmp_path / "out").exists()  # nothing half-written
    manifest = export_snippets([good, bad], tmp_path / "out", kb=kb, include_unverified=True, verifier=fake_verifier)
    entries = {e.id: e for e in manifest.entries}
    assert entries[good.id].verified and not entries[bad.id].verified
    assert entries[bad.id].verdict.status == status and manifest.include_unverified
    header, _ = split_script((tmp_path / "out" / bad.filename).read_text(encoding="utf-8"))
    assert f"NOT VERIFIED: status {status.upper()}" in header
    assert "NOT VERIFIED" not in split_script((tmp_path / "out" / good.filename).read_text(encoding="utf-8"))[0]


def test_export_into_same_dir_adds_to_manifest(kb, tmp_path, fake_verifier):
    a, b = cpu_snippets(kb)[:2]
    out = tmp_path / "out"
    export_snippets([a], out, kb=kb, verifier=fake_verifier)
    export_snippets([b], out, kb=kb, verifier=fake_verifier)
    manifest = export_snippets([a], out, kb=kb, verifier=fake_verifier)
    assert [e.id for e in manifest.entries] == [b.id, a.id]
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["entries"][0]["id"] == b.id
    (out / b.filename).unlink()
    assert [e.id for e in export_snippets([a], out, kb=kb, verifier=fake_verifier).entries] == [
        a.id
    ]  # a vanished file is dropped


@pytest.mark.torch
def test_cuda_snippet_is_refused_on_cpu_host(kb, tmp_path, capsys):
    """Real runtime, nothing launched: a snippet that needs CUDA is 'skipped' here, so it is not exported."""
    from fsdp_skill.runtime import host

    spec = next((s for s in kb.snippets.values() if "cuda" in s.requires), None)
    if spec is None or host.cuda_device_count() >= spec.world_size:
        pytest.skip("needs a CUDA-only snippet and a host without enough GPUs")
    assert main(["export", spec.id, "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"{spec.id} (skipped" in err and "--include-unverified" in err
    assert not (tmp_path / "out").exists()
    assert main(["export", spec.id, "--out", str(tmp_path / "out"), "--include-unverified"]) == 0
    header = split_script((tmp_path / "out" / spec.filename).read_text(encoding="utf-8"))[0]
    assert "NOT VERIFIED: status SKIPPED" in header


def test_cli_export_exit_codes(kb, tmp_path, fake_verifier, capsys):
    good, bad = cpu_snippets(kb)[:2]
    fake_verifier.status[bad.id] = "failed"
    out = tmp_path / "out"
    assert main(["export", good.id, "--out", str(out)], verifier=fake_verifier) == 0
    stdout = capsys.readouterr().out
    assert good.filename in stdout and "passed" in stdout and (out / good.filename).exists()
    assert main(["export", good.id, bad.id, "--out", str(tmp_path / "o2")], verifier=fake_verifier) == 1
    err = capsys.readouterr().err
    assert bad.id in err and "failed" in err and "--include-unverified" in err
    assert (
        main(["export", good.id, bad.id, "--out", str(tmp_path / "o3"), "--include-unverified", "--json"], verifier=fake_verifier)
        == 0
    )
    cap = capsys.readouterr()
    assert {e["id"]: e["verified"] for e in json.loads(cap.out)["entries"]} == {good.id: True, bad.id: False}
    assert f"exported NOT VERIFIED: {bad.id}" in cap.err
    assert main(["export", "--out", str(tmp_path / "o4")], verifier=fake_verifier) == 2  # nothing selected
    assert main(["export", "join/no-such", "--out", str(tmp_path / "o5")], verifier=fake_verifier) == 2
    assert main(["export", "--topic", "no-such", "--out", str(tmp_path / "o6")], verifier=fake_verifier) == 2
    assert "unknown topic" in capsys.readouterr().err


def test_cli_export_topic(kb, tmp_path, fake_verifier, capsys):
    topic = kb.topics[0]
    expected = [s.id for s in kb.snippets.values() if kb.section(s.section_id).topic == topic and not s.requires]
    if len(expected) != len([s for s in kb.snippets.values() if kb.section(s.section_id).topic == topic]):
        pytest.skip("topic has CUDA-only snippets, which are not exported here")
    assert main(["export", "--topic", topic, "--out", str(tmp_path / "t"), "--json"], verifier=fake_verifier) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)["entries"]] == expected


def test_runner_catches_edited_script(kb, tmp_path, fake_verifier):
    spec = cpu_snippets(kb)[0]
    out = tmp_path / "out"
    export_snippets([spec], out, kb=kb, verifier=fake_verifier)
    path = out / spec.filename
    path.write_bytes(path.read_bytes() + b"# an edit\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(out / "test_exported.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1 and "code changed since export" in proc.stdout


# --------------------------------------------------------------------------- real: export, then torchrun
@pytest.mark.slow
def test_real_export_then_torchrun(kb, tmp_path, capsys):
    spec = min((s for s in cpu_snippets(kb) if s.world_size == 2), key=lambda s: len(s.code))
    out = tmp_path / "scripts"
    assert main(["export", spec.id, "--out", str(out), "--json"]) == 0, capsys.readouterr().err
    entry = json.loads(capsys.readouterr().out)["entries"][0]
    assert entry["verified"] and entry["verdict"]["status"] == "passed" and entry["verdict"]["backend"] == "gloo"
    code = split_script((out / entry["file"]).read_text(encoding="utf-8"))[1]
    assert hashlib.sha256(code.encode()).hexdigest() == entry["sha256"] == entry["verdict"]["code_sha256"]
    # launch it exactly as the header says, with this environment's torchrun
    launch = shlex.split(entry["launch"])
    assert launch[:3] == ["torchrun", "--standalone", "--nproc_per_node=2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([str(BIN / "torchrun"), *launch[1:]], cwd=out, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # and the generated runner re-verifies it the same way
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_exported.py"],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout[-3000:]


# --------------------------------------------------------------------------- issue 12: export never loses data
def test_malformed_manifest_entry_is_kept_and_reported(kb, tmp_path, fake_verifier, capsys):
    a, b, c = cpu_snippets(kb)[:3]
    out = tmp_path / "out"
    export_snippets([a, b], out, kb=kb, verifier=fake_verifier)
    data = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    del data["entries"][0]["sha256"]  # one malformed entry (a), one good (b)
    (out / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    assert main(["export", c.id, "--out", str(out)], verifier=fake_verifier) == 0
    err = capsys.readouterr().err
    assert "kept unreadable manifest entry #0" in err and "sha256" in err
    written = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [e["id"] for e in written["entries"]] == [b.id, c.id]
    assert written["unreadable"][0]["entry"] == data["entries"][0] and written["unreadable"][0]["index"] == 0
    # fixed by hand inside 'unreadable': the next export takes it back as an entry
    written["unreadable"][0]["entry"]["sha256"] = hashlib.sha256(a.code.encode()).hexdigest()
    (out / "manifest.json").write_text(json.dumps(written), encoding="utf-8")
    manifest = export_snippets([c], out, kb=kb, verifier=fake_verifier)
    assert sorted(e.id for e in manifest.entries) == sorted([a.id, b.id, c.id]) and manifest.unreadable == []


@pytest.mark.parametrize(
    "content, phrase",
    [
        ("{not json", "cannot be read as JSON"),
        ('{"format": 99, "entries": []}', "not an fsdp-skill manifest of format 1"),
        ("[]", "not an fsdp-skill manifest"),
    ],
    ids=["not JSON", "other format", "not an object"],
)
def test_unextendable_manifest_is_refused_before_verifying(kb, tmp_path, fake_verifier, capsys, content, phrase):
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text(content, encoding="utf-8")
    spec = cpu_snippets(kb)[0]
    assert main(["export", spec.id, "--out", str(out)], verifier=fake_verifier) == 2
    err = capsys.readouterr().err
    assert phrase in err and "nothing was written" in err and "Traceback" not in err
    assert fake_verifier.runs == [] and sorted(p.name for p in out.iterdir()) == ["manifest.json"]
    assert (out / "manifest.json").read_text(encoding="utf-8") == content


@pytest.mark.parametrize("where", ["empty", "a file", "under a file", "under /proc"])
def test_bad_out_is_exit_2_before_verifying(kb, tmp_path, fake_verifier, capsys, where):
    """Also where access() says yes but nothing can be created (/proc, for root too): found before any run."""
    if where == "under /proc" and not os.path.isdir("/proc"):
        pytest.skip("no /proc here")
    (tmp_path / "f").write_text("x")
    out = {
        "empty": "",
        "a file": str(tmp_path / "f"),
        "under a file": str(tmp_path / "f" / "sub"),
        "under /proc": "/proc/fsdp-skill-out",
    }[where]
    assert main(["export", cpu_snippets(kb)[0].id, "--out", out], verifier=fake_verifier) == 2
    err = capsys.readouterr().err
    assert "--out" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert fake_verifier.runs == []


def _cuda_and_cpu_topic(kb):
    for topic in kb.topics:
        specs = [s for s in kb.snippets.values() if kb.section(s.section_id).topic == topic]
        if any("cuda" in s.requires for s in specs) and any(not s.requires for s in specs):
            return topic, specs
    pytest.skip("no topic with both CUDA-only and CPU snippets")


def test_export_topic_on_cpu_host_writes_what_passed(kb, tmp_path, fake_verifier, capsys):
    """--topic (and --all) on a CPU-only host: the CUDA-only snippets are 'skipped', listed, and exit is 0."""
    topic, specs = _cuda_and_cpu_topic(kb)
    cuda = [s.id for s in specs if "cuda" in s.requires]
    for sid in cuda:
        fake_verifier.status[sid] = "skipped"
    out = tmp_path / "out"
    assert main(["export", "--topic", topic, "--out", str(out), "--json"], verifier=fake_verifier) == 0
    cap = capsys.readouterr()
    manifest = json.loads(cap.out)
    assert [e["id"] for e in manifest["entries"]] == [s.id for s in specs if s.id not in cuda]
    assert [(n["id"], n["status"], n["reason"]) for n in manifest["skipped"]] == [(c, "skipped", "fake skipped") for c in cuda]
    assert all(c in cap.err for c in cuda) and "none of them can run on this host" in cap.err
    assert not any((out / s.filename).exists() for s in specs if s.id in cuda)
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["skipped"] == manifest["skipped"]


def test_export_all_with_a_failure_writes_the_rest_and_exits_1(kb, tmp_path, fake_verifier, capsys):
    bad = cpu_snippets(kb)[1]
    fake_verifier.status[bad.id] = "failed"
    for s in kb.snippets.values():
        if "cuda" in s.requires:
            fake_verifier.status[s.id] = "skipped"
    out = tmp_path / "out"
    assert main(["export", "--all", "--out", str(out)], verifier=fake_verifier) == 1
    cap = capsys.readouterr()
    assert f"{bad.id}\tnot exported: failed (fake failed)" in cap.out
    written = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert len(written["entries"]) == len([s for s in kb.snippets.values() if not s.requires]) - 1
    assert bad.id not in {e["id"] for e in written["entries"]} and not (out / bad.filename).exists()


def test_export_section_id_and_nothing_passed(kb, tmp_path, fake_verifier, capsys):
    spec = next(s for s in cpu_snippets(kb) if s.id != s.section_id)
    assert main(["export", spec.section_id, "--out", str(tmp_path / "a"), "--json"], verifier=fake_verifier) == 0
    assert spec.id in [e["id"] for e in json.loads(capsys.readouterr().out)["entries"]]
    _, specs = _cuda_and_cpu_topic(kb)
    for s in kb.snippets.values():
        fake_verifier.status[s.id] = "skipped"
    fake_verifier.cache.clear()  # forget the 'passed' verdicts of the first export
    topic = kb.section(specs[0].section_id).topic
    assert main(["export", "--topic", topic, "--out", str(tmp_path / "b")], verifier=fake_verifier) == 0
    assert "wrote nothing" in capsys.readouterr().out and not (tmp_path / "b").exists()
