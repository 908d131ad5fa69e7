"""BM25 question router: question -> ranked sections, topic scores, or an abstention with a reason.

Each ``##`` section of the knowledge is one BM25 document made of its title (counted twice), aliases, the
card's aliases, the Chinese summary, the API names it lists, its prose, and the identifiers of its snippets
(once each, so boilerplate does not drown the prose).  rank-bm25's ``BM25Okapi`` builds the index; a question
is scored in pure Python from the index's postings (:mod:`fsdp_skill.core.routing.bm25`), with scores equal
to ``BM25Okapi.get_scores``, so answering imports neither numpy nor rank-bm25 once the index is on disk.
Questions and documents go through the same tokenizer (:mod:`fsdp_skill.core.routing.tokenize`); a pasted
traceback is first reduced to its exception lines and frame names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from fsdp_skill.core.knowledge.cards import Knowledge
from fsdp_skill.core.models import SectionDoc
from fsdp_skill.core.routing import scope
from fsdp_skill.core.routing.bm25 import Bm25Index, IndexShapeError
from fsdp_skill.core.routing.tokenize import CJK_RUN, TOKENIZER_VERSION, has_cjk, is_traceback, reduce_traceback, tokenize

if TYPE_CHECKING:
    from pathlib import Path

    from rank_bm25 import BM25Okapi

T = TypeVar("T")

MAX_QUERY_TOKENS = 400
# Complete recipes (topic 'recipes') repeat the terms of many focused sections; for a question that is
# not about a whole setup their scores are scaled by this.
RECIPE_WEIGHT = 0.8
# Version of how a section becomes a routing document (which fields, how weighted, which anchors) and of
# what the on-disk cache holds: part of the cache file's name, so bump it with any change to
# Router._tokenized or to the stored index (Bm25Index.to_json).
DOCUMENTS_FORMAT = 6  # 2: the file names its section ids; 3: Chinese bodies indexed; 4: the BM25 index, not token lists;
# 5: the Chinese index stored as JSON text inside the file, decoded when a question with Chinese first needs it;
# 6: the Chinese index in a file of its own (``...-zh.json``), read when a question with Chinese first needs it
# Relative match (top BM25 score / the best score the question's terms could reach) needed to answer
# a question that names only general ML terms (REL_WEAK) or no term of the field at all (REL_NONE).
REL_WEAK = 0.30
REL_NONE = 0.55
# Weight of the Chinese-body index against the main one for a question's Chinese words (Router.route).
ZH_BODY_WEIGHT = 0.1


@dataclass
class Routing:
    """What the router decided for one question."""

    tokens: list[str]
    sections: list[tuple[SectionDoc, float]] = field(default_factory=list)
    topics: list[tuple[str, float]] = field(default_factory=list)
    abstain_reason: str | None = None
    relative: float = 0.0  # top score / attainable score, 0..1
    anchors: list[str] = field(default_factory=list)
    facets: int | None = None  # setup_facets(question), once the routing computed it


def _code_identifiers(code: str) -> list[str]:
    names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*", code))
    return sorted(n for n in names if len(n) > 2)


def _cached_index(data: object, ids: list[str]) -> tuple[list[str], Bm25Index, bool] | None:
    """(strong, index, has_zh) of a router cache file's JSON ``data`` when it was built for the section ``ids``
    (in this order) and has the shape :meth:`Router._build` writes: a list of string anchors, the main index for
    that many documents (:meth:`Bm25Index.from_json`; each term's postings are checked when first used) and
    whether a Chinese-body index was written beside it (its own file, read when a question first has Chinese
    words: :func:`_zh_index_of`); else None."""
    if not isinstance(data, dict) or data.get("ids") != ids:
        return None
    strong = data.get("strong")
    if not isinstance(strong, list) or not all(isinstance(t, str) for t in strong):
        return None
    zh = data.get("zh_index")
    if not isinstance(zh, bool):
        return None
    try:
        index = Bm25Index.from_json(data.get("index"), len(ids))
    except IndexShapeError:
        return None
    return strong, index, zh


def _zh_index_of(data: object, n: int) -> Bm25Index:
    """The Chinese-body index stored as JSON ``data`` (None: the file is missing or not JSON) for ``n`` documents;
    raises IndexShapeError when it is not an index of that shape."""
    if data is None:
        raise IndexShapeError("the Chinese index file is missing or not JSON")
    return Bm25Index.from_json(data, n)


_UNREAD: Any = object()  # the Chinese index has not been read from its cache file yet


class Router:
    """A BM25 index over a :class:`Knowledge`; build once, call :meth:`route` per question (well under 1 ms).

    The index comes from the on-disk cache (``$FSDP_SKILL_HOME/router-<knowledge digest>-t<tokenizer>-d<format>.json``,
    the Chinese-body index beside it in ``...-zh.json``)
    when one agrees with the knowledge's section ids and has the right shape, else it is built (tokenizing
    every section, a few hundred ms) and written there.  A term whose stored postings turn out malformed when
    a question first uses it makes the router rebuild the index and answer from the rebuilt one.
    """

    def __init__(self, kb: Knowledge, k1: float = 1.2, b: float = 0.75):
        self.kb = kb
        self.sections: list[SectionDoc] = list(kb.sections.values())
        self.k1 = k1
        self.b = b
        self._recipes = [i for i, s in enumerate(self.sections) if s.topic == "recipes"]  # weighted down when focused
        self._tokens: tuple[list[list[str]], list[list[str]]] | None = None
        self._reference: tuple[BM25Okapi, BM25Okapi | None] | None = None
        self._spelling: dict[tuple[str, int], list[str]] | None = None
        self._corrections: dict[str, str] = {}  # misspelt token -> its correction (itself when none is close)
        self._zh_index: Bm25Index | None = None
        cached = _cached_index(self._read_cache(), [s.id for s in self.sections])
        if cached is None:
            self._build()
        else:
            strong, self.index, has_zh = cached
            self._zh_index = _UNREAD if has_zh else None
            self.strong = frozenset(strong) | scope.STRONG_ANCHORS

    # ------------------------------------------------------------------ the index and its cache file
    def _cache_path(self, part: str = "") -> Path | None:
        """The cache file of the main index (``part`` empty) or of the Chinese one (``part`` "-zh")."""
        if not self.kb.digest:
            return None
        from fsdp_skill.core.state import state_dir

        return state_dir() / f"router-{self.kb.digest}-t{TOKENIZER_VERSION}-d{DOCUMENTS_FORMAT}{part}.json"

    def _read_cache(self, part: str = "") -> object:
        path = self._cache_path(part)
        if path is None:
            return None
        from fsdp_skill.core.state import read_json

        return read_json(path)

    def _build(self) -> None:
        """Tokenize the sections, build the indexes with rank-bm25 and write the cache file (best effort)."""
        from rank_bm25 import BM25Okapi

        docs, strong, zh_docs = self._tokenized()
        bm25 = BM25Okapi(docs, k1=self.k1, b=self.b)
        zh_bm25 = BM25Okapi(zh_docs, k1=self.k1, b=self.b) if any(zh_docs) else None
        self._tokens, self._reference = (docs, zh_docs), (bm25, zh_bm25)
        self.index = Bm25Index.from_bm25(bm25)
        # the Chinese bodies, a second index that only Chinese words of a question reach (see route)
        self._zh_index = Bm25Index.from_bm25(zh_bm25) if zh_bm25 is not None else None
        self.strong = frozenset(strong) | scope.STRONG_ANCHORS
        self._spelling = None
        self._corrections = {}
        path, zh_path = self._cache_path(), self._cache_path("-zh")
        if path is not None and zh_path is not None:
            from fsdp_skill.core.state import write_json_atomic

            data = {
                "ids": [s.id for s in self.sections],
                "strong": strong,
                "index": self.index.to_json(),
                "zh_index": self._zh_index is not None,  # written beside it
            }
            try:
                if self._zh_index is not None:  # first: a main file never promises a Chinese file not yet written
                    write_json_atomic(zh_path, self._zh_index.to_json())
                write_json_atomic(path, data)
            except OSError:
                pass

    @property
    def zh_index(self) -> Bm25Index | None:
        """The index of the sections' Chinese bodies (None when no section has one); from its cache file it is
        read on first use (most questions have no Chinese word), and a missing or malformed one rebuilds the
        indexes."""
        if self._zh_index is _UNREAD:
            try:
                self._zh_index = _zh_index_of(self._read_cache("-zh"), len(self.sections))
            except IndexShapeError:
                self._build()
        zh: Bm25Index | None = self._zh_index
        return zh

    def _tokenized(self) -> tuple[list[list[str]], list[str], list[list[str]]]:
        """Token lists of the sections, the anchors the cards add (sorted), and the Chinese tokens of each
        section's Chinese title and body (empty without one)."""
        kb = self.kb
        card_aliases = {c.topic: " ".join(c.aliases) + " " + c.title for c in kb.cards}
        docs: list[list[str]] = []
        zh_docs = [tokenize(_chinese(f"{s.title_zh or ''}\n{s.title_zh or ''}\n{s.text_zh or ''}")) for s in self.sections]
        strong: set[str] = set()
        for s in self.sections:
            code_ids = " ".join(_code_identifiers("\n".join(sn.code for sn in s.snippets)))
            parts = [s.title, s.title, " ".join(s.aliases), card_aliases[s.topic], s.zh or "", " ".join(s.apis), s.text, code_ids]
            docs.append(tokenize("\n".join(parts)))
            for api in s.apis:  # whole compound API names (initprocessgroup, mixedprecisionpolicy) are anchors
                name = api.rsplit(".", 1)[-1]
                whole = re.sub(r"[._-]", "", name).lower()
                if len(whole) > 6 and ("_" in name.strip("_") or name[:1].isupper() and not name.isupper()):
                    strong.add(whole)
        return docs, sorted(strong), zh_docs

    @property
    def docs(self) -> list[list[str]]:
        """The sections' token lists (what rank-bm25 indexed); tokenized again when the index came from the cache."""
        if self._tokens is None:
            docs, _, zh_docs = self._tokenized()
            self._tokens = (docs, zh_docs)
        return self._tokens[0]

    @property
    def bm25(self) -> BM25Okapi:
        """rank-bm25's index of :attr:`docs`: the reference the pure-Python scores equal (built on first use)."""
        return self._references()[0]

    @property
    def zh_bm25(self) -> BM25Okapi | None:
        """rank-bm25's index of the Chinese bodies (None when no section has one), the reference of :meth:`zh_scores`."""
        return self._references()[1]

    def _references(self) -> tuple[BM25Okapi, BM25Okapi | None]:
        if self._reference is None:
            from rank_bm25 import BM25Okapi

            docs = self.docs
            assert self._tokens is not None  # set by docs
            zh_docs = self._tokens[1]
            zh = BM25Okapi(zh_docs, k1=self.k1, b=self.b) if any(zh_docs) else None
            self._reference = (BM25Okapi(docs, k1=self.k1, b=self.b), zh)
        return self._reference

    def _healing(self, answer: Callable[[], T]) -> T:
        """``answer()``, again on a rebuilt index if a term's stored postings are malformed (IndexShapeError)."""
        try:
            return answer()
        except IndexShapeError:
            self._build()
            return answer()

    # ------------------------------------------------------------------ questions
    def correct(self, tokens: list[str]) -> list[str]:
        """Replace misspelt tokens (``shrad``, ``precison``, ``fullyshrad``) by the closest word the
        knowledge uses: same first letter, length within 2, difflib ratio >= 0.8.  Known tokens,
        short tokens and non-letters are kept as they are."""
        out = []
        for tok in tokens:
            if tok in self.index or len(tok) < 5 or not (tok.isascii() and tok.isalpha()):
                out.append(tok)
                continue
            fixed = self._corrections.get(tok)
            if fixed is None:
                import difflib

                spelling = self._words_by_shape()
                pool = [w for n in range(len(tok) - 2, len(tok) + 3) for w in spelling.get((tok[0], n), ())]
                match = difflib.get_close_matches(tok, pool, n=1, cutoff=0.8)
                fixed = self._corrections[tok] = match[0] if match else tok
            out.append(fixed)
        return out

    def _words_by_shape(self) -> dict[tuple[str, int], list[str]]:
        """The index's words of 4+ ASCII letters by (first letter, length), built on the first misspelling."""
        if self._spelling is None:
            self._spelling = {}
            for word in self.index.postings:
                if len(word) >= 4 and word.isascii() and word.isalpha():
                    self._spelling.setdefault((word[0], len(word)), []).append(word)
        return self._spelling

    def _attainable(self, tokens: list[str]) -> float:
        """Upper bound of a section's score for these tokens (each term once at full saturation).

        A term no section contains counts as the rarest known term: a question full of words the
        knowledge never uses (SQL, recipes) can reach only a small share of its attainable score.
        """
        rarest = self.index.idf_max
        return sum(max(self.index.idf(t) if t in self.index else rarest, 0.0) * (self.k1 + 1) for t in tokens)

    def scores(self, tokens: list[str]) -> list[float]:
        """BM25 score of every section for ``tokens`` (one float per section, in card order); equal to
        ``self.bm25.get_scores(tokens)``, computed in pure Python from the index, each term's scores once."""
        return self._healing(lambda: self._scores(tokens))

    def _scores(self, tokens: list[str]) -> list[float]:
        return self.index.scores(tokens, self.k1, self.b)

    def zh_scores(self, tokens: list[str]) -> list[float]:
        """BM25 score of every section's Chinese body for the Chinese ``tokens`` (one float per section; zeros when
        no section has a Chinese body or no token is Chinese); equal to ``self.zh_bm25.get_scores`` of those."""
        return self._healing(lambda: self._zh_scores(tokens))

    def _zh_scores(self, tokens: list[str]) -> list[float]:
        if self.zh_index is None:
            return [0.0] * len(self.sections)
        return self.zh_index.scores([t for t in tokens if t in self.zh_index and has_cjk(t)], self.k1, self.b)

    def route(self, question: str, k: int = 3, *, in_field: bool = False) -> Routing:
        """Rank sections for ``question``; returns at most ``k`` sections, or an abstention reason.

        ``in_field=True`` (the question holds a message of torch.distributed) never abstains.
        """
        return self._healing(lambda: self._route(question, k, in_field))

    def _route(self, question: str, k: int, in_field: bool) -> Routing:
        text = reduce_traceback(question) if is_traceback(question) else question
        tokens = self.correct(tokenize(text)[:MAX_QUERY_TOKENS])
        routing = Routing(tokens=tokens)
        strong, weak = scope.anchor_hits(tokens, question, self.strong)
        specific = [a for a in strong if a not in scope.GENERIC_ANCHORS]
        reason = None if in_field else scope.out_of_scope_reason(text, field_terms=bool(specific))
        if reason:
            routing.abstain_reason = reason
            return routing
        routing.anchors = strong + weak
        known = [t for t in tokens if t in self.index]
        if not known:
            if not in_field:
                routing.abstain_reason = _no_field_reason(question)
            return routing
        scores, zh, routing.facets = self._weighted(question, tokens, known)
        routing.relative = max(scores) / max(self._attainable(list(dict.fromkeys(tokens))), 1e-9)
        if zh is not None:
            scores = [s + ZH_BODY_WEIGHT * z for s, z in zip(scores, zh, strict=True)]
        # the sections that score at all, best first, ties in card order (a stable sort keeps it in reverse)
        order = sorted((i for i, s in enumerate(scores) if s > 0), key=scores.__getitem__, reverse=True)
        top = scores[order[0]] if order else max(scores)
        # several general terms together (Join + 卡住 + 训练) need less of a match than one alone (梯度)
        weak_needed = REL_WEAK / min(len(set(weak)), 3) if weak else REL_NONE
        in_field = in_field or bool(strong) or routing.relative >= min(weak_needed, REL_NONE)
        if top <= 0 and in_field:
            return routing
        if top <= 0 or not in_field:
            routing.abstain_reason = _no_field_reason(question)
            return routing
        routing.sections = [(self.sections[i], scores[i]) for i in order[:k]]
        best: dict[str, float] = {}
        for i in order:
            best.setdefault(self.sections[i].topic, scores[i])
        # softmax over each topic's best section, temperature = a fifth of the top score
        temp = max(top / 5, 1e-9)
        weights = {t: math.exp((s - top) / temp) for t, s in best.items()}
        total = sum(weights.values())
        routing.topics = sorted(((t, w / total) for t, w in weights.items()), key=lambda x: -x[1])
        return routing

    def _weighted(self, question: str, tokens: list[str], known: list[str]) -> tuple[list[float], list[float] | None, int]:
        """(main scores, Chinese scores or None, setup facets) of a question's ``tokens`` (``known``: those in the
        main index), recipes weighted down for a focused question; one float per section."""
        # Chinese words of the question also meet the Chinese bodies; weighted low, so they reorder close
        # sections, and never decide alone whether the question is in the field (relative is the main index's)
        scores = self._scores(known)
        # no Chinese term: every Chinese score is 0.0 and adding 0.1 * 0.0 changes no score, so skip those lists
        zh = self._zh_scores(tokens) if any(map(has_cjk, tokens)) and self.zh_index is not None else None
        facets = setup_facets(question)
        if facets < 2 and not wants_script(question):
            # a focused question wants the focused section, not a long recipe that repeats its terms (x * 1.0 == x:
            # only the recipes' scores change)
            for i in self._recipes:
                scores[i] *= RECIPE_WEIGHT
                if zh is not None:
                    zh[i] *= RECIPE_WEIGHT
        return scores, zh, facets

    def best_section(self, question: str) -> tuple[SectionDoc, float] | None:
        """The best section for ``question`` and its score, as ``route(question, k=1, in_field=True)`` gives it
        (None where that gives none), without what only a whole answer needs (abstention, anchors, topics): what
        :func:`fsdp_skill.core.answer` asks for each part of a long question."""
        return self._healing(lambda: self._best_section(question))

    def _best_section(self, question: str) -> tuple[SectionDoc, float] | None:
        text = reduce_traceback(question) if is_traceback(question) else question
        tokens = self.correct(tokenize(text)[:MAX_QUERY_TOKENS])
        known = [t for t in tokens if t in self.index]
        if not known:
            return None
        scores, zh, _ = self._weighted(question, tokens, known)
        if zh is not None:
            scores = [s + ZH_BODY_WEIGHT * z for s, z in zip(scores, zh, strict=True)]
        best = max(range(len(scores)), key=scores.__getitem__)  # the first of equal scores: route's stable order
        return (self.sections[best], scores[best]) if scores[best] > 0 else None

    def best_of_topic(self, question: str, topic: str) -> tuple[SectionDoc, float] | None:
        """The best-scoring section of ``topic`` for ``question`` (no abstention), or None."""
        return self._healing(lambda: self._best_of_topic(question, topic))

    def _best_of_topic(self, question: str, topic: str) -> tuple[SectionDoc, float] | None:
        tokens = [t for t in self.correct(tokenize(question)[:MAX_QUERY_TOKENS]) if t in self.index]
        if not tokens:
            return None
        scores = self._scores(tokens)
        best = max((i for i, s in enumerate(self.sections) if s.topic == topic), key=lambda i: scores[i], default=None)
        return None if best is None or scores[best] <= 0 else (self.sections[best], scores[best])


