"""Knowledge sections that explain a failed or timed-out verdict (the ``hint`` lines of ``verify``)."""

from __future__ import annotations

import re

from fsdp_skill.core.knowledge.cards import Knowledge, load_knowledge
from fsdp_skill.errors import KnowledgeError
from fsdp_skill.runtime.models import Verdict

# (pattern over the verdict's text, knowledge section id).  Checked in order; see hint_for.
HINTS: list[tuple[re.Pattern, str]] = [
    (re.compile(p, re.I), sid)
    for p, sid in [
        (r"Address already in use|EADDRINUSE", "debugging/address-in-use"),
        (r"Expected all tensors to be on the same device", "debugging/fsdp-same-device"),
        (r"Duplicate GPU detected", "debugging/duplicate-gpu"),
        (r"environment variable \w+ expected, but not set", "debugging/master-addr-not-set"),
        (r"Watchdog caught collective operation timeout", "debugging/nccl-watchdog-timeout"),
        (r"waiting for clients|DistStoreError|store based barrier", "debugging/init-timeout"),
        (
            r"Detected mismatch between collectives|Received data size doesn't match expected size"
            r"|Is there a distributed collective mismatch",
            "debugging/distributed-debug-detail",
        ),
        (r"Expected to have finished reduction in the prior iteration", "debugging/ddp-unused-parameters"),
        (r"expected scalar type \w+ but found|must have the same dtype", "debugging/dtype-mismatch"),
        (r"No backend type associated with device type|PREMUL_SUM", "debugging/backend-unsupported-op"),
        (r"terminate called without an active exception|while the interpreter shut down", "init/destroy-process-group"),
    ]
]
_PEER_GONE = re.compile(r"Connection closed by peer|Connection reset by peer", re.I)


def hint_for(verdict: Verdict, kb: Knowledge | None = None) -> list[str]:
    """Knowledge ids that explain a failed or timed-out verdict (empty for other statuses).

    Each id is a section id ('join/uneven-inputs-hang') when the knowledge base holds it, else its topic
    id ('join'); hints whose topic is absent are dropped.  Heuristics: ranks blocked in different places
    or a rank that exited while another waited (a hang, or gloo's "Connection closed by peer") point at
    uneven inputs ('join'); a timeout points at finding the stuck rank; known error messages map to
    the debugging sections in :data:`HINTS`.  Matching as ``ask`` does: messages of the error atlas in
    the ranks' output put the sections that declare them first, and for a hang the calls the ranks were
    blocked in are routed like a question (a rank-0-only full-state-dict gather points at that section).
    """
    if verdict.status not in ("failed", "timeout"):
        return []
    text = "\n".join(
        [verdict.reason or ""]
        + [r.error or "" for r in verdict.ranks]
        + [r.traceback or r.output_tail or "" for r in verdict.ranks]
    )
    if kb is None:
        try:
            kb = load_knowledge()
        except KnowledgeError:
            kb = None
    wanted: list[str] = _matched(verdict, text, kb) if kb is not None else []
    exited_ok = any(r.exit_code == 0 for r in verdict.ranks)
    if verdict.status == "timeout":
        places = {(r.blocked_at or "").split(" (inside")[0] for r in verdict.ranks if r.killed_by_harness}
        if exited_ok or len(places) > 1:
            wanted.append("join/uneven-inputs-hang")
        wanted.append("debugging/find-stuck-rank")
    elif exited_ok and _PEER_GONE.search(text):
        wanted.append("join/uneven-inputs-hang")
    wanted += [sid for pattern, sid in HINTS if pattern.search(text)]
    return _resolve(list(dict.fromkeys(wanted)), kb)


_CALL = re.compile(r"^([\w.]+) at .*?(?: \(inside ([\w.<>]+)\))?$")


def _matched(verdict: Verdict, text: str, kb: Knowledge) -> list[str]:
    """Section ids found the way ``ask`` finds them: declared messages in the output, hung calls routed."""
    from fsdp_skill.core.atlas.messages import explain_messages
    from fsdp_skill.core.routing.router import get_router

    ids = [sid for e in explain_messages(text, kb) for sid in e.sections]
    if verdict.status == "timeout":
        router = get_router(kb)
        calls = [m.group(1).rsplit(".", 1)[-1] for r in verdict.ranks if (m := _CALL.match(r.blocked_at or ""))]
        # ranks waiting in different calls: one of them entered a collective API that the others skipped
        apart = len(set(calls)) > 1 or any(r.exit_code == 0 for r in verdict.ranks)
        for call in dict.fromkeys(calls):
            if call not in _PLAIN_CALLS:  # the API a rank was in, e.g. get_model_state_dict
                query = f"{call} collective hang rank 0 only" if apart else call
                ids += [s.id for s, _ in router.route(query, k=1, in_field=True).sections]
    return ids


# Blocking calls that say nothing about which knowledge applies (the hang heuristics above cover them).
_PLAIN_CALLS = {
    "barrier",
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "send",
    "recv",
    "wait",
    "sleep",
    "join",
    "monitored_barrier",
}


def _resolve(ids: list[str], kb: Knowledge | None) -> list[str]:
    if kb is None:  # hint_for could not load the knowledge base: hints fall back to topic ids
        return list(dict.fromkeys(i.split("/")[0] for i in ids))
    out = []
    for sid in ids:
        topic = sid.split("/")[0]
        if sid in kb.sections:
            out.append(sid)
        elif topic in kb.topics:
            out.append(topic)
    return list(dict.fromkeys(out))
