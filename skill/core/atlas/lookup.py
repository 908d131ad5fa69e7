"""Error atlas: where in the *installed* torch a pasted error, warning or log message comes from.

Built once per torch version, without importing torch (:mod:`fsdp_skill.core.atlas.build`):

* **python** entries: every ``raise X(...)``, ``assert cond, msg``, ``warnings.warn(...)``,
  ``logger.warning/error/exception/critical(...)`` and ``torch._check*(cond, lambda: msg)`` under
  ``torch/distributed/``, ``torch/nn/parallel/`` and a few files FSDP users meet outside them
  (``PY_DIRS``), parsed with :mod:`ast`.
* **native** entries: human-readable strings from the ``.rodata`` of torch's shared libraries
  (``libtorch_cpu.so``, ``libtorch_python.so``, ``libc10.so``, CUDA/NCCL ones when present) that
  mention distributed words (NCCL, Gloo, c10d, ProcessGroup, store, rendezvous, watchdog, ...).

A message is a *template*: literal text with ``*`` where the source formats a value in (f-string
holes, ``%s``-style fields, ``.format`` fields, C++ ``{}``/``%d``).  A literal ``*`` in a message is
also read as a wildcard, which only makes matching a little more permissive.

The catalogue is cached as JSON in ``state_dir()/atlas-<torch version>-v<FORMAT>.json``;
:func:`load_atlas` reads (or builds and writes) it once per process and :func:`find_messages` matches a
whole user question against it through an inverted index of rare template words and word pairs (the
cheap gate: a text sharing no indexed key with any template costs one tokenisation), so only a handful of
templates are tried with a substring test and a lazily compiled regex.  Matching compares text
with all whitespace removed, after stripping per-line log prefixes (``[rank1]:``, ``[W1130 12:00:00 ProcessGroupNCCL.cpp:12] ``), so hard-wrapped
and prefixed pastes match too.  This module raises nothing on purpose: a missing torch gives an empty
atlas, an unreadable cache is rebuilt and an unwritable state directory is simply not used.
"""

from __future__ import annotations

import gc
import itertools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypedDict

from fsdp_skill.core import interpreter
from fsdp_skill.core.atlas.build import (  # noqa: F401  (re-exported)
    FORMAT,
    MIN_LITERAL,
    PY_DIRS,
    Entry,
    Match,
    native_entries,
    python_entries,
)
from fsdp_skill.core.interpreter import torch_version
from fsdp_skill.core.state import read_json, state_dir, write_json_atomic

# ------------------------------------------------------------------------------- index keys

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{3,}")
_TOKEN = re.compile(r"[a-z0-9_]+")
_DF_MAX = 25  # a key in more templates than this is too common to index
_MIN_KEYS = 2


def _text_keys(text: str) -> set[str]:
    """Index keys of a text: its words of 4+ characters and its word pairs ("invalid op"), lower-case.

    Word pairs let a truncated paste made of common words still find its template.
    """
    keys = {w.lower() for w in _WORD.findall(text)}
    tokens = _TOKEN.findall(text.lower())
    keys.update(map(" ".join, itertools.pairwise(tokens)))
    return keys


def _template_keys(template: str) -> set[str]:
    """Keys of a template: as :func:`_text_keys` for each literal piece (no pair spans a ``*``)."""
    keys: set[str] = set()
    for piece in template.split("*"):
        keys |= _text_keys(piece)
    return keys


def build_atlas(torch_dir: Path) -> list[Entry]:
    """Every python and native message site of the torch package at ``torch_dir`` (never imports it).

    ``torch_dir`` is the directory of the ``torch`` package (``.../site-packages/torch``).  Takes a few
    seconds (mostly ``ast.parse``); returns an empty list when the directory holds nothing to parse.
    """
    torch_dir = Path(torch_dir)
    return python_entries(torch_dir) + native_entries(torch_dir)


# ------------------------------------------------------------------------------- matching

