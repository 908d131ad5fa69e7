"""Rules about how a multi-process script sets the model up before training (FSD074-FSD076, FSD084, FSD085).

- **FSD074**: a CUDA device written into the code (``"cuda:0"``, ``torch.device("cuda", 0)``, ``.cuda(0)``,
  ``set_device(0)``, ``device_ids=[0]``, ``map_location="cuda:0"``) in a program (it forms the process group, or
  is a script) that runs as several ranks, each of which sees the node's GPUs: the file reads a local rank (``LOCAL_RANK``, ``local_rank``), spawns
  its processes (``mp.spawn``), counts the GPUs (``torch.cuda.device_count()``) or picks a device from a rank
  elsewhere. Every rank then lands on that one GPU. Also, in a script that forms its own group and never binds the
  device (no ``set_device``, ``torch.cuda.device``, ``device_id=``, device helper) where FSD013 does not already speak,
  a plain ``"cuda"`` / ``.cuda()``: the current device, GPU 0 on every rank. A name counts when every binding of it
  before the read holds such a device, ``a if c else b`` when each CUDA alternative does; ``args.device`` when
  the argparse option's default is such a device (``--device``, default ``"cuda:0"``): every rank gets the same
  command line, so none of them can be given its own GPU there. Silent where the file
  gives each process its own ``CUDA_VISIBLE_DEVICES`` (not a constant), under a rank condition or a condition that
  may tell single-process runs apart (``if not distributed:``), for a parameter's default (the caller may pass
  another) and an ``args.device`` the program assigns itself, for a one-process group (``world_size=1``) and where every group is Gloo (processes
  sharing a GPU are slow there, not wrong: the RPC examples share GPU 0 on purpose). FSD042 is the global rank as the index.
- **FSD075**: ``FSDP(module)`` (FSDP1, without ``sync_module_states=True``) or ``fully_shard(module)`` of a module
  whose weights only some ranks loaded just before: ``module.load_state_dict(...)`` (of the module or a part of it)
  under a rank condition, ``module = X.from_pretrained(...)`` on some ranks only (the others build it from a config
  or on ``meta``), or a helper of the file that loads into its parameter, called under a rank condition. Neither
  wrapper broadcasts (DDP does): the other ranks shard and train their own weights. Silent when the other ranks load
  too (also in turn: ``for i in range(world): if i == rank:``), when a broadcast follows the load, when every rank loads into the wrapped module afterwards
  (``set_model_state_dict``, ``load_state_dict``, ``dcp.load``), and for ``sync_module_states=`` not written
  ``False`` or ``**kwargs``. Through functions of the file: a loader that returns what it loaded on some ranks
  (``if rank == 0: return X.from_pretrained(...)``, or a name it ``load_state_dict``-ed on rank 0) and broadcasts
  none of it, whose result is wrapped (``FSDP(load(name, rank))``, ``model = load(...)``) or handed to a wrapping
  helper of the file (``def shard(model): return FSDP(model)`` called as ``shard(load(name, rank))``). A load into a module already wrapped is FSD071's.
- **FSD076**: FSDP1 ``cpu_offload=CPUOffload(offload_params=True)`` of a module the same function moved to the GPU
  before the wrap (``model.cuda()``, ``model.to(device)`` with a CUDA device, ``FSDP(model.cuda(), ...)``, the name
  wrapped bound so: ``model = Net().to(device)``), or, for a wrapping helper given the module, moved by a caller of
  the file before the call (``shard(model.cuda())``). torch's
  FSDP1 flattens and shards each unit on the device it finds it on and only then moves the shard to the CPU
  (``_init_param_handle_from_params``: ``handle.flat_param_to(cpu)``): training still offloads, but the whole
  unsharded model must first fit in each rank's GPU memory, the peak offload was meant to avoid.
- **FSD084**: a seed that differs between ranks (``torch.manual_seed(seed + rank)``, ``torch.cuda.manual_seed_all``,
  a ``torch.Generator`` seeded so, ``set_seed`` / ``seed_everything``, or a seeding function of the file given
  ``seed + rank``) before a wrapper that keeps replicas and broadcasts nothing: FSDP1 ``HYBRID_SHARD`` /
  ``_HYBRID_SHARD_ZERO2`` / ``NO_SHARD`` (its options also read from ``**helper(cfg)`` returning a dict) without
  ``sync_module_states`` (or with a test there: ``load_path is not None`` is on for a resumed run only) whose module
  is built after the seeding in the wrap's function (or after a call there of a function that seeds per rank);
  ``fully_shard`` on a 2-D mesh (``init_device_mesh(..., (r, s))`` unnamed or with a replicate dimension,
  ``mesh["dp_replicate", "dp_shard"]``) whose module is built after the seeding, or initialised on its shards by a
  function of the file that seeds per rank and calls ``normal_`` / ``nn.init.*`` / ``reset_parameters``. The
  replicas start from different weights, the averaged gradients keep them different. Reported at the seeding.
  Silent for FSDP1 ``FULL_SHARD`` / ``SHARD_GRAD_OP`` and a 1-D mesh (each value has one owner: a patchwork, not
  diverging replicas), DDP (it broadcasts), a file that broadcasts (or passes ``broadcast_from_rank0``), a common
  seed set again before the build, a seeding under a rank or one-process condition, ``param_init_fn``, an unread
  ``**kwargs``, and numpy's and Python's generators.
- **FSD085**: ``DDP(module, device_ids=[...])`` (a list or tuple written there) of a module built on the CPU in the
  same function (``nn.Linear(...)``, a ``torchvision.models`` constructor, a ``torch.nn`` module class of the file
  that never moves itself) whose name nothing reads between the build and the wrap: DDP refuses ``device_ids`` for
  a module on the CPU (ValueError). Silent for a module built under a ``with`` block or given ``device=``, moved
  (``.to`` / ``.cuda`` in place or rebound) or handed to any call before the wrap, ids chosen at run time
  (``[rank] if cuda else None``, a name), and in a file that sets a default device.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from fsdp_skill.core.check import calls as callgraph
from fsdp_skill.core.check import calls_rules, checkpoint_rules, divergence, finders
from fsdp_skill.core.check import rank_conditional as rc
from fsdp_skill.core.check.calls_rules import _LOCAL_ENV, rank_kind
from fsdp_skill.core.check.facts import DDP, FSDP1, FULLY_SHARD, Chain, FileFacts, dotted, end, is_true, kwarg, last_name, start
from fsdp_skill.core.check.finders import Found, finder

_DEPTH = 4  # how far a device value is followed through names
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_NOT_CUDA = ("cpu", "meta", "mps", "xpu", "npu", "hpu", "xla", "auto")
# words of a name in a condition that may tell a one-process run from a distributed one, or some ranks from the
# others (``if not args.distributed:``, ``if world_size == 1:``, ``if ngpus > 1:``, ``if is_master:``)
_SINGLE_WORDS = (
    "rank",
    "distributed",
    "dist",
    "world",
    "ddp",
    "local",
    "main",
    "master",
    "single",
    "multi",
    "parallel",
    "nproc",
    "gpus",
    "ngpu",
    "n_gpu",
    "spawn",
    "process",
    "fsdp",
    "shard",
    "deepspeed",
    "hvd",
    "horovod",
)

# --- FSD074: a hard-coded CUDA device ------------------------------------------------------------------------

Device = tuple[str, list[ast.AST]]  # ("hard" | "plain" | "other", the nodes that name it)


def _text_device(text: str) -> str | None:
    """'hard' for ``"cuda:1"``, 'plain' for ``"cuda"``, 'other' for ``"cpu"`` / ``"meta"`` / ..., else None."""
    if text == "cuda":
        return "plain"
    if text.startswith("cuda:") and text[5:].isdigit():
        return "hard"
    return "other" if text.split(":")[0] in _NOT_CUDA else None


def _combine(parts: list[Device | None]) -> Device | None:
    """One value of several alternatives: unknown if any is; 'hard' if a CUDA one is hard-coded and none is plain
    ('plain' likewise), with the nodes of those alternatives."""
    if not parts or any(p is None for p in parts):
        return None
    kinds = {p[0] for p in parts if p is not None}
    for kind in ("hard", "plain"):
        if kinds <= {kind, "other"} and kind in kinds:
            return kind, [n for p in parts if p is not None and p[0] == kind for n in p[1]]
    return ("other", []) if kinds == {"other"} else None


def _device(facts: FileFacts, node: ast.AST | None, *, index: bool, depth: int = 0) -> Device | None:
    """What CUDA device ``node`` names where a device is expected (``index``: an int there is a CUDA index)."""
    if node is None or depth > _DEPTH:
        return None
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            kind = _text_device(node.value)
            return (kind, [node]) if kind else None
        if index and isinstance(node.value, int) and not isinstance(node.value, bool):
            return "hard", [node]
        return None
    if isinstance(node, ast.IfExp):
        return _combine(
            [_device(facts, node.body, index=index, depth=depth + 1), _device(facts, node.orelse, index=index, depth=depth + 1)]
        )
    if isinstance(node, ast.Call) and facts.qual(node) == "torch.device" and node.args:
        if len(node.args) == 1:
            return _device(facts, node.args[0], index=True, depth=depth + 1)
        base = _device(facts, node.args[0], index=False, depth=depth + 1)
        idx = _device(facts, node.args[1], index=True, depth=depth + 1)
        if base is not None and base[0] == "plain" and idx is not None and idx[0] == "hard":
            return "hard", [node]
        return None
    if isinstance(node, ast.Name):
        return _name_device(facts, node, index=index, depth=depth)
    if isinstance(node, ast.Attribute):
        return _option_device(facts, node)
    return None


def _option_device(facts: FileFacts, node: ast.Attribute) -> Device | None:
    """``args.device`` of an argparse option whose default is a numbered CUDA device (``--device cuda:0``) that the
    program never assigns itself: launched as several ranks, every rank is given the same arguments, so each one
    reads that same default (or the same value passed on the command line)."""
    if not _parsed_arguments(facts, node.value):
        return None  # x.device of a tensor, cfg.device of a config object: not the option
    defaults = facts.argparse_default(node)
    if not defaults or not all(_text_device(d) == "hard" for d in defaults) or _rank_device_somewhere(facts):
        return None
    return "hard", [node]


_ARGS_NAMES = ("args", "opt", "opts", "flags", "cli_args")


def _parsed_arguments(facts: FileFacts, base: ast.expr) -> bool:
    """Is ``base`` the namespace argparse returned: a name bound from ``parse_args()`` / ``parse_known_args()[0]``
    (through a helper of the file that returns it), or a parameter / ``self.`` attribute named ``args`` / ``opt``?"""
    if isinstance(base, ast.Attribute):
        return base.attr in _ARGS_NAMES and isinstance(base.value, ast.Name) and base.value.id == "self"
    if not isinstance(base, ast.Name):
        return False
    _, b = facts.binding(base)
    if b is None or b.kind == "param":
        return base.id in _ARGS_NAMES
    value = b.value
    if isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and last_name(value) in ("parse_args", "parse_known_args"):
        return True
    if isinstance(value, ast.Call) and (target := callgraph.callee(facts, value)) is not None and target.fn is not None:
        returns = [n.value for n in facts.scope_nodes(target.fn) if isinstance(n, ast.Return) and n.value is not None]
        return any(isinstance(r, ast.Call) and last_name(r) in ("parse_args", "parse_known_args") for r in returns)
    return False


def _rank_device_somewhere(facts: FileFacts) -> bool:
    """Does the file also pick a device from a rank (``set_device(local_rank)``, ``torch.device("cuda", rank)``,
    ``.to(local_rank)``, ``f"cuda:{local_rank}"``)? Then an option's device is likely one path of several (memoised)."""
    key = ("setup", "rank-device")
    if key not in facts.cache:
        found = False
        for c in facts.calls():
            name = last_name(c) or ""
            if name in ("set_device", "device", "to", "cuda") and any(facts.is_rank_expr(a) for a in c.args):
                found = True
                break
        if not found:
            found = any(
                isinstance(n, ast.JoinedStr)
                and any(isinstance(v, ast.FormattedValue) and facts.is_rank_expr(v.value) for v in n.values)
                and any(isinstance(v, ast.Constant) and "cuda" in str(v.value) for v in n.values)
                for n in facts.nodes
            )
        facts.cache[key] = found
    return bool(facts.cache[key])


