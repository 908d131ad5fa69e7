"""Pasted error and warning messages: where the installed torch raises them, and which sections explain them.

``explain_messages(question, kb) -> list[ErrorInfo]`` finds the messages of the error atlas
(:mod:`fsdp_skill.core.atlas.lookup`) that a question contains (a traceback, a log line, a quoted message) and
attaches the knowledge sections whose ``errors:`` metadata declares that message.  A section template
(``*`` for any text) also matches the question directly, so a section explains a message even when the
atlas does not catalogue it (e.g. a CUDA-only NCCL message on a CPU build).

The atlas is consulted only when the question looks like it holds a message (:func:`looks_pasted`), so an
ordinary how-to question never loads it.

This is the one mapping from a message to sections: ``verify``'s hints for a failed run are
:func:`explaining_sections` of the run's text, the sections ``ask`` lists for the same text (plus what only
the run's structure shows, :mod:`fsdp_skill.core.verify.hints`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from fsdp_skill.core.knowledge.cards import Knowledge
from fsdp_skill.core.models import ErrorInfo, RaisedAt

_PASTED = re.compile(
    r"Error\b|Exception\b|Warning\b|Traceback|INTERNAL ASSERT|\[rank\d+\]|^\s*File \"|"
    r"^\s*\[?[EWIF]\d{4} |\bwarn(?:ing)?:|[\"'“‘`][^\"'”’`\n]{30,}[\"'”’`]|"
    r"^\s*terminate called |\[enforce fail at |\bNCCL WARN ",
    re.MULTILINE,
)
_WS = re.compile(r"\s+")


def looks_pasted(question: str) -> bool:
    """Whether ``question`` seems to contain an error/warning message or log line (cheap; no atlas)."""
    return bool(_PASTED.search(question))


def _canon(text: str) -> str:
    return _WS.sub("", text)


@functools.lru_cache(maxsize=4096)
def _pieces(template: str) -> tuple[str, ...]:
    """The literal pieces of a template (kept: every question is matched against every declared template)."""
    return tuple(p for p in _canon(template).split("*") if p)


def _in_order(pieces: Sequence[str], text: str) -> bool:
    """Whether ``pieces`` occur in ``text`` in this order without overlapping (``*`` glob semantics)."""
    at = 0
    for piece in pieces:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return bool(pieces)


def template_matches(template: str, text: str) -> bool:
    """Whether a message ``template`` (``*`` = any text, whitespace ignored) occurs in ``text``."""
    return _in_order(_pieces(template), _canon(text))


@functools.lru_cache(maxsize=65536)
def same_message(declared: str, catalogued: str) -> bool:
    """Whether a section's declared template names the atlas template ``catalogued``: the literal pieces
    of one occur, in order, in the other (whitespace ignored)."""
    a, b = _canon(declared), _canon(catalogued)
    return _in_order(_pieces(declared), b.replace("*", "")) or _in_order(_pieces(catalogued), a.replace("*", ""))


# per knowledge (by identity, the object kept alive beside its id): its declared templates with their pieces, and
# per catalogued message the sections naming it; a pasted message is matched against every template on each ask
_DECLARED: dict[int, tuple[Knowledge, list[tuple[str, str, tuple[str, ...]]], dict[str, list[str]]]] = {}


def _memo(kb: Knowledge) -> tuple[Knowledge, list[tuple[str, str, tuple[str, ...]]], dict[str, list[str]]]:
    memo = _DECLARED.get(id(kb))
    if memo is None or memo[0] is not kb:
        _DECLARED.clear()  # one knowledge at a time, as the router keeps it
        memo = _DECLARED[id(kb)] = (kb, [(s.id, t, _pieces(t)) for s in kb.sections.values() for t in s.errors], {})
    return memo


def _declared(kb: Knowledge) -> list[tuple[str, str, tuple[str, ...]]]:
    """(section id, template, its literal pieces) of every ``errors:`` template the sections of ``kb`` declare."""
    return _memo(kb)[1]


def _sections_naming(kb: Knowledge, message: str) -> list[str]:
    """Ids of the sections whose declared template names the catalogued ``message`` (:func:`same_message`), in
    section order (a section once per template that names it), memoised per message."""
    by_message = _memo(kb)[2]
    hit = by_message.get(message)
    if hit is None:
        hit = by_message[message] = [sid for sid, t, _ in _declared(kb) if same_message(t, message)]
    return list(hit)


def explain_messages(question: str, kb: Knowledge, limit: int = 3) -> list[ErrorInfo]:
    """Messages found in ``question``, best first, each located in the installed torch (when the atlas
    holds it) and with the ids of the sections that explain it.  Empty for an ordinary question."""
    if not looks_pasted(question):
        return []
    from fsdp_skill.core.atlas.lookup import explain, find_messages
    from fsdp_skill.core.interpreter import torch_version

    version = torch_version()
    declared = _declared(kb)
    found: list[ErrorInfo] = []
    claimed: set[str] = set()
    for match in find_messages(question, limit=2 * limit):  # more than shown: explained ones go first below
        e = match.entry
        sections = _sections_naming(kb, e.message)
        raised = RaisedAt(path=e.path, line=e.line, function=e.function) if e.kind == "python" else None
        found.append(
            ErrorInfo(
                message=e.message,
                kind=e.kind,
                exception=e.exception,
                raised_at=raised,
                condition=e.condition,
                torch_version=version,
                sections=list(dict.fromkeys(sections)),
                explanation=explain(match),
                how=match.how,
            )
        )
        claimed.update(sections)
    # messages the atlas does not catalogue (or catalogues only in pieces, as a CUDA build's log lines) but a
    # section declares, found verbatim in the question
    direct: dict[str, list[str]] = {}
    canon = _canon(question)  # once, not once per declared template
    for sid, t, pieces in declared:
        if sid not in claimed and _in_order(pieces, canon):
            direct.setdefault(t, []).append(sid)
    declared_found = [
        ErrorInfo(
            message=t,
            kind="declared",
            exception=None,
            raised_at=None,
            condition=None,
            torch_version=version,
            sections=sids,
            explanation="not catalogued from this torch's Python sources or libraries; "
            "matched the message a knowledge section explains",
            how="section",
        )
        for t, sids in sorted(direct.items(), key=lambda kv: -len("".join(_pieces(kv[0]))))
    ]
    # within the limit, every message a section explains comes before one no section explains: a paste whose
    # log lines the atlas knows in pieces (a CUDA build's NCCL lines) must not crowd out the message explained
    explained = [e for e in found if e.sections]
    unexplained = [e for e in found if not e.sections]
    out = (explained + declared_found + unexplained)[:limit]
    return out


def explaining_sections(text: str, kb: Knowledge, limit: int = 3) -> list[str]:
    """Ids of the sections that explain the messages in ``text``, best message first, no duplicates: the
    ``sections`` of :func:`explain_messages` (what ``ask`` lists for ``text`` as a question).  Empty when
    ``text`` holds no message a section declares."""
    return list(dict.fromkeys(sid for e in explain_messages(text, kb, limit=limit) for sid in e.sections))
