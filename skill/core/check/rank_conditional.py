"""Rules about work that every rank must do, found on a path only some ranks take (FSD003-FSD010, FSD036, FSD081).

Each kind of collective call has its own code; a call to a function of this file that runs one (directly
or through another local function) counts as that collective, so ``if rank == 0: save(model)`` is caught
when ``save`` calls ``dist.barrier()``.  ``if rank == 0: dist.send(...) else: dist.recv(...)`` is
point-to-point, not a collective, and ``if rank == 0: dist.broadcast(t, 0) else: dist.broadcast(t, 0)``
runs on every rank, so neither is reported.

FSD081 is FSDP1's ``summon_full_params`` (``FSDP.summon_full_params(m, ...)`` or ``m.summon_full_params(...)``): it
all-gathers every flat parameter it unshards (and its gradient with ``with_grads=True``) on every rank of the
sharding group, ``rank0_only=True`` included (that flag only says where the full values are kept afterwards); a file
whose every ``sharding_strategy=`` is ``NO_SHARD`` gathers nothing and is left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

from fsdp_skill.core.check import calls
from fsdp_skill.core.check.facts import FSDP1, FileFacts, Located, dotted, is_true, kwarg, last_name
from fsdp_skill.core.parsing import parse_expression

# local function key -> (code, label, line, file: "" for this one) of the first collective it can run (see collective_summaries)
Summaries = dict[str, tuple[str, str, int, str]]
# id(node) -> the statements that run it on some ranks only, outermost first (FileFacts.rank_branches)
Branches = dict[int, list[ast.stmt]]
# the ranks a rank test selects: ("in" | "notin", the rank values[, the rest of an `and` test, as ast dumps])
Side = tuple[object, ...]

COLLECTIVES = {
    "barrier",
    "monitored_barrier",
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "broadcast",
    "broadcast_object_list",
    "gather",
    "gather_object",
    "scatter",
    "scatter_object_list",
    "all_to_all",
    "all_to_all_single",
    "all_gather_coalesced",
    "all_reduce_coalesced",
}
# init_process_group is not here: a subset of processes may form its own default group (an RPC job's trainers)
GROUP_CREATORS = {"new_group", "new_subgroups", "new_subgroups_by_enumeration", "init_device_mesh"}
DCP_CALLS = {"save", "load", "async_save", "save_state_dict", "load_state_dict"}
STATE_DICT_GETTERS = {"get_model_state_dict", "get_optimizer_state_dict", "get_state_dict"}
STATE_DICT_SETTERS = {"set_model_state_dict", "set_optimizer_state_dict", "set_state_dict"}


def _options_flag(facts: FileFacts, call: ast.Call, flag: str) -> bool:
    opts = facts.resolve(kwarg(call, "options"))
    if isinstance(opts, ast.Call) and last_name(opts) == "StateDictOptions":
        v = kwarg(opts, flag)
        return isinstance(v, ast.Constant) and v.value is True
    return False


def _fsdp1_sharded_context(facts: FileFacts, node: ast.AST) -> bool:
    """Is ``node`` inside ``with FSDP.state_dict_type(model, SHARDED_STATE_DICT | LOCAL_STATE_DICT)``?"""
    for anc in facts.ancestors(node):
        if isinstance(anc, (ast.With, ast.AsyncWith)):
            for item in anc.items:
                ce = item.context_expr
                if isinstance(ce, ast.Call) and last_name(ce) == "state_dict_type":
                    kind = kwarg(ce, "state_dict_type", 1)
                    if last_name(kind or ce) in ("SHARDED_STATE_DICT", "LOCAL_STATE_DICT"):
                        return True
    return False


def _sharded_by_default(facts: FileFacts) -> bool:
    """Does the file switch FSDP1 to SHARDED_STATE_DICT / LOCAL_STATE_DICT for good (``FSDP.set_state_dict_type``)?"""
    key = ("rank_conditional", "sharded_by_default")
    if key not in facts.cache:
        facts.cache[key] = any(
            last_name(c) == "set_state_dict_type"
            and last_name(kwarg(c, "state_dict_type", 1) or c) in ("SHARDED_STATE_DICT", "LOCAL_STATE_DICT")
            for c in facts.calls()
        )
    return bool(facts.cache[key])


def _only_no_shard(facts: FileFacts) -> bool:
    """Is every ``sharding_strategy=`` the file passes ``...NO_SHARD`` (and there is one)? Then FSDP1 keeps whole
    parameters on each rank and ``summon_full_params`` gathers nothing."""
    key = ("rank_conditional", "only_no_shard")
    if key not in facts.cache:
        given = [n.value for n in facts.nodes if isinstance(n, ast.keyword) and n.arg == "sharding_strategy"]
        facts.cache[key] = bool(given) and all(last_name(v) == "NO_SHARD" for v in given)
    return bool(facts.cache[key])


def _summons(facts: FileFacts, call: ast.Call, q: str) -> bool:
    """``FSDP.summon_full_params(m, ...)`` or ``m.summon_full_params(...)`` (only FSDP1 modules have the method) in a
    file that shards with FSDP1 (:func:`_only_no_shard`: not when every unit keeps whole parameters)."""
    named = q == f"{FSDP1}.summon_full_params" or (
        isinstance(call.func, ast.Attribute) and call.func.attr == "summon_full_params" and facts.uses(FSDP1)
    )
    return named and not _only_no_shard(facts)


# where a collective takes its group positionally: dist.barrier(group), dist.all_reduce(tensor, op, group), ...
_GROUP_ARG = {
    "barrier": 0,
    "monitored_barrier": 0,
    "all_reduce": 2,
    "all_gather": 2,
    "all_gather_into_tensor": 2,
    "all_gather_object": 2,
    "broadcast": 2,
    "broadcast_object_list": 2,
    "reduce": 3,
    "reduce_scatter": 3,
    "reduce_scatter_tensor": 3,
    "gather": 3,
    "gather_object": 3,
    "scatter": 3,
    "scatter_object_list": 3,
    "all_to_all": 2,
    "all_to_all_single": 4,
}


def _on_subgroup(facts: FileFacts, call: ast.Call) -> bool:
    """Is the call given an explicit process group other than the default (``group=g``, ``process_group=pg``, or
    the group in its positional place)?"""
    name = (facts.qual(call) or "").rsplit(".", 1)[-1]
    at = _GROUP_ARG.get(name)
    for key in ("group", "process_group", None):
        g = kwarg(call, key) if key else (call.args[at] if at is not None and len(call.args) > at else None)
        if g is None or isinstance(g, ast.Constant) and g.value is None or "WORLD" in (dotted(g) or ""):
            continue
        made = facts.resolve(g)  # new_group() without ranks is every rank again, not a subgroup
        if isinstance(made, ast.Call) and last_name(made) == "new_group" and not (made.args or kwarg(made, "ranks")):
            continue
        return True
    return False


_SHARDING_WORDS = ("shard", "fsdp", "parallelize")


def _sharded_later(facts: FileFacts, call: ast.Call) -> bool:
    """Is the model of ``get_*_state_dict(model, ...)`` sharded only after this call, in the same function
    (``fully_shard(model)``, ``FSDP(model)`` or a helper named like ``prepare_fully_shard(model, ...)``)? Then
    the call reads a plain module on that rank and runs no collective (composer's rank-0 init before sharding)."""
    model = dotted(call.args[0]) if call.args else None
    if model is None:
        return False
    last = _sharding_lines(facts).get((id(facts.scope_of(call)), model))
    return last is not None and last > (call.end_lineno or call.lineno)


def _sharding_lines(facts: FileFacts) -> dict[tuple[int, str], int]:
    """(id of a scope, dotted name of the first argument) -> the last line of a sharding call of it in that scope
    (``fully_shard(model)``, ``FSDP(model)``, a helper named like ``prepare_fully_shard``); one pass, memoised."""
    key = ("rank_conditional", "sharding_lines")
    if key not in facts.cache:
        out: dict[tuple[int, str], int] = {}
        for c in facts.calls():
            name = dotted(c.args[0]) if c.args else None
            if name is not None and any(w in (last_name(c) or "").lower() for w in _SHARDING_WORDS):
                k = (id(facts.scope_of(c)), name)
                out[k] = max(out.get(k, c.lineno), c.lineno)
        facts.cache[key] = out
    lines: dict[tuple[int, str], int] = facts.cache[key]
    return lines


def collective_kind(facts: FileFacts, call: ast.Call) -> tuple[str, str] | None:
    """(rule code, label) when every rank must make ``call`` together, else None (memoised per call)."""
    memo: dict[int, tuple[str, str] | None] = facts.cache.setdefault(("rank_conditional", "collective_kind"), {})
    key = id(call)
    if key not in memo:
        memo[key] = _collective_kind(facts, call)
    return memo[key]


def _collective_kind(facts: FileFacts, call: ast.Call) -> tuple[str, str] | None:
    q = facts.qual(call) or ""
    name = q.rsplit(".", 1)[-1]
    if _on_subgroup(facts, call):
        return None  # the rank condition may select the members of that group (composer's per-replica dcp.save)
    if q == f"torch.distributed.{name}" and name in COLLECTIVES:
        return "FSD003", f"dist.{name}()"
    if (
        q.startswith("torch.distributed.checkpoint.")
        and q.count(".") == 3
        and name in DCP_CALLS
        and not is_true(kwarg(call, "no_dist"))
    ):  # no_dist=True: one process, no collective
        return "FSD004", f"dcp.{name}()"
    if q.startswith("torch.distributed.checkpoint.state_dict.") and (
        name in STATE_DICT_GETTERS
        and _options_flag(facts, call, "full_state_dict")
        and not _sharded_later(facts, call)
        or name in STATE_DICT_SETTERS
        and _options_flag(facts, call, "broadcast_from_rank0")
    ):
        return "FSD005", f"{name}(full_state_dict/broadcast_from_rank0)"
    if q in (f"{FSDP1}.optim_state_dict", f"{FSDP1}.full_optim_state_dict"):
        return "FSD006", f"FSDP.{name}()"
    if _summons(facts, call, q):
        return "FSD081", "summon_full_params() (an all-gather of the FSDP1 parameters, also with rank0_only=True)"
    if isinstance(call.func, ast.Attribute):
        recv = dotted(call.func.value)
        if (
            call.func.attr == "state_dict"
            and facts.is_fsdp1(call.func.value)
            and not _fsdp1_sharded_context(facts, call)
            and not _sharded_by_default(facts)
        ):
            return "FSD006", f"{recv}.state_dict() of an FSDP1 module"
        if call.func.attr == "full_tensor":
            return "FSD007", ".full_tensor()"
        if call.func.attr == "consolidate_state_dict":
            return "FSD008", ".consolidate_state_dict()"
        if (
            call.func.attr in ("forward", "generate")
            and facts.is_fsdp(call.func.value)
            and not facts.before_wrap(call.func.value)
        ):
            return "FSD010", f"{recv}.{call.func.attr}() of an FSDP module"
    if q in (f"torch.distributed.{n}" for n in GROUP_CREATORS):
        return "FSD009", f"{name}()"
    if isinstance(call.func, (ast.Name, ast.Attribute)) and facts.is_fsdp(call.func) and not facts.before_wrap(call.func):
        return "FSD010", f"{dotted(call.func)}(...) (forward of an FSDP module)"
    if isinstance(call.func, (ast.Name, ast.Attribute)) and facts.is_joined_ddp(call.func):
        return "FSD036", f"{dotted(call.func)}(...) (forward through a DDP wrapper that was given to Join)"
    return None


def collective_summaries(facts: FileFacts) -> Summaries:
    """Local function key -> (code, label, line, file) of the first collective it can run, directly or through another
    function of the checked code (a fixpoint over the file's functions: module-level, nested, methods; a function of
    another checked file counts through its project summary). A collective under a rank condition inside the function
    counts too: run on some ranks only, the function reaches its side of a pair alone.

    A call whose arguments make every way its function reaches a collective false (:func:`reach_paths`:
    ``create_dataloader(..., rank=-1)`` whose barriers run only ``if rank not in [-1, 0]`` / ``if rank == 0``) reaches
    none, and a function all of whose ways are such calls reaches none either."""
    key = "rank_conditional.summaries"
    cached = facts.cache.get(key)
    if isinstance(cached, dict):
        return cached
    funcs = calls.local_functions(facts)
    # each function's calls that can decide its summary, in order: a collective, or a call that resolves to a function
    # of the checked code (calls.callee); the other calls never can, so each round looks at these only
    candidates: dict[str, list[ast.Call]] = {
        fname: [
            node
            for node in facts.scope_nodes(fn)
            if isinstance(node, ast.Call) and (collective_kind(facts, node) is not None or calls.callee(facts, node) is not None)
        ]
        for fname, fn in funcs.items()
    }
    rough = _summaries(facts, candidates)  # every call counts
    facts.cache[_PATHS] = _paths(facts, candidates, rough)
    out = _summaries(facts, candidates)  # now a call that reaches no collective with its arguments does not count
    facts.cache[key] = out
    return out


_PATHS = "rank_conditional.paths"
_DEAD = ("rank_conditional", "dead")
_MAX_WAYS = 16  # ways kept per function; past them, one way with the conditions common to all


def _summaries(facts: FileFacts, candidates: dict[str, list[ast.Call]]) -> Summaries:
    out: Summaries = {}
    for _ in range(4):
        known = len(out)
        for fname, found in candidates.items():
            if fname in out:
                continue
            for node in found:
                kind = collective_reached(facts, node, out, exclude=fname)
                if kind is not None:
                    line, path = (kind[2], kind[4]) if kind[2] is not None else (node.lineno, "")
                    out[fname] = (kind[0], kind[1], line, path)
                    break
        if len(out) == known:
            break  # a round that found nothing new: the next would not either
    return out


Ways = tuple[tuple[str, ...], ...]


def reach_paths(facts: FileFacts) -> dict[str, Ways]:
    """Function key -> the ways it reaches a collective: for each call in it that reaches one, the conditions (source
    text in the function's own terms, :func:`_text`) of the ``if`` bodies around it, with those of the way through the
    function it calls (its parameters replaced by what the call passes, a left-out one by its literal default). A
    function that reaches none is not listed; a way of ``()`` holds always."""
    collective_summaries(facts)
    got = facts.cache.get(_PATHS)
    return got if isinstance(got, dict) else {}


def _paths(facts: FileFacts, candidates: dict[str, list[ast.Call]], rough: Summaries) -> dict[str, Ways]:
    """:func:`reach_paths` from the summaries where every call counts (a small fixpoint: a caller's ways follow its
    callees' of the round before)."""
    funcs = calls.local_functions(facts)
    out: dict[str, Ways] = {}
    facts.cache[_PATHS] = out  # what the rounds so far know (a callee not yet listed: always reached)
    for _ in range(4):
        changed = False
        for fname in rough:
            fn = funcs.get(fname)
            if fn is None:
                continue
            rebound = _rebound_params(facts, fn)
            ways: set[tuple[str, ...]] = set()
            for node in candidates.get(fname, []):
                if collective_reached(facts, node, rough, exclude=fname) is None:
                    continue
                here = {_text(facts, c) for c in _conditions_of(facts, node, None)}
                through = [()] if collective_kind(facts, node) is not None else _ways_through(facts, node)
                for way in through or []:
                    ways.add(tuple(sorted((here | set(way)) - {""})))
            clean = {tuple(t for t in w if not _names_any(t, rebound)) for w in ways}
            got = _bounded(clean)
            if out.get(fname) != got:
                out[fname], changed = got, True
        facts.cache.pop(_DEAD, None)
        if not changed:
            break
    facts.cache.pop(_DEAD, None)
    return out


def _bounded(ways: set[tuple[str, ...]]) -> Ways:
    """The ways, sorted; one way that holds always absorbs the others; too many become the conditions common to all."""
    if () in ways:
        return ((),)
    if len(ways) > _MAX_WAYS:
        common = set.intersection(*(set(w) for w in ways))
        return (tuple(sorted(common)),)
    return tuple(sorted(ways))


def _rebound_params(facts: FileFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters of ``fn`` that its body binds again (``rank = rank or 0``): a condition on one is not the
    caller's argument."""
    names = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    return {n for n in names if len(facts.bindings.get((id(fn), n), [])) > 1}


def _names_any(text: str, names: set[str]) -> bool:
    if not names:
        return False
    try:
        expr = parse_expression(text)
    except (SyntaxError, RecursionError, MemoryError, ValueError, SystemError):
        return True
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(expr))


def _ways_through(facts: FileFacts, call: ast.Call) -> list[tuple[str, ...]] | None:
    """The ways the function ``call`` runs reaches a collective, in the caller's terms, each way whose condition the
    arguments make false left out (None: not a call of the checked code; ``[]``: no way left, the call reaches none)."""
    target = calls.callee(facts, call)
    if target is None:
        return None
    if target.key is not None:
        known = facts.cache.get(_PATHS)
        ways = known.get(target.key) if isinstance(known, dict) else None
        if ways is None:
            return [()]  # not known yet (this round), or reached by every call
    else:
        ways = target.summary.collective_paths or ((),)
    given = _given(call, target)
    out: list[tuple[str, ...]] = []
    for way in ways:
        texts: list[str] = []
        for text in way:
            swapped = _substituted(text, _param_names(target), given)
            truth = _truth(swapped) if swapped is not None else None
            if truth is False:
                break
            if swapped is not None and truth is None:
                texts.append(_condition_text(facts, swapped))
        else:
            out.append(tuple(texts))
    return out


def _param_names(target: calls.Callee) -> set[str]:
    """Every parameter name of the function ``target`` (keyword-only ones: of a local function, or with a default)."""
    names = set(target.summary.params) | {name for name, _ in target.summary.defaults}
    if target.fn is not None:
        names |= {a.arg for a in target.fn.args.kwonlyargs}
    return names


def _given(call: ast.Call, target: calls.Callee) -> dict[str, ast.expr]:
    """Parameter name -> what ``call`` passes it (its literal default where the call leaves it out, unless ``*args`` /
    ``**kwargs`` may pass it)."""
    given = {target.summary.params[i]: arg for i, arg in calls.bound_args(call, target)}
    given |= {kw.arg: kw.value for kw in call.keywords if kw.arg is not None}
    if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return given
    for name, text in target.summary.defaults:
        if name not in given:
            try:
                given[name] = parse_expression(text)
            except (SyntaxError, RecursionError, MemoryError, ValueError, SystemError):
                continue
    return given


def _substituted(text: str, params: Collection[str], given: dict[str, ast.expr]) -> ast.expr | None:
    """The condition ``text`` (a callee's) with its parameters replaced by what the call passes; None when it names a
    parameter the call does not pass (unknown there)."""
    try:
        expr = parse_expression(text)
    except (SyntaxError, RecursionError, MemoryError, ValueError, SystemError):
        return None
    named = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    if named & (set(params) - set(given)):
        return None
    swapped = _Swap({p: given[p] for p in named & set(given)}).visit(expr)
    return swapped if isinstance(swapped, ast.expr) else None


def _condition_text(facts: FileFacts, expr: ast.expr) -> str:
    if isinstance(expr, ast.Name):
        return _text(facts, expr)
    try:
        return ast.unparse(expr)
    except (RecursionError, MemoryError, ValueError):
        return ""


def _truth(expr: ast.AST) -> bool | None:
    """The value of a condition made of literals (``-1 not in [-1, 0]``, ``not False``, ``0 == 0 and x``), None when a
    part of it is not known."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        inner = _truth(expr.operand)
        return None if inner is None else not inner
    if isinstance(expr, ast.BoolOp):
        parts = [_truth(v) for v in expr.values]
        decisive = isinstance(expr.op, ast.Or)  # True decides an `or`, False an `and`
        if decisive in parts:
            return decisive
        return None if None in parts else not decisive
    try:
        value = ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = _UNKNOWN_VALUE
    if value is not _UNKNOWN_VALUE:
        return bool(value)
    if isinstance(expr, ast.Compare):
        try:
            operands = [ast.literal_eval(x) for x in [expr.left, *expr.comparators]]
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        try:
            return all(_COMPARE[type(op)](a, b) for op, a, b in zip(expr.ops, operands, operands[1:], strict=False))
        except (KeyError, TypeError):
            return None
    return None


_UNKNOWN_VALUE = object()
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}


def _dead(facts: FileFacts, call: ast.Call) -> bool:
    """Do ``call``'s arguments make every way its function reaches a collective false (:func:`_ways_through`), or
    pass no wrapped module where each of its collectives needs one (:func:`_module_params`)? Memoised per call while
    the ways stand."""
    if _PATHS not in facts.cache:
        return False
    memo: dict[int, bool] = facts.cache.setdefault(_DEAD, {})
    if id(call) not in memo:
        memo[id(call)] = _ways_through(facts, call) == [] or _passes_no_module(facts, call)
    return memo[id(call)]


_ON_MODULE = {"FSD006", "FSD010", "FSD036"}  # collectives only because their module is wrapped


def _passes_no_module(facts: FileFacts, call: ast.Call) -> bool:
    """``evaluate(model_without_ddp, val)`` on rank 0, where ``evaluate``'s forward is a collective only because other
    calls pass it an FSDP module: every collective the local function reaches is the forward (or FULL_STATE_DICT
    ``state_dict()``) of one of its parameters, and this call passes a module of no wrapped kind to each of them."""
    target = calls.callee(facts, call)
    if target is None or target.fn is None:
        return False
    deps = _module_params(facts, target.fn, 0)
    if not deps:
        return False
    given = {target.summary.params[i]: arg for i, arg in calls.bound_args(call, target)}
    given |= {kw.arg: kw.value for kw in call.keywords if kw.arg is not None}
    if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return False
    return all(calls.expr_kind(facts, given.get(p)) is None and not _param_of_caller(facts, given.get(p)) for p in deps)


def _param_of_caller(facts: FileFacts, node: ast.AST | None) -> bool:
    """Is ``node`` the caller's own parameter, read as bound (its callers decide what it holds)?"""
    if not isinstance(node, ast.Name):
        return False
    _, seen = facts.binding(node)
    return seen is not None and seen.kind == "param"


def _module_params(facts: FileFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef, depth: int) -> set[str] | None:
    """The parameters of ``fn`` whose wrapped module every collective ``fn`` reaches is about (``model(x)``,
    ``model.state_dict()``, directly or through the local functions it passes them to); None when some collective is
    another (a barrier, ``self.model(x)``) or cannot be told. Memoised per function."""
    memo: dict[int, set[str] | None] = facts.cache.setdefault(("rank_conditional", "module-params"), {})
    if id(fn) in memo:
        return memo[id(fn)]
    memo[id(fn)] = None  # recursion: cannot be told
    if depth > 4:
        return None
    names = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    deps: set[str] = set()
    for node in facts.scope_nodes(fn):
        if not isinstance(node, ast.Call):
            continue
        kind = collective_kind(facts, node)
        if kind is not None:
            func = node.func
            recv = (
                func.value
                if isinstance(func, ast.Attribute) and kind[0] != "FSD036" and func.attr in ("state_dict", "forward", "generate")
                else func
            )
            if kind[0] not in _ON_MODULE or not (
                isinstance(recv, ast.Name) and recv.id in names and _param_of_caller(facts, recv)
            ):
                return None
            deps.add(recv.id)
            continue
        target = calls.callee(facts, node)
        if target is None:
            continue
        if target.fn is None:
            if target.summary.collective is not None:
                return None
            continue
        if target.key not in _reaching(facts):
            continue
        inner = _module_params(facts, target.fn, depth + 1)
        if inner is None:
            return None
        given = {target.summary.params[i]: arg for i, arg in calls.bound_args(node, target)}
        given |= {kw.arg: kw.value for kw in node.keywords if kw.arg is not None}
        for p in inner:
            arg = given.get(p)
            if isinstance(arg, ast.Name) and arg.id in names and _param_of_caller(facts, arg):
                deps.add(arg.id)
            elif arg is not None and calls.expr_kind(facts, arg) is not None:
                return None
    memo[id(fn)] = deps
    return deps


def _reaching(facts: FileFacts) -> dict[str, Ways]:
    """The local functions known to reach a collective at all (:func:`reach_paths` as the rounds so far have it)."""
    known = facts.cache.get(_PATHS)
    return known if isinstance(known, dict) else {}


def function_guards(facts: FileFacts) -> dict[str, tuple[str, ...]]:
    """Function key -> the conditions (:func:`_text`, in the function's own terms: its parameter names) that hold
    wherever a call of it reaches a collective: ``def load(path, on_all_ranks=False): ... if on_all_ranks:
    dist.barrier()`` gives ``("on_all_ranks",)``: the conditions every way of :func:`reach_paths` shares. Not listed
    when some collective runs unconditionally."""
    key = "rank_conditional.guards"
    cached = facts.cache.get(key)
    if isinstance(cached, dict):
        return cached
    out: dict[str, tuple[str, ...]] = {}
    summaries = collective_summaries(facts)
    for fname, ways in reach_paths(facts).items():
        if fname in summaries and ways:
            common = set.intersection(*(set(w) for w in ways))
            if common:
                out[fname] = tuple(sorted(common))
    facts.cache[key] = out
    return out


def _guards_through(facts: FileFacts, call: ast.Call, local: dict[str, tuple[str, ...]]) -> set[str]:
    """The conditions under which the function ``call`` runs reaches its collectives (``local`` for this file's
    functions, the project summary for another file's), in the caller's terms: a parameter named in a condition is
    replaced by what the call passes, or by its literal default (a condition naming a parameter the call does not pass
    is dropped)."""
    target = calls.callee(facts, call)
    if target is None:
        return set()
    texts = local.get(target.key, ()) if target.key is not None else target.summary.collective_when
    if not texts:
        return set()
    given = _given(call, target)
    out = set()
    for text in texts:
        swapped = _substituted(text, _param_names(target), given)
        if swapped is not None and (got := _condition_text(facts, swapped)):
            out.add(got)
    return out


class _Swap(ast.NodeTransformer):
    """Puts the given expressions in place of the names they stand for (a callee's parameters -> a caller's arguments)."""

    def __init__(self, given: dict[str, ast.expr]) -> None:
        self.given = given

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.given.get(node.id, node)


def function_collectives(facts: FileFacts) -> Summaries:
    """Function key (``evaluate``, ``Trainer.validate``) -> (code, label, line, file: "" for this one) of the first
    collective a call of it can run (what a project pass exports to the other files)."""
    return dict(collective_summaries(facts))


def collective_reached(
    facts: FileFacts, call: ast.Call, summaries: Summaries, exclude: str | None = None
) -> tuple[str, str, int | None, str | None, str] | None:
    """(code, label of the collective, its line when reached through a function, that function's name, the file of
    that line: "" for this one)."""
    kind = collective_kind(facts, call)
    if kind is not None:
        return kind[0], kind[1], None, None, ""
    target = calls.callee(facts, call)
    if target is None or _dead(facts, call):
        return None
    if target.key is not None:
        if target.key in summaries and target.key != exclude and facts.scope_of(call) is not target.fn:
            code, label, line, path = summaries[target.key]
            return code, label, line, target.key.replace(".<locals>.", "."), path
        return None
    got = target.summary.collective
    if got is None:
        return None
    return got[0], got[1], got[2], target.summary.name, got[3]


def _side(facts: FileFacts, test: ast.AST) -> Side | None:
    """The ranks a simple rank test selects: ('in', {0}) for ``rank == 0`` / ``is_main_process()``, ('notin', {-1, 0})
    for ``local_rank not in [-1, 0]``; None when the test is not that simple. Memoised per test."""
    memo: dict[int, Side | None] = facts.cache.setdefault(("rank_conditional", "side"), {})
    key = id(test)
    if key not in memo:
        negations = 0
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):  # `not not ...`: a loop, not a recursion
            test, negations = test.operand, negations + 1
        side = _plain_side(facts, test)
        memo[key] = _negate(side) if side is not None and negations % 2 else side
    return memo[key]