_PREFIX = re.compile(r"(?m)^[ \t]*(?:\[[A-Za-z_]*\d+\]:[ \t]*|\[?[IWEF]\d{4} [\d:.]+(?: \d+)? [\w.\-]+:\d+\][ \t]*|\d+: )+")
_WS = re.compile(r"\s+")
_EXC = re.compile(r"\b(\w+(?:Error|Exception|Warning|Interrupt|Exit))\b")
# fuzzy matching runs only for texts that look pasted: error words, log prefixes, a long quoted span, or
# no question mark and no question word in front (a bare message)
_PASTED = re.compile(
    r"Error|Exception|Warning|Traceback|INTERNAL ASSERT|\[rank\d|^\s*File \"|"
    r"[\"'`“‘][^\"'`”’\n]{20,}[\"'`”’]",
    re.MULTILINE,
)
_QUESTION = re.compile(r"^\s*(how|what|why|when|where|which|can|could|should|is|are|does|do|i|my)\b|\?", re.IGNORECASE)
_HOLE_RE = ".{0,400}?"
HEAD_CHARS, TAIL_CHARS = 4_000, 12_000  # of a longer text only its start and end are looked at
_CANDIDATES = 64
_FUZZY_CANDIDATES = 8
_CHUNK = 8


class AtlasDocument(TypedDict):
    """The cache file's JSON object (:meth:`Atlas.to_json`)."""

    format: int  # FORMAT of the builder that wrote it
    torch: str | None  # torch version the entries come from
    entries: list[list[str | int | None]]  # Entry.to_row() of each entry
    index: list[list[str] | str]  # [keys, postings]: keys, and one text "gid,gid gid ..." of their group ids


class _Group:
    """All sites of one template plus its lazily compiled matcher."""

    __slots__ = ("_regex", "entries", "longest", "pieces", "total")

    def __init__(self, entries: list[Entry]):
        self.entries = entries
        self.pieces: list[str] | None = None  # computed on first use: loading stays cheap
        self._regex: re.Pattern[str] | None = None

    def _prepare(self) -> list[str]:
        """Computes (and returns) ``pieces``, the template's whitespace-free literal runs, with ``total`` and ``longest``."""
        pieces = [p for p in (_WS.sub("", s) for s in self.entries[0].message.split("*")) if p]
        self.pieces = pieces
        self.total = sum(map(len, pieces))
        self.longest = max(pieces, key=len) if pieces else ""
        return pieces

    def exact(self, canon: str) -> bool:
        """Whether whitespace-free ``canon`` contains the whole template (holes match up to 400 chars)."""
        pieces = self.pieces if self.pieces is not None else self._prepare()
        if not pieces or self.longest not in canon:
            return False
        if len(pieces) == 1:
            return True
        if self._regex is None:
            self._regex = re.compile(_HOLE_RE.join(map(re.escape, pieces)))
        return self._regex.search(canon) is not None

    def partial(self, canon: str) -> int:
        """Literal characters of the template found in ``canon`` as contiguous runs of >= 2 chunks."""
        pieces = self.pieces if self.pieces is not None else self._prepare()
        found = 0
        for piece in pieces:
            n = len(piece) // _CHUNK
            best, i = 0, 0
            while i < n:
                j = i
                while j < n and piece[i * _CHUNK : (j + 1) * _CHUNK] in canon:
                    j += 1
                if j > i:
                    end = (j + 1) * _CHUNK  # extend past the last whole chunk one char at a time
                    while end > j * _CHUNK and piece[i * _CHUNK : end] not in canon:
                        end -= 1
                    best = max(best, end - i * _CHUNK)
                    i = j
                else:
                    i += 1
            if best >= 2 * _CHUNK:
                found += best
        return found


