"""The finders of the rules other than the rank-conditional ones: each yields (node, detail or None).

Ordering rules (FSD001, FSD002, FSD015, FSD020, FSD029) compare two calls of one function body by source
position, on the same variable binding (see :class:`fsdp_skill.core.check.facts.Chain`); calls in the two
branches of one ``if`` are never ordered against each other.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from fsdp_skill.core.check import calls, frozen
from fsdp_skill.core.check.facts import (
    FSDP1,
    FULLY_SHARD,
    Chain,
    FileFacts,
    Located,
    dotted,
    end,
    is_true,
    kwarg,
    last_name,
    start,
)

Found = Iterator[tuple[Located, str | None]]  # (the node to report, a detail for the message or None)
Finder = Callable[[FileFacts], Found]
FINDERS: dict[str, Finder] = {}  # rule code -> its finder (the rank-conditional rules are found by rank_findings)

_PARAM_METHODS = {"parameters", "named_parameters"}
_LOW = {"bfloat16", "float16", "half", "bf16", "fp16"}


def finder(code: str) -> Callable[[Finder], Finder]:
    """Register the decorated function as the finder of rule ``code`` in :data:`FINDERS`."""

    def deco(fn: Finder) -> Finder:
        FINDERS[code] = fn
        return fn

    return deco


def _is_optimizer(facts: FileFacts, call: ast.Call) -> bool:
    q = facts.qual(call) or ""
    tail = q.rsplit(".", 1)[-1]
    return (
        q.startswith("torch.optim.") and q.count(".") == 2 and tail[:1].isupper() and tail != "Optimizer"
    ) or q == "torch.distributed.optim.ZeroRedundancyOptimizer"


def _param_sources(facts: FileFacts, expr: ast.AST | None, depth: int = 0) -> list[Chain]:
    """Chains of the modules whose ``.parameters()`` / ``.named_parameters()`` feed ``expr`` (following names)."""
    if expr is None or depth > 4:
        return []
    out = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _PARAM_METHODS:
            c = facts.chain(node.func.value)
            if c:
                out.append(c)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            _, b = facts.binding(node)
            if b is not None and b.kind == "assign" and b.value is not None:
                out += _param_sources(facts, b.value, depth + 1)
                lists = b.value.elts if isinstance(b.value, ast.Tuple) else [b.value]  # decay, no_decay = [], []
                if all(isinstance(v, ast.List) for v in lists):  # decay = [] filled in a loop over a module's parameters
                    out += _appended_sources(facts, node, depth + 1)
    return out


def _appended_sources(facts: FileFacts, name: ast.Name, depth: int) -> list[Chain]:
    """Chains of the modules over whose parameters a loop fills the list ``name`` (``for n, p in
    model.named_parameters(): decay.append(p)``, also ``(no_decay if c else decay).append(p)``): the param groups
    an optimizer is commonly given. Only appends to that same variable, inside a ``for`` of its function."""
    scope = facts.scope_of(name)
    variable = facts.binding(name)[0]
    out: list[Chain] = []
    for node in facts.scope_nodes(scope):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "extend")):
            continue
        recv = node.func.value
        receivers = [recv.body, recv.orelse] if isinstance(recv, ast.IfExp) else [recv]
        if not any(isinstance(r, ast.Name) and r.id == name.id and facts.binding(r)[0] == variable for r in receivers):
            continue
        for anc in facts.ancestors(node):
            if anc is scope:
                break
            if isinstance(anc, (ast.For, ast.AsyncFor)):
                out += _param_sources(facts, anc.iter, depth + 1)
    return out


def _wraps(facts: FileFacts, apis: set[str]) -> list[tuple[ast.Call, Chain]]:
    """Calls of ``apis`` with the chain of each module they wrap (a list argument: each element)."""
    key = ("wraps", frozenset(apis))
    if key in facts.cache:
        cached: list[tuple[ast.Call, Chain]] = facts.cache[key]
        return cached
    out: list[tuple[ast.Call, Chain]] = []
    facts.cache[key] = out
    for call in facts.calls():
        if facts.qual(call) in apis and call.args:
            arg = call.args[0]
            for el in arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]:
                c = facts.chain(el)
                if c:
                    out.append((call, c))
    for call, arg in calls.helper_wraps(facts, apis):  # apply_fsdp(model), whose body wraps or shards model
        c = facts.chain(arg)
        if c:
            out.append((call, c))
    return out


def _ordered(facts: FileFacts, first: ast.expr, later: ast.expr) -> bool:
    """Does ``first`` end before ``later`` starts, in the same function body and not in the other branch of an ``if``?"""
    return facts.scope_of(first) is facts.scope_of(later) and end(first) <= start(later) and not facts.exclusive(first, later)


def _optimizer_sources(facts: FileFacts, call: ast.Call) -> list[Chain]:
    """The modules whose parameters the optimizer ``call`` builds from: a torch optimizer's ``params``, or the
    receiver of ``model.configure_optimizers(...)`` (nanoGPT and its forks build the AdamW there)."""
    if _is_optimizer(facts, call):
        return _param_sources(facts, kwarg(call, "params", 0))
    if isinstance(call.func, ast.Attribute) and call.func.attr == "configure_optimizers":
        c = facts.chain(call.func.value)
        return [c] if c else []
    return _helper_optimizer_sources(facts, call)


def _helper_optimizer_sources(facts: FileFacts, call: ast.Call) -> list[Chain]:
    """For a call of a function of the file that returns an optimizer built from the parameters of one of its own
    parameters (``def build_optimizer(model, lr): return AdamW(model.parameters(), lr)``): the chain of what the call
    passes for it (and below it: ``model.head`` of the argument ``model``). [] for anything else."""
    target = calls.callee(facts, call)
    if target is None or target.fn is None:
        return []
    fn, params = target.fn, target.summary.params
    given = dict(calls.bound_args(call, target))
    out: list[Chain] = []
    for node in facts.scope_nodes(fn):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = facts.resolve(node.value)
        if not (isinstance(value, ast.Call) and _is_optimizer(facts, value)):
            continue
        for src in _param_sources(facts, kwarg(value, "params", 0)):
            scope, name, index = src.root
            if scope != id(fn) or index != 0 or name not in params:  # not one of its parameters, as it came in
                continue
            arg = given.get(params.index(name))
            outer = facts.chain(arg) if arg is not None else None
            if outer is not None:
                out.append(Chain(outer.root, outer.parts + src.parts))
    return out


def _given(facts: FileFacts, wrap: ast.Call, optimizer: ast.Call) -> bool:
    """Is the optimizer built by ``optimizer`` passed to the wrapping call ``wrap`` (``parallelize(model, cfg, opt)``)?
    A helper given the optimizer can rebuild it or point it at the sharded parameters, so the order tells nothing."""
    for arg in [*wrap.args, *(k.value for k in wrap.keywords)]:
        if isinstance(arg, ast.Name) and isinstance(arg.ctx, ast.Load):
            _, b = facts.binding(arg)
            if b is not None and b.value is optimizer:
                return True
    return _closure_gives(facts, wrap, optimizer)


def _closure_gives(facts: FileFacts, wrap: ast.Call, optimizer: ast.Call) -> bool:
    """Is ``wrap`` a call of a nested function of the checked code that hands the optimizer, a variable of the
    enclosing function it closes over, to a call of its own (``def update(m): parallelize_model(m, cfg, opt)``)?"""
    target = calls.callee(facts, wrap)
    holder = facts.parents.get(id(optimizer))
    if target is None or target.fn is None or not isinstance(holder, ast.Assign):
        return False
    names = {t.id for t in holder.targets if isinstance(t, ast.Name)}
    outer = id(facts.scope_of(holder))
    return any(
        isinstance(arg, ast.Name) and arg.id in names and facts._variable_key(arg) == (outer, arg.id)
        for node in facts.scope_nodes(target.fn)
        if isinstance(node, ast.Call)
        for arg in [*node.args, *(k.value for k in node.keywords)]
    )


def _optimizer_before(facts: FileFacts, api: str) -> Found:
    wraps = _wraps(facts, {api})
    for call in facts.calls():
        for src in _optimizer_sources(facts, call):
            hit = next(
                (
                    (w, c)
                    for w, c in wraps
                    if (src.covers(c) or c.covers(src)) and _ordered(facts, call, w) and not _given(facts, w, call)
                ),
                None,
            )
            if hit:
                yield call, None if hit[0].lineno is None else f"(wrapped at line {hit[0].lineno})"
                break


@finder("FSD001")
def optimizer_before_fully_shard(facts: FileFacts) -> Found:
    """FSD001: an optimizer built from a module's parameters before ``fully_shard`` of that module."""
    yield from _optimizer_before(facts, FULLY_SHARD)
    yield from _constructor_optimizer_before(facts, FULLY_SHARD)


