"""Rules about the data each rank trains on, the values the ranks reduce, and the wrapper a step goes through
(FSD061-FSD068), and the rank a process gives ``init_process_group`` (FSD073).

- **FSD061**: a training loop (a ``for`` over a loader whose body runs a ``backward()``, here or in a function of the
  checked code it calls) over a ``DataLoader`` with no sampler of any kind, in a file that wraps a model in DDP /
  FSDP / ``fully_shard``: every rank draws the same batches. The loader is followed through names, helpers that
  return it (:func:`~fsdp_skill.core.check.calls_rules.bound_call`, and the summary of a helper in another checked
  file: :attr:`~fsdp_skill.core.check.calls.FunctionSummary.loader`), parameters and ``self.`` attributes. Silent
  for a dataset split per rank (its construction names a rank or the world size: ``Subset(ds, range(rank, n,
  world))``, ``split_dataset_by_node``, ``ds.shard(num_shards=world, index=rank)``, webdataset's
  ``split_by_node``), an ``IterableDataset`` (it may split itself), a class of the file that reads the rank, a
  loader that reached ``accelerator.prepare`` / Fabric's ``setup_dataloaders`` (they inject the sampler), a file of
  Lightning (the Trainer injects it), and a loader whose keywords the file cannot see (``**kwargs``).
- **FSD062**: ``DataLoader(..., sampler=<a DistributedSampler>, shuffle=True)``: the constructor raises "sampler
  option is mutually exclusive with shuffle" (the sampler shuffles; ``shuffle`` belongs to it).
- **FSD063**: ``DistributedSampler(rank=<the local rank>)`` without a local ``num_replicas`` (every node reads the
  same shards, the others are never read), or ``num_replicas=torch.cuda.device_count()`` / ``LOCAL_WORLD_SIZE`` with
  the global rank (the default): past the first node the rank is out of range and the sampler raises. Silent when
  both are local (a per-node split, maybe of per-node data).
- **FSD064**: a tensor collective (``all_reduce``, ``broadcast``, ``reduce``, ``all_gather``'s tensor, ``send`` /
  ``recv``) given a Python number, ``x.item()``, ``float(...)``, a list or tuple, or a NumPy array: it raises
  ``TypeError`` (the argument must be a ``torch.Tensor``). A name counts when every binding of it is such a value.
- **FSD065**: ``dist.all_reduce(x)`` with the default ``SUM``, after which ``x`` is reported or kept as an average
  (its name says ``avg`` / ``mean``, or it is formatted into text that says so) and never divided: the value is N
  times the mean. Silent when ``x`` is divided anywhere in the function (before the reduce, by the world size; or
  after it, by any count).
- **FSD066**: ``dist.all_reduce(x, op=ReduceOp.AVG)`` and then ``x`` divided by the world size: averaged twice.
- **FSD067**: gradients all-reduced by hand (``for p in model.parameters(): dist.all_reduce(p.grad)``) where
  ``model`` is a DDP or FSDP wrapper (or ``model.module`` of one): the wrapper already averaged them in backward, so
  the work is done twice and, unless divided again, the gradients are N times too large.
- **FSD068**: the training forward run around the wrapper, through ``model.module(x)`` / ``model.module.forward(x)``
  or the module the wrapper was built from (``ddp = DDP(net)`` ... ``net(x)``), whose result reaches a
  ``backward()`` in the same function, where no forward through the wrapper runs; or ``model.module`` (itself, a
  name bound to it, or to ``model.module if hasattr(model, "module") else model``) handed to a function of the file
  that runs that parameter's forward and backpropagates it (``train(loader, core, opt)``): DDP then arms no gradient
  all-reduce (the replicas drift apart), FSDP1 gathers no parameters. ``model.module`` for a ``state_dict``, saving,
  evaluation without a backward, or an attribute (``model.module.config``) is the right use and is silent; so is a
  file that all-reduces the gradients itself.

- **FSD073**: ``init_process_group(rank=<the rank on this node>)`` (``LOCAL_RANK``, ``args.local_rank``,
  ``SLURM_LOCALID``) with a world size that is not the node's: on a second node the ranks 0..n-1 repeat, two
  processes claim each rank and the rendezvous never fills. Silent for a world of the node's GPUs
  (``torch.cuda.device_count()``, ``LOCAL_WORLD_SIZE``), for ``world_size=1``, for an attribute the file also assigns
  a global rank, and for a file that starts its ranks with ``mp.spawn`` and names no node anywhere (all of the job's
  ranks run on this machine, so the local index is the rank).

The ``AVG`` reduce op on Gloo is not a rule: it raises on torch 2.6 and 2.7 and works from torch 2.8 (the file does not
say which torch runs it); ``data/reduce-a-metric`` explains both.
"""

from __future__ import annotations

import ast