# Facets of a whole training setup; a question naming several of them wants a complete recipe.  Lowercase, searched
# in the lowercased question, as the patterns of :mod:`scope` are.
_SETUP_FACETS = [
    re.compile(p)
    for p in (
        r"bf16|bfloat16|fp16|mixed[ -]precision|混合精度|半精度",
        r"checkpoint|save|resum|检查点|保存|断点|续训",
        r"accumulat|micro[ -]?batch|梯度累积",
        r"clip|裁剪",
        r"\d+\s*(?:nodes?|machines?|hosts?)|multi[ -]?node|nodes? x|台机器|多机|节点",
        r"\d+\s*(?:gpus?|cards?)|张卡|卡\b|多卡",
        r"hsdp|hybrid|tensor[ -]parallel|\btp\b|2-?d mesh|张量并行|混合分片",
        r"(?:training|train) (?:script|loop|setup|pipeline)|end[ -]to[ -]end|from scratch|完整|训练脚本",
    )
]
# A question asking for a whole script or example.
_WANTS_SCRIPT = re.compile(r"\b(script|example|recipe|end[ -]to[ -]end|full training|template|boilerplate)\b|示例|完整|脚本|模板")
# Where a long question splits into parts (sentences, clauses, list items).
_PART_SPLIT = re.compile(r"(?<=[.?!;。？！；])\s+|\n+|(?:^|\s)(?:\d[.)]|[-*•])\s+|[？。；！]")


