"""Finders of the rules about framework calls and devices (FSD039, FSD041, FSD042, FSD044).

- FSD039: a framework save that is a collective under FSDP, made on some ranks only: Hugging Face
  ``trainer.save_model`` (when the file configures FSDP), ``accelerator.save_state`` / ``get_state_dict`` /
  ``save_model`` (same; ``save_state`` also when the file configures DeepSpeed, a ``DeepSpeedPlugin`` or
  ``DistributedType.DEEPSPEED``: it runs ``engine.save_checkpoint`` on each process), Lightning ``trainer.save_checkpoint`` / Fabric ``fabric.save`` (always: they end in a
  barrier), DeepSpeed ``engine.save_checkpoint`` (always: each rank writes its own states, then they meet in a
  barrier; the engine is what ``deepspeed.initialize(...)`` returns first, or a name with ``engine`` in it in a file
  that imports deepspeed), FSDP1 ``m.state_dict()`` inside ``FSDP.state_dict_type(m, FULL_STATE_DICT)`` where FSD006 does not
  already know ``m`` as FSDP1. A function of the file (module-level, a method, a nested one) that makes one of
  these calls counts as the call (``if rank == 0: save(trainer)``), and the trainer / accelerator / Fabric is
  followed through the functions of the file (a parameter, a helper's return value, a ``self.`` attribute).
- FSD041: a checkpoint written under a *local*-rank condition (``local_rank == 0``, ``LOCAL_RANK``,
  ``is_local_main_process``) to a path that does not name the node: every node's local rank 0 writes it. A call
  of a function of the file that saves (``save_checkpoint(state, is_best)``) counts, its path followed to what
  the call passes or the parameter's default.
- FSD042: the *global* rank (``dist.get_rank()``, ``RANK``, ``SLURM_PROCID``) used as a CUDA device index, in a
  program (it forms the process group, or is a script) that is not pinned to one node.
- FSD044: ``.generate()`` (or another inference method) of an FSDP1 root, or of its ``.module``, outside
  ``FSDP.summon_full_params``: the call bypasses the root's forward, so the root's own parameters stay sharded.

Each stays silent where the file cannot tell (a trainer of unknown kind, a rank of unknown origin).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from fsdp_skill.core.check import calls
from fsdp_skill.core.check.facts import FSDP1, FULLY_SHARD, FileFacts, dotted, kwarg, last_name
from fsdp_skill.core.check.finders import Found, finder
from fsdp_skill.core.check.rank_conditional import collective_kind

# --- what a name holds ---------------------------------------------------------------------------------


_FOLLOW = 3  # functions of the checked code followed to find what built an object (parameters, returns, self.)


def bound_call(facts: FileFacts, node: ast.AST, depth: int = 0) -> ast.Call | None:
    """The call ``node`` was last assigned from (``trainer = Trainer(...)``), following names a few steps and, as
    :mod:`~fsdp_skill.core.check.calls` follows wrapped modules, the functions of the checked code: a parameter to
    what the function's callers pass (``save_final(trainer)``), a helper's call to what the helper returns
    (``trainer = build_trainer(args)``), a ``self.`` attribute to what the class assigns it. None when unknown."""
    value = facts.resolve(node)
    if isinstance(value, ast.Call):
        target = calls.callee(facts, value) if depth < _FOLLOW else None
        if target is not None and target.fn is not None and target.fn.name != "__init__":
            for ret in facts.scope_nodes(target.fn):
                if isinstance(ret, ast.Return) and ret.value is not None and ret.value is not value:
                    got = bound_call(facts, ret.value, depth + 1)
                    if got is not None:
                        return got
        return value
    if depth >= _FOLLOW:
        return None
    if isinstance(value, ast.Name):
        return _passed_call(facts, value, depth)
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        cls = _enclosing_class(facts, value)
        for assigned in _attribute_values(facts).get(dotted(value) or "", []) + _unpacked_attributes(facts).get(
            dotted(value) or "", []
        ):
            if _enclosing_class(facts, assigned) is not cls:
                continue  # another class's self.x
            got = bound_call(facts, assigned, depth + 1)
            if got is not None:
                return got
    return None


def _unpacked_attributes(facts: FileFacts) -> dict[str, list[ast.expr]]:
    """Dotted attribute name -> the calls whose result is unpacked into it (``self.engine, self.opt, _, _ =
    deepspeed.initialize(...)``: ``self.engine`` -> that call); one pass, cached."""
    key = ("calls_rules", "unpacked_attributes")
    if key not in facts.cache:
        out: dict[str, list[ast.expr]] = {}
        for n in facts.nodes:
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
                for t in n.targets:
                    for el in t.elts if isinstance(t, (ast.Tuple, ast.List)) else []:
                        if isinstance(el, ast.Attribute) and (name := dotted(el)):
                            out.setdefault(name, []).append(n.value)
        facts.cache[key] = out
    found: dict[str, list[ast.expr]] = facts.cache[key]
    return found


def _passed_call(facts: FileFacts, name: ast.Name, depth: int) -> ast.Call | None:
    """For a parameter ``name``: the call that built what a caller of its function passes (:func:`bound_call`)."""
    _, b = facts.binding(name)
    scope = facts.scope_of(name)
    if b is None or b.kind != "param" or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for call, target in _call_sites(facts).get(id(scope), []):
        for i, arg in calls.bound_args(call, target):
            if target.summary.params[i] == name.id and (got := bound_call(facts, arg, depth + 1)) is not None:
                return got
    return None


def _call_sites(facts: FileFacts) -> dict[int, list[tuple[ast.Call, calls.Callee]]]:
    """id(function of this file) -> the calls of it (:func:`calls.callee`), with their resolution; memoised."""
    key = ("calls_rules", "call_sites")
    if key not in facts.cache:
        sites: dict[int, list[tuple[ast.Call, calls.Callee]]] = {}
        for c in facts.calls():
            target = calls.callee(facts, c)
            if target is not None and target.fn is not None:
                sites.setdefault(id(target.fn), []).append((c, target))
        facts.cache[key] = sites
    found: dict[int, list[tuple[ast.Call, calls.Callee]]] = facts.cache[key]
    return found


def _enclosing_class(facts: FileFacts, node: ast.AST) -> ast.ClassDef | None:
    return next((a for a in facts.ancestors(node) if isinstance(a, ast.ClassDef)), None)


def _class_based_on(facts: FileFacts, node: ast.AST, suffixes: tuple[str, ...]) -> bool:
    cls = _enclosing_class(facts, node)
    return cls is not None and any((last_name(b) or "").endswith(suffixes) for b in cls.bases)


def _imports_module(facts: FileFacts, *roots: str) -> bool:
    return any(full.split(".")[0] in roots for full in facts.aliases.values())


_LIGHTNING = ("lightning", "pytorch_lightning", "lightning_fabric")


def lightning_trainer(facts: FileFacts, recv: ast.AST) -> bool:
    """Is ``recv`` a Lightning ``Trainer`` (bound to one, ``self.trainer`` of a LightningModule / Callback, or the
    ``trainer`` a Callback hook receives) in a file that imports Lightning?"""
    if not _imports_module(facts, *_LIGHTNING):
        return False
    made = bound_call(facts, recv)
    if made is not None:
        q = facts.qual(made) or ""
        return q.split(".")[0] in _LIGHTNING and q.endswith("Trainer")
    name = dotted(recv) or ""
    return name in ("trainer", "self.trainer") and _class_based_on(
        facts, recv, ("LightningModule", "Callback", "ModelCheckpoint", "LightningDataModule")
    )


def _one_device(facts: FileFacts, recv: ast.AST) -> bool:
    """A trainer bound to ``Trainer(devices=1, ...)`` (one process: nothing to wait for)."""
    made = bound_call(facts, recv)
    devices = kwarg(made, "devices") if made is not None else None
    return isinstance(devices, ast.Constant) and devices.value == 1 and kwarg(made, "num_nodes") is None if made else False


def _fabric(facts: FileFacts, recv: ast.AST) -> bool:
    made = bound_call(facts, recv)
    if made is not None:
        q = facts.qual(made) or ""
        return q.split(".")[0] in _LIGHTNING and q.endswith("Fabric")
    return False


def _hf_trainer(facts: FileFacts, recv: ast.AST) -> bool:
    """A Hugging Face-style ``Trainer`` (bound to a ``...Trainer(...)`` call that is not Lightning's, or ``self`` in
    a subclass of one)."""
    made = bound_call(facts, recv)
    if made is not None:
        q = facts.qual(made) or ""
        return q.split(".")[0] not in _LIGHTNING and (last_name(made) or "").endswith("Trainer")
    return dotted(recv) == "self" and _class_based_on(facts, recv, ("Trainer",)) and not _imports_module(facts, *_LIGHTNING)


def deepspeed_engine(facts: FileFacts, recv: ast.AST) -> bool:
    """A DeepSpeed engine: bound (through names, parameters, helpers' returns, ``self.`` attributes, tuple unpacking)
    to ``deepspeed.initialize(...)``, or, where the file cannot show what built it, a name with ``engine`` in it
    (``model_engine``, ``self.engine``) in a file that imports deepspeed and not Lightning."""
    if not _imports_module(facts, "deepspeed"):
        return False
    made = bound_call(facts, recv)
    if made is not None:
        return facts.qual(made) == "deepspeed.initialize"
    return "engine" in (last_name(recv) or "").lower() and not _imports_module(facts, *_LIGHTNING)


def _accelerator(facts: FileFacts, recv: ast.AST) -> bool:
    made = bound_call(facts, recv)
    if made is not None:
        return (facts.qual(made) or "").endswith("Accelerator") and last_name(made) == "Accelerator"
    return (dotted(recv) or "").split(".")[-1] == "accelerator" and _imports_module(facts, "accelerate")


_FSDP_WORDS = ("FullyShardedDataParallelPlugin", "FSDP", "is_fsdp2", "fsdp_plugin")


def _configures_fsdp(facts: FileFacts) -> bool:
    """Does the file show it runs under FSDP: ``fsdp=`` / ``fsdp_config=`` given a value (TrainingArguments), an
    accelerate FSDP plugin, ``DistributedType.FSDP``, or FSDP1 / ``fully_shard`` itself?"""
    key = "configures_fsdp"
    if key not in facts.cache:
        found = facts.uses(FSDP1, FULLY_SHARD)
        for node in facts.nodes:
            if found:
                break
            if isinstance(node, ast.keyword) and node.arg in ("fsdp", "fsdp_config", "fsdp_plugin"):
                v = node.value
                found = not (isinstance(v, ast.Constant) and not v.value)
            elif isinstance(node, (ast.Name, ast.Attribute)):
                found = (last_name(node) or "") in _FSDP_WORDS
        facts.cache[key] = found
    return bool(facts.cache[key])


_DEEPSPEED_WORDS = ("DeepSpeedPlugin", "DEEPSPEED")


def _configures_deepspeed(facts: FileFacts) -> bool:
    """Does the file show accelerate runs under DeepSpeed: a ``DeepSpeedPlugin(...)``, ``deepspeed_plugin=`` given a
    value, or ``DistributedType.DEEPSPEED``?"""
    key = ("calls_rules", "configures_deepspeed")
    if key not in facts.cache:
        found = False
        for node in facts.nodes:
            if isinstance(node, ast.keyword) and node.arg == "deepspeed_plugin":
                found = not (isinstance(node.value, ast.Constant) and not node.value.value)
            elif isinstance(node, (ast.Name, ast.Attribute)):
                found = (last_name(node) or "") in _DEEPSPEED_WORDS
            if found:
                break
        facts.cache[key] = found
    return bool(facts.cache[key])


def _full_state_dict_context(facts: FileFacts, call: ast.Call) -> bool:
    """``recv.state_dict()`` inside ``with FSDP.state_dict_type(recv, StateDictType.FULL_STATE_DICT, ...)``."""
    recv = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
    if recv is None:
        return False
    for anc in facts.ancestors(call):
        if isinstance(anc, (ast.With, ast.AsyncWith)):
            for item in anc.items:
                ce = item.context_expr
                if isinstance(ce, ast.Call) and last_name(ce) == "state_dict_type" and ce.args:
                    kind = kwarg(ce, "state_dict_type", 1)
                    if dotted(ce.args[0]) == recv and last_name(kind or ce) == "FULL_STATE_DICT":
                        return True
    return False


_SAVE_METHODS = {"save_checkpoint", "save", "save_model", "save_state", "get_state_dict", "state_dict"}


def _names_called(facts: FileFacts) -> set[str]:
    """The method / function names the file calls (one pass, cached): the finders' cheap first test."""
    key = "called_names"
    if key not in facts.cache:
        facts.cache[key] = {name for c in facts.calls() if (name := last_name(c))}
    cached: set[str] = facts.cache[key]
    return cached


def framework_save(facts: FileFacts, call: ast.Call) -> str | None:
    """A label when ``call`` is a framework save that every rank must make (see the module docstring), else None."""
    if not isinstance(call.func, ast.Attribute):
        return None
    attr, recv = call.func.attr, call.func.value
    name = dotted(recv) or "..."
    if attr == "save_checkpoint" and lightning_trainer(facts, recv) and not _one_device(facts, recv):
        return f"{name}.save_checkpoint() (Lightning)"
    if attr == "save_checkpoint" and deepspeed_engine(facts, recv):
        return f"{name}.save_checkpoint() (DeepSpeed engine)"
    if attr == "save" and _fabric(facts, recv):
        return f"{name}.save() (Fabric)"
    if attr == "save_model" and _hf_trainer(facts, recv) and _configures_fsdp(facts):
        return f"{name}.save_model() (Hugging Face Trainer with FSDP)"
    if attr in ("save_state", "get_state_dict", "save_model") and _accelerator(facts, recv) and _configures_fsdp(facts):
        return f"{name}.{attr}() (accelerate with FSDP)"
    if attr == "save_state" and _accelerator(facts, recv) and _configures_deepspeed(facts):
        return f"{name}.save_state() (accelerate with DeepSpeed: engine.save_checkpoint on each process)"
    if (
        attr == "state_dict"
        and "state_dict_type" in _names_called(facts)
        and _full_state_dict_context(facts, call)
        and collective_kind(facts, call) is None
    ):
        return f"{name}.state_dict() under FULL_STATE_DICT (FSDP1)"
    return None


def _save_summaries(facts: FileFacts) -> dict[str, tuple[str, int]]:
    """Function key (``save``, ``Trainer.save``, :func:`calls.local_functions`) -> (label, line) of the framework
    save it makes, directly or through another function of the file (:func:`calls.callee`; a small fixpoint)."""
    funcs = calls.local_functions(facts)
    out: dict[str, tuple[str, int]] = {}
    for _ in range(4):
        known = len(out)
        for fname, fn in funcs.items():
            if fname in out:
                continue
            for node in facts.scope_nodes(fn):
                if not isinstance(node, ast.Call):
                    continue
                label = framework_save(facts, node)
                if label is not None:
                    out[fname] = (label, node.lineno)
                    break
                target = calls.callee(facts, node)
                if target is not None and target.key in out and target.key != fname:
                    out[fname] = out[target.key]
                    break
        if len(out) == known:
            break
    return out


def _save_via(facts: FileFacts, call: ast.Call) -> str | None:
    """The key of the function of the file that ``call`` runs and that makes a framework save (else None)."""
    target = calls.callee(facts, call)
    if target is None or target.key is None or target.fn is facts.scope_of(call):
        return None
    return target.key if target.key in _save_summaries_cached(facts) else None


def _unbalanced(facts: FileFacts, call: ast.Call, same: str) -> ast.stmt | None:
    """The rank condition under which only some ranks reach ``call``, unless the other ranks' path makes a call
    with the same label (``same``) too; None when every rank gets there."""
    branches = facts.rank_branches().get(id(call))
    if not branches:
        return None
    for branch in reversed(branches):  # innermost first

        def wanted(c: ast.Call) -> bool:
            return _label(facts, c) == same

        if not facts.other_branch_has(branch, call, wanted):
            return branch
    return None


def _label(facts: FileFacts, call: ast.Call) -> str | None:
    label = framework_save(facts, call)
    if label is None and (via := _save_via(facts, call)) is not None:
        label = _save_summaries_cached(facts)[via][0]
    return label


def _save_summaries_cached(facts: FileFacts) -> dict[str, tuple[str, int]]:
    key = "framework_save_summaries"
    if key not in facts.cache:
        facts.cache[key] = _save_summaries(facts)
    cached: dict[str, tuple[str, int]] = facts.cache[key]
    return cached


_SHARDED_BACKEND = ("deepspeed", "fsdp", "fully_sharded", "zero3", "zero_3", "megatron")


def _backend_lets_every_rank_in(facts: FileFacts, branch: ast.stmt, call: ast.Call) -> bool:
    """``if accelerator.distributed_type == DistributedType.DEEPSPEED or accelerator.is_main_process: save_state()``:
    the condition's other part names the sharded backend under which the save is every rank's work, and lets every
    rank in there; on the other backends one process saves a replicated model (the fix the frameworks' docs give)."""
    if not (isinstance(branch, ast.If) and isinstance(branch.test, ast.BoolOp) and isinstance(branch.test.op, ast.Or)):
        return False
    if facts.block_of(call, branch) != "body":
        return False
    for part in branch.test.values:
        if facts.is_rank_test(part):
            continue
        try:
            text = ast.unparse(part).lower()
        except (RecursionError, MemoryError, ValueError):
            continue
        if any(word in text for word in _SHARDED_BACKEND):
            return True
    return False


@finder("FSD039")
def framework_save_on_some_ranks(facts: FileFacts) -> Found:
    """FSD039: a framework save that is collective under FSDP (or always, for Lightning) on some ranks only."""
    if not _names_called(facts) & _SAVE_METHODS:
        return
    summaries = _save_summaries_cached(facts)
    for call in facts.calls():
        label = _label(facts, call)
        if label is None:
            continue
        branch = _unbalanced(facts, call, label)
        if branch is None or _backend_lets_every_rank_in(facts, branch, call):
            continue
        via = None if framework_save(facts, call) is not None else _save_via(facts, call)
        what = f"{via.replace('.<locals>.', '.')}(), which calls {label} at line {summaries[via][1]}," if via else label
        yield call, f"{what} runs only on some ranks (rank condition at line {branch.lineno})"


# --- local or global rank ---------------------------------------------------------------------------------

_LOCAL_ENV = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK"}
_GLOBAL_ENV = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}
_GLOBAL_GETTERS = {"get_rank", "get_global_rank"}