def _plain_side(facts: FileFacts, test: ast.AST) -> Side | None:
    """:func:`_side` of a test that is not a ``not``."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and facts.is_rank_expr(test.left):
        op, right = test.ops[0], test.comparators[0]
        if isinstance(test.left, ast.BinOp):  # arithmetic of the rank: only its parity is a simple side
            return _parity_side(test.left, op, right)
        values = right.elts if isinstance(right, (ast.List, ast.Tuple, ast.Set)) else [right]
        if not all(
            isinstance(v, ast.Constant) or isinstance(v, ast.UnaryOp) and isinstance(v.operand, ast.Constant) for v in values
        ):
            return None
        consts = frozenset(ast.literal_eval(v) for v in values) - {-1}  # -1: "not distributed", no rank has it
        bound = next(iter(consts)) if len(consts) == 1 else None
        # ranks are never negative: rank > 0 / rank >= 1 is "not rank 0", rank < 1 / rank <= 0 is "rank 0"
        if (isinstance(op, ast.Gt) and bound == 0) or (isinstance(op, ast.GtE) and bound == 1):
            return ("notin", frozenset({0}))
        if (isinstance(op, ast.Lt) and bound == 1) or (isinstance(op, ast.LtE) and bound == 0):
            return ("in", frozenset({0}))
        kind = {ast.Eq: "in", ast.In: "in", ast.NotEq: "notin", ast.NotIn: "notin"}.get(type(op))
        return (kind, consts) if kind else None
    if isinstance(test, (ast.Name, ast.Attribute, ast.Call)) and facts.is_main_predicate(test):
        return ("in", frozenset({0}))
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        # `not is_leader and num_gpus > 1`: the rank part decides the side; the rest, the same on every rank,
        # travels with it so that only a test with the same rest pairs with it
        ranked = [v for v in test.values if facts.is_rank_test(v)]
        rest = tuple(node_text(v) for v in test.values if not facts.is_rank_test(v))
        inner = _side(facts, ranked[0]) if len(ranked) == 1 else None
        return (inner[0], inner[1], rest) if inner and len(inner) == 2 else None
    return None


def _parity_side(left: ast.BinOp, op: ast.cmpop, right: ast.expr) -> Side | None:
    """``rank % 2 == 0`` -> ('in', {'even'}); ``rank % 2 == 1`` / ``!= 0`` -> ('notin', {'even'}) (the odd ranks):
    the two halves of a staggered start. Other arithmetic of the rank -> None."""
    if not (
        isinstance(left.op, ast.Mod)
        and isinstance(left.right, ast.Constant)
        and left.right.value == 2
        and isinstance(right, ast.Constant)
        and right.value in (0, 1)
        and isinstance(op, (ast.Eq, ast.NotEq))
    ):
        return None
    even = (right.value == 0) == isinstance(op, ast.Eq)
    return ("in" if even else "notin", frozenset({"even"}))


def _negate(side: Side) -> Side:
    """The ranks the other branch of ``side``'s test selects."""
    return ("notin" if side[0] == "in" else "in", *side[1:])


