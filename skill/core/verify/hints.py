"""Knowledge sections that explain a failed or timed-out verdict (the ``hint`` lines of ``verify``).

One mechanism maps a message to the sections that explain it: the cards' ``errors:`` metadata, matched by
:func:`fsdp_skill.core.atlas.messages.explaining_sections` exactly as ``ask`` matches a pasted message. So
the hints for a verdict are the sections ``ask`` finds for the verdict's text (:func:`verdict_text`),
followed by what only the verdict's structure shows (:func:`structural_hints`): ranks blocked in different
places, a timeout, a peer that closed the connection after another rank exited 0, a crash in interpreter
teardown, and the calls the ranks hung in, routed like a question.
"""

from __future__ import annotations

import re

from fsdp_skill.core.knowledge.cards import Knowledge, load_knowledge
from fsdp_skill.errors import KnowledgeError
from fsdp_skill.runtime.models import Verdict

# The sections the structural heuristics name (tests/test_section_ids.py checks that each exists).
UNEVEN_INPUTS = "join/uneven-inputs-hang"
FIND_STUCK_RANK = "debugging/find-stuck-rank"
TEARDOWN = "init/destroy-process-group"

_PEER_GONE = re.compile(r"Connection closed by peer|Connection reset by peer", re.I)
_CALL = re.compile(r"^([\w.]+) at .*?(?: \(inside ([\w.<>]+)\))?$")

# Blocking calls that say nothing about which knowledge applies (the hang heuristics cover them).
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


def verdict_text(verdict: Verdict) -> str:
    """The text of ``verdict`` that messages are looked for in: its reason, then each rank's error, then
    each rank's traceback (or the tail of its output when it has none), one per line."""
    return "\n".join(
        [verdict.reason or ""]
        + [r.error or "" for r in verdict.ranks]
        + [r.traceback or r.output_tail or "" for r in verdict.ranks]
    )


def hint_for(verdict: Verdict, kb: Knowledge | None = None) -> list[str]:
    """Ids of the knowledge sections that explain a failed or timed-out verdict, best first, no duplicates.

    Empty for any other status. The ids are the sections whose ``errors:`` templates occur in
    :func:`verdict_text` (what ``ask`` lists for that text as a question), then :func:`structural_hints`.
    Every id returned is a section of ``kb``: an id the knowledge base lacks is left out, never replaced by
    its topic (the shipped cards hold every id the code names; tests/test_section_ids.py checks it).
    ``kb`` defaults to :func:`load_knowledge`; when the knowledge base cannot be loaded
    (:class:`fsdp_skill.errors.KnowledgeError`, e.g. ``FSDP_SKILL_KNOWLEDGE`` naming a broken folder) there
    are no hints and the verdict is reported without them: hints only point into the knowledge, and every
    command that reads it (``ask``, ``show``) reports the loading error itself.
    """
    if verdict.status not in ("failed", "timeout"):
        return []
    if kb is None:
        try:
            kb = load_knowledge()
        except KnowledgeError:
            return []
    from fsdp_skill.core.atlas.messages import explaining_sections

    text = verdict_text(verdict)
    wanted = explaining_sections(text, kb) + structural_hints(verdict, text, kb)
    return [sid for sid in dict.fromkeys(wanted) if sid in kb.sections]


def structural_hints(verdict: Verdict, text: str, kb: Knowledge) -> list[str]:
    """Section ids that the shape of ``verdict`` points at, whatever its messages say (``text`` is its
    :func:`verdict_text`).

    A timeout points at the hung calls' own sections (an API a rank was blocked in, e.g.
    ``get_model_state_dict``, routed like a question; a rank-0-only gather when the ranks wait in
    different calls), at uneven inputs when the killed ranks were blocked in different places or a rank
    had exited 0, and always at finding the stuck rank. A failure where a rank exited 0 and a peer
    reported a closed or reset connection points at uneven inputs; a rank that finished and crashed while
    the interpreter shut down points at shutting down cleanly.
    """
    ids: list[str] = []
    exited_ok = any(r.exit_code == 0 for r in verdict.ranks)
    if verdict.status == "timeout":
        ids += _routed_calls(verdict, kb)
        places = {(r.blocked_at or "").split(" (inside")[0] for r in verdict.ranks if r.killed_by_harness}
        if exited_ok or len(places) > 1:
            ids.append(UNEVEN_INPUTS)
        ids.append(FIND_STUCK_RANK)
    elif exited_ok and _PEER_GONE.search(text):
        ids.append(UNEVEN_INPUTS)
    if any(r.teardown_crash for r in verdict.ranks):
        ids.append(TEARDOWN)
    return ids


def _routed_calls(verdict: Verdict, kb: Knowledge) -> list[str]:
    """The best section for each API the ranks of a timed-out verdict were blocked in (plain collectives
    and waits excepted), found by routing the call's name like a question."""
    from fsdp_skill.core.routing.router import get_router

    calls = [m.group(1).rsplit(".", 1)[-1] for r in verdict.ranks if (m := _CALL.match(r.blocked_at or ""))]
    wanted = [call for call in dict.fromkeys(calls) if call not in _PLAIN_CALLS]
    if not wanted:
        return []
    router = get_router(kb)
    # ranks waiting in different calls: one of them entered a collective API that the others skipped
    apart = len(set(calls)) > 1 or any(r.exit_code == 0 for r in verdict.ranks)
    ids: list[str] = []
    for call in wanted:
        query = f"{call} collective hang rank 0 only" if apart else call
        ids += [s.id for s, _ in router.route(query, k=1, in_field=True).sections]
    return ids
