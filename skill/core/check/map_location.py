"""FSD043: ``torch.load(path)`` without ``map_location`` where every rank loads.

``torch.load`` puts each tensor back on the device it was saved from: a checkpoint that rank 0 wrote from
``cuda:0`` lands on ``cuda:0`` in every process that loads it, so each rank allocates its copy on GPU 0 (extra
memory there, a CUDA context of every rank on that GPU, an out-of-memory at scale) before ``load_state_dict``
copies it over.  ``torch.cuda.set_device`` does not change that: the saved location names the device.

Silent where the file cannot tell: a file that does no distributed work or never touches CUDA (what it saves is on
the CPU), a load under a condition that holds on one rank (``rank == 0``) or on the first process of each node
(``local_rank == 0``, which is ``cuda:0`` there), a per-rank file (``f"shard_{rank}.pt"``: each rank reads what it
wrote from its own device), a ``map_location`` given (by keyword, second argument or ``**kwargs``), a load whose
other branch maps it (``if args.gpu is None: torch.load(p) else: torch.load(p, map_location=loc)``: the author
chose), an LR scheduler's state (``scheduler.pt``, ``sched_state = ...``: numbers, no tensors), the run's arguments
(``train_args = torch.load(".../model_args.pth")``), a file that the same file saves only from the CPU
(``torch.save(feats.cpu(), join(d, "trainfeat.pth"))``, a dict of numbers), and a load in a function that the file
never calls (a library helper: its caller decides). A method reached from ``__init__`` counts as called where the
file builds the class (``Trainer(...)``). An Accelerate script counts as
distributed (one process per GPU). Lightning's ``Model.load_from_checkpoint(path)`` counts as such a load in a file
whose ``Trainer(accelerator="gpu", strategy="ddp")`` (or FSDP / DeepSpeed, not a spawn strategy) re-runs the script
on every GPU: without ``map_location`` Lightning maps nothing while CUDA is available.
"""

from __future__ import annotations

import ast
import re

from fsdp_skill.core.check import calls
from fsdp_skill.core.check.facts import FileFacts, dotted, kwarg, last_name
from fsdp_skill.core.check.finders import Found, distributed_here, finder

TORCH_LOAD = "torch.load"
_SPAWN = {"spawn", "start_processes"}  # torch.multiprocessing: run a function as every process's main


def _cuda_here(facts: FileFacts) -> bool:
    """Does the file use CUDA itself (``.cuda()``, ``torch.cuda.*``, a ``"cuda..."`` device, the ``"nccl"`` backend)?"""
    for n in facts.nodes:
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and (n.value == "nccl" or n.value.startswith("cuda")):
            return True
        if isinstance(n, ast.Attribute) and n.attr == "cuda":
            return True
    return False


def _per_rank_path(facts: FileFacts, target: ast.AST | None) -> bool:
    """``torch.load(f"shard_{rank}.pt")``: a file name built from the rank (an f-string, ``.format``, ``%`` or ``+``,
    through a few names), which each rank wrote itself; a rank that only decides a value does not count."""
    return facts.names_the_rank(target, formatted=True)


def _single(facts: FileFacts, test: ast.AST) -> bool:
    """Does ``test`` hold on one process (``rank == 0``, ``is_main_process()``) or one per node (``local_rank == 0``)?"""
    if isinstance(test, ast.BoolOp):
        return (
            any(_single(facts, v) for v in test.values)
            if isinstance(test.op, ast.And)
            else all(_single(facts, v) for v in test.values)
        )
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _several(facts, test.operand)
    if isinstance(test, ast.Compare):
        op = test.ops[0] if len(test.ops) == 1 else None
        return (isinstance(op, ast.Eq) or isinstance(op, ast.In) and _one_member(test)) and facts.is_rank_test(test)
    return facts.is_main_predicate(test)


def _one_member(test: ast.Compare) -> bool:
    """``local_rank in [-1, 0]``: one rank (-1 is "not distributed")."""
    group = test.comparators[0]
    if not isinstance(group, (ast.List, ast.Tuple, ast.Set)):
        return False
    try:
        values = [ast.literal_eval(e) for e in group.elts]
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return len([v for v in values if v != -1]) == 1


