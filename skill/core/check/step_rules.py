"""Rules about what the ranks do differently from step to step (FSD077-FSD080).

- **FSD077**: a module of the file wrapped by ``DistributedDataParallel(...)`` without ``find_unused_parameters``
  (nor ``static_graph``, nor ``**kwargs``) whose ``forward`` leaves a submodule or parameter with parameters
  (``nn.Linear``, ``nn.Parameter``, a class of the file holding one, ...) that its ``__init__`` registers
  unconditionally out of some calls: never read in ``forward`` (nor in the methods it calls on ``self``), or read only
  under an ``if`` / ``a if c else b`` / after an early ``return``. A branch on ``self.training`` counts as taken (no
  backward runs in evaluation), and one on a flag of ``forward`` with a constant default that no call of the file
  passes (by keyword, ``**``, or by position to the wrapper) follows the default (``return_features=False``). DDP then raises "Expected to have finished reduction in the prior iteration" on
  the next step. Silent where ``forward`` reaches modules dynamically (``getattr(self, ...)``, ``self.children()``,
  ``self.parameters()``, ``super()``, ``self`` handed to another function), where the part is frozen
  (``requires_grad_(False)`` / ``requires_grad = False`` on it, or anywhere on the whole model), tied
  (``self.x.weight = ...``), and where the class's ``forward`` is not in the file.
- **FSD078**: an evaluation loop (no ``backward`` / ``step`` in it) over a ``DataLoader`` whose ``DistributedSampler``
  keeps the default ``drop_last=False`` (it repeats samples so that every rank gets as many), whose function then
  gathers the results (``dist.all_gather``, ``all_gather_object``, ``gather``, ``gather_object``,
  ``all_gather_into_tensor``) or all-reduces a count the loop accumulated (whole, ``correct += ...``, or by element,
  ``stats[0] += ...``): the repeated samples are scored twice. The sampler is followed through names, parameters,
  helpers and one element of a tuple a helper returns (``ds, sampler = load_data(root)``).
  Silent where the function slices anything to a length (``preds[:len(dataset)]``), with ``drop_last=True`` or another
  sampler. Accelerate's ``gather`` is FSD052's.
- **FSD079**: a loop over data split by hand per rank into parts whose sizes can differ (``data[rank::world]``,
  ``np.array_split(data, world)[rank]``, ``torch.chunk(...)[rank]``, ``islice(it, rank, None, world)``, an
  ``IterableDataset`` of the file whose ``__iter__`` does one of these, keeps ``i % world == rank``, or yields in a loop
  whose iterable or test derives from the rank: a per-rank file, a stream of a length drawn from a rank-seeded
  generator; not equal ranges ``range(rank * n, (rank + 1) * n)``), directly or through the ``Dataset`` /
  ``DataLoader`` built on it, whose body runs a ``backward()``, a ``torch.distributed`` collective or the forward of
  an FSDP module (each one all-gathers the parameters; an evaluation loop too): the ranks with more batches wait at the end in a collective the others never join. Silent with
  ``Join`` (or ``model.join()``) in the file, a ``ReduceOp.MIN`` / ``MAX`` agreement in the function, a ``break`` in the
  loop, a part first cut to a multiple of the world size (``data[: len(data) // world * world]``), and for equal
  slices (``data[rank * n:(rank + 1) * n]``).
- **FSD080**: a Hugging Face ``generate()`` (the file imports ``transformers``) without ``synced_gpus`` (nor
  ``**kwargs`` that could hold it: a tokenizer's or processor's output, ``**tok(prompts, ...).to(device)``, cannot) on a model whose parameters are still sharded while it generates, so each step's forward all-gathers:
  an FSDP2 module (``fully_shard``) with ``generate`` registered by ``register_fsdp_forward_method`` (unregistered
  is FSD021's), unless the file passes ``reshard_after_forward=False``; an FSDP1 root inside ``summon_full_params``
  (outside it is FSD044's; the root followed through the parameters of the file's functions and the values its helpers
  return) when the file wraps nested units (``auto_wrap_policy=``, or several ``FSDP(...)``) and
  no ``SHARD_GRAD_OP`` / ``NO_SHARD``: the nested units reshard after each forward and all-gather again at the next
  step (every step with ``recurse=False``); a DeepSpeed engine (or its ``.module``, or the model given to
  ``deepspeed.initialize``) with ZeRO stage 3 written in the file and no ``HfDeepSpeedConfig`` (with it, transformers
  detects ZeRO-3 itself). A rank that stops at its end-of-sequence token stops joining the all-gathers. transformers
  4.46 and later default ``synced_gpus`` to True for an FSDP-managed module, older releases do not.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from fsdp_skill.core.check import calls as callgraph  # `calls` is a common local name here
from fsdp_skill.core.check import checkpoint_rules, divergence
from fsdp_skill.core.check import rank_conditional as rc
from fsdp_skill.core.check.calls_rules import _summoned, _unpacked_position
from fsdp_skill.core.check.facts import DDP, FSDP1, FULLY_SHARD, JOIN, FileFacts, dotted, kwarg, last_name
from fsdp_skill.core.check.finders import Found, finder

Function = ast.FunctionDef | ast.AsyncFunctionDef
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEPTH = 3  # how deep classes, methods and wrapping calls are followed
_KEEP = {"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "train", "requires_grad_"}  # return the module

# --- shared: classes of the file, the values an expression can be --------------------------------------------


def _classes(facts: FileFacts) -> dict[str, ast.ClassDef]:
    """Module-level classes of the file by name."""
    key = ("step", "classes")
    if key not in facts.cache:
        facts.cache[key] = {n.name: n for n in facts.tree.body if isinstance(n, ast.ClassDef)}
    found: dict[str, ast.ClassDef] = facts.cache[key]
    return found


def _methods(cls: ast.ClassDef) -> dict[str, Function]:
    return {n.name: n for n in cls.body if isinstance(n, _FUNCS)}


def _strip(node: ast.AST) -> ast.AST:
    """``model.to(device).train()`` -> ``model``: the calls that return the module they are called on."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _KEEP:
        node = node.func.value
    return node