def _name_device(facts: FileFacts, name: ast.Name, *, index: bool, depth: int) -> Device | None:
    """A name's device: every binding of it in its function before the read (or, for a name its function does not
    bind, every binding of the module) must name one; a parameter, a loop variable or ``with ... as`` never does."""
    scope = facts.scope_of(name)
    local = facts.bindings.get((id(scope), name.id))
    if local:
        seen = [b for b in local if b.pos <= start(name)]
    else:
        seen = list(facts.bindings.get((id(facts.tree), name.id), []))
    if not seen or any(b.kind != "assign" or b.value is None for b in seen):
        return None
    return _combine([_device(facts, b.value, index=index, depth=depth + 1) for b in seen])


def _uses(facts: FileFacts, call: ast.Call) -> Iterator[tuple[ast.AST | None, bool]]:
    """The device expressions ``call`` uses, each with whether an int there is a CUDA index."""
    q, name = facts.qual(call) or "", last_name(call) or ""
    if q in ("torch.cuda.set_device", "torch.cuda.device") and call.args:
        yield call.args[0], True
    elif q == "torch.device":
        if not isinstance(facts.parents.get(id(call)), (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.Return)):
            yield call, True  # a device made where it is used (bound to a name: judged where the name is read)
    elif name in ("to", "cuda") and isinstance(call.func, ast.Attribute):
        arg = kwarg(call, "device", 0)
        yield (call if arg is None and name == "cuda" else arg), name == "cuda"  # .to(0): too often not a device
    for key, idx in (("device", False), ("map_location", False), ("output_device", True), ("device_id", True)):
        value = kwarg(call, key)
        if value is not None and (key == "map_location" or q.startswith("torch.")) and name not in ("to", "cuda"):
            yield value, idx  # a helper of the user's own with a device_id= parameter may mean anything
    ids = kwarg(call, "device_ids") if q.startswith("torch.") else None
    if isinstance(ids, (ast.List, ast.Tuple)) and len(ids.elts) == 1:
        yield ids.elts[0], True