@finder("FSD002")
def optimizer_before_fsdp1_wrap(facts: FileFacts) -> Found:
    """FSD002: an optimizer built from a module's parameters before ``FSDP(...)`` wraps it."""
    yield from _optimizer_before(facts, FSDP1)
    yield from _constructor_optimizer_before(facts, FSDP1)


# --- the Trainer shape: the optimizer built in __init__, the model wrapped in a later method ------------------


Methods = dict[str, ast.FunctionDef | ast.AsyncFunctionDef]  # a class's methods by name


def _constructor_optimizer_before(facts: FileFacts, api: str) -> Found:
    """An optimizer built in a class's ``__init__`` from a ``self.`` module (``self.optimizer =
    AdamW(self.model.parameters())``, through a helper or a method returning it, or
    ``self.model.configure_optimizers(...)``) that another method of the class wraps or shards later
    (``def setup(self): self.model = FSDP(self.model)``): ``__init__`` runs first. Silent when ``__init__`` calls that
    method (directly or through other methods) before building the optimizer, when any other method of the class
    builds an optimizer of the same module (it is rebuilt), and when the wrap is given the optimizer."""
    wraps = [(w, name) for w, name in _self_wraps(facts, {api})]
    if not wraps:
        return
    for cls in (n for n in facts.tree.body if isinstance(n, ast.ClassDef)):
        methods = {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        init = methods.get("__init__")
        if init is None:
            continue
        for call in (n for n in facts.scope_nodes(init) if isinstance(n, ast.Call)):
            built = _self_optimizer_sources(facts, call, methods)
            hit = next(
                (
                    (w, m)
                    for w, name in wraps
                    if (m := _method_of(facts, w, methods)) is not None
                    and m is not init
                    and any(_related(name, b) for b in built)
                    and not _reached_before(facts, init, call, m, methods)
                    and not _rebuilt(facts, methods, {id(init), id(_builder(call, methods))}, built)
                    and not _given(facts, w, call)
                ),
                None,
            )
            if hit is not None:
                yield call, f"(wrapped at line {hit[0].lineno}, in {cls.name}.{hit[1].name}(), which runs after __init__)"


def _self_wraps(facts: FileFacts, apis: set[str]) -> list[tuple[ast.Call, str]]:
    """(wrapping call, dotted ``self.`` name of the module it wraps) for ``FSDP(self.model)`` / ``fully_shard(self.model)``
    and the helpers of the file that wrap their argument."""
    out = [
        (c, name)
        for c in facts.calls()
        if facts.qual(c) in apis and c.args and (name := dotted(c.args[0]) or "").startswith("self.")
    ]
    out += [(c, name) for c, arg in calls.helper_wraps(facts, apis) if (name := dotted(arg) or "").startswith("self.")]
    return out


def _self_optimizer_sources(facts: FileFacts, call: ast.Call, methods: Methods) -> set[str]:
    """Dotted ``self.`` names of the modules whose parameters the optimizer ``call`` is built from: a torch optimizer,
    ``self.model.configure_optimizers(...)``, a function of the file given ``self.model``, or a method of the class
    (``self.build_optimizer()``) returning an optimizer of a ``self.`` module. Empty for anything else."""
    if _is_optimizer(facts, call):
        return {n for o in _param_owners(facts, kwarg(call, "params", 0)) if (n := dotted(o) or "").startswith("self.")}
    if isinstance(call.func, ast.Attribute) and call.func.attr == "configure_optimizers":
        name = dotted(call.func.value) or ""
        return {name} if name.startswith("self.") and name != "self" else set()
    if isinstance(call.func, ast.Attribute) and dotted(call.func.value) == "self" and call.func.attr in methods:
        method = methods[call.func.attr]
        return {
            n
            for r in facts.scope_nodes(method)
            if isinstance(r, ast.Return) and isinstance(value := facts.resolve(r.value), ast.Call) and value is not call
            for n in (_self_optimizer_sources(facts, value, {}) if _is_optimizer(facts, value) else set())
        }
    target = calls.callee(facts, call)
    if target is None or target.fn is None:
        return set()
    sources = _helper_optimizer_sources(facts, call)
    given = [dotted(arg) or "" for _, arg in calls.bound_args(call, target)]
    return {g for g in given if g.startswith("self.")} if sources else set()


def _related(a: str, b: str) -> bool:
    """Is one of the dotted names ``a``, ``b`` the other or a part of it (``self.model`` and ``self.model.head``)?"""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _method_of(facts: FileFacts, node: ast.AST, methods: Methods) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The method of ``methods`` whose body holds ``node``, else None."""
    wanted = {id(m): m for m in methods.values()}
    return next((wanted[id(a)] for a in facts.ancestors(node) if id(a) in wanted), None)


def _self_calls(facts: FileFacts, fn: ast.AST, methods: Methods) -> list[tuple[ast.Call, ast.AST]]:
    """(call, method) for each ``self.m(...)`` in ``fn`` of a method ``m`` of ``methods``."""
    return [
        (n, methods[n.func.attr])
        for n in facts.scope_nodes(fn)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and dotted(n.func.value) == "self"
        and n.func.attr in methods
    ]


def _reached_before(facts: FileFacts, init: ast.AST, call: ast.Call, method: ast.AST, methods: Methods) -> bool:
    """Does ``__init__`` run ``method`` (through ``self.`` calls, a few methods deep) before ``call``?"""
    todo = [m for c, m in _self_calls(facts, init, methods) if start(c) < start(call)]
    seen: set[int] = set()
    while todo:
        m = todo.pop()
        if m is method:
            return True
        if id(m) in seen or len(seen) > 16:
            continue
        seen.add(id(m))
        todo += [n for _, n in _self_calls(facts, m, methods)]
    return False


def _builder(call: ast.Call, methods: Methods) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The method ``self.m(...)`` of ``methods`` that ``call`` runs, else None."""
    func = call.func
    return methods.get(func.attr) if isinstance(func, ast.Attribute) and dotted(func.value) == "self" else None


def _rebuilt(facts: FileFacts, methods: Methods, skip: set[int], built: set[str]) -> bool:
    """Does a method (other than those of ``skip``: ``__init__``, the method that built the optimizer there) build an
    optimizer of one of the ``built`` modules (again)?"""
    return any(
        isinstance(n, ast.Call) and any(_related(a, b) for a in _self_optimizer_sources(facts, n, {}) for b in built)
        for m in methods.values()
        if id(m) not in skip
        for n in facts.scope_nodes(m)
    )


@finder("FSD011")
def plain_grad_scaler_with_fsdp(facts: FileFacts) -> Found:
    """FSD011: a plain ``GradScaler`` (not disabled) in a file that shards with FSDP, off its no-FSDP paths."""
    if not facts.uses(FSDP1, FULLY_SHARD):
        return
    for call in facts.calls():
        enabled = kwarg(call, "enabled")
        if (
            facts.qual(call) == "torch.amp.GradScaler"
            and not (isinstance(enabled, ast.Constant) and enabled.value is False)
            and not _fsdp_excluded(facts, call)
            and not _handed_on_unused(facts, call)
        ):
            yield call, None


def _handed_on_unused(facts: FileFacts, scaler: ast.Call) -> bool:
    """Is the scaler built by ``scaler`` handed straight to code the file does not show (an argument of a call, an
    item of a dict: ``State(scaler=GradScaler())``, ``kwargs["scaler"] = GradScaler()``) while nothing in the file
    scales a loss with a scaler (no ``.scale(...)``)? Whether that code steps it on sharded gradients, the file
    cannot tell (composer's test helpers put one in a ``State`` only to compare its ``state_dict``)."""
    parent = facts.parents.get(id(scaler))
    if isinstance(parent, ast.keyword):
        parent = facts.parents.get(id(parent))
    handed = (
        isinstance(parent, ast.Call)
        and parent is not scaler
        or (isinstance(parent, ast.Assign) and all(isinstance(t, ast.Subscript) for t in parent.targets))
    )
    return handed and not any(isinstance(c.func, ast.Attribute) and c.func.attr == "scale" for c in facts.calls())


def _mentions_fsdp(node: ast.AST) -> bool:
    return any("fsdp" in (dotted(n) or "").lower() for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute)))


