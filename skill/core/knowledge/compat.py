"""The compatibility record: where each knowledge snippet ran before release, one file per torch version and build.

``knowledge/compat/torch-<version>.json`` (written by ``scripts/dev matrix``, committed, shipped as package data)
holds one environment's ``verify --all`` results::

    {"format": 1, "torch_version": "2.14.1+cu130", "build": "cuda", "python": "3.11.7", "date": "2026-12-02",
     "host": "x86_64, 2 CPUs, no GPU", "snippets": {"model/ac-fsdp2-parity": {"code_sha256": "...",
     "status": "passed", "reason": null, "seconds": 3.2, "device": "cpu", "backend": "gloo", ...}, ...}}

A result counts for a snippet only while its ``code_sha256`` is the snippet's current code: an edited snippet has
no record until the matrix runs again (:func:`recorded_runs` drops the stale ones).  What a section says about a
version that failed is its ``versions:`` notes (:func:`declared_by`); ``tests/test_compat.py`` holds the two in
agreement.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fsdp_skill.core.knowledge.applicability import contains, release
from fsdp_skill.core.models import RecordedRun, VersionNote
from fsdp_skill.runtime import watch

FORMAT = 1
STATUSES = ("passed", "failed", "timeout", "skipped")
BUILDS = ("cpu", "cuda", "rocm")
# record folder -> ((name, size, mtime_ns) per file, runs per snippet id, the watch generation read before that check)
_LOADED: dict[str, tuple[tuple[tuple[str, int, int], ...], dict[str, list[tuple[str, RecordedRun]]], int | None]] = {}


def record_dir(knowledge_dir: str | Path) -> Path:
    """The folder of the record files: ``compat/`` inside the knowledge directory."""
    return Path(knowledge_dir) / "compat"


def build_of(torch_version: str, cuda: str | None = None, hip: str | None = None) -> str:
    """'cuda', 'rocm' or 'cpu': from ``torch.version.cuda`` / ``torch.version.hip`` when known, else from the local
    version label of ``torch_version`` ('+cu130' -> cuda, '+rocm6.2' -> rocm, '+cpu' or none -> cpu; PyPI's Linux
    wheels without a label are CUDA builds only when ``cuda`` says so)."""
    if hip:
        return "rocm"
    if cuda:
        return "cuda"
    label = torch_version.partition("+")[2]
    if label.startswith("cu"):
        return "cuda"
    if label.startswith("rocm"):
        return "rocm"
    return "cpu"


def record_file(
    verdicts: Iterable[Mapping[str, Any]], *, torch_version: str, build: str, python: str, date: str, host: str
) -> dict[str, Any]:
    """The content of one record file from ``verify --all --json`` verdicts (dicts) of one environment.

    Raises ValueError when a verdict ran on another torch, has no snippet id or code hash, or has a status that is
    not recorded (unverified), so a mixed or partial run is never committed as one environment's."""
    if build not in BUILDS:
        raise ValueError(f"build must be one of {BUILDS} (got {build!r})")
    snippets: dict[str, dict[str, Any]] = {}
    for v in verdicts:
        sid, sha, status = v.get("snippet_id"), v.get("code_sha256"), v.get("status")
        if not sid or not sha:
            raise ValueError(f"a verdict without snippet_id/code_sha256: {v!r:.200}")
        if status not in STATUSES:
            raise ValueError(f"{sid}: status {status!r} is not recorded (only {STATUSES})")
        if status != "skipped" and v.get("torch_version") != torch_version:
            raise ValueError(f"{sid}: ran on torch {v.get('torch_version')}, not {torch_version}")
        reason = (v.get("reason") or "").split("\n", 1)[0].strip() or None
        snippets[sid] = {
            "code_sha256": sha,
            "status": status,
            "reason": None if status == "passed" else reason,
            "seconds": None if v.get("seconds") is None else round(float(v["seconds"]), 2),
            "device": v.get("device"),
            "backend": v.get("backend"),
        }
    if not snippets:
        raise ValueError("no verdicts to record")
    return {
        "format": FORMAT,
        "torch_version": torch_version,
        "build": build,
        "python": python,
        "date": date,
        "host": host,
        "snippets": dict(sorted(snippets.items())),
    }


