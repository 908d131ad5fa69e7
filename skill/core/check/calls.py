"""Facts that follow modules through the functions of a file and the files of a checked project.

:func:`build_facts` is :meth:`FileFacts.build <fsdp_skill.core.check.facts.FileFacts.build>` plus what the
calls tell: an FSDP/DDP/``fully_shard``-ed module

- passed as an argument to a function of the checked code (its parameter holds that module too:
  ``evaluate(model)`` makes ``model`` inside ``evaluate`` an FSDP module),
- returned from a helper (``model = apply_fsdp(model)`` where the helper's body wraps or shards),
- sharded in place by a helper (``apply_fsdp(model)`` calling ``fully_shard`` on its parameter),
- held in ``self.`` attributes (``self.model = model``), read back (``model = self.model``),
- through simple wrappers (``torch.compile``, ``.to()``, a helper that returns its argument),

is marked in the facts' wrapped sets (``fsdp1`` / ``fsdp2`` / ``ddp``), so every finder that asks
``facts.is_fsdp(node)`` sees it without code of its own. Closures are followed by
:meth:`FileFacts._variable_key`.

Each function gets a :class:`FunctionSummary` (memoised per round; a fixpoint of at most :data:`ROUNDS` passes
over the file, each linear in its size). :func:`callee` resolves a call to a function of this file (a
module-level function, a nested one, a method through ``self.``, a class's ``__init__``) or, in a project
(:mod:`fsdp_skill.core.check.project`), to the summary of a function of another checked file.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from fsdp_skill.core.check.facts import DDP, FSDP1, FULLY_SHARD, FileFacts, dotted, end, kwarg, last_name

Function = ast.FunctionDef | ast.AsyncFunctionDef
Key = tuple[int, str]
ROUNDS = 6  # passes of the in-file fixpoint (each pass is linear; most files settle in one or two)
_DEPTH = 6  # how far one expression is followed through names and wrappers
_KIND_OF_API = {FSDP1: "fsdp1", FULLY_SHARD: "fsdp2", DDP: "ddp"}
# calls that return the module they are given first, as it is (wrapped or not)
_PASS_THROUGH = {"torch.compile", "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper"}
_SELF_METHODS = {"to", "cuda", "cpu", "bfloat16", "half", "float", "double", "to_empty", "train", "eval", "requires_grad_"}
_SUMMARIES = "calls.summaries"
_INDEX = "calls.index"
_CONTEXT = "calls.context"
_RESOLVED = "calls.resolved"


@dataclass(frozen=True)
class FunctionSummary:
    """What a function of the checked code does with the modules it is given, as its callers need it.

    ``params`` are its positional parameter names (``self`` included for a method); indices below are into it."""

    name: str
    """The name shown in a finding (``evaluate``, ``Trainer.validate``)"""
    path: str
    """The file that defines it, as checked"""
    line: int
    """1-based line of its ``def``"""
    params: tuple[str, ...] = ()
    returns: str | None = None
    """'fsdp1' | 'fsdp2' | 'ddp': it returns a module of that kind"""
    returns_param: int | None = None
    """It returns its parameter of this index (or a simple wrapper of it: ``torch.compile``, ``.to()``)"""
    wraps: tuple[tuple[int, str], ...] = ()
    """(parameter index, kind): it wraps or shards that parameter (or a submodule of it)"""
    in_place: tuple[tuple[int, str], ...] = ()
    """(parameter index, kind): that parameter is that kind after the call (``fully_shard`` works in place)"""
    sampler: bool = False
    """It returns a shuffling ``DistributedSampler``"""
    loader: int | None = None
    """Line of a ``DataLoader(...)`` with no sampler that it returns (:func:`unsharded_loader`)"""
    returns_items: tuple[tuple[int, str], ...] = ()
    """(position, kind): it returns a tuple whose item at that position is a module of that kind (``return model,
    optimizer``)"""
    collective: tuple[str, str, int, str] | None = None
    """(rule code, label, line, file) of a collective a call of it reaches (set by the project pass)"""
    collective_when: tuple[str, ...] = ()
    """Conditions (source text, in terms of its parameters) that hold wherever it reaches a collective: ``("on_all_ranks",)``
    for ``if on_all_ranks: dist.barrier()`` (set by the project pass; empty: unconditional or unknown)"""
    collective_paths: tuple[tuple[str, ...], ...] = ()
    """The conditions of each way it reaches a collective (one tuple per way, its conditions in terms of its parameters;
    a way with none is ``()``): ``(("local_rank not in [-1, 0]",), ("local_rank == 0",))`` for yolov5's
    ``torch_distributed_zero_first``; a call whose arguments make every way false reaches none (set by the project pass)"""
    defaults: tuple[tuple[str, str], ...] = ()
    """(parameter, source text) of each parameter with a literal default (``rank=-1``): what a call that omits it passes"""
    state_saves: tuple[tuple[int, int, str], ...] = ()
    """(module parameter, path parameter, repr of the dict key) of each module state dict it saves to a path it is
    given (``torch.save({"model": model.state_dict()}, path)``; set by the project pass)"""
    state_loads: tuple[tuple[int, int, str], ...] = ()
    """The same for each state dict it loads into a module it is given (``model.load_state_dict(torch.load(path)[key])``)"""


@dataclass
class FileContext:
    """What a file of a checked project knows of the others (:mod:`fsdp_skill.core.check.project`)."""

    module: str
    """The file's dotted module name within the project (``pkg.train``)"""
    package: str = ""
    """The package its relative imports start from (``pkg``; for ``pkg/__init__.py`` itself ``pkg``)"""
    exports: dict[str, FunctionSummary] = field(default_factory=dict)
    """Qualified name (``pkg.utils.evaluate``) -> summary, for the functions (and classes' ``__init__``) of the others"""
    seeds: dict[str, dict[str, str]] = field(default_factory=dict)
    """Function key of this file (``evaluate``, ``Trainer.__init__``) -> {parameter: kind} its callers elsewhere pass"""
    modules: set[str] = field(default_factory=set)
    """The import targets of this file that are checked files (``pkg.helpers``): only names below them are looked up"""
    imported_by_distributed: bool = False
    """Another checked file that does distributed work imports this one"""
    outgoing: dict[tuple[str, str], str] = field(default_factory=dict)
    """(qualified name elsewhere, parameter name or ``#i`` for the i-th positional argument) -> kind this file
    passes it (filled while building)"""