def setup_facets(question: str) -> int:
    """How many facets of a whole training setup (precision, checkpoints, accumulation, ...) a question names."""
    low = scope.lowered(question)
    return sum(1 for f in _SETUP_FACETS if f.search(low))


def wants_script(question: str) -> bool:
    """Whether a question asks for a whole script or example."""
    return _WANTS_SCRIPT.search(scope.lowered(question)) is not None


def question_parts(question: str, min_tokens: int = 4) -> list[str]:
    """The parts of a multi-part question that carry at least ``min_tokens`` tokens each (may be one)."""
    parts = [p.strip() for p in _PART_SPLIT.split(question) if p and p.strip()]
    return [p for p in parts if len(tokenize(p)) >= min_tokens]


def _no_field_reason(question: str) -> str:
    return (
        "the question names no term of PyTorch distributed training (FSDP, sharding, mixed precision, "
        "offload, Join, backends, process groups, checkpoints) and no knowledge section matches it well"
    )


def _chinese(text: str | None) -> str:
    """The Chinese runs of a Chinese body, for the index: its Latin words (API names, code) repeat the English
    body's, and indexing them twice would tilt English questions toward sections with long Chinese bodies."""
    return " ".join(CJK_RUN.findall(text or ""))


_ROUTERS: dict[int, Router] = {}


def get_router(kb: Knowledge | None = None) -> Router:
    """The router for ``kb`` (default: the installed knowledge), built once per process."""
    if kb is None:
        from fsdp_skill.core.knowledge.cards import load_knowledge

        kb = load_knowledge()
    router = _ROUTERS.get(id(kb))
    if router is None or router.kb is not kb:
        _ROUTERS.clear()
        router = _ROUTERS[id(kb)] = Router(kb)
    return router