def _env_name(facts: FileFacts, node: ast.AST) -> str | None:
    """``"RANK"`` of ``os.environ["RANK"]`` / ``os.environ.get("RANK", 0)`` / ``os.getenv("RANK")``."""
    if isinstance(node, ast.Subscript) and facts.qual(node.value) == "os.environ":
        key = node.slice
    elif isinstance(node, ast.Call) and facts.qual(node) in ("os.environ.get", "os.getenv") and node.args:
        key = node.args[0]
    else:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def rank_kind(facts: FileFacts, node: ast.AST, depth: int = 0) -> str | None:
    """'global' when ``node`` is this process's global rank (``dist.get_rank()``, ``int(os.environ["RANK"])``, a
    name assigned from one), 'local' when it is the rank on this node (``LOCAL_RANK``, ``local_rank``,
    ``accelerator.local_process_index``), None when the file cannot tell (a parameter named ``rank`` may be
    ``mp.spawn``'s local index)."""
    if depth > 6:
        return None
    env = _env_name(facts, node)
    if env is not None:
        return "local" if env in _LOCAL_ENV else "global" if env in _GLOBAL_ENV else None
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in ("int", "str") and node.args:
            return rank_kind(facts, node.args[0], depth + 1)
        name = last_name(node) or ""
        if name in _GLOBAL_GETTERS and (facts.qual(node) or "").startswith("torch.distributed."):
            return None if node.args or node.keywords else "global"  # get_rank(group): the rank in that group
        if name == "get_node_local_rank" or name == "get_local_rank" and not (node.args or node.keywords):
            return "local"  # get_local_rank(ParallelMode.DATA) (ColossalAI): the rank in a group, not on the node
        return _returned_kind(facts, node, None, depth)
    if isinstance(node, ast.Name):
        value = facts.resolve(node)
        position = _unpacked_position(facts, node, value)
        if position is not None:  # rank, local_rank, world = setup(): that element of what the helper returns
            assert isinstance(value, ast.Call)
            return _returned_kind(facts, value, position, depth)
        if value is not None and value is not node:
            return rank_kind(facts, value, depth + 1)
        _, b = facts.binding(node)
        if b is not None and b.kind == "param" and "local" in node.id.lower():
            return _passed_kind(facts, node, depth)
        return None
    if isinstance(node, ast.Attribute):
        attr = node.attr.lower()
        if "local" in attr and ("rank" in attr or "process_index" in attr):
            return "local"
        return _attribute_kind(facts, node, depth)
    return None