@dataclass(frozen=True)
class Callee:
    """The function a call runs: a local one (``fn`` set) or another file's (``qualname`` set)."""

    summary: FunctionSummary
    offset: int = 0  # positional arguments start at this parameter (1 for a method called on its instance)
    fn: Function | None = None
    key: str | None = None  # function key in this file (see FileContext.seeds)
    qualname: str | None = None  # qualified name in the project


@dataclass
class _Index:
    """The functions of one file, found once."""

    module: dict[str, Function] = field(default_factory=dict)  # defined at module level (also under if / try)
    nested: dict[tuple[int, str], Function] = field(default_factory=dict)  # (id of the enclosing function, name)
    classes: dict[str, dict[str, Function]] = field(default_factory=dict)  # module-level class -> its methods
    class_of: dict[int, str] = field(default_factory=dict)  # id(method) -> its class name
    keys: dict[int, str] = field(default_factory=dict)  # id(function) -> its key (qualified name in the file)
    relative: dict[str, str] = field(default_factory=dict)  # name bound by a relative import -> qualified name


def context_of(facts: FileFacts) -> FileContext | None:
    """The project context ``facts`` were built with (None: a single file)."""
    ctx = facts.cache.get(_CONTEXT)
    return ctx if isinstance(ctx, FileContext) else None


def build_facts(tree: ast.Module, context: FileContext | None = None, *, deadline: float = math.inf) -> FileFacts:
    """:meth:`FileFacts.build` of ``tree``, with the wrapped modules followed through calls (see the module docstring).
    ``deadline``: a :func:`analysis_clock` value (CPU seconds of the analysing thread) bounding the analysis (:meth:`FileFacts.tick`); raises
    BudgetExceeded past it."""
    facts = FileFacts.build(tree, deadline=deadline)
    if context is not None:
        facts.cache[_CONTEXT] = context
    propagate(facts)
    return facts


