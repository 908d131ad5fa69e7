"""The error atlas: building from source (tiny fixtures and the installed torch), caching, matching."""

from __future__ import annotations

import json
import random
import re
import textwrap
from pathlib import Path

import pytest

from fsdp_skill.core.atlas import lookup as A

FILLERS = ("4", "cuda:0", "torch.float32", "'layers.0.weight'", "2", "[0, 1]", "Shard(dim=0)")
FAKE_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/train.py", line 42, in <module>\n'
    "    main()\n"
    '  File "/home/user/train.py", line 30, in main\n'
    "    model = fully_shard(model, mesh=mesh)\n"
)
ORDINARY = [
    "how do I use fully_shard with bf16?",
    "What is the difference between FSDP1 and FSDP2 (fully_shard)?",
    "How can I save a sharded state dict with torch.distributed.checkpoint and load it on a different world size?",
    "my loss is nan after wrapping the model with FSDP, what could be wrong",
    "Should I call init_process_group before or after setting the CUDA device?",
    "How do I enable CPU offloading with fully_shard and MixedPrecisionPolicy?",
    "which backend should I use on CPU, gloo or nccl?",
    "Explain reshard_after_forward and when to set it to False",
    "How do I combine tensor parallel and FSDP on a 2D DeviceMesh?",
    "Is activation checkpointing compatible with fully_shard? Give an example.",
    "why is my training slower with FSDP than with DDP on 8 GPUs",
    "How to gather the full state dict on rank 0 only and save it as a .pt file",
    "can I use torch.compile with fully_shard",
    "What does the process group timeout do and how do I increase it for a slow checkpoint load?",
    "I want to shard only the transformer blocks, not the embeddings; how do I apply fully_shard per layer?",
]


def fill(template: str) -> str:
    """The template with every ``*`` replaced by a plausible value."""
    parts = template.split("*")
    out = [parts[0]]
    for i, part in enumerate(parts[1:]):
        out += [FILLERS[i % len(FILLERS)], part]
    return "".join(out)


def sites(matches) -> set[tuple[str, int | None]]:
    """Every (path, line) of every matched group; a group holds all sites that share its template."""
    return {(e.path, e.line) for m in matches for e in m.entries}


# ---------------------------------------------------------------------------------- builder units

SOURCE = """
import logging
import warnings
logger = logging.getLogger(__name__)
MODULE_MSG = "module level message constant is resolved"

def top(x, world_size):
    if x < 0:
        raise ValueError(f"x must be non-negative, got {x} on rank {world_size}")
    elif x == 0:
        raise RuntimeError("x must not be zero here, " + "please pass a positive value")
    else:
        warnings.warn("value %s is large, this is deprecated" % x, FutureWarning, stacklevel=2)
    msg = f"bad world size {world_size}"
    msg += ", expected an even number of ranks"
    if world_size % 2:
        raise ValueError(msg)
    assert x != 3, "three is not allowed as a value"
    logger.warning("slow path taken for %d ranks; consider more memory", world_size)
    raise TypeError(MODULE_MSG)

class Holder:
    def method(self, n):
        while n > 10:
            raise KeyError("key {} is missing from the holder".format(n))
        if n:
            pass
        else:
            warnings.warn("empty holder constructed without items")
        raise ValueError(f"{n}")

class Wrapper:
    def __init__(self, ids):
        if ids:
            self._log_and_throw(ValueError, "device_ids only work with a module on one GPU, " f"but got device_ids {ids}")
"""


