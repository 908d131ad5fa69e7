"""Rules about saving and loading checkpoints in a distributed job (FSD069-FSD072).

- **FSD069**: a state dict saved from a DDP / ``DataParallel`` wrapper (its keys start with ``module.``) and loaded
  into the bare model, or saved from the bare model (``ddp.module``, the module handed to ``DDP(...)``) and loaded
  into the wrapper: ``torch.save(ddp.state_dict(), p)`` ... ``model.load_state_dict(torch.load(p))`` with the same
  path expression (or the same constant), the same dict key (``{"model": ...}`` / ``ckpt["model"]``), through names and
  through the parameters of the file's helpers (``save(ddp_model, path)`` / ``load(model, path)``), and into the save
  and load helpers of another checked file (:func:`~fsdp_skill.core.check.paths.state_traffic`). Silent where the
  file handles the prefix anywhere (a string holding ``module.``, ``consume_prefix_in_state_dict_if_present``, a
  ``k[7:]`` slice) and where either side is not known to be a wrapper or a bare module. ``strict=False`` is no fix:
  with every key prefixed (or none) nothing matches, so nothing is loaded and nothing is said; the finding says so.
  A load into the wrapper (a name bound to it there) of a file no save of this file names counts too where the file's own saves are all of the
  bare module (its checkpoints have no ``module.`` keys), or where the file saves no state dict and the path names
  pretrained weights (``torch.load(args.pretrain_weights)``: a bare model's keys).
- **FSD070**: ``torch.save`` / ``safetensors.torch.save_file`` / ``save_pretrained`` (not of a tokenizer or config)
  that every rank runs, to a path that does not name the rank, in a file that does distributed work. "Every rank
  runs it": it is under no rank condition (nor after ``if rank != 0: return``), and, inside a function, some call
  of that function in the file (a ``self.`` method: any ``x.name(...)``; a function given to ``mp.spawn`` /
  ``Process(target=...)``) runs on every rank too (a helper called under ``if rank == 0:`` in one place and with no
  guard in another writes from every rank there; the finding names that call); a function the file never calls is
  not reported (the caller may guard it). DCP (``dcp.save``), Accelerate's ``accelerator.save``, Lightning's and HF Trainer's saves guard or
  coordinate themselves and are not these calls; ``save_pretrained(..., is_main_process=...)`` is guarded; an FSDP2
  state dict is FSD016's.
- **FSD071**: ``load_state_dict`` under a rank condition into a module that DDP already wraps (the wrapper, its
  ``.module``, or the module given to ``DDP(...)`` earlier in the function; DDP broadcasts the parameters only in its
  constructor, so the other ranks keep their own weights), into an FSDP1 module (its ``load_state_dict`` of a full
  state dict all-gathers: the other ranks never join), or an optimizer's ``load_state_dict`` under a rank condition in a
  file that wraps a model (the optimizer state is never broadcast: before or after the wrap). Silent when the same
  function broadcasts afterwards (``dist.broadcast``, ``broadcast_object_list``, ``_sync_module_states``) and when the
  other ranks load on their own path. Loading on rank 0 *before* ``DDP(...)`` is right for the parameters.
- **FSD072**: ``optimizer.load_state_dict(...)`` of a state read from one file (``torch.load`` of a path that does not
  name the rank) in a file that wraps with FSDP1 and never converts it (``FSDP.optim_state_dict_to_load``,
  ``set_optimizer_state_dict``, ``scatter_full_optim_state_dict``, ``shard_full_optim_state_dict``,
  ``load_sharded_optimizer_state_dict``): each rank's optimizer holds the state of its own shard (flat parameters),
  so one file's plain ``optimizer.state_dict()`` fits at most the rank that wrote it, and a full FSDP optimizer state
  dict (keyed by names) does not fit any rank's optimizer as it is.
"""

from __future__ import annotations

import ast
import bisect

from fsdp_skill.core.check import calls as callgraph  # `calls` is a common local name here
from fsdp_skill.core.check import divergence, finders, paths
from fsdp_skill.core.check import rank_conditional as rc
from fsdp_skill.core.check.facts import DDP, FSDP1, FileFacts, dotted, end, kwarg, last_name
from fsdp_skill.core.check.finders import Found, finder