def _unpacked_position(facts: FileFacts, name: ast.Name, value: ast.AST | None) -> int | None:
    """The position of ``name`` in the tuple target it was last bound by, when that assignment unpacks a call
    (``rank, local_rank, world = setup()``: 1 for ``local_rank``); None otherwise (a starred target included)."""
    if not isinstance(value, ast.Call):
        return None
    assign = facts.parents.get(id(value))
    if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Tuple)):
        return None
    elts = assign.targets[0].elts
    if any(isinstance(e, ast.Starred) for e in elts):
        return None
    found = [i for i, e in enumerate(elts) if isinstance(e, ast.Name) and e.id == name.id]
    return found[0] if len(found) == 1 else None


def _passed_kind(facts: FileFacts, param: ast.Name, depth: int) -> str | None:
    """The kind of a parameter named like a local rank (``local_rank``): 'local' unless a call of its function in
    the checked code passes it something else (Show-o's data helpers take ``local_rank`` and are given
    ``accelerator.process_index``, the global rank); None then, the name alone not being the value."""
    fn = facts.scope_of(param)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "local"
    memo: dict[tuple[int, str], str | None] = facts.cache.setdefault(("calls_rules", "passed-kind"), {})
    key = (id(fn), param.id)
    if key in memo:
        return memo[key]
    memo[key] = "local"  # a recursion back here: the name's word
    kinds = {rank_kind(facts, arg, depth + 1) for _, arg in calls.arguments_for(facts, fn, param.id)}
    memo[key] = "local" if kinds <= {"local"} else None
    return memo[key]