def _node_side(facts: FileFacts, branch: ast.AST, node: ast.AST) -> Side | None:
    """The ranks on which ``node`` runs under ``branch`` (None: not a simple rank test)."""
    if not isinstance(branch, ast.If):
        return ("in", frozenset({0}))  # @rank_zero_only
    side = _side(facts, branch.test)
    if side is None:
        return None
    return side if facts.block_of(node, branch) == "body" else _negate(side)


def _paired(facts: FileFacts, branches: Branches, summaries: Summaries) -> set[tuple[int, str]]:
    """(scope, collective) found under complementary rank conditions of one function (``local_rank not in [-1, 0]``
    and ``local_rank == 0``): the "first process works, the others wait" pattern, where every rank reaches one side."""
    seen: dict[tuple[int, str], list[tuple[int, Side, frozenset[str]]]] = {}
    for call in facts.calls():
        enclosing = branches.get(id(call))
        if not enclosing:
            continue
        kind = collective_reached(facts, call, summaries)
        side = _node_side(facts, enclosing[-1], call) if kind is not None else None
        if kind is not None and side is not None:
            holds = frozenset(node_text(c) for c in _conditions_of(facts, call, None) if not facts.is_rank_test(c))
            seen.setdefault((id(pairing_scope(facts, call)), kind[1]), []).append((id(enclosing[-1]), side, holds))
    out = set()
    for key, sides in seen.items():
        # a side pairs with the negated side of another branch when the conditions each adds to its rank test
        # (``world_size > 1 and rank % 2 == 0``) hold where the other runs (an outer ``if world_size > 1:``)
        if any(
            i != j and _core(b) == _negate(_core(a)) and _rest(a) <= hb and _rest(b) <= ha
            for i, a, ha in sides
            for j, b, hb in sides
        ):
            out.add(key)
    return out


