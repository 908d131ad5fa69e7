"""Loading knowledge cards (markdown, parsed with markdown-it-py) into typed sections and snippets.

The card format is described in README.md ("Knowledge card format").  Every problem found is raised as
:class:`fsdp_skill.errors.KnowledgeError` naming ``file:line``; a card is never half loaded.

Loading all cards takes tens of milliseconds; :func:`load_knowledge` keeps one parsed copy per
directory and file fingerprint (size, mtime) in memory, and checks that fingerprint again only when
:func:`fsdp_skill.runtime.watch.generation` says a file may have changed.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsdp_skill.core.knowledge.cache_check import cache_form, cards_from_cache, prose_of
from fsdp_skill.core.models import Card, SectionDoc, SnippetSpec, VersionNote
from fsdp_skill.errors import KnowledgeError, NotFoundError
from fsdp_skill.runtime import knobs, watch

if TYPE_CHECKING:  # markdown-it is imported when a card is parsed, not when the cache is read
    from importlib.abc import Traversable

    from markdown_it.token import Token

REQUIRED_FRONT = ("id", "title", "topic", "aliases", "sources")
FENCE_KEYS = {"world_size", "backend", "timeout", "requires", "name", "checks", "tol", "expects"}
CHECKS = ("reference", "agree", "raises", "runs")
BACKENDS = {"auto", "gloo", "nccl"}
REQUIREMENTS = {"cuda"}
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def default_knowledge_dir() -> Path:
    """Directory of the cards: ``$FSDP_SKILL_KNOWLEDGE``, else the package data ``fsdp_skill.knowledge``.

    An installed wheel carries the cards as package data (found with :mod:`importlib.resources`); an
    editable install of a checkout maps that package onto the checkout's ``knowledge/`` folder, which
    is used directly when the import system cannot name a folder for the data-only package.
    """
    env = os.environ.get(knobs.KNOWLEDGE)
    if env:
        return Path(env)
    return _package_knowledge_dir()


@functools.cache
def _package_knowledge_dir() -> Path:
    """The cards shipped with the package (found once per process: every ``ask`` asks for the directory)."""
    # files() of the regular package fsdp_skill, then the folder: a data-only package without
    # __init__.py would come back as a MultiplexedPath, which has no real path to parse from.
    data = _package_files() / "knowledge"
    if isinstance(data, Path) and data.is_dir():
        return data
    return Path(__file__).resolve().parents[3] / "knowledge"  # a checkout: skill/core/knowledge/ -> knowledge/


def _package_files() -> Path | Traversable:
    """``importlib.resources.files("fsdp_skill")``: for the package loaded from a file (a wheel, an editable
    install), the folder of its ``__init__`` as resources.files gives it, without importing importlib.resources
    (with zipfile and tempfile, ~6 ms of a cached ask); from anywhere else (a zip archive), resources.files."""
    import importlib.machinery

    import fsdp_skill

    loader = fsdp_skill.__spec__.loader
    if isinstance(loader, (importlib.machinery.SourceFileLoader, importlib.machinery.SourcelessFileLoader)):
        return Path(loader.path).parent  # importlib.resources' FileReader of a file loader: Path(loader.path).parent
    from importlib import resources

    return resources.files("fsdp_skill")


@dataclass
class Knowledge:
    """All cards of a directory, with sections and snippets indexed by id (in card order)."""

    directory: Path
    cards: list[Card] = field(default_factory=list)
    sections: dict[str, SectionDoc] = field(default_factory=dict)
    snippets: dict[str, SnippetSpec] = field(default_factory=dict)
    digest: str = ""  # sha256 prefix of the card files (and the parsed format)

    def section(self, section_id: str) -> SectionDoc:
        """The section with that id; raises NotFoundError naming close ids."""
        try:
            return self.sections[section_id]
        except KeyError:
            raise NotFoundError(_unknown("section", section_id, self.sections)) from None

    def snippet(self, snippet_id: str) -> SnippetSpec:
        """The snippet with that id; raises NotFoundError naming close ids."""
        try:
            return self.snippets[snippet_id]
        except KeyError:
            raise NotFoundError(_unknown("snippet", snippet_id, self.snippets)) from None

    def version_notes(self, section: SectionDoc) -> list[VersionNote]:
        """What differs on some torch versions for ``section``: its own notes, then its card's."""
        card = next((c for c in self.cards if c.file == section.card), None)
        return [*section.versions, *(card.versions if card else [])]

    @property
    def topics(self) -> list[str]:
        """Topic ids in card order."""
        return [c.topic for c in self.cards]

    @property
    def fingerprint(self) -> str:
        """A short hash of the cards' contents, for caches that depend on the knowledge."""
        return self.digest[:16]