def _returned_kind(facts: FileFacts, call: ast.Call, position: int | None, depth: int) -> str | None:
    """The rank kind of what a function of the file returns to ``call`` (the element at ``position`` of a returned
    tuple, or the whole value), when every ``return`` of it agrees; None for a library call or any disagreement."""
    target = calls.callee(facts, call)
    if target is None or target.fn is None or depth > 4:
        return None
    kinds = set()
    for node in facts.scope_nodes(target.fn):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value: ast.AST = node.value
        if position is not None:
            if not isinstance(value, ast.Tuple) or len(value.elts) <= position:
                return None
            value = value.elts[position]
        kinds.add(rank_kind(facts, value, depth + 1))
    return kinds.pop() if len(kinds) == 1 else None


def _attribute_kind(facts: FileFacts, node: ast.Attribute, depth: int) -> str | None:
    """The kind of every value assigned to this attribute in the file (``self.rank = dist.get_rank()``), when they
    all agree."""
    name = dotted(node)
    if name is None:
        return None
    kinds = {rank_kind(facts, value, depth + 1) for value in _attribute_values(facts).get(name, [])}
    return kinds.pop() if len(kinds) == 1 else None


def _attribute_values(facts: FileFacts) -> dict[str, list[ast.expr]]:
    """Dotted attribute name (``self.rank``) -> the values assigned to it anywhere in the file (one pass, cached)."""
    key = "attribute_values"
    if key not in facts.cache:
        out: dict[str, list[ast.expr]] = {}
        for n in facts.nodes:
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Attribute) and (name := dotted(t)):
                        out.setdefault(name, []).append(n.value)
        facts.cache[key] = out
    cached: dict[str, list[ast.expr]] = facts.cache[key]
    return cached