def _index(facts: FileFacts) -> _Index:
    cached = facts.cache.get(_INDEX)
    if isinstance(cached, _Index):
        return cached
    idx = _Index()
    facts.cache[_INDEX] = idx
    for node in facts.nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parent = facts.parents.get(id(node))
            scope = facts.scope_of(node)
            if isinstance(parent, ast.ClassDef):
                if isinstance(facts.scope_of(parent), ast.Module):
                    idx.classes.setdefault(parent.name, {})[node.name] = node
                    idx.class_of[id(node)] = parent.name
                    idx.keys[id(node)] = f"{parent.name}.{node.name}"
            elif isinstance(scope, ast.Module):
                if not any(isinstance(a, ast.ClassDef) for a in facts.ancestors(node)):
                    idx.module.setdefault(node.name, node)
                    idx.keys[id(node)] = node.name
            elif isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(scope) in idx.keys:
                idx.nested[(id(scope), node.name)] = node
                idx.keys[id(node)] = f"{idx.keys[id(scope)]}.<locals>.{node.name}"
        elif isinstance(node, ast.ImportFrom) and node.level:
            ctx = context_of(facts)
            if ctx is not None:
                mod = relative_module(ctx.package, node.level, node.module)
                for a in node.names:
                    idx.relative[a.asname or a.name] = f"{mod}.{a.name}" if mod else a.name
    return idx


def relative_module(package: str, level: int, module: str | None) -> str:
    """The absolute module ``from <level dots><module> import ...`` names from ``package`` (``"" `` at the top)."""
    base = package.split(".") if package else []
    base = base[: max(0, len(base) - (level - 1))]
    return ".".join([*base, *([module] if module else [])])


def local_functions(facts: FileFacts) -> dict[str, Function]:
    """Key (``evaluate``, ``Trainer.validate``, ``train.<locals>.step``) -> every function of the file that a call
    can be resolved to, in source order."""
    idx = _index(facts)
    found: dict[int, Function] = {}
    for node in facts.nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) in idx.keys:
            found[id(node)] = node
    return {idx.keys[i]: fn for i, fn in found.items()}


def _params(fn: Function) -> tuple[str, ...]:
    return tuple(a.arg for a in fn.args.posonlyargs + fn.args.args)


def literal_defaults(fn: Function) -> tuple[tuple[str, str], ...]:
    """(parameter, source text) of each parameter of ``fn`` (positional or keyword-only) whose default is a literal
    (``rank=-1``, ``verbose=False``, ``ranks=(0,)``): what a call that leaves it out passes."""
    args = fn.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    out = []
    for a, d in pairs:
        try:
            ast.literal_eval(d)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        out.append((a.arg, ast.unparse(d)))
    return tuple(out)


def _local_summary(facts: FileFacts, fn: Function) -> FunctionSummary:
    summaries = facts.cache.get(_SUMMARIES)
    if isinstance(summaries, dict) and id(fn) in summaries:
        got = summaries[id(fn)]
        assert isinstance(got, FunctionSummary)
        return got
    idx = _index(facts)
    return FunctionSummary(
        name=idx.keys.get(id(fn), fn.name), path="", line=fn.lineno, params=_params(fn), defaults=literal_defaults(fn)
    )


def _method(fn: Function, offset: int) -> int:
    """The offset for a call of ``fn`` on an instance or class: 1 unless it is a ``@staticmethod``."""
    return 0 if any(dotted(d) == "staticmethod" for d in fn.decorator_list) else offset


def callee(facts: FileFacts, call: ast.Call) -> Callee | None:
    """The function of the checked code ``call`` runs, with its summary, or None (a library call, or unknown)."""
    memo: dict[int, tuple[Function, int] | str | None] = facts.cache.setdefault(_RESOLVED, {})
    key = id(call)
    if key not in memo:
        memo[key] = _resolve(facts, call)
    got = memo[key]
    if got is None:
        return None
    if isinstance(got, str):
        return _external(facts, got)
    fn, offset = got
    return Callee(_local_summary(facts, fn), offset=offset, fn=fn, key=_index(facts).keys[id(fn)])


def _resolve(facts: FileFacts, call: ast.Call) -> tuple[Function, int] | str | None:
    """(local function, argument offset), the qualified name of another checked file's function, or None."""
    idx = _index(facts)
    func = call.func
    if isinstance(func, ast.Name):
        scope = facts.scope_of(call)
        while isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            fn = idx.nested.get((id(scope), func.id))
            if fn is not None:
                return fn, 0
            scope = facts.scope_of(scope)
        fn = idx.module.get(func.id)
        if fn is not None:
            return fn, 0
        init = idx.classes.get(func.id, {}).get("__init__")
        if init is not None:
            return init, 1
        if func.id in idx.classes:
            return None
        return external_name(facts, call)
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            owner = next((idx.class_of[id(a)] for a in facts.ancestors(call) if id(a) in idx.class_of), None)
            fn = idx.classes.get(owner or "", {}).get(func.attr)
            return (fn, _method(fn, 1)) if fn is not None else None
        return external_name(facts, call)
    return None