def _self_values(facts: FileFacts, node: ast.AST) -> list[ast.AST]:
    """The values assigned to ``self.<attr>`` in the class around ``node`` (an ``self.<attr>`` read)."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"):
        return []
    cls = next((a for a in facts.ancestors(node) if isinstance(a, ast.ClassDef)), None)
    if cls is None:
        return []
    out: list[ast.AST] = []
    for fn in _methods(cls).values():
        for st in ast.walk(fn):
            if isinstance(st, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == node.attr and dotted(t.value) == "self" for t in st.targets
            ):
                out.append(st.value)
    return out


def _returned(facts: FileFacts, node: ast.AST) -> list[ast.AST]:
    """What the function of the file that ``node`` calls returns (``build_loader(ds)`` -> its ``DataLoader(...)``)."""
    target = callgraph.callee(facts, node) if isinstance(node, ast.Call) else None
    fn = target.fn if target is not None else None
    if fn is None or fn.name == "__init__":
        return []
    return [r.value for r in facts.scope_nodes(fn) if isinstance(r, ast.Return) and r.value is not None]


def _unpacked_returns(facts: FileFacts, node: ast.AST) -> list[ast.AST]:
    """For a name unpacked from a call of a function of the file (``ds, sampler = load_data(root)``), that element of
    each tuple the function returns; else empty."""
    if not isinstance(node, ast.Name):
        return []
    value = facts.resolve(node)
    position = _unpacked_position(facts, node, value)
    if position is None or value is None:
        return []
    return [r.elts[position] for r in _returned(facts, value) if isinstance(r, ast.Tuple) and len(r.elts) > position]


def _values(facts: FileFacts, node: ast.AST, depth: int = 0) -> list[ast.AST]:
    """What ``node`` can be: through names (also one element of a tuple a helper returns), the parameters of the
    file's functions (each call's argument) and the ``self.`` attributes of its class, with :data:`_KEEP` calls
    stripped."""
    out: list[ast.AST] = []
    for alt in checkpoint_rules._alternatives(facts, _strip(node), names=True):
        unpacked = _unpacked_returns(facts, alt) if depth < _DEPTH else []
        if unpacked:
            for v in unpacked:
                out += _values(facts, v, depth + 1)
            continue
        if isinstance(alt, ast.Name) and facts.resolve(alt) is not alt:
            continue  # a name kept by `names=True`: its value follows
        alt = _strip(alt)
        inner = (_self_values(facts, alt) or _returned(facts, alt)) if depth < _DEPTH else []
        if inner:
            for v in inner:
                out += _values(facts, v, depth + 1)
        else:
            out.append(alt)
    return out


def _class_of(facts: FileFacts, value: ast.AST) -> ast.ClassDef | None:
    """The class of the file ``value`` constructs (``Net(...)``), or None."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return _classes(facts).get(value.func.id)
    return None


# --- FSD077: DDP and a forward that leaves parameters out ---------------------------------------------------

_PARAMETRIC = {
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm",
    "RMSNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LSTM", "GRU", "RNN", "LSTMCell",
    "GRUCell", "RNNCell", "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
    "TransformerEncoderLayer", "TransformerDecoderLayer", "PReLU", "Parameter",
}  # fmt: skip
_CONTAINERS = {"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}
_DYNAMIC = {"children", "modules", "named_children", "named_modules", "parameters", "named_parameters", "_modules", "__dict__"}


def _parametric(facts: FileFacts, value: ast.AST | None, depth: int = 0) -> bool:
    """Does ``value`` (assigned to ``self.x`` in ``__init__``) build a module or parameter that trains?"""
    if not isinstance(value, ast.Call) or depth > _DEPTH:
        return False
    q = facts.qual(value) or ""
    tail = q.rsplit(".", 1)[-1]
    if q.startswith("torch.nn.") and tail in _PARAMETRIC:
        off = (
            kwarg(value, "requires_grad") if tail == "Parameter" else kwarg(value, "elementwise_affine") or kwarg(value, "affine")
        )
        return not (isinstance(off, ast.Constant) and off.value is False)
    if q.startswith("torch.nn.") and tail in _CONTAINERS:
        return any(_parametric(facts, c, depth + 1) for a in value.args for c in ast.walk(a) if isinstance(c, ast.Call))
    cls = _class_of(facts, value)
    if cls is None or "__init__" not in _methods(cls):
        return False
    return any(_parametric(facts, v, depth + 1) for _, v, _ in _registered(facts, cls))


def _registered(facts: FileFacts, cls: ast.ClassDef) -> list[tuple[str, ast.Call, bool]]:
    """(attribute, value, unconditional) of each ``self.x = <call>`` of the class's ``__init__``."""
    init = _methods(cls).get("__init__")
    if init is None:
        return []
    out: list[tuple[str, ast.Call, bool]] = []
    for st in ast.walk(init):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.value, ast.Call):
            t = st.targets[0]
            if isinstance(t, ast.Attribute) and dotted(t.value) == "self":
                plain = not any(
                    isinstance(a, (ast.If, ast.For, ast.While, ast.Try, ast.With)) for a in _ancestors_to(facts, st, init)
                )
                out.append((t.attr, st.value, plain))
    return out


