"""The core: answer a question with sections, live API signatures and verified snippets.

``ask(question, k=3, verify=True) -> Answer`` is what the CLI, the HTTP app and the MCP server call.
It never imports torch on the cached path: routing is pure Python, API signatures come from the
per-torch-version cache (:mod:`fsdp_skill.core.apis`) and verdicts from the runtime's cache; only a cache miss
imports torch (introspection) or launches ranks (verification).

A question that holds Python code (a fenced block, or a pasted script) is checked statically
(:mod:`fsdp_skill.core.check`, never run): the findings go into ``Answer.findings`` and the sections that
explain them come first, as do the sections explaining a pasted error message.  A question without code
routes exactly as if the checker did not exist.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from fsdp_skill.core.atlas.messages import explain_messages
from fsdp_skill.core.code_blocks import code_blocks
from fsdp_skill.core.interpreter import target_python, torch_version
from fsdp_skill.core.knowledge.cards import Knowledge
from fsdp_skill.core.models import Answer, ApiInfo, ErrorInfo, SectionDoc, TopicScore
from fsdp_skill.core.routing.router import Router, get_router, question_parts, setup_facets
from fsdp_skill.core.routing.tokenize import language_of
from fsdp_skill.core.verify.snippets import Progress, Verifier, recorded_here, section_out, snippet_verdicts
from fsdp_skill.errors import QueryError

if TYPE_CHECKING:
    from fsdp_skill.core.check import Finding

MAX_QUESTION_CHARS = 32_768
MAX_K = 20
MAX_APIS = 8
MULTI_PART_CHARS = 160  # shorter questions are answered as one
MULTI_PART_CHARS_ZH = 50  # Chinese says as much in about a third of the characters


# Surrogate code points (what cannot be encoded as UTF-8), and the characters counted as control characters:
# the Unicode categories Cc (control: U+0000-U+001F, U+007F-U+009F) and Co (private use: U+E000-U+F8FF and the
# planes 15 and 16 but their last two code points) except tab, newline and carriage return. One C-level scan
# each instead of a category lookup per character (tests/test_answer_input.py holds them equal to unicodedata's
# categories over every code point).
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")


def validate_question(question: object) -> str:
    """Return the trimmed question or raise QueryError: not text, empty, too long or binary-looking."""
    if isinstance(question, bytes):
        try:
            question = question.decode("utf-8")
        except UnicodeDecodeError:
            raise QueryError("the question is not UTF-8 text") from None
    if not isinstance(question, str):
        raise QueryError(f"the question must be text, not {type(question).__name__}")
    if len(question) > MAX_QUESTION_CHARS:
        raise QueryError(
            f"the question is {len(question):,} characters; the limit is {MAX_QUESTION_CHARS:,} "
            f"(paste the error message and the last frames of a traceback, not a whole log)"
        )
    if not question.isascii() and _SURROGATE.search(question):
        raise QueryError("the question contains unpaired surrogate code points: it is not valid Unicode text")
    if "\x00" in question:
        raise QueryError("the question contains NUL bytes; it looks like binary data, not text")
    control = len(_CONTROL.findall(question))
    if control > max(2, len(question) // 20):
        raise QueryError(f"the question has {control} control characters; it looks like binary data, not text")
    question = question.strip()
    if not question:
        raise QueryError("the question is empty")
    return question


def api_infos(sections: list[SectionDoc]) -> list[ApiInfo]:
    """Live signatures for the APIs the given sections list (first MAX_APIS, in section order)."""
    names = list(dict.fromkeys(a for s in sections for a in s.apis))[:MAX_APIS]
    if not names:
        return []
    from fsdp_skill.core.apis import api_cache

    return api_cache().get(names)


def _cover_parts(
    question: str, ranked: list[tuple[SectionDoc, float]], router: Router, k: int, facets: int | None = None
) -> list[tuple[SectionDoc, float]]:
    """For a long, multi-part question: the best section of each part gets a place in the top ``k``, and a
    question that describes a whole training setup (several facets, at most one question mark) gets the
    best-matching complete recipe first.  ``facets``: ``setup_facets(question)`` when the routing has it."""
    long_enough = MULTI_PART_CHARS_ZH if language_of(question) != "en" else MULTI_PART_CHARS
    if len(question) < long_enough or not ranked:
        return ranked
    top = ranked[0][1]
    picks: list[tuple[SectionDoc, float]] = []
    asks = question.count("?") + question.count("？")
    if (setup_facets(question) if facets is None else facets) >= 3 and asks <= 1:
        recipe = router.best_of_topic(question, "recipes")
        if recipe is not None:
            picks.append((recipe[0], top + 2.0))
    picks.append(ranked[0])  # the whole question's best match stays on top
    parts = question_parts(question)
    if len(parts) >= 2:
        for part in parts:
            best = router.best_section(part)
            if best is not None:
                picks.append((best[0], top))
    chosen: dict[str, tuple[SectionDoc, float]] = {}
    for section, score in picks + ranked:
        chosen.setdefault(section.id, (section, score))
    return list(chosen.values())[: max(k, len(ranked))]


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def code_findings(question: str) -> list[Finding]:
    """What :func:`fsdp_skill.core.check.check_source` finds in the Python code of ``question`` (each
    fenced block, or the whole question when it is a script), block by block; [] when there is no code.
    The checker is imported only when there is code, so a question without code does not load it."""
    blocks = code_blocks(question)
    if not blocks:
        return []
    from fsdp_skill.core.check import check_source

    out: list[Finding] = []
    for i, block in enumerate(blocks, 1):
        out += check_source(block, f"<code block {i}>" if len(blocks) > 1 else "<code block>")
    return out


def _explaining_first(
    ranked: list[tuple[SectionDoc, float]],
    errors: Sequence[ErrorInfo],
    kb: Knowledge,
    k: int,
    findings: Sequence[Finding] = (),
) -> list[tuple[SectionDoc, float]]:
    """The sections that explain a message found in the question first (best message first), then those
    of the mistakes found in its code (errors before warnings before infos), then the rest of the routed
    sections; at most ``k``.  Explaining sections score above every routed one."""
    ordered = sorted(findings, key=lambda f: _SEVERITY_ORDER[f.severity])
    explaining = list(
        dict.fromkeys([sid for e in errors for sid in e.sections] + [f.section for f in ordered if f.section in kb.sections])
    )
    if not explaining:
        return ranked
    top = max((score for _, score in ranked), default=0.0)
    first = [(kb.sections[sid], top + len(explaining) - i) for i, sid in enumerate(explaining)]
    rest = [(s, score) for s, score in ranked if s.id not in explaining]
    return (first + rest)[:k]


LANGUAGES = ("auto", "en", "zh")

# told, before an answer's snippets run, which ones will (cache misses): (snippet id, what the compatibility record says
# for the torch in use, e.g. "your torch 2.14.1: recorded passed on 2.14.1+cu130 (CUDA build), 2026-12-02"; None
# without a torch)
BeforeRun = Callable[[list[tuple[str, str | None]]], None]


def ask(
    question: object,
    k: int = 3,
    verify: bool = True,
    *,
    kb: Knowledge | None = None,
    progress: Progress | None = None,
    with_api: bool = True,
    verifier: Verifier | None = None,
    language: str = "auto",
    before_run: BeforeRun | None = None,
) -> Answer:
    """Answer ``question`` with the ``k`` best sections.

    ``language`` is the reader's: 'auto' takes the question's main language (:func:`language_of`: 'en',
    'zh' or 'mixed'), 'en' / 'zh' override it. ``Answer.language`` carries it; renderers show the Chinese
    bodies for 'zh'. Every section carries both bodies (``text``, ``text_zh``) whatever the language.

    Raises QueryError for bad input (see :func:`validate_question`), ``k`` outside 1..MAX_K or a language
    not in :data:`LANGUAGES`.
    An out-of-scope question is not an error: the Answer has ``abstained=True`` and a ``reason``.
    ``verify=False`` returns snippets as ``unverified`` without touching the harness; otherwise each
    snippet's verdict comes from ``verifier`` (its cache, else a run; see :mod:`fsdp_skill.core.verify.snippets`);
    ``before_run`` hears which snippets are about to run, each with its recorded result for this torch, before they do.
    """
    t0 = time.perf_counter()
    question = validate_question(question)
    if not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise QueryError(f"k must be an integer between 1 and {MAX_K} (got {k!r})")
    if language not in LANGUAGES:
        raise QueryError(f"language must be one of {', '.join(LANGUAGES)} (got {language!r})")
    router = get_router(kb)
    errors = explain_messages(question, router.kb)
    findings = code_findings(question)
    explained = [f for f in findings if f.section in router.kb.sections]
    routing = router.route(question, k=k, in_field=bool(errors or explained))
    answer = Answer(
        query=question,
        language=language_of(question) if language == "auto" else language,
        abstained=routing.abstain_reason is not None,
        reason=routing.abstain_reason,
        torch_version=torch_version(),
        python=target_python(),
        errors=errors,
        findings=findings,
    )
    if not answer.abstained:
        if errors or explained:  # a pasted message or code: the explaining sections first (not parts of a question)
            routing.sections = _explaining_first(routing.sections, errors, router.kb, k, explained)
        else:
            routing.sections = _cover_parts(question, routing.sections, router, k, routing.facets)
        sections = [s for s, _ in routing.sections]
        kb_ = router.kb
        announce = None if before_run is None else (lambda specs: before_run([(s.id, recorded_here(s, kb_)) for s in specs]))
        verdicts = snippet_verdicts(
            [sn for s in sections for sn in s.snippets], verify, verifier=verifier, progress=progress, before_run=announce
        )
        answer.sections = [section_out(s, score, verdicts, router.kb) for s, score in routing.sections]
        answer.topics = [TopicScore(id=t, score=round(v, 4)) for t, v in routing.topics]
        if with_api:
            answer.api = api_infos(sections)
    from fsdp_skill.core.plan.hint import plan_command

    answer.plan = plan_command(question)  # also when no section answers: "will 8B fit on 8 H100s?" names no API
    if answer.abstained and answer.plan:
        answer.reason = f"{answer.reason}; it asks how much memory a run needs, which the plan command below measures"
    answer.elapsed_ms = round((time.perf_counter() - t0) * 1000, 3)
    return answer
