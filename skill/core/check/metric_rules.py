"""Rules about metrics and results each rank computes on its own share of the data (FSD086-FSD088).

- **FSD086**: a function of the file whose loop evaluates (no ``backward`` / ``step`` in it) over a ``DataLoader``
  with a ``DistributedSampler`` (followed through names, parameters and helpers, so the loader may be built by the
  caller and handed in), that returns a value and combines nothing across the ranks (no ``torch.distributed``
  collective, no framework collective, no call of a method named like one: ``meter.all_reduce()``,
  ``metric.compute()`` of torchmetrics, which syncs, ``aggregate()``, ``gather``, ``sync``), whose result the caller
  then uses as the job's number: compares it with a best value (``if acc > best_acc:``, ``is_best = loss < best``,
  ``max(acc, best_acc)``: checkpoint selection; an item of it, ``metrics["acc"] > best``), steps a scheduler on it
  (``scheduler.step(val_loss)``: each rank's ``ReduceLROnPlateau`` on its own value) or reports it under a rank condition (``if rank == 0:
  print(acc)``, a logger, ``wandb.log``, ``writer.add_scalar``). Each rank's value covers its own shard only, so the
  best checkpoint is chosen (and the number printed) on rank 0's shard. Silent when the caller hands the result to a
  collective (or to a function of the file that reaches one) before that use, or rebinds it; silent on a loader
  without a ``DistributedSampler`` (every rank scores the whole set and the value is everybody's). The same inline: an
  evaluation loop over a sharded loader that sums into names (``correct += ...``), and, after it in the same
  function, one of them or a name derived from them (``acc = correct / total``) used the same way, with nothing in
  that function from the loop on that combines values across the ranks.
- **FSD087**: a Lightning ``self.log(name, value)`` / ``self.log_dict({name: value})`` without ``sync_dist=True``
  of a metric that a ``ModelCheckpoint(monitor=name)``, ``EarlyStopping(monitor=name)`` or an LR scheduler's
  ``"monitor": name`` in the module's class watches (the callbacks given to the file's ``Trainer(...)``: in its
  ``callbacks`` list, or named there), in a file whose every ``Trainer(...)`` runs several processes (``devices``
  above one or ``-1``, ``num_nodes`` above one, a ``ddp`` / ``fsdp`` / ``deepspeed`` strategy; a file that also
  builds a single-process Trainer, a test or a demo, does not say which one fits the module). Each process logs
  the mean over its own validation shard, so every rank's callback sees a different value: ranks keep different
  top-k checkpoints and step their schedulers differently. Silent with ``sync_dist=True`` (any value but a literal
  False), ``rank_zero_only=True``, a logged ``self.`` attribute in a file that imports torchmetrics (a ``Metric``
  object syncs itself), a method that already runs a collective, and where no Trainer of the file is known to run
  several processes.
- **FSD088**: a tensor whose size depends on this rank's data handed to an all-gather that needs the same shape on
  every rank: ``dist.all_gather(out, t)``, ``all_gather_into_tensor(out, t)``, ``dist.gather(t, ...)``, Lightning's
  ``self.all_gather(t)`` (``pl_module`` / ``fabric``), Accelerate's ``accelerator.gather(t)`` /
  ``gather_for_metrics(t)``, directly or through a function of the file that hands its parameter to one
  (``concat_all_gather(t)``, a method ``self.enqueue(t)`` calling it). "Depends on this rank's data": ``t`` is (or
  is bound from, or is ``torch.cat`` / ``stack`` / ``tensor`` of a list the file appends such items to, or appends
  to under an ``if`` inside a loop) a boolean-mask selection (``x[y != -100]``,
  ``x[mask]`` with ``mask`` a comparison), ``masked_select`` / ``nonzero`` / ``unique`` / one-argument
  ``torch.where``, or a slice whose bound is read from the data (``x[:, :int(lengths.max())]``, ``.item()``,
  ``.sum()``). The ranks then send tensors of different sizes: Gloo aborts ("Received data size doesn't match
  expected size"), NCCL hangs or returns garbage. Silent where the function gathering it also gathers something
  else first (the sizes), where the file calls ``pad_across_processes``, and for ``all_gather_object`` (it pickles
  each object, any size).
"""

from __future__ import annotations

import ast

