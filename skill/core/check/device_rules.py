"""Finders of the rules about devices, samplers and wrappers misused (FSD047-FSD053).

- FSD047: a tensor collective (``all_reduce``, ``all_gather``, ``broadcast``, ``reduce``, ``all_gather_into_tensor``,
  ``reduce_scatter_tensor``) on the default group of a file whose only process group is NCCL, given a tensor built
  on the CPU in the same function (``torch.tensor([...])`` / ``torch.zeros(n)`` with no ``device=``, ``x.cpu()``,
  ``torch.from_numpy``, the legacy ``torch.FloatTensor([...])`` constructors) and never moved: NCCL raises "No backend type associated with device type cpu". A tensor
  handed to a function of the file that runs the collective on its parameter counts (``reduce_mean(t)``). A backend
  read from an argparse option whose default is ``"nccl"`` (``backend=args.dist_backend``) counts as NCCL: the
  default run crashes.
- FSD048: ``DistributedSampler(..., seed=<rank-dependent>)`` shuffling: each rank draws another permutation, so the
  shards overlap and some samples are never seen in the epoch.
- FSD050: DDP with ``find_unused_parameters=True`` (``DistributedDataParallel(...)`` or HF ``TrainingArguments(
  ddp_find_unused_parameters=True)``) in a file that checkpoints activations the reentrant way
  (``torch.utils.checkpoint.checkpoint`` without ``use_reentrant=False``, ``gradient_checkpointing_enable()`` without
  ``gradient_checkpointing_kwargs={"use_reentrant": False}``, ``CheckpointImpl.REENTRANT``): the backward fails with
  "Expected to mark a variable ready only once". Silent under ``static_graph=True``. FSD050 wins over FSD027 (the
  generic missing-``use_reentrant`` warning) at the checkpoint calls it reports: FSD027 is not reported there.
- FSD051: a collective on the default group (``dist.barrier()`` and the others) before ``torch.cuda.set_device`` in
  the same function, in a file that forms an NCCL group without ``device_id``: NCCL runs it on the current device,
  ``cuda:0`` on every rank at that point (a context and memory on GPU 0 of every process, or a hang). A call of a
  function of the file whose body runs such a collective counts (``setup()`` doing ``init`` + ``barrier``).
  FSD013 covers a file with no ``set_device`` at all; this one, a ``set_device`` that comes too late.
- FSD052: ``accelerator.gather(...)`` (not ``gather_for_metrics``) inside an evaluation loop over a dataloader that
  ``accelerator.prepare`` returned, whose result feeds a metric (``metric.add_batch``, ``.update``, a list it
  extends, a comparison, a running sum): the last batch is padded with duplicates so every rank has one, and the
  metric counts them. Silent when the loop trims the padding itself (a slice of what it gathered, ``samples_seen``,
  ``len(loader.dataset)``).
- FSD053: ``m.load_state_dict(sd)`` of an FSDP2 module with a full state dict read from one file
  (``torch.load(path)``, safetensors ``load_file``, a key of either) after ``fully_shard(m)`` in the same function,
  or where ``m`` arrives already sharded: the parameters are DTensors and the copy fails ("got mixed torch.Tensor
  and DTensor"). Silent for a per-rank file (``f"shard_{rank}.pt"``: each rank's own DTensors) and for a load that
  comes before the ``fully_shard``.
- FSD049: a Hugging Face ``from_pretrained(..., device_map="auto")`` (or ``"balanced"``, ``"sequential"``, a dict
  placing modules on several devices) model wrapped in ``DistributedDataParallel`` / FSDP / ``fully_shard`` or
  handed to ``accelerator.prepare``: every rank spreads its copy over the node's GPUs. Reported at the load's
  ``device_map=`` (what to change; the wrap may be far from it, in another function), once however many wraps it
  reaches, naming the wrap.

Each stays silent where the file cannot tell: a backend of unknown or mixed kind, a tensor of unknown origin, a
default device set for the program, a seed the same on every rank, a device map naming one device.
"""

from __future__ import annotations

import ast

from fsdp_skill.core.check import calls
from fsdp_skill.core.check.calls_rules import bound_call
from fsdp_skill.core.check.facts import DDP, FSDP1, FULLY_SHARD, Chain, FileFacts, Located, dotted, is_true, kwarg, last_name
from fsdp_skill.core.check.finders import FINDERS, Found, finder

_INIT = "torch.distributed.init_process_group"

# --- FSD047 ----------------------------------------------------------------------------------------------