def _several(facts: FileFacts, test: ast.AST) -> bool:
    """Is ``not test`` a one-process condition (``rank != 0``, ``not is_main_process()``)?"""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _single(facts, test.operand)
    if isinstance(test, ast.Compare):
        op = test.ops[0] if len(test.ops) == 1 else None
        return (isinstance(op, ast.NotEq) or isinstance(op, ast.NotIn) and _one_member(test)) and facts.is_rank_test(test)
    return facts.is_main_predicate(test)


def _on_one_rank(facts: FileFacts, node: ast.AST) -> bool:
    """Does a rank condition around ``node`` (or ``@rank_zero_only``) run it on one process (per node) only?"""
    for branch in facts.rank_branches().get(id(node), []):
        if not isinstance(branch, ast.If):
            return True  # @rank_zero_only and friends
        in_body = any(node is sub for st in branch.body for sub in ast.walk(st))
        in_else = any(node is sub for st in branch.orelse for sub in ast.walk(st))
        if in_body and _single(facts, branch.test) or (in_else or not in_body) and _several(facts, branch.test):
            return True  # the else of `if rank != 0`, or what follows `if rank != 0: return`
    return False


def _callers(facts: FileFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """The calls of ``fn`` in the file: by its name, or resolved to it (``Trainer(...)`` runs ``Trainer.__init__``,
    whose ``self._load_snapshot(p)`` holds the load)."""
    out = []
    for c in facts.calls():
        if last_name(c) == fn.name and c.func is not None:
            out.append(c)
            continue
        target = calls.callee(facts, c) if fn.name == "__init__" else None
        if target is not None and target.fn is fn:
            out.append(c)
    return out


def _loads_on_every_rank(facts: FileFacts, call: ast.Call, depth: int = 0) -> bool:
    """Is ``call`` reached on several ranks: not under a one-process condition, and (inside a function) called from
    the file on several ranks? A function the file never calls is not judged."""
    if _on_one_rank(facts, call):
        return False
    scope = facts.scope_of(call)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    spawned = any(
        last_name(c) in _SPAWN and any(isinstance(a, ast.Name) and a.id == scope.name for a in c.args) for c in facts.calls()
    )
    if spawned:
        return True  # mp.spawn(main_worker, ...): the function is every process's main
    callers = _callers(facts, scope)
    if depth > 3 or not callers:
        return False
    return any(_loads_on_every_rank(facts, c, depth + 1) for c in callers if c is not call)


def _mapped(facts: FileFacts, node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and facts.qual(node) == TORCH_LOAD and kwarg(node, "map_location", 1) is not None


def _mapped_in_other_branch(facts: FileFacts, call: ast.Call) -> bool:
    """``if args.gpu is None: torch.load(p) else: torch.load(p, map_location=loc)`` (pytorch/examples' imagenet): the
    author maps the load where a process has one GPU and keeps the saved device where it drives all of them."""
    for anc in facts.ancestors(call):
        if isinstance(anc, ast.If):
            in_body = any(call is sub for st in anc.body for sub in ast.walk(st))
            other = anc.orelse if in_body else anc.body
            if any(_mapped(facts, sub) for st in other for sub in ast.walk(st)):
                return True
    return False


def _scheduler_state(facts: FileFacts, call: ast.Call) -> bool:
    """``torch.load(".../scheduler.pt")`` / ``sched_state = torch.load(p)``: an LR scheduler's state holds numbers, no
    tensors, so it lands on no GPU."""
    names = [s.lower() for n in ast.walk(call) if isinstance(n, ast.Constant) and isinstance(n.value, str) for s in [n.value]]
    parent = facts.parents.get(id(call))
    if isinstance(parent, ast.Assign):
        names += [(dotted(t) or "").lower() for t in parent.targets]
    return any("sched" in n for n in names)


_ARGUMENTS = re.compile(r"(^|[^a-z])(args|hparams)([^a-z]|$)")


def _arguments_object(facts: FileFacts, call: ast.Call) -> bool:
    """``train_args = torch.load(join(ckpt, "model_args.pth"))`` (LLaMA2-Accessory), ``training_args.bin``: the run's
    arguments (an argparse Namespace, a TrainingArguments), numbers and strings, no tensors."""
    names = [s.lower() for n in ast.walk(call) if isinstance(n, ast.Constant) and isinstance(n.value, str) for s in [n.value]]
    parent = facts.parents.get(id(call))
    if isinstance(parent, ast.Assign):
        names += [(dotted(t) or "").lower() for t in parent.targets]
    return any(_ARGUMENTS.search(n) for n in names)


def _file_names(facts: FileFacts, path: ast.AST | None) -> set[str]:
    """The file names (``trainfeat.pth``) a path expression spells as string constants, through a few names."""
    if path is None:
        return set()
    texts: set[str] = set()
    for n in ast.walk(path):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            texts.add(n.value)
        elif isinstance(n, ast.Name):
            texts |= facts.strings(n)
    return {t.rsplit("/", 1)[-1] for t in texts if "." in t.rsplit("/", 1)[-1]}


_ON_CPU_METHODS = {"cpu", "numpy", "tolist", "item"}
_PLAIN_CALLS = {"int", "float", "str", "bool", "len", "vars", "parse_args"}


def _on_cpu(facts: FileFacts, obj: ast.AST | None, depth: int = 0) -> bool:
    """Does ``obj`` (what a ``torch.save`` writes) hold nothing on a GPU: ``t.cpu()``, ``t.to("cpu")``, numbers, the
    parsed arguments, and dicts / lists of those?"""
    obj = facts.resolve(obj)
    if obj is None or depth > 4:
        return False
    if isinstance(obj, ast.Constant):
        return True
    if isinstance(obj, (ast.List, ast.Tuple, ast.Set)):
        return all(_on_cpu(facts, e, depth + 1) for e in obj.elts)
    if isinstance(obj, ast.Dict):
        return all(v is not None and _on_cpu(facts, v, depth + 1) for v in obj.values)
    if isinstance(obj, ast.DictComp):
        return _on_cpu(facts, obj.value, depth + 1)
    if isinstance(obj, ast.Call):
        name = last_name(obj)
        if isinstance(obj.func, ast.Attribute) and name in _ON_CPU_METHODS:
            return True
        if isinstance(obj.func, ast.Attribute) and name == "to" and obj.args:
            return "cpu" in facts.strings(obj.args[0])
        return name in _PLAIN_CALLS
    return False


def _saved_on_cpu(facts: FileFacts) -> dict[str, bool]:
    """File name -> does every ``torch.save`` of the file that writes it write CPU values (:func:`_on_cpu`)? One pass,
    memoised: dino's eval_knn.py dumps ``features.cpu()`` to ``trainfeat.pth`` and loads it back on every rank."""
    key = ("map_location", "saved")
    if key not in facts.cache:
        out: dict[str, bool] = {}
        for c in facts.calls():
            if facts.qual(c) == "torch.save":
                cpu = _on_cpu(facts, kwarg(c, "obj", 0))
                for name in _path_keys(facts, c, kwarg(c, "f", 1)):
                    out[name] = out.get(name, True) and cpu
        facts.cache[key] = out
    saved: dict[str, bool] = facts.cache[key]
    return saved


def _path_keys(facts: FileFacts, call: ast.Call, path: ast.AST | None) -> set[str]:
    """What names the file ``call`` saves or loads: the file names its path spells (:func:`_file_names`), and, for a
    path that is a plain name the file cannot spell (a parameter), that name in ``call``'s function: PixArt's
    ``get_null_embed(npz_file)`` loads ``npz_file`` when it exists and otherwise makes it with ``torch.save``."""
    keys = _file_names(facts, path)
    if isinstance(path, ast.Name) and not keys:
        keys = {f"{path.id}@{id(facts.scope_of(call))}"}
    return keys


def _reads_cpu_save(facts: FileFacts, call: ast.Call) -> bool:
    """Does ``call`` load a file that the same file saves only from the CPU?"""
    saved = _saved_on_cpu(facts)
    names = _path_keys(facts, call, kwarg(call, "f", 0)) if saved else set()
    return bool(names) and all(saved.get(n, False) for n in names)


_LIGHTNING_LOAD = "load_from_checkpoint"
_LIGHTNING_GPU = {"gpu", "cuda"}


def _lightning_ddp(facts: FileFacts) -> bool:
    """Does the file build a Lightning ``Trainer`` that runs the script once per GPU: ``accelerator="gpu"`` / ``"cuda"``
    with a ``strategy`` naming DDP, FSDP or DeepSpeed (not a ``*spawn*`` / ``*notebook*`` / ``*fork*`` one, where the
    parent alone runs the code before fit and the children get its model)?"""
    for c in facts.calls():
        if last_name(c) != "Trainer":
            continue
        accelerators = facts.strings(kwarg(c, "accelerator"))
        strategies = {s.lower() for s in facts.strings(kwarg(c, "strategy"))}
        if (
            accelerators & _LIGHTNING_GPU
            and strategies
            and all(any(k in s for k in ("ddp", "fsdp", "deepspeed")) for s in strategies)
            and not any(k in s for s in strategies for k in ("spawn", "notebook", "fork"))
        ):
            return True
    return False


def _unmapped_lightning_loads(facts: FileFacts) -> list[ast.Call]:
    """``Model.load_from_checkpoint(path)`` without ``map_location`` in a Lightning DDP/FSDP script, reached on every
    rank: Lightning hands torch.load no map_location while CUDA is available, so each process restores the
    checkpoint onto the GPU it was saved from (cuda:0) before the Trainer moves the model."""
    if not _lightning_ddp(facts):
        return []
    out = []
    for call in facts.calls():
        if last_name(call) != _LIGHTNING_LOAD or not isinstance(call.func, ast.Attribute):
            continue
        if _mapped_or_unknown(facts, call, "checkpoint_path"):
            continue
        if _loads_on_every_rank(facts, call):
            out.append(call)
    return out


def _mapped_or_unknown(facts: FileFacts, call: ast.Call, path: str) -> bool:
    """Does the load ``call`` give ``map_location`` (second positional or keyword), or hide its arguments
    (``*args`` / ``**kwargs``), or read a per-rank path (its ``path`` argument, first positional)?"""
    if kwarg(call, "map_location", 1) is not None or any(k.arg is None for k in call.keywords):
        return True
    return any(isinstance(a, ast.Starred) for a in call.args) or _per_rank_path(facts, kwarg(call, path, 0))


def unmapped_loads(facts: FileFacts) -> list[ast.Call]:
    """The calls FSD043 reports (see the module docstring): Lightning's ``load_from_checkpoint`` calls of that kind,
    then the ``torch.load`` calls, each in ``ast.walk`` order."""
    out = _unmapped_lightning_loads(facts)
    accelerate = any((facts.qual(c) or "").rsplit(".", 1)[-1] == "Accelerator" for c in facts.calls())
    if not (distributed_here(facts) or accelerate) or not _cuda_here(facts):  # Accelerate: one process per GPU too
        return out
    for call in facts.calls():
        if facts.qual(call) != TORCH_LOAD:
            continue
        if _mapped_or_unknown(facts, call, "f"):
            continue
        if _mapped_in_other_branch(facts, call) or _scheduler_state(facts, call) or _arguments_object(facts, call):
            continue
        if _reads_cpu_save(facts, call):
            continue
        if _loads_on_every_rank(facts, call):
            out.append(call)
    return out


@finder("FSD043")
def torch_load_without_map_location(facts: FileFacts) -> Found:
    """FSD043: ``torch.load`` without ``map_location`` on several ranks of a CUDA job."""
    for call in unmapped_loads(facts):
        lightning = last_name(call) == _LIGHTNING_LOAD
        yield call, "(load_from_checkpoint passes torch.load no map_location while CUDA is available)" if lightning else None