DATA_PARALLEL = "torch.nn.DataParallel"
_DEPTH = 4  # how far a value is followed through names and helper parameters
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
Function = ast.FunctionDef | ast.AsyncFunctionDef


# --- values followed through names and the parameters of the file's functions ---------------------------------


def _param_of(facts: FileFacts, node: ast.AST) -> tuple[Function, int] | None:
    """(function, index) when ``node`` is a name that reads a positional parameter of its function, unrebound."""
    if not isinstance(node, ast.Name):
        return None
    _, b = facts.binding(node)
    fn = facts.scope_of(node)
    if b is None or b.kind != "param" or not isinstance(fn, _FUNCS):
        return None
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    return (fn, params.index(node.id)) if node.id in params else None


def _call_sites(facts: FileFacts, fn: Function) -> list[tuple[ast.Call, callgraph.Callee]]:
    """The calls of the file that run ``fn`` (resolved by :func:`~fsdp_skill.core.check.calls.callee`); every call of
    the file is resolved once, on the first question (one pass for all functions, not one per function)."""
    key = ("checkpoint", "sites")
    if key not in facts.cache:
        sites: dict[int, list[tuple[ast.Call, callgraph.Callee]]] = {}
        for call in facts.calls():
            target = callgraph.callee(facts, call)
            if target is not None and target.fn is not None:
                sites.setdefault(id(target.fn), []).append((call, target))
        facts.cache[key] = sites
    memo: dict[int, list[tuple[ast.Call, callgraph.Callee]]] = facts.cache[key]
    return memo.get(id(fn), [])


def _alternatives(facts: FileFacts, node: ast.AST | None, depth: int = 0, *, names: bool = False) -> list[ast.AST]:
    """What ``node`` can be: itself through its last assignment (:meth:`FileFacts.resolve`), and, for a parameter of a
    function of the file, each argument its calls pass there (followed the same way, up to :data:`_DEPTH`). With
    ``names``, the variable read at the end is kept too (before the value it was assigned), for the questions a
    variable answers (was it handed to ``DDP(...)``?)."""
    if node is None:
        return []
    seen = node
    node = facts.resolve(node)
    if node is None:
        return []
    got = _param_of(facts, node) if depth < _DEPTH else None
    if got is None:
        return [seen, node] if names and seen is not node and isinstance(seen, (ast.Name, ast.Attribute)) else [node]
    fn, index = got
    out: list[ast.AST] = []
    for call, target in _call_sites(facts, fn):
        arg = dict(callgraph.bound_args(call, target)).get(index)
        if arg is not None:
            out += _alternatives(facts, arg, depth + 1, names=names)
    return out or [node]


# --- FSD069: the `module.` prefix of a wrapper's state dict -----------------------------------------------------


def _wrapper(facts: FileFacts, node: ast.AST) -> bool:
    """Does ``node`` hold a DDP or DataParallel wrapper where it is read?"""
    if isinstance(node, ast.Call):
        return facts.qual(node) in (DDP, DATA_PARALLEL)
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return False
    if divergence._is_ddp(facts, node):
        return True
    if isinstance(node, ast.Name):
        _, b = facts.binding(node)
        return b is not None and b.kind == "assign" and isinstance(b.value, ast.Call) and facts.qual(b.value) == DATA_PARALLEL
    return False


def _handed_to_wrapper(facts: FileFacts, node: ast.Name) -> bool:
    """Is the module ``node`` names given to ``DDP(...)`` / ``DataParallel(...)`` in its function (before or after)?"""
    ident, _ = facts.binding(node)
    scope = facts.scope_of(node)
    for call in facts.calls(scope):
        if facts.qual(call) in (DDP, DATA_PARALLEL) and call.args and isinstance(call.args[0], ast.Name):
            arg = call.args[0]
            if arg.id == node.id and facts.binding(arg)[0] == ident and facts.scope_of(arg) is scope:
                return True
    return False