def _core(side: Side) -> Side:
    return side[:2]


def _rest(side: Side) -> frozenset[object]:
    """The conditions (as text) a side's test adds to its rank part: ``world_size > 1`` of ``world_size > 1 and rank
    % 2 == 0`` (:func:`_plain_side` keeps them as a tuple)."""
    rest = side[2] if len(side) > 2 else ()
    return frozenset(rest) if isinstance(rest, tuple) else frozenset()


def pairing_scope(facts: FileFacts, node: ast.AST) -> ast.AST:
    """Where calls under complementary rank conditions pair up: ``node``'s function, or, in a context manager's
    ``__enter__`` / ``__exit__`` (``__aenter__`` / ``__aexit__``), its class: every ``with`` runs both, so a barrier
    the even ranks pass on entering and the odd ranks on leaving is every rank's (a staggered start)."""
    scope = facts.scope_of(node)
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and scope.name in _CONTEXT_METHODS:
        parent = facts.parents.get(id(scope))
        if isinstance(parent, ast.ClassDef):
            return parent
    return scope


_CONTEXT_METHODS = frozenset({"__enter__", "__exit__", "__aenter__", "__aexit__"})


def not_distributed_side(facts: FileFacts, branch: ast.AST, node: ast.AST) -> bool:
    """Is ``node`` on the side of ``if rank == -1`` (or ``... and rank == -1``) that no rank of a distributed job
    takes (-1: "not launched distributed")?"""
    if not isinstance(branch, ast.If):
        return False
    tests = branch.test.values if isinstance(branch.test, ast.BoolOp) and isinstance(branch.test.op, ast.And) else [branch.test]
    minus_one = any(
        isinstance(t, ast.Compare)
        and len(t.ops) == 1
        and isinstance(t.ops[0], (ast.Eq, ast.In))
        and facts.is_rank_expr(t.left)
        and _all_minus_one(t.comparators[0])
        for t in tests
    )
    return minus_one and facts.block_of(node, branch) == "body"