def _refuses_fsdp(st: ast.stmt) -> bool:
    """Does the statement ``st`` end its block's way for an FSDP module: ``assert not args.fsdp``, or ``if
    _is_model_fsdp(model): raise ...`` (composer's unsharded load) / ``return`` with no ``else``?"""
    if isinstance(st, ast.Assert):
        return isinstance(st.test, ast.UnaryOp) and isinstance(st.test.op, ast.Not) and _mentions_fsdp(st.test)
    return (
        isinstance(st, ast.If)
        and not st.orelse
        and _mentions_fsdp(st.test)
        and not (isinstance(st.test, ast.UnaryOp) and isinstance(st.test.op, ast.Not))
        and isinstance(st.body[-1], (ast.Raise, ast.Return))
    )


def _fsdp_excluded(facts: FileFacts, node: ast.AST) -> bool:
    """Is ``node`` on a path where FSDP is off: after ``assert not args.fsdp`` or ``if is_fsdp(m): raise`` in its block, under ``if not
    use_fsdp:``, or in the ``else`` of ``if args.fsdp:`` (open_lm's amp path refuses FSDP)?"""
    cur: ast.AST | None = node
    while cur is not None:
        parent = facts.parents.get(id(cur))
        if isinstance(parent, ast.If) and _mentions_fsdp(parent.test):
            negated = isinstance(parent.test, ast.UnaryOp) and isinstance(parent.test.op, ast.Not)
            in_body = any(cur is st for st in parent.body)
            if in_body == negated:
                return True
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if isinstance(block, list) and any(st is cur for st in block):
                before = block[: [i for i, st in enumerate(block) if st is cur][0]]
                if any(_refuses_fsdp(st) for st in before):
                    return True
        cur = parent
    return False


def _param_owners(facts: FileFacts, expr: ast.AST | None, depth: int = 0) -> Iterator[ast.AST]:
    """The module expressions whose parameters feed ``expr`` (``model`` of ``list(model.parameters())``)."""
    if expr is None:
        return
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _PARAM_METHODS:
            yield node.func.value
        elif isinstance(node, ast.Name) and depth < 4:
            _, b = facts.binding(node)
            if b is not None and b.kind == "assign" and b.value is not None:
                yield from _param_owners(facts, b.value, depth + 1)


def _other_arm_clips_on_module(facts: FileFacts, call: ast.Call, owners: list[ast.AST]) -> bool:
    """Is ``call`` in one arm of an ``if`` whose other arm clips through the module itself
    (``model.clip_grad_norm_(...)`` on the same module)? The ``if`` then tells the FSDP path from the other one
    (``if cfg.enable_fsdp: model.clip_grad_norm_(c) else: torch.nn.utils.clip_grad_norm_(model.parameters(), c)``)."""
    names = {d for o in owners if (d := dotted(o))}
    for anc in facts.ancestors(call):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if not isinstance(anc, ast.If) or not anc.orelse:
            continue
        side = facts.block_of(call, anc)
        other = anc.orelse if side == "body" else anc.body if side == "orelse" else []
        if any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "clip_grad_norm_"
            and dotted(n.func.value) in names
            for st in other
            for n in ast.walk(st)
        ):
            return True
    return False


@finder("FSD012")
def clip_grad_norm_of_fsdp1_params(facts: FileFacts) -> Found:
    """FSD012: ``torch.nn.utils.clip_grad_norm_`` on an FSDP1 module's parameters, off the paths the file marks as
    not FSDP (the ``else`` of ``if args.fsdp:``, an ``if`` whose other arm calls ``model.clip_grad_norm_``)."""
    for call in facts.calls():
        if facts.qual(call) != "torch.nn.utils.clip_grad_norm_":
            continue
        owners = [o for o in _param_owners(facts, kwarg(call, "parameters", 0)) if facts.is_fsdp1(o)]
        if owners and not _fsdp_excluded(facts, call) and not _other_arm_clips_on_module(facts, call, owners):
            yield call, None