def condition_kind(facts: FileFacts, test: ast.AST) -> str | None:
    """'local' when a rank test selects by local rank only (``local_rank == 0``, ``is_local_main_process``),
    'global' when it names the global rank, None otherwise."""
    kinds: set[str] = set()
    for n in ast.walk(test):
        if isinstance(n, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            name = (last_name(n) or "").lower() if isinstance(n, (ast.Name, ast.Attribute, ast.Call)) else ""
            if name.startswith(("is_local_", "local_main", "local_master")):
                kinds.add("local")
                continue
            if facts.is_main_predicate(n):
                kinds.add("global")
                continue
            k = rank_kind(facts, n)
            if k is not None:
                kinds.add(k)
            elif isinstance(n, (ast.Name, ast.Attribute)) and facts.is_rank_expr(n) and "local" not in name:
                kinds.add("global")
    if "global" in kinds:
        return "global"
    return "local" if kinds else None


# --- FSD041 ---------------------------------------------------------------------------------------------

_NODE_WORDS = ("node", "host", "machine", "group_rank")


def _saves(facts: FileFacts, call: ast.Call) -> ast.expr | None:
    """The path argument of a checkpoint write (``torch.save(obj, path)``, ``m.save_pretrained(path)``,
    ``safetensors.torch.save_file(sd, path)``, ``accelerator.save(obj, path)``), else None."""
    q = facts.qual(call) or ""
    if q == "torch.save":
        return kwarg(call, "f", 1)
    if q == "safetensors.torch.save_file":
        return kwarg(call, "filename", 1)
    if isinstance(call.func, ast.Attribute):
        if call.func.attr == "save_pretrained":
            return kwarg(call, "save_directory", 0)
        if call.func.attr == "save" and _accelerator(facts, call.func.value):
            return kwarg(call, "f", 1)
    return None


def _names_the_node(facts: FileFacts, path: ast.AST) -> bool:
    """Does the path expression depend on the node (a global rank, a node rank, the host name) or sit on a
    node-local disk (``/tmp``, ``tempfile``)? Followed through names a few steps."""
    todo, seen = [path], 0
    while todo and seen < 12:
        node, seen = todo.pop(), seen + 1
        for n in ast.walk(node):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith(("/tmp", "/dev/shm")):
                return True
            if isinstance(n, (ast.Name, ast.Attribute, ast.Call)):
                text = (dotted(n.func if isinstance(n, ast.Call) else n) or "").lower()
                if any(w in text for w in _NODE_WORDS) or "tempfile" in (facts.qual(n) or ""):
                    return True
                if rank_kind(facts, n) == "global" or isinstance(n, ast.Call) and last_name(n) == "gethostname":
                    return True
            if isinstance(n, ast.Name) and (value := facts.resolve(n)) is not n and value is not None:
                todo.append(value)
            elif isinstance(n, ast.Name):
                _, b = facts.binding(n)
                if b is not None and b.kind == "with" and b.value is not None:
                    todo.append(b.value)  # with tempfile.TemporaryDirectory() as d
    return False


@finder("FSD041")
def local_rank_save_to_shared_path(facts: FileFacts) -> Found:
    """FSD041: a checkpoint written under a local-rank-only condition to a path that does not name the node."""
    if not _names_called(facts) & {"save", "save_pretrained", "save_file"}:
        return
    branches = facts.rank_branches()
    for call in facts.calls():
        path = _saves(facts, call)
        if path is None:
            continue
        enclosing = [b for b in branches.get(id(call), []) if isinstance(b, ast.If)]
        kinds = {condition_kind(facts, b.test) for b in enclosing}
        if not enclosing or kinds != {"local"} or _names_the_node(facts, path):
            continue
        if _only_called_on_global_main(facts, call, branches):
            continue
        yield call, f"written under the local-rank condition at line {enclosing[-1].lineno}"
    yield from _helper_saves_under_local_rank(facts, branches)


def _helper_saves_under_local_rank(facts: FileFacts, branches: dict[int, list[ast.stmt]]) -> Found:
    """A call of a function of the file that writes a checkpoint (``save_checkpoint(state, is_best)``), made under a
    local-rank condition, where the helper's path does not name the node: the path expression itself, or for a
    parameter what the call passes (or the parameter's default)."""
    for call in facts.calls():
        enclosing = [b for b in branches.get(id(call), []) if isinstance(b, ast.If)]
        if not enclosing or {condition_kind(facts, b.test) for b in enclosing} != {"local"}:
            continue
        target = calls.callee(facts, call)
        fn = target.fn if target is not None else None
        if target is None or fn is None or facts.scope_of(call) is fn:
            continue
        for save in facts.calls(fn):
            path = _saves(facts, save)
            if path is None or facts.scope_of(save) is not fn or branches.get(id(save)):
                continue  # a save of a nested function, or one the helper guards itself
            given = _path_given(facts, fn, target, call, path)
            if given is None or _names_the_node(facts, given):
                continue
            yield (
                call,
                (
                    f"{target.summary.name}() writes a checkpoint (line {save.lineno}) and is called under the local-rank "
                    f"condition at line {enclosing[-1].lineno}"
                ),
            )
            break


def _path_given(facts: FileFacts, fn: ast.AST, target: calls.Callee, call: ast.Call, path: ast.expr) -> ast.expr | None:
    """The expression the helper's save path takes at this call: the argument bound to a parameter named as the whole
    path, else that parameter's default; the path itself when it names no parameter. None when unknown (``**kw``)."""
    value = facts.resolve(path)
    if not isinstance(value, ast.Name):
        return path
    _, b = facts.binding(value)
    if b is None or b.kind != "param" or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return path
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    params = target.summary.params
    for i, arg in calls.bound_args(call, target):
        if params[i] == value.id:
            return arg
    positional = fn.args.posonlyargs + fn.args.args
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(fn.args.defaults) :]], fn.args.defaults, strict=True))
    defaults.update({a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d is not None})
    return defaults.get(value.id)