def _ancestors_to(facts: FileFacts, node: ast.AST, stop: ast.AST) -> list[ast.AST]:
    out = []
    for a in facts.ancestors(node):
        if a is stop:
            break
        out.append(a)
    return out


def _frozen(facts: FileFacts) -> tuple[set[str], bool]:
    """(attribute names on the way to each part the file may freeze (``requires_grad_(False)``, ``p.requires_grad = <not
    True>``), whether it freezes by name or the whole model)."""
    key = ("step", "frozen")
    if key in facts.cache:
        got: tuple[set[str], bool] = facts.cache[key]
        return got
    names: set[str] = set()
    generic = False
    for node in facts.nodes:
        recv: ast.AST | None = None
        if isinstance(node, ast.Call) and last_name(node) == "requires_grad_" and isinstance(node.func, ast.Attribute):
            arg = node.args[0] if node.args else kwarg(node, "requires_grad")
            if arg is not None and not _true(arg):  # requires_grad_() alone turns it on
                recv = node.func.value
        elif isinstance(node, ast.Assign) and not _true(node.value):
            t = node.targets[0]
            if isinstance(t, ast.Attribute) and t.attr == "requires_grad":
                loop = next((a for a in facts.ancestors(node) if isinstance(a, ast.For)), None)
                recv = loop.iter if loop is not None else t.value
        if recv is None:
            continue
        attrs = {n.attr for n in ast.walk(recv) if isinstance(n, ast.Attribute)} - _DYNAMIC - {"module", "requires_grad"}
        names |= attrs
        generic = generic or not attrs or any(last_name(c) == "named_parameters" for c in ast.walk(recv))
    facts.cache[key] = (names, generic)
    return names, generic


def _is_self_training(test: ast.AST) -> int:
    """1 for ``self.training``, -1 for ``not self.training``, 0 otherwise."""
    if isinstance(test, ast.Attribute) and test.attr == "training" and dotted(test.value) == "self":
        return 1
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return -_is_self_training(test.operand)
    return 0