def external_name(facts: FileFacts, call: ast.Call) -> str | None:
    """The qualified name (``pkg.helpers.evaluate``) of another checked file's function that ``call`` names through
    an import, or None (a single file; a library; a local name)."""
    ctx = context_of(facts)
    if ctx is None or not ctx.modules:
        return None
    idx = _index(facts)
    base = dotted(call.func)
    if base is None:
        return None
    head, _, rest = base.partition(".")
    target = idx.relative.get(head) or facts.aliases.get(head)
    if target is None:
        return None
    qualname = ".".join(p for p in (target, rest) if p)
    return qualname if qualname.rpartition(".")[0] in ctx.modules else None


def _external(facts: FileFacts, qualname: str) -> Callee | None:
    ctx = context_of(facts)
    if ctx is None:
        return None
    summary = ctx.exports.get(qualname)
    if summary is None:
        return None
    offset = 1 if summary.name.endswith(".__init__") else 0
    return Callee(summary, offset=offset, qualname=qualname)


def calls_named(facts: FileFacts, name: str) -> list[ast.Call]:
    """The calls of the file whose callee is named ``name`` (``f(...)``, ``obj.f(...)``): one pass, memoised."""
    memo: dict[str, list[ast.Call]] | None = facts.cache.get(("calls", "by-name"))
    if memo is None:
        memo = {}
        for c in facts.calls():
            if (n := last_name(c)) is not None:
                memo.setdefault(n, []).append(c)
        facts.cache[("calls", "by-name")] = memo
    return memo.get(name, [])