from fsdp_skill.core.check import calls as callgraph  # `calls` is a common local name here
from fsdp_skill.core.check import calls_rules, divergence
from fsdp_skill.core.check.calls_rules import bound_call, rank_kind
from fsdp_skill.core.check.facts import DDP, FSDP1, FULLY_SHARD, FileFacts, dotted, is_true, kwarg, last_name, start
from fsdp_skill.core.check.finders import Found, finder

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_WRAP_APIS = {DDP, FSDP1, FULLY_SHARD}
# calls whose first argument is what a for-loop iterates: for i, batch in enumerate(tqdm(loader))
_ITER_THROUGH = {"enumerate", "tqdm", "iter", "zip", "islice", "cycle"}


def _wraps_here(facts: FileFacts) -> bool:
    """Does the file hold a DDP / FSDP / ``fully_shard`` module (here, or through the checked code's helpers)?"""
    key = ("data", "wraps")
    if key not in facts.cache:
        facts.cache[key] = (
            bool(facts.ddp or facts.fsdp1 or facts.fsdp2)
            or any(facts.qual(c) in _WRAP_APIS for c in facts.calls())
            or bool(callgraph.helper_wraps(facts, _WRAP_APIS))
        )
    return bool(facts.cache[key])


def _imports_any(facts: FileFacts, heads: tuple[str, ...]) -> bool:
    return any(a.split(".", 1)[0] in heads for a in facts.aliases.values())


# --- FSD061: a training loader every rank reads whole ---------------------------------------------------------


def _loop_source(node: ast.AST) -> ast.AST:
    """The loader a ``for`` iterates through ``enumerate(...)`` / ``tqdm(...)`` / ``iter(...)``."""
    while isinstance(node, ast.Call) and last_name(node) in _ITER_THROUGH and node.args:
        node = node.args[0]
    return node


def _backward_reach(facts: FileFacts) -> divergence.Reach:
    key = ("data", "backward-reach")
    if key not in facts.cache:
        facts.cache[key] = divergence.Reach(facts, lambda c: "backward()" if divergence.is_backward(c) else None)
    found: divergence.Reach = facts.cache[key]
    return found


def _trains(facts: FileFacts, loop: ast.For | ast.AsyncFor) -> bool:
    """Does the body of ``loop`` run a ``backward()`` (or call a function of the file that does)?"""
    reach = _backward_reach(facts)
    return any(isinstance(n, ast.Call) and reach.call(n) is not None for st in loop.body for n in ast.walk(st))


def _prepared(facts: FileFacts, name: ast.AST) -> bool:
    """Is the loader ``name`` handed to ``accelerator.prepare`` / ``fabric.setup_dataloaders`` in its function?"""
    text = dotted(name)
    if text is None:
        return False
    scope = facts.scope_of(name)
    for c in facts.calls(scope if not isinstance(scope, ast.Module) else None):
        if last_name(c) in ("prepare", "setup_dataloaders", "prepare_data_loader") and any(
            dotted(a) == text for a in [*c.args, *(k.value for k in c.keywords)]
        ):
            return True
    return False


def _loader_of(facts: FileFacts, source: ast.AST) -> tuple[ast.Call | None, str | None]:
    """(the ``DataLoader(...)`` call the iterated ``source`` comes from, None) or (None, the helper of another checked
    file that returns an unsharded one), else (None, None)."""
    made = bound_call(facts, source)
    if made is None:
        return None, None
    if callgraph.is_loader_call(facts, made):
        return made, None
    target = callgraph.callee(facts, made)
    if target is not None and target.fn is None and target.summary.loader is not None:
        return None, f"{target.summary.name}() (line {target.summary.loader} of {target.summary.path or 'another file'})"
    return None, None


def _param_of(facts: FileFacts, node: ast.AST) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """(its function, its name) when ``node`` is a parameter of the function that reads it."""
    if not isinstance(node, ast.Name):
        return None
    _, b = facts.binding(node)
    scope = facts.scope_of(node)
    if b is None or b.kind != "param" or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return scope, node.id


def _unsharded_at(facts: FileFacts, source: ast.AST) -> tuple[ast.Call | None, str | None]:
    """(the unsharded ``DataLoader(...)`` ``source`` is, or comes from, None), (None, a helper of another checked file
    that returns one), or (None, None)."""
    loader, elsewhere = (source, None) if callgraph.is_loader_call(facts, source) else _loader_of(facts, source)
    if loader is not None and isinstance(loader, ast.Call) and callgraph.unsharded_loader(facts, loader):
        return loader, None
    return None, elsewhere


def _passed_loaders(
    facts: FileFacts, loop: ast.For | ast.AsyncFor, fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str
) -> Found:
    """FSD061 for a loop over the parameter ``name`` of ``fn``: each call passing an unsharded loader, reported at the
    ``DataLoader(...)`` when the file builds it, else at the argument (the helper of another file returns it)."""
    for call, target in calls_rules._call_sites(facts).get(id(fn), []):
        for i, arg in callgraph.bound_args(call, target):
            if target.summary.params[i] != name or _prepared(facts, arg):
                continue
            loader, elsewhere = _unsharded_at(facts, arg)
            if loader is not None:
                yield (
                    loader,
                    f"{fn.name}() trains on this DataLoader (passed at line {call.lineno}) in its loop at line {loop.lineno}",
                )
            elif elsewhere is not None:
                yield (
                    arg,
                    f"{fn.name}() trains on this DataLoader with no sampler (from {elsewhere}) in its loop at line {loop.lineno}",
                )