def _kind(facts: FileFacts, node: ast.AST) -> str | None:
    """'wrapper' (its state-dict keys start with ``module.``), 'bare' (a module known not to be wrapped there:
    ``ddp.module``, the module handed to ``DDP(...)``), or None (the file cannot tell), at the place ``node`` is read."""
    if isinstance(node, ast.Attribute) and node.attr == "module" and _wrapper(facts, node.value):
        return "bare"
    if isinstance(node, ast.Call) and "unwrap" in (last_name(node) or "").lower():
        return "bare"
    if _wrapper(facts, node):
        return "wrapper"
    if isinstance(node, ast.Name) and _handed_to_wrapper(facts, node):
        return "bare"
    return None


def _module_kinds(facts: FileFacts, node: ast.AST) -> set[str | None]:
    """The kinds (:func:`_kind`) of every value ``node`` can hold (through helper parameters)."""
    here = _kind(facts, node)
    if here is not None:
        return {here}
    kinds: set[str | None] = set()
    alts = _alternatives(facts, node, names=True)
    for alt in alts:
        kinds.add(_kind(facts, alt))
    if len(alts) > 1 and None in kinds and len(kinds) > 1:
        kinds.discard(None)  # the variable told, its value (a constructor call) did not
    return kinds


def _path_texts(facts: FileFacts, path: ast.AST | None) -> set[str]:
    """What identifies a path: the text of each expression it can be and each string constant it can hold."""
    out: set[str] = set()
    for alt in _alternatives(facts, path):
        out.add(rc.node_text(alt))
        out |= {f"str:{s}" for s in facts.strings(alt)}
    return out


def _handles_prefix(facts: FileFacts) -> bool:
    """Does the file strip or add the prefix somewhere (a string holding ``module.``, torch's helper, ``k[7:]``)?"""
    key = ("checkpoint", "handles-prefix")
    if key not in facts.cache:
        facts.cache[key] = any(
            isinstance(n, ast.Constant)
            and isinstance(n.value, str)
            and "module." in n.value
            and not isinstance(facts.parents.get(id(n)), ast.Expr)  # a docstring tells nothing
            or isinstance(n, ast.Slice)
            and isinstance(n.lower, ast.Constant)
            and n.lower.value == 7
            or isinstance(n, (ast.Name, ast.Attribute))
            and (last_name(n) or "") == "consume_prefix_in_state_dict_if_present"
            for n in facts.nodes
        )
    return bool(facts.cache[key])


def _not_strict(call: ast.Call) -> bool:
    strict = kwarg(call, "strict", 1)
    return strict is not None and not (isinstance(strict, ast.Constant) and strict.value is True)


# (repr of the dict key, the module expression, the path expression, the call, the helper of another file or None)
_Traffic = tuple[str, ast.AST, ast.expr, ast.Call, str | None]


def _state_traffic(facts: FileFacts) -> tuple[list[_Traffic], list[_Traffic]]:
    """(saves, loads) of module state dicts in the file: ``torch.save`` of a state dict, ``m.load_state_dict(torch.load
    (p)[key])``, and the calls of another checked file's helper that does one of them with what it is given
    (:func:`~fsdp_skill.core.check.paths.state_traffic`). A helper of this file is followed through its parameters
    by :func:`_alternatives` instead."""
    saves: list[_Traffic] = []
    loads: list[_Traffic] = []
    for call in facts.calls():
        if facts.qual(call) == "torch.save":
            path = kwarg(call, "f", 1)
            if path is not None:
                saves += [(repr(key), owner, path, call, None) for key, owner in paths.saved_states(facts, call)]
        elif isinstance(call.func, ast.Attribute) and call.func.attr == "load_state_dict":
            got = paths.loaded_state(facts, kwarg(call, "state_dict", 0))
            if got is not None:
                loads.append((repr(got[0]), call.func.value, got[1], call, None))
        else:
            target = callgraph.callee(facts, call)
            if target is None or target.fn is not None or not (target.summary.state_saves or target.summary.state_loads):
                continue
            args = dict(callgraph.bound_args(call, target))
            name = target.summary.name
            for out, traffic in ((saves, target.summary.state_saves), (loads, target.summary.state_loads)):
                for module, path_at, key in traffic:
                    if module in args and path_at in args:
                        out.append((key, args[module], args[path_at], call, name))
    return saves, loads