# collective -> the positional index of the tensor it sends (the one whose device picks the backend)
_TENSOR_ARG = {
    "all_reduce": 0,
    "broadcast": 0,
    "reduce": 0,
    "all_gather": 1,
    "all_gather_into_tensor": 1,
    "reduce_scatter_tensor": 1,
}
_TENSOR_KW = {"all_gather": "tensor", "all_gather_into_tensor": "input_tensor", "reduce_scatter_tensor": "input"}
# torch factories that build on the default device (the CPU unless the program changes it) without device=
_FACTORIES = {"zeros", "ones", "empty", "full", "arange", "rand", "randn", "randint", "linspace", "eye"}
# the legacy typed constructors of torch (torch.cuda.FloatTensor is the CUDA one): always a CPU tensor
_LEGACY = {
    f"{kind}Tensor" for kind in ("", "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool")
}
_DEFAULT_DEVICE = {"torch.set_default_device", "torch.set_default_tensor_type", "torch.set_default_dtype"}


def _nccl_only(facts: FileFacts) -> bool:
    """Does the file form its default group with NCCL and nothing else (``init_process_group("nccl")``,
    ``backend="nccl"`` through a name)? A backend chosen at run time (``"nccl" if cuda else "gloo"``), a
    ``"cpu:gloo,cuda:nccl"`` group or a Gloo group made next to it: not NCCL only."""
    inits = [c for c in facts.calls() if facts.qual(c) == _INIT]
    if not inits:
        return False
    for c in inits:
        backend = kwarg(c, "backend", 0)
        # backend=args.dist_backend of an option whose default is "nccl": the default run is NCCL
        if (facts.strings(backend) or facts.argparse_default(facts.resolve(backend))) != {"nccl"}:
            return False
    return not any(facts.qual(c) == "torch.distributed.new_group" and kwarg(c, "backend") is not None for c in facts.calls())


def _cpu_literal(facts: FileFacts, node: ast.AST) -> bool:
    """Data that is surely not a tensor: numbers, lists/tuples of them, ``x.item()``, ``float(...)``, ``len(...)``,
    and local names every binding of which (``total = 0.0``, ``total += loss.item()``) is such data."""
    todo, seen = [node], 0
    while todo:
        n = todo.pop()
        seen += 1
        if seen > 200:
            return False
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, bool)):
            continue
        if isinstance(n, ast.Name):
            lst = facts.bindings.get((id(facts.scope_of(n)), n.id))
            if not lst or any(b.kind not in ("assign", "other") or b.value is None for b in lst):
                return False
            todo += [b.value for b in lst if b.value is not None]
            continue
        if isinstance(n, (ast.List, ast.Tuple)):
            todo += n.elts
        elif isinstance(n, ast.BinOp):
            todo += [n.left, n.right]
        elif isinstance(n, ast.UnaryOp):
            todo.append(n.operand)
        elif isinstance(n, ast.Call) and last_name(n) in ("item", "float", "int", "len", "bool") and not n.keywords:
            continue
        else:
            return False
    return True


def _built_on_cpu(facts: FileFacts, value: ast.AST | None) -> bool:
    """Is ``value`` a call that surely returns a CPU tensor (see the module docstring)?"""
    if not isinstance(value, ast.Call):
        return False
    q = facts.qual(value) or ""
    if q.startswith("torch.") and q.count(".") == 1 and kwarg(value, "device") is None:
        name = q.split(".")[1]
        if name in _FACTORIES and not any(isinstance(a, ast.Starred) for a in value.args):
            return True
        if name in ("tensor", "as_tensor") and value.args and _cpu_literal(facts, value.args[0]):
            return True
        if name == "from_numpy":
            return True
        if name in _LEGACY and not any(isinstance(a, ast.Starred) for a in value.args):
            return True  # torch.FloatTensor([a, b]) / torch.LongTensor(n): the legacy CPU constructors
    return isinstance(value.func, ast.Attribute) and value.func.attr == "cpu" and not value.args


def _cpu_tensor(facts: FileFacts, arg: ast.AST) -> ast.Call | None:
    """The CPU-building call ``arg`` was last bound to in its function (itself, or through a name), else None."""
    value = facts.resolve(arg) if isinstance(arg, ast.Name) else arg
    if isinstance(arg, ast.Name):
        _, b = facts.binding(arg)
        if b is None or b.kind != "assign" or facts.scope_of(arg) is not facts.scope_of(value or arg):
            return None  # a parameter, a loop variable, a global: not built here
    return value if isinstance(value, ast.Call) and _built_on_cpu(facts, value) else None