def _nccl_possible(facts: FileFacts, call: ast.Call) -> bool:
    return any("nccl" in s for s in facts.strings(kwarg(call, "backend", 0)))


def _is_script(facts: FileFacts) -> bool:
    """Has ``if __name__ == "__main__":`` — a whole program, not a library module whose caller may do the rest."""
    return any(
        isinstance(n, ast.If)
        and isinstance(n.test, ast.Compare)
        and isinstance(n.test.left, ast.Name)
        and n.test.left.id == "__name__"
        for n in facts.tree.body
    )


def _device_helper(facts: FileFacts, call: ast.Call) -> bool:
    """A call into non-torch code about devices (torchtune's ``utils.get_device``): it may bind the GPU there."""
    name, q = last_name(call) or "", facts.qual(call) or ""
    return "device" in name.lower() and not q.startswith("torch.") and name != "device"


def _uses_gpu_here(facts: FileFacts) -> bool:
    """Does the file itself do the work that needs the GPU binding (a collective, a DDP/FSDP wrap, ``.cuda()``,
    a ``"cuda"`` device)? A script that only sets up the group and hands over to code in another file may bind
    the device there (OLMo's ``ladder.py`` calling ``train.main``), so it is not judged on this file alone."""
    from fsdp_skill.core.check.rank_conditional import COLLECTIVES

    for c in facts.calls():
        q, name = facts.qual(c) or "", last_name(c) or ""
        if (
            q.startswith("torch.distributed.")
            and q.rsplit(".", 1)[-1] in COLLECTIVES
            or name == "cuda"
            or q in (FULLY_SHARD, FSDP1, "torch.nn.parallel.DistributedDataParallel")
        ):
            return True
        # a "cuda" device given to torch: torch.device("cuda"), x.to("cuda"), torch.randn(..., device="cuda")
        args = list(c.args) if q == "torch.device" or name == "to" else []
        args += [k.value for k in c.keywords if k.arg == "device" and (q.startswith("torch.") or name == "to")]
        if any(s.startswith("cuda") for a in args for s in facts.strings(a)):
            return True
    return False


def _explicit_devices(facts: FileFacts) -> bool:
    """Does the file name each rank's GPU itself (``DDP(..., device_ids=[rank])``, ``.to(rank)``, ``.cuda(rank)``,
    ``torch.device("cuda", rank)``, ``f"cuda:{rank}"``)? Then NCCL finds the device from the tensors."""
    for c in facts.calls():
        name = last_name(c) or ""
        if (
            kwarg(c, "device_ids") is not None
            or name == "cuda"
            and c.args
            or name == "to"
            and c.args
            and _indexed_device(facts, c.args[0])
            or facts.qual(c) == "torch.device"
            and len(c.args) > 1
        ):
            return True
    return any(
        isinstance(n, ast.JoinedStr)
        and n.values
        and isinstance(n.values[0], ast.Constant)
        and str(n.values[0].value).startswith("cuda:")
        for n in facts.nodes
    )


def _indexed_device(facts: FileFacts, arg: ast.AST) -> bool:
    """``x.to(rank)`` / ``x.to(device)`` with a device that is not the bare ``"cuda"`` (nor a dtype)."""
    value = facts.resolve(arg)
    if isinstance(value, ast.Attribute) or facts.strings(value):
        return False  # torch.float16, "cuda" / "cpu"
    return not (isinstance(value, ast.Call) and facts.qual(value) == "torch.device" and len(value.args) == 1)


@finder("FSD013")
def nccl_without_set_device(facts: FileFacts) -> Found:
    """FSD013: an NCCL ``init_process_group`` in a script that never binds each rank's GPU."""
    if (
        not _is_script(facts)
        or any(
            last_name(c) in ("set_device", "set_device_index", "set_default_device")
            or facts.qual(c) == "torch.cuda.device"
            or _device_helper(facts, c)
            for c in facts.calls()
        )
        or not _uses_gpu_here(facts)
        or _explicit_devices(facts)
    ):
        return
    for call in facts.calls():
        q = facts.qual(call)
        ws = kwarg(call, "world_size")
        if (
            q == "torch.distributed.init_process_group"
            and _nccl_possible(facts, call)
            and kwarg(call, "device_id") is None
            and not (isinstance(ws, ast.Constant) and ws.value == 1)
        ):
            yield call, None


_HARNESS_BASES = ("MultiProcessTestCase", "DistributedTestBase", "MultiProcContinuousTest", "MultiProcContinousTest")


def _in_test_harness(facts: FileFacts, node: ast.AST) -> bool:
    """Inside a class built on torch's multi-process test harness, which destroys the group after each test."""
    return any(
        isinstance(anc, ast.ClassDef) and any((last_name(b) or "").endswith(_HARNESS_BASES) for b in anc.bases)
        for anc in facts.ancestors(node)
    )


@finder("FSD014")
def process_group_never_destroyed(facts: FileFacts) -> Found:
    """FSD014: a script's ``init_process_group`` with no ``destroy_process_group`` (its first one)."""
    if not _is_script(facts) or facts.uses("torch.distributed.destroy_process_group"):
        return
    for call in facts.calls():
        if facts.qual(call) != "torch.distributed.init_process_group" or _in_test_harness(facts, call):
            continue
        backends = facts.strings(kwarg(call, "backend", 0))
        ws = kwarg(call, "world_size")
        # a gloo-only group, or a one-process group (world_size=1 over a HashStore), has no NCCL teardown to get wrong
        if backends and not any("nccl" in b for b in backends) or isinstance(ws, ast.Constant) and ws.value == 1:
            continue
        yield call, None
        return


@finder("FSD015")
def submodule_sharded_after_parent(facts: FileFacts) -> Found:
    """FSD015: ``fully_shard`` of a submodule after ``fully_shard`` of its parent."""
    wraps = _wraps(facts, {FULLY_SHARD})
    for later, c2 in wraps:
        for first, c1 in wraps:
            if first is not later and len(c1.parts) < len(c2.parts) and c1.covers(c2) and _ordered(facts, first, later):
                yield later, f"(the parent was sharded at line {first.lineno})"
                break


def _state_dict_owner(facts: FileFacts, expr: ast.AST | None) -> ast.AST | None:
    expr = facts.resolve(expr)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "state_dict":
        return expr.func.value
    return None


def _holds(pred: Callable[[ast.AST], bool], node: ast.AST | None) -> bool:
    return node is not None and pred(node)


def _per_rank_file(facts: FileFacts, save: ast.Call) -> bool:
    """``torch.save(sd, f"shard_{rank}.pt")``: each rank writes its own file on purpose."""
    return facts.names_the_rank(kwarg(save, "f", 1))


