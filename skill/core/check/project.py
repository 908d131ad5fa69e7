"""The project pass: when ``check`` is given a directory or several files, a helper defined in one file and
called from another is followed (:class:`Project`).

Each file's module name is its path below the common folder of the checked files (``pkg/train.py`` ->
``pkg.train``). An import is resolved as Python would find it with the importing file's folder or one of the
folders above it (up to that common folder) on ``sys.path``, the nearest first; a relative import from the
importing file's package. What a file learns of the others (:class:`~fsdp_skill.core.check.calls.FileContext`):
the summaries of the functions it imports (returns a wrapped module, wraps or shards its argument, reaches a
collective), the wrapped modules other files pass to its functions, and whether a file that does distributed
work imports it. The facts are rebuilt, only for the files whose context changed, until nothing changes (at most
:data:`ROUNDS` rounds), so the cost stays near-linear in the size of the project.

Each build of a file's facts has the per-file budget it is given (``budget_s``: the engine's
:func:`~fsdp_skill.core.check.engine.check_budget`); a file
that does not parse, that the checker fails on or whose build runs past its budget is left out of the project (the
engine checks it alone and reports it).
"""

from __future__ import annotations

import ast
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import PurePath

from fsdp_skill.core.check import calls, paths
from fsdp_skill.core.check.calls import FileContext, FunctionSummary
from fsdp_skill.core.check.facts import BudgetExceeded, FileFacts, analysis_clock
from fsdp_skill.core.check.rank_conditional import function_collectives, function_guards, reach_paths
from fsdp_skill.core.check.syntax import parse_source

ROUNDS = 4  # rebuilds of the files whose context changed (a chain of helpers longer than that is not followed)
_IMPORT_DEPTH = 2  # a file imported through this many imports of a distributed file counts as used by it


@dataclass
class _File:
    label: str
    parts: tuple[str, ...]  # path below the common folder, without ".py" ("__init__" kept)
    tree: ast.Module
    context: FileContext
    facts: FileFacts | None = None
    imports: dict[str, _File] = field(default_factory=dict)  # import target (module or module.name) -> file
    whole: set[str] = field(default_factory=set)  # targets imported as modules: every function below them is named
    names: dict[str, set[str]] = field(default_factory=dict)  # target -> the names imported from it (from M import f)
    exports: dict[str, FunctionSummary] = field(default_factory=dict)  # function key -> summary (those that tell)
    functions: dict[str, tuple[str, ...]] = field(default_factory=dict)  # key of each module-level function and
    # class __init__ -> its positional parameters


def _module_name(parts: tuple[str, ...]) -> str:
    return ".".join(parts[:-1] if parts and parts[-1] == "__init__" else parts)


