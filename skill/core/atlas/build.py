"""Building the error atlas: message sites of the installed torch, parsed from source, never imported.

* :func:`python_entries`: every ``raise X(...)``, ``assert cond, msg``, ``warnings.warn(...)``,
  ``logger.warning/error/exception/critical(...)`` and ``torch._check*(cond, lambda: msg)`` in the files
  of :data:`PY_DIRS`, parsed with :mod:`ast`, with the enclosing function and the guarding condition.
* :func:`native_entries`: human-readable strings from the ``.rodata`` of torch's shared libraries that
  mention distributed words (NCCL, Gloo, c10d, ProcessGroup, store, rendezvous, watchdog, ...).

Matching and caching are :mod:`fsdp_skill.core.atlas.lookup`.
"""

from __future__ import annotations

import ast
import mmap
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fsdp_skill.core.check.facts import last_name  # the same ast helper as the checker's
from fsdp_skill.core.parsing import parse_module

FORMAT = 3  # bump whenever the builder or the stored layout changes
# Where Python messages are catalogued (relative to the torch package): the distributed stack, plus the
# few files outside it whose messages FSDP users meet (activation checkpointing, SyncBatchNorm, AMP,
# DistributedSampler).
PY_DIRS = ("distributed", "nn/parallel", "utils/checkpoint.py", "nn/modules/batchnorm.py", "amp", "utils/data/distributed.py")
MIN_LITERAL = 12  # a template needs this many non-blank literal characters
MIN_NATIVE = 20  # shortest printable run taken from a shared library
MAX_CONDITION = 300
NATIVE_LIBS = re.compile(r"^lib(torch_cpu|torch_python|c10|c10_cuda|torch_cuda\w*|nccl\w*|gloo\w*)\.(so|dylib)")


# ---------------------------------------------------------------------------------------- data


@dataclass(slots=True)
class Entry:
    """One message site of the catalogue (JSON-serialisable via :meth:`to_row`)."""

    message: str  # template; ``*`` marks a formatted-in value
    kind: Literal["python", "native"]
    via: str  # "raise" | "assert" | "warn" | "log" | "check" | "native"
    exception: str | None  # "ValueError", "FutureWarning", ...; None for log lines and native strings
    path: str  # relative to the torch package's parent, e.g. "torch/distributed/fsdp/_fsdp_state.py"
    line: int | None  # 1-based line of the raise/warn call; None for native
    function: str | None  # enclosing "Class.method" / "function"; None at module level and for native
    condition: str | None  # guarding test, e.g. "not (x > 0)"; None when unguarded

    def to_row(self) -> list[str | int | None]:
        """The compact JSON row stored in the cache (order of the fields above)."""
        return [self.message, self.kind, self.via, self.exception, self.path, self.line, self.function, self.condition]

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Entry:
        """Inverse of :meth:`to_row`; raises ``ValueError``/``TypeError`` on a malformed row."""
        if len(row) != 8 or not isinstance(row[0], str) or row[1] not in ("python", "native"):
            raise ValueError("bad atlas row")
        return cls(*row)


@dataclass(slots=True)
class Match:
    """Catalogue entries whose (shared) message template a text contains."""

    entries: list[Entry]  # every site with this template; best first (matching exception class first)
    score: float  # template match: 1..2 (longer templates higher); fuzzy: 0..1 (fraction matched)
    how: str  # "template" (whole template found) | "fuzzy" (truncated/partial paste)
    coverage: float  # fraction of the template's literal characters found in the text, 0..1

    @property
    def entry(self) -> Entry:
        """The best site (``entries[0]``)."""
        return self.entries[0]


# ------------------------------------------------------------------------------- python build

_PCT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[diouxXeEfFgGcrsa%]")
_BRACE = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
_LOGGER = re.compile(r"^_?\w*(log|logger|LOGGER)$")
_LOG_LEVELS = {"warning", "warn", "error", "exception", "critical"}
_CHECKS = {"_check", "_check_value", "_check_type", "_check_index", "_check_not_implemented", "_check_is_size"}
_CHECK_EXC = {
    "_check": "RuntimeError",
    "_check_value": "ValueError",
    "_check_type": "TypeError",
    "_check_index": "IndexError",
    "_check_not_implemented": "NotImplementedError",
    "_check_is_size": "RuntimeError",
}

Parts = list[str | None]  # literal pieces; None is a hole
# name -> [(line, op, value)] of a scope's assignments (see _Module._assignments)
_Env = dict[str, list[tuple[int, str, ast.expr]]]