@finder("FSD069")
def module_prefix_mismatch(facts: FileFacts) -> Found:
    """FSD069: a wrapper's state dict loaded into the bare model, or the reverse (see the module docstring)."""
    if not (facts.ddp or facts.uses(DDP, DATA_PARALLEL)) or _handles_prefix(facts):
        return
    saved, loaded = _state_traffic(facts)
    saves = [
        (key, str(kind), _path_texts(facts, path), call, via)
        for key, owner, path, call, via in saved
        for kind in _module_kinds(facts, owner) - {None}
    ]
    if not saves and not loaded:
        return
    saved_kinds = {skind for _, skind, _, _, _ in saves}
    for key, module, path, call, via in loaded:
        kinds = _module_kinds(facts, module) - {None}
        if len(kinds) != 1:
            continue
        kind = kinds.pop()
        if kind is None:
            continue
        texts = _path_texts(facts, path)
        matched = False
        for skey, skind, stexts, save, svia in saves:
            if skey == key and stexts & texts:
                matched = True
                if skind != kind:
                    yield call, _prefix_message(skind, kind, save, svia, via, _not_strict(call))
                    break
        if matched or kind != "wrapper" or not (isinstance(module, ast.Name) and _kind(facts, module) == "wrapper"):
            continue  # a name bound to the wrapper where it is read (a `self.` attribute may be wrapped only later)
        if saved_kinds == {"bare"}:  # the file's own checkpoints are bare; this one goes into the wrapper
            save = next(c for _, _, _, c, _ in saves)
            yield (
                call,
                _into_wrapper_message(
                    f"the file's own checkpoints hold the bare module's keys (saved at line {save.lineno})", call
                ),
            )
        elif not saves and any("pretrain" in t.lower() for t in texts):
            yield call, _into_wrapper_message(f"`{ast.unparse(path)}` names pretrained weights, a bare module's keys", call)


def _into_wrapper_message(why: str, call: ast.Call) -> str:
    lax = "; strict=False does not fix it: no key matches and nothing is loaded" if _not_strict(call) else ""
    return (
        f"{why}, loaded here into the DDP/DataParallel wrapper, whose keys are `module.<name>`{lax}; load into "
        "the module (model.module.load_state_dict, or before wrapping)"
    )


def _prefix_message(saved: str, into: str, save: ast.Call, save_via: str | None, load_via: str | None, lax: bool) -> str:
    what = "a DDP/DataParallel wrapper (keys `module.*`)" if saved == "wrapper" else "the bare module"
    where = "the bare module" if into == "bare" else "the wrapper (it expects `module.*`)"
    by = f" (by {save_via}())" if save_via else ""
    here = f" by {load_via}()" if load_via else ""
    text = f"the checkpoint saved at line {save.lineno}{by} holds the state dict of {what}, loaded here{here} into {where}"
    if lax:
        text += "; strict=False does not fix it: no key matches, nothing is loaded and no error is raised"
    return text


# --- FSD070: every rank writes the same file -----------------------------------------------------------------

_SPAWNERS = {"spawn", "start_processes", "Process"}
_NOT_WEIGHTS = ("tokenizer", "processor", "config", "feature_extractor", "image_processor")


def _spawned(facts: FileFacts, fn: Function) -> bool:
    """Is ``fn`` given by name to ``mp.spawn`` / ``start_processes`` / ``Process(target=...)`` (every rank runs it)?
    The names given to them are collected once per file."""
    key = ("checkpoint", "spawned")
    if key not in facts.cache:
        names: set[str] = set()
        for call in facts.calls():
            if last_name(call) in _SPAWNERS:
                args = [*call.args[:1], *(k.value for k in call.keywords if k.arg in ("fn", "target"))]
                names.update(a.id for a in args if isinstance(a, ast.Name))
        facts.cache[key] = names
    spawned: set[str] = facts.cache[key]
    return fn.name in spawned


def _method_calls(facts: FileFacts, fn: Function) -> list[ast.Call]:
    """``x.name(...)`` calls of the file for a method ``fn`` whose name no other function of the file has."""
    if not isinstance(facts.parents.get(id(fn)), ast.ClassDef):
        return []
    same = [f for f in callgraph.local_functions(facts).values() if f.name == fn.name]
    if len(same) != 1:
        return []
    return [c for c in facts.calls() if isinstance(c.func, ast.Attribute) and c.func.attr == fn.name]