def arguments_for(facts: FileFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> list[tuple[ast.Call, ast.expr]]:
    """(call, argument) for every call in the file of ``fn`` (a function of the file) that gives its parameter
    ``param`` a value, by position or by keyword, in source order."""
    out: list[tuple[ast.Call, ast.expr]] = []
    for call in calls_named(facts, fn.name):
        target = callee(facts, call)
        if target is None or target.fn is not fn:
            continue
        given = {target.summary.params[i]: arg for i, arg in bound_args(call, target)}
        given |= {k.arg: k.value for k in call.keywords if k.arg is not None}
        if param in given:
            out.append((call, given[param]))
    return out


def bound_args(call: ast.Call, target: Callee) -> list[tuple[int, ast.expr]]:
    """(parameter index, argument) for each argument of ``call`` that binds a named positional parameter."""
    params = target.summary.params
    out: list[tuple[int, ast.expr]] = []
    for j, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if j + target.offset < len(params):
            out.append((j + target.offset, arg))
    for kw in call.keywords:
        if kw.arg is not None and kw.arg in params:
            out.append((params.index(kw.arg), kw.value))
    return out


def expr_kind(facts: FileFacts, node: ast.AST | None, depth: int = 0) -> str | None:
    """'fsdp1' | 'fsdp2' | 'ddp' when ``node`` evaluates to a module of that kind (a wrapped variable, a wrapper
    call, a simple wrapper of one, a helper that returns one), else None."""
    if node is None or depth > _DEPTH:
        return None
    if isinstance(node, (ast.Name, ast.Attribute)):
        key = facts._variable_key(node)
        if facts.before_wrap(node, key):
            return None  # read before its scope wraps it: the plain module
        if key in facts.fsdp1:
            return "fsdp1"
        if key in facts.fsdp2:
            return "fsdp2"
        return "ddp" if key in facts.ddp else None
    if not isinstance(node, ast.Call):
        return None
    q = facts.qual(node) or ""
    if q in _KIND_OF_API:
        return _KIND_OF_API[q]
    if q in _PASS_THROUGH and node.args:
        return expr_kind(facts, node.args[0], depth + 1)
    if isinstance(node.func, ast.Attribute) and node.func.attr in _SELF_METHODS:
        return expr_kind(facts, node.func.value, depth + 1)
    target = callee(facts, node)
    if target is None:
        return None
    if target.summary.returns:
        return target.summary.returns
    if target.summary.returns_param is not None:
        arg = dict(bound_args(node, target)).get(target.summary.returns_param)
        return expr_kind(facts, arg, depth + 1)
    return None


def _param_index(facts: FileFacts, fn: Function, node: ast.AST, params: tuple[str, ...]) -> int | None:
    """Index of the parameter of ``fn`` that ``node`` is (or hangs off: ``model.layers[0]``), as first bound."""
    c = facts.chain(node)
    if c is None or c.root[0] != id(fn) or c.root[2] != 0 or c.root[1] not in params:
        return None
    return params.index(c.root[1])


def is_shuffling_sampler(facts: FileFacts, node: ast.AST | None) -> bool:
    """Is ``node`` (through names) a ``DistributedSampler(...)`` that shuffles (its ``shuffle`` not False)?"""
    node = facts.resolve(node)
    if not isinstance(node, ast.Call):
        return False
    q = facts.qual(node) or ""
    shuffle = kwarg(node, "shuffle")
    return (
        q.startswith("torch.utils.data")
        and q.endswith("DistributedSampler")
        and not (isinstance(shuffle, ast.Constant) and shuffle.value is False)
    )


def summarise(facts: FileFacts, fn: Function, path: str = "") -> FunctionSummary:
    """The :class:`FunctionSummary` of ``fn`` from the facts as they stand (one scan of its body)."""
    params = _params(fn)
    returns: str | None = None
    returns_param: int | None = None
    wraps: dict[int, str] = {}
    in_place: dict[int, str] = {}
    sampler = False
    loader: int | None = None
    items: dict[int, str] = {}
    for node in facts.scope_nodes(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            _tuple_items(facts, node.value, items)
        if isinstance(node, ast.Return) and node.value is not None:
            loader = loader or returned_loader(facts, node.value)
            returns = returns or expr_kind(facts, node.value)
            i = _param_index(facts, fn, node.value, params)
            whole = facts.chain(node.value)
            if i is not None and whole is not None and not whole.parts and returns_param in (None, i):
                returns_param = i
            sampler = sampler or is_shuffling_sampler(facts, node.value)
        elif isinstance(node, ast.Call):
            q = facts.qual(node) or ""
            if q in _KIND_OF_API and node.args:
                arg = node.args[0]
                for el in arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]:
                    i = _param_index(facts, fn, el, params)
                    if i is not None:
                        wraps.setdefault(i, _KIND_OF_API[q])
                        if q == FULLY_SHARD:
                            in_place[i] = "fsdp2"
            else:
                _through_call(facts, fn, node, params, wraps, in_place)
    idx = _index(facts)
    return FunctionSummary(
        name=idx.keys.get(id(fn), fn.name),
        path=path,
        line=fn.lineno,
        params=params,
        defaults=literal_defaults(fn),
        returns=returns,
        returns_param=returns_param,
        wraps=tuple(sorted(wraps.items())),
        in_place=tuple(sorted(in_place.items())),
        sampler=sampler,
        loader=loader,
        returns_items=tuple(sorted(items.items())),
    )


def _through_call(
    facts: FileFacts, fn: Function, node: ast.Call, params: tuple[str, ...], wraps: dict[int, str], in_place: dict[int, str]
) -> None:
    """What ``fn`` does to its parameters by handing them to the function ``node`` calls (which wraps or shards them)."""
    target = callee(facts, node)
    if target is None or target.fn is fn:
        return
    for j, arg in bound_args(node, target):
        i = _param_index(facts, fn, arg, params)
        if i is None:
            continue
        for pj, kind in target.summary.wraps:
            if pj == j:
                wraps.setdefault(i, kind)
        for pj, kind in target.summary.in_place:
            if pj == j:
                in_place.setdefault(i, kind)


def _tuple_items(facts: FileFacts, value: ast.Tuple, items: dict[int, str]) -> None:
    """Put in ``items`` the kind of each wrapped module of the returned tuple ``value``, by position."""
    for k, el in enumerate(value.elts):
        if isinstance(el, ast.Starred):
            return  # the positions after it are not known
        if (kind := expr_kind(facts, el)) is not None:
            items.setdefault(k, kind)


def _add(facts: FileFacts, key: Key | None, kind: str) -> bool:
    if key is None:
        return False
    if kind == "fsdp1":
        if key in facts.fsdp1:
            return False
        facts.fsdp1.add(key)
        facts.fsdp2.discard(key)
        return True
    if kind == "fsdp2":
        if key in facts.fsdp2 or key in facts.fsdp1:
            return False
        facts.fsdp2.add(key)
        return True
    if key in facts.ddp:
        return False
    facts.ddp.add(key)
    return True


def _target_key(facts: FileFacts, target: ast.AST) -> Key | None:
    if isinstance(target, ast.Name):
        return (id(facts.scope_of(target)), target.id)
    return facts._variable_key(target) if isinstance(target, ast.Attribute) else None


def _wraps_anything(facts: FileFacts) -> bool:
    return bool(facts.fsdp1 or facts.fsdp2 or facts.ddp) or any(facts.qual(c) in _KIND_OF_API for c in facts.calls())


def propagate(facts: FileFacts) -> None:
    """Extend ``facts``' wrapped sets with what the calls tell (see the module docstring); a bounded fixpoint."""
    ctx = context_of(facts)
    if not _wraps_anything(facts) and (ctx is None or not ctx.exports and not ctx.seeds):
        return  # nothing is wrapped here, and nothing comes from elsewhere
    funcs = local_functions(facts)
    if ctx is not None:
        for key, seeded in ctx.seeds.items():
            seed_fn = funcs.get(key)
            if seed_fn is not None:
                for param, kind in seeded.items():
                    _add(facts, (id(seed_fn), param), kind)
    for _ in range(ROUNDS):
        facts.cache[_SUMMARIES] = {id(fn): summarise(facts, fn) for fn in funcs.values()}
        if not _round(facts, ctx):
            break


def _round(facts: FileFacts, ctx: FileContext | None) -> bool:
    """One pass of :func:`propagate` over the file; did it mark anything new?"""
    changed = False
    for node in facts.nodes:
        facts.tick()  # bounded by the file's budget, as every rule is
        if isinstance(node, (ast.Assign, ast.For, ast.AsyncFor)):
            changed |= _unpacked(facts, node)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            kind = expr_kind(facts, node.value)
            if kind is not None:
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    changed |= _add(facts, _target_key(facts, t), kind)
                    if isinstance(node.value, ast.Call):
                        facts.note_wrap(t, end(node))
        elif isinstance(node, ast.Call):
            target = callee(facts, node)
            if target is None:
                if ctx is not None:
                    _unknown_external(facts, ctx, node)
                continue
            in_place = dict(target.summary.in_place)
            for i, arg in bound_args(node, target):
                if i in in_place and isinstance(arg, (ast.Name, ast.Attribute)):
                    changed |= _add(facts, facts._variable_key(arg), in_place[i])
                    facts.note_wrap(arg, end(node))
                kind = expr_kind(facts, arg)
                if kind is None:
                    continue
                param = target.summary.params[i]
                if target.fn is not None:
                    changed |= _add(facts, (id(target.fn), param), kind)
                elif ctx is not None and target.qualname is not None:
                    ctx.outgoing[(target.qualname, param)] = kind
    return changed


def _unpacked(facts: FileFacts, node: ast.Assign | ast.For | ast.AsyncFor) -> bool:
    """``model, optimizer = setup(args)``: each name takes the kind the helper returns at its position; ``a, b = x,
    y``: each the kind of its value; ``for m in [model, ema]``: ``m`` is each of them in turn."""
    if not isinstance(node, ast.Assign):
        changed = False
        for el in node.iter.elts if isinstance(node.iter, (ast.List, ast.Tuple)) else []:
            if (kind := expr_kind(facts, el)) is not None:
                changed |= _add(facts, _target_key(facts, node.target), kind)
        return changed
    targets = [t for t in node.targets if isinstance(t, (ast.Tuple, ast.List))]
    if isinstance(node.value, (ast.Tuple, ast.List)):
        return _paired(facts, node, targets, node.value.elts)
    if not isinstance(node.value, ast.Call) or not targets:
        return False
    target = callee(facts, node.value)
    if target is None or not target.summary.returns_items:
        return False
    changed = False
    for t in targets:
        if any(isinstance(el, ast.Starred) for el in t.elts):
            continue
        for k, kind in target.summary.returns_items:
            if k < len(t.elts) and isinstance(t.elts[k], (ast.Name, ast.Attribute)):
                changed |= _add(facts, _target_key(facts, t.elts[k]), kind)
                facts.note_wrap(t.elts[k], end(node))
    return changed


def _paired(facts: FileFacts, node: ast.Assign, targets: Sequence[ast.expr], values: Sequence[ast.expr]) -> bool:
    """``self.model, self.device = model, device``: each target takes the kind of the value at its position."""
    changed = False
    for t in targets:
        if (
            not isinstance(t, (ast.Tuple, ast.List))
            or len(t.elts) != len(values)
            or any(isinstance(e, ast.Starred) for e in [*t.elts, *values])
        ):
            continue
        for el, value in zip(t.elts, values, strict=True):
            kind = expr_kind(facts, value)
            if kind is not None and isinstance(el, (ast.Name, ast.Attribute)):
                changed |= _add(facts, _target_key(facts, el), kind)
                facts.note_wrap(el, end(node))
    return changed


def _unknown_external(facts: FileFacts, ctx: FileContext, call: ast.Call) -> None:
    """A call of another checked file's function whose summary this file does not have (it tells nothing yet):
    what it is passed still goes out, by position (``#0``) or keyword, for the project to seed its parameters."""
    qualname = external_name(facts, call)
    if qualname is None:
        return
    for j, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if (kind := expr_kind(facts, arg)) is not None:
            ctx.outgoing[(qualname, f"#{j}")] = kind
    for kw in call.keywords:
        if kw.arg is not None and (kind := expr_kind(facts, kw.value)) is not None:
            ctx.outgoing[(qualname, kw.arg)] = kind


def helper_wraps(facts: FileFacts, apis: set[str]) -> list[tuple[ast.Call, ast.expr]]:
    """(call, argument) for each call of a function of the checked code that wraps or shards that argument with
    one of ``apis`` (``apply_fsdp(model)`` whose body runs ``fully_shard(model)``)."""
    kinds = {_KIND_OF_API[a] for a in apis if a in _KIND_OF_API}
    out: list[tuple[ast.Call, ast.expr]] = []
    summaries = facts.cache.get(_SUMMARIES)
    ctx = context_of(facts)
    if not kinds or not (
        ctx is not None and ctx.exports or isinstance(summaries, dict) and any(s.wraps for s in summaries.values())
    ):
        return out  # no function of the checked code wraps anything
    for call in facts.calls():
        if facts.qual(call) in _KIND_OF_API:
            continue
        target = callee(facts, call)
        if target is None or not target.summary.wraps:
            continue
        wrapped = {i for i, kind in target.summary.wraps if kind in kinds}
        out += [(call, arg) for i, arg in bound_args(call, target) if i in wrapped]
    return out


def returns_sampler(facts: FileFacts, call: ast.AST | None) -> bool:
    """Is ``call`` a call of a function of the checked code that returns a shuffling ``DistributedSampler``?"""
    if not isinstance(call, ast.Call):
        return False
    target = callee(facts, call)
    if target is None:
        return False
    if target.fn is None or target.summary.sampler:
        return target.summary.sampler
    memo: dict[int, bool] = facts.cache.setdefault("calls.sampler", {})
    if id(target.fn) not in memo:  # a file with nothing wrapped has no summaries: one scan of the function
        memo[id(target.fn)] = summarise(facts, target.fn).sampler
    return memo[id(target.fn)]


def distributed_work(facts: FileFacts, *, here_only: bool = False) -> bool:
    """Does the file call into ``torch.distributed`` / ``torch.nn.parallel`` (a collective, a process group, a
    DDP or FSDP wrap), or (unless ``here_only``) does a checked file that does import it?"""
    ctx = context_of(facts)
    if not here_only and ctx is not None and ctx.imported_by_distributed:
        return True
    for c in facts.calls():
        q = facts.qual(c) or ""
        if q.startswith(("torch.distributed.", "torch.nn.parallel.")) and not (
            q.startswith(_NOT_WORK_PREFIXES) or q.rsplit(".", 1)[-1] in _QUERIES
        ):
            return True
    return False


# what a plain model file calls without doing distributed work: activation checkpointing, questions about the job
_NOT_WORK_PREFIXES = ("torch.distributed.algorithms._checkpoint.",)
_QUERIES = {"is_available", "is_initialized", "is_torchelastic_launched", "get_rank", "get_world_size", "get_backend"}


# --- loaders (FSD061): what a DataLoader gives each rank --------------------------------------------------------

# words in a dataset's construction that split it per rank
_SPLIT_WORDS = ("world_size", "num_replicas", "num_shards", "split_by_node", "split_dataset_by_node", "nodesplitter")
_SPLIT_CALLS = {"get_world_size", "Subset", "shard", "split_dataset_by_node", "DistributedSampler"}


def returned_loader(facts: FileFacts, value: ast.expr) -> int | None:
    """The line of the ``DataLoader(...)`` with no sampler (:func:`unsharded_loader`) that a ``return value`` returns,
    directly or through a name, else None."""
    made = facts.resolve(value)
    return made.lineno if isinstance(made, ast.Call) and is_loader_call(facts, made) and unsharded_loader(facts, made) else None


def is_loader_call(facts: FileFacts, node: ast.AST | None) -> bool:
    """``torch.utils.data.DataLoader(...)`` (or a ``DataLoader`` imported from elsewhere under that name)."""
    return isinstance(node, ast.Call) and (facts.qual(node) or "").rsplit(".", 1)[-1] == "DataLoader"


def unsharded_loader(facts: FileFacts, loader: ast.Call) -> bool:
    """Is ``loader`` (a ``DataLoader(...)`` call) one that gives every rank the whole dataset: no sampler or batch
    sampler of any kind (``sampler=None`` written out counts as none), all its arguments visible, and a dataset the
    file does not show being split per rank (:func:`split_dataset`)?"""
    if any(k.arg is None for k in loader.keywords) or any(isinstance(a, ast.Starred) for a in loader.args):
        return False
    for name, pos in (("sampler", 3), ("batch_sampler", 4)):
        given = kwarg(loader, name, pos)
        if given is not None and not (isinstance(given, ast.Constant) and given.value is None):
            return False
    dataset = kwarg(loader, "dataset", 0)
    return dataset is not None and not split_dataset(facts, dataset)


def _attribute_values(facts: FileFacts, name: str) -> list[ast.expr]:
    """The values the file assigns to the attribute ``name`` (``self.train_ds = ...``)."""
    key = ("calls.attribute-values", name)
    if key not in facts.cache:
        facts.cache[key] = [
            n.value
            for n in facts.nodes
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and dotted(t) == name for t in n.targets)
        ]
    found: list[ast.expr] = facts.cache[key]
    return found


