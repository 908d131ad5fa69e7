"""``verify``'s hints and ``ask`` find the same sections for the same message: one mechanism (the cards'
``errors:`` templates), plus the hints that only a verdict's structure gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fsdp_skill.core.answer import ask
from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.core.verify import hints
from fsdp_skill.core.verify.hints import hint_for, verdict_text
from fsdp_skill.runtime.models import RankResult, Verdict

KB = load_knowledge()

# Each message the regex table of hints.py (HINTS, now gone) recognised, as torch, NCCL or the C++ runtime
# print it, with the section that table pointed at. The cards' errors: metadata must find the same.
FORMER_HINTS = [
    (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
        "debugging/address-in-use",
    ),
    (
        "RuntimeError: [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).",
        "debugging/address-in-use",
    ),
    (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
        "debugging/fsdp-same-device",
    ),
    (
        "NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000\n"
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage",
        "debugging/duplicate-gpu",
    ),
    (
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable MASTER_ADDR "
        "expected, but not set",
        "debugging/master-addr-not-set",
    ),
    (
        "[rank0]:[E ProcessGroupNCCL.cpp:683] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=78, "
        "OpType=ALLREDUCE, NumelIn=80, NumelOut=80, Timeout(ms)=600000) ran for 600096 milliseconds before timing out.",
        "debugging/nccl-watchdog-timeout",
    ),
    (
        "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/2 clients joined.",
        "debugging/init-timeout",
    ),
    (
        "torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on rank 3, for key: "
        "store_based_barrier_key:1 (world_size=8, num_workers_joined=7, timeout=0:30:00 error=wait timeout after 1800000ms)",
        "debugging/init-timeout",
    ),
    (
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=0, OpType=ALLREDUCE, TensorShape=[10]), but Rank 1 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=0, OpType=ALLREDUCE, TensorShape=[20]).",
        "debugging/distributed-debug-detail",
    ),
    (
        "gloo::EnforceNotMet: [enforce fail at pair.cc:456] 8 vs 4. Received data size doesn't match expected size.",
        "debugging/distributed-debug-detail",
    ),
    (
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error "
        "indicates that your module has parameters that were not used in producing loss.",
        "debugging/ddp-unused-parameters",
    ),
    ("RuntimeError: expected scalar type Float but found BFloat16", "debugging/dtype-mismatch"),
    ("RuntimeError: mat1 and mat2 must have the same dtype, but got Float and BFloat16", "debugging/dtype-mismatch"),
    ("RuntimeError: No backend type associated with device type cpu", "debugging/backend-unsupported-op"),
    ("RuntimeError: Cannot use ReduceOp.PREMUL_SUM with Gloo", "debugging/backend-unsupported-op"),
    ("terminate called without an active exception", "init/destroy-process-group"),
]
IDS = [sid + ":" + message[:30] for message, sid in FORMER_HINTS]


def _failed(message: str) -> Verdict:
    """A run where rank 0 failed with ``message`` (in its traceback) and rank 1 was still running."""
    tb = f'Traceback (most recent call last):\n  File "/u/train.py", line 12, in <module>\n    step()\n{message}\n'
    return Verdict(
        status="failed",
        reason=f"rank 0 exited with code 1: {message.splitlines()[-1]}",
        ranks=[RankResult(rank=0, exit_code=1, traceback=tb), RankResult(rank=1, exit_code=-15)],
    )


def _asked(text: str) -> list[str]:
    """The sections ``ask`` lists as explaining the messages of ``text``, in its order."""
    return list(dict.fromkeys(sid for e in ask(text, k=3, verify=False).errors for sid in e.sections))


@pytest.mark.torch
@pytest.mark.parametrize("message, section", FORMER_HINTS, ids=IDS)
def test_verify_hints_are_what_ask_finds_for_the_same_text(message, section):
    verdict = _failed(message)
    found = hint_for(verdict, KB)
    assert found == _asked(verdict_text(verdict)), verdict_text(verdict)
    assert found[0] == section, found
    assert section in _asked(message)  # the message alone, pasted as a question


@pytest.mark.torch
def test_a_timeout_adds_the_structural_hints_after_the_messages():
    watchdog, section = FORMER_HINTS[5]
    verdict = Verdict(
        status="timeout",
        reason="timed out after 60 s",
        ranks=[
            RankResult(rank=0, killed_by_harness=True, blocked_at="all_reduce at train.py:40", output_tail=watchdog),
            RankResult(rank=1, exit_code=0),
        ],
    )
    assert _asked(verdict_text(verdict)) == [section]
    assert hint_for(verdict, KB) == [section, hints.UNEVEN_INPUTS, hints.FIND_STUCK_RANK]


@pytest.mark.torch
def test_a_teardown_crash_points_at_shutting_down_cleanly():
    verdict = Verdict(
        status="failed",
        reason="rank 1 finished its script (exit 0), then was killed by SIGABRT while the interpreter shut down",
        ranks=[
            RankResult(rank=0, exit_code=0),
            RankResult(rank=1, signal="SIGABRT", teardown_crash=True, output_tail="work done"),
        ],
    )
    assert _asked(verdict_text(verdict)) == []  # the reason is ours, not a message of torch
    assert hint_for(verdict, KB) == [hints.TEARDOWN]


def test_a_peer_that_closed_the_connection_after_another_rank_finished_points_at_uneven_inputs():
    message = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:25231"
    verdict = _failed(message)
    verdict.ranks[1] = RankResult(rank=1, exit_code=0)
    assert hint_for(verdict, KB) == ["debugging/gloo-connection-closed-by-peer", hints.UNEVEN_INPUTS]
    alone = _failed(message)  # no rank finished: only the message's section
    assert hint_for(alone, KB) == ["debugging/gloo-connection-closed-by-peer"]


def test_an_id_the_knowledge_lacks_is_left_out_not_replaced_by_its_topic(tmp_path):
    """With a knowledge folder holding only the join card, the hang hint stays and find-stuck-rank (debugging)
    is dropped: no 'debugging' topic id appears in its place."""
    shutil.copy(Path(KB.directory) / "join.md", tmp_path / "join.md")
    small = load_knowledge(tmp_path)
    hang = Verdict(
        status="timeout",
        ranks=[RankResult(rank=0, killed_by_harness=True, blocked_at="all_reduce at s.py:4"), RankResult(rank=1, exit_code=0)],
    )
    assert hint_for(hang, small) == [hints.UNEVEN_INPUTS]
    assert hint_for(hang, KB) == [hints.UNEVEN_INPUTS, hints.FIND_STUCK_RANK]


def test_no_hints_when_the_knowledge_base_cannot_load(tmp_path, monkeypatch):
    monkeypatch.setenv("FSDP_SKILL_KNOWLEDGE", str(tmp_path / "missing"))
    hang = Verdict(status="timeout", ranks=[RankResult(rank=0, killed_by_harness=True, blocked_at="barrier at s.py:9")])
    assert hint_for(hang) == []
    monkeypatch.delenv("FSDP_SKILL_KNOWLEDGE")
    assert hint_for(hang) == [hints.FIND_STUCK_RANK]
