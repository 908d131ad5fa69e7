"""Pasted messages: the atlas locates them, the sections that declare them come first, and every message a
section declares exists in the installed torch (a torch upgrade that rewords one fails here).

A message that the installed torch cannot hold carries a mark on its line of the card, after the template:
``# outside torch: ORIGIN``, where ORIGIN is one of :data:`ORIGINS`. It is then looked for in that library
instead (and must not be in torch, or the mark is stale); the check is skipped, naming the library, on a
host that does not have it (NCCL and torch's CUDA library on a CPU-only build).  A 'torch-X.Y.Z' mark is a message of
that release only: where that release is installed it must be in torch, elsewhere not (and in that release's matrix
venv), so the suite holds on the pinned torch and on the newest alike."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fsdp_skill.core.answer import ask
from fsdp_skill.core.atlas.lookup import load_atlas, torch_dir
from fsdp_skill.core.atlas.messages import explain_messages, looks_pasted, same_message, template_matches
from fsdp_skill.core.knowledge.cards import load_knowledge

KB = load_knowledge()
DECLARED = sorted({(s.id, t) for s in KB.sections.values() for t in s.errors})


def _libtorch_cuda() -> list[Path]:
    """torch's CUDA library: the installed torch's, else those of the matrix venvs (CUDA builds) where they exist."""
    return sorted((torch_dir() / "lib").glob("libtorch_cuda*.so*")) or _in_matrix("libtorch_cuda*.so*")


def _nccl_of(torch: Path) -> list[Path]:
    """NCCL as that torch loads it: bundled in torch/lib or from the nvidia-nccl wheel beside torch."""
    return sorted((torch / "lib").glob("libnccl*.so*")) + sorted((torch.parent / "nvidia" / "nccl" / "lib").glob("libnccl*.so*"))


def _nccl() -> list[Path]:
    """The NCCL libraries torch ships with: the installed torch's and those of the matrix venvs (CUDA builds) where
    they exist. NCCL rewords its own messages between releases (2.21 and 2.27 say "Duplicate GPU detected", the 2.30
    of torch 2.14.1's CUDA 13 wheels "Multiple Ranks are using the same GPU/Partition"), and a section declares each
    wording with the NCCL it comes from: a message counts when one NCCL a torch of the record ships holds it."""
    found = _nccl_of(torch_dir())
    for torch in sorted(MATRIX.glob("torch-*/lib/python*/site-packages/torch")):
        found += [p for p in _nccl_of(torch) if p not in found]
    return found


def _cuda_of(torch: Path) -> str | None:
    """The CUDA release a torch was built for ('12.4'), from its version.py (None for a CPU build)."""
    m = re.search(r"^cuda\b[^=]*=\s*'([^']+)'", (torch / "version.py").read_text(), re.MULTILINE)
    return m[1] if m else None


def _nccl_cu12() -> list[Path]:
    """The NCCL of torch's CUDA 12 builds (2.21 with 2.6.0+cu124, 2.27 with 2.9.1+cu128): the installed torch's
    when it is one, and the matrix venvs' that are. Wordings that NCCL 2.30 (torch 2.14.1's CUDA 13 wheels) dropped
    are declared with this origin, so that the suite on the newest torch does not look for them in its NCCL."""
    torches = [torch_dir(), *sorted(MATRIX.glob("torch-*/lib/python*/site-packages/torch"))]
    found: list[Path] = []
    for torch in torches:
        if (_cuda_of(torch) or "").startswith("12."):
            found += [p for p in _nccl_of(torch) if p not in found]
    return found


def _libstdcxx() -> list[Path]:
    """The C++ runtime this interpreter has loaded (the one torch runs with)."""
    if not sys.platform.startswith("linux") or not ctypes.util.find_library("stdc++"):
        return []
    ctypes.CDLL(ctypes.util.find_library("stdc++"))
    maps = Path("/proc/self/maps").read_text().splitlines()
    return sorted({Path(line.split()[-1]) for line in maps if "/libstdc++.so" in line})


def _accelerate() -> list[Path]:
    """Hugging Face Accelerate's Python files, where it is installed beside torch (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("accelerate")
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(p for root in spec.submodule_search_locations for p in Path(root).rglob("*.py"))


def _libc10_cuda() -> list[Path]:
    return sorted((torch_dir() / "lib").glob("libc10_cuda*.so*")) or _in_matrix("libc10_cuda*.so*")