from fsdp_skill.core.check import calls as callgraph  # `calls` is a common local name here
from fsdp_skill.core.check import divergence, flow_rules, step_rules
from fsdp_skill.core.check import rank_conditional as rc
from fsdp_skill.core.check.facts import FileFacts, dotted, end, is_true, kwarg, last_name, start
from fsdp_skill.core.check.finders import Found, finder

Function = ast.FunctionDef | ast.AsyncFunctionDef

# --- FSD086: a metric over this rank's shard used as the job's ------------------------------------------------

# words of a call that combines values across the processes (or a metric object that syncs itself)
_COMBINING_WORDS = ("reduce", "gather", "sync", "broadcast", "compute", "aggregate", "accumulate_metric")
_REPORTERS = {"print", "info", "log", "log_metrics", "add_scalar", "add_scalars", "write", "set_postfix", "warning"}


def _sharded_loader(facts: FileFacts, it: ast.AST) -> ast.Call | None:
    """The ``DistributedSampler(...)`` of the ``DataLoader`` a loop iterates (any ``drop_last``), or None."""
    for v in step_rules._loop_sources(facts, it):
        if not (isinstance(v, ast.Call) and facts.qual(v) in step_rules._LOADERS):
            continue
        sampler = kwarg(v, "sampler", 3)
        for s in step_rules._values(facts, sampler) if sampler is not None else []:
            if isinstance(s, ast.Call) and (facts.qual(s) or "").endswith("DistributedSampler"):
                return s
    return None


def _combines(facts: FileFacts, fn: ast.AST) -> bool:
    """Does ``fn`` combine anything across the ranks, or call something named like it (a meter's ``all_reduce()``,
    a torchmetrics ``compute()``)?"""
    if flow_rules._reduces(facts, fn):
        return True
    for node in facts.scope_nodes(fn):
        if isinstance(node, ast.Call):
            name = (last_name(node) or "").lower()
            if any(w in name for w in _COMBINING_WORDS) or "accelerator" in (dotted(node.func) or "").lower():
                return True
    return False


def _loader_param(facts: FileFacts, fn: Function, it: ast.AST) -> int | None:
    """The index of the parameter of ``fn`` that a loop iterates (through ``enumerate`` / ``tqdm``), else None."""
    while isinstance(it, ast.Call) and (last_name(it) or "") in step_rules._ITER_WRAPPERS and it.args:
        it = it.args[0]
    if not isinstance(it, ast.Name):
        return None
    _, b = facts.binding(it)
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if b is None or b.kind != "param" or it.id not in params or facts.scope_of(it) is not fn:
        return None
    return params.index(it.id)


def _shard_evaluators(facts: FileFacts) -> dict[int, tuple[Function, ast.Call, ast.For | ast.AsyncFor]]:
    """id(function) -> (the function, its sampler, its loop) for each function of the file that evaluates over a
    sharded loader, returns a value and combines nothing (memoised)."""
    key = ("metric", "evaluators")
    if key not in facts.cache:
        found: dict[int, tuple[Function, ast.Call, ast.For | ast.AsyncFor]] = {}
        if any((facts.qual(c) or "").endswith("DistributedSampler") for c in facts.calls()):
            for loop in facts.nodes:
                if not isinstance(loop, (ast.For, ast.AsyncFor)) or step_rules._trains(loop):
                    continue
                fn = facts.scope_of(loop)
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or id(fn) in found:
                    continue
                if not any(isinstance(n, ast.Return) and n.value is not None for n in facts.scope_nodes(fn)):
                    continue
                sampler = _sharded_loader(facts, loop.iter)
                if sampler is not None and not _combines(facts, fn):
                    found[id(fn)] = (fn, sampler, loop)
        facts.cache[key] = found
    out: dict[int, tuple[Function, ast.Call, ast.For | ast.AsyncFor]] = facts.cache[key]
    return out