class Atlas:
    """A loaded catalogue: entries, template groups and the inverted word index."""

    def __init__(self, entries: Iterable[Entry], index: dict[str, list[int] | str] | None = None):
        """Group ``entries`` by template; take ``index`` (key -> group ids, or their text "3,17" as the
        cache stores them, parsed on first use) or build it from the templates."""
        self.entries = list(entries)
        by_template: dict[str, list[Entry]] = {}
        for e in self.entries:
            by_template.setdefault("".join(e.message.split()), []).append(e)
        self.groups = [_Group(v) for v in by_template.values()]
        self.index = self._index(self.groups) if index is None else index

    def postings(self, key: str) -> list[int]:
        """Ids of the groups indexed under ``key`` (empty when none; ids out of range are dropped)."""
        gids = self.index.get(key)
        if gids is None or isinstance(gids, list):
            return gids or []
        try:
            parsed = [int(g) for g in gids.split(",")]
        except ValueError:
            parsed = []
        parsed = self.index[key] = [g for g in parsed if 0 <= g < len(self.groups)]
        return parsed

    @staticmethod
    def _index(groups: list[_Group]) -> dict[str, list[int]]:
        """key -> group ids; a template is indexed under its keys held by at most ``_DF_MAX`` templates
        (under its rarest two when it has fewer than two such keys)."""
        keys_of = [_template_keys(g.entries[0].message) for g in groups]
        df: dict[str, int] = {}
        for ks in keys_of:
            for k in ks:
                df[k] = df.get(k, 0) + 1
        index: dict[str, list[int]] = {}
        for gid, ks in enumerate(keys_of):
            ranked = sorted(ks, key=lambda k: (df[k], k))
            keys = [k for k in ranked if df[k] <= _DF_MAX]
            for k in keys if len(keys) >= _MIN_KEYS else ranked[:_MIN_KEYS]:
                index.setdefault(k, []).append(gid)
        return index

    def to_json(self) -> AtlasDocument:
        """The cache document: format, torch version, entry rows and the index as ``[keys, postings]``
        where postings is one text "gid,gid gid ..." (a quarter of the parse time of a JSON object)."""
        keys = list(self.index)
        postings = " ".join(g if isinstance(g, str) else ",".join(map(str, g)) for g in self.index.values())
        return {
            "format": FORMAT,
            "torch": torch_version(),
            "entries": [e.to_row() for e in self.entries],
            "index": [keys, postings],
        }

    def __len__(self) -> int:
        return len(self.entries)

    def counts(self) -> dict[str, int]:
        """Number of entries per kind, e.g. ``{"python": 1800, "native": 400}``."""
        out: dict[str, int] = {}
        for e in self.entries:
            out[e.kind] = out.get(e.kind, 0) + 1
        return out


def canonical(text: str) -> str:
    """``text`` with per-line log prefixes (``[rank0]:``, glog ``[W1130 ...]``) and all whitespace removed."""
    return _WS.sub("", _PREFIX.sub("", text))


def _order(entries: list[Entry], names: set[str]) -> list[Entry]:
    if not names or len(entries) == 1:
        return entries
    return sorted(entries, key=lambda e: e.exception not in names)


def find_messages(text: str, atlas: Atlas | Sequence[Entry] | None = None, limit: int = 3) -> list[Match]:
    """Catalogue messages contained in ``text`` (a question, traceback or log), best first.

    Whole-template matches come first (score 1..2, longer templates higher, an entry whose exception
    class appears in ``text`` ranks first within its group and gets a small bonus); only when none is
    found, a fuzzy match tolerates truncated or partially quoted messages (score < 1) for texts that
    look like a paste rather than a how-to question.  At most ``limit`` groups are returned; ``text``
    longer than ``HEAD_CHARS + TAIL_CHARS`` is cut to its start and end (a traceback's message is last).
    ``atlas`` defaults to :func:`load_atlas`.
    """
    if not text or limit <= 0 or len(text) < MIN_LITERAL:
        return []
    if len(text) > HEAD_CHARS + TAIL_CHARS:
        text = text[:HEAD_CHARS] + "\n" + text[-TAIL_CHARS:]
    if atlas is None:
        atlas = load_atlas()
    elif not isinstance(atlas, Atlas):
        atlas = Atlas(atlas)
    stripped = _PREFIX.sub("", text)
    scores: dict[int, float] = {}
    index, postings = atlas.index, atlas.postings
    for key in _text_keys(stripped):
        if key in index:
            gids = postings(key)
            w = 1.0 / (len(gids) or 1)
            for gid in gids:
                scores[gid] = scores.get(gid, 0.0) + w
    if not scores:
        return []
    ranked = sorted(scores, key=scores.__getitem__, reverse=True)
    canon = _WS.sub("", stripped)
    names = set(_EXC.findall(text))
    groups = atlas.groups
    found: list[Match] = []
    for gid in ranked[:_CANDIDATES]:
        group = groups[gid]
        if group.exact(canon):
            entries = _order(group.entries, names)
            bonus = 0.05 if entries[0].exception in names else 0.0
            found.append(Match(entries, 1.0 + group.total / (group.total + 100) + bonus, "template", 1.0))
    pasted = bool(_PASTED.search(text) or not _QUESTION.search(text))
    if not found and (pasted or "?" not in text):
        for gid in ranked[:_FUZZY_CANDIDATES]:
            group = groups[gid]
            got = group.partial(canon)
            # a question-like text needs a long verbatim run; a paste may be a shorter, mostly whole one
            if got >= 40 or (pasted and got >= 24 and got >= 0.75 * group.total):
                cover = min(1.0, got / group.total)
                found.append(Match(_order(group.entries, names), 0.5 * cover + 0.4 * min(1.0, got / 120), "fuzzy", cover))
    found.sort(key=lambda m: m.score, reverse=True)
    return _drop_contained(found)[:limit]