def _default_device_set(facts: FileFacts, node: ast.AST) -> bool:
    """The program changes the default device (``torch.set_default_device("cuda")``) or builds ``node`` under
    ``with torch.device("cuda"):``."""
    if any(facts.qual(c) in _DEFAULT_DEVICE for c in facts.calls()):
        return True
    return any(
        isinstance(a, ast.With) and any(facts.qual(i.context_expr) == "torch.device" for i in a.items)
        for a in facts.ancestors(node)
    )


def _sent_tensor(call: ast.Call, name: str) -> ast.expr | None:
    kw = _TENSOR_KW.get(name)
    got = kwarg(call, kw) if kw else None
    return got if got is not None else kwarg(call, "tensor", _TENSOR_ARG[name])


def _nccl_collectives(facts: FileFacts) -> list[tuple[ast.Call, ast.expr]]:
    """(collective on the default group, the tensor it sends) for the collectives of :data:`_TENSOR_ARG`."""
    out: list[tuple[ast.Call, ast.expr]] = []
    for c in facts.calls():
        q = facts.qual(c) or ""
        name = q.rsplit(".", 1)[-1]
        if q.startswith("torch.distributed.") and q.count(".") == 2 and name in _TENSOR_ARG and kwarg(c, "group") is None:
            sent = _sent_tensor(c, name)
            if sent is not None:
                out.append((c, sent))
    return out


@finder("FSD047")
def nccl_collective_on_cpu_tensor(facts: FileFacts) -> Found:
    """FSD047: a collective of an NCCL-only file on a tensor built on the CPU and never moved (directly, or through a
    parameter of a function of the file that sends it)."""
    if not _nccl_only(facts):
        return
    sends = _nccl_collectives(facts)
    # functions of the file that send their own parameter: fn id -> (parameter name, the collective)
    by_param: dict[int, list[tuple[str, ast.Call]]] = {}
    for call, sent in sends:
        built = _cpu_tensor(facts, sent)
        if built is not None and not _default_device_set(facts, built):
            yield call, f"the tensor is built on the CPU at line {built.lineno} ({ast.unparse(built)[:60]})"
        held = facts.resolve(sent)  # t = x; dist.all_reduce(t): the parameter x
        if isinstance(held, ast.Name):
            _, b = facts.binding(held)
            scope = facts.scope_of(held)
            if b is not None and b.kind == "param" and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                by_param.setdefault(id(scope), []).append((held.id, call))
    if not by_param:
        return
    for c in facts.calls():
        target = calls.callee(facts, c)
        if target is None or target.fn is None or id(target.fn) not in by_param:
            continue
        for i, arg in calls.bound_args(c, target):
            for param, coll in by_param[id(target.fn)]:
                built = _cpu_tensor(facts, arg) if target.summary.params[i] == param else None
                if built is not None and not _default_device_set(facts, built):
                    yield (
                        c,
                        (
                            f"{target.summary.name}() runs {last_name(coll)} (line {coll.lineno}) on a tensor built on the CPU "
                            f"at line {built.lineno}"
                        ),
                    )


# --- FSD048 ----------------------------------------------------------------------------------------------


def _rank_dependent(facts: FileFacts, node: ast.AST | None) -> bool:
    if node is None:
        return False
    return facts.is_rank_expr(node) or facts.is_rank_expr(facts.resolve(node) or node)


@finder("FSD048")
def sampler_seed_per_rank(facts: FileFacts) -> Found:
    """FSD048: a shuffling ``DistributedSampler`` given a seed that differs between ranks."""
    for c in facts.calls():
        if (last_name(c) or "") != "DistributedSampler":
            continue
        q = facts.qual(c) or ""
        if not (q.startswith("torch.utils.data") or q == "DistributedSampler"):
            continue
        shuffle = kwarg(c, "shuffle", 3)
        if isinstance(shuffle, ast.Constant) and shuffle.value is False:
            continue  # no permutation: the seed is unused
        replicas = kwarg(c, "num_replicas", 1)
        if isinstance(replicas, ast.Constant) and replicas.value == 1:
            continue  # one replica: the whole dataset on each rank, by design
        seed = kwarg(c, "seed", 4)
        if _rank_dependent(facts, seed):
            yield seed or c, None


# --- FSD049 ----------------------------------------------------------------------------------------------

_SPREADING = {"auto", "balanced", "balanced_low_0", "sequential"}
# calls that return (a wrapper of) the model they are given first: followed back to its from_pretrained
_PASS_THROUGH = {
    "get_peft_model",
    "prepare_model_for_kbit_training",
    "compile",
    "to",
    "cuda",
    "train",
    "eval",
    "half",
    "bfloat16",
}
_WRAPS = {DDP, FSDP1, FULLY_SHARD}