def _bound_names(call: ast.Call, facts: FileFacts) -> list[ast.Name]:
    """The names an assignment binds to the result of ``call`` (``acc = f()``, ``loss, acc = f()``), else []."""
    parent = facts.parents.get(id(call))
    if not isinstance(parent, ast.Assign) or parent.value is not call:
        return []
    return [n for t in parent.targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _best_name(node: ast.AST) -> bool:
    text = (dotted(node) or "").lower() if isinstance(node, (ast.Name, ast.Attribute)) else ""
    return "best" in text


def _selection(facts: FileFacts, use: ast.Name) -> str | None:
    """'compared with <best>' when ``use`` (or an item of it: ``metrics["acc"]``, ``res.acc``) is compared with (or
    kept by max() / min() against) a best value, or handed to a scheduler's ``step()`` (``ReduceLROnPlateau``)."""
    node: ast.AST = use
    parent = facts.parents.get(id(use))
    while isinstance(parent, (ast.Subscript, ast.Attribute)) and getattr(parent, "value", None) is node:
        node, parent = parent, facts.parents.get(id(parent))
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr == "step"
        and node in parent.args
        and "sched" in (dotted(parent.func.value) or "").lower()
    ):
        return f"handed to {dotted(parent.func.value)}.step() (each rank's scheduler steps on its own value)"
    if isinstance(parent, ast.Compare):
        others = [parent.left, *parent.comparators]
        best = next((o for o in others if o is not node and _best_name(o)), None)
        if best is not None:
            return f"compared with `{dotted(best)}` (the best checkpoint is chosen on it)"
    if isinstance(parent, ast.Call) and last_name(parent) in ("max", "min") and isinstance(parent.func, ast.Name):
        best = next((a for a in parent.args if a is not node and _best_name(a)), None)
        if best is not None:
            return f"kept in `{dotted(best)}` by {parent.func.id}() (the best value is chosen on it)"
    return None


def _report(facts: FileFacts, use: ast.Name) -> str | None:
    """'reported ...' when ``use`` is an argument of a print / logger / tracker call under a rank condition."""
    for anc in facts.ancestors(use):
        if isinstance(anc, ast.stmt):
            break
        if isinstance(anc, ast.Call) and last_name(anc) in _REPORTERS and facts.rank_branches().get(id(anc)):
            return f"reported by {dotted(anc.func) or last_name(anc)}() on some ranks only, as the job's value"
    return None


def _handed_between(facts: FileFacts, scope: ast.AST, name: str, after: tuple[int, int], before: tuple[int, int]) -> bool:
    """Is ``name`` given to a collective, or to any call of a function of the file that reaches one, between the
    two positions (then the caller combined it)?"""
    reach = divergence.reach_of(facts)
    for node in facts.scope_nodes(scope):
        if not isinstance(node, ast.Call) or not (after <= start(node) < before):
            continue
        if not any(isinstance(n, ast.Name) and n.id == name for a in node.args for n in ast.walk(a)):
            continue
        q = facts.qual(node) or ""
        lname = (last_name(node) or "").lower()
        if (
            q.startswith("torch.distributed.")
            or reach.call(node) is not None
            or flow_rules.framework_collective(facts, node)
            or any(w in lname for w in _COMBINING_WORDS)
        ):
            return True
    return False


@finder("FSD086")
def shard_metric_used_as_the_jobs(facts: FileFacts) -> Found:
    """FSD086: the result of an evaluation over this rank's shard compared with a best value or reported on some
    ranks, never combined (see the module docstring)."""
    yield from _inline_evaluations(facts)
    evaluators = _shard_evaluators(facts)
    if not evaluators:
        return
    reach = divergence.reach_of(facts)
    for call in facts.calls():
        fn = reach.callee(call)
        if fn is None or id(fn) not in evaluators:
            continue
        _, sampler, loop = evaluators[id(fn)]
        index = _loader_param(facts, fn, loop.iter)
        if index is not None:  # the loader is the caller's: is this call's one sharded?
            target = callgraph.callee(facts, call)
            arg = dict(callgraph.bound_args(call, target)).get(index) if target is not None else None
            here = _sharded_loader(facts, arg) if arg is not None else None
            if here is None:
                continue
            sampler = here
        names = _bound_names(call, facts)
        scope = facts.scope_of(call)
        ids = {n.id for n in names}
        done = False
        for node in facts.scope_nodes(scope):
            if done:
                break
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in ids):
                continue
            if start(node) <= end(call):
                continue
            _, b = facts.binding(node)
            if b is None or b.value is not call:
                continue  # rebound since: what it reads is not the evaluation's result
            how = _selection(facts, node) or _report(facts, node)
            if how is None or _handed_between(facts, scope, node.id, end(call), start(node)):
                continue
            yield (
                node,
                f"`{node.id}` is returned by {fn.name}() (line {fn.lineno}), whose loop at line {loop.lineno} reads a "
                f"DistributedSampler (line {sampler.lineno}): this rank's shard only, combined with no other rank's; "
                f"{how}",
            )
            done = True