def _sub_fields(parts: Parts, pattern: re.Pattern[str], literal: dict[str, str]) -> Parts:
    """Replace format fields inside literal parts by holes (``literal`` maps escapes like ``%%``)."""
    out: Parts = []
    for part in parts:
        if part is None:
            out.append(None)
            continue
        pos = 0
        for m in pattern.finditer(part):
            out.append(part[pos : m.start()])
            out.append(literal.get(m.group(), None))
            pos = m.end()
        out.append(part[pos:])
    return out


class _Module:
    """Extracts the message sites of one parsed module."""

    def __init__(self, source: str, tree: ast.Module, rel: str):
        self.source, self.rel = source, rel
        self.lines = source.splitlines(keepends=True)
        self.entries: list[Entry] = []
        self.module_env = self._assignments(tree.body, nested=False)
        self._walk(tree.body, qual=(), guard=None, func=None, in_class=False)

    # -- message templates
    @staticmethod
    def _assignments(body: list[ast.stmt], nested: bool = True) -> _Env:
        """name -> [(line, op, value)] for ``name = ...`` / ``name += ...`` (not inside nested defs)."""
        env: _Env = {}
        stack: list[ast.AST] = list(body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                env.setdefault(node.targets[0].id, []).append((node.lineno, "=", node.value))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                env.setdefault(node.target.id, []).append((node.lineno, "=", node.value))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
                env.setdefault(node.target.id, []).append((node.lineno, "+=", node.value))
            if nested:
                stack.extend(ast.iter_child_nodes(node))
        for sites in env.values():
            sites.sort(key=lambda s: s[0])
        return env

    def _resolve(self, name: str, line: int, env: _Env | None, depth: int) -> Parts:
        """Template of local/module variable ``name`` as assigned before ``line``; a hole if unknown."""
        for scope in (env, self.module_env):
            sites = [s for s in (scope or {}).get(name, ()) if s[0] < line]
            if not sites:
                continue
            start = max((i for i, s in enumerate(sites) if s[1] == "="), default=None)
            if start is None:
                return [None]
            parts: Parts = []
            for lineno, _, value in sites[start:]:
                parts += self._template(value, env, lineno, depth + 1)
            return parts
        return [None]

    def _template(self, node: ast.AST, env: _Env | None, line: int, depth: int = 0) -> Parts:
        """Literal pieces (str) and holes (None) of a message expression."""
        if depth > 4:
            return [None]
        if isinstance(node, ast.Constant):
            return [node.value] if isinstance(node.value, str) else [None]
        if isinstance(node, ast.JoinedStr):
            return [v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None for v in node.values]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._template(node.left, env, line, depth + 1) + self._template(node.right, env, line, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left = self._template(node.left, env, line, depth + 1)
            return _sub_fields(left, _PCT, {"%%": "%"}) if any(left) else [None]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            base = self._template(node.func.value, env, line, depth + 1)
            return _sub_fields(base, _BRACE, {"{{": "{", "}}": "}"}) if any(base) else [None]
        if isinstance(node, ast.Name):
            return self._resolve(node.id, line, env, depth)
        if isinstance(node, ast.Lambda):
            return self._template(node.body, env, line, depth + 1)
        return [None]

    # -- traversal
    def _segment(self, node: ast.expr) -> str:
        # ast.get_source_segment re-splits the whole file on every call; slice our own line list instead
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        if node.end_col_offset is None or last >= len(self.lines):
            text = ast.unparse(node)
        elif first == last:
            text = self.lines[first].encode()[node.col_offset : node.end_col_offset].decode(errors="replace")
        else:
            chunk = [
                self.lines[first].encode()[node.col_offset :].decode(errors="replace"),
                *self.lines[first + 1 : last],
                self.lines[last].encode()[: node.end_col_offset].decode(errors="replace"),
            ]
            text = "".join(chunk)
        text = " ".join(text.split())
        return text if len(text) <= MAX_CONDITION else text[: MAX_CONDITION - 1] + "…"

    def _walk(self, body: list[ast.stmt], qual: tuple[str, ...], guard: str | None, func: _Env | None, in_class: bool) -> None:
        for node in body:
            self._stmt(node, qual, guard, func, in_class)

    def _stmt(self, node: ast.stmt, qual: tuple[str, ...], guard: str | None, func: _Env | None, in_class: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            env = self._assignments(node.body)
            self._walk(node.body, qual + (node.name,), None, env, False)
        elif isinstance(node, ast.ClassDef):
            self._walk(node.body, qual + (node.name,), None, None, True)
        elif isinstance(node, ast.If):
            test = self._segment(node.test)
            self._walk(node.body, qual, test, func, in_class)
            if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
                self._stmt(node.orelse[0], qual, guard, func, in_class)  # elif: its own test guards it
            else:
                self._walk(node.orelse, qual, f"not ({test})", func, in_class)
        elif isinstance(node, ast.While):
            self._walk(node.body, qual, self._segment(node.test), func, in_class)
            self._walk(node.orelse, qual, guard, func, in_class)
        elif isinstance(node, ast.Raise):
            if isinstance(node.exc, ast.Call) and node.exc.args:
                self._add(node.exc.args[0], "raise", last_name(node.exc), node, qual, guard, func)
        elif isinstance(node, ast.Assert):
            if node.msg is not None:
                self._add(node.msg, "assert", "AssertionError", node, qual, f"not ({self._segment(node.test)})", func)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self._call(node.value, qual, guard, func)
        else:
            for attr in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(node, attr, None) or ():
                    if isinstance(child, (ast.ExceptHandler, ast.match_case)):
                        self._walk(child.body, qual, guard, func, in_class)
                    else:
                        self._stmt(child, qual, guard, func, in_class)

    def _call(self, call: ast.Call, qual: tuple[str, ...], guard: str | None, func: _Env | None) -> None:
        f, args = call.func, call.args
        attr = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        owner = last_name(f.value) if isinstance(f, ast.Attribute) else None
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        if attr in ("warn", "warn_explicit") and (owner == "warnings" or (owner is None and attr == "warn")):
            msg = args[0] if args else kw.get("message")
            cat = args[1] if len(args) > 1 else kw.get("category")
            if msg is not None:
                self._add(msg, "warn", (last_name(cat) if cat is not None else None) or "UserWarning", call, qual, guard, func)
        elif attr in _LOG_LEVELS and owner and _LOGGER.match(owner) and args:
            parts = self._template(args[0], func, call.lineno)
            if len(args) > 1:
                parts = _sub_fields(parts, _PCT, {"%%": "%"})
            self._add_parts(parts, "log", None, call, qual, guard, func)
        elif attr == "_log_and_throw" and len(args) >= 2:
            # DistributedDataParallel raises through self._log_and_throw(ValueError, "..."): logged, then raised
            self._add(args[1], "raise", last_name(args[0]), call, qual, guard, func)
        elif attr in _CHECKS or attr == "_check_with":
            exc = _CHECK_EXC.get(attr)
            if attr == "_check_with":
                exc, args = (last_name(args[0]) if args else None), args[1:]
            msg = args[1] if len(args) > 1 else kw.get("message")
            if args and msg is not None:
                self._add(msg, "check", exc, call, qual, f"not ({self._segment(args[0])})", func)

    def _add(
        self,
        msg: ast.expr,
        via: str,
        exc: str | None,
        node: ast.stmt | ast.expr,
        qual: tuple[str, ...],
        guard: str | None,
        func: _Env | None,
    ) -> None:
        self._add_parts(self._template(msg, func, node.lineno), via, exc, node, qual, guard, func)

    def _add_parts(
        self,
        parts: Parts,
        via: str,
        exc: str | None,
        node: ast.stmt | ast.expr,
        qual: tuple[str, ...],
        guard: str | None,
        func: _Env | None,
    ) -> None:
        message = _render(parts)
        if message is None:
            return
        self.entries.append(Entry(message, "python", via, exc, self.rel, node.lineno, ".".join(qual) or None, guard))


def _render(parts: Parts) -> str | None:
    """Template text of ``parts`` (holes as ``*``, runs of holes merged); None when too little literal."""
    out: list[str] = []
    for part in parts:
        if part is None or part == "":
            if part is None and not (out and out[-1] == "*"):
                out.append("*")
        else:
            out.append(part)
    text = "".join(out).strip()
    literal = re.sub(r"\s+|\*", "", text)
    return text if len(literal) >= MIN_LITERAL and re.search(r"[A-Za-z]{3}", literal) else None


def python_entries(torch_dir: Path) -> list[Entry]:
    """Message sites of every ``.py`` of :data:`PY_DIRS` (``torch/distributed``, ``torch/nn/parallel``, ...).

    ``torch_dir`` is the torch package directory; files that do not parse are skipped.
    """
    entries: list[Entry] = []
    for sub in PY_DIRS:
        root = torch_dir / sub
        files = sorted(root.rglob("*.py")) if root.is_dir() else [root] if root.is_file() else []
        for path in files:
            try:
                source = path.read_text(encoding="utf-8")
                tree = parse_module(source, str(path))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError, SystemError):
                continue
            rel = path.relative_to(torch_dir.parent).as_posix()
            entries += _Module(source, tree, rel).entries
    return entries


# ------------------------------------------------------------------------------- native build

_RUN = re.compile(rb"[\x20-\x7e\t\n]{%d,}" % MIN_NATIVE)
_C_HOLE = re.compile(r"\{[^{}\s]{0,12}\}|%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L|I64)?[diouxXeEfgGcsp]")
_STRONG = re.compile(
    r"NCCL|nccl|[Gg]loo|c10d|ProcessGroup|[Pp]rocess group|[Rr]endezvous|[Ww]atchdog|TCPStore|[Ss]tore\b|"
    r"[Bb]arrier|[Cc]ollective|libuv|[Ss]ocket|[Ww]orld ?[Ss]ize|all_?[Rr]educe|all_?[Gg]ather|"
    r"reduce_?[Ss]catter|[Hh]eartbeat|[Ff]light ?[Rr]ecorder|MASTER_(ADDR|PORT)|TORCH_NCCL|[Cc]ommunicator|"
    r"[Pp]eer|send/recv|[Rr]ecv\b|[Dd]istributed"
)
_WEAK = re.compile(r"\b[Rr]anks?\b|[Bb]roadcast\b|[Tt]ime(d ?)?out|[Cc]onnect")
_NOT_DIST = re.compile(
    r"(?i)shape|\bdims?\b|dimension|axis|operator|indices|weight|of rank|same rank|"
    r"input rank|rank of|rank must|broadcasting|onnx|quantiz|qnnp"
)
_JUNK = re.compile(r"constexpr|c10::|std::|::<|\s->\s|\(Tensor|__[a-z]|\$\{|https?:|[=!<>]=|&&|\|\|")
_DOCSTRING = re.compile(
    r"^\(?(Gets?|Sets?|Returns?|Creates?|Base class|An implementation|URL specifying|See|"
    r"Enable|Recursively|The type of)\b"
)
_ASSERT = re.compile(r' INTERNAL ASSERT FAILED at "[^"]*distributed[^"]*":\d+')


def _rodata_ranges(mm: mmap.mmap) -> list[tuple[int, int]]:
    """(start, end) file offsets of the read-only string sections of an ELF file; whole file otherwise."""
    try:
        if mm[:4] != b"\x7fELF" or mm[4] != 2 or mm[5] != 1:  # 64-bit little-endian only
            return [(0, len(mm))]
        shoff = struct.unpack_from("<Q", mm, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", mm, 0x3A)
        heads = [struct.unpack_from("<IIQQQQ", mm, shoff + i * shentsize) for i in range(shnum)]
        names_at = heads[shstrndx][4]
        out = []
        for name, _type, _flags, _addr, off, size in heads:
            end = mm.find(b"\0", names_at + name)
            if mm[names_at + name : end].startswith(b".rodata") and size:
                out.append((off, off + size))
        return out or [(0, len(mm))]
    except (struct.error, IndexError, ValueError):
        return [(0, len(mm))]


def _native_message(raw: bytes) -> tuple[str, str | None] | None:
    """(template, condition) when a printable run reads as a distributed-code message, else None."""
    text = raw.decode("ascii").strip()
    if text.count("\n") > 1 or "\t" in text:
        return None
    text = " ".join(text.split())
    condition = None
    hit = _ASSERT.search(text)
    if hit:  # 'cond INTERNAL ASSERT FAILED at "torch/csrc/distributed/...":123, please report a bug ...'
        condition = f"not ({text[: hit.start()]})"
        return "*" + text[hit.start() :], condition
    if not _STRONG.search(text) and not (_WEAK.search(text) and not _NOT_DIST.search(text)):
        return None
    if _JUNK.search(text) or _DOCSTRING.match(text):  # pybind docstrings are not messages
        return None
    template = _C_HOLE.sub("*", text)
    bare = template.replace("*", "")
    letters = sum(c.isalpha() or c == " " for c in bare)
    words = re.findall(r"[A-Za-z]{2,}", bare)
    if len(bare) < MIN_LITERAL or letters < 0.8 * len(bare) or len(words) < 3 or " " not in bare.strip():
        return None
    if not re.search(r"\b[a-z]{2,}\b", bare):  # needs some lower-case prose words
        return None
    return re.sub(r"\*(\s*\*)+", "*", template), condition


def native_entries(torch_dir: Path) -> list[Entry]:
    """Distributed-looking human messages from the shared libraries in ``torch_dir/lib``.

    One entry per distinct template (the first library that holds it); unreadable files are skipped.
    """
    lib = torch_dir / "lib"
    seen: set[str] = set()
    entries: list[Entry] = []
    paths = sorted(p for p in lib.iterdir() if NATIVE_LIBS.match(p.name)) if lib.is_dir() else []
    for path in paths:
        rel = path.relative_to(torch_dir.parent).as_posix()
        try:
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                for start, end in _rodata_ranges(mm):
                    for m in _RUN.finditer(mm, start, end):
                        found = _native_message(m.group())
                        if found and found[0] and found[0] not in seen:
                            seen.add(found[0])
                            entries.append(Entry(found[0], "native", "native", None, rel, None, None, found[1]))
        except (OSError, ValueError):
            continue
    return entries