# words of a condition that may be a rank guard the facts cannot see (``if args.save_logs:`` set from
# ``is_master(args)``; ``if rank == 0:`` with ``world_size, rank = init_distributed()``; ``if self.is_main:``)
_GUARD_WORDS = (
    "rank",
    "master",
    "main",
    "primary",
    "leader",
    "chief",
    "is_",
    "save",
    "log",
    "distributed",
    "world",
    "local",
    "node",
    "process",
    "zero",
    "first",
    "writer",
    "ddp",
    "dist",
)


def _maybe_rank_guard(test: ast.AST) -> bool:
    """Could this condition tell the ranks apart (a name in it says rank, master, main process, save or log flag...)?
    ``if score > best:`` cannot; FSD070 speaks only where no condition around the write could."""
    for n in ast.walk(test):
        if isinstance(n, (ast.Name, ast.Attribute)):
            text = (last_name(n) or "").lower()
            if any(w in text for w in _GUARD_WORDS):
                return True
    return False


def _guarded_in(facts: FileFacts, node: ast.AST, fn: ast.AST | None) -> bool:
    """Is ``node`` under a condition that may be a rank guard, within ``fn`` (or the module), or after an early exit
    of ``fn`` on one (``if world_size > 1: raise ...``, ``assert dist.get_world_size() == 1``)?"""
    for a in facts.ancestors(node):
        if a is fn:
            break
        if isinstance(a, (ast.If, ast.While, ast.IfExp)) and _maybe_rank_guard(a.test):
            return True
    if fn is None:
        return False
    for n in facts.scope_nodes(fn):
        if getattr(n, "lineno", 0) >= getattr(node, "lineno", 0):
            continue
        if isinstance(n, ast.Assert) and _maybe_rank_guard(n.test):
            return True
        if isinstance(n, ast.If) and _maybe_rank_guard(n.test) and any(isinstance(b, (ast.Raise, ast.Return)) for b in n.body):
            return True
    return False


def every_rank_route(facts: FileFacts, node: ast.AST, depth: int = 0) -> list[ast.Call] | None:
    """The calls through which every rank reaches ``node``, innermost first (``[]`` at module level or in a spawned
    function), or None when no route is known: ``node`` is under no rank condition (nor a condition that may be one,
    :func:`_maybe_rank_guard`), and inside a function, some call of that function in the file runs on every rank
    too (``self._save("best")`` unguarded beside ``if rank == 0: self._save("last")``: the first writes from every
    rank)."""
    if facts.rank_branches().get(id(node)) or depth > _DEPTH:
        return None
    fn = next((a for a in facts.ancestors(node) if isinstance(a, (*_FUNCS, ast.Lambda))), None)
    if _guarded_in(facts, node, fn):
        return None
    if fn is None:
        return []
    if isinstance(fn, ast.Lambda):
        return None
    memo: dict[int, list[ast.Call] | None] = facts.cache.setdefault(("checkpoint", "every-rank"), {})
    if id(fn) in memo:
        return memo[id(fn)]
    memo[id(fn)] = None  # a cycle of calls: not known
    found = {id(c): c for c, _ in _call_sites(facts, fn)} | {id(c): c for c in _method_calls(facts, fn)}
    sites = sorted(found.values(), key=lambda c: (c.lineno, c.col_offset))
    result: list[ast.Call] | None = [] if _spawned(facts, fn) and not sites else None
    for site in sites:
        outer = every_rank_route(facts, site, depth + 1)
        if outer is not None:
            result = [site, *outer]
            break
    memo[id(fn)] = result
    return result


def _written(facts: FileFacts, call: ast.Call) -> tuple[ast.expr, str] | None:
    """(path, label) of a checkpoint write every rank would race on: ``torch.save``, ``save_file``,
    ``save_pretrained`` of a model (not a tokenizer or config, not given ``is_main_process=``); else None."""
    q = facts.qual(call) or ""
    if q == "torch.save":
        path = kwarg(call, "f", 1)
        return (path, "torch.save()") if path is not None else None
    if q == "safetensors.torch.save_file":
        path = kwarg(call, "filename", 1)
        return (path, "save_file()") if path is not None else None
    if last_name(call) == "save_pretrained" and isinstance(call.func, ast.Attribute):
        owner = (dotted(call.func.value) or "").lower()
        if any(w in owner for w in _NOT_WEIGHTS) or kwarg(call, "is_main_process") is not None:
            return None
        path = kwarg(call, "save_directory", 0)
        return (path, f"{dotted(call.func.value) or 'model'}.save_pretrained()") if path is not None else None
    return None