@finder("FSD016")
def torch_save_of_fsdp2_state_dict(facts: FileFacts) -> Found:
    """FSD016: ``torch.save`` of an FSDP2 module's ``state_dict()`` to a file that is not per rank."""
    for call in facts.calls():
        if (
            facts.qual(call) == "torch.save"
            and _holds(facts.is_fsdp2, _state_dict_owner(facts, kwarg(call, "obj", 0)))
            and not _per_rank_file(facts, call)
        ):
            yield call, None


def _optimizer_names(facts: FileFacts) -> set[str]:
    return {
        name
        for node in facts.nodes
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _is_optimizer(facts, node.value)
        for t in node.targets
        if (name := dotted(t))
    }


@finder("FSD017")
def torch_save_of_fsdp1_optimizer_state(facts: FileFacts) -> Found:
    """FSD017: ``torch.save(optimizer.state_dict())`` in a file that uses FSDP1."""
    if not facts.uses(FSDP1):
        return
    optims = _optimizer_names(facts)
    for call in facts.calls():
        if (
            facts.qual(call) == "torch.save"
            and dotted(_state_dict_owner(facts, kwarg(call, "obj", 0)) or ast.Pass()) in optims
            and not _per_rank_file(facts, call)
        ):
            yield call, None


@finder("FSD018")
def no_sync_on_fsdp2(facts: FileFacts) -> Found:
    """FSD018: ``no_sync()`` called on an FSDP2 module."""
    for call in facts.calls():
        if isinstance(call.func, ast.Attribute) and call.func.attr == "no_sync" and facts.is_fsdp2(call.func.value):
            yield call, None


_FSDP1_ONLY = {
    "mixed_precision",
    "cpu_offload",
    "sharding_strategy",
    "auto_wrap_policy",
    "device_id",
    "sync_module_states",
    "use_orig_params",
    "process_group",
    "param_init_fn",
    "backward_prefetch",
    "forward_prefetch",
    "limit_all_gathers",
    "ignored_modules",
    "ignored_states",
    "device_mesh",
}
_FSDP2_ONLY = {"mp_policy", "offload_policy", "reshard_after_forward", "mesh", "shard_placement_fn"}
_CLASS_FOR = {
    FULLY_SHARD: ({"MixedPrecision", "CPUOffload"}, "MixedPrecisionPolicy / CPUOffloadPolicy"),
    FSDP1: ({"MixedPrecisionPolicy", "CPUOffloadPolicy", "OffloadPolicy"}, "MixedPrecision / CPUOffload"),
}


@finder("FSD019")
def other_fsdp_argument_or_class(facts: FileFacts) -> Found:
    """FSD019: an FSDP1 argument or class given to ``fully_shard``, or an FSDP2 one to ``FSDP``."""
    for call in facts.calls():
        q = facts.qual(call)
        if q not in _CLASS_FOR:
            continue
        wrong_kw = _FSDP1_ONLY if q == FULLY_SHARD else _FSDP2_ONLY
        for kw in call.keywords:
            if kw.arg in wrong_kw:
                who = "fully_shard" if q == FULLY_SHARD else "FullyShardedDataParallel"
                yield kw.value, f"{who}() has no argument {kw.arg}= (TypeError); see the argument mapping"
            value = facts.resolve(kw.value)
            if isinstance(value, ast.Call) and last_name(value) in _CLASS_FOR[q][0]:
                yield kw.value, f"{last_name(value)} is the other FSDP's class; this API takes {_CLASS_FOR[q][1]}"


def _low_cast(facts: FileFacts, call: ast.Call) -> bool:
    if not isinstance(call.func, ast.Attribute):
        return False
    if call.func.attr in ("bfloat16", "half"):
        return True
    if call.func.attr == "to":
        for a in list(call.args) + [k.value for k in call.keywords if k.arg == "dtype"]:
            if last_name(a) in _LOW:
                return True
    return False


def _assigned_chain(facts: FileFacts, value: ast.AST) -> Chain | None:
    """The chain of the variable ``value`` is assigned to (``model = Net().bfloat16()``)."""
    parent = facts.parents.get(id(value))
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        scope = facts.scope_of(parent)
        name = parent.targets[0].id
        for b in facts.bindings.get((id(scope), name), []):
            if b.value is value:
                return Chain((id(scope), name, b.index))
    return None


@finder("FSD020")
def low_precision_cast_before_sharding(facts: FileFacts) -> Found:
    """FSD020: a trained model cast to bf16/fp16 before it is sharded."""
    wraps = _wraps(facts, {FULLY_SHARD, FSDP1})
    for call in facts.calls():
        if not _low_cast(facts, call) or not isinstance(call.func, ast.Attribute):  # a cast is a method call
            continue
        c = facts.chain(call.func.value) or _assigned_chain(facts, call)
        hit = next((w for w, wc in wraps if c and _ordered(facts, call, w) and (c.covers(wc) or wc.covers(c))), None)
        if hit is not None and _trained(facts, [c, _assigned_chain(facts, hit)]):
            yield call, None


def _trained(facts: FileFacts, chains: list[Chain | None]) -> bool:
    """Is an optimizer built in this file from the parameters of one of these modules? A model cast to bf16 and
    sharded only for inference (verl's reward model) has no master weights or optimizer state to lose."""
    known = [c for c in chains if c is not None]
    return any(
        _is_optimizer(facts, call)
        and any(src.covers(c) or c.covers(src) for c in known for src in _param_sources(facts, kwarg(call, "params", 0)))
        for call in facts.calls()
    )


@finder("FSD021")
def direct_forward_of_fsdp2(facts: FileFacts) -> Found:
    """FSD021: ``.forward()`` / ``.generate()`` of an FSDP2 module not registered with ``register_fsdp_forward_method``."""
    registered = {
        (dotted(c.args[0]), c.args[1].value)
        for c in facts.calls()
        if last_name(c) == "register_fsdp_forward_method" and len(c.args) > 1 and isinstance(c.args[1], ast.Constant)
    }
    for call in facts.calls():
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("forward", "generate"):
            owner = dotted(call.func.value)
            if facts.is_fsdp2(call.func.value) and (owner, call.func.attr) not in registered:
                yield call, None


@finder("FSD022")
def hook_on_fsdp2_parameters(facts: FileFacts) -> Found:
    """FSD022: ``register_hook`` on the parameters of an FSDP2 module."""
    for call in facts.calls():
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "register_hook"):
            continue
        target = call.func.value
        if isinstance(target, ast.Name):
            _, b = facts.binding(target)
            if b is not None and b.kind == "for" and any(facts.is_fsdp2(o) for o in _param_owners(facts, b.value)):
                yield call, None
        elif any(facts.is_fsdp2(o) for o in _param_owners(facts, target)):
            yield call, None