def _only_called_on_global_main(facts: FileFacts, node: ast.AST, branches: dict[int, list[ast.stmt]]) -> bool:
    """Is the function holding ``node`` called in this file, and every call of it under a global-rank condition
    (``if accelerator.is_main_process: self.save(...)``)? Then only the global rank 0 reaches the save."""
    scope = facts.scope_of(node)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    sites = [c for c in facts.calls() if last_name(c.func) == scope.name and facts.scope_of(c) is not scope]
    return bool(sites) and all(
        any(isinstance(b, ast.If) and condition_kind(facts, b.test) == "global" for b in branches.get(id(c), [])) for c in sites
    )


# --- FSD042 ---------------------------------------------------------------------------------------------


def _single_node(facts: FileFacts) -> bool:
    """Is the script pinned to one node: ``mp.spawn`` / ``torch.multiprocessing.start_processes``, or
    ``MASTER_ADDR`` set to localhost, or ``--standalone`` in its text?"""
    for n in facts.nodes:
        if (
            isinstance(n, ast.Call)
            and (facts.qual(n) or "").startswith("torch.multiprocessing.")
            and last_name(n)
            in (
                "spawn",
                "start_processes",
            )
        ):
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in ("localhost", "127.0.0.1"):
            return True
    return False


_DEVICE_CALLS = {"set_device", "device", "to", "cuda"}