@dataclass
class _Reads:
    """The ``self.<attr>`` reads of a forward: every one, and those on every call (``sure``)."""

    methods: dict[str, Function]
    decided: dict[str, int] = field(default_factory=dict)  # forward's flags the file never passes: 1 true, -1 false
    every: set[str] = field(default_factory=set)
    dynamic: bool = False
    _memo: dict[str, set[str]] = field(default_factory=dict)

    def method(self, name: str) -> set[str]:
        if name in self._memo:
            return self._memo[name]
        self._memo[name] = set()  # a recursion reads nothing more
        sure, _ = self.block(self.methods[name].body)
        self._memo[name] = sure
        return sure

    def block(self, stmts: list[ast.stmt]) -> tuple[set[str], bool]:
        """(reads on every run of ``stmts``, whether the block always leaves: return, raise, break, continue)."""
        sure: set[str] = set()
        for i, st in enumerate(stmts):
            if isinstance(st, ast.If):
                got, done = self._if(st, stmts[i + 1 :])
                sure |= got
                if done is not None:
                    return sure, done
                continue
            got, exits = self._statement(st)
            sure |= got
            if exits:
                return sure, True
        return sure, False

    def _if(self, st: ast.If, rest: list[ast.stmt]) -> tuple[set[str], bool | None]:
        """(reads on every run, whether the block then always leaves; None: it goes on after the ``if``). An arm
        that leaves early makes the statements after it run on the other path only."""
        sure = self.expr(st.test)
        body, b_exit = self.block(st.body)
        other, o_exit = self.block(st.orelse)
        # a training step takes this arm (no backward in evaluation), or the file leaves the flag at its default
        taken = _is_self_training(st.test) or self._decided(st.test)
        if taken:
            path, exits = (body, b_exit) if taken == 1 else (other, o_exit)
            if exits:
                self.block(rest)  # evaluation only
                return sure | path, True
            return sure | path, None
        if b_exit and o_exit:
            return sure | body & other, True
        if b_exit or o_exit:
            after, r_exit = self.block(rest)
            return sure | (body & (other | after) if b_exit else other & (body | after)), r_exit
        return sure | body & other, None

    def _decided(self, test: ast.AST) -> int:
        if isinstance(test, ast.Name):
            return self.decided.get(test.id, 0)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return -self._decided(test.operand)
        return 0

    def _statement(self, st: ast.stmt) -> tuple[set[str], bool]:
        """(reads on every run of ``st``, not an ``if``; whether it always leaves the block)."""
        if isinstance(st, (ast.Return, ast.Raise)):
            return self.expr(st), True
        if isinstance(st, (ast.Break, ast.Continue)):
            return set(), True
        if isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
            head = self.expr(st.iter if isinstance(st, (ast.For, ast.AsyncFor)) else st.test)
            self.block(st.orelse)
            return head | self.block(st.body)[0], False  # the loop is taken to run
        if isinstance(st, (ast.With, ast.AsyncWith)):
            heads: set[str] = set()
            for it in st.items:
                heads |= self.expr(it.context_expr)
            body, exits = self.block(st.body)
            return heads | body, exits
        if isinstance(st, ast.Try):
            body, exits = self.block(st.body)
            for h in st.handlers:
                self.block(h.body)
            self.block(st.orelse)
            return body | self.block(st.finalbody)[0], exits
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Match)):
            self.expr(st)  # a closure, a match: read on some calls
            return set(), False
        return self.expr(st), False

    def expr(self, node: ast.AST) -> set[str]:
        """Reads of ``node`` on every evaluation (both arms of ``a if c else b`` for sure, the first operand of
        ``and`` / ``or``; not a lambda's body); every read lands in :attr:`every`."""
        sure: set[str] = set()
        todo: list[tuple[ast.AST, bool]] = [(node, True)]
        while todo:
            cur, on = todo.pop()
            if isinstance(cur, ast.IfExp):
                todo.append((cur.test, on))
                a, b = self.expr(cur.body), self.expr(cur.orelse)
                if on:
                    sure |= a & b
                continue
            if isinstance(cur, ast.BoolOp):
                todo.append((cur.values[0], on))
                todo += [(v, False) for v in cur.values[1:]]
                continue
            if isinstance(cur, ast.Lambda):
                todo.append((cur.body, False))
                continue
            if isinstance(cur, ast.Attribute) and isinstance(cur.value, ast.Name) and cur.value.id == "self":
                if cur.attr in _DYNAMIC:
                    self.dynamic = True
                self.every.add(cur.attr)
                if on:
                    sure.add(cur.attr)
            if isinstance(cur, ast.Call):
                self._call(cur, on, sure)
            todo += [(c, on) for c in ast.iter_child_nodes(cur)]
        return sure

    def _call(self, call: ast.Call, on: bool, sure: set[str]) -> None:
        f = call.func
        if isinstance(f, ast.Name) and f.id in ("getattr", "vars", "super"):
            self.dynamic = True
        if any(isinstance(a, ast.Name) and a.id == "self" for a in [*call.args, *(k.value for k in call.keywords)]):
            self.dynamic = True  # helper(self, x): the helper may read anything
        if isinstance(f, ast.Attribute) and dotted(f.value) == "self" and f.attr in self.methods:
            got = self.method(f.attr)  # its reads land in :attr:`every` as it is walked
            if on:
                sure |= got


def _ddp_calls(facts: FileFacts) -> list[ast.Call]:
    return [c for c in facts.calls() if facts.qual(c) == DDP and c.args]


def _leaves_out(facts: FileFacts, cls: ast.ClassDef) -> list[str]:
    """Descriptions of the trained parts of ``cls`` its forward leaves out of some calls (empty: none, or unknown)."""
    methods = _methods(cls)
    fwd = methods.get("forward")
    if fwd is None:
        return []
    frozen, generic = _frozen(facts)
    if generic:
        return []
    init = methods.get("__init__")
    tied = {
        n.value.attr
        for n in (ast.walk(init) if init is not None else [])
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and dotted(n.value.value) == "self"
    }
    reads = _Reads(methods, _kept_defaults(facts, fwd))
    sure, _ = reads.block(fwd.body)
    if reads.dynamic:
        return []
    out = []
    for attr, value, plain in _registered(facts, cls):
        if not plain or attr in frozen or attr in tied or attr in methods or not _parametric(facts, value):
            continue
        if attr not in reads.every:
            out.append(f"self.{attr} (line {value.lineno}) is never used in {cls.name}.forward")
        elif attr not in sure:
            out.append(f"self.{attr} (line {value.lineno}) is used in {cls.name}.forward on some calls only")
    return out


def _kept_defaults(facts: FileFacts, fwd: Function) -> dict[str, int]:
    """Forward's parameters with a constant default that no call of the file passes (by keyword, through ``**``,
    or by position to a DDP / FSDP wrapper): name -> 1 (a true default) or -1 (false, None)."""
    a = fwd.args
    positional = a.posonlyargs + a.args
    pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True))
    pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
    flags = {arg.arg: (1 if d.value else -1) for arg, d in pairs if isinstance(d, ast.Constant)}
    if not flags:
        return {}
    index = {arg.arg: i - 1 for i, arg in enumerate(positional)}  # position in a call (self not passed)
    for call in facts.calls():
        if any(k.arg is None for k in call.keywords):
            return {}  # model(**batch): anything may be passed
        for k in call.keywords:
            flags.pop(k.arg or "", None)
        if isinstance(call.func, (ast.Name, ast.Attribute)) and divergence.is_wrapped(facts, call.func):
            for name in [n for n in flags if n in index and (len(call.args) > index[n] or _starred(call))]:
                flags.pop(name)
    return flags