def _in_matrix(pattern: str) -> list[Path]:
    """Files of the newest matrix venv's torch/lib matching ``pattern`` ([] where there is none)."""
    for torch in sorted(MATRIX.glob("torch-*/lib/python*/site-packages/torch"), key=lambda p: p.parts, reverse=True):
        found = sorted((torch / "lib").glob(pattern))
        if found:
            return found
    return []


MATRIX = Path(os.environ.get("FSDP_SKILL_MATRIX") or Path(__file__).resolve().parent.parent / ".matrix")


def _matrix_torch(version: str) -> Path | None:
    """The torch package of the matrix venv of ``version`` (scripts/dev matrix), or None where none was made."""
    found = sorted(MATRIX.glob(f"torch-{version}/lib/python*/site-packages/torch"))
    return found[0] if found else None


# where a message that is not in the installed torch comes from, and the files it is looked for in; an origin
# 'torch-VERSION' is another torch release of the compatibility record (its matrix venv, where one exists)
ORIGINS = {
    "accelerate": _accelerate,  # Hugging Face Accelerate's own errors (accelerator.prepare): not a dependency here
    "libtorch_cuda": _libtorch_cuda,  # torch's CUDA library (ProcessGroupNCCL): absent from a CPU-only build
    "nccl": _nccl,  # the NCCL library's own log lines (NCCL WARN ...)
    "nccl-cu12": _nccl_cu12,  # a line of the NCCL of torch's CUDA 12 builds that NCCL 2.30 (CUDA 13 builds) reworded
    "libstdc++": _libstdcxx,  # the C++ runtime's terminate handler
    "libc10_cuda": _libc10_cuda,  # c10's CUDA library ("Found no NVIDIA driver"): absent from a CPU-only build
}
_RELEASE = re.compile(r"torch-(\d+\.\d+\.\d+)")
_MARK = re.compile(r"#\s*outside torch:")
_MARKED = re.compile(r"^\s*-\s*(\"(?:[^\"\\]|\\.)*\")\s*#\s*outside torch:\s*(\S+)\s*$")