def split_dataset(facts: FileFacts, dataset: ast.AST, depth: int = 0) -> bool:
    """May ``dataset`` be split per rank, or split itself? Its construction, followed through names, ``self.``
    attributes and the returns of the checked code's helpers, names a rank or the world size, calls ``Subset`` /
    ``.shard()`` / ``split_dataset_by_node`` / a webdataset, or builds an ``IterableDataset`` or a class of the file
    that is one or reads a rank. Bounded; past the bound, True (silent)."""
    if depth > 4:
        return True
    for n in ast.walk(dataset):
        facts.tick()
        if isinstance(n, (ast.Name, ast.Attribute, ast.Call)):
            if facts.is_rank_expr(n) or _splits_by_name(facts, n):
                return True
        if isinstance(n, ast.Name):
            value = facts.resolve(n)
            if value is not None and value is not n and split_dataset(facts, value, depth + 1):
                return True
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
            if any(split_dataset(facts, v, depth + 1) for v in _attribute_values(facts, dotted(n) or "")):
                return True
        elif isinstance(n, ast.Call):
            cls = _class_of_file(facts, n)
            if cls is not None and _class_splits(facts, cls):
                return True
            target = callee(facts, n)
            if target is not None and target.fn is not None and target.fn is not facts.scope_of(n):
                for ret in facts.scope_nodes(target.fn):
                    if isinstance(ret, ast.Return) and ret.value is not None and split_dataset(facts, ret.value, depth + 1):
                        return True
    return False