def _unknown(kind: str, key: str, known: Collection[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, list(known), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; {len(known)} {kind}s are known"
    return f"unknown {kind} id {key!r}{hint}"


_CACHE: dict[tuple[str, tuple[tuple[str, int, int], ...]], Knowledge] = {}  # (directory, (name, size, mtime_ns) per file)
# directory -> (the watch generation read before its last full check, the _CACHE key that check found)
_CHECKED: dict[str, tuple[int | None, tuple[str, tuple[tuple[str, int, int], ...]]]] = {}
PARSED_FORMAT = 6  # bump when the parsed form changes, so stale caches are ignored


def load_knowledge(directory: str | Path | None = None) -> Knowledge:
    """Parse every ``*.md`` card of ``directory`` (default :func:`default_knowledge_dir`).

    Returns a :class:`Knowledge`; raises :class:`KnowledgeError` (``file:line: message``) for a
    malformed card, duplicate ids or an empty directory.  Results are memoised in memory per file
    fingerprint (checked again when the folders' watch generation moved) and on disk (``$FSDP_SKILL_HOME/knowledge-<sha256 of the cards>.json``), so a fresh
    process skips markdown parsing when the cards have not changed.
    """
    import hashlib

    directory = Path(directory) if directory else default_knowledge_dir()
    folder, zh_folder = str(directory), os.path.join(directory, "zh")  # zh: the Chinese bodies (knowledge.zh)
    gen = watch.generation((folder, zh_folder))  # read before the full check, kept with its result
    seen = _CHECKED.get(folder)
    if gen is not None and seen is not None and seen[0] == gen and seen[1] in _CACHE:  # nothing moved since
        return _CACHE[seen[1]]
    if not directory.is_dir():
        raise KnowledgeError(folder, 0, "knowledge directory does not exist")
    cards = [f for f in _markdown_stats(folder) if not f[0].startswith(("_", "."))]
    zh_cards = _markdown_stats(zh_folder)
    key = (folder, tuple(cards + zh_cards))
    if key in _CACHE:
        _CHECKED[folder] = (gen, key)
        return _CACHE[key]
    files = [directory / name for name, _, _ in cards]
    zh_files = [directory / "zh" / name for name, _, _ in zh_cards]
    if not files:
        raise KnowledgeError(str(directory), 0, "no knowledge cards (*.md) found")
    sources = [(p, p.read_bytes()) for p in files]
    digest = hashlib.sha256(str(PARSED_FORMAT).encode())
    for p, data in sources:
        digest.update(p.name.encode() + b"\0" + data + b"\0")
    zh_sources = [(p, p.read_bytes()) for p in zh_files]
    for p, data in zh_sources:  # not in the parsed cache, but in the digest: the router indexes them
        digest.update(b"zh/" + p.name.encode() + b"\0" + data + b"\0")
    kb = _read_parsed(directory, digest.hexdigest()[:24], sources)
    if kb is None:
        spans: dict[str, list[tuple[int, int]]] = {}
        kb = _parse_all(directory, sources, spans)
        _attach_zh(kb, zh_sources)
        _write_parsed(kb, digest.hexdigest()[:24], sources, spans)
    else:
        _attach_zh(kb, zh_sources)  # from the files, whatever the cache file holds
    kb.digest = digest.hexdigest()[:24]
    _CACHE.clear()
    _CACHE[key] = kb
    _CHECKED[folder] = (gen, key)
    return kb


_LISTINGS: dict[str, tuple[int, list[tuple[str, str]]]] = {}  # folder -> (its mtime_ns, [(name, path)] of its *.md)
_RACY_NS = 2_000_000_000  # a folder changed less than this ago may change again within its timestamp's tick


def _markdown_stats(folder: str) -> list[tuple[str, int, int]]:
    """(name, size, mtime_ns) of each ``*.md`` entry of ``folder`` in name order (the entries and order of
    ``sorted(Path(folder).glob("*.md"))``; [] when the folder is missing or unreadable).  Every ``ask`` checks this
    fingerprint against the memoised knowledge, so the names are listed again only when the folder's own mtime
    changed (an entry added, removed or renamed) or is too recent to be trusted (within :data:`_RACY_NS`, as git
    treats an index entry as racy); each entry is stat'ed every time (an edit in place changes only the file)."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        return []
    listed = _LISTINGS.get(folder)
    if listed is None or listed[0] != mtime or time.time_ns() - mtime < _RACY_NS:
        return _scan_stats(folder, mtime)
    out = []
    for name, path in listed[1]:
        try:
            st = os.stat(path)
        except OSError:  # gone since it was listed: list the folder again
            return _scan_stats(folder, mtime)
        out.append((name, st.st_size, st.st_mtime_ns))
    return out


def _scan_stats(folder: str, mtime: int) -> list[tuple[str, int, int]]:
    """:func:`_markdown_stats` from a listing of ``folder`` (whose mtime_ns was ``mtime``), remembered for the next call."""
    _LISTINGS.pop(folder, None)
    try:
        with os.scandir(folder) as entries:
            found = sorted((e for e in entries if e.name.endswith(".md")), key=lambda e: e.name)
        out = [(e.name, st.st_size, st.st_mtime_ns) for e in found for st in [e.stat()]]
    except OSError:
        return []
    _LISTINGS[folder] = (mtime, [(e.name, e.path) for e in found])
    return out


def _attach_zh(kb: Knowledge, zh_sources: list[tuple[Path, bytes]]) -> None:
    """Give each section its Chinese title and body (``title_zh``, ``text_zh``) from ``zh/*.md``.

    A section without a Chinese body keeps None (the answer falls back to English). Raises
    KnowledgeError for a Chinese file that does not parse, a Chinese section whose id has no English
    section, or one whose ``{{code}}`` lines do not match the English section's code blocks.
    """
    from fsdp_skill.core.knowledge.zh import GLOSSARY_FILE, parse_zh, render

    for section in kb.sections.values():
        section.title_zh = section.text_zh = None
    for path, data in zh_sources:
        if path.name == GLOSSARY_FILE:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise KnowledgeError(str(path), 1, f"Chinese card is not UTF-8: {exc}") from None
        for zh in parse_zh(text, path):
            english = kb.sections.get(zh.id)
            if english is None:
                raise KnowledgeError(str(path), zh.line, f"Chinese section {zh.id!r} has no English section")
            try:
                english.text_zh = render(english.text, zh.template).strip()
            except ValueError as exc:
                raise KnowledgeError(str(path), zh.line, f"{zh.id}: {exc}") from None
            english.title_zh = zh.title


def _parsed_path(digest: str) -> Path:
    from fsdp_skill.core.state import state_dir

    return state_dir() / f"knowledge-{digest}.json"


def _read_parsed(directory: Path, digest: str, sources: list[tuple[Path, bytes]]) -> Knowledge | None:
    """The cached parse of ``sources``, or None (parse again) when the file is missing, corrupt, or does
    not agree with the cards (:func:`fsdp_skill.core.knowledge.cache_check.cards_from_cache`)."""
    from fsdp_skill.core.state import read_json

    data = read_json(_parsed_path(digest))
    if not isinstance(data, list):
        return None
    try:
        cards = cards_from_cache(data, sources)
        return None if cards is None else _index(directory, cards)
    except (ValueError, KnowledgeError):  # corrupt, stale or planted: parse again
        return None


def _write_parsed(
    kb: Knowledge, digest: str, sources: list[tuple[Path, bytes]], spans: dict[str, list[tuple[int, int]]]
) -> None:
    from fsdp_skill.core.state import write_json_atomic

    data = cache_form(kb.cards, sources, spans)
    if data is None:  # a card whose text the line ranges do not give back (an indented fence): parsed each time
        return
    try:
        write_json_atomic(_parsed_path(digest), data)
    except OSError:
        pass  # a read-only state dir only costs the parse next time


def _parse_all(directory: Path, sources: list[tuple[Path, bytes]], spans: dict[str, list[tuple[int, int]]] | None = None) -> Knowledge:
    cards = []
    for path, data in sources:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise KnowledgeError(str(path), 1, f"card is not UTF-8: {exc}") from None
        cards.append(parse_card(text, path, spans=spans))
    kb = _index(directory, cards)
    return kb


def _index(directory: Path, cards: list[Card]) -> Knowledge:
    kb = Knowledge(directory=directory, cards=cards)
    for card in cards:
        path = directory / card.file
        for section in card.sections:
            if section.id in kb.sections:
                other = kb.sections[section.id]
                raise KnowledgeError(
                    str(path), section.line, f"duplicate section id {section.id!r} (also {other.card}:{other.line})"
                )
            kb.sections[section.id] = section
            for snip in section.snippets:
                if snip.id in kb.snippets:
                    raise KnowledgeError(str(path), snip.line, f"duplicate snippet id {snip.id!r}")
                kb.snippets[snip.id] = snip
    return kb


def _yaml(text: str, path: Path, line: int, what: str) -> dict[str, Any]:
    """The YAML mapping in ``text`` (open: the caller checks its keys); KnowledgeError at ``line`` otherwise."""
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no annotations and types-PyYAML is not installed

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise KnowledgeError(
            str(path), line + (mark.line if mark else 0), f"invalid YAML in {what}: {getattr(exc, 'problem', exc)}"
        ) from exc
    if not isinstance(data, dict):
        raise KnowledgeError(str(path), line, f"{what} must be a YAML mapping")
    return data


def _str_list(value: object, path: Path, line: int, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise KnowledgeError(str(path), line, f"{key!r} must be a list of strings")
    return [str(v).strip() for v in value if str(v).strip()]


def parse_card(source: str, path: str | Path = "<card>", *, spans: dict[str, list[tuple[int, int]]] | None = None) -> Card:
    """Parse one card's markdown ``source``; ``path`` names it in errors.  See the module docstring.

    With ``spans``, each section's id is mapped to the ``[start, end)`` 0-based line ranges of
    ``source.splitlines(keepends=True)`` its prose (``text``) is made of, in order (what the parsed cache stores
    instead of the text: :mod:`fsdp_skill.core.knowledge.cache_check`)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin

    path = Path(path)
    md = MarkdownIt("commonmark").use(front_matter_plugin)
    tokens = md.parse(source)
    lines = source.splitlines(keepends=True)
    if not tokens or tokens[0].type != "front_matter":
        raise KnowledgeError(str(path), 1, "card must start with YAML front matter between '---' lines")
    front = _yaml(tokens[0].content, path, 2, "front matter")
    for key in REQUIRED_FRONT:
        if key not in front or front[key] in (None, "", []):
            raise KnowledgeError(str(path), 1, f"front matter lacks {key!r}")
    if front["id"] != front["topic"] or (path.suffix == ".md" and path.stem != front["id"] and path.name != "<card>"):
        raise KnowledgeError(
            str(path), 1, f"id ({front['id']!r}), topic ({front['topic']!r}) and file name ({path.stem!r}) must agree"
        )
    topic = str(front["topic"])
    card = Card(
        id=str(front["id"]),
        title=str(front["title"]),
        topic=topic,
        aliases=_str_list(front.get("aliases"), path, 1, "aliases"),
        sources=_str_list(front.get("sources"), path, 1, "sources"),
        file=path.name,
        versions=_version_notes(front.get("versions"), path, 1, "the card"),
    )
    # split the token stream at every h2
    starts = [i for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"]
    if not starts:
        raise KnowledgeError(str(path), 1, "card has no '##' sections")
    seen: dict[str, int] = {}
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(tokens)
        section = _parse_section(tokens, start, end, lines, path, card, spans)
        if section.id in seen:
            raise KnowledgeError(str(path), section.line, f"duplicate section id {section.id!r} (also line {seen[section.id]})")
        seen[section.id] = section.line
        card.sections.append(section)
    return card


def _version_notes(value: object, path: Path, line: int, owner: str) -> list[VersionNote]:
    """The ``versions:`` list of a card's front matter or a section's metadata: mappings with ``torch`` (a PEP 440
    specifier), ``note`` (text) and optionally ``fails`` (a piece of the failure reason it explains).  Raises
    KnowledgeError at ``line`` for any other shape, an unknown key or a malformed specifier."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise KnowledgeError(str(path), line, f"{owner}: 'versions' must be a list of {{torch, note, fails}} mappings")
    from fsdp_skill.core.knowledge.applicability import parse_spec

    notes = []
    for item in value:
        if not isinstance(item, dict) or set(item) - {"torch", "note", "fails"} or not item.get("torch") or not item.get("note"):
            raise KnowledgeError(str(path), line, f"{owner}: each 'versions' entry needs 'torch' and 'note' (and may have 'fails'): {item!r}")
        try:
            spec = str(parse_spec(str(item["torch"])))
        except ValueError as exc:
            raise KnowledgeError(str(path), line, f"{owner}: versions: {exc}") from None
        fails = item.get("fails")
        if fails is not None and (not isinstance(fails, str) or not fails.strip()):
            raise KnowledgeError(str(path), line, f"{owner}: versions: 'fails' must be a non-empty string")
        notes.append(VersionNote(torch=spec, note=" ".join(str(item["note"]).split()), fails=fails.strip() if fails else None))
    return notes


def _torch_spec(value: object, path: Path, line: int, title: str) -> str | None:
    """The section's ``torch`` range, normalised (e.g. '>=2.6'); KnowledgeError when malformed."""
    if value is None:
        return None
    from fsdp_skill.core.knowledge.applicability import parse_spec

    try:
        return str(parse_spec(str(value)))
    except ValueError as exc:
        raise KnowledgeError(str(path), line, f"section {title!r}: {exc}") from None


def _parse_section(
    tokens: Sequence[Token],
    start: int,
    end: int,
    lines: list[str],
    path: Path,
    card: Card,
    spans: dict[str, list[tuple[int, int]]] | None,
) -> SectionDoc:
    head = tokens[start]
    title = tokens[start + 1].content.strip()
    line = _lines(head)[0] + 1
    body = tokens[start + 3 : end]
    # a following h1 (or any heading above h2) would end the section too
    for i, t in enumerate(body):
        if t.type == "heading_open" and t.tag == "h1":
            body = body[:i]
            break
    if not body or body[0].type != "html_block" or not body[0].content.lstrip().startswith("<!--"):
        raise KnowledgeError(
            str(path), line, f"section {title!r} must be followed by an HTML comment with its metadata (slug, apis, sources, zh)"
        )
    meta_tok = body[0]
    meta_map = _lines(meta_tok)
    meta_src = meta_tok.content.strip()
    if not meta_src.endswith("-->"):
        raise KnowledgeError(str(path), meta_map[0] + 1, "metadata comment is not closed with '-->' before a blank line")
    meta = _yaml(meta_src[4:-3], path, meta_map[0] + 1, "section metadata")
    slug = str(meta.get("slug") or "")
    if not _SLUG.match(slug):
        raise KnowledgeError(
            str(path), meta_map[0] + 1, f"section {title!r}: 'slug' must be lower-case letters, digits and '-' (got {slug!r})"
        )
    unknown = set(meta) - {"slug", "apis", "sources", "aliases", "zh", "errors", "torch", "versions"}
    if unknown:
        raise KnowledgeError(str(path), meta_map[0] + 1, f"unknown metadata key(s) {sorted(unknown)}")
    sources = _str_list(meta.get("sources"), path, meta_map[0] + 1, "sources")
    if not sources:
        raise KnowledgeError(str(path), meta_map[0] + 1, f"section {title!r} cites no official source ('sources')")
    for url in sources:
        if not url.startswith("https://"):
            raise KnowledgeError(str(path), meta_map[0] + 1, f"source {url!r} is not an https URL")
    torch_spec = _torch_spec(meta.get("torch"), path, meta_map[0] + 1, title)
    section_id = f"{card.topic}/{slug}"
    section = SectionDoc(
        id=section_id,
        title=title,
        topic=card.topic,
        card=card.file,
        line=line,
        text="",
        apis=_str_list(meta.get("apis"), path, meta_map[0] + 1, "apis"),
        sources=sources,
        aliases=_str_list(meta.get("aliases"), path, meta_map[0] + 1, "aliases"),
        zh=(str(meta["zh"]).strip() if meta.get("zh") else None),
        errors=_str_list(meta.get("errors"), path, meta_map[0] + 1, "errors"),
        torch=torch_spec,
        versions=_version_notes(meta.get("versions"), path, meta_map[0] + 1, f"section {title!r}"),
    )
    # body text: source lines of the remaining blocks, without verify fences (those become snippets)
    ranges: list[tuple[int, int]] = []
    last_line = meta_map[1]
    body_end_line = None
    for t in body[1:]:
        if t.map is None:
            continue
        body_end_line = t.map[1]
        if t.type == "fence" and _is_verify(t.info):
            ranges.append((last_line, t.map[0]))
            last_line = t.map[1]
            section.snippets.append(_parse_snippet(t, path, section, len(section.snippets)))
    if body_end_line is not None:
        ranges.append((last_line, body_end_line))
    section.text = prose_of(lines, ranges)
    if spans is not None:
        spans[section_id] = ranges
    if not section.text and not section.snippets:
        raise KnowledgeError(str(path), line, f"section {title!r} is empty")
    return section


def _lines(tok: Token) -> list[int]:
    """``[first, end)`` 0-based source lines of a block token (heading, html_block, fence: markdown-it maps each one)."""
    assert tok.map is not None, f"markdown-it block token {tok.type!r} without a source map"
    return tok.map


def _is_verify(info: str) -> bool:
    words = info.split()
    return len(words) >= 2 and words[1] == "verify"


def _parse_snippet(tok: Token, path: Path, section: SectionDoc, index: int) -> SnippetSpec:
    line = _lines(tok)[0] + 1
    words = tok.info.split()
    if words[0] != "python":
        raise KnowledgeError(str(path), line, f"verify fences must be python (got {words[0]!r})")
    try:
        settings = dict(w.split("=", 1) for w in shlex.split(" ".join(words[2:])))
    except ValueError:
        raise KnowledgeError(str(path), line, f"fence settings must be key=value pairs: {tok.info!r}") from None
    unknown = set(settings) - FENCE_KEYS
    if unknown:
        raise KnowledgeError(str(path), line, f"unknown fence setting(s) {sorted(unknown)}; known: {sorted(FENCE_KEYS)}")
    try:
        world_size = int(settings.get("world_size", 2))
        timeout = float(settings.get("timeout", 60))
    except ValueError:
        raise KnowledgeError(str(path), line, f"world_size must be an integer and timeout a number: {tok.info!r}") from None
    if not 1 <= world_size <= 64:
        raise KnowledgeError(str(path), line, f"world_size({world_size}) must be between 1 and 64")
    if not 0 < timeout <= 3600:
        raise KnowledgeError(str(path), line, f"timeout({timeout:g}) must be in (0, 3600] seconds")
    backend = settings.get("backend", "auto")
    if backend not in BACKENDS:
        raise KnowledgeError(str(path), line, f"backend {backend!r} is not one of {sorted(BACKENDS)}")
    requires = [r for r in settings.get("requires", "").split(",") if r]
    if set(requires) - REQUIREMENTS:
        raise KnowledgeError(str(path), line, f"unknown requirement(s) {sorted(set(requires) - REQUIREMENTS)}")
    name = settings.get("name")
    if name is not None and not _SLUG.match(name):
        raise KnowledgeError(str(path), line, f"snippet name {name!r} must be lower-case letters, digits and '-'")
    checks, tolerance, expects = _checks(settings, path, line, tok.info)
    snippet_id = f"{section.topic}/{name}" if name else section.id + (f"-{index + 1}" if index else "")
    code = tok.content
    try:
        compile(code, f"{path}:{line + 1}", "exec")
    except SyntaxError as exc:
        raise KnowledgeError(
            str(path), line + (exc.lineno or 0), f"snippet {snippet_id!r} is not valid Python: {exc.msg}"
        ) from None
    return SnippetSpec(
        id=snippet_id,
        section_id=section.id,
        code=code,
        world_size=world_size,
        backend=backend,
        timeout=timeout,
        requires=requires,
        line=line,
        checks=checks,
        tolerance=tolerance,
        expects=expects,
    )


def _checks(settings: dict[str, str], path: Path, line: int, info: str) -> tuple[str | None, float | None, str | None]:
    """(checks, tol, expects) of a fence: ``checks=reference tol=1e-6``, ``checks=raises expects="X: msg"``,
    ``checks=agree`` or ``checks=runs``; raises KnowledgeError for a bad combination."""
    checks = settings.get("checks")
    if checks is None:
        if "tol" in settings or "expects" in settings:
            raise KnowledgeError(str(path), line, f"'tol' and 'expects' need 'checks': {info!r}")
        return None, None, None
    if checks not in CHECKS:
        raise KnowledgeError(str(path), line, f"checks={checks!r} is not one of {', '.join(CHECKS)}")
    tolerance = expects = None
    if checks == "reference":
        try:
            tolerance = float(settings["tol"])
        except (KeyError, ValueError):
            raise KnowledgeError(str(path), line, f"checks=reference needs tol=NUMBER (0 for exact): {info!r}") from None
        if not 0 <= tolerance < 1:
            raise KnowledgeError(str(path), line, f"tol({tolerance:g}) must be in [0, 1)")
    elif "tol" in settings:
        raise KnowledgeError(str(path), line, f"tol goes with checks=reference only: {info!r}")
    if checks == "raises":
        expects = settings.get("expects", "").strip()
        if not re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Warning)\b", expects):
            raise KnowledgeError(str(path), line, f'checks=raises needs expects="ExceptionName: message": {info!r}')
    elif "expects" in settings:
        raise KnowledgeError(str(path), line, f"expects goes with checks=raises only: {info!r}")
    return checks, tolerance, expects