@finder("FSD061")
def training_loader_not_sharded(facts: FileFacts) -> Found:
    """FSD061: a training loop over a ``DataLoader`` that every rank reads whole (see the module docstring), reported
    at the ``DataLoader(...)`` (where the sampler goes), naming the loop; where the file does not build it (a helper of
    another checked file returns it), at the loop, or at the call that passes it to a function whose loop trains."""
    if not _wraps_here(facts) or _imports_any(facts, ("lightning", "pytorch_lightning")):
        return
    for loop in divergence.nodes_of_type(facts, ast.For, ast.AsyncFor):
        assert isinstance(loop, (ast.For, ast.AsyncFor))
        source = _loop_source(loop.iter)
        if not isinstance(source, (ast.Name, ast.Attribute, ast.Call)) or not _trains(facts, loop):
            continue
        if isinstance(source, (ast.Name, ast.Attribute)) and _prepared(facts, source):
            continue
        param = _param_of(facts, source)
        if param is not None:
            yield from _passed_loaders(facts, loop, *param)
            continue
        loader, elsewhere = _unsharded_at(facts, source)
        if loader is not None:
            yield loader, f"the training loop at line {loop.lineno} reads this DataLoader, which has no sampler"
        elif elsewhere is not None:
            yield source, f"this training loop reads the DataLoader with no sampler that {elsewhere} returns"


# --- FSD062: a sampler and shuffle=True ----------------------------------------------------------------------


def _distributed_sampler(facts: FileFacts, node: ast.AST | None) -> ast.AST | None:
    """The ``DistributedSampler(...)`` that ``node`` is or may be (through names, ``a if c else b``, a helper that
    returns one), else None."""
    todo, seen = [node], 0
    while todo and seen < 8:
        cur = todo.pop()
        seen += 1
        if cur is None:
            continue
        value = facts.resolve(cur)
        if isinstance(value, ast.IfExp):
            todo += [value.body, value.orelse]
            continue
        if isinstance(value, ast.Call) and (
            (facts.qual(value) or "").endswith("DistributedSampler") or callgraph.returns_sampler(facts, value)
        ):
            return value
        made = bound_call(facts, cur) if isinstance(cur, (ast.Name, ast.Attribute)) else None
        if made is not None and made is not value and (facts.qual(made) or "").endswith("DistributedSampler"):
            return made
    return None


@finder("FSD062")
def sampler_with_shuffle(facts: FileFacts) -> Found:
    """FSD062: ``DataLoader(..., sampler=<DistributedSampler>, shuffle=True)``."""
    for call in facts.calls():
        if not callgraph.is_loader_call(facts, call):
            continue
        shuffle = kwarg(call, "shuffle", 2)
        if not is_true(shuffle):
            continue
        sampler = _distributed_sampler(facts, kwarg(call, "sampler", 3))
        if sampler is not None:
            yield shuffle or call, f"the sampler (line {getattr(sampler, 'lineno', call.lineno)}) is a DistributedSampler"


# --- FSD063: a DistributedSampler given the local rank or the local world size --------------------------------

_LOCAL_SIZE_ENV = {"LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", "SLURM_GPUS_ON_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE"}


def _local_size(facts: FileFacts, node: ast.AST | None, depth: int = 0) -> bool:
    """``torch.cuda.device_count()``, ``LOCAL_WORLD_SIZE`` from the environment, ``nproc_per_node`` / ``ngpus_per_node``
    / ``local_world_size`` (through names)."""
    if node is None or depth > 4:
        return False
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and (facts.qual(n) or "") == "torch.cuda.device_count":
            return True
        if isinstance(n, ast.Constant) and n.value in _LOCAL_SIZE_ENV:
            return True
        if isinstance(n, (ast.Name, ast.Attribute)):
            text = (last_name(n) or "").lower()
            if text in ("nproc_per_node", "ngpus_per_node", "local_world_size", "gpus_per_node", "n_gpu", "num_gpus"):
                return True
            if isinstance(n, ast.Name):
                value = facts.resolve(n)
                if value is not None and value is not n and _local_size(facts, value, depth + 1):
                    return True
    return False


@finder("FSD063")
def sampler_on_the_local_rank(facts: FileFacts) -> Found:
    """FSD063: a ``DistributedSampler`` that mixes the node's view with the job's (see the module docstring)."""
    for call in facts.calls():
        q = facts.qual(call) or ""
        if not q.endswith("DistributedSampler"):
            continue
        replicas, rank = kwarg(call, "num_replicas", 1), kwarg(call, "rank", 2)
        local_rank = rank is not None and rank_kind(facts, rank) == "local"
        local_size = _local_size(facts, replicas)
        if local_rank and rank is not None and not local_size:
            yield rank, "the sampler's rank is the rank on this node"
        elif replicas is not None and local_size and not local_rank and (rank is None or rank_kind(facts, rank) == "global"):
            yield replicas, "num_replicas is the number of processes (GPUs) on one node, the rank the job's"