def _inline_evaluations(facts: FileFacts) -> Found:
    """FSD086's inline shape: an evaluation loop over a sharded loader in the function that then compares or reports
    what the loop summed (``correct += ...`` ... ``acc = correct / total`` ... ``if rank == 0: print(acc)``), with
    nothing after the loop's start in that function that combines values across the ranks."""
    if not any((facts.qual(c) or "").endswith("DistributedSampler") for c in facts.calls()):
        return
    done: set[int] = set()
    for loop in facts.nodes:
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or step_rules._trains(loop):
            continue
        scope = facts.scope_of(loop)
        if id(scope) in done or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        summed = step_rules._accumulated(loop)
        if not summed:
            continue
        sampler = _sharded_loader(facts, loop.iter)
        if sampler is None:
            continue
        after = [n for n in facts.scope_nodes(scope) if isinstance(n, (ast.expr, ast.stmt)) and start(n) > end(loop)]
        if any(
            _combining_call(facts, n) for n in facts.scope_nodes(scope) if isinstance(n, ast.Call) and start(n) >= start(loop)
        ):
            continue
        local = set(summed)
        for n in after:  # names derived from the sums after the loop, in source order
            if isinstance(n, ast.Assign) and any(isinstance(m, ast.Name) and m.id in local for m in ast.walk(n.value)):
                local |= {t.id for t in n.targets if isinstance(t, ast.Name)}
        for n in after:
            if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in local):
                continue
            how = _selection(facts, n) or _report(facts, n)
            if how is None:
                continue
            done.add(id(scope))
            yield (
                n,
                f"`{n.id}` comes from the loop at line {loop.lineno}, which reads a DistributedSampler (line "
                f"{sampler.lineno}): this rank's shard only, combined with no other rank's; {how}",
            )
            break


def _combining_call(facts: FileFacts, node: ast.Call) -> bool:
    """Does ``node`` combine values across the ranks (a collective, a framework's, a function of the file reaching
    one, or a call named like one)?"""
    q = facts.qual(node) or ""
    name = (last_name(node) or "").lower()
    if q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in rc.COLLECTIVES:
        return True
    if flow_rules.framework_collective(facts, node) or any(w in name for w in _COMBINING_WORDS):
        return True
    if "accelerator" in (dotted(node.func) or "").lower():
        return True
    fn = divergence.reach_of(facts).callee(node)
    return fn is not None and _combines(facts, fn)


# --- FSD087: a monitored Lightning metric logged without sync_dist ----------------------------------------------

_MONITORS = {"ModelCheckpoint", "EarlyStopping"}
_STRATEGY_WORDS = ("ddp", "fsdp", "deepspeed")


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _trainers(facts: FileFacts) -> list[ast.Call]:
    """The Lightning ``Trainer(...)`` calls of the file."""
    return [
        c
        for c in facts.calls()
        if last_name(c) == "Trainer" and (facts.qual(c) or "").startswith(("lightning", "pytorch_lightning"))
    ]


def _many(node: ast.AST | None) -> bool:
    """Does a ``devices`` / ``num_nodes`` / ``gpus`` value ask for more than one process (``4``, ``-1``, ``"-1"``,
    ``[0, 1]``, ``"0,1"``)?"""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return node.operand.value == 1
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            return False
        if isinstance(v, int):
            return v > 1
        if isinstance(v, str):
            t = v.strip()
            return t == "-1" or t.isdigit() and int(t) > 1 or "," in t and t.strip(", ") != ""
    if isinstance(node, (ast.List, ast.Tuple)):
        return len(node.elts) > 1
    return False


def _multi_process(call: ast.Call) -> bool:
    strategy = kwarg(call, "strategy")
    text = (_str(strategy) or (last_name(strategy) if isinstance(strategy, ast.Call) else "") or "").lower()
    return any(w in text for w in _STRATEGY_WORDS) or any(_many(kwarg(call, k)) for k in ("devices", "num_nodes", "gpus"))


def _callback_monitors(facts: FileFacts, trainer: ast.Call) -> dict[str, int]:
    """Metric name -> line of the ``ModelCheckpoint`` / ``EarlyStopping`` given to ``trainer``'s ``callbacks``
    (a list there, or a name bound to one, or names of the callbacks in it)."""
    out: dict[str, int] = {}
    given = kwarg(trainer, "callbacks")
    todo = [given] if given is not None else []
    seen = 0
    while todo and seen < 32:
        node = todo.pop()
        seen += 1
        if node is None:
            continue
        value = facts.resolve(node) if isinstance(node, ast.Name) else node
        if isinstance(value, (ast.List, ast.Tuple)):
            todo += list(value.elts)
        elif isinstance(value, ast.Call) and last_name(value) in _MONITORS:
            name = _str(kwarg(value, "monitor", 0 if last_name(value) == "EarlyStopping" else None))
            if name is not None:
                out.setdefault(name, value.lineno)
    return out