def _starred(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args)


@finder("FSD077")
def ddp_unused_parameters(facts: FileFacts) -> Found:
    """FSD077: ``DDP(model)`` without ``find_unused_parameters`` whose module's forward leaves trained parts out."""
    for call in _ddp_calls(facts):
        if kwarg(call, "find_unused_parameters") is not None and not _false(kwarg(call, "find_unused_parameters")):
            continue
        if kwarg(call, "static_graph") is not None or any(k.arg is None for k in call.keywords):
            continue
        for value in _values(facts, call.args[0]):
            cls = _class_of(facts, value)
            missing = _leaves_out(facts, cls) if cls is not None else []
            if missing:
                yield call, "; ".join(missing[:2])
                break


def _false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


# --- FSD078: a padded evaluation sampler's duplicates in a gathered metric ----------------------------------

_SAMPLERS = {"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"}
_LOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
_GATHERS = {"all_gather", "all_gather_object", "gather", "gather_object", "all_gather_into_tensor"}
_ITER_WRAPPERS = {"enumerate", "tqdm", "iter", "zip"}


def _padding_sampler(facts: FileFacts, node: ast.AST | None) -> ast.Call | None:
    """The ``DistributedSampler(...)`` call ``node`` is, when it keeps the default ``drop_last=False``."""
    for v in _values(facts, node) if node is not None else []:
        if isinstance(v, ast.Call) and facts.qual(v) in _SAMPLERS:
            drop = kwarg(v, "drop_last", 5)
            if drop is None or _false(drop):
                return v
    return None


def _loop_sources(facts: FileFacts, it: ast.AST) -> list[ast.AST]:
    """What a ``for`` iterates: its iterable through ``enumerate`` / ``tqdm`` / ``zip`` and names."""
    while isinstance(it, ast.Call) and (last_name(it) or "") in _ITER_WRAPPERS and it.args:
        it = it.args[0]
    return _values(facts, it)


def _padded_loader(facts: FileFacts, it: ast.AST) -> ast.Call | None:
    """The padding sampler of the ``DataLoader`` a loop iterates, or None."""
    for v in _loop_sources(facts, it):
        if isinstance(v, ast.Call) and facts.qual(v) in _LOADERS:
            found = _padding_sampler(facts, kwarg(v, "sampler", 3))
            if found is not None:
                return found
    return None


def _trains(loop: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and last_name(n) in ("backward", "step") for n in ast.walk(loop))


def _accumulated(loop: ast.For | ast.AsyncFor) -> set[str]:
    """Names the loop body adds to, whole or by element (``correct += ...``, ``correct[0] += ...``)."""
    out = set()
    for n in ast.walk(loop):
        if isinstance(n, ast.AugAssign):
            target = n.target.value if isinstance(n.target, ast.Subscript) else n.target
            if isinstance(target, ast.Name):
                out.add(target.id)
    return out


_LENGTH_WORDS = ("len", "num", "size", "total", "count")


def _length(node: ast.AST) -> bool:
    """Does ``node`` read a length (``len(dataset)``, ``num_samples``, ``n``)?"""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len":
            return True
        text = (dotted(n) or "").lower() if isinstance(n, (ast.Name, ast.Attribute)) else ""
        if text in ("n", "n_samples") or any(w in text for w in _LENGTH_WORDS):
            return True
    return False


def _truncates(facts: FileFacts, scope: ast.AST) -> bool:
    """Does the function cut anything to a length (``preds[:n]``, ``preds[:len(dataset)]``)?"""
    return any(
        isinstance(n, ast.Slice) and n.upper is not None and n.lower is None and _length(n.upper)
        for n in facts.scope_nodes(scope)
    )


def _dist(facts: FileFacts, call: ast.Call, names: set[str]) -> bool:
    q = facts.qual(call) or ""
    return q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in names


@finder("FSD078")
def padded_eval_gathered(facts: FileFacts) -> Found:
    """FSD078: results of an evaluation loop over a padding ``DistributedSampler`` gathered (or counts summed) whole."""
    if not any(facts.qual(c) in _SAMPLERS for c in facts.calls()):
        return
    gathers = any(_dist(facts, c, _GATHERS | {"all_reduce", "reduce"}) for c in facts.calls())
    for loop in facts.nodes if gathers else []:
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or _trains(loop):
            continue
        sampler = _padded_loader(facts, loop.iter)
        scope = facts.scope_of(loop)
        if sampler is None or _truncates(facts, scope):
            continue
        counts = _accumulated(loop)
        for node in facts.scope_nodes(scope):
            if not isinstance(node, ast.Call):
                continue
            summed = _dist(facts, node, {"all_reduce", "reduce"}) and any(
                isinstance(a, ast.Name) and a.id in counts for a in node.args[:1]
            )
            if _dist(facts, node, _GATHERS) or summed:
                what = "summed" if summed else "gathered"
                yield (
                    node,
                    f"the loop at line {loop.lineno} reads a DistributedSampler (line {sampler.lineno}) that pads; {what} here",
                )
                break


# --- FSD079: a hand split per rank of uneven sizes ---------------------------------------------------------

_SPLITTERS = {"numpy.array_split", "torch.chunk", "torch.tensor_split", "numpy.split"}
_AGREE = {"MIN", "MAX"}