# --- FSD073: init_process_group given the rank on the node ----------------------------------------------------

# what names the node a process runs on: a file that reads one of these is laid out for several nodes
_NODE_WORDS = ("node_rank", "group_rank", "nodeid", "node_id", "nnodes", "num_nodes", "node_idx", "node_index")
_SPAWNS = {"spawn", "start_processes"}


def _names_a_node(facts: FileFacts) -> bool:
    """Does the file name a node index or a node count anywhere (``--node_rank``, ``GROUP_RANK``, ``SLURM_NODEID``)?"""
    for n in facts.nodes:
        text = (
            n.value
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
            else last_name(n)
            if isinstance(n, (ast.Name, ast.Attribute))
            else None
        )
        if isinstance(text, str) and any(w in text.lower().replace("-", "_") for w in _NODE_WORDS):
            return True
    return False


def _spawns_here(facts: FileFacts) -> bool:
    """Does the file start its ranks itself with ``mp.spawn`` / ``start_processes`` (all of them on this machine)?"""
    return any(last_name(c) in _SPAWNS and "multiprocessing" in (facts.qual(c) or "") for c in facts.calls())


def _rebound_globally(facts: FileFacts, node: ast.AST) -> bool:
    """Is the attribute ``node`` (``args.local_rank``) also assigned in the file a value not known to be a local rank
    (``args.local_rank = args.node_rank * 8 + gpu``)?"""
    name = dotted(node) if isinstance(node, ast.Attribute) else None
    values = calls_rules._attribute_values(facts).get(name or "", [])
    return any(rank_kind(facts, v) != "local" for v in values)


@finder("FSD073")
def init_on_the_local_rank(facts: FileFacts) -> Found:
    """FSD073: ``init_process_group(rank=<the rank on this node>)`` with a world size that is not the node's: on a
    second node the ranks repeat and the rendezvous never fills. Silent when the world size is the node's
    (``torch.cuda.device_count()``, ``LOCAL_WORLD_SIZE``, a constant 1), and when the file spawns its ranks itself
    (``mp.spawn``) and names no node anywhere: every rank of the job then runs on this machine."""
    for call in facts.calls():
        if facts.qual(call) != "torch.distributed.init_process_group":
            continue
        rank = kwarg(call, "rank", 4)
        if rank is None or rank_kind(facts, rank) != "local" or _rebound_globally(facts, rank):
            continue
        world = kwarg(call, "world_size", 3)
        if _local_size(facts, world) or isinstance(world, ast.Constant) and world.value == 1:
            continue
        if _spawns_here(facts) and not _names_a_node(facts):
            continue
        yield rank, f"`{_text(rank)}` is the rank on this node, given as the process's rank in the whole job"


def _text(node: ast.AST) -> str:
    return dotted(node) or ast.unparse(node)


# --- FSD064: a collective given a value that is not a tensor -------------------------------------------------

# collective -> (keyword, position) of the tensor it takes
_TENSOR = {
    "all_reduce": ("tensor", 0),
    "broadcast": ("tensor", 0),
    "reduce": ("tensor", 0),
    "all_gather": ("tensor", 1),
    "send": ("tensor", 0),
    "recv": ("tensor", 0),
    "isend": ("tensor", 0),
    "irecv": ("tensor", 0),
}


def _collective(facts: FileFacts, call: ast.Call) -> str | None:
    """The name of a ``torch.distributed`` tensor collective of :data:`_TENSOR`, else None."""
    q = facts.qual(call) or ""
    name = q.rsplit(".", 1)[-1]
    return name if q == f"torch.distributed.{name}" and name in _TENSOR else None


def _numpy(facts: FileFacts, node: ast.AST) -> bool:
    """A NumPy array: ``np.array(...)`` / any ``numpy.`` call, ``x.numpy()``, or a name last bound to one."""
    value = facts.resolve(node)
    if not isinstance(value, ast.Call):
        return False
    return (facts.qual(value) or "").startswith("numpy.") or last_name(value) == "numpy" and not value.args


def _python_value(facts: FileFacts, node: ast.AST) -> bool:
    """Surely a Python number or a list / tuple of them: a numeric constant, ``x.item()``, ``x.tolist()``, the
    builtins ``float(...)`` / ``int(...)`` / ``len(...)``, ``sum(...)`` / ``round(...)`` of such values (of tensors they
    are tensors), arithmetic of those, or a local name every binding of which (``total = 0.0``,
    ``total += loss.item()``) is one. ``x.float()`` is a tensor method: not one."""
    todo, seen = [node], 0
    while todo:
        n = todo.pop()
        seen += 1
        if seen > 200:
            return False
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
            continue
        if isinstance(n, ast.Name):
            lst = facts.bindings.get((id(facts.scope_of(n)), n.id))
            if not lst or any(b.kind not in ("assign", "other") or b.value is None for b in lst):
                return False
            todo += [b.value for b in lst if b.value is not None]
        elif isinstance(n, (ast.List, ast.Tuple)):
            todo += n.elts
        elif isinstance(n, ast.BinOp):
            todo += [n.left, n.right]
        elif isinstance(n, ast.UnaryOp):
            todo.append(n.operand)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("item", "tolist") and not n.args:
            continue
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("float", "int", "len"):
            continue
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("sum", "round") and n.args:
            # sum(...) / round(x) are numbers only of numbers: sum(norm ** 2 for norm in norms) of tensors is a tensor
            arg = n.args[0]
            if n.func.id == "sum" and isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
                todo.append(arg.elt)
            elif n.func.id == "sum" and isinstance(arg, (ast.List, ast.Tuple)):
                todo += arg.elts
            elif n.func.id == "round":
                todo.append(arg)
            else:
                return False
        else:
            return False
    return True