def _spreading_map(facts: FileFacts, device_map: ast.AST | None) -> bool:
    """``device_map="auto"`` (or another spreading strategy), or a dict literal naming more than one device."""
    if device_map is None:
        return False
    value = facts.resolve(device_map)
    strings = facts.strings(value)
    if strings and strings <= _SPREADING:
        return True
    if isinstance(value, ast.Dict) and len(value.keys) > 1 and all(k is not None for k in value.keys):
        placed = {ast.dump(v) for v in value.values}
        return len(placed) > 1
    return False


def _loaded_spread(facts: FileFacts, node: ast.AST) -> ast.Call | None:
    """The ``from_pretrained(..., device_map=<spreading>)`` call the model ``node`` comes from, followed through
    names, helpers' return values, ``self.`` attributes and pass-through calls (``get_peft_model(m)``, ``m.to()``)."""
    cur: ast.AST | None = node
    for _ in range(6):
        if cur is None:
            return None
        made = bound_call(facts, cur)
        if made is None:
            return None
        name = last_name(made) or ""
        if name == "from_pretrained":
            return made if _spreading_map(facts, kwarg(made, "device_map")) else None
        if name in _PASS_THROUGH:
            inner = (
                made.args[0] if made.args and name in ("get_peft_model", "prepare_model_for_kbit_training", "compile") else None
            )
            if inner is None and isinstance(made.func, ast.Attribute):
                inner = made.func.value
            if inner is None or inner is cur:
                return None
            cur = inner
            continue
        return None
    return None


def _accelerator_prepare(facts: FileFacts, call: ast.Call) -> bool:
    if last_name(call) != "prepare" or not isinstance(call.func, ast.Attribute):
        return False
    return _is_accelerator(facts, call.func.value)


@finder("FSD049")
def device_map_model_wrapped(facts: FileFacts) -> Found:
    """FSD049: a model loaded with a spreading ``device_map`` given to DDP / FSDP / ``fully_shard`` /
    ``accelerator.prepare``."""
    reported: set[int] = set()
    for c in facts.calls():
        q = facts.qual(c) or ""
        if q in _WRAPS:
            args: list[ast.expr] = [a for a in c.args[:1]] + [k.value for k in c.keywords if k.arg == "module"]
            how = "wrapped in " + (last_name(c) or "a data-parallel wrapper")
        elif _accelerator_prepare(facts, c):
            args = [a for a in c.args if not isinstance(a, ast.Starred)]
            how = "handed to accelerator.prepare"
        else:
            continue
        for a in args:
            loaded = _loaded_spread(facts, a)
            if loaded is not None and id(loaded) not in reported:
                reported.add(id(loaded))
                where = next(k for k in loaded.keywords if k.arg == "device_map")
                yield where, f"this model is {how} at line {c.lineno}"
                break


# --- FSD050 ----------------------------------------------------------------------------------------------

_CHECKPOINT = "torch.utils.checkpoint.checkpoint"


def _reentrant_false(facts: FileFacts, node: ast.AST | None) -> bool:
    """May ``node`` turn reentrancy off: ``use_reentrant=False``, a ``{"use_reentrant": False}`` dict (through a
    name), or a value the file cannot tell (``use_reentrant=self.flag``)? Missing, ``True``, or a dict without the
    key: False."""
    if node is None:
        return False
    value = facts.resolve(node)
    if isinstance(value, ast.Constant):
        return value.value is False
    if isinstance(value, ast.Dict):
        for k, v in zip(value.keys, value.values, strict=False):
            if k is None:
                return True  # {**other}: may carry the flag
            if isinstance(k, ast.Constant) and k.value == "use_reentrant":
                return not (isinstance(v, ast.Constant) and v.value is not False)
        return False
    if isinstance(value, ast.Call) and last_name(value) == "dict" and not value.args:
        return any(k.arg is None for k in value.keywords) or _reentrant_false(facts, kwarg(value, "use_reentrant"))
    return True  # unknown