def _call_device(facts: FileFacts, call: ast.Call, node: ast.AST | None, index: bool) -> Device | None:
    """The device of one use: a bare ``.cuda()`` is the current device (plain)."""
    if node is call and last_name(call) == "cuda":
        return "plain", [call]
    if node is call:
        return _device(facts, call, index=True)
    return _device(facts, node, index=index)


def _per_process_gpus(facts: FileFacts) -> bool:
    """Does the file show one process per GPU of a node, each seeing them all: it reads a local rank, spawns its
    processes, counts the GPUs, or picks a device from a rank somewhere?"""
    for n in facts.nodes:
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and (n.value in _LOCAL_ENV or "local_rank" in n.value):
            return True
        if isinstance(n, (ast.Name, ast.Attribute)) and "local_rank" in (last_name(n) or "").lower():
            return True
        if isinstance(n, ast.Call):
            q, name = facts.qual(n) or "", last_name(n) or ""
            if q == "torch.cuda.device_count" or name in ("spawn", "start_processes") and q.startswith("torch.multiprocessing"):
                return True
            if name in ("get_local_rank", "get_node_local_rank"):
                return True
    return False


def _visible_per_process(facts: FileFacts) -> bool:
    """Does the file set ``CUDA_VISIBLE_DEVICES`` to a computed value (each process its own GPU, which is then 0)?"""
    for n in facts.nodes:
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Subscript) and "CUDA_VISIBLE_DEVICES" in facts.strings(t.slice) for t in n.targets
        ):
            if not facts.strings(n.value):
                return True
        elif isinstance(n, ast.Call) and last_name(n) in ("setdefault", "putenv", "update", "set_visible_devices"):
            if any(isinstance(s, ast.Constant) and s.value == "CUDA_VISIBLE_DEVICES" for a in n.args for s in ast.walk(a)):
                return True
    return False


def _gpu_group(facts: FileFacts) -> bool:
    """May the file's group be NCCL (``"nccl"``, a backend it does not spell out, or a group formed elsewhere)? With
    only Gloo groups, processes sharing one GPU is slow, not wrong (the RPC examples do it on purpose)."""
    backends = [kwarg(c, "backend", 0) for c in facts.calls() if facts.qual(c) == "torch.distributed.init_process_group"]
    return not backends or any(b is None or not facts.strings(b) or any("nccl" in s for s in facts.strings(b)) for b in backends)


def _one_process(facts: FileFacts) -> bool:
    """A group of one process: ``init_process_group(..., world_size=1)``."""
    for c in facts.calls():
        if facts.qual(c) == "torch.distributed.init_process_group":
            ws = kwarg(c, "world_size")
            if isinstance(ws, ast.Constant) and ws.value == 1:
                return True
    return False


def _guarded(facts: FileFacts, node: ast.AST) -> bool:
    """Under a rank condition, or an ``if`` / ``a if c else b`` whose test may tell one-process runs apart."""
    if facts.rank_branches().get(id(node)):
        return True
    for anc in facts.ancestors(node):
        if isinstance(anc, (ast.If, ast.IfExp, ast.While)):
            names = [(last_name(n) or "").lower() for n in ast.walk(anc.test) if isinstance(n, (ast.Name, ast.Attribute))]
            if any(w in name for name in names for w in _SINGLE_WORDS):
                return True
    return False


def _binds_device(facts: FileFacts) -> bool:
    """Does the file bind each process's GPU (``set_device`` with any argument, ``torch.cuda.device``, a device
    helper of another package, ``device_id=``)?"""
    return any(
        last_name(c) in ("set_device", "set_device_index", "set_default_device")
        or facts.qual(c) == "torch.cuda.device"
        or finders._device_helper(facts, c)
        or kwarg(c, "device_id") is not None
        for c in facts.calls()
    )


def _plain_allowed(facts: FileFacts) -> bool:
    """May a plain ``"cuda"`` be reported: a script that forms its group itself, never binds the device, and
    that FSD013 does not already report?"""
    return (
        finders._is_script(facts)
        and facts.uses("torch.distributed.init_process_group")
        and not _binds_device(facts)
        and not any(True for _ in finders.nccl_without_set_device(facts))
    )