_PADS = {"torch.nn.functional.pad", "numpy.pad"}


def _evened(facts: FileFacts, base: ast.AST) -> bool:
    """Was ``base`` first cut to a multiple of the world size (``data[: len(data) // world * world]``) or padded
    before it was split (``F.pad(x, [0, 0, 0, -n % parts]).chunk(parts)``, stylegan3's metrics: padding before a
    split is there to even its parts)?"""
    v = facts.resolve(base)
    if (
        isinstance(v, ast.Subscript)
        and isinstance(v.slice, ast.Slice)
        and v.slice.upper is not None
        and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv) for n in ast.walk(v.slice.upper))
    ):
        return True
    return v is not None and any(isinstance(n, ast.Call) and facts.qual(n) in _PADS for n in ast.walk(v))


def _paired_ranks(facts: FileFacts) -> set[str]:
    """Names bound to the rank in a tuple assignment (``rank, world = dist.get_rank(), dist.get_world_size()``)."""
    key = ("step", "paired")
    if key not in facts.cache:
        names = set()
        for n in facts.nodes:
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Tuple):
                for t in n.targets:
                    if isinstance(t, ast.Tuple) and len(t.elts) == len(n.value.elts):
                        names |= {
                            a.id
                            for a, v in zip(t.elts, n.value.elts, strict=True)
                            if isinstance(a, ast.Name) and facts.is_rank_expr(v)
                        }
        facts.cache[key] = names
    found: set[str] = facts.cache[key]
    return found


def _rank(facts: FileFacts, node: ast.AST) -> bool:
    """Is ``node`` this process's rank (also a name paired with it in a tuple assignment)?"""
    return facts.is_rank_expr(node) or isinstance(node, ast.Name) and node.id in _paired_ranks(facts)


def _split(facts: FileFacts, node: ast.AST) -> bool:
    """Is ``node`` one rank's part of a split whose parts can differ in size?"""
    if isinstance(node, ast.Subscript):
        s = node.slice
        if isinstance(s, ast.Slice) and s.lower is not None and s.step is not None and s.upper is None:
            return _rank(facts, s.lower) and not _evened(facts, node.value)
        inner = node.value
        if isinstance(inner, ast.Call) and not isinstance(s, ast.Slice) and _rank(facts, s):
            q = facts.qual(inner) or ""
            f = inner.func
            method = isinstance(f, ast.Attribute) and f.attr in ("chunk", "tensor_split")
            base = (
                inner.args[0] if q in _SPLITTERS and inner.args else f.value if isinstance(f, ast.Attribute) and method else None
            )
            return base is not None and not _evened(facts, base)
    if isinstance(node, ast.Call) and facts.qual(node) == "itertools.islice" and len(node.args) == 4:
        return _rank(facts, node.args[1])
    return False


def _modulo_rank(facts: FileFacts, node: ast.AST) -> bool:
    """``i % world == rank`` (either side)."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
        return False
    a, b = node.left, node.comparators[0]
    return any(isinstance(x, ast.BinOp) and isinstance(x.op, ast.Mod) and _rank(facts, y) for x, y in ((a, b), (b, a)))


def _bound(targets: list[ast.expr]) -> set[str]:
    """The names and ``self.`` attributes (dotted) that ``targets`` bind."""
    return {d for t in targets for n in ast.walk(t) if isinstance(n, (ast.Name, ast.Attribute)) and (d := dotted(n))}


def _pairs(st: ast.Assign) -> list[tuple[ast.expr, ast.expr]]:
    """``a, b = x, y``: (target, value) by position; empty for any other assignment."""
    t, v = st.targets[0], st.value
    if len(st.targets) == 1 and isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts):
        return list(zip(t.elts, v.elts, strict=True))
    return []


def _rank_tainted(facts: FileFacts, fn: Function, seed: set[str] | None = None) -> set[str]:
    """Names (and dotted ``self.`` attributes) of ``fn`` whose value derives from the rank (``g =
    Generator().manual_seed(seed + self.rank)``, then ``n = int(torch.randint(..., generator=g))``; ``with
    open(self.path) as f``), in source order, starting from ``seed``."""
    tainted = set(seed or ())
    for st in facts.scope_nodes(fn):
        if isinstance(st, ast.Assign) and _pairs(st):
            tainted |= {d for t, v in _pairs(st) if _reads_rank(facts, v, tainted) for d in _bound([t])}
        elif isinstance(st, ast.Assign) and _reads_rank(facts, st.value, tainted):
            tainted |= _bound(st.targets)
        elif isinstance(st, ast.withitem) and st.optional_vars is not None and _reads_rank(facts, st.context_expr, tainted):
            tainted |= _bound([st.optional_vars])
    return tainted


def _reads_rank(facts: FileFacts, node: ast.AST, tainted: set[str]) -> bool:
    return any(isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) in tainted or _rank(facts, n) for n in ast.walk(node))


def _equal_range(facts: FileFacts, node: ast.AST, tainted: set[str]) -> bool:
    """``range(rank * n, (rank + 1) * n)``: both bounds move with the rank, the count does not."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and len(node.args) >= 2
        and all(_reads_rank(facts, a, tainted) for a in node.args[:2])
    )