@finder("FSD023")
def join_given_fsdp(facts: FileFacts) -> Found:
    """FSD023: an FSDP module in the list given to ``Join``."""
    for call in facts.calls():
        if (
            facts.qual(call) == "torch.distributed.algorithms.Join"
            and call.args
            and isinstance(call.args[0], (ast.List, ast.Tuple))
        ):
            for el in call.args[0].elts:
                if isinstance(el, (ast.Name, ast.Attribute)) and facts.is_fsdp(el):
                    yield el, None


def _nccl_only_default(facts: FileFacts) -> bool:
    inits = [c for c in facts.calls() if facts.qual(c) == "torch.distributed.init_process_group"]
    return any("nccl" in facts.strings(kwarg(c, "backend", 0)) for c in inits)


@finder("FSD024")
def monitored_barrier_on_nccl_only(facts: FileFacts) -> Found:
    """FSD024: ``monitored_barrier`` on the default group of a file that forms it with NCCL only."""
    if not _nccl_only_default(facts):
        return
    for call in facts.calls():
        if facts.qual(call) == "torch.distributed.monitored_barrier" and kwarg(call, "group", 0) is None:
            yield call, None


@finder("FSD025")
def async_save_without_cpu_group(facts: FileFacts) -> Found:
    """FSD025: ``dcp.async_save`` without a process group, where the default group is NCCL only."""
    if not _nccl_only_default(facts):
        return
    for call in facts.calls():
        if facts.qual(call) == "torch.distributed.checkpoint.async_save" and kwarg(call, "process_group") is None:
            yield call, None


_INIT_HELPER = ("init_distributed", "setup_distributed", "init_dist", "setup_dist", "distributed_init")


_LOCAL_RANK_ENV = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}


def _local_rank_from_env(facts: FileFacts) -> bool:
    """``args.local_rank = int(os.getenv("RANK", 0))``: the script overwrites the flag from the environment."""
    return any(
        isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Attribute) and t.attr == "local_rank" for t in n.targets)
        and facts.is_rank_expr(n.value)
        for n in facts.nodes
    )


def distributed_here(facts: FileFacts) -> bool:
    """Does the module call into torch.distributed itself (an import alone is not use; an Accelerate script's
    launcher passes no flag)?"""
    quals = {facts.qual(c) or "" for c in facts.calls()}
    if any(q.rsplit(".", 1)[-1] == "Accelerator" for q in quals):
        return False
    return any(q.startswith(("torch.distributed.", "torch.nn.parallel.")) for q in quals)


def _entry_point(facts: FileFacts) -> bool:
    """A program's entry module: ``if __name__ == "__main__":``, ``parse_args()`` at module level, or one that
    forms the process group; not a module that only defines the arguments for another one."""
    top_parse = any(
        isinstance(st, (ast.Assign, ast.Expr))
        and any(isinstance(n, ast.Call) and last_name(n) in ("parse_args", "parse_known_args") for n in ast.walk(st))
        for st in facts.tree.body
    )
    return _is_script(facts) or top_parse or facts.uses("torch.distributed.init_process_group")