def _drop_contained(found: list[Match]) -> list[Match]:
    """Drop a template match whose template is a piece of a better (longer) one that also matched."""
    if len(found) < 2:
        return found
    keep: list[Match] = []
    for m in found:
        text = _WS.sub("", m.entry.message).replace("*", "")
        if not any(text in _WS.sub("", k.entry.message).replace("*", "") for k in keep):
            keep.append(m)
    return keep


def explain(match: Match) -> str:
    """One line saying where ``match``'s message comes from, e.g. "raised at path:224 in F.g when x"."""
    e = match.entry
    if e.kind == "native":
        text = f"printed by torch's native c10d/NCCL/Gloo code ({e.path.rsplit('/', 1)[-1]})"
        return text + (f" when {e.condition}" if e.condition else "")
    verb = {
        "raise": f"{e.exception} raised",
        "assert": "AssertionError raised",
        "check": f"{e.exception} raised",
        "warn": f"{e.exception} issued",
        "log": "logged",
    }.get(e.via, "raised")
    text = f"{verb} at {e.path}:{e.line}"
    if e.function:
        text += f" in {e.function}"
    if e.condition:
        text += f" when {e.condition}"
    others = len(match.entries) - 1
    if others:
        text += f" (same message at {others} other site{'s' if others > 1 else ''})"
    return text


# ------------------------------------------------------------------------------- cache

_LOADED: dict[tuple[str, str, str], Atlas] = {}


def torch_dir() -> Path | None:
    """Directory of the target interpreter's torch package (``--python``, or the tool's own), found without
    importing it; None when absent."""
    found = interpreter.torch_dir()
    return Path(found) if found else None


def cache_path(version: str | None = None, build: str | None = None) -> Path:
    """``state_dir()/atlas-<torch version>-<build>-v<FORMAT>.json`` (build 'cpu' or 'cuda', default the target's: a
    CUDA build's libraries hold NCCL's messages, a CPU build's do not); raises ``OSError`` if the dir cannot be made."""
    version = version or torch_version() or "none"
    build = build or interpreter.torch_build() or "none"
    return state_dir() / f"atlas-{version}-{build}-v{FORMAT}.json"


def _read_cache(path: Path | None) -> Atlas | None:
    if path is None:
        return None
    paused = gc.isenabled()
    gc.disable()  # parsing allocates ~100k small objects; collections during it double the load time
    try:
        data = read_json(path)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        keys, postings = data["index"]
        postings = postings.split(" ") if keys else []
        if len(postings) != len(keys):
            return None
        return Atlas([Entry.from_row(row) for row in data["entries"]], dict(zip(keys, postings, strict=True)))
    except (TypeError, ValueError, AttributeError, KeyError):
        return None
    finally:
        if paused:
            gc.enable()


def load_atlas(torch_path: Path | None = None) -> Atlas:
    """The catalogue of the installed torch (or of ``torch_path``), read from or written to the cache.

    Memoised per process (per torch version and torch directory).  A corrupt or unreadable cache is
    rebuilt; a read-only state directory just is not written.  Without torch the atlas is empty.
    """
    tdir = Path(torch_path) if torch_path is not None else torch_dir()
    key = (torch_version() or "none", interpreter.torch_build() or "none", str(tdir))
    atlas = _LOADED.get(key)
    if atlas is not None:  # before the cache file's path: every pasted message asks, and the path costs a state-dir check
        return atlas
    try:
        path: Path | None = cache_path()
    except OSError:
        path = None
    atlas = _read_cache(path)
    if atlas is None:
        atlas = Atlas(build_atlas(tdir) if tdir is not None and tdir.is_dir() else [])
        if path is not None and tdir is not None:
            try:
                write_json_atomic(path, atlas.to_json())
            except OSError:
                pass
    _LOADED[key] = atlas
    return atlas


__all__ = [
    "FORMAT",
    "Atlas",
    "Entry",
    "Match",
    "build_atlas",
    "cache_path",
    "canonical",
    "explain",
    "find_messages",
    "load_atlas",
    "native_entries",
    "python_entries",
    "torch_dir",
]