@pytest.fixture(scope="module")
def fake_torch(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("site") / "torch"
    (root / "distributed" / "fsdp").mkdir(parents=True)
    (root / "nn" / "parallel").mkdir(parents=True)
    (root / "distributed" / "fsdp" / "mod.py").write_text(SOURCE)
    (root / "distributed" / "broken.py").write_text("def (:\n")
    (root / "nn" / "parallel" / "par.py").write_text('raise RuntimeError("a module level raise in parallel")\n')
    (root / "lib").mkdir()
    (root / "lib" / "libtorch_cpu.so").write_bytes(
        b"\0junk\0NCCL watchdog thread terminated with exception: %s\0"
        b"\0_ZN3c1012basic_stringIcEE\0tensor of rank 3 must broadcast with input\0"
        b"\0use_libuv was requested but PyTorch was built without libuv support\0"
    )
    return root


def test_python_sites_templates_conditions(fake_torch):
    entries = A.build_atlas(fake_torch)
    by_line = {e.line: e for e in entries if e.kind == "python"}
    first = by_line[9]
    assert (first.message, first.exception, first.function, first.condition) == (
        "x must be non-negative, got * on rank *",
        "ValueError",
        "top",
        "x < 0",
    )
    assert first.path == "torch/distributed/fsdp/mod.py"
    assert by_line[11].message == "x must not be zero here, please pass a positive value"
    assert by_line[11].condition == "x == 0"  # elif: its own test
    warn = by_line[13]
    assert (warn.via, warn.exception, warn.message, warn.condition) == (
        "warn",
        "FutureWarning",
        "value * is large, this is deprecated",
        "not (x == 0)",
    )
    assert by_line[17].message == "bad world size *, expected an even number of ranks"
    assert by_line[18].exception == "AssertionError" and by_line[18].condition == "not (x != 3)"
    assert by_line[19].via == "log" and by_line[19].message == "slow path taken for * ranks; consider more memory"
    assert by_line[20].message == "module level message constant is resolved"
    assert by_line[25].function == "Holder.method" and by_line[25].condition == "n > 10"
    assert by_line[25].message == "key * is missing from the holder"
    assert by_line[29].exception == "UserWarning" and by_line[29].condition == "not (n)"
    assert 30 not in by_line  # f"{n}": no literal text
    thrown = by_line[35]  # DDP's self._log_and_throw(ValueError, msg): logged, then raised
    assert (thrown.via, thrown.exception, thrown.message, thrown.condition, thrown.function) == (
        "raise",
        "ValueError",
        "device_ids only work with a module on one GPU, but got device_ids *",
        "ids",
        "Wrapper.__init__",
    )
    assert any(e.path == "torch/nn/parallel/par.py" and e.function is None for e in entries)


def test_native_strings_filtered(fake_torch):
    native = [e for e in A.build_atlas(fake_torch) if e.kind == "native"]
    assert [e.message for e in native] == [
        "NCCL watchdog thread terminated with exception: *",
        "use_libuv was requested but PyTorch was built without libuv support",
    ]
    assert all(e.path == "torch/lib/libtorch_cpu.so" and e.line is None for e in native)


def test_cache_written_memoised_and_rebuilt_when_corrupt(fake_torch):
    atlas = A.load_atlas(fake_torch)
    assert A.load_atlas(fake_torch) is atlas  # memoised
    path = A.cache_path()
    assert path.name == f"atlas-{A.torch_version() or 'none'}-{A.interpreter.torch_build() or 'none'}-v{A.FORMAT}.json"
    assert json.loads(path.read_text())["format"] == A.FORMAT
    path.write_text("{not json")
    A._LOADED.clear()
    rebuilt = A.load_atlas(fake_torch)
    assert [e.to_row() for e in rebuilt.entries] == [e.to_row() for e in atlas.entries]
    assert json.loads(path.read_text())["format"] == A.FORMAT  # rewritten
    A._LOADED.clear()
    path.unlink()


def test_unwritable_state_dir_is_not_used(fake_torch, monkeypatch):
    """A read-only state directory (write fails) or one that cannot be made: build, don't cache."""

    def refuse(*_args):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(A, "write_json_atomic", refuse)
    A._LOADED.clear()
    assert len(A.load_atlas(fake_torch)) > 5
    assert not A.cache_path().exists()
    monkeypatch.setattr(A, "state_dir", refuse)
    A._LOADED.clear()
    assert len(A.load_atlas(fake_torch)) > 5
    A._LOADED.clear()


def test_matching_on_small_atlas(fake_torch):
    atlas = A.Atlas(A.build_atlas(fake_torch))
    [m] = A.find_messages("ValueError: x must be non-negative, got -1 on rank 3", atlas)
    assert m.how == "template" and m.entry.line == 9
    assert A.explain(m) == "ValueError raised at torch/distributed/fsdp/mod.py:9 in top when x < 0"
    assert A.find_messages("how do I use fully_shard with bf16?", atlas) == []
    native = A.find_messages(
        "[rank1]:[E1130 12:00:00.1 ProcessGroupNCCL.cpp:1234] NCCL watchdog thread terminated with exception: CUDA error", atlas
    )
    assert native and A.explain(native[0]).startswith("printed by torch's native")


# ---------------------------------------------------------------------------------- installed torch


@pytest.fixture(scope="module")
def real() -> A.Atlas:
    tdir = A.torch_dir()
    if tdir is None:
        pytest.skip("torch is not installed")
    return A.Atlas(A.build_atlas(tdir))


def test_counts(real):
    counts = real.counts()
    print(f"atlas counts: {counts}")
    assert counts["python"] > 500 and counts["native"] > 100


def _drawn(real, n, rng, min_len=0):
    pool = sorted(
        {(e.message, e.path, e.line): e for e in real.entries if e.kind == "python" and len(e.message) >= min_len}.values(),
        key=lambda e: (e.path, e.line),
    )
    return rng.sample(pool, n)


def _traceback(exc: str, message: str) -> str:
    lines = (FAKE_TRACEBACK + f"{exc}: {message}").splitlines()
    return "\n".join(f"[rank0]: {line}" for line in lines)


def test_thirty_random_python_messages(real):
    """Bare, inside a [rank0]-prefixed traceback and wrapped at 72 columns, each finds its site.

    A message raised at several sites is one group of entries; its site counts when it is any entry of
    a returned group (same template), and in the traceback the entry with the pasted class ranks first.
    """
    failures = []
    for e in _drawn(real, 30, random.Random(13)):
        filled = fill(e.message)
        exc = e.exception or "Warning"
        pastes = {"bare": filled, "traceback": _traceback(exc, filled), "wrapped": textwrap.fill(filled, 72)}
        for how, text in pastes.items():
            found = A.find_messages(text, real)
            if (e.path, e.line) not in sites(found):
                failures.append((how, e.message, e.path, e.line, [m.entry.message for m in found]))
            elif how == "traceback" and e.exception:
                group = next(m for m in found if (e.path, e.line) in {(x.path, x.line) for x in m.entries})
                if group.entry.exception != e.exception:
                    failures.append(("exception order", e.message, group.entry.exception))
    assert not failures, "\n".join(map(repr, failures))


def test_truncated_messages(real):
    failures = []
    for e in _drawn(real, 10, random.Random(13), min_len=90):
        filled = fill(e.message)
        cut = filled[: int(len(filled) * 0.6)]
        found = A.find_messages(cut, real)
        if (e.path, e.line) not in sites(found):
            failures.append((cut, e.path, e.line, [m.entry.message for m in found]))
    assert not failures, "\n".join(map(repr, failures))


@pytest.mark.parametrize("question", ORDINARY, ids=lambda q: re.sub(r"\W+", "-", q[:40]))
def test_ordinary_questions_match_nothing(real, question):
    assert A.find_messages(question, real) == []


@pytest.mark.parametrize(
    "message, kind",
    [
        ("Default process group has not been initialized, please make sure to call init_process_group.", "python"),
        (
            "DistributedDataParallel device_ids and output_device arguments only work with single-device/multiple-device "
            "GPU modules or CPU modules, but got device_ids [0], output_device None, and module parameters "
            "{device(type='cpu')}.",
            "python",
        ),
        ("use_libuv was requested but PyTorch was built without libuv support, run with USE_LIBUV=0 to disable it.", "native"),
        (
            (
                "FSDP parameters should be materialized on CPU when enabling CPU offloading. For example, load a CPU "
                'state dict or call module.to_empty(device="cpu").'
            ),
            "python",
        ),
    ],
)
def test_real_messages(real, message, kind):
    question = f"I get this error, what does it mean?\n\n    RuntimeError: {message}\n"
    for text in (message, question):
        found = A.find_messages(text, real)
        assert found and found[0].entry.kind == kind, (text, found)
        assert A.explain(found[0])


def test_log_prefixed_wrapped_native(real):
    text = (
        "[rank1]:[W1130 12:00:00.123 TCPStore.cpp:321] Warning: use_libuv was requested but PyTorch was\n"
        "[rank1]: built without libuv support, run with USE_LIBUV=0 to disable it. (function operator())"
    )
    found = A.find_messages(text, real)
    assert found and "libuv" in found[0].entry.message and found[0].how == "template"