@finder("FSD074")
def hard_coded_cuda_device(facts: FileFacts) -> Found:
    """FSD074: a CUDA device written into a multi-process script (see the module docstring), reported once where
    it is written."""
    if not calls_rules._launched_here(facts) or not checkpoint_rules._runs_as_ranks(facts) or _one_process(facts):
        return
    if not _per_process_gpus(facts):
        return
    if not _gpu_group(facts) or _visible_per_process(facts):
        return
    plain: bool | None = None  # decided on the first plain use
    reported: set[int] = set()  # the nodes reported, and their lines (one finding a line)
    lines: set[int] = set()
    for call in facts.calls():
        for node, index in _uses(facts, call):
            got = _call_device(facts, call, node, index)
            if got is None or got[0] not in ("hard", "plain") or _guarded(facts, call) or finders._in_test_harness(facts, call):
                continue
            if got[0] == "plain":
                plain = _plain_allowed(facts) if plain is None else plain
                if not plain:
                    continue
            for origin in got[1]:
                line = getattr(origin, "lineno", 0)
                if id(origin) in reported or line in lines or _guarded(facts, origin):
                    continue
                reported.add(id(origin))
                lines.add(line)
                yield _origin_site(origin), _fsd074_detail(got[0], origin, call)


def _origin_site(origin: ast.AST) -> ast.expr:
    assert isinstance(origin, ast.expr)
    return origin


def _fsd074_detail(kind: str, origin: ast.AST, use: ast.Call) -> str:
    text = ast.unparse(origin)
    where = "" if use.lineno == getattr(origin, "lineno", 0) else f", used at line {use.lineno}"
    if kind == "plain":
        return f"`{text}` is the current CUDA device, GPU 0 on every rank: no torch.cuda.set_device(local_rank) binds it{where}"
    if isinstance(origin, ast.Attribute):
        return (
            f"`{text}` is an option whose default names one GPU, and every rank is launched with the same arguments: "
            f"they all select that GPU{where}"
        )
    return f"`{text}` names the same GPU on every rank{where}"


# --- FSD075: a module loaded on some ranks only, then sharded without a broadcast ----------------------------

_LOADS_AFTER = {"load_state_dict", "set_model_state_dict", "set_state_dict", "load"}


def _rank_side(facts: FileFacts, node: ast.AST) -> ast.If | None:
    """The innermost rank condition ``node`` runs under (not the ``local_rank == -1`` side), else None."""
    enclosing = facts.rank_branches().get(id(node))
    if not enclosing or any(rc.not_distributed_side(facts, b, node) for b in enclosing):
        return None
    branch = enclosing[-1]
    return branch if isinstance(branch, ast.If) else None


_NOT_WEIGHTS = ("config", "tokenizer", "processor", "extractor", "scheduler")


def _is_load(call: ast.Call) -> bool:
    """A load of weights: ``load_state_dict``, or ``from_pretrained`` of a model (not of a config or tokenizer)."""
    if last_name(call) == "load_state_dict":
        return True
    owner = (last_name(call.func.value) or "").lower() if isinstance(call.func, ast.Attribute) else ""
    return last_name(call) == "from_pretrained" and not any(w in owner for w in _NOT_WEIGHTS)


def _takes_turns(facts: FileFacts, branch: ast.If) -> bool:
    """``for i in range(world_size): if i == rank: ...``: the ranks take the branch in turn, every one of them once
    (LLaMA2-Accessory builds and loads its model so)."""
    loops = {
        n.id
        for anc in facts.ancestors(branch)
        if isinstance(anc, (ast.For, ast.AsyncFor))
        for n in ast.walk(anc.target)
        if isinstance(n, ast.Name)
    }
    return any(isinstance(n, ast.Name) and n.id in loops for n in ast.walk(branch.test))


def _one_rank(facts: FileFacts, node: ast.AST) -> ast.If | None:
    """The rank condition of a load ``node`` whose other ranks do not load on their path too."""
    branch = _rank_side(facts, node)
    if branch is None or _takes_turns(facts, branch) or facts.other_branch_has(branch, node, _is_load):
        return None
    return branch


def _helper_loads(facts: FileFacts, call: ast.Call, chain: Chain) -> bool:
    """Is ``call`` a function of the file given the module (or a part of it) that loads into that parameter?"""
    target = callgraph.callee(facts, call)
    if target is None or target.fn is None or isinstance(target.fn, ast.Lambda):
        return False
    fn = target.fn
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    for i, arg in callgraph.bound_args(call, target):
        c = facts.chain(arg)
        if c is None or not chain.covers(c) or i >= len(params):
            continue
        for inner in facts.calls(fn):
            recv = inner.func.value if isinstance(inner.func, ast.Attribute) else None
            if last_name(inner) == "load_state_dict" and recv is not None and (dotted(recv) or "").split(".")[0] == params[i]:
                return True
    return False


def _loaded_on_some_ranks(facts: FileFacts, wrap: ast.Call, module: ast.expr) -> tuple[ast.AST, ast.If] | None:
    """(the load, its rank condition) of the module ``wrap`` shards, made on some ranks only before the wrap in the
    same function: a ``load_state_dict`` into it or a part of it, a helper loading into it, or its name bound from
    ``from_pretrained`` on some ranks."""
    chain = facts.chain(module)
    if chain is None:
        return None
    scope = facts.scope_of(wrap)
    for call in facts.calls(scope):
        if facts.scope_of(call) is not scope or end(call) > start(wrap):
            continue
        recv = call.func.value if isinstance(call.func, ast.Attribute) else None
        loads = (
            last_name(call) == "load_state_dict" and recv is not None and (c := facts.chain(recv)) is not None and chain.covers(c)
        )
        if not loads and not _helper_loads(facts, call, chain):
            continue
        branch = _one_rank(facts, call)
        if branch is not None:
            return call, branch
    if isinstance(module, ast.Name):
        for b in facts.bindings.get((id(scope), module.id), []):
            value = b.value
            if b.kind != "assign" or not isinstance(value, ast.Call) or not _is_load(value) or b.pos > start(wrap):
                continue
            stmt = facts.parents.get(id(value))
            branch = _one_rank(facts, stmt) if stmt is not None else None
            if branch is not None:
                return value, branch
        _, seen = facts.binding(module)
        if seen is not None and seen.kind == "assign" and (got := _returned_rank_load(facts, seen.value)) is not None:
            return got  # model = load_on_rank0(name, rank)
    return None


