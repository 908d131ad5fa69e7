"""BM25 statistics that rank-bm25 computes, kept as postings and scored in pure Python (no numpy on a question).

rank-bm25's ``BM25Okapi`` builds the index (:meth:`Bm25Index.from_bm25`) and stays the reference: for every
term, :meth:`Bm25Index.idf` equals ``BM25Okapi.idf`` and :meth:`Bm25Index.term_scores` the non-zero entries of
``BM25Okapi.get_scores([term])``, computed with the same operations in the same order, so the floats are
equal, not close (tests/test_router.py compares them on every question of the question sets).

What is stored, per index (:meth:`Bm25Index.to_json`): the documents' lengths in tokens, the two idf values that
need the whole vocabulary (the floor rank-bm25 gives a term found in more than half of the documents,
``epsilon * average idf``, and the largest idf), and per term its postings as one string of ``"doc tf doc tf
..."`` integers (documents ascending).  A term's string is decoded the first time a question uses it: loading
the file parses strings only (a few ms for the cards' ~20,000 terms), and its checks stay cheap.  The idf
of a term comes from its document frequency (the number of its postings), as rank-bm25 computes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rank_bm25 import BM25Okapi


class IndexShapeError(ValueError):
    """A stored index, or one term's postings in it, does not have the shape :class:`Bm25Index` writes."""