def _marks() -> dict[str, str]:
    """Template -> origin for every ``errors:`` line of the cards that carries an ``outside torch`` mark."""
    marks = {}
    for path in sorted(KB.directory.glob("*.md")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _MARK.search(line):
                m = _MARKED.match(line)
                assert m, f'{path.name}:{n}: write the mark after a double-quoted template: - "..."  # outside torch: ORIGIN'
                marks[yaml.safe_load(m.group(1))] = m.group(2)
    return marks


MARKS = _marks()


def _installed_release() -> str:
    """The installed torch's release ('2.13.0' of '2.13.0+cpu'), from its package metadata (torch is not imported)."""
    import importlib.metadata

    return importlib.metadata.version("torch").split("+")[0]


def _in_files(template: str, files: list[Path] | Path) -> bool:
    """The longest literal piece of ``template`` occurs in one of ``files`` (a folder: its .py files and
    shared libraries)."""
    piece = max((p.strip() for p in template.split("*")), key=len)
    if isinstance(files, Path):
        args = ["-r", "--include=*.py", "--include=*.so*", "--include=*.json", str(files)]
    else:
        args = [str(f) for f in files]
    proc = subprocess.run(["grep", "-lF", "-m1", "-e", piece, *args], capture_output=True, text=True, timeout=600)
    return bool(proc.stdout.strip())


def _in_torch_files(template: str) -> bool:
    """The longest literal piece of ``template`` occurs in a .py file or a shared library of torch."""
    return _in_files(template, torch_dir())


def test_sections_declare_messages():
    assert len(DECLARED) >= 20


def test_outside_marks_name_a_known_origin_and_a_declared_message():
    declared = {t for _, t in DECLARED}
    assert MARKS, "no errors: entry is marked; the marks below were found by an empty scan"
    for template, origin in MARKS.items():
        assert origin in ORIGINS or _RELEASE.fullmatch(origin), (
            f"{template!r}: unknown origin {origin!r} (one of {sorted(ORIGINS)}, torch-X.Y.Z)"
        )
        assert template in declared, template


@pytest.mark.parametrize("section_id, template", DECLARED, ids=[f"{s}:{t[:40]}" for s, t in DECLARED])
@pytest.mark.torch
def test_declared_message_exists_in_installed_torch(section_id, template):
    origin = MARKS.get(template)
    release = _RELEASE.fullmatch(origin or "")
    if release and release.group(1) == _installed_release():  # that release's message, and that release is installed
        if any(same_message(template, e.message) for e in load_atlas().entries):
            return
        assert _in_torch_files(template), f"{section_id} declares a message not found in torch {release.group(1)}: {template!r}"
        return
    if release:  # another release's message: not in this torch, and in that one where its matrix venv exists
        assert not _in_torch_files(template), f"{section_id}: torch has {template!r}; drop its '# outside torch' mark"
        other = _matrix_torch(release.group(1))
        if other is None:
            pytest.skip(f"no matrix venv of torch {release.group(1)} here (scripts/dev matrix): cannot check {template!r}")
        assert _in_files(template, other), f"{section_id} declares a message not found in torch {release.group(1)}: {template!r}"
        return
    if origin is not None:
        files = ORIGINS[origin]()
        if origin not in ("libtorch_cuda", "libc10_cuda") or not files:
            assert not _in_torch_files(template), f"{section_id}: torch has {template!r}; drop its '# outside torch' mark"
        if not files:
            pytest.skip(f"{origin} is not on this host: cannot check {template!r}")
        assert _in_files(template, files), f"{section_id} declares a message not found in {origin}: {template!r}"
        return
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


# Native lines of a CUDA build's libtorch_cuda (torch 2.14.1+cu130; a CPU build has none of them), and the log a
# watchdog timeout prints with them.
CUDA_NATIVE = [
    "Watchdog caught collective operation timeout:",
    "Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
    "To avoid data inconsistency, we are taking the entire process down.",
    "Process group watchdog thread terminated with exception:",
    "Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. ",
    "You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
    "failure detected by watchdog at work sequence id: ",
]
WATCHDOG_LOG = """\
[rank1]:[E1202 10:41:07.123456789 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1523, OpType=ALLREDUCE, NumelIn=2097152, NumelOut=2097152, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.
[rank1]:[E1202 10:41:07.123601234 ProcessGroupNCCL.cpp:2168] [PG ID 0 PG GUID 0(default_pg) Rank 1] failure detected by watchdog at work sequence id: 1523 PG status: last enqueued work: 1523, last completed work: 1522
[rank1]:[E1202 10:41:07.123622345 ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.
[rank1]:[E1202 10:41:07.123640000 ProcessGroupNCCL.cpp:684] [Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[rank1]:[E1202 10:41:07.127000000 ProcessGroupNCCL.cpp:698] [Rank 1] To avoid data inconsistency, we are taking the entire process down.
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1523, OpType=ALLREDUCE, NumelIn=2097152, NumelOut=2097152, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.
"""


def test_a_cuda_builds_watchdog_log_puts_the_explaining_section_first_with_no_contradicting_box(tmp_path, monkeypatch):
    """On a CUDA build the atlas knows the watchdog log's lines one by one; the section that explains the timeout is
    first, and no message is shown as 'explained by no section' while a returned section declares it."""
    from fsdp_skill.core.atlas import lookup

    lib = tmp_path / "torch" / "lib"
    lib.mkdir(parents=True)
    (lib / "libtorch_cuda.so").write_bytes(b"\0".join(s.encode() for s in CUDA_NATIVE) + b"\0")
    atlas = lookup.Atlas(lookup.build_atlas(tmp_path / "torch"))
    assert atlas.counts().get("native", 0) >= 5
    monkeypatch.setattr(lookup, "load_atlas", lambda *a, **k: atlas)
    ans = ask(WATCHDOG_LOG, k=3, verify=False)
    assert ans.sections[0].id == "debugging/nccl-watchdog-timeout", [s.id for s in ans.sections]
    assert ans.errors and ans.errors[0].sections, [(e.message, e.sections) for e in ans.errors]
    returned = {s.id for s in ans.sections}
    for e in ans.errors:
        if not e.sections:
            declaring = [sid for sid, t in DECLARED if sid in returned and same_message(t, e.message)]
            assert not declaring, f"{e.message!r} is said to be explained by no section, but {declaring} declare it"
    unexplained = [e.message for e in ans.errors if not e.sections]
    assert not unexplained, f"messages of the watchdog log no section explains: {unexplained}"