def _not_a_tensor(facts: FileFacts, node: ast.AST) -> str | None:
    """What ``node`` is when it is surely not a tensor (see the module docstring), else None."""
    if _numpy(facts, node):
        return "a NumPy array"
    if isinstance(node, ast.Name):
        _, b = facts.binding(node)
        if b is None:
            return None
    if not _python_value(facts, node):
        return None
    value = facts.resolve(node)
    if isinstance(value, (ast.List, ast.Tuple)):
        return f"a Python {'list' if isinstance(value, ast.List) else 'tuple'}"
    if isinstance(value, ast.Call) and last_name(value) == "item":
        return "a Python number (.item())"
    return "a Python number"


@finder("FSD064")
def collective_of_a_python_value(facts: FileFacts) -> Found:
    """FSD064: a tensor collective given a number, a list or a NumPy array."""
    for call in facts.calls():
        name = _collective(facts, call)
        if name is None:
            continue
        kw, pos = _TENSOR[name]
        arg = kwarg(call, kw, pos)
        what = _not_a_tensor(facts, arg) if arg is not None else None
        if what is not None:
            yield arg or call, f"dist.{name}() is given {what}"


# --- FSD065 / FSD066: averages and sums ------------------------------------------------------------------------

_MEAN_WORDS = ("avg", "mean", "average")


def _op(call: ast.Call) -> str:
    """``SUM`` (the default), ``AVG``, or the last part of another op."""
    op = kwarg(call, "op", 1)
    return "SUM" if op is None else last_name(op) or "?"


def world_size_expr(facts: FileFacts, node: ast.AST | None, depth: int = 0) -> bool:
    """``dist.get_world_size()``, ``WORLD_SIZE`` from the environment, ``accelerator.num_processes``, a name ending in
    ``world_size`` (through names)."""
    if node is None or depth > 4:
        return False
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and last_name(n) == "get_world_size":
            return True
        if isinstance(n, ast.Constant) and n.value == "WORLD_SIZE":
            return True
        if isinstance(n, (ast.Name, ast.Attribute)):
            text = (last_name(n) or "").lower()
            if text.endswith("world_size") or text in ("num_processes", "nprocs", "num_replicas"):
                return True
            if isinstance(n, ast.Name):
                value = facts.resolve(n)
                if value is not None and value is not n and world_size_expr(facts, value, depth + 1):
                    return True
    return False


def _divisions(facts: FileFacts, scope: ast.AST, name: str) -> list[tuple[ast.expr | ast.stmt, ast.AST]]:
    """(the division, divisor) of each division of ``name`` in ``scope``: ``name / d``, ``name /= d``, ``name.div_(d)``,
    ``name.div(d)``, ``torch.div(name, d)``."""
    out: list[tuple[ast.expr | ast.stmt, ast.AST]] = []
    for n in facts.scope_nodes(scope):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv)) and _mentions(n.left, name):
            out.append((n, n.right))
        elif isinstance(n, ast.AugAssign) and isinstance(n.op, (ast.Div, ast.FloorDiv)) and dotted(n.target) == name:
            out.append((n, n.value))
        elif isinstance(n, ast.Call) and last_name(n) in ("div", "div_", "true_divide", "divide") and n.args:
            recv = n.func.value if isinstance(n.func, ast.Attribute) else None
            if recv is not None and _mentions(recv, name):
                out.append((n, n.args[0]))
            elif len(n.args) > 1 and _mentions(n.args[0], name):
                out.append((n, n.args[1]))
    return out


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) == name for n in ast.walk(node))


def _labels_mean(text: object) -> bool:
    """Does the label right before a value (the text after its last separator) call it an average?"""
    if not isinstance(text, str):
        return False
    last = text.replace(";", ",").replace("|", ",").rsplit(",", 1)[-1].lower()
    return any(w in last for w in _MEAN_WORDS)