def _reentrant_checkpoints(facts: FileFacts) -> list[ast.expr]:
    """The activation checkpoints of the file that run the reentrant implementation: ``checkpoint(fn, x)`` without
    ``use_reentrant=False`` (and no ``**kwargs`` that may carry it), ``m.gradient_checkpointing_enable()`` without
    ``gradient_checkpointing_kwargs={"use_reentrant": False}``, ``checkpoint_impl=CheckpointImpl.REENTRANT``."""
    out: list[ast.expr] = []
    for c in facts.calls():
        q, name = facts.qual(c) or "", last_name(c) or ""
        if q == _CHECKPOINT:
            flag = kwarg(c, "use_reentrant")
            if flag is None and any(k.arg is None for k in c.keywords):
                continue  # checkpoint(fn, **kwargs): the flag may be in kwargs
            if not _reentrant_false(facts, flag):
                out.append(c)
        elif name == "gradient_checkpointing_enable" and isinstance(c.func, ast.Attribute):
            if any(k.arg is None for k in c.keywords):
                continue
            if not _reentrant_false(facts, kwarg(c, "gradient_checkpointing_kwargs", 0)):
                out.append(c)
        elif q.endswith("checkpoint_wrapper"):
            impl = kwarg(c, "checkpoint_impl")
            if impl is not None and last_name(impl) == "REENTRANT":
                out.append(impl)
    return out


def _find_unused(facts: FileFacts) -> list[ast.Call]:
    """``DistributedDataParallel(..., find_unused_parameters=True)`` without ``static_graph=True`` (which supports
    reentrant checkpointing), in a file that never calls ``_set_static_graph()``."""
    if any(last_name(c) == "_set_static_graph" for c in facts.calls()):
        return []
    return [
        c
        for c in facts.calls()
        if facts.qual(c) == DDP and is_true(kwarg(c, "find_unused_parameters")) and not is_true(kwarg(c, "static_graph"))
    ]


def _same_model(facts: FileFacts, node: ast.expr, ddps: list[ast.Call]) -> ast.Call | None:
    """The DDP of ``ddps`` that wraps the model ``node`` checkpoints, as far as the file tells: for
    ``m.gradient_checkpointing_enable()`` the DDP given ``m`` (the same variable binding); for a checkpoint inside a
    class, a DDP when the file builds that class; for one in a plain function or a ``checkpoint_wrapper``, any."""
    if isinstance(node, ast.Call) and last_name(node) == "gradient_checkpointing_enable" and isinstance(node.func, ast.Attribute):
        mine = facts.chain(node.func.value)
        for d in ddps:
            arg = kwarg(d, "module", 0)
            theirs = facts.chain(arg) if arg is not None else None
            if mine is not None and theirs is not None and (mine.covers(theirs) or theirs.covers(mine)):
                return d
        for d in ddps:
            if mine is not None and _built_from(facts, kwarg(d, "module", 0), mine):
                return d
        return None
    cls = next((a for a in facts.ancestors(node) if isinstance(a, ast.ClassDef)), None)
    if cls is not None and not any(isinstance(c.func, ast.Name) and c.func.id == cls.name for c in facts.calls()):
        return None  # a model class this file never builds: may not be the one DDP wraps
    return ddps[0]


_MOVES = {"to", "cuda", "half", "bfloat16", "float", "train"}


def _built_from(facts: FileFacts, node: ast.AST | None, part: Chain) -> bool:
    """Is the module ``node`` (through names and ``.to(device)``) built by a call given the module ``part``
    (``model = Model(encoder, config).to(device)``: ``encoder`` is a submodule of what DDP wraps)?"""
    value, depth = facts.resolve(node), 0
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _MOVES and depth < 6:
        value, depth = facts.resolve(value.func.value), depth + 1
    if not isinstance(value, ast.Call):
        return False
    for arg in [*value.args, *(k.value for k in value.keywords if k.arg is not None)]:
        theirs = facts.chain(arg) if isinstance(arg, (ast.Name, ast.Attribute)) else None
        if theirs is not None and (part.covers(theirs) or theirs.covers(part)):
            return True
    return False


def _hf_args_both(facts: FileFacts) -> list[ast.Call]:
    """``TrainingArguments(gradient_checkpointing=True, ddp_find_unused_parameters=True)`` (or a subclass's config
    call of that shape) without ``gradient_checkpointing_kwargs={"use_reentrant": False}``."""
    return [
        c
        for c in facts.calls()
        if is_true(kwarg(c, "gradient_checkpointing"))
        and is_true(kwarg(c, "ddp_find_unused_parameters"))
        and not _reentrant_false(facts, kwarg(c, "gradient_checkpointing_kwargs"))
    ]