def _device_index_args(facts: FileFacts, call: ast.Call) -> Iterator[ast.AST]:
    """The expressions a call uses as a CUDA device index."""
    q, name = facts.qual(call) or "", last_name(call) or ""
    if q in ("torch.cuda.set_device", "torch.cuda.device") and call.args:
        yield call.args[0]
    elif q == "torch.device":
        if len(call.args) > 1 and "cuda" in facts.strings(call.args[0]):
            yield call.args[1]
        elif call.args and isinstance(call.args[0], ast.JoinedStr):
            yield from _fstring_index(call.args[0])
    elif name in ("to", "cuda") and isinstance(call.func, ast.Attribute) and call.args:
        arg = call.args[0]
        if name == "cuda" or not isinstance(arg, ast.JoinedStr):
            yield arg
        else:
            yield from _fstring_index(arg)
    devs = kwarg(call, "device_ids")
    if isinstance(devs, (ast.List, ast.Tuple)) and len(devs.elts) == 1:
        yield devs.elts[0]
    dev = kwarg(call, "device_id") if q == FSDP1 else None
    if dev is not None:
        yield dev


def _fstring_index(s: ast.JoinedStr) -> Iterator[ast.AST]:
    """``rank`` of ``f"cuda:{rank}"``."""
    if len(s.values) == 2 and isinstance(s.values[0], ast.Constant) and str(s.values[0].value) == "cuda:":
        part = s.values[1]
        if isinstance(part, ast.FormattedValue):
            yield part.value