def _all_minus_one(node: ast.AST) -> bool:
    values = node.elts if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else [node]
    try:
        return bool(values) and all(ast.literal_eval(v) == -1 for v in values)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False


def node_text(node: ast.AST) -> str:
    """``ast.dump(node)``, the text two equal expressions share; an expression too deep for ``ast.dump``'s recursion
    gets a text of its own (equal to no other, so it pairs with nothing)."""
    try:
        return ast.dump(node)
    except (RecursionError, MemoryError):
        return f"<expression at {id(node)}>"


def guarded_by_the_rest(facts: FileFacts, branch: ast.AST, call: ast.Call, when: set[str] | None = None) -> bool:
    """Does every rank reach ``call`` whenever it runs at all, although it sits under the rank condition ``branch``?

    - ``if not A and rank != 0: return`` ... ``if A: collective()``: the ranks that left did so only when A is false,
      and the collective runs only when A is true;
    - ``if (rank == 0 and full) or sharded:`` ... ``if sharded: collective()``: the part of the test without a rank
      in it lets every rank in whenever the inner condition holds (composer's checkpoint test).

    ``when``: more conditions (:func:`_text` of each) that hold wherever the collective of ``call`` runs: those of a
    function of the checked code that ``call`` runs (:func:`function_guards`), in this call's terms."""
    if not isinstance(branch, ast.If) or not isinstance(branch.test, ast.BoolOp):
        return False
    rest = [v for v in branch.test.values if not facts.is_rank_test(v)]
    if not rest:
        return False
    holds = {_text(facts, c) for c in _conditions_of(facts, call, None)} | (when or set())
    if isinstance(branch.test.op, ast.Or):
        return facts.block_of(call, branch) == "body" and any(_text(facts, v) in holds for v in rest)
    guards = [a.test for a in facts.ancestors(call) if isinstance(a, ast.If) and a is not branch]
    return any(_complement(x, g) for x in rest for g in guards) or any(
        (inner := _negated(x)) is not None and _text(facts, inner) in holds for x in rest
    )