@dataclass
class Project:
    """The facts of several checked files, built together (see the module docstring)."""

    files: dict[str, _File] = field(default_factory=dict)
    budget_s: float = math.inf  # seconds each build of one file's facts may take (past it, the file is left out)
    sources: dict[str, str] = field(default_factory=dict)  # label -> the text its tree was parsed from

    @classmethod
    def build(cls, sources: list[tuple[str, str]], *, budget_s: float = math.inf) -> Project:
        """The project of ``sources`` ((label, source text) pairs; the label is the file's path as checked), each
        build of a file's facts bounded by ``budget_s`` seconds.

        Never raises for a file's content: one that does not parse, fails or runs past its budget is left out."""
        project = cls(budget_s=budget_s)
        parsed: list[tuple[str, ast.Module]] = []
        for label, code in sources:
            try:
                parsed.append((label, parse_source(code, label)))
                project.sources[label] = code
            except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
                continue
        if not parsed:
            return project
        paths = [PurePath(label) for label, _ in parsed]
        common = _common_parent(paths)
        by_parts: dict[tuple[str, ...], _File] = {}
        for (label, tree), path in zip(parsed, paths, strict=True):
            rel = path.relative_to(common) if common is not None else path
            parts = tuple(rel.with_suffix("").parts)
            package = _module_name(parts) if parts[-1:] == ("__init__",) else ".".join(parts[:-1])
            f = _File(label, parts, tree, FileContext(module=_module_name(parts), package=package))
            project.files[label] = f
            by_parts[parts] = f
        for f in project.files.values():
            f.imports = _resolve_imports(f, by_parts)
            f.context.modules = set(f.imports)
        project._rounds()
        return project

    def tree_for(self, label: str, code: str) -> ast.Module | None:
        """The parsed module of the checked file ``label`` when the project parsed this same ``code`` (None: not part
        of the project, or another text), which the engine checks instead of parsing the text again (the project's
        facts are of this tree)."""
        f = self.files.get(label)
        return f.tree if f is not None and self.sources.get(label) == code else None

    def context_for(self, label: str) -> FileContext | None:
        """What the other checked files tell the file ``label`` (None: not part of the project)."""
        f = self.files.get(label)
        return f.context if f is not None else None

    def facts_for(self, label: str) -> FileFacts | None:
        """The facts of the checked file ``label`` (None: not part of the project)."""
        f = self.files.get(label)
        return f.facts if f is not None else None

    def _build(self, f: _File) -> None:
        f.context.outgoing.clear()
        try:
            f.facts = calls.build_facts(f.tree, f.context, deadline=analysis_clock() + self.budget_s)
            f.exports, f.functions = _exports(f.facts, f.label)
            f.facts.deadline = math.inf  # that budget was this build's; the engine gives the rules their own
        except Exception:  # noqa: BLE001 - the engine builds this file alone and reports what fails (BudgetExceeded too)
            f.facts, f.exports, f.functions = None, {}, {}

    def _rounds(self) -> None:
        todo = list(self.files.values())
        for f in todo:
            self._build(f)
        self._mark_imported_by_distributed()
        for _ in range(ROUNDS):
            seeds: dict[str, dict[str, dict[str, str]]] = {}
            for f in self.files.values():
                for (qualname, param), kind in f.context.outgoing.items():
                    hit = _target(f, qualname)
                    if hit is not None and param.startswith("#"):  # the i-th positional argument
                        params = hit[0].functions[hit[1]]
                        i = int(param[1:]) + (1 if hit[1].endswith(".__init__") else 0)
                        param = params[i] if i < len(params) else ""
                    if hit is not None and param:
                        seeds.setdefault(hit[0].label, {}).setdefault(hit[1], {})[param] = kind
            todo = []
            for f in self.files.values():
                exports = {
                    f"{target}.{name}": s
                    for target, g in f.imports.items()
                    for key, s in g.exports.items()
                    if (name := key.removesuffix(".__init__")) and (target in f.whole or name in f.names.get(target, ()))
                }
                file_seeds = seeds.get(f.label, {})
                if exports != f.context.exports or file_seeds != f.context.seeds:
                    f.context.exports, f.context.seeds = exports, file_seeds
                    todo.append(f)
            if not todo:
                return
            for f in todo:
                self._build(f)

    def _distributed(self, facts: FileFacts) -> bool:
        """Does the file do distributed work itself (:func:`calls.distributed_work`)? Within the per-file budget;
        a file past it counts as not."""
        facts.deadline = analysis_clock() + self.budget_s
        try:
            return calls.distributed_work(facts, here_only=True)
        except BudgetExceeded:
            return False
        finally:
            facts.deadline = math.inf

    def _mark_imported_by_distributed(self) -> None:
        frontier = [f for f in self.files.values() if f.facts is not None and self._distributed(f.facts)]
        seen = {id(f) for f in frontier}
        for _ in range(_IMPORT_DEPTH):
            nxt: list[_File] = []
            for f in frontier:
                for g in f.imports.values():
                    if id(g) not in seen:
                        seen.add(id(g))
                        g.context.imported_by_distributed = True
                        nxt.append(g)
            frontier = nxt


def _common_parent(paths: list[PurePath]) -> PurePath | None:
    """The deepest folder that holds every path (None: none, e.g. a relative and an absolute path together)."""
    try:
        return PurePath(os.path.commonpath([str(p.parent) for p in paths]))
    except ValueError:
        return None