def _fsd050(facts: FileFacts) -> list[tuple[Located, str | None]]:
    key = ("device_rules", "FSD050")
    if key not in facts.cache:
        hits: list[tuple[Located, str | None]] = [
            (c, "TrainingArguments asks for both (the Trainer checkpoints with use_reentrant=True by default)")
            for c in _hf_args_both(facts)
        ]
        ddps = _find_unused(facts)
        for node in _reentrant_checkpoints(facts) if ddps else []:
            ddp = _same_model(facts, node, ddps)
            if ddp is not None:
                hits.append((node, f"DDP with find_unused_parameters=True at line {ddp.lineno}"))
        facts.cache[key] = hits
    found: list[tuple[Located, str | None]] = facts.cache[key]
    return found


@finder("FSD050")
def reentrant_checkpoint_with_find_unused(facts: FileFacts) -> Found:
    """FSD050: reentrant activation checkpointing in a file that builds DDP with ``find_unused_parameters=True``."""
    yield from _fsd050(facts)


_FSD027 = FINDERS.get("FSD027")


def _fsd027_unless_fsd050(facts: FileFacts) -> Found:
    """FSD027's finder, less the checkpoint calls FSD050 reports (the stronger, specific finding wins)."""
    if _FSD027 is None:
        return
    taken = {id(node) for node, _ in _fsd050(facts)}
    for node, detail in _FSD027(facts):
        if id(node) not in taken:
            yield node, detail


if _FSD027 is not None:
    FINDERS["FSD027"] = _fsd027_unless_fsd050


# --- FSD051 ----------------------------------------------------------------------------------------------


def _nccl_without_device_id(facts: FileFacts) -> bool:
    """Some ``init_process_group`` of the file may form an NCCL group (``"nccl"`` among its backends, not a
    ``"cpu:gloo,cuda:nccl"`` map) and none binds the device with ``device_id=``."""
    inits = [c for c in facts.calls() if facts.qual(c) == _INIT]
    if not inits or any(kwarg(c, "device_id") is not None for c in inits):
        return False
    return any(
        "nccl" in (names := facts.strings(kwarg(c, "backend", 0))) and not any(":" in n or "," in n for n in names) for c in inits
    )


def _default_group_collective(facts: FileFacts, call: ast.Call) -> bool:
    from fsdp_skill.core.check.rank_conditional import COLLECTIVES

    q = facts.qual(call) or ""
    return (
        q.startswith("torch.distributed.")
        and q.count(".") == 2
        and q.rsplit(".", 1)[-1] in COLLECTIVES - {"monitored_barrier"}
        and kwarg(call, "group") is None
        and kwarg(call, "device_ids") is None
    )


def _helpers_with_collective(facts: FileFacts) -> dict[int, ast.Call]:
    """id(function of the file) -> the first default-group collective its own body runs."""
    out: dict[int, ast.Call] = {}
    for c in facts.calls():
        if _default_group_collective(facts, c):
            scope = facts.scope_of(c)
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(scope) not in out:
                out[id(scope)] = c
    return out


@finder("FSD051")
def collective_before_set_device(facts: FileFacts) -> Found:
    """FSD051: a default-group collective (or a call of a function of the file that runs one) before
    ``torch.cuda.set_device`` in the same function, NCCL without ``device_id``."""
    if not _nccl_without_device_id(facts):
        return
    setters = [c for c in facts.calls() if facts.qual(c) == "torch.cuda.set_device"]
    if not setters:
        return  # FSD013's case
    helpers = _helpers_with_collective(facts)
    first: dict[int, ast.Call] = {}  # the earliest set_device of each function: a later one binds nothing new
    for setter in setters:
        known = first.get(id(facts.scope_of(setter)))
        if known is None or (setter.lineno, setter.col_offset) < (known.lineno, known.col_offset):
            first[id(facts.scope_of(setter))] = setter
    for setter in first.values():
        scope = facts.scope_of(setter)
        here = (setter.lineno, setter.col_offset)
        for node in facts.scope_nodes(scope):
            if not isinstance(node, ast.Call) or (node.lineno, node.col_offset) >= here or facts.exclusive(node, setter):
                continue
            if _default_group_collective(facts, node):
                yield node, f"(torch.cuda.set_device at line {setter.lineno} comes after it)"
                break
            target = calls.callee(facts, node)
            inner = helpers.get(id(target.fn)) if target is not None and target.fn is not None else None
            if inner is not None and inner is not node:
                name = target.summary.name if target is not None else "the helper"
                yield (
                    node,
                    f"{name}() runs {last_name(inner)} (line {inner.lineno}) before torch.cuda.set_device (line {setter.lineno})",
                )
                break


# --- FSD053 ----------------------------------------------------------------------------------------------


