"""BM25 question router: question -> ranked sections, topic scores, or an abstention with a reason.

Each ``##`` section of the knowledge is one BM25 document (rank-bm25's ``BM25Okapi``) made of its
title (counted twice), aliases, the card's aliases, the Chinese summary, the API names it lists, its
prose, and the identifiers of its snippets (once each, so boilerplate does not drown the prose).
Questions and documents go through the same tokenizer (:mod:`fsdp_skill.core.routing.tokenize`); a pasted traceback is
first reduced to its exception lines and frame names.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from fsdp_skill.core.knowledge.cards import Knowledge
from fsdp_skill.core.models import SectionDoc
from fsdp_skill.core.routing import scope
from fsdp_skill.core.routing.tokenize import CJK_RUN, TOKENIZER_VERSION, has_cjk, is_traceback, reduce_traceback, tokenize

MAX_QUERY_TOKENS = 400
# Complete recipes (topic 'recipes') repeat the terms of many focused sections; for a question that is
# not about a whole setup their scores are scaled by this.
RECIPE_WEIGHT = 0.8
# Version of how a section becomes a routing document (which fields, how weighted, which anchors):
# part of the on-disk cache key, so bump it with any change to Router._documents.
DOCUMENTS_FORMAT = 3  # 2: the cache file names the section ids it was built for; 3: Chinese bodies indexed
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


def _code_identifiers(code: str) -> list[str]:
    names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*", code))
    return sorted(n for n in names if len(n) > 2)


def _cached_documents(data, ids: list[str]) -> tuple[list[list[str]], list[str], list[list[str]]] | None:
    """(docs, strong, zh_docs) of a router cache file's JSON ``data`` when it was built for the section ``ids``
    and its shape is right (one non-empty list of strings per section, a list of string anchors, one list of
    strings per section for the Chinese bodies, empty where a section has none); else None."""
    if not isinstance(data, dict) or data.get("ids") != ids:
        return None
    docs, strong, zh_docs = data.get("docs"), data.get("strong"), data.get("zh_docs")
    if not isinstance(docs, list) or len(docs) != len(ids) or not isinstance(strong, list):
        return None
    if not all(isinstance(d, list) and d and all(isinstance(t, str) for t in d) for d in docs):
        return None
    if not all(isinstance(t, str) for t in strong):
        return None
    if (
        not isinstance(zh_docs, list)
        or len(zh_docs) != len(ids)
        or not all(isinstance(d, list) and all(isinstance(t, str) for t in d) for d in zh_docs)
    ):
        return None
    return docs, strong, zh_docs


class Router:
    """A BM25 index over a :class:`Knowledge`; build once, call :meth:`route` per question (~1 ms)."""

    def __init__(self, kb: Knowledge, k1: float = 1.2, b: float = 0.75):
        from rank_bm25 import BM25Okapi

        self.kb = kb
        self.sections: list[SectionDoc] = list(kb.sections.values())
        self.docs, strong, zh_docs = self._documents(kb)
        self.strong = frozenset(strong) | scope.STRONG_ANCHORS
        self.bm25 = BM25Okapi(self.docs, k1=k1, b=b)
        # the Chinese bodies, a second index that only Chinese words of a question reach (see route)
        self.zh_bm25 = BM25Okapi(zh_docs, k1=k1, b=b) if any(zh_docs) else None
        self._zh_term_scores: dict[str, np.ndarray] = {}
        self._term_scores: dict[str, np.ndarray] = {}
        self._focus = np.array([RECIPE_WEIGHT if s.topic == "recipes" else 1.0 for s in self.sections])
        self.k1 = k1
        self._spelling: dict[tuple[str, int], list[str]] = {}
        for word in self.bm25.idf:
            if len(word) >= 4 and word.isascii() and word.isalpha():
                self._spelling.setdefault((word[0], len(word)), []).append(word)

    def _documents(self, kb: Knowledge) -> tuple[list[list[str]], list[str], list[list[str]]]:
        """Token lists of the sections, the anchors the cards add, and the Chinese tokens of each section's
        Chinese title and body (empty without one); cached on disk per knowledge digest,
        tokenizer version and :data:`DOCUMENTS_FORMAT` (tokenizing all cards takes a few hundred ms,
        loading them a few).  A cache file is used only when it is for these section ids in this order
        and holds a non-empty token list per section (:func:`_cached_documents`); else it is rebuilt."""
        from fsdp_skill.core.state import read_json, state_dir, write_json_atomic

        name = f"router-{kb.digest}-t{TOKENIZER_VERSION}-d{DOCUMENTS_FORMAT}.json"
        path = state_dir() / name if kb.digest else None
        ids = [s.id for s in self.sections]
        cached = _cached_documents(read_json(path) if path else None, ids)
        if cached is not None:
            return cached
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
        if path:
            try:
                write_json_atomic(path, {"ids": ids, "docs": docs, "strong": sorted(strong), "zh_docs": zh_docs})
            except OSError:
                pass
        return docs, sorted(strong), zh_docs

    def correct(self, tokens: list[str]) -> list[str]:
        """Replace misspelt tokens (``shrad``, ``precison``, ``fullyshrad``) by the closest word the
        knowledge uses: same first letter, length within 2, difflib ratio >= 0.8.  Known tokens,
        short tokens and non-letters are kept as they are."""
        import difflib

        out = []
        for tok in tokens:
            if tok in self.bm25.idf or len(tok) < 5 or not (tok.isascii() and tok.isalpha()):
                out.append(tok)
                continue
            pool = [w for n in range(len(tok) - 2, len(tok) + 3) for w in self._spelling.get((tok[0], n), ())]
            match = difflib.get_close_matches(tok, pool, n=1, cutoff=0.8)
            out.append(match[0] if match else tok)
        return out

    def _attainable(self, tokens: list[str]) -> float:
        """Upper bound of a section's score for these tokens (each term once at full saturation).

        A term no section contains counts as the rarest known term: a question full of words the
        knowledge never uses (SQL, recipes) can reach only a small share of its attainable score.
        """
        rarest = max(self.bm25.idf.values(), default=1.0)
        return sum(max(self.bm25.idf.get(t, rarest), 0.0) * (self.k1 + 1) for t in tokens)

    def scores(self, tokens: list[str]) -> np.ndarray:
        """BM25 score of every section for ``tokens`` (shape: [sections]); equal to
        ``self.bm25.get_scores(tokens)``.  BM25 is a sum over query terms, so each term's score vector is
        computed once by rank-bm25 and kept (rank-bm25 scans every document per term and call)."""
        total = np.zeros(len(self.sections))
        for t in tokens:
            vec = self._term_scores.get(t)
            if vec is None:
                vec = self._term_scores[t] = self.bm25.get_scores([t])
            total += vec
        return total

    def zh_scores(self, tokens: list[str]) -> np.ndarray:
        """BM25 score of every section's Chinese body for the Chinese ``tokens`` (shape: [sections]; zeros when
        no section has a Chinese body or no token is Chinese)."""
        total = np.zeros(len(self.sections))
        if self.zh_bm25 is None:
            return total
        for t in tokens:
            if t not in self.zh_bm25.idf or not has_cjk(t):
                continue
            vec = self._zh_term_scores.get(t)
            if vec is None:
                vec = self._zh_term_scores[t] = self.zh_bm25.get_scores([t])
            total += vec
        return total

    def route(self, question: str, k: int = 3, *, in_field: bool = False) -> Routing:
        """Rank sections for ``question``; returns at most ``k`` sections, or an abstention reason.

        ``in_field=True`` (the question holds a message of torch.distributed) never abstains.
        """
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
        known = [t for t in tokens if t in self.bm25.idf]
        if not known:
            if not in_field:
                routing.abstain_reason = _no_field_reason(question)
            return routing
        # Chinese words of the question also meet the Chinese bodies; weighted low, so they reorder close
        # sections, and never decide alone whether the question is in the field (relative is the main index's)
        scores, zh = self.scores(known), self.zh_scores(tokens)
        if setup_facets(question) < 2 and not _WANTS_SCRIPT.search(question):
            # a focused question wants the focused section, not a long recipe that repeats its terms
            scores, zh = scores * self._focus, zh * self._focus
        routing.relative = float(scores.max()) / max(self._attainable(list(dict.fromkeys(tokens))), 1e-9)
        scores = scores + ZH_BODY_WEIGHT * zh
        order = np.lexsort((np.arange(len(scores)), -scores)).tolist()  # best first, ties by card order
        top = float(scores[order[0]])
        # several general terms together (Join + 卡住 + 训练) need less of a match than one alone (梯度)
        weak_needed = REL_WEAK / min(len(set(weak)), 3) if weak else REL_NONE
        in_field = in_field or bool(strong) or routing.relative >= min(weak_needed, REL_NONE)
        if top <= 0 and in_field:
            return routing
        if top <= 0 or not in_field:
            routing.abstain_reason = _no_field_reason(question)
            return routing
        routing.sections = [(self.sections[i], float(scores[i])) for i in order[:k] if scores[i] > 0]
        best: dict[str, float] = {}
        for i in order:
            if scores[i] <= 0:
                break
            t = self.sections[i].topic
            best.setdefault(t, float(scores[i]))
        # softmax over each topic's best section, temperature = a fifth of the top score
        temp = max(top / 5, 1e-9)
        weights = {t: math.exp((s - top) / temp) for t, s in best.items()}
        total = sum(weights.values())
        routing.topics = sorted(((t, w / total) for t, w in weights.items()), key=lambda x: -x[1])
        return routing

    def best_of_topic(self, question: str, topic: str) -> tuple[SectionDoc, float] | None:
        """The best-scoring section of ``topic`` for ``question`` (no abstention), or None."""
        tokens = [t for t in self.correct(tokenize(question)[:MAX_QUERY_TOKENS]) if t in self.bm25.idf]
        if not tokens:
            return None
        scores = self.scores(tokens)
        best = max((i for i, s in enumerate(self.sections) if s.topic == topic), key=lambda i: scores[i], default=None)
        return None if best is None or scores[best] <= 0 else (self.sections[best], float(scores[best]))


# Facets of a whole training setup; a question naming several of them wants a complete recipe.
_SETUP_FACETS = [
    re.compile(p, re.I)
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
_WANTS_SCRIPT = re.compile(
    r"\b(script|example|recipe|end[ -]to[ -]end|full training|template|boilerplate)\b|示例|完整|脚本|模板", re.I
)
# Where a long question splits into parts (sentences, clauses, list items).
_PART_SPLIT = re.compile(r"(?<=[.?!;。？！；])\s+|\n+|(?:^|\s)(?:\d[.)]|[-*•])\s+|[？。；！]")


def setup_facets(question: str) -> int:
    """How many facets of a whole training setup (precision, checkpoints, accumulation, ...) a question names."""
    return sum(1 for f in _SETUP_FACETS if f.search(question))


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