def _negated(node: ast.AST) -> ast.expr | None:
    """``a`` of ``not a``, else None."""
    return node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else None


_TEXT_LIMIT = 400  # characters: a longer condition is not compared (its text would cost more than it tells)


def _text(facts: FileFacts, expr: ast.AST) -> str:
    """A condition as source text, a name followed to the value it was last assigned (``load_on_all_ranks`` in
    ``load_on_all_ranks = cfg.a or cfg.b`` is ``cfg.a or cfg.b``): two conditions with one text hold together."""
    got = facts.resolve(expr)
    try:
        text = ast.unparse(got if got is not None else expr)
    except (RecursionError, MemoryError, ValueError):
        return f"<condition at {id(expr)}>"
    return text if len(text) <= _TEXT_LIMIT else f"<condition at {id(expr)}>"


def _conditions_of(facts: FileFacts, node: ast.AST, stop: ast.AST | None) -> Iterator[ast.expr]:
    """The conditions that hold where ``node`` runs, from the ``if`` statements between it and ``stop`` (None: its
    function): the test of each whose body holds it, or each part of an ``and`` test (``if sharded and new:`` gives
    both)."""
    for anc in facts.ancestors(node):
        if anc is stop or isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(anc, ast.If) and facts.block_of(node, anc) == "body":
            test = anc.test
            yield from test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]