def _returned_rank_load(facts: FileFacts, value: ast.AST | None) -> tuple[ast.AST, ast.If] | None:
    """(the load, its rank condition) when ``value`` calls a function of the file that loads weights on some ranks
    only before it returns (``if rank == 0: return X.from_pretrained(...)``, the others building on ``meta``), and
    broadcasts none of them there."""
    if not isinstance(value, ast.Call):
        return None
    target = callgraph.callee(facts, value)
    fn = target.fn if target is not None else None
    if fn is None or isinstance(fn, ast.Lambda) or fn is facts.scope_of(value):
        return None
    returns = [n.value for n in facts.scope_nodes(fn) if isinstance(n, ast.Return) and n.value is not None]
    returned = {n.id for n in returns if isinstance(n, ast.Name)}
    for call in facts.calls(fn):
        if facts.scope_of(call) is not fn or not _is_load(call):
            continue
        stmt = facts.parents.get(id(call))
        if last_name(call) == "load_state_dict":
            recv = call.func.value if isinstance(call.func, ast.Attribute) else None
            if recv is None or (dotted(recv) or ".").split(".")[0] not in returned:
                continue  # a load into something the function does not return
        elif not (
            any(r is call for r in returns)
            or isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id in returned for t in stmt.targets)
        ):
            continue
        branch = _one_rank(facts, stmt if isinstance(stmt, ast.stmt) else call)
        if branch is not None and not checkpoint_rules._synced_after(facts, branch, fn):
            return call, branch
    return None


def _given_rank_load(facts: FileFacts, wrap: ast.Call, module: ast.expr) -> tuple[ast.AST, ast.If] | None:
    """For a wrap of a parameter of its function (``def shard(model): return FSDP(model)``) that the function does
    not rebind: a call of that function in the file passing it a module loaded on some ranks only (a name bound so
    in the caller, or a call of a loader such as :func:`_returned_rank_load`'s)."""
    scope = _unrebound_param(facts, wrap, module)
    if scope is None:
        return None
    assert isinstance(module, ast.Name)
    for site, arg in callgraph.arguments_for(facts, scope, module.id):
        got = _returned_rank_load(facts, arg)
        if got is None and isinstance(arg, ast.Name):
            got = _loaded_on_some_ranks(facts, site, arg)
        if got is not None:
            return got
    return None


def _unrebound_param(facts: FileFacts, wrap: ast.Call, module: ast.expr) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function of ``wrap`` when ``module`` is one of its parameters that it never rebinds, else None."""
    scope = facts.scope_of(wrap)
    if not isinstance(module, ast.Name) or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [a.arg for a in scope.args.posonlyargs + scope.args.args]
    if module.id not in params or any(b.kind != "param" for b in facts.bindings.get((id(scope), module.id), [])):
        return None
    return scope


def _synced(facts: FileFacts, branch: ast.If, wrap: ast.Call) -> bool:
    """A broadcast after the load, or a load into the wrapped module on every rank after the wrap (same function)."""
    scope = facts.scope_of(wrap)
    if checkpoint_rules._synced_after(facts, branch, scope):
        return True
    if any(
        last_name(c) == "broadcast_from_rank0" or c.keywords and kwarg(c, "broadcast_from_rank0") is not None
        for c in facts.calls()
    ):
        return True
    calls, _ = divergence.scope_calls(facts, scope)
    return any(
        start(c) >= end(wrap) and last_name(c) in _LOADS_AFTER and _rank_side(facts, c) is None and not _guarded_load(facts, c)
        for c in calls
    )


def _guarded_load(facts: FileFacts, call: ast.Call) -> bool:
    """``json.load`` / ``pickle.load``: not a load of weights."""
    return last_name(call) == "load" and not (facts.qual(call) or "").startswith("torch.distributed.checkpoint")


def _sync_flag(call: ast.Call) -> str:
    """'on' when ``sync_module_states`` is written and not ``False`` (or may come from ``**kwargs``), else 'off'."""
    if any(k.arg is None for k in call.keywords):
        return "on"
    value = kwarg(call, "sync_module_states")
    if value is None:
        return "off"
    return "off" if isinstance(value, ast.Constant) and value.value is False else "on"


@finder("FSD075")
def loaded_on_some_ranks_then_sharded(facts: FileFacts) -> Found:
    """FSD075: ``FSDP(module)`` without ``sync_module_states=True``, or ``fully_shard(module)``, of a module only
    some ranks loaded (see the module docstring)."""
    for call in facts.calls():
        q = facts.qual(call)
        if q not in (FSDP1, FULLY_SHARD) or not call.args or q == FSDP1 and _sync_flag(call) == "on":
            continue
        got = _loaded_on_some_ranks(facts, call, call.args[0]) or _returned_rank_load(facts, call.args[0])
        got = got or _given_rank_load(facts, call, call.args[0])
        if got is None or _synced(facts, got[1], call):
            continue
        load, branch = got
        what = "FSDP(...) without sync_module_states=True" if q == FSDP1 else "fully_shard()"
        yield (
            call,
            f"{what} shards `{ast.unparse(call.args[0])}`, whose weights only some ranks loaded "
            f"(line {getattr(load, 'lineno', branch.lineno)}, rank condition at line {branch.lineno})",
        )


# --- FSD076: FSDP1 CPU offload of a module moved to the GPU first ----------------------------------------------


def _gpu_device(facts: FileFacts, node: ast.AST | None, depth: int = 0) -> bool:
    """Does ``node`` name a CUDA device: ``"cuda"`` / ``"cuda:1"``, ``torch.device("cuda", i)``, ``f"cuda:{i}"``,
    a local rank, ``torch.cuda.current_device()`` (followed through names)?"""
    if node is None or depth > _DEPTH:
        return False
    if isinstance(node, ast.Name):
        value = facts.resolve(node)
        if value is not node and value is not None:
            return _gpu_device(facts, value, depth + 1)
        return rank_kind(facts, node) == "local"
    if isinstance(node, ast.JoinedStr):
        head = node.values[0] if node.values else None
        return isinstance(head, ast.Constant) and str(head.value).startswith("cuda")
    if isinstance(node, ast.Call):
        q = facts.qual(node) or ""
        if q == "torch.device":
            return bool(node.args) and (_gpu_device(facts, node.args[0], depth + 1) or len(node.args) > 1)
        return q == "torch.cuda.current_device" or rank_kind(facts, node) == "local"
    strings = facts.strings(node)
    return bool(strings) and all(s.startswith("cuda") for s in strings) or rank_kind(facts, node) == "local"


def _to_gpu(facts: FileFacts, call: ast.AST) -> bool:
    """``x.cuda(...)`` or ``x.to(<a CUDA device>)``."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return False
    if call.func.attr == "cuda":
        return True
    return call.func.attr == "to" and _gpu_device(facts, kwarg(call, "device", 0))