def _launched_here(facts: FileFacts) -> bool:
    """Is the file a program that forms the process group (``init_process_group``) or a script
    (``if __name__ == "__main__":``)? A library function may be meant for one node; the launch tells."""
    return "init_process_group" in _names_called(facts) or any(
        isinstance(n, ast.If)
        and isinstance(n.test, ast.Compare)
        and isinstance(n.test.left, ast.Name)
        and n.test.left.id == "__name__"
        for n in facts.tree.body
    )


def _global_rank_source(facts: FileFacts) -> bool:
    """Does the file read a global rank at all (``get_rank()``, ``RANK`` / ``SLURM_PROCID`` / ... in a string)?"""
    return bool(_names_called(facts) & _GLOBAL_GETTERS) or any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in _GLOBAL_ENV for n in facts.nodes
    )


def _spawned(facts: FileFacts, node: ast.AST) -> bool:
    """Inside a function decorated by a spawning test harness (fairscale's ``@torch_spawn([2])``): one node."""
    return any(
        isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any("spawn" in (last_name(d) or "").lower() for d in anc.decorator_list)
        for anc in facts.ancestors(node)
    )


@finder("FSD042")
def global_rank_as_device(facts: FileFacts) -> Found:
    """FSD042: the global rank used as a CUDA device index in a script not pinned to one node."""
    if not _global_rank_source(facts) or not _launched_here(facts):
        return
    single: bool | None = None  # computed on the first hit only
    for call in facts.calls():
        if last_name(call) not in _DEVICE_CALLS and not call.keywords:
            continue
        for arg in _device_index_args(facts, call):
            if rank_kind(facts, arg) == "global" and not _spawned(facts, call):
                single = _single_node(facts) if single is None else single
                if single:
                    return
                yield call, f"{ast.unparse(arg)} is the global rank"
                break


# --- FSD044 ---------------------------------------------------------------------------------------------

_INFERENCE_METHODS = {"generate", "sample", "greedy_search", "beam_search", "encode", "decode", "embed"}


def _no_shard(facts: FileFacts) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "NO_SHARD" for n in facts.nodes)


def _summoned(facts: FileFacts, call: ast.Call) -> bool:
    """Inside ``with FSDP.summon_full_params(...)`` (or ``model.summon_full_params(...)``)?"""
    return any(
        isinstance(anc, (ast.With, ast.AsyncWith))
        and any(_summon_call(facts, facts.resolve(it.context_expr)) for it in anc.items)
        for anc in facts.ancestors(call)
    )


def _summon_call(facts: FileFacts, node: ast.AST | None) -> bool:
    """``FSDP.summon_full_params(...)``, also as one side of ``a if c else b`` (``context = FSDP.summon_full_params(m)
    if fsdp else nullcontext()``) and as what a lambda called there returns (``ctx = lambda: (FSDP.summon_full_params(m)
    if fsdp else nullcontext())`` ... ``with ctx():``, direct-preference-optimization's trainer)."""
    if isinstance(node, ast.IfExp):
        return _summon_call(facts, facts.resolve(node.body)) or _summon_call(facts, facts.resolve(node.orelse))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
        made = facts.resolve(node.func)
        if isinstance(made, ast.Lambda):
            return _summon_call(facts, facts.resolve(made.body))
    return isinstance(node, ast.Call) and last_name(node) == "summon_full_params"


@finder("FSD044")
def fsdp1_generate_without_summon(facts: FileFacts) -> Found:
    """FSD044: ``.generate()`` (an inference method other than forward) of an FSDP1 root outside ``summon_full_params``."""
    if not facts.fsdp1 or not _names_called(facts) & _INFERENCE_METHODS or _no_shard(facts):
        return
    for call in facts.calls():
        if not (isinstance(call.func, ast.Attribute) and call.func.attr in _INFERENCE_METHODS):
            continue
        recv = call.func.value
        root = recv.value if isinstance(recv, ast.Attribute) and recv.attr == "module" else recv
        if isinstance(root, (ast.Name, ast.Attribute)) and facts.is_fsdp1(root) and not _summoned(facts, call):
            yield call, f"{dotted(recv) or '...'}.{call.func.attr}() of an FSDP1 root"