def _reported_as_mean(facts: FileFacts, scope: ast.AST, name: str, after: tuple[int, int]) -> ast.AST | None:
    """The first place after ``after`` where ``name`` is labelled an average: in an f-string right after text that
    says ``avg`` / ``mean`` (``f"avg loss {x.item()}"``), as the value of such a dict key (``{"mean_loss": x}``), or
    the argument after such a string (``print("avg loss", x)``, ``writer.add_scalar("loss/avg", x)``)."""
    for n in facts.scope_nodes(scope):
        if not hasattr(n, "lineno") or start(n) < after:  # type: ignore[arg-type]
            continue
        pairs: list[tuple[object, ast.AST]] = []  # (the label before a value, the value)
        if isinstance(n, ast.JoinedStr):
            pairs = [
                (prev.value if isinstance(prev, ast.Constant) else None, v.value)
                for prev, v in zip([None, *n.values], n.values, strict=False)
                if isinstance(v, ast.FormattedValue)
            ]
        elif isinstance(n, ast.Dict):
            pairs = [(k.value if isinstance(k, ast.Constant) else None, v) for k, v in zip(n.keys, n.values, strict=False)]
        elif isinstance(n, ast.Call):
            pairs = [(p.value if isinstance(p, ast.Constant) else None, v) for p, v in zip(n.args, n.args[1:], strict=False)]
        if any(_labels_mean(label) and _mentions(value, name) for label, value in pairs):
            return n
    return None


def _reduced_names(facts: FileFacts) -> list[tuple[ast.Call, str, ast.AST]]:
    """(``dist.all_reduce(x, ...)``, ``x``'s dotted name, its scope) for the all-reduces of a plain name or attribute."""
    out: list[tuple[ast.Call, str, ast.AST]] = []
    for call in facts.calls():
        if _collective(facts, call) != "all_reduce":
            continue
        arg = kwarg(call, "tensor", 0)
        name = dotted(arg) if isinstance(arg, (ast.Name, ast.Attribute)) else None
        if name is not None:
            out.append((call, name, facts.scope_of(call)))
    return out


@finder("FSD065")
def summed_then_called_a_mean(facts: FileFacts) -> Found:
    """FSD065: a SUM all-reduce reported as an average with no division (see the module docstring)."""
    for call, name, scope in _reduced_names(facts):
        if _op(call) != "SUM" or _divisions(facts, scope, name):
            continue
        if _not_a_tensor(facts, kwarg(call, "tensor", 0) or call) is not None:
            continue  # FSD064's
        if any(w in name.rsplit(".", 1)[-1].lower() for w in _MEAN_WORDS):
            yield call, f"`{name}` is summed over the ranks (the default ReduceOp.SUM) and never divided"
            continue
        shown = _reported_as_mean(facts, scope, name, start(call))
        if shown is not None:
            yield (
                call,
                f"`{name}` is summed over the ranks (the default ReduceOp.SUM) and reported as an average at line "
                f"{getattr(shown, 'lineno', call.lineno)} with no division",
            )


def _is_world_size(facts: FileFacts, node: ast.AST | None, depth: int = 0) -> bool:
    """Is ``node`` the world size itself (not an expression that uses it): ``dist.get_world_size()``,
    ``int(os.environ["WORLD_SIZE"])``, ``accelerator.num_processes``, a name or attribute ending in ``world_size``,
    or a local name bound to one of these.  ``val_steps`` computed from the world size is a count of batches."""
    if node is None or depth > 4:
        return False
    if isinstance(node, ast.Call) and last_name(node) in ("int", "float") and len(node.args) == 1:
        return _is_world_size(facts, node.args[0], depth + 1)
    if isinstance(node, ast.Call):
        return last_name(node) == "get_world_size"
    if isinstance(node, ast.Subscript) or (isinstance(node, ast.Call) and last_name(node) == "get"):
        return any(isinstance(n, ast.Constant) and n.value == "WORLD_SIZE" for n in ast.walk(node))
    if isinstance(node, (ast.Name, ast.Attribute)):
        text = (last_name(node) or "").lower()
        if text.endswith("world_size") or text in ("num_processes", "nprocs", "num_replicas"):
            return True
        if isinstance(node, ast.Name):
            value = facts.resolve(node)
            return value is not None and value is not node and _is_world_size(facts, value, depth + 1)
    return False


def _divides_the_value(node: ast.AST, name: str) -> bool:
    """Is the divided operand ``name`` itself (``x / n``, ``x /= n``, ``x.div_(n)``, ``x.item() / n``), not a value
    read from it (``x.shape[0] // n`` is a size)?"""
    left = node.left if isinstance(node, ast.BinOp) else None
    if left is None:
        return True  # x /= n, x.div_(n), torch.div(x, n): _divisions matched the operand itself
    if isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and not left.args:
        left = left.func.value  # x.item(), x.float()
    return isinstance(left, (ast.Name, ast.Attribute)) and dotted(left) == name


@finder("FSD066")
def averaged_twice(facts: FileFacts) -> Found:
    """FSD066: ``all_reduce(x, op=ReduceOp.AVG)`` then ``x`` itself divided by the world size itself."""
    for call, name, scope in _reduced_names(facts):
        if _op(call) != "AVG":
            continue
        for node, divisor in _divisions(facts, scope, name):
            if start(node) > start(call) and _divides_the_value(node, name) and _is_world_size(facts, divisor):
                yield node, f"`{name}` was averaged by all_reduce(op=ReduceOp.AVG) at line {call.lineno}"
                break


# --- FSD067: gradients all-reduced by hand on a wrapped model ----------------------------------------------------