def _offloads_params(facts: FileFacts, node: ast.AST | None) -> bool:
    """``CPUOffload(offload_params=True)`` (or ``CPUOffload(True)``), also through a name."""
    value = facts.resolve(node)
    return (
        isinstance(value, ast.Call)
        and (facts.qual(value) or "").endswith("CPUOffload")
        and is_true(kwarg(value, "offload_params", 0))
    )


def _moved_before(facts: FileFacts, wrap: ast.Call, module: ast.expr) -> ast.Call | None:
    """The ``.cuda()`` / ``.to(cuda)`` of ``module`` (the whole module) in the wrap's function before it."""
    if _to_gpu(facts, module):
        assert isinstance(module, ast.Call)
        return module
    if isinstance(module, ast.Name):
        # ``model = Net().to(device)`` / ``model = build().cuda()``: the binding the wrap reads moved it
        _, b = facts.binding(module)
        if b is not None and b.kind == "assign" and isinstance(b.value, ast.Call) and _to_gpu(facts, b.value):
            if not facts.exclusive(b.value, wrap):
                return b.value
    chain = facts.chain(module)
    if chain is None:
        return None
    scope = facts.scope_of(wrap)
    for call in facts.calls(scope):
        if facts.scope_of(call) is not scope or end(call) > start(wrap) or not _to_gpu(facts, call):
            continue
        assert isinstance(call.func, ast.Attribute)
        moved = facts.chain(call.func.value)
        if moved is not None and moved.root == chain.root and moved.parts == chain.parts and not facts.exclusive(call, wrap):
            return call
    return None


@finder("FSD076")
def offloaded_module_moved_to_gpu(facts: FileFacts) -> Found:
    """FSD076: FSDP1 ``CPUOffload(offload_params=True)`` of a module moved to the GPU before the wrap."""
    for call in facts.calls():
        if facts.qual(call) != FSDP1 or not call.args or not _offloads_params(facts, kwarg(call, "cpu_offload")):
            continue
        moved = _moved_before(facts, call, call.args[0]) or _moved_by_caller(facts, call, call.args[0])
        if moved is not None:
            yield moved, f"the module is then wrapped with CPUOffload(offload_params=True) at line {call.lineno}"


def _moved_by_caller(facts: FileFacts, wrap: ast.Call, module: ast.expr) -> ast.Call | None:
    """For a wrap of a parameter of its function that the function does not rebind (``def shard(model): return
    FSDP(model, cpu_offload=...)``): the move to the GPU of what a call of that function in the file passes it
    (``shard(model.cuda())``, or ``model.to(device)`` before ``shard(model)`` in the caller)."""
    scope = _unrebound_param(facts, wrap, module)
    if scope is None:
        return None
    assert isinstance(module, ast.Name)
    for site, arg in callgraph.arguments_for(facts, scope, module.id):
        if facts.scope_of(site) is not scope and (moved := _moved_before(facts, site, arg)) is not None:
            return moved
    return None


# --- FSD084: weights drawn from a per-rank seed, then replicated without a broadcast ----------------------------

_SEEDERS = {"torch.manual_seed", "torch.random.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all"}
_SEED_HELPERS = {"set_seed", "seed_everything"}  # transformers / accelerate / Lightning: they seed torch too
_INITS = {"normal_", "uniform_", "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_"}
_INITS |= {"kaiming_normal_", "orthogonal_", "init_weights", "reset_parameters"}
_REPLICATING = ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2", "NO_SHARD")


def _seed_arg(facts: FileFacts, call: ast.Call) -> ast.expr | None:
    """The seed a call gives torch's generator: ``torch.manual_seed(s)``, ``gen.manual_seed(s)`` (a
    ``torch.Generator``), ``set_seed(s)`` / ``seed_everything(s)``; else None."""
    q, name = facts.qual(call) or "", last_name(call) or ""
    if q in _SEEDERS or name in _SEED_HELPERS and not q.startswith(("random.", "numpy.")):
        return kwarg(call, "seed", 0)
    if name == "manual_seed" and isinstance(call.func, ast.Attribute) and not q.startswith(("numpy.", "random.")):
        return kwarg(call, "seed", 0)
    return None


def _rank_seed(facts: FileFacts, call: ast.Call) -> bool:
    """Does ``call`` seed torch's generator with a value that differs between ranks (``seed + rank``)?"""
    seed = _seed_arg(facts, call)
    return seed is not None and (facts.is_rank_expr(seed) or facts.is_rank_expr(facts.resolve(seed) or seed))


def _param_seeders(facts: FileFacts) -> dict[int, int]:
    """Functions of the file that seed torch with one of their parameters (``def set_seed(seed):
    torch.manual_seed(seed)``): their node id -> that parameter's index, memoised."""
    memo: dict[int, int] | None = facts.cache.get(("setup", "param-seeders"))
    if memo is None:
        memo = {}
        for c in facts.calls():
            seed, fn = _seed_arg(facts, c), facts.scope_of(c)
            if seed is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
            used = {n.id for n in ast.walk(seed) if isinstance(n, ast.Name)}
            for i, name in enumerate(params):
                if name in used and all(b.kind == "param" for b in facts.bindings.get((id(fn), name), [])):
                    memo.setdefault(id(fn), i)
        facts.cache[("setup", "param-seeders")] = memo
    return memo


def _seeds_per_rank(facts: FileFacts, call: ast.Call) -> bool:
    """Does ``call`` seed torch per rank: itself (``torch.manual_seed(seed + rank)``), or by giving a rank-dependent
    value to a function of the file that seeds with that parameter (``set_seed(args.seed + rank)``)?"""
    if _rank_seed(facts, call):
        return True
    seeders = _param_seeders(facts)
    if not seeders:
        return False
    target = callgraph.callee(facts, call)
    if target is None or target.fn is None or id(target.fn) not in seeders:
        return False
    index = seeders[id(target.fn)]
    return any(
        i == index and (facts.is_rank_expr(arg) or facts.is_rank_expr(facts.resolve(arg) or arg))
        for i, arg in callgraph.bound_args(call, target)
    )