def _scheduler_monitors(facts: FileFacts, cls: ast.ClassDef) -> dict[str, int]:
    """Metric name -> line of a ``{"monitor": name}`` dict in the methods of ``cls`` (configure_optimizers)."""
    out: dict[str, int] = {}
    for node in ast.walk(cls):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if _str(k) == "monitor" and (name := _str(v)) is not None:
                    out.setdefault(name, node.lineno)
    return out


def _logged(call: ast.Call) -> list[tuple[str, ast.AST]]:
    """(name, value) of what ``self.log(name, value)`` / ``self.log_dict({name: value})`` logs, constant names only."""
    if last_name(call) == "log":
        name = _str(kwarg(call, "name", 0))
        value = kwarg(call, "value", 1)
        return [(name, value)] if name is not None and value is not None else []
    d = kwarg(call, "dictionary", 0)
    if last_name(call) == "log_dict" and isinstance(d, ast.Dict):
        return [(n, v) for k, v in zip(d.keys, d.values, strict=True) if (n := _str(k)) is not None]
    return []


def _syncs_itself(facts: FileFacts, value: ast.AST) -> bool:
    """A torchmetrics ``Metric`` object (a ``self.`` attribute in a file that imports torchmetrics) reduces itself."""
    imports = any(a.split(".", 1)[0] == "torchmetrics" for a in facts.aliases.values())
    return imports and isinstance(value, ast.Attribute) and dotted(value.value) == "self"


def _method_combines(facts: FileFacts, call: ast.Call) -> bool:
    scope = facts.scope_of(call)
    for node in facts.scope_nodes(scope):
        if isinstance(node, ast.Call) and node is not call:
            q = facts.qual(node) or ""
            name = (last_name(node) or "").lower()
            if q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in rc.COLLECTIVES:
                return True
            if flow_rules.framework_collective(facts, node) or name in ("all_gather", "compute", "all_reduce", "reduce"):
                return True
    return False


@finder("FSD087")
def monitored_metric_not_synced(facts: FileFacts) -> Found:
    """FSD087: a monitored metric logged by a LightningModule without ``sync_dist=True`` under a multi-process
    Trainer (see the module docstring)."""
    if not flow_rules._imports_lightning(facts):
        return
    trainers = _trainers(facts)
    if not trainers or not all(_multi_process(t) for t in trainers):
        return  # a file that also runs a single-process Trainer (a test, a demo) does not say which one fits the module
    watched: dict[str, int] = {}
    for t in trainers:
        for name, line in _callback_monitors(facts, t).items():
            watched.setdefault(name, line)
    for call in facts.calls():
        if not (isinstance(call.func, ast.Attribute) and call.func.attr in ("log", "log_dict")):
            continue
        if dotted(call.func.value) != "self" or not flow_rules._lightning_class(facts, call):
            continue
        sync = kwarg(call, "sync_dist")
        if sync is not None and not (isinstance(sync, ast.Constant) and sync.value is False):
            continue
        if is_true(kwarg(call, "rank_zero_only")) or _method_combines(facts, call):
            continue
        cls = next((a for a in facts.ancestors(call) if isinstance(a, ast.ClassDef)), None)
        monitored = {**(_scheduler_monitors(facts, cls) if cls is not None else {}), **watched}
        for name, value in _logged(call):
            if name in monitored and not _syncs_itself(facts, value):
                yield (
                    call,
                    f"`{name}` is watched at line {monitored[name]} and the Trainer at line {trainers[0].lineno} runs "
                    "several processes; logged here without sync_dist=True",
                )
                break


# --- FSD088: an all-gather of a tensor whose size is this rank's ------------------------------------------------

_SIZED_BY_DATA = {"masked_select", "nonzero", "unique", "unique_consecutive", "argwhere"}
_DATA_BOUNDS = {"max", "sum", "item", "count_nonzero", "nonzero"}
_MASK_CALLS = {"isfinite", "isnan", "isinf", "bool", "logical_and", "logical_or", "logical_not", "ne", "eq", "gt", "lt"}
_TORCH_GATHERS = {"all_gather": 1, "all_gather_into_tensor": 1, "gather": 0}