def load_record(knowledge_dir: str | Path) -> dict[str, list[tuple[str, RecordedRun]]]:
    """Per snippet id, ``(code_sha256, RecordedRun)`` of every record file, oldest torch first (memoised per file
    fingerprint).  A file that is not a record of this format is skipped: the record informs an answer, it never
    breaks one; ``tests/test_compat.py`` fails on such a file instead."""
    where = os.path.join(knowledge_dir, "compat")  # record_dir(knowledge_dir), without a Path on every ask
    # read before the full check, kept with its result; a one-shot ask reads the record once per snippet: the
    # watcher is used once load_knowledge, asked again, started it
    gen = watch.generation((where,), start=False)
    memo = _LOADED.get(where)
    if gen is not None and memo is not None and memo[2] == gen:  # nothing in the folder moved since
        return memo[1]
    folder = record_dir(knowledge_dir)
    try:
        with os.scandir(folder) as entries:
            files = sorted((e.name, st.st_size, st.st_mtime_ns) for e in entries if e.name.endswith(".json") for st in [e.stat()])
    except OSError:
        _LOADED.pop(where, None)
        return {}
    key = tuple(files)
    if memo is not None and memo[0] == key:
        _LOADED[where] = (key, memo[1], gen)
        return memo[1]
    runs: dict[str, list[tuple[str, RecordedRun]]] = {}
    for data in sorted((d for d in (_read(folder / name) for name, _, _ in files) if d), key=lambda d: release(d["torch_version"])):
        for sid, row in data["snippets"].items():
            run = RecordedRun(
                torch_version=data["torch_version"],
                build=data["build"],
                status=row["status"],
                reason=row.get("reason"),
                seconds=row.get("seconds"),
                date=data["date"],
                python=data["python"],
                device=row.get("device"),
                backend=row.get("backend"),
            )
            runs.setdefault(sid, []).append((row["code_sha256"], run))
    _LOADED[where] = (key, runs, gen)
    return runs


def _read(path: Path) -> dict[str, Any] | None:
    """One record file's data, or None when it cannot be read or lacks the fields of this format."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("snippets"), dict):
        return None
    if not all(isinstance(data.get(k), str) for k in ("torch_version", "build", "python", "date")):
        return None
    if data["build"] not in BUILDS:
        return None
    rows = data["snippets"]
    if not all(isinstance(r, dict) and r.get("status") in STATUSES and isinstance(r.get("code_sha256"), str) for r in rows.values()):
        return None
    return data


def recorded_runs(knowledge_dir: str | Path, snippet_id: str, code_sha256: str) -> list[RecordedRun]:
    """The record's results for this exact code of ``snippet_id``, oldest torch first ([] when none is current)."""
    return [run for sha, run in load_record(knowledge_dir).get(snippet_id, []) if sha == code_sha256]


def _label(run: RecordedRun) -> str:
    return f"{run.torch_version} ({run.build.upper() if run.build != 'cpu' else 'CPU'} build)"


def summary(runs: list[RecordedRun]) -> str:
    """One line of where the code ran, e.g. 'passed on torch 2.9.1+cu128, 2.13.0+cpu; failed on 2.6.0+cu124'."""
    groups: dict[str, list[str]] = {}
    for run in runs:
        groups.setdefault(run.status, []).append(run.torch_version)
    parts = [f"{status} on {', '.join(versions)}" for status, versions in groups.items()]
    return ("recorded: " + "; ".join(parts)) if parts else "not in the compatibility record (this code was not run by the matrix)"


def for_torch(runs: list[RecordedRun], torch_version: str | None) -> str | None:
    """What the record says for the torch in use: its own recorded result, or that it is outside the record (the
    nearest recorded releases named); None when ``torch_version`` is unknown (no torch there)."""
    if not torch_version:
        return None
    if not runs:
        return f"your torch {torch_version}: this code is not in the compatibility record"
    same = [r for r in runs if r.torch_version == torch_version]
    if not same:
        same = [r for r in runs if release(r.torch_version) == release(torch_version)]
        if same:
            run = same[-1]
            return (
                f"your torch {torch_version}: recorded {run.status} on the same release, {_label(run)}, {run.date}"
                + (f" — {run.reason}" if run.reason else "")
            )
        versions = ", ".join(r.torch_version for r in runs)
        return f"your torch {torch_version} is outside the compatibility record (recorded on {versions}); nothing was run on it before release"
    run = same[-1]
    return f"your torch {torch_version}: recorded {run.status} on {_label(run)}, {run.date}" + (f" — {run.reason}" if run.reason else "")


def declared_by(notes: list[VersionNote], torch_version: str, reason: str | None) -> VersionNote | None:
    """The first note whose range holds ``torch_version`` and whose ``fails`` (if any) is in ``reason``; None when no
    note declares that failure.  A note without ``fails`` declares nothing (it is about behaviour, not a failure)."""
    for note in notes:
        if note.fails is None or note.fails not in (reason or ""):
            continue
        if contains(note.torch, torch_version):
            return note
    return None