def _other_path_references(facts: FileFacts, branch: ast.AST, call: ast.Call, label: str, summaries: Summaries) -> bool:
    """The other ranks' path hands a local function that runs the same collective to something that calls it
    (``if rank == 0: button.click(fn=generate)`` ... ``else: worker()``, both running barrier + broadcast).
    Memoised per (other path, collective): the calls on one side of a branch share their other path."""
    key, path = facts.other_path_of(branch, call)
    memo: dict[tuple[object, str], bool] = facts.cache.setdefault(("rank_conditional", "references"), {})
    if (key, label) not in memo:
        memo[key, label] = _reaches(facts, path, label, summaries, set())
    return memo[key, label]


def _other_path_runs(facts: FileFacts, branch: ast.AST, call: ast.Call, label: str, summaries: Summaries) -> bool:
    """Do the other ranks' statements (:meth:`FileFacts.other_path`) reach the collective ``label`` too, directly or
    through a local function? The labels each other path reaches are computed once."""
    key, path = facts.other_path_of(branch, call)
    memo: dict[object, set[str]] = facts.cache.setdefault(("rank_conditional", "other_labels"), {})
    if key not in memo:
        memo[key] = {
            reached[1]
            for stmt in path
            for sub in ast.walk(stmt)
            if isinstance(sub, ast.Call) and (reached := collective_reached(facts, sub, summaries)) is not None
        }
    return label in memo[key]