def _rank_seeders(facts: FileFacts) -> dict[int, ast.Call]:
    """Functions of the file whose own body seeds torch per rank (their node id -> the seeding call), memoised."""
    memo: dict[int, ast.Call] | None = facts.cache.get(("setup", "rank-seeders"))
    if memo is None:
        memo = {}
        for c in facts.calls():
            if _seeds_per_rank(facts, c) and not _guarded(facts, c):
                memo.setdefault(id(facts.scope_of(c)), c)
        facts.cache[("setup", "rank-seeders")] = memo
    return memo


def _seeded_before(facts: FileFacts, wrap: ast.Call) -> ast.Call | None:
    """The per-rank seeding that runs before ``wrap`` in its function (there, at module level, or in a function of
    the file called there first), with no seeding with a common value between them; else None."""
    seeders = _rank_seeders(facts)
    scope = facts.scope_of(wrap)
    found: ast.Call | None = seeders.get(id(facts.tree)) if scope is not facts.tree else None
    for c in facts.calls(scope):
        if facts.scope_of(c) is not scope or start(c) >= start(wrap) or facts.exclusive(c, wrap):
            continue
        if _seeds_per_rank(facts, c) and not _guarded(facts, c):
            found = c
            continue
        target = callgraph.callee(facts, c)
        fn = target.fn if target is not None else None
        if _seed_arg(facts, c) is not None or fn is not None and id(fn) in _param_seeders(facts):
            found = None  # seeded again with a common value: the weights built next agree
            continue
        if fn is not None and id(fn) in seeders:
            found = seeders[id(fn)]
    return found


def _built_after(facts: FileFacts, module: ast.expr, seed_at: ast.Call, wrap: ast.Call) -> bool:
    """Is the wrapped module built after the seeding (its name bound after it, or built in the wrap's call)?"""
    if isinstance(module, ast.Call):
        return True
    if not isinstance(module, ast.Name):
        return False
    _, b = facts.binding(module)
    if b is None or b.kind != "assign":
        return False
    if facts.scope_of(seed_at) is not facts.scope_of(wrap):
        return True  # seeded at module level or in a helper called before the build
    return b.pos >= end(seed_at)


def _fsdp1_options(facts: FileFacts, call: ast.Call) -> dict[str, ast.expr] | None:
    """The keywords of an ``FSDP(...)`` call, those of a ``**dict(...)`` / ``**{...}`` / ``**helper(cfg)`` (a
    function of the file returning such a dict) included; None when one ``**`` cannot be read."""
    out: dict[str, ast.expr] = {}
    for k in call.keywords:
        if k.arg is not None:
            out[k.arg] = k.value
            continue
        value = facts.resolve(k.value)
        if isinstance(value, ast.Call) and not _dict_call(facts, value):
            target = callgraph.callee(facts, value)
            fn = target.fn if target is not None else None
            returned = [] if fn is None else [n.value for n in facts.scope_nodes(fn) if isinstance(n, ast.Return)]
            value = facts.resolve(returned[0]) if len(returned) == 1 else None
        got = _dict_items(facts, value)
        if got is None:
            return None
        out.update(got)
    return out


def _dict_call(facts: FileFacts, node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id == "dict"


def _dict_items(facts: FileFacts, node: ast.AST | None) -> dict[str, ast.expr] | None:
    if isinstance(node, ast.Call) and _dict_call(facts, node) and not node.args:
        if any(k.arg is None for k in node.keywords):
            return None
        return {k.arg: k.value for k in node.keywords if k.arg is not None}
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
        return {str(k.value): v for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)}
    return None


def _replicates_fsdp1(facts: FileFacts, options: dict[str, ast.expr]) -> str | None:
    """The replicating strategy (``HYBRID_SHARD``, ``_HYBRID_SHARD_ZERO2``, ``NO_SHARD``) FSDP1 is given, else None."""
    value = facts.resolve(options.get("sharding_strategy"))
    name = last_name(value) if isinstance(value, (ast.Attribute, ast.Name)) else None
    return name if name in _REPLICATING else None


def _broadcasts_fsdp1(facts: FileFacts, options: dict[str, ast.expr]) -> bool:
    """May FSDP1 broadcast rank 0's module: ``sync_module_states`` written and neither ``False`` nor a test (a
    test such as ``load_path is not None`` turns it on for some runs only)."""
    value = facts.resolve(options.get("sync_module_states"))
    if value is None or isinstance(value, ast.Constant) and value.value is False:
        return False
    return not isinstance(value, (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.IfExp))


def _replicating_mesh(facts: FileFacts, mesh: ast.AST | None, depth: int = 0) -> bool:
    """Is ``mesh`` a 2-D (replicate, shard) mesh: ``init_device_mesh(type, (r, s), ...)`` or a mesh indexed by two
    names one of which replicates (``mesh["dp_replicate", "dp_shard"]``), followed through names?"""
    value = facts.resolve(mesh)
    if depth > _DEPTH or value is None:
        return False
    if isinstance(value, ast.Call) and last_name(value) == "init_device_mesh":
        shape = kwarg(value, "mesh_shape", 1)
        names = kwarg(value, "mesh_dim_names", 2)
        if isinstance(shape, (ast.Tuple, ast.List)) and len(shape.elts) == 2:
            if not isinstance(names, (ast.Tuple, ast.List)):
                return True
            return any("rep" in s or "ddp" in s for e in names.elts for s in facts.strings(e))
        return False
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Tuple) and len(value.slice.elts) == 2:
        return any("rep" in s for e in value.slice.elts for s in facts.strings(e))
    return False


def _inits_weights(facts: FileFacts, fn: ast.AST) -> bool:
    """Does the function ``fn`` initialise parameters itself (``p.normal_(...)``, ``nn.init.xavier_uniform_``,
    ``reset_parameters()``)?"""
    return any(last_name(c) in _INITS for c in facts.calls(fn) if facts.scope_of(c) is fn)


def _broadcast_anywhere(facts: FileFacts) -> bool:
    """A broadcast of module states in the file (by hand, or ``broadcast_from_rank0``)."""
    return any(
        last_name(c) in ("broadcast", "broadcast_coalesced", "_broadcast_coalesced", "sync_module_states")
        or kwarg(c, "broadcast_from_rank0") is not None
        for c in facts.calls()
    )