def _splits_by_name(facts: FileFacts, n: ast.Name | ast.Attribute | ast.Call) -> bool:
    text = (dotted(n.func if isinstance(n, ast.Call) else n) or "").lower()
    q = facts.qual(n) or ""
    return (
        any(w in text for w in _SPLIT_WORDS)
        or isinstance(n, ast.Call)
        and last_name(n) in _SPLIT_CALLS
        or q.startswith(("webdataset.", "torchdata."))
        or "IterableDataset" in q
    )


def _class_of_file(facts: FileFacts, call: ast.Call) -> ast.ClassDef | None:
    if not isinstance(call.func, ast.Name):
        return None
    return next((n for n in facts.nodes if isinstance(n, ast.ClassDef) and n.name == call.func.id), None)


def _class_splits(facts: FileFacts, cls: ast.ClassDef) -> bool:
    """A dataset class of the file that is an ``IterableDataset`` or reads a rank / world size / worker info."""
    if any("Iterable" in (dotted(b) or "") for b in cls.bases):
        return True
    for n in ast.walk(cls):
        if isinstance(n, (ast.Name, ast.Attribute, ast.Call)) and (
            facts.is_rank_expr(n) or _splits_by_name(facts, n) or last_name(n) == "get_worker_info"
        ):
            return True
    return False