def _reaches(facts: FileFacts, stmts: Sequence[ast.AST], label: str, summaries: Summaries, seen: set[str]) -> bool:
    """Do ``stmts`` name (call or pass along) a local function that runs ``label``, directly or through the local
    functions that function names (``create_demo()`` wiring ``button.click(fn=generate)``)?"""
    for n in (n for stmt in stmts for n in ast.walk(stmt)):
        if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)) or n.id in seen or n.id not in facts.functions:
            continue
        seen.add(n.id)
        if (
            n.id in summaries
            and summaries[n.id][1] == label
            or len(seen) < 8
            and _reaches(facts, facts.functions[n.id].body, label, summaries, seen)
        ):
            return True
    return False


def _complement(a: ast.AST, b: ast.AST) -> bool:
    """Is ``b`` written as ``not a`` (or ``a`` as ``not b``)?"""

    def neg(x: ast.AST) -> ast.expr | None:
        return x.operand if isinstance(x, ast.UnaryOp) and isinstance(x.op, ast.Not) else None

    return any(x is not None and node_text(x) == node_text(y) for x, y in ((neg(a), b), (neg(b), a)))


def rank_findings(facts: FileFacts) -> Iterator[tuple[str, Located, str]]:
    """(code, node, detail) for every collective reached on some ranks only."""
    branches = facts.rank_branches()
    summaries = collective_summaries(facts)
    guards = function_guards(facts)
    paired = _paired(facts, branches, summaries)
    for call in facts.calls():
        enclosing = branches.get(id(call))
        if not enclosing:
            continue
        kind = collective_reached(facts, call, summaries)
        if kind is None:
            continue
        code, label, line, via, path = kind
        # innermost first; one unbalanced condition is enough. The innermost is balanced by its else branch, or by
        # a separate if on the complementary ranks (if rank != 0: barrier() ... if rank == 0: barrier()).
        if any(not_distributed_side(facts, branch, call) for branch in enclosing):
            continue  # under `if local_rank == -1:` no process group exists: the job is not distributed there
        for depth, branch in enumerate(reversed(enclosing)):
            if depth == 0 and (id(pairing_scope(facts, call)), label) in paired:
                continue
            when = _guards_through(facts, call, guards) if via else None
            if guarded_by_the_rest(facts, branch, call, when) or _other_path_references(facts, branch, call, label, summaries):
                continue
            if not _other_path_runs(facts, branch, call, label, summaries):
                where = f"{path}:{line}" if path else f"line {line}"
                what = f"{via}(), which runs {label} at {where}," if via else label
                yield code, call, f"{what} runs only on some ranks (rank condition at line {branch.lineno})"
                break