@finder("FSD026")
def argparse_only_local_rank_underscore(facts: FileFacts) -> Found:
    """FSD026: an entry module that declares ``--local_rank`` but not ``--local-rank`` (see the exemptions inside)."""
    texts = [n.value for n in facts.nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    # the DeepSpeed launcher passes --local_rank (underscore): right for a DeepSpeed script; a script that reads
    # LOCAL_RANK from the environment (itself, or through an init_distributed_mode(args)-style helper) works under
    # torchrun whatever argparse declares; one that starts its workers itself (mp.spawn) gets no flag at all
    if (
        any("deepspeed" in t.lower() or t in _LOCAL_RANK_ENV for t in texts)
        or _local_rank_from_env(facts)
        or not distributed_here(facts)
        or any(a.startswith("deepspeed") for a in facts.aliases.values())
        or not _entry_point(facts)
        or any(any(h in (last_name(c) or "").lower() for h in _INIT_HELPER) for c in facts.calls())
        or any(
            (facts.qual(c) or "").startswith(("torch.multiprocessing.", "multiprocessing."))
            and last_name(c) in ("spawn", "Process", "start_processes")
            for c in facts.calls()
        )
        or any(last_name(c) == "parse_known_args" for c in facts.calls())
    ):  # an unknown --local-rank=N is ignored
        return
    for call in facts.calls():
        if last_name(call) == "add_argument":
            flags = {a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
            if "--local_rank" in flags and "--local-rank" not in flags and not _under_version_check(facts, call):
                yield call, None  # under `if TORCH_MAJOR_VERSION == 1:`: the flag torch 1.x's launcher passes


def _under_version_check(facts: FileFacts, call: ast.AST) -> bool:
    """Inside ``if is_torch_version(">=", "1.11"): ... else: ...`` (or any test naming a version): the call without
    ``use_reentrant`` is the fallback for an old torch, where the keyword does not exist."""
    for anc in facts.ancestors(call):
        if isinstance(anc, ast.If) and any(
            "version" in ((last_name(n) if isinstance(n, (ast.Name, ast.Attribute, ast.Call)) else None) or "").lower()
            for n in ast.walk(anc.test)
        ):
            return True
    return False


def _grad_guarded(facts: FileFacts, call: ast.AST) -> bool:
    """Under ``if self.with_cp and x.requires_grad:``: the reentrant variant's failure (no gradients when no input
    requires grad) cannot happen there."""
    return any(
        isinstance(anc, ast.If) and any(isinstance(n, ast.Attribute) and n.attr == "requires_grad" for n in ast.walk(anc.test))
        for anc in facts.ancestors(call)
    )


@finder("FSD027")
def checkpoint_without_use_reentrant(facts: FileFacts) -> Found:
    """FSD027: ``torch.utils.checkpoint.checkpoint`` without ``use_reentrant`` (the reentrant default), in a file that
    does distributed work or that a checked file doing distributed work imports (a plain model file alone: silent)."""
    if not calls.distributed_work(facts):
        return
    for call in facts.calls():
        q = facts.qual(call) or ""
        if q == "torch.utils.checkpoint.checkpoint" and (_under_version_check(facts, call) or _grad_guarded(facts, call)):
            continue
        if q == "torch.utils.checkpoint.checkpoint":
            v = kwarg(call, "use_reentrant")
            if v is None and any(k.arg is None for k in call.keywords):
                continue  # checkpoint(fn, **kwargs): the flag may be in kwargs
            if v is None:  # use_reentrant=True written out is a choice (torch warns only when it is missing)
                yield call, None
        # checkpoint_wrapper's default is CheckpointImpl.NO_REENTRANT: CheckpointImpl.REENTRANT is only ever written out,
        # a choice like use_reentrant=True (FSD050 still speaks where it meets DDP's find_unused_parameters)


@finder("FSD028")
def fullgraph_compile_of_fsdp2_root(facts: FileFacts) -> Found:
    """FSD028: ``torch.compile(..., fullgraph=True)`` of a module sharded as the root with ``fully_shard``."""
    roots = {
        dotted(c.args[0])
        for c in facts.calls()
        if facts.qual(c) == FULLY_SHARD
        and c.args
        and isinstance(c.args[0], ast.Name)
        and (b := facts.binding(c.args[0])[1]) is not None
        and b.kind != "for"
    }
    for call in facts.calls():
        if not is_true(kwarg(call, "fullgraph")):
            continue
        if facts.qual(call) == "torch.compile" and call.args and dotted(call.args[0]) in roots:
            yield call, None
        elif isinstance(call.func, ast.Attribute) and call.func.attr == "compile" and dotted(call.func.value) in roots:
            yield call, None


@finder("FSD029")
def tensor_parallel_after_fully_shard(facts: FileFacts) -> Found:
    """FSD029: ``parallelize_module`` of a module after ``fully_shard`` of it (or of a parent)."""
    wraps = _wraps(facts, {FULLY_SHARD})
    for call in facts.calls():
        if facts.qual(call) == "torch.distributed.tensor.parallel.parallelize_module" and call.args:
            c = facts.chain(call.args[0])
            hit = next((w for w, wc in wraps if c and _ordered(facts, w, call) and wc.covers(c)), None)
            if hit is not None:
                yield call, f"(fully_shard at line {hit.lineno})"


@finder("FSD030")
def gradient_sync_never_turned_back_on(facts: FileFacts) -> Found:
    """FSD030: ``set_requires_gradient_sync(False)`` with no call that turns it back on."""
    calls = [c for c in facts.calls() if last_name(c) == "set_requires_gradient_sync" and isinstance(c.func, ast.Attribute)]
    args = [kwarg(c, "requires_gradient_sync", 0) for c in calls]
    if calls and all(isinstance(a, ast.Constant) and a.value is False for a in args):
        yield calls[0], None


@finder("FSD031")
def fsdp1_frozen_params_without_orig_params(facts: FileFacts) -> Found:
    """FSD031: FSDP1 wrapping a partly frozen module as one unit without ``use_orig_params=True`` (the module's
    freezing followed by :mod:`~fsdp_skill.core.check.frozen`; a helper's parameter is partly frozen when a caller of
    the file passes it such a module, ``wrap(load_lora_model(path))``, and a ``self.`` attribute bound from one). With an ``auto_wrap_policy`` only a PEFT model is
    judged, and only under a policy that keeps each adapter in the unit of the layer it adapts (the transformer-layer,
    size-based and module-class policies; a lambda policy may wrap the adapters apart)."""
    for call in facts.calls():
        if (
            facts.qual(call) != FSDP1
            or not call.args
            or is_true(kwarg(call, "use_orig_params"))
            or any(k.arg is None for k in call.keywords)
        ):
            continue
        name, scope = dotted(call.args[0]), facts.scope_of(call)
        if name is None:
            continue
        partial, peft = name in frozen.partly_frozen(facts, scope), name in frozen.peft_models(facts, scope)
        if not partial and (isinstance(call.args[0], ast.Name) or name.startswith("self.")):
            partial, peft = frozen.given_partly_frozen(facts, scope, name)
        if not partial:
            continue
        policy = kwarg(call, "auto_wrap_policy")
        if policy is None or peft and _mixes_adapters(facts, policy):
            yield call, None


_MIXING_POLICIES = {"transformer_auto_wrap_policy", "size_based_auto_wrap_policy", "ModuleWrapPolicy"}
_SEPARATING_POLICIES = {"lambda_auto_wrap_policy", "fsdp_auto_wrap_policy", "_or_policy", "LambdaWrapPolicy"}


def _mixes_adapters(facts: FileFacts, policy: ast.AST) -> bool:
    """Is ``policy`` (through a name, ``functools.partial``) one of the policies that wrap whole layers (and so put a
    LoRA adapter in the unit of its frozen base layer), and none that may wrap the adapters on their own?"""
    value = facts.resolve(policy) or policy
    names = {last_name(n) for n in ast.walk(value) if isinstance(n, (ast.Name, ast.Attribute))}
    return bool(names & _MIXING_POLICIES) and not names & _SEPARATING_POLICIES


@finder("FSD032")
def meta_model_never_materialised(facts: FileFacts) -> Found:
    """FSD032: a model built on the meta device and sharded, never materialised (``to_empty``), in a script."""
    if not _is_script(facts) or any(
        isinstance(c.func, ast.Attribute)
        and c.func.attr == "to_empty"
        or last_name(c) == "load_state_dict"
        and is_true(kwarg(c, "assign"))
        for c in facts.calls()
    ):
        return
    meta_with = [
        w
        for w in facts.nodes
        if isinstance(w, (ast.With, ast.AsyncWith))
        and any(
            isinstance(i.context_expr, ast.Call)
            and facts.qual(i.context_expr) == "torch.device"
            and "meta" in facts.strings(kwarg(i.context_expr, "type", 0))
            for i in w.items
        )
    ]
    if any(a.split(".")[0] in _MATERIALISING for a in facts.aliases.values()):
        return
    built = {
        dotted(t)
        for w in meta_with
        for s in w.body
        for n in ast.walk(s)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if dotted(t)
    }
    for call in facts.calls():
        if facts.qual(call) == FULLY_SHARD and call.args and dotted(call.args[0]) in built:
            yield call, None
            return


# frameworks that materialise a meta-device model themselves when they set it up (Lightning's strategies call
# ``to_empty`` and ``reset_parameters``), so the script does not
_MATERIALISING = {"lightning", "pytorch_lightning", "lightning_fabric"}


def _offloading(facts: FileFacts, call: ast.Call) -> bool:
    q = facts.qual(call)
    policy = facts.resolve(
        kwarg(call, "offload_policy") if q == FULLY_SHARD else kwarg(call, "cpu_offload") if q == FSDP1 else None
    )
    if not isinstance(policy, ast.Call):
        return False
    pq = facts.qual(policy)
    return (
        pq == "torch.distributed.fsdp.CPUOffloadPolicy"
        or pq == "torch.distributed.fsdp.CPUOffload"
        and is_true(kwarg(policy, "offload_params", 0))
    )


@finder("FSD033")
def offload_without_fused_optimizer(facts: FileFacts) -> Found:
    """FSD033: an optimizer of CPU-offloaded parameters without ``fused=`` / ``foreach=``."""
    offloaded = [c for w, c in _wraps(facts, {FULLY_SHARD, FSDP1}) if _offloading(facts, w)]
    if not offloaded:
        return
    for call in facts.calls():
        if (facts.qual(call) or "") not in (
            "torch.optim.Adam",
            "torch.optim.AdamW",
            "torch.optim.SGD",
            "torch.optim.Adagrad",
        ) or any(k.arg in ("fused", "foreach", None) for k in call.keywords):
            continue
        if any(src.covers(c) or c.covers(src) for src in _param_sources(facts, kwarg(call, "params", 0)) for c in offloaded):
            yield call, None


@finder("FSD034")
def param_dtype_without_reduce_dtype(facts: FileFacts) -> Found:
    """FSD034: a low-precision ``param_dtype`` without a ``reduce_dtype``."""
    for call in facts.calls():
        if (facts.qual(call) or "") in ("torch.distributed.fsdp.MixedPrecisionPolicy", "torch.distributed.fsdp.MixedPrecision"):
            pd = kwarg(call, "param_dtype", 0)
            if pd is not None and last_name(pd) in _LOW and kwarg(call, "reduce_dtype", 1) is None:
                yield call, None


def epoch_loop_over(facts: FileFacts, loader: ast.Call, index: int | None = None) -> bool:
    """Is the DataLoader built by ``loader`` iterated by a ``for`` nested in another loop (an epoch loop), here or
    in a function of the checked code it is handed to (one iterating it in a loop of its own, or once per call
    from inside a loop: ``for epoch in ...: train_one_epoch(model, loader)``, a generator ``for batch in loader:
    yield batch`` under ``while True``)?  ``index``: ``loader`` is a call returning a tuple whose element
    ``index`` is the DataLoader (``loader, sampler = build_loaders(...)``)."""
    parent = facts.parents.get(id(loader))
    if isinstance(parent, (ast.For, ast.AsyncFor)) and parent.iter is loader:
        return _in_loop(facts, parent)  # for epoch in ...: for batch in DataLoader(...)
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1):
        return False
    target = parent.targets[0]
    if index is not None and isinstance(target, ast.Tuple):  # unpacked: the element at the tuple's position
        elts = target.elts
        if index >= len(elts) or any(isinstance(e, ast.Starred) for e in elts) or not isinstance(elts[index], ast.Name):
            return False
        target = elts[index]
    if not isinstance(target, ast.Name) or (index is not None) != isinstance(parent.targets[0], ast.Tuple):
        return False
    name = target.id
    scope = facts.scope_of(parent)
    if name in _epoch_iterated(facts, scope):
        return True
    return any(_handed_to_epoch_loop(facts, c, name) for c in _passing(facts, scope).get(name, ()))


def _epoch_iterated(facts: FileFacts, scope: ast.AST) -> set[str]:
    """The names in the iterable of a ``for`` of ``scope`` repeated by a loop of its own (:func:`_in_loop`), memoised
    per scope."""
    key = ("FSD035", "epoch_iterated", id(scope))
    if key not in facts.cache:
        facts.cache[key] = {
            n.id
            for node in facts.scope_nodes(scope)
            if isinstance(node, (ast.For, ast.AsyncFor)) and _in_loop(facts, node)
            for n in ast.walk(node.iter)
            if isinstance(n, ast.Name)
        }
    names: set[str] = facts.cache[key]
    return names


def _passing(facts: FileFacts, scope: ast.AST) -> dict[str, list[ast.Call]]:
    """Name -> the calls of ``scope`` given that name as an argument (positional or keyword), memoised per scope."""
    key = ("FSD035", "passing", id(scope))
    if key not in facts.cache:
        found: dict[str, list[ast.Call]] = {}
        for node in facts.scope_nodes(scope):
            if isinstance(node, ast.Call):
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(arg, ast.Name):
                        calls_of = found.setdefault(arg.id, [])
                        if not calls_of or calls_of[-1] is not node:  # f(x, x): once
                            calls_of.append(node)
        facts.cache[key] = found
    passing: dict[str, list[ast.Call]] = facts.cache[key]
    return passing


def _loaders_below(facts: FileFacts, scope: ast.AST) -> list[tuple[ast.Call, set[str]]]:
    """The ``DataLoader`` calls below ``scope`` (nested functions too), each with the names in its keywords
    (memoised per scope)."""
    key = ("FSD035", "loaders", id(scope))
    if key not in facts.cache:
        facts.cache[key] = [
            (c, {n.id for k in c.keywords for n in ast.walk(k.value) if isinstance(n, ast.Name)})
            for c in facts.calls(scope)
            if (facts.qual(c) or "").endswith("DataLoader")
        ]
    loaders: list[tuple[ast.Call, set[str]]] = facts.cache[key]
    return loaders


def _in_loop(facts: FileFacts, node: ast.AST) -> bool:
    """Is ``node`` repeated by a loop of its own function (in its body, not the ``for``'s iterable, run once)?"""
    child = node
    for a in facts.ancestors(node):
        if isinstance(a, (ast.For, ast.AsyncFor, ast.While)) and not (isinstance(a, (ast.For, ast.AsyncFor)) and child is a.iter):
            return True
        if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        child = a
    return False


def _handed_to_epoch_loop(facts: FileFacts, call: ast.Call, name: str) -> bool:
    """``call`` hands the loader ``name`` to a function of this file that iterates it in a loop of its own, or that
    iterates it (a plain function or a generator) and is called inside a loop."""
    target = calls.callee(facts, call)
    if target is None or target.fn is None:
        return False
    fn = target.fn
    params = {target.summary.params[i] for i, a in calls.bound_args(call, target) if isinstance(a, ast.Name) and a.id == name}
    if not params:
        return False
    called_in_loop = _in_loop(facts, call)
    for node in facts.scope_nodes(fn):
        if (
            isinstance(node, (ast.For, ast.AsyncFor))
            and isinstance(node.iter, ast.Name)
            and node.iter.id in params
            and (called_in_loop or _in_loop(facts, node))
        ):
            return True
    return False


def _sampler_loaders(facts: FileFacts, call: ast.Call) -> list[ast.Call]:
    """The DataLoaders the sampler built by ``call`` feeds: one it is given to inline
    (``DataLoader(ds, sampler=DistributedSampler(ds))``), or those given the variable it is assigned to."""
    parent = facts.parents.get(id(call))
    if isinstance(parent, ast.keyword) and parent.arg == "sampler":
        loader = facts.parents.get(id(parent))
        return [loader] if isinstance(loader, ast.Call) and (facts.qual(loader) or "").endswith("DataLoader") else []
    if not (isinstance(parent, ast.Assign) and isinstance(parent.targets[0], ast.Name)):
        return []
    sampler = parent.targets[0].id
    return [c for c, names in _loaders_below(facts, facts.scope_of(call)) if sampler in names]


@finder("FSD035")
def sampler_without_set_epoch(facts: FileFacts) -> Found:
    """FSD035: a shuffling ``DistributedSampler`` (built here, or returned by a helper of the checked code) whose
    loader runs in an epoch loop, with no ``set_epoch``."""
    if any(last_name(c) == "set_epoch" for c in facts.calls()):
        return
    for call in facts.calls():
        q = facts.qual(call) or ""
        shuffle = kwarg(call, "shuffle")
        if q.startswith("torch.utils.data") and q.endswith("DistributedSampler"):
            if isinstance(shuffle, ast.Constant) and shuffle.value is False:
                continue
        elif not calls.returns_sampler(facts, call):
            continue
        if any(epoch_loop_over(facts, ld) for ld in _sampler_loaders(facts, call)):
            yield call, None