def _wrapper_kind(facts: FileFacts, node: ast.AST) -> str | None:
    """'DDP' / 'FSDP' when ``node`` (or the wrapper of which it is ``.module``) is one where it is read."""
    if isinstance(node, ast.Attribute) and node.attr == "module":
        node = node.value
    if isinstance(node, (ast.Name, ast.Attribute)):
        if divergence._is_ddp(facts, node):
            return "DDP"
        if facts.is_fsdp(node):
            return "FSDP"
    return None


def _grad_all_reduces(facts: FileFacts) -> list[tuple[ast.Call, str, ast.AST]]:
    """(all-reduce of ``p.grad``, the wrapper kind, the model expression) for each ``for p in M.parameters()`` loop
    whose body all-reduces (or reduces) the loop target's ``.grad``."""
    out: list[tuple[ast.Call, str, ast.AST]] = []
    for loop in divergence.nodes_of_type(facts, ast.For):
        assert isinstance(loop, ast.For)
        it = loop.iter
        while isinstance(it, ast.Call) and last_name(it) in ("list", "enumerate", "filter", "tuple") and it.args:
            it = it.args[-1]
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute)):
            continue
        if it.func.attr not in ("parameters", "named_parameters"):
            continue
        model = it.func.value
        kind = _wrapper_kind(facts, model)
        targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        if kind is None or not targets:
            continue
        for st in loop.body:
            for c in ast.walk(st):
                if isinstance(c, ast.Call) and _collective(facts, c) in ("all_reduce", "reduce"):
                    arg = kwarg(c, "tensor", 0)
                    grad = dotted(arg) if arg is not None else None
                    if grad is not None and grad.split(".")[0] in targets and ".grad" in grad:
                        out.append((c, kind, model))
    return out


@finder("FSD067")
def gradients_reduced_twice(facts: FileFacts) -> Found:
    """FSD067: ``dist.all_reduce(p.grad)`` over the parameters of a DDP / FSDP wrapper."""
    for call, kind, model in _grad_all_reduces(facts):
        article = "an" if kind == "FSDP" else "a"
        yield (
            call,
            f"`{dotted(model) or 'the model'}` is {article} {kind} wrapper, which already averaged these gradients in backward",
        )


# --- FSD068: the training forward around the wrapper ---------------------------------------------------------------


def _unwrapped_originals(facts: FileFacts) -> dict[tuple[int, str], tuple[str, int]]:
    """Variable key of a module a DDP / FSDP1 wrapper was built from under another name -> (wrapper kind, line of the
    wrap): ``ddp = DDP(net)`` makes ``net`` one (``model = DDP(model)`` does not)."""
    out: dict[tuple[int, str], tuple[str, int]] = {}
    for node in facts.nodes:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        q = facts.qual(node.value)
        if q not in (DDP, FSDP1):
            continue
        inner = kwarg(node.value, "module", 0)
        while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr in ("to", "cuda"):
            inner = inner.func.value
        if not isinstance(inner, (ast.Name, ast.Attribute)) or dotted(inner) is None:
            continue
        if any(dotted(t) == dotted(inner) for t in node.targets):
            continue
        key = facts._variable_key(inner)
        if key is not None:
            out[key] = ("DDP" if q == DDP else "FSDP", node.lineno)
    return out


def _inner_module(facts: FileFacts, node: ast.AST | None) -> tuple[str, str] | None:
    """(wrapper kind, source of ``W.module``) when ``node`` is ``W.module`` of a DDP / FSDP wrapper ``W``: itself, a
    name last bound to it, or a branch of ``W.module if hasattr(W, "module") else W`` (the module unwrapped whenever
    it is wrapped), else None."""
    value = facts.resolve(node) if isinstance(node, ast.Name) else node
    if isinstance(node, ast.Name):
        _, b = facts.binding(node)
        if b is None or b.kind != "assign" or facts.scope_of(node) is not facts.scope_of(value or node):
            return None  # a parameter or a global: bound elsewhere
    options = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
    for opt in options:
        if isinstance(opt, ast.Attribute) and opt.attr == "module":
            kind = _wrapper_kind(facts, opt)
            if kind is not None:
                return kind, dotted(opt) or "module"
    return None