def _mask(facts: FileFacts, node: ast.AST, depth: int = 0) -> bool:
    """Is ``node`` (through names) a boolean mask: a comparison, ``~`` / ``&`` / ``|`` of masks, ``.bool()``?"""
    node = facts.resolve(node) or node
    if isinstance(node, ast.Compare):
        return not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops)
    if depth > 3:
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return _mask(facts, node.operand, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        return _mask(facts, node.left, depth + 1) or _mask(facts, node.right, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda", "cpu"):
        return _mask(facts, node.func.value, depth + 1)
    return isinstance(node, ast.Call) and last_name(node) in _MASK_CALLS and isinstance(node.func, ast.Attribute)


def _data_bound(facts: FileFacts, node: ast.AST | None, depth: int = 0) -> bool:
    """Is ``node`` (through names and ``int(...)``) a number read from the data: ``lengths.max()``, ``.item()``?"""
    if node is None or depth > 3:
        return False
    node = facts.resolve(node) or node
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "int" and node.args:
            return _data_bound(facts, node.args[0], depth + 1)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _DATA_BOUNDS and not node.args:
            inner = node.func.value
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr in _DATA_BOUNDS:
                return True  # x.max().item()
            return isinstance(inner, (ast.Name, ast.Attribute, ast.Subscript))
    return False


def _rank_sized(facts: FileFacts, node: ast.AST | None, depth: int = 0) -> str | None:
    """What makes ``node``'s size this rank's own (see the module docstring), else None."""
    if node is None or depth > 3:
        return None
    value = facts.resolve(node) or node
    if isinstance(value, ast.Subscript):
        sl = value.slice
        parts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        for part in parts:
            if isinstance(part, ast.Slice):
                if _data_bound(facts, part.upper) or _data_bound(facts, part.lower):
                    return f"a slice whose bound is read from the data (line {value.lineno})"
            elif _mask(facts, part):
                return f"a boolean-mask selection (line {value.lineno})"
        return None
    if isinstance(value, ast.Call):
        name = last_name(value) or ""
        q = facts.qual(value) or ""
        if name in _SIZED_BY_DATA or q == "torch.where" and len(value.args) == 1:
            return f"{name}() (line {value.lineno})"
        if name in ("cat", "concatenate", "stack", "tensor", "as_tensor") and value.args and q.startswith("torch"):
            return _appended_sized(facts, value.args[0], depth)
        if isinstance(value.func, ast.Attribute) and name in (
            "to",
            "cuda",
            "cpu",
            "float",
            "long",
            "contiguous",
            "flatten",
            "view",
            "reshape",
        ):
            return _rank_sized(facts, value.func.value, depth + 1) if name not in ("view", "reshape") or value.args else None
    return None


def _appended_sized(facts: FileFacts, seq: ast.AST, depth: int) -> str | None:
    """For ``torch.cat(seq)``: what makes one item the file appends to ``seq`` (``self.preds.append(x[mask])``) of
    this rank's own size."""
    target = dotted(seq) if isinstance(seq, (ast.Name, ast.Attribute)) else None
    if target is None:
        return None
    for call in facts.calls():
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr == "append" and dotted(f.value) == target and call.args:
            if target.startswith("self.") or facts.scope_of(call) is facts.scope_of(seq):
                got = _rank_sized(facts, call.args[0], depth + 1) or _appended_on_condition(facts, call)
                if got is not None:
                    return got
    return None


def _appended_on_condition(facts: FileFacts, append: ast.Call) -> str | None:
    """'a list appended under a condition in a loop' when ``append`` sits under an ``if`` inside a loop of its
    function (``for box in boxes: if box.score > t: kept.append(box)``): how many items it gets is the data's."""
    scope = facts.scope_of(append)
    under_if = None
    for anc in facts.ancestors(append):
        if anc is scope:
            break
        if isinstance(anc, ast.If) and under_if is None:
            under_if = anc
        if isinstance(anc, (ast.For, ast.AsyncFor, ast.While)):
            if under_if is not None and not facts.is_rank_test(under_if.test):
                return f"a list appended under a condition in a loop (line {append.lineno})"
            return None
    return None


def _gathered_arg(facts: FileFacts, call: ast.Call) -> tuple[ast.AST, str] | None:
    """(the tensor, what gathers it) when ``call`` is an all-gather that needs one shape on every rank."""
    q = facts.qual(call) or ""
    name = q.rsplit(".", 1)[-1]
    if q.startswith("torch.distributed.") and name in _TORCH_GATHERS:
        at = _TORCH_GATHERS[name]
        arg = kwarg(call, "tensor" if name == "gather" else ("tensor" if name == "all_gather" else "input_tensor"), at)
        return (arg, f"dist.{name}()") if arg is not None else None
    f = call.func
    if not isinstance(f, ast.Attribute) or not call.args:
        return None
    owner = (dotted(f.value) or "").lower()
    if f.attr == "all_gather" and (
        owner in ("pl_module", "fabric", "self.fabric", "trainer.lightning_module")
        or owner == "self"
        and flow_rules._lightning_class(facts, call)
    ):
        return call.args[0], f"{dotted(f.value)}.all_gather()"
    if f.attr in ("gather", "gather_for_metrics") and "accelerator" in owner:
        return call.args[0], f"{dotted(f.value)}.{f.attr}()"
    return None


def _sizes_first(facts: FileFacts, call: ast.Call) -> bool:
    """Does the function of ``call`` run another gather before it (the sizes exchanged first)?"""
    scope = facts.scope_of(call)
    return any(
        isinstance(n, ast.Call)
        and n is not call
        and start(n) < start(call)
        and _gathered_arg(facts, n) is not None
        or isinstance(n, ast.Call)
        and (facts.qual(n) or "").endswith("all_gather_object")
        for n in facts.scope_nodes(scope)
    )


def _gathering_params(facts: FileFacts) -> dict[int, tuple[int, str, int]]:
    """id(function) -> (parameter index, what gathers it, line) for the functions of the file that hand a parameter
    to an all-gather (directly, or to another such function), with no size exchange before."""
    key = ("metric", "gathering-params")
    if key in facts.cache:
        found: dict[int, tuple[int, str, int]] = facts.cache[key]
        return found
    out: dict[int, tuple[int, str, int]] = {}
    funcs = list(callgraph.local_functions(facts).values())
    for _ in range(3):
        known = len(out)
        for fn in funcs:
            if id(fn) in out:
                continue
            params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
            for node in facts.scope_nodes(fn):
                if not isinstance(node, ast.Call):
                    continue
                got = _gathered_arg(facts, node)
                arg: ast.AST | None
                if got is not None and not _sizes_first(facts, node):
                    arg, label, line = got[0], got[1], node.lineno
                else:
                    target = callgraph.callee(facts, node)
                    inner = out.get(id(target.fn)) if target is not None and target.fn is not None else None
                    if inner is None or target is None:
                        continue
                    arg = dict(callgraph.bound_args(node, target)).get(inner[0])
                    label, line = inner[1], inner[2]
                v = facts.resolve(arg) if isinstance(arg, ast.Name) else arg
                if isinstance(v, ast.Name) and v.id in params and v.id not in ("self", "cls"):
                    _, b = facts.binding(v)
                    if b is not None and b.kind == "param":
                        out[id(fn)] = (params.index(v.id), label, line)
                        break
        if len(out) == known:
            break
    facts.cache[key] = out
    return out


@finder("FSD088")
def rank_sized_all_gather(facts: FileFacts) -> Found:
    """FSD088: a tensor of this rank's own size handed to an all-gather that needs one shape (module docstring)."""
    if any(last_name(c) == "pad_across_processes" for c in facts.calls()):
        return
    helpers = _gathering_params(facts)
    for call in facts.calls():
        got = _gathered_arg(facts, call)
        arg: ast.AST | None
        if got is not None:
            if _sizes_first(facts, call):
                continue
            arg, label, via = got[0], got[1], ""
        else:
            target = callgraph.callee(facts, call)
            inner = helpers.get(id(target.fn)) if target is not None and target.fn is not None else None
            if inner is None or target is None:
                continue
            arg = dict(callgraph.bound_args(call, target)).get(inner[0])
            label, via = inner[1], f" by {target.summary.name}() (line {inner[2]})"
        why = _rank_sized(facts, arg)
        if why is None or arg is None:
            continue
        yield (
            call,
            f"`{_short(arg)}` is {why}, so its size is this rank's own; gathered here{via} with {label}",
        )


def _short(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."