def _rank_sized(facts: FileFacts, cls: ast.ClassDef, fn: Function) -> ast.AST | None:
    """The loop of a generator ``fn`` (the ``__iter__`` of ``cls``) whose number of yields depends on the rank: a
    ``for`` / ``while`` holding a ``yield`` whose iterable or test derives from the rank (a per-rank stream of drawn
    length, a per-rank file; ``self.`` attributes the class's ``__init__`` derives from it count). Not one over equal
    per-rank ranges."""
    init = _methods(cls).get("__init__")
    tainted = _rank_tainted(facts, fn, {a for a in _rank_tainted(facts, init) if a.startswith("self.")} if init else None)
    for loop in facts.scope_nodes(fn):
        head = loop.iter if isinstance(loop, (ast.For, ast.AsyncFor)) else loop.test if isinstance(loop, ast.While) else None
        if head is None or not any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(loop)):
            continue
        if _reads_rank(facts, head, tainted) and not _equal_range(facts, head, tainted):
            return head
    return None


def _sharded_iterable(facts: FileFacts, cls: ast.ClassDef) -> ast.AST | None:
    it = _methods(cls).get("__iter__")
    if it is None:
        return None
    found = next((n for n in ast.walk(it) if _split(facts, n) or _modulo_rank(facts, n)), None)
    return found if found is not None else _rank_sized(facts, cls, it)


def _split_source(facts: FileFacts, node: ast.AST, depth: int = 0) -> ast.AST | None:
    """The per-rank split ``node`` is built from (itself, a ``Dataset`` / ``DataLoader`` of it), or None."""
    if depth > _DEPTH:
        return None
    for v in _values(facts, node):
        if _split(facts, v):
            return v
        cls = _class_of(facts, v)
        if cls is not None:
            found = _sharded_iterable(facts, cls)
            if found is not None:
                return found
        if isinstance(v, ast.Call) and v.args and not isinstance(v.args[0], ast.Starred):
            found = _split_source(facts, v.args[0], depth + 1)
            if found is not None:
                return found
    return None


def _fsdp_forward(facts: FileFacts, call: ast.Call) -> bool:
    """``model(x)`` of an FSDP module: each forward all-gathers the parameters (a collective of every rank)."""
    return isinstance(call.func, (ast.Name, ast.Attribute)) and facts.is_fsdp(call.func)


def _steps(facts: FileFacts, loop: ast.AST) -> bool:
    """Does the loop body run a backward, a ``torch.distributed`` collective or an FSDP forward, and never ``break``?"""
    work = False
    for n in ast.walk(loop):
        if isinstance(n, ast.Break):
            return False
        if isinstance(n, ast.Call) and (last_name(n) == "backward" or _dist(facts, n, rc.COLLECTIVES) or _fsdp_forward(facts, n)):
            work = True
    return work


def _join_call(facts: FileFacts, node: ast.AST | None) -> bool:
    """``Join([...])`` or a DDP wrapper's ``model.join()``."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return facts.qual(node) == JOIN or isinstance(f, ast.Attribute) and f.attr == "join" and divergence._is_ddp(facts, f.value)


def _joined(facts: FileFacts, loop: ast.AST) -> bool:
    """Is the loop inside ``with Join(...)`` / ``with model.join()``, or does the file make a Join the file cannot
    place (one kept in a variable)?"""
    for anc in facts.ancestors(loop):
        if isinstance(anc, (ast.With, ast.AsyncWith)) and any(_join_call(facts, it.context_expr) for it in anc.items):
            return True
    key = ("step", "unplaced join")
    if key not in facts.cache:  # once per file, not per loop
        facts.cache[key] = any(
            _join_call(facts, c) and not isinstance(facts.parents.get(id(c)), ast.withitem) for c in facts.calls()
        )
    unplaced: bool = facts.cache[key]
    return unplaced


def _agrees(facts: FileFacts, scope: ast.AST) -> bool:
    """A ``ReduceOp.MIN`` / ``MAX`` in the function or the file's module level (the ranks agree on a count)."""
    return any(
        isinstance(n, ast.Attribute) and n.attr in _AGREE and "ReduceOp" in (dotted(n.value) or "")
        for sc in (scope, facts.tree)
        for n in facts.scope_nodes(sc)
    )


@finder("FSD079")
def uneven_split_loop(facts: FileFacts) -> Found:
    """FSD079: a training / collective loop over data split by hand per rank into parts that can differ in size."""
    if not any(_split(facts, n) or _modulo_rank(facts, n) for n in facts.nodes) and not any(
        _sharded_iterable(facts, cls) is not None for cls in _classes(facts).values()
    ):
        return  # one pass: most files split nothing by hand
    for loop in facts.nodes:
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or not _steps(facts, loop) or _joined(facts, loop):
            continue
        it = loop.iter
        while isinstance(it, ast.Call) and (last_name(it) or "") in _ITER_WRAPPERS and it.args:
            it = it.args[0]
        split = _split_source(facts, it)
        if split is not None and not _agrees(facts, facts.scope_of(loop)):
            line = getattr(split, "lineno", loop.lineno)
            by_hand = _split(facts, split) or _modulo_rank(facts, split)
            yield (
                loop,
                f"split per rank at line {line}"
                if by_hand
                else f"how many items each rank reads depends on its rank (line {line})",
            )