def _full_state_source(facts: FileFacts, node: ast.AST | None) -> ast.Call | None:
    """The ``torch.load(path)`` / ``load_file(path)`` call a state dict comes from (through names and keys:
    ``ckpt = torch.load(p); ckpt["model"]``), when ``path`` is not a per-rank file; else None."""
    cur = node
    for _ in range(6):
        cur = facts.resolve(cur)
        if isinstance(cur, ast.Subscript):
            cur = cur.value
            continue
        break
    if not isinstance(cur, ast.Call):
        return None
    q, name = facts.qual(cur) or "", last_name(cur) or ""
    if q != "torch.load" and not (name == "load_file" and "safetensors" in q):
        return None
    path = kwarg(cur, "f", 0) if q == "torch.load" else kwarg(cur, "filename", 0)
    if facts.names_the_rank(path):  # a per-rank file (as finders._per_rank_file, for a load)
        return None
    return cur


def _sharded_before(facts: FileFacts, owner: ast.expr, load: ast.Call) -> ast.Call | None | bool:
    """The ``fully_shard(owner)`` of the load's function that comes before it; True when ``owner`` arrives sharded
    (an FSDP2 module the function does not shard itself); None when the function shards it only later."""
    name = ast.unparse(owner)
    scope = facts.scope_of(load)
    shards = [
        c
        for c in facts.scope_nodes(scope)
        if isinstance(c, ast.Call) and facts.qual(c) == FULLY_SHARD and c.args and ast.unparse(c.args[0]) == name
    ]
    before = [c for c in shards if (c.lineno, c.col_offset) < (load.lineno, load.col_offset) and not facts.exclusive(c, load)]
    if before:
        return before[-1]
    return None if shards else True


@finder("FSD053")
def full_state_dict_loaded_into_fsdp2(facts: FileFacts) -> Found:
    """FSD053: ``load_state_dict`` of a full state dict read from one file into an already sharded FSDP2 module."""
    for c in facts.calls():
        if last_name(c) != "load_state_dict" or not isinstance(c.func, ast.Attribute) or facts.qual(c) in _NOT_MODULE_LOADS:
            continue
        owner = c.func.value
        if not isinstance(owner, (ast.Name, ast.Attribute)) or not facts.is_fsdp2(owner):
            continue
        source = _full_state_source(facts, kwarg(c, "state_dict", 0))
        if source is None:
            continue
        sharded = _sharded_before(facts, owner, c)
        if sharded is None:
            continue
        where = (
            f"fully_shard at line {sharded.lineno}" if isinstance(sharded, ast.Call) else "a module sharded before this function"
        )
        yield c, f"a full state dict from {ast.unparse(source.func)}() at line {source.lineno} into {where}"


_NOT_MODULE_LOADS = {"torch.distributed.checkpoint.state_dict.set_model_state_dict"}


# --- FSD052 ----------------------------------------------------------------------------------------------

_METRIC_SINKS = {"add_batch", "update", "append", "extend", "add"}
_ITER_WRAPPERS = {"enumerate", "tqdm", "iter", "zip"}


def _is_accelerator(facts: FileFacts, recv: ast.AST) -> bool:
    """Is ``recv`` bound to an ``Accelerator(...)`` (also ``Accelerator(a) if flag else Accelerator()``)?"""
    value = facts.resolve(recv)
    options = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [recv]
    for opt in options:
        made = bound_call(facts, opt)
        if made is not None and (facts.qual(made) or "").endswith("Accelerator"):
            return True
    return False


def _unpacked_into(facts: FileFacts, node: ast.AST) -> ast.Call | None:
    """For ``self.loader``: the call a tuple assignment unpacks into it (``self.model, self.loader = prepare(...)``)."""
    name = dotted(node) if isinstance(node, ast.Attribute) else None
    if name is None:
        return None
    for n in facts.nodes:
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            for t in n.targets:
                if isinstance(t, (ast.Tuple, ast.List)) and any(dotted(e) == name for e in t.elts):
                    return n.value
    return None


def _prepared_loader(facts: FileFacts, it: ast.AST) -> bool:
    """Is the ``for`` iterable a dataloader ``accelerator.prepare(...)`` (or ``prepare_data_loader``) returned
    (through ``enumerate`` / ``tqdm``, names, ``self.`` attributes)?"""
    for _ in range(3):
        if isinstance(it, ast.Call) and last_name(it) in _ITER_WRAPPERS and it.args:
            it = it.args[0]
    made = bound_call(facts, it) or _unpacked_into(facts, it)
    return (
        made is not None
        and last_name(made) in ("prepare", "prepare_data_loader")
        and isinstance(made.func, ast.Attribute)
        and _is_accelerator(facts, made.func.value)
    )