def _short(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _node_local(facts: FileFacts, path: ast.AST) -> bool:
    """A path from ``tempfile`` (each process its own)."""
    return any(isinstance(n, ast.Call) and (facts.qual(n) or "").startswith("tempfile.") for n in ast.walk(path))


# calls that show the file runs as several ranks (forms a process group or a mesh, spawns ranks; or it wraps a module):
# a library file with collectives and an offline converter run as one process (torch's own
# distributed/checkpoint/format_utils.py: dcp_to_torch_save, no_dist=True, from its __main__) does not
_RANKS_CALLS = {
    "torch.distributed.init_process_group",
    "torch.distributed.device_mesh.init_device_mesh",
    "torch.multiprocessing.spawn",
    "torch.multiprocessing.start_processes",
}


def _runs_as_ranks(facts: FileFacts) -> bool:
    """Does the file itself run as several ranks: a process group or mesh formed, ranks spawned, or a DDP / FSDP /
    ``fully_shard`` wrap?"""
    if facts.ddp or facts.fsdp1 or facts.fsdp2:
        return True
    return any((facts.qual(c) or "") in _RANKS_CALLS for c in facts.calls())


@finder("FSD070")
def every_rank_writes_one_file(facts: FileFacts) -> Found:
    """FSD070: a checkpoint written by every rank to one path (see the module docstring), in a file that runs as
    several ranks (:func:`_runs_as_ranks`)."""
    if not callgraph.distributed_work(facts, here_only=True) or not _runs_as_ranks(facts):
        return
    for call in facts.calls():
        got = _written(facts, call)
        if got is None:
            continue
        path, label = got
        if facts.names_the_rank(path) or any(
            facts.names_the_rank(a) or _node_local(facts, a) for a in _alternatives(facts, path)
        ):
            continue
        if label == "torch.save()":
            owner = finders._state_dict_owner(facts, kwarg(call, "obj", 0))
            if owner is not None and facts.is_fsdp2(owner):
                continue  # FSD016's
        route = every_rank_route(facts, call)
        if route is not None:
            via = f" (called on every rank at line {route[0].lineno})" if route and _guarded_sites(facts, call) else ""
            yield call, f"{label} runs on every rank{via}, to `{_short(path)}`, which does not name the rank"


def _guarded_sites(facts: FileFacts, node: ast.AST) -> bool:
    """Is the function holding ``node`` also called under a rank condition somewhere (so the route that runs on every
    rank is worth naming)?"""
    fn = next((a for a in facts.ancestors(node) if isinstance(a, _FUNCS)), None)
    if fn is None:
        return False
    found = {id(c): c for c, _ in _call_sites(facts, fn)} | {id(c): c for c in _method_calls(facts, fn)}
    return any(every_rank_route(facts, c) is None for c in found.values())


# --- FSD071: a checkpoint loaded on one rank after the wrap -------------------------------------------------------

_SYNCS = {"broadcast", "broadcast_object_list", "_sync_module_states", "_sync_params_and_buffers", "sync_module_states"}


def _optimizer(facts: FileFacts, node: ast.AST) -> bool:
    """Does ``node`` name an optimizer built in the file (``opt = torch.optim.AdamW(...)``, ``self.optimizer = ...``),
    here or as the argument every call of its function passes for it?"""
    names = finders._optimizer_names(facts)
    alts = [node] if dotted(node) in names else _alternatives(facts, node)
    return bool(alts) and all(dotted(a) in names or isinstance(a, ast.Call) and finders._is_optimizer(facts, a) for a in alts)


def _wrapped_before(facts: FileFacts, node: ast.AST) -> str | None:
    """How the module ``node`` is wrapped at this point: 'ddp' (the DDP wrapper, its ``.module``, or a name given to
    ``DDP(...)`` earlier in its function), 'fsdp1', else None."""
    if isinstance(node, ast.Attribute) and node.attr == "module" and divergence._is_ddp(facts, node.value):
        return "ddp"
    if isinstance(node, (ast.Name, ast.Attribute)) and facts.is_fsdp1(node):
        return "fsdp1"
    if isinstance(node, (ast.Name, ast.Attribute)) and divergence._is_ddp(facts, node):
        return "ddp"
    if isinstance(node, ast.Name):
        ident, _ = facts.binding(node)
        for call in facts.calls(facts.scope_of(node)):
            if facts.qual(call) == DDP and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == node.id:
                if facts.binding(call.args[0])[0] == ident and end(call) <= (node.lineno, node.col_offset):
                    return "ddp"
    return None


def _synced_after(facts: FileFacts, branch: ast.stmt, scope: ast.AST) -> bool:
    """Does a broadcast follow ``branch`` in ``scope`` (the loaded values sent to the other ranks)?"""
    calls, positions = divergence.scope_calls(facts, scope)
    return any(last_name(c) in _SYNCS for c in calls[bisect.bisect_left(positions, end(branch)) :])


@finder("FSD071")
def loaded_on_one_rank_after_wrap(facts: FileFacts) -> Found:
    """FSD071: ``load_state_dict`` on some ranks only, into a wrapped module or an optimizer (see the module
    docstring)."""
    wraps = bool(facts.ddp or facts.fsdp1 or facts.fsdp2 or facts.uses(DDP, FSDP1))
    if not wraps:
        return
    branches = facts.rank_branches()
    for call in facts.calls():
        enclosing = branches.get(id(call))
        if not enclosing or not (isinstance(call.func, ast.Attribute) and call.func.attr == "load_state_dict"):
            continue
        branch = enclosing[-1]
        if any(rc.not_distributed_side(facts, b, call) for b in enclosing) or not isinstance(branch, ast.If):
            continue
        recv = call.func.value
        kind = _wrapped_before(facts, recv)
        if kind == "fsdp1" and finders._fsdp_excluded(facts, call):
            kind = None  # after `if _is_model_fsdp(model): raise`: this load never meets an FSDP module
        if kind is None and _optimizer(facts, recv):
            kind = "optimizer"
        if kind is None:
            continue
        if facts.other_branch_has(branch, call, lambda c: last_name(c) == "load_state_dict"):
            continue
        if _synced_after(facts, enclosing[0], facts.scope_of(call)):
            continue
        what = {
            "ddp": "a module DDP already wraps (DDP broadcasts the weights only when it is built): the other ranks keep their own",
            "fsdp1": "an FSDP1 module (its load_state_dict of a full state dict all-gathers: the other ranks never join)",
            "optimizer": "an optimizer (its state is never broadcast): the other ranks keep a fresh or stale state",
        }[kind]
        yield (
            call,
            f"`{dotted(recv) or 'it'}.load_state_dict()` runs only on some ranks (rank condition at line {branch.lineno}), into {what}",
        )


# --- FSD072: an FSDP1 optimizer state loaded as it is ------------------------------------------------------------

_CONVERTERS = {
    "optim_state_dict_to_load",
    "set_optimizer_state_dict",
    "set_state_dict",
    "scatter_full_optim_state_dict",
    "shard_full_optim_state_dict",
    "load_sharded_optimizer_state_dict",
    "flatten_sharded_optim_state_dict",
    "rekey_optim_state_dict",
}


@finder("FSD072")
def fsdp1_optimizer_state_loaded_as_is(facts: FileFacts) -> Found:
    """FSD072: ``optimizer.load_state_dict`` of a state read from one file with FSDP1, never converted (see the module
    docstring)."""
    if not (facts.fsdp1 or facts.uses(FSDP1)) or any(last_name(c) in _CONVERTERS for c in facts.calls()):
        return
    for call in facts.calls():
        if not (
            isinstance(call.func, ast.Attribute) and call.func.attr == "load_state_dict" and _optimizer(facts, call.func.value)
        ):
            continue
        got = paths.loaded_state(facts, kwarg(call, "state_dict", 0))
        if got is None or any(facts.names_the_rank(a) for a in _alternatives(facts, got[1])):
            continue
        yield (
            call,
            f"`{dotted(call.func.value)}` is the optimizer of an FSDP1 model: it holds this rank's shard of the flat parameters",
        )