@dataclass(eq=False)
class Bm25Index:
    """The BM25 statistics of ``len(doc_len)`` documents: lengths (tokens), postings per term, idf floor and max.

    ``postings[term]`` is ``"doc tf doc tf ..."``: document indices ascending in ``0..len(doc_len)-1``, term
    frequencies >= 1.  Two indexes are equal when their stored statistics are (:meth:`to_json`).
    """

    doc_len: list[int]
    postings: dict[str, str]
    idf_floor: float
    idf_max: float
    _decoded: dict[str, tuple[float, list[tuple[int, float]]]] = field(default_factory=dict, repr=False)
    _norms: dict[tuple[float, float], list[float]] = field(default_factory=dict, repr=False)
    _scored: dict[tuple[float, float, str], list[tuple[int, float]]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_bm25(cls, bm25: BM25Okapi) -> Bm25Index:
        """The statistics of a built ``rank_bm25.BM25Okapi`` (terms in its order: first appearance)."""
        pairs: dict[str, list[str]] = {}
        for doc, freqs in enumerate(bm25.doc_freqs):
            for term, tf in freqs.items():
                pairs.setdefault(term, []).append(f"{doc} {tf}")
        return cls(
            doc_len=list(bm25.doc_len),
            postings={term: " ".join(p) for term, p in pairs.items()},
            idf_floor=bm25.epsilon * bm25.average_idf,
            idf_max=max(bm25.idf.values(), default=1.0),
        )

    def to_json(self) -> dict[str, Any]:
        """The stored form (JSON types only); :meth:`from_json` reads it back."""
        return {"doc_len": self.doc_len, "postings": self.postings, "idf_floor": self.idf_floor, "idf_max": self.idf_max}

    @classmethod
    def from_json(cls, data: object, n_docs: int) -> Bm25Index:
        """The index stored as ``data`` (:meth:`to_json`) for ``n_docs`` documents.

        Raises IndexShapeError when ``data`` is not that shape: ``doc_len`` not ``n_docs`` integers >= 0 (not
        all 0), ``postings`` not a dict of strings, the idf values not finite floats.  One term's postings are
        checked when first decoded (:meth:`term_scores`), which raises IndexShapeError then.
        """
        if not isinstance(data, dict):
            raise IndexShapeError("the index is not an object")
        doc_len, postings = data.get("doc_len"), data.get("postings")
        floor, top = data.get("idf_floor"), data.get("idf_max")
        if not isinstance(doc_len, list) or len(doc_len) != n_docs or not n_docs:
            raise IndexShapeError(f"doc_len is not a list of {n_docs} lengths")
        if not all(type(n) is int and n >= 0 for n in doc_len) or not any(doc_len):
            raise IndexShapeError("doc_len holds a length that is not an integer >= 0, or only zeros")
        if not isinstance(postings, dict) or not all(type(p) is str for p in postings.values()):
            raise IndexShapeError("postings is not an object of strings")
        if type(floor) is not float or type(top) is not float or not (math.isfinite(floor) and math.isfinite(top)):
            raise IndexShapeError("idf_floor and idf_max are not finite numbers")
        return cls(doc_len=doc_len, postings=postings, idf_floor=floor, idf_max=top)

    def __repr__(self) -> str:
        return f"Bm25Index({len(self.doc_len)} documents, {len(self.postings)} terms)"

    def __eq__(self, other: object) -> bool:  # the stored statistics; what was decoded or scored so far does not count
        return isinstance(other, Bm25Index) and self.to_json() == other.to_json()

    def __contains__(self, term: object) -> bool:
        return term in self.postings

    def __len__(self) -> int:
        """Number of distinct terms."""
        return len(self.postings)

    def _decode(self, term: str) -> tuple[float, list[tuple[int, float]]]:
        """(idf, [(doc, tf), ...]) of a known term; raises IndexShapeError for a malformed postings string."""
        hit = self._decoded.get(term)
        if hit is not None:
            return hit
        try:
            numbers = [int(x) for x in self.postings[term].split(" ")]
        except ValueError:
            raise IndexShapeError(f"the postings of {term!r} are not integers") from None
        docs, tfs = numbers[0::2], numbers[1::2]
        n = len(self.doc_len)
        if not docs or len(docs) != len(tfs) or min(tfs) < 1 or docs[0] < 0 or docs[-1] >= n:
            raise IndexShapeError(f"the postings of {term!r} are not (doc, tf) pairs of documents 0..{n - 1}")
        if any(a >= b for a, b in zip(docs, docs[1:], strict=False)):  # each with the next
            raise IndexShapeError(f"the postings of {term!r} are not in document order")
        df = len(docs)
        # rank-bm25's BM25Okapi._calc_idf, for one term
        idf = math.log(n - df + 0.5) - math.log(df + 0.5)
        if idf < 0:
            idf = self.idf_floor
        out = self._decoded[term] = (idf, [(d, float(tf)) for d, tf in zip(docs, tfs, strict=True)])
        return out

    def idf(self, term: str) -> float:
        """rank-bm25's idf of a known term (KeyError for an unknown one)."""
        return self._decode(term)[0]

    def _norm(self, k1: float, b: float) -> list[float]:
        """Per document: ``k1 * (1 - b + b * doc_len / avgdl)``, the denominator's length part."""
        norm = self._norms.get((k1, b))
        if norm is None:
            avgdl = sum(self.doc_len) / len(self.doc_len)
            norm = self._norms[(k1, b)] = [k1 * (1 - b + b * dl / avgdl) for dl in self.doc_len]
        return norm

    def term_scores(self, term: str, k1: float, b: float) -> list[tuple[int, float]]:
        """(document, BM25 score) of each document holding ``term``, in document order: the non-zero entries of
        ``BM25Okapi(k1=k1, b=b).get_scores([term])`` (every other document scores 0); [] for an unknown term.
        Computed once per term and kept.  Raises IndexShapeError when the term's stored postings are malformed."""
        hit = self._scored.get((k1, b, term))
        if hit is not None:
            return hit
        if term not in self.postings:
            return []
        idf, pairs = self._decode(term)
        norm = self._norm(k1, b)
        # rank-bm25's get_scores: idf * (q_freq * (k1 + 1) / (q_freq + k1 * (1 - b + b * doc_len / avgdl)))
        hit = self._scored[(k1, b, term)] = [(d, idf * (tf * (k1 + 1) / (tf + norm[d]))) for d, tf in pairs]
        return hit

    def scores(self, terms: list[str], k1: float, b: float) -> list[float]:
        """BM25 score of every document for ``terms`` (one float per document, 0.0 where no term occurs): the
        terms' scores summed in the order given, as ``BM25Okapi(k1=k1, b=b).get_scores(terms)`` sums them.
        Raises IndexShapeError when a term's stored postings are malformed."""
        total = [0.0] * len(self.doc_len)
        for term in terms:
            for d, s in self.term_scores(term, k1, b):  # the documents without the term would add 0.0
                total[d] += s
        return total