def _bypass(facts: FileFacts, call: ast.Call, originals: dict[tuple[int, str], tuple[str, int]]) -> str | None:
    """A label when ``call`` runs a wrapped module's forward without its wrapper, else None."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value
    inner = _inner_module(facts, func) if isinstance(func, ast.Name) else None
    if inner is not None:
        return f"{dotted(call.func)}(...) runs `{inner[1]}`, the module inside the {inner[0]} wrapper"
    if isinstance(func, ast.Attribute) and func.attr == "module":
        kind = _wrapper_kind(facts, func)
        if kind is not None:
            return f"{dotted(call.func)}(...) runs the module inside the {kind} wrapper `{dotted(func.value)}`"
        return None
    if isinstance(func, (ast.Name, ast.Attribute)) and dotted(func) is not None:
        key = facts._variable_key(func)
        hit = originals.get(key) if key is not None else None
        if hit is not None and start(call) > (hit[1], 0) or hit is not None and isinstance(func, ast.Attribute):
            return f"{dotted(func)}(...) runs the module that the {hit[0]} wrapper of line {hit[1]} wraps, not the wrapper"
    return None


def feeds_backward(facts: FileFacts, call: ast.Call) -> ast.Call | None:
    """The ``x.backward()`` of the same function that the result of ``call`` reaches, through the names bound from it
    in source order, else None."""
    scope = facts.scope_of(call)
    stmt = next((a for a in facts.ancestors(call) if isinstance(a, ast.stmt)), None)
    tainted: set[str] = set()
    for n in facts.scope_nodes(scope):
        if n is stmt or not hasattr(n, "lineno") or start(n) < start(call):  # type: ignore[arg-type]
            if n is stmt and isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                tainted |= {d for t in targets for x in ast.walk(t) if (d := dotted(x)) is not None}
            if n is stmt:
                for c in ast.walk(n):
                    if isinstance(c, ast.Call) and divergence.is_backward(c) and any(x is call for x in ast.walk(c)):
                        return c
            continue
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
            if any(_mentions(n.value, t) for t in tainted):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                tainted |= {d for t in targets for x in ast.walk(t) if (d := dotted(x)) is not None}
        elif isinstance(n, ast.Call) and divergence.is_backward(n):
            recv = n.func.value if isinstance(n.func, ast.Attribute) else None
            on = [recv] if recv is not None and isinstance(n.func, ast.Attribute) and n.func.attr == "backward" else list(n.args)
            if any(_mentions(x, t) for x in on for t in tainted):
                return n
    return None


def _no_grad(facts: FileFacts, node: ast.AST) -> bool:
    return any(
        isinstance(a, ast.With) and any(last_name(i.context_expr) in ("no_grad", "inference_mode") for i in a.items)
        for a in facts.ancestors(node)
    )


@finder("FSD068")
def forward_around_the_wrapper(facts: FileFacts) -> Found:
    """FSD068: a forward through ``model.module`` or the unwrapped module whose result is backpropagated in a
    function that runs no forward through the wrapper (see the module docstring)."""
    if not (facts.ddp or facts.fsdp1) or _grad_all_reduces(facts):
        return
    if any(
        _collective(facts, c) == "all_reduce" and ".grad" in (dotted(kwarg(c, "tensor", 0) or c) or "") for c in facts.calls()
    ):
        return  # the file reduces the gradients itself
    originals = _unwrapped_originals(facts)
    for call in facts.calls():
        label = _bypass(facts, call, originals)
        if label is None or _no_grad(facts, call):
            continue
        scope = facts.scope_of(call)
        if any(isinstance(c, ast.Call) and divergence.wrapped_forward(facts, c) for c in facts.scope_nodes(scope)):
            continue  # the step also runs the wrapper's forward
        back = feeds_backward(facts, call)
        if back is not None:
            yield call, f"{label}, and its result is backpropagated at line {back.lineno}"
    yield from _unwrapped_into_helpers(facts)


def _trains_param(facts: FileFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> tuple[ast.Call, ast.Call] | None:
    """(forward, backward) where ``fn`` runs its parameter ``param`` (``model(x)``, ``model.forward(x)``, never
    rebound) outside ``no_grad`` and the result reaches a ``backward()``, in a body that runs no other wrapped forward."""
    nodes = facts.scope_nodes(fn)
    if any(isinstance(c, ast.Call) and divergence.wrapped_forward(facts, c) for c in nodes):
        return None
    for c in nodes:
        if not isinstance(c, ast.Call):
            continue
        func = c.func.value if isinstance(c.func, ast.Attribute) and c.func.attr == "forward" else c.func
        if not (isinstance(func, ast.Name) and func.id == param) or _no_grad(facts, c):
            continue
        _, b = facts.binding(func)
        if b is None or b.kind != "param":
            continue
        back = feeds_backward(facts, c)
        if back is not None:
            return c, back
    return None


def _unwrapped_into_helpers(facts: FileFacts) -> Found:
    """FSD068 through a function of the file: ``train(loader, model.module)`` (or a name bound to it, or to
    ``model.module if hasattr(model, "module") else model``) where ``train`` runs that parameter's forward and
    backpropagates it."""
    for call in facts.calls():
        target = callgraph.callee(facts, call)
        if target is None or target.fn is None:
            continue
        for i, arg in callgraph.bound_args(call, target):
            inner = _inner_module(facts, arg)
            if inner is None or _no_grad(facts, call):
                continue
            got = _trains_param(facts, target.fn, target.summary.params[i])
            if got is not None:
                fwd, back = got
                given = ast.unparse(arg)
                named = f"`{given}` is" if given == inner[1] else f"`{given}` is `{inner[1]}`,"
                yield (
                    call,
                    (
                        f"{named} the module inside the {inner[0]} wrapper, and "
                        f"{target.summary.name}() runs its forward (line {fwd.lineno}) and backpropagates it "
                        f"(line {back.lineno})"
                    ),
                )