def _evaluating(facts: FileFacts, loop: ast.AST) -> bool:
    """An evaluation loop: no backward in it, and under (or holding) ``torch.no_grad()`` / ``inference_mode()``,
    after ``model.eval()`` in its function, or in a function named for evaluation."""
    if any(isinstance(n, ast.Call) and last_name(n) == "backward" for n in ast.walk(loop)):
        return False  # a training loop (a logged, gathered loss is not a metric over the data)
    grad_off = ("torch.no_grad", "torch.inference_mode")
    inside = [n for n in ast.walk(loop) if isinstance(n, ast.withitem)]
    around = [i for a in facts.ancestors(loop) if isinstance(a, ast.With) for i in a.items]
    if any(facts.qual(i.context_expr) in grad_off for i in inside + around):
        return True
    scope = facts.scope_of(loop)
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        w in scope.name.lower() for w in ("eval", "valid", "test")
    ):
        return True
    return any(
        isinstance(n, ast.Call) and last_name(n) == "eval" and not n.args and n.lineno < getattr(loop, "lineno", 0)
        for n in facts.scope_nodes(scope)
    )


def _trims_padding(loop: ast.AST, gathered: set[str]) -> bool:
    """Does the loop drop the padded duplicates itself (a slice of a gathered name, ``samples_seen``,
    ``len(loader.dataset)``)?"""
    for n in ast.walk(loop):
        if (
            isinstance(n, ast.Subscript)
            and isinstance(n.slice, ast.Slice)
            and isinstance(n.value, ast.Name)
            and n.value.id in gathered
        ):
            return True
        if isinstance(n, ast.Name) and "samples_seen" in n.id:
            return True
        if (
            isinstance(n, ast.Call)
            and last_name(n) == "len"
            and n.args
            and isinstance(n.args[0], ast.Attribute)
            and n.args[0].attr == "dataset"
        ):
            return True
    return False


def _names(target: ast.AST) -> set[str]:
    """The names an expression or assignment target mentions."""
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _feeds_metric(loop: ast.AST, gathered: set[str], after: tuple[int, int]) -> bool:
    """A later use of a gathered name in the loop that counts samples: a metric sink call, a comparison, a ``+=``."""
    for n in ast.walk(loop):
        if (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)) <= after:
            continue
        if isinstance(n, ast.Call) and last_name(n) in _METRIC_SINKS:
            used = [a for a in n.args] + [k.value for k in n.keywords]
            if any(_names(u) & gathered for u in used):
                return True
        elif isinstance(n, ast.Compare) and _names(n) & gathered:
            return True
        elif isinstance(n, ast.AugAssign) and _names(n.value) & gathered:
            return True
    return False


@finder("FSD052")
def gather_not_for_metrics_in_eval(facts: FileFacts) -> Found:
    """FSD052: ``accelerator.gather`` feeding a metric in an evaluation loop over a prepared dataloader."""
    if not any(full.split(".")[0] == "accelerate" for full in facts.aliases.values()):
        return
    reported: set[int] = set()  # one finding per statement (``(gather(p) == gather(y)).sum()``)
    for c in facts.calls():
        if last_name(c) != "gather" or not isinstance(c.func, ast.Attribute) or not _is_accelerator(facts, c.func.value):
            continue
        loop = next((a for a in facts.ancestors(c) if isinstance(a, (ast.For, ast.AsyncFor))), None)
        if loop is None or not _prepared_loader(facts, loop.iter) or not _evaluating(facts, loop):
            continue
        stmt = next((a for a in facts.ancestors(c) if isinstance(a, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr))), None)
        if isinstance(stmt, ast.Assign):
            gathered = set().union(*(_names(t) for t in stmt.targets))
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            gathered = _names(stmt.target)
        else:  # metric.add_batch(predictions=accelerator.gather(p), ...): used where it is made
            parent = facts.parents.get(id(c))
            while parent is not None and not isinstance(parent, ast.Call):
                parent = facts.parents.get(id(parent))
            if (
                isinstance(parent, ast.Call)
                and last_name(parent) in _METRIC_SINKS
                and not _trims_padding(loop, set())
                and id(parent) not in reported
            ):
                reported.add(id(parent))
                yield c, None
            continue
        if _trims_padding(loop, gathered):
            continue
        if id(stmt) not in reported and (
            isinstance(stmt, ast.AugAssign)
            or _feeds_metric(loop, gathered, (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0))
        ):
            reported.add(id(stmt))
            yield c, None