def _resolve_module(f: _File, module: str, by_parts: dict[tuple[str, ...], _File]) -> _File | None:
    """The checked file ``import module`` from ``f`` finds: under ``f``'s folder or the nearest folder above it."""
    want = tuple(module.split("."))
    base = f.parts[:-1]
    for k in range(len(base), -1, -1):
        for cand in (base[:k] + want, base[:k] + want + ("__init__",)):
            hit = by_parts.get(cand)
            if hit is not None and hit is not f:
                return hit
    return None


def _import_statements(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, nested ones too (under ``if`` / ``try`` / a function), found by walking
    the statements only: an import is never inside an expression, and the expressions are most of a file's nodes."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                todo += reversed(children)
    return found


def _resolve_imports(f: _File, by_parts: dict[tuple[str, ...], _File]) -> dict[str, _File]:
    """Import target as the file spells it in its calls (``utils``, ``pkg.utils``, the module-qualified name of a
    relative import) -> the checked file that defines it (a module, or the module of an imported name)."""
    out: dict[str, _File] = {}
    for node in _import_statements(f.tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                hit = _resolve_module(f, a.name, by_parts)
                if hit is not None:
                    out[a.name] = hit
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                module = calls.relative_module(f.context.package, node.level, node.module)
                hit = by_parts.get(tuple(module.split("."))) or by_parts.get((*module.split("."), "__init__"))
            else:
                module = node.module or ""
                hit = _resolve_module(f, module, by_parts) if module else None
            for a in node.names:
                sub = (
                    by_parts.get((*module.split("."), a.name))
                    if node.level
                    else _resolve_module(f, f"{module}.{a.name}", by_parts)
                )
                if sub is not None:
                    out[f"{module}.{a.name}" if module else a.name] = sub  # from pkg import mod
                    f.whole.add(f"{module}.{a.name}" if module else a.name)
                elif hit is not None:
                    out[module] = hit
                    f.names.setdefault(module, set()).add(a.name)
    f.whole |= {t for t in out if t not in f.names}
    return out


def _target(f: _File, qualname: str) -> tuple[_File, str] | None:
    """(defining file, function key) of a qualified name ``f`` calls (``pkg.utils.evaluate``, ``utils.Trainer`` for
    its ``__init__``)."""
    head, _, name = qualname.rpartition(".")
    g = f.imports.get(head)
    if g is None or not head:
        return None
    if name in g.functions:
        return g, name
    init = f"{name}.__init__"
    return (g, init) if init in g.functions else None


def _exports(facts: FileFacts, label: str) -> tuple[dict[str, FunctionSummary], dict[str, tuple[str, ...]]]:
    """(function key -> summary, for the module-level functions and the classes' ``__init__`` of one file that tell
    their callers something; the keys of all of them)."""
    collectives, guards, ways = function_collectives(facts), function_guards(facts), reach_paths(facts)
    out: dict[str, FunctionSummary] = {}
    keys: dict[str, tuple[str, ...]] = {}
    for key, fn in calls.local_functions(facts).items():
        if ".<locals>." in key or "." in key and not key.endswith(".__init__"):
            continue
        s = replace(calls.summarise(facts, fn, label), path=label)
        keys[key] = s.params
        saves, loads = paths.state_traffic(facts, fn)
        s = replace(s, state_saves=saves, state_loads=loads)
        got = collectives.get(key)
        if got is not None:
            s = replace(
                s,
                collective=(got[0], got[1], got[2], got[3] or label),
                collective_when=guards.get(key, ()),
                collective_paths=ways.get(key, ()),
            )
        if (
            s.returns
            or s.returns_param is not None
            or s.wraps
            or s.in_place
            or s.sampler
            or s.loader
            or s.collective
            or s.returns_items
            or s.state_saves
            or s.state_loads
        ):
            out[key] = s  # a function that does none of these tells its callers nothing: not exported (fewer rebuilds)
    return out, keys