@finder("FSD084")
def rank_seeded_weights_replicated(facts: FileFacts) -> Found:
    """FSD084: weights drawn from a per-rank seed (``torch.manual_seed(seed + rank)``, a generator seeded so) and
    then held as replicas that no broadcast makes agree: FSDP1 with a replicating strategy (``HYBRID_SHARD``,
    ``NO_SHARD``) without ``sync_module_states=True`` built after the seeding, or ``fully_shard`` on a 2-D
    (replicate, shard) mesh whose module is built after the seeding or initialised by a function of the file that
    seeds per rank. Reported at the seeding."""
    if not _rank_seeders(facts) or _broadcast_anywhere(facts):
        return
    reported: set[int] = set()
    for call in facts.calls():
        q = facts.qual(call)
        if q not in (FSDP1, FULLY_SHARD) or not call.args:
            continue
        if q == FSDP1:
            options = _fsdp1_options(facts, call)
            if options is None or _broadcasts_fsdp1(facts, options) or kwarg(call, "param_init_fn") is not None:
                continue
            strategy = _replicates_fsdp1(facts, options)
            if strategy is None:
                continue
            how = f"FSDP(..., sharding_strategy={strategy}) without sync_module_states=True at line {call.lineno}"
        else:
            if not _replicating_mesh(facts, kwarg(call, "mesh")):
                continue
            how = f"fully_shard on a (replicate, shard) mesh at line {call.lineno}"
        seed = _seeded_before(facts, call)
        seeds = [seed] if seed is not None and _built_after(facts, call.args[0], seed, call) else []
        if q == FULLY_SHARD:  # weights initialised on the shards afterwards, by a function that seeds per rank
            seeds += [c for fn_id, c in _rank_seeders(facts).items() if fn_id != id(facts.tree) and _initialiser(facts, c)]
        for s in seeds:
            if id(s) in reported:
                continue
            reported.add(id(s))
            yield s, f"the weights this seed draws differ on every rank, and {how} keeps each replica's own"


def _initialiser(facts: FileFacts, seeding: ast.Call) -> bool:
    fn = facts.scope_of(seeding)
    return isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and _inits_weights(facts, fn)


# --- FSD085: DDP told device_ids for a module still on the CPU ------------------------------------------------

_MOVES = {"to", "cuda", "to_empty", "xpu", "npu"}


def _file_module_class(facts: FileFacts, call: ast.Call) -> ast.ClassDef | None:
    """The class of the file that ``call`` instantiates, when it subclasses a ``torch.nn`` module (directly or
    through another class of the file) and never moves itself (``self.cuda()``, ``self.to(...)``)."""
    if not isinstance(call.func, ast.Name):
        return None
    classes = {c.name: c for c in facts.tree.body if isinstance(c, ast.ClassDef)}
    cls, seen = classes.get(call.func.id), set()
    first = cls
    while cls is not None and cls.name not in seen:
        seen.add(cls.name)
        if any(isinstance(c, ast.Call) and last_name(c) in _MOVES for c in ast.walk(cls)):
            return None
        bases = [facts.qual(b) or dotted(b) or "" for b in cls.bases]
        if any(b.startswith("torch.nn.") or b in ("nn.Module", "Module") for b in bases):
            return first
        cls = next((classes[b] for b in bases if b in classes), None)
    return None


def _cpu_constructor(facts: FileFacts, node: ast.AST | None) -> bool:
    """Is ``node`` a module built on the CPU right there: ``nn.Linear(...)`` / ``torchvision.models.resnet50()`` or
    a ``torch.nn.Module`` class of the file, given no ``device=``, outside any ``with`` block (``with
    torch.device("cuda"):`` builds on the GPU)?"""
    if not isinstance(node, ast.Call) or kwarg(node, "device") is not None or kwarg(node, "device_map") is not None:
        return False
    if any(isinstance(a, (ast.With, ast.AsyncWith)) for a in facts.ancestors(node)):
        return False
    if isinstance(node.func, ast.Attribute) and not isinstance(node.func.value, (ast.Name, ast.Attribute)):
        return False  # nn.Linear(2, 2).cuda(): a method of what was built
    q = facts.qual(node) or ""
    torch_module = q.startswith("torch.nn.") and q.rsplit(".", 1)[-1][:1].isupper() and "parallel" not in q
    return torch_module or q.startswith("torchvision.models.") or _file_module_class(facts, node) is not None


def _unmoved_cpu_module(facts: FileFacts, wrap: ast.Call, module: ast.expr) -> ast.Call | None:
    """The constructor of the module ``wrap`` is given, when it was built on the CPU in the wrap's function and
    nothing touched the name between the build and the wrap (no ``.to()``, no call it is passed to)."""
    if _cpu_constructor(facts, module):
        assert isinstance(module, ast.Call)
        return module
    if not isinstance(module, ast.Name):
        return None
    _, b = facts.binding(module)
    scope = facts.scope_of(wrap)
    value = b.value if b is not None and b.kind == "assign" else None
    if not isinstance(value, ast.Call) or not _cpu_constructor(facts, value) or facts.scope_of(value) is not scope:
        return None
    built, used = end(value), start(wrap)
    for n in facts.scope_nodes(scope):
        if (
            isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)
            and n.id == module.id
            and n is not module
            and built <= start(n) < used
        ):
            return None
    return value


@finder("FSD085")
def ddp_device_ids_for_cpu_module(facts: FileFacts) -> Found:
    """FSD085: ``DDP(module, device_ids=[...])`` (or ``output_device=``) of a module built on the CPU in the same
    function and never moved: DDP raises a ValueError at the wrap (device_ids and output_device work only with a
    module on one or more GPUs, or a CPU module given none). Silent where the file sets a default device
    (``torch.set_default_device``), the ids are not a list written there (``[rank] if cuda else None``), the module
    is built inside a ``with`` block, given ``device=``, or its name is used between the build and the wrap."""
    if any(last_name(c) in ("set_default_device", "set_default_tensor_type") for c in facts.calls()):
        return
    for call in facts.calls():
        if facts.qual(call) != DDP or not call.args:
            continue
        ids = facts.resolve(kwarg(call, "device_ids", 1))
        if not (isinstance(ids, (ast.List, ast.Tuple)) and ids.elts):
            continue
        built = _unmoved_cpu_module(facts, call, call.args[0])
        if built is not None:
            yield (
                call,
                f"`{ast.unparse(call.args[0])}` was built on the CPU at line {built.lineno} and never moved, and "
                f"DDP is given device_ids={ast.unparse(ids)}",
            )