# --- FSD080: generate on a sharded model without synced_gpus -----------------------------------------------


def _registered_generate(facts: FileFacts) -> set[str | None]:
    return {
        dotted(c.args[0])
        for c in facts.calls()
        if last_name(c) == "register_fsdp_forward_method"
        and len(c.args) > 1
        and isinstance(c.args[1], ast.Constant)
        and c.args[1].value == "generate"
    }


def _fsdp1_nested(facts: FileFacts) -> bool:
    """Does the file wrap FSDP1 units inside the root and reshard them after forward?"""
    wraps = [c for c in facts.calls() if facts.qual(c) == FSDP1]
    nested = len(wraps) > 1 or any(kwarg(c, "auto_wrap_policy") is not None for c in wraps)
    keeps = any(
        isinstance(n, ast.Attribute) and n.attr in ("SHARD_GRAD_OP", "NO_SHARD", "_HYBRID_SHARD_ZERO2") for n in facts.nodes
    )
    return nested and not keeps


def _zero3(facts: FileFacts) -> bool:
    """ZeRO stage 3 written in the file (``{"stage": 3}``, ``zero_stage=3``, ``deepspeed.zero.Init``), no HfDeepSpeedConfig."""
    found = False
    for n in facts.nodes:
        if isinstance(n, ast.Dict):
            found = found or any(
                isinstance(k, ast.Constant) and k.value == "stage" and isinstance(v, ast.Constant) and v.value == 3
                for k, v in zip(n.keys, n.values, strict=False)
            )
        elif isinstance(n, ast.keyword) and n.arg == "zero_stage" and isinstance(n.value, ast.Constant):
            found = found or n.value.value == 3
        elif isinstance(n, ast.Call):
            q = facts.qual(n) or ""
            if q.endswith("HfDeepSpeedConfig"):
                return False
            found = found or q == "deepspeed.zero.Init"
    return found


def _deepspeed_model(facts: FileFacts, node: ast.AST) -> bool:
    """The engine of ``deepspeed.initialize`` (or the model given to it)?"""
    for v in _values(facts, node):
        if isinstance(v, ast.Attribute) and v.attr == "module":  # model = engine.module
            v = _strip(v.value)
            v = facts.resolve(v) or v
        if isinstance(v, ast.Call) and facts.qual(v) == "deepspeed.initialize":
            return True
    if isinstance(node, ast.Name):
        for c in facts.calls():
            if facts.qual(c) == "deepspeed.initialize":
                given = kwarg(c, "model")
                if isinstance(given, ast.Name) and given.id == node.id and facts.scope_of(c) is facts.scope_of(node):
                    return True
    return False


def _fsdp1_value(facts: FileFacts, node: ast.AST) -> bool:
    """Is ``node`` an ``FSDP(...)`` root reached through the parameters of the file's functions and the values its
    helpers return (``tok, model = load(name)`` ... ``answer(tok, model, prompts)``)?"""
    return any(isinstance(v, ast.Call) and facts.qual(v) == FSDP1 for v in _values(facts, node))


def _sharded_during_generate(facts: FileFacts, call: ast.Call, recv: ast.AST) -> str | None:
    root = recv.value if isinstance(recv, ast.Attribute) and recv.attr == "module" else recv
    if not isinstance(root, (ast.Name, ast.Attribute)):
        return None
    if facts.is_fsdp2(root) and root is recv:
        lazy = any(_false(kwarg(c, "reshard_after_forward")) for c in facts.calls() if facts.qual(c) == FULLY_SHARD)
        return "an FSDP2 module" if dotted(root) in _registered_generate(facts) and not lazy else None
    if facts.is_fsdp1(root) or _fsdp1_value(facts, root):
        return "an FSDP1 model with nested units" if _summoned(facts, call) and _fsdp1_nested(facts) else None
    if _zero3(facts) and _deepspeed_model(facts, root):
        return "a DeepSpeed ZeRO-3 model"
    return None


_ENCODERS = ("tok", "processor", "encode")


def _may_hold_options(facts: FileFacts, node: ast.AST) -> bool:
    """Can ``**node`` in a ``generate()`` call carry ``synced_gpus``? Not when it is a tokenizer's (or processor's)
    output: ``batch = tok(prompts, return_tensors="pt").to("cuda")`` ... ``generate(**batch)``."""
    value = facts.resolve(node) or node
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("to", "cuda"):
        value = facts.resolve(value.func.value) or value.func.value
    if isinstance(value, ast.Call):
        name = (dotted(value.func) or "").lower()
        return not any(w in name.rsplit(".", 1)[-1] or w in name for w in _ENCODERS)
    return True


@finder("FSD080")
def generate_without_synced_gpus(facts: FileFacts) -> Found:
    """FSD080: HF ``generate()`` without ``synced_gpus`` on a model sharded while it generates."""
    if not any(v.startswith("transformers") for v in facts.aliases.values()):
        return
    for call in facts.calls():
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "generate"):
            continue
        if kwarg(call, "synced_gpus") is not None or any(
            k.arg is None and _may_hold_options(facts, k.value) for k in call.keywords
        ):
            continue
        kind = _sharded_during_generate(facts, call, call.func.value)
        if kind is not None:
            yield call, f"{dotted(call.func.value) or '...'}.generate() of {kind}"
