"""What the rules need to know about one parsed file (:class:`FileFacts`), computed once from its ``ast`` (never
imported or run).

- **Names**: each import alias resolves to its canonical torch name (``dist.barrier`` ->
  ``torch.distributed.barrier``, ``torch.distributed._composable.fsdp.fully_shard`` ->
  ``torch.distributed.fsdp.fully_shard``), so a rule matches the API, not the spelling.
- **Scopes and versions**: a name is followed inside its function (or the module body): each binding
  (assignment, ``for`` target, ``with ... as``, parameter) is a version, and a load sees the last binding
  before it. ``model = FSDP(model)`` therefore reads the old ``model`` and binds a new one.
- **Module chains**: :meth:`FileFacts.chain` follows a module expression to the variable it hangs off:
  ``layer`` in ``for layer in model.layers`` is ``model.layers[*]``; ``model.to(device)``, ``FSDP(model)``,
  ``fully_shard(model)`` and ``torch.compile(model)`` are ``model``.
- **Rank conditions**: ``if`` tests that hold on some ranks only: comparisons involving
  ``dist.get_rank()``, ``int(os.environ["RANK"])``, ``LOCAL_RANK``, variables bound to those, parameters and
  attributes named ``rank`` / ``local_rank`` / ``global_rank``, and ``is_main_process()``-style helpers or
  flags (``master_process = rank == 0``); a function decorated ``@rank_zero_only`` runs on rank 0 only.
- **Wrapped modules**: the dotted names (``model``, ``self.model``) that hold an FSDP1 wrapper
  (``x = FSDP(...)``) or an FSDP2 module (``fully_shard(x)``), by name per scope (an attribute over the whole
  file). :func:`fsdp_skill.core.check.calls.build_facts` follows them further: through parameters, return
  values, ``self.`` attributes, closures and simple wrappers, across the functions of a file and the files of
  a checked project.
"""

from __future__ import annotations

import ast
import bisect
import functools
import math
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

# canonical spellings: (old prefix, new prefix), applied until none matches
_CANON = [
    ("torch.distributed._composable.fsdp.fully_shard.", "torch.distributed.fsdp."),
    ("torch.distributed._composable.fsdp.", "torch.distributed.fsdp."),
    ("torch.distributed.fsdp._fully_shard._fully_shard.", "torch.distributed.fsdp."),
    ("torch.distributed.fsdp._fully_shard.", "torch.distributed.fsdp."),
    ("torch.distributed.fsdp.fully_sharded_data_parallel.", "torch.distributed.fsdp."),
    ("torch.distributed.fsdp.api.", "torch.distributed.fsdp."),
    ("torch.distributed.fsdp.sharded_grad_scaler.", "torch.distributed.fsdp."),
    ("torch.distributed.distributed_c10d.", "torch.distributed."),
    ("torch.distributed.device_mesh.", "torch.distributed."),
    ("torch.distributed.checkpoint.state_dict_saver.", "torch.distributed.checkpoint."),
    ("torch.distributed.checkpoint.state_dict_loader.", "torch.distributed.checkpoint."),
    ("torch.cuda.amp.grad_scaler.", "torch.amp."),
    ("torch.amp.grad_scaler.", "torch.amp."),
    ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler"),
    ("torch.nn.parallel.distributed.", "torch.nn.parallel."),
    ("torch.distributed.algorithms.join.", "torch.distributed.algorithms."),
    ("torch.distributed.optim.zero_redundancy_optimizer.", "torch.distributed.optim."),
    ("torch.nn.utils.clip_grad.", "torch.nn.utils."),
    ("torch.distributed.tensor.parallel.api.", "torch.distributed.tensor.parallel."),
]

FSDP1 = "torch.distributed.fsdp.FullyShardedDataParallel"
FULLY_SHARD = "torch.distributed.fsdp.fully_shard"
DDP = "torch.nn.parallel.DistributedDataParallel"
JOIN = "torch.distributed.algorithms.Join"
# calls that return (a wrapper of) the module they are given as first argument
_WRAPPERS = {
    FSDP1,
    FULLY_SHARD,
    DDP,
    "torch.compile",
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper",
}
# module methods that return the module itself
_SELF_METHODS = {
    "to",
    "cuda",
    "cpu",
    "bfloat16",
    "half",
    "float",
    "double",
    "to_empty",
    "train",
    "eval",
    "requires_grad_",
    "type",
    "xpu",
}
# for-loop iterables: call -> the element is a part of its first argument (or receiver)
_ITER_FUNCS = {"enumerate", "reversed", "list", "tuple", "zip", "sorted", "iter"}
_ITER_METHODS = {"modules", "children", "named_modules", "named_children", "values", "items"}

RANK_ENV = {
    "RANK",
    "LOCAL_RANK",
    "GROUP_RANK",
    "NODE_RANK",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
}
_RANK_NAMES = {"rank", "local_rank", "global_rank", "node_rank", "process_index", "local_process_index"}
_RANK_GETTERS = {"get_rank", "get_local_rank", "get_global_rank", "get_group_rank", "get_node_local_rank"}
_MAIN_NAME = re.compile(
    r"^(is_(local_|global_|world_)?(main|master|primary|chief|rank_?0|rank_?zero|global_zero|process_zero)"
    r"(_process|_rank|_node|_worker)?|is_world_process_zero|is_local_process_zero|"
    r"(local_|global_)?(main|master)_(process|rank|worker)|rank_?zero|rank0)$"
)
_RANK_ZERO_DECORATORS = {"rank_zero_only", "main_process_only", "on_main_process", "rank0_only", "master_only"}

Pos = tuple[int, int]
_UNKNOWN: Any = object()  # not in a memo yet


def analysis_clock() -> float:
    """The clock of the per-file analysis budget: CPU seconds of the calling thread (``time.thread_time``), so a
    file's budget counts the checker's own work, not the time other processes on a busy machine take from it."""
    return time.thread_time()


class BudgetExceeded(Exception):
    """The analysis of one file ran past its deadline (:attr:`FileFacts.deadline`, an :func:`analysis_clock`
    value): raised by :meth:`FileFacts.tick`; the engine turns it into an ``FSD000`` finding."""


class Located(Protocol):
    """An ast node with a source position: a statement, an expression, a keyword, an argument (``ast.AST``
    itself declares none). Lines are 1-based, columns 0-based UTF-8 byte offsets, as :mod:`ast` gives them."""

    lineno: int
    col_offset: int
    end_lineno: int | None
    end_col_offset: int | None


_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_EXITS = (ast.Return, ast.Continue, ast.Break)  # not raise: an error path, the job fails anyway
_SHORT_CLIMB = 32  # block_of climbs this many parents before it searches the holder's statements instead
_BLOCKS = ("body", "orelse", "finalbody")  # the statement lists of a compound statement (a handler's: its body)
# singleton nodes (Load(), Add(), Eq(), ...) shared by the whole tree: not indexed
_SHARED = (ast.expr_context, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)


def _const(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _every_rank(test: ast.Compare) -> bool:
    """``local_rank != -1`` / ``rank >= 0``: true on every rank of a distributed job (-1 means "not distributed")."""
    if len(test.ops) != 1:
        return False
    op, value = test.ops[0], _const(test.comparators[0])
    if isinstance(op, (ast.NotEq, ast.NotIn)):
        return value == -1 or isinstance(value, (list, tuple, set)) and len(value) > 0 and all(v == -1 for v in value)
    return isinstance(op, ast.GtE) and value == 0 or isinstance(op, ast.Gt) and value == -1


_RANK_PREFIXES = {
    "local",
    "global",
    "node",
    "ddp",
    "dp",
    "tp",
    "pp",
    "cp",
    "ep",
    "fsdp",
    "world",
    "process",
    "proc",
    "group",
    "my",
    "worker",
    "gpu",
    "device",
    "cur",
    "current",
    "this",
    "shard",
    "replicate",
    "mesh",
    "data_parallel",
    "dist",
    "src",
    "dst",
}
_NOT_PROCESS = ("lora", "peft", "adapter", "svd", "matrix", "tensor")  # a matrix rank, not a process rank


def rank_name(name: str) -> bool:
    """``rank``, ``local_rank``, ``global_rank``, ``ddp_rank``, ... (a name that holds this process's rank; not
    ``lora_rank``)."""
    return name in _RANK_NAMES or name.endswith("_rank") and name[:-5] in _RANK_PREFIXES


@functools.lru_cache(maxsize=4096)
def main_name(name: str) -> bool:
    """``is_main_process``, ``is_master``, ``master_process``, ``is_rank_zero``, ..."""
    return bool(_MAIN_NAME.match(name))


@functools.lru_cache(maxsize=4096)
def canon(name: str) -> str:
    """The canonical spelling of a dotted torch name."""
    changed = True
    while changed:
        changed = False
        for old, new in _CANON:
            if name.startswith(old) or name == old.rstrip("."):
                name = new + name[len(old) :] if name.startswith(old) else new.rstrip(".")
                changed = True
    return name


def last_name(node: ast.AST) -> str | None:
    """``x`` of ``a.b.x`` / ``x`` / ``a.x(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def dotted(node: ast.AST) -> str | None:
    """``self.model`` for a Name/Attribute chain, else None (iterative: a chain of any length)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def kwarg(call: ast.Call, name: str, pos: int | None = None) -> ast.expr | None:
    """The argument ``name`` of ``call`` (by keyword, or positional index ``pos``)."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if pos is not None and len(call.args) > pos and not any(isinstance(a, ast.Starred) for a in call.args[: pos + 1]):
        return call.args[pos]
    return None


def is_true(node: ast.AST | None) -> bool:
    """Is ``node`` the constant ``True``?"""
    return isinstance(node, ast.Constant) and node.value is True


def start(node: Located) -> Pos:
    """(line, column) where ``node`` starts."""
    return (node.lineno, node.col_offset)


def end(node: Located) -> Pos:
    """(line, column) where ``node`` ends (its start line and column 0 when ast gives no end)."""
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)


@dataclass
class Binding:
    """One binding of a name in a scope: where it takes effect, and what it was bound to."""

    pos: Pos
    kind: str  # assign | for | with | param | other
    value: ast.AST | None = None
    index: int = 0


@dataclass
class Chain:
    """A module expression as (the variable binding it hangs off, the path below it)."""

    root: tuple[int, str, int]
    parts: tuple[str, ...] = ()

    def covers(self, other: Chain) -> bool:
        """True when ``other`` is this module or a submodule of it ('[*]' matches any index)."""
        if self.root != other.root or len(self.parts) > len(other.parts):
            return False
        head = other.parts[: len(self.parts)]
        if head == self.parts:
            return True
        if "[*]" not in self.parts and "[*]" not in head:
            return False  # some part differs and neither side is a wildcard there
        return all(
            a == b or "[*]" in (a, b) and a.startswith("[") and b.startswith("[")
            for a, b in zip(self.parts, other.parts, strict=False)
        )


@dataclass
class FileFacts:
    """The facts of one parsed file (see the module docstring); :meth:`build` computes them from its tree."""

    tree: ast.Module
    aliases: dict[str, str] = field(default_factory=dict)
    parents: dict[int, ast.AST] = field(default_factory=dict)
    bindings: dict[tuple[int, str], list[Binding]] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)  # module-level
    rank_names: set[str] = field(default_factory=set)
    main_flags: set[str] = field(default_factory=set)
    fsdp1: set[tuple[int, str]] = field(default_factory=set)
    fsdp2: set[tuple[int, str]] = field(default_factory=set)
    ddp: set[tuple[int, str]] = field(default_factory=set)
    joined: set[tuple[int, str]] = field(default_factory=set)  # modules passed to Join([...]) somewhere
    # (scope, name) of a plain name -> where its scope first wraps or shards it (``model = FSDP(model)``,
    # ``fully_shard(model)``, ``model = apply_fsdp(model)``): a read before that, of a name its scope bound, is the plain module
    wrap_at: dict[tuple[int, str], Pos] = field(default_factory=dict)
    _rank_nodes: dict[int, list[ast.stmt]] | None = None
    nodes: list[ast.AST] = field(default_factory=list)  # every node, in ast.walk order
    _calls: list[ast.Call] = field(default_factory=list)
    _scopes: dict[int, ast.AST] = field(default_factory=dict)
    _by_scope: dict[int, list[ast.AST]] = field(default_factory=dict)
    _quals: dict[int, str | None] = field(default_factory=dict)
    # memos of the block queries (filled on first use): where each statement sits in its parent's block, what
    # exits follow each position of a block, the sorted positions of a name's bindings, each other path
    _slots: dict[int, tuple[str, int]] = field(default_factory=dict)
    _slotted: set[int] = field(default_factory=set)
    _exits: dict[tuple[int, str], tuple[list[bool], list[bool], int | None]] = field(default_factory=dict)
    _bpos: dict[tuple[int, str], tuple[int, list[Pos] | None]] = field(default_factory=dict)
    _paths: dict[tuple[int, str | None, bool], list[ast.AST]] = field(default_factory=dict)
    _leaves: dict[tuple[int, int], bool] = field(default_factory=dict)  # (statement, branch) -> _leaves_after
    _outer_loops: dict[int, set[int]] = field(default_factory=dict)  # branch -> ids of the loops around it
    cache: dict[object, Any] = field(default_factory=dict)  # per-file memo for finders (keyed by their own names)
    deadline: float = math.inf  # analysis_clock() past which tick() raises BudgetExceeded
    _steps: int = 0

    @classmethod
    def build(cls, tree: ast.Module, deadline: float = math.inf) -> FileFacts:
        """The facts of ``tree`` (an :func:`ast.parse` result), computed in a few passes over it; ``deadline`` (a
        :func:`analysis_clock` value (CPU seconds of the analysing thread)) bounds the analysis (:meth:`tick`). Raises BudgetExceeded past it."""
        facts = cls(tree, deadline=deadline)
        facts._index()
        facts._imports()
        facts._bindings()
        facts._ranks()
        facts._wrapped()
        return facts

    def _index(self) -> None:
        """One pre-order pass (source order): every node, its parent, its scope, the calls."""
        stack: list[tuple[ast.AST, ast.AST]] = [(self.tree, self.tree)]
        scopes, parents, nodes, calls = self._scopes, self.parents, self.nodes, self._calls
        by_scope: dict[int, list[ast.AST]] = {id(self.tree): []}
        self._by_scope = by_scope
        funcs, call_t, shared, ast_t = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda), ast.Call, _SHARED, ast.AST
        pop, push = stack.pop, stack.append
        while stack:
            node, scope = pop()
            nodes.append(node)
            nid = id(node)
            scopes[nid] = scope
            by_scope[id(scope)].append(node)
            if isinstance(node, call_t):
                calls.append(node)
            inner: ast.AST = scope
            if isinstance(node, funcs):
                inner = node
                by_scope[nid] = []
            children: list[ast.AST] = []
            for name in node._fields:
                value = getattr(node, name, None)
                if value.__class__ is list:
                    children.extend(v for v in value if isinstance(v, ast_t))
                elif isinstance(value, ast_t) and not isinstance(value, shared):
                    children.append(value)
            for child in reversed(children):
                parents[id(child)] = node
                push((child, inner))

    # --- names -------------------------------------------------------------------------------------
    def _imports(self) -> None:
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        self.aliases.setdefault(a.name.split(".")[0], a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"

    def tick(self) -> None:
        """Count one step of the analysis (the helpers every rule uses call it: qual, binding, chain, ancestors,
        block_of, ...); every 256th step looks at the clock. Raises BudgetExceeded past :attr:`deadline`."""
        self._steps += 1
        if not self._steps & 255 and analysis_clock() > self.deadline:
            raise BudgetExceeded(f"past the deadline after {self._steps:,} steps")

    def qual(self, node: ast.AST | None) -> str | None:
        """The canonical dotted name of a Name/Attribute chain (imports resolved), or of a call's function; a call
        inside the chain stands for its function (``a().b`` is ``a.b``). Memoised per node; iterative."""
        self.tick()
        if isinstance(node, ast.Call):
            node = node.func
        if node is None:
            return None
        quals = self._quals
        key = id(node)
        if key in quals:
            return quals[key]
        path: list[ast.AST] = []  # the attributes and calls above the chain's base, outermost first
        cur: ast.AST = node
        q: str | None = None
        while True:
            hit = quals.get(id(cur), _UNKNOWN)
            if hit is not _UNKNOWN:
                q = hit
                break
            if isinstance(cur, ast.Call):  # a call stands for its function: f()() is f, a.b().c is a.b.c
                path.append(cur)
                cur = cur.func
            elif isinstance(cur, ast.Attribute):
                path.append(cur)
                cur = cur.value
            else:
                q = canon(self.aliases.get(cur.id, cur.id)) if isinstance(cur, ast.Name) else None
                quals[id(cur)] = q
                break
        for above in reversed(path):  # each node of the chain memoised: a long chain costs its length once
            if isinstance(above, ast.Attribute):
                q = canon(f"{q}.{above.attr}") if q else None
            quals[id(above)] = q
        return q

    def calls(self, root: ast.AST | None = None) -> list[ast.Call]:
        """Every call of the module (or below ``root``), in ``ast.walk`` order."""
        if root is None:
            return self._calls
        return [n for n in ast.walk(root) if isinstance(n, ast.Call)]

    def uses(self, *names: str) -> bool:
        """Does the file call any of these canonical APIs?"""
        return any(self.qual(c) in names for c in self.calls())

    # --- scopes and bindings -------------------------------------------------------------------------
    def scope_of(self, node: ast.AST) -> ast.AST:
        """The function (or the module) whose body holds ``node``."""
        return self._scopes.get(id(node), self.tree)

    def scope_nodes(self, scope: ast.AST) -> list[ast.AST]:
        """Nodes of ``scope`` in source order, not those of nested functions (a nested ``def`` itself is)."""
        return self._by_scope.get(id(scope), [])

    def _bind(self, scope: ast.AST, target: ast.AST, kind: str, value: ast.AST | None, pos: Pos) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                lst = self.bindings.setdefault((id(scope), node.id), [])
                lst.append(Binding(pos, kind, value, len(lst) + 1))

    def _bindings(self) -> None:
        scopes: list[ast.Module | ast.FunctionDef | ast.AsyncFunctionDef] = [self.tree]
        scopes += [n for n in self.nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for scope in scopes:
            if not isinstance(scope, ast.Module):
                if isinstance(self.parents.get(id(scope)), ast.Module):
                    self.functions[scope.name] = scope
                args = scope.args
                for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                    if a is not None:
                        self.bindings.setdefault((id(scope), a.arg), []).append(Binding((0, 0), "param", None, 0))
            for node in self.scope_nodes(scope):
                if node is scope:
                    continue
                if isinstance(node, ast.Assign):
                    value = node.value if len(node.targets) == 1 else None
                    for t in node.targets:
                        self._bind(scope, t, "assign", value, end(node))
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                    self._bind(
                        scope,
                        node.target,
                        "assign" if isinstance(node, ast.AnnAssign) else "other",
                        getattr(node, "value", None),
                        end(node),
                    )
                elif isinstance(node, (ast.For, ast.AsyncFor)):
                    self._bind(scope, node.target, "for", node.iter, end(node.target))
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    self._bind(scope, node.optional_vars, "with", node.context_expr, end(node.optional_vars))
                elif isinstance(node, ast.NamedExpr):
                    self._bind(scope, node.target, "assign", node.value, end(node))

    def binding(self, name: ast.Name) -> tuple[tuple[int, str, int], Binding | None]:
        """(identity of the binding a load of ``name`` sees, the binding) — module-level if unbound locally."""
        self.tick()
        pos = start(name)
        scope = self.scope_of(name)
        for sc in (scope, self.tree):
            key = (id(sc), name.id)
            lst = self.bindings.get(key)
            if not lst:
                continue
            b = self._last_before(key, lst, pos) if sc is scope else lst[-1]
            if b is not None:
                return (id(sc), name.id, b.index), b
        return (id(self.tree), name.id, 0), None

    def _last_before(self, key: tuple[int, str], lst: list[Binding], pos: Pos) -> Binding | None:
        """The last binding of ``lst`` (in list order) that takes effect at or before ``pos``: a binary search where
        the list is in position order, as it nearly always is, else a scan."""
        n, positions = self._bpos.get(key, (-1, None))
        if n != len(lst):
            ps = [b.pos for b in lst]
            positions = ps if all(a <= b for a, b in zip(ps, ps[1:], strict=False)) else None
            self._bpos[key] = (len(lst), positions)
        if positions is not None:
            i = bisect.bisect_right(positions, pos)
            return lst[i - 1] if i else None
        return next((b for b in reversed(lst) if b.pos <= pos), None)

    def chain(self, node: ast.AST, depth: int = 0) -> Chain | None:
        """The module expression ``node`` as a :class:`Chain`, or None when it is not one we can follow."""
        self.tick()
        if depth > 12:
            return None
        if isinstance(node, ast.Name):
            ident, b = self.binding(node)
            if b is not None and b.value is not None:
                if b.kind == "for":
                    inner = self._iter_chain(b.value, depth + 1)
                    if inner is not None:
                        return Chain(inner.root, inner.parts + ("[*]",))
                elif b.kind == "assign":
                    inner = self.chain(b.value, depth + 1)
                    if inner is not None:
                        return inner
            return Chain(ident)
        if isinstance(node, ast.Attribute):
            inner = self.chain(node.value, depth + 1)
            return Chain(inner.root, inner.parts + (node.attr,)) if inner else None
        if isinstance(node, ast.Subscript):
            inner = self.chain(node.value, depth + 1)
            idx = node.slice
            part = f"[{idx.value!r}]" if isinstance(idx, ast.Constant) else "[*]"
            return Chain(inner.root, inner.parts + (part,)) if inner else None
        if isinstance(node, ast.Call):
            if self.qual(node) in _WRAPPERS and node.args:
                return self.chain(node.args[0], depth + 1)
            if isinstance(node.func, ast.Attribute) and node.func.attr in _SELF_METHODS:
                return self.chain(node.func.value, depth + 1)
        return None

    def _iter_chain(self, it: ast.AST, depth: int) -> Chain | None:
        if isinstance(it, ast.Call):
            if isinstance(it.func, ast.Name) and it.func.id in _ITER_FUNCS and it.args:
                return self._iter_chain(it.args[0], depth + 1)
            if isinstance(it.func, ast.Attribute) and it.func.attr in _ITER_METHODS:
                return self.chain(it.func.value, depth + 1)
        return self.chain(it, depth)

    def resolve(self, node: ast.AST | None, depth: int = 0) -> ast.AST | None:
        """Follow a Name to the value it was last assigned (a few steps), else return the node itself."""
        while isinstance(node, ast.Name) and depth < 5:
            _, b = self.binding(node)
            if b is None or b.kind != "assign" or b.value is None:
                break
            node, depth = b.value, depth + 1
        return node

    def strings(self, node: ast.AST | None) -> set[str]:
        """The string constants an expression can evaluate to (through names and ``a if c else b``; iterative)."""
        out: set[str] = set()
        todo, seen = [node], set()
        while todo:
            cur = self.resolve(todo.pop())
            if id(cur) in seen:
                continue
            seen.add(id(cur))
            if isinstance(cur, ast.Constant) and isinstance(cur.value, str):
                out.add(cur.value)
            elif isinstance(cur, ast.IfExp):
                todo += [cur.orelse, cur.body]
        return out

    def argparse_default(self, node: ast.AST | None) -> set[str]:
        """The string defaults an argparse option of the file gives ``node`` when it reads it (``args.dist_backend``
        for ``add_argument("--dist-backend", default="nccl")``, a ``dest=`` or ``set_defaults(dist_backend=...)``).
        Empty when the file declares no such option or assigns the attribute itself (``args.dist_backend = ...``)."""
        if not isinstance(node, ast.Attribute):
            return set()
        attr, out = node.attr, set()
        for n in self.nodes:
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if any(isinstance(t, ast.Attribute) and t.attr == attr for t in targets):
                    return set()  # set by the program itself: not (only) the option's default
            if not isinstance(n, ast.Call) or not isinstance(n.func, ast.Attribute):
                continue
            if n.func.attr == "set_defaults" and kwarg(n, attr) is not None:
                return self.strings(kwarg(n, attr))
            if n.func.attr != "add_argument":
                continue
            flags = [a.value for a in n.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            dest = self.strings(kwarg(n, "dest"))
            long = [f for f in flags if f.startswith("--")] or flags  # argparse's dest: the first long flag
            if attr in (dest or ({long[0].lstrip("-").replace("-", "_")} if long else set())):
                out |= self.strings(kwarg(n, "default"))
        return out

    # --- rank conditions -----------------------------------------------------------------------------
    def _ranks(self) -> None:
        assigns: list[tuple[list[ast.expr], ast.expr]] = []  # (targets, value)
        for node in self.nodes:
            if isinstance(node, ast.arg) and rank_name(node.arg):
                self.rank_names.add(node.arg)
            elif isinstance(node, ast.Assign):
                assigns.append((node.targets, node.value))
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                assigns.append(([node.target], node.value))
        last = (-1, -1)
        for _ in range(3):  # names bound to rank expressions, then flags bound to rank comparisons
            known = len(self.rank_names), len(self.main_flags)
            if known == last:
                break  # the last round added nothing (the sets only grow): neither would this one
            last = known
            for targets, value in assigns:
                for t in targets:
                    if isinstance(t, ast.Name):
                        if self.is_rank_expr(value):
                            self.rank_names.add(t.id)
                        elif self.is_rank_test(value):
                            self.main_flags.add(t.id)

    def names_the_rank(self, path: ast.AST | None, *, formatted: bool = False) -> bool:
        """Does the file name ``path`` name this process's rank (``f"shard_{rank}.pt"``), here or through up to 8
        names it is built from (``fn = f"optim.{get_rank():05d}.pt"; torch.save(sd, join(d, fn))``)?

        With ``formatted``, only a rank formatted into the name counts (an f-string field, a ``%`` or ``+``
        operand, a ``.format`` argument): a rank that only decides a value (``x if rank == 0 else None``, a path
        broadcast from rank 0) does not make the file per rank.  Without, any rank expression in it does."""
        todo: list[ast.AST] = [] if path is None else [path]
        seen = 0
        while todo and seen < 8:
            node, seen = todo.pop(), seen + 1
            for n in ast.walk(node):
                if self._formatted_rank(n) if formatted else self._is_rank_node(n):
                    return True
                if isinstance(n, ast.Name) and (value := self.resolve(n)) is not n and value is not None:
                    todo.append(value)
        return False

    def _is_rank_node(self, node: ast.AST) -> bool:
        return isinstance(node, (ast.Name, ast.Attribute, ast.Call)) and self.is_rank_expr(node)

    def _rank_in(self, node: ast.AST) -> bool:
        return any(self._is_rank_node(n) for n in ast.walk(node))

    def _formatted_rank(self, node: ast.AST) -> bool:
        """Is ``node`` a part of a string formatting that puts a rank into the text?"""
        if isinstance(node, ast.FormattedValue):
            return self._rank_in(node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
            return self._rank_in(node.right)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            return any(self._rank_in(a) for a in [*node.args, *(k.value for k in node.keywords)])
        return False

    def is_rank_expr(self, node: ast.AST) -> bool:
        """Does ``node`` evaluate to this process's rank (or a value derived from it)? (Iterative: an arithmetic
        expression of any length.)"""
        todo = [node]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Name):
                if node.id in self.rank_names:
                    return True
            elif isinstance(node, ast.Attribute):
                base = (dotted(node.value) or "").lower()
                if rank_name(node.attr) and not any(w in base for w in _NOT_PROCESS):
                    return True
            elif isinstance(node, ast.BinOp):
                todo += [node.right, node.left]
            elif isinstance(node, ast.Subscript):
                if self.qual(node.value) == "os.environ" and self._env_key(node.slice):
                    return True
            elif isinstance(node, ast.Call):
                q = self.qual(node) or ""
                if q in ("os.environ.get", "os.getenv") and node.args:
                    if self._env_key(node.args[0]):
                        return True
                elif isinstance(node.func, ast.Name) and node.func.id in ("int", "str") and node.args:
                    todo.append(node.args[0])
                elif last_name(node) in _RANK_GETTERS:
                    return True
        return False

    def _env_key(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and node.value in RANK_ENV

    def is_main_predicate(self, node: ast.AST) -> bool:
        """Is ``node`` a main-process flag (bound to a rank test) or helper (``is_main_process()``, ``is_master``)?"""
        if isinstance(node, ast.Name) and node.id in self.main_flags:
            return True
        if isinstance(node, ast.Name) and self._flag_parameter(node):
            return False  # def load(..., rank0=False): the caller's choice, the same on every rank
        name = last_name(node) if isinstance(node, (ast.Name, ast.Attribute, ast.Call)) else None
        return bool(name and main_name(name))

    def _flag_parameter(self, name: ast.Name) -> bool:
        """Is ``name`` a parameter of its function with a constant default (``rank0=False``)?"""
        fn = self.scope_of(name)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        args = fn.args
        positional = args.posonlyargs + args.args
        defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults) :]], args.defaults, strict=True))
        defaults |= {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None}
        default = defaults.get(name.id)
        return isinstance(default, ast.Constant) and isinstance(default.value, (bool, type(None)))

    def is_rank_test(self, test: ast.AST) -> bool:
        """Is ``test`` true on some ranks and false on others? (``and``/``or``/``not`` of rank comparisons,
        main-process helpers and flags; ``x is None`` comparisons are not.) Iterative over ``and``/``or``/``not``."""
        todo = [test]
        while todo:
            test = todo.pop()
            if isinstance(test, ast.BoolOp):
                todo += reversed(test.values)
            elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                todo.append(test.operand)
            elif self._rank_test_leaf(test):
                return True
        return False

    def _rank_test_leaf(self, test: ast.AST) -> bool:
        """:meth:`is_rank_test` of a test that is not ``and``/``or``/``not``."""
        if isinstance(test, ast.Compare):
            if any(isinstance(op, (ast.In, ast.NotIn)) for op in test.ops) and not all(
                isinstance(c, (ast.List, ast.Tuple, ast.Set)) and all(_const(e) is not None for e in c.elts)
                for c in test.comparators
            ):
                return False  # rank in get_process_group_ranks(g) / in ranks: the members of a group, together
            return (
                not any(isinstance(op, (ast.Is, ast.IsNot)) for op in test.ops)
                and not _every_rank(test)
                and any(self.is_rank_expr(x) for x in [test.left, *test.comparators])
            )
        if isinstance(test, (ast.Name, ast.Attribute, ast.Call)):
            return self.is_main_predicate(test) or self.is_rank_expr(test)
        return False

    def rank_branches(self) -> dict[int, list[ast.stmt]]:
        """id(node) -> every ``if`` (or ``@rank_zero_only`` function) that runs it on some ranks only, outermost first
        (a node under none is not listed). The lists are shared by the nodes under the same branches: not to be changed.

        One pass in source order: a node's list is its parent's, plus the parent when that is such a branch and the node
        a statement of the branch's body (or ``else``), plus each ``if rank != 0: return`` before the node in the same
        block (:meth:`_exiting_rank_ifs`). So an ``if`` / ``elif`` chain of n rank tests costs its nodes and its n lists,
        not a walk of the rest of the chain per ``elif``."""
        if self._rank_nodes is None:
            out: dict[int, list[ast.stmt]] = {}
            starts = self._branch_parents()
            empty: list[ast.stmt] = []
            parents = self.parents
            for node in self.nodes[1:] if starts else ():  # the module first: no parent, no branch runs it
                self.tick()
                parent = parents[id(node)]
                cover = out.get(id(parent), empty)
                if id(parent) in starts:
                    extra: list[ast.stmt] = [parent] if self._runs_on_some_ranks(parent, node) else []
                    extra += self._exiting_rank_ifs(parent, node)
                    cover = cover + extra if extra else cover
                if cover:
                    out[id(node)] = cover
            self._rank_nodes = out
        return self._rank_nodes

    def _branch_parents(self) -> set[int]:
        """ids of the nodes where a rank branch starts: a rank test's ``if``, a ``@rank_zero_only`` function, and the
        holder of an ``if rank != 0: return``'s block (most files: none, and :meth:`rank_branches` has nothing to do)."""
        out: set[int] = set()
        for node in self.nodes:
            if isinstance(node, ast.If) and self._is_rank_if(node):
                out.add(id(node))
                if not node.orelse and node.body and isinstance(node.body[-1], _EXITS):
                    out.add(id(self.parents[id(node)]))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                last_name(d) in _RANK_ZERO_DECORATORS for d in node.decorator_list
            ):
                out.add(id(node))
        return out

    def _runs_on_some_ranks(self, parent: ast.AST, node: ast.AST) -> TypeGuard[ast.stmt]:
        """Is ``node`` (a child of ``parent``) a statement of the body (or ``else``) of ``parent``, a rank test's ``if``
        or a ``@rank_zero_only`` function? (Their other children, the test, decorators, arguments, are not statements.)"""
        if not isinstance(node, ast.stmt):
            return False
        if isinstance(parent, ast.If):
            return self._is_rank_if(parent)
        return isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            last_name(d) in _RANK_ZERO_DECORATORS for d in parent.decorator_list
        )

    def _is_rank_if(self, node: ast.If) -> bool:
        """Is ``node``'s test a rank test (memoised: a block's statements each ask about their parent)?"""
        memo: dict[int, bool] = self.cache.setdefault(("facts", "rank_if"), {})
        hit = memo.get(id(node))
        if hit is None:
            hit = memo[id(node)] = self.is_rank_test(node.test)
        return hit

    def _exiting_rank_ifs(self, parent: ast.AST, node: ast.AST) -> list[ast.stmt]:
        """The ``if rank != 0: return`` statements (a rank test, no ``else``, a body that ends in an exit) before the
        statement ``node`` in its block of ``parent``: what follows one runs on the other ranks only. Each parent's
        blocks are looked at once (memoised: statement -> those before it)."""
        seen: set[int] = self.cache.setdefault(("facts", "exit_blocks_seen"), set())
        before_of: dict[int, list[ast.stmt]] = self.cache.setdefault(("facts", "exiting_rank_ifs"), {})
        if id(parent) not in seen:
            seen.add(id(parent))
            for name in _BLOCKS:
                block = getattr(parent, name, None)
                before: list[ast.stmt] = []
                for st in block if isinstance(block, list) else ():
                    if before:
                        before_of[id(st)] = before
                    if isinstance(st, ast.If) and not st.orelse and st.body and isinstance(st.body[-1], _EXITS):
                        if self._is_rank_if(st):
                            before = [*before, st]
        return before_of.get(id(node), [])

    def other_branch_has(self, branch: ast.AST, node: ast.AST, wanted: Callable[[ast.Call], bool]) -> bool:
        """Do the ranks that do not take ``node``'s path reach a call that ``wanted`` accepts too?

        For ``if c: A else: B`` the other path is the other branch; when ``node``'s branch ends in an exit
        (``return``, ``continue``, ``break``), the statements after the ``if`` belong to the other path too.
        For ``node`` after ``if c: ...; return``, the other path is that exiting branch.
        """
        path = self.other_path_of(branch, node)[1]
        return any(wanted(sub) for stmt in path for sub in ast.walk(stmt) if isinstance(sub, ast.Call))

    def other_path(self, branch: ast.AST, node: ast.AST) -> list[ast.AST]:
        """The statements the ranks that do not run ``node`` under ``branch`` run instead (see other_branch_has)."""
        return list(self.other_path_of(branch, node)[1])

    def other_path_of(self, branch: ast.AST, node: ast.AST) -> tuple[tuple[int, str | None, bool], list[ast.AST]]:
        """(a key that names the path, the path) for :meth:`other_path`, memoised: every node on the same side of
        ``branch`` that leaves (or does not leave) after it shares one key and one list, which must not be changed."""
        side: str | None = None
        leaves = False
        if isinstance(branch, ast.If):
            side = self.block_of(node, branch)
            side = side if side in ("body", "orelse") else None
            leaves = side is not None and self._leaves_after(node, branch)
        key = (id(branch), side, leaves)
        path = self._paths.get(key)
        if path is None:
            path = []
            if isinstance(branch, ast.If) and side is None:
                path = list(branch.body)  # node follows an early exit
            elif isinstance(branch, ast.If):
                path = list(branch.orelse if side == "body" else branch.body) + (self._after(branch) if leaves else [])
            self._paths[key] = path
        return key, path

    def _leaves_after(self, node: ast.AST, branch: ast.If) -> bool:
        """Does the path through ``node`` leave ``branch``'s block after it (a ``return``, or a ``continue`` /
        ``break`` of a loop around ``branch``), so that it never reaches the statements after ``branch``?"""
        outer_loops = self._outer_loops.get(id(branch))
        if outer_loops is None:
            outer_loops = {id(a) for a in self.ancestors(branch) if isinstance(a, (ast.For, ast.While, ast.AsyncFor))}
            self._outer_loops[id(branch)] = outer_loops
        # memoised per (statement, branch) along the way up: the nodes of a long if/elif chain share their walks (a
        # walk per node and branch would cost the chain's length again for each of them: cubic in the chain)
        walked: list[tuple[int, int]] = []
        leaves = False
        cur: ast.AST | None = node
        while cur is not None and cur is not branch:
            key = (id(cur), id(branch))
            known = self._leaves.get(key)
            if known is not None:
                leaves = known
                break
            walked.append(key)
            slot = self._slot(cur)
            if slot is not None:
                returns, jumps, loop = self._block_exits(*slot[:2])
                if returns[slot[2]] or jumps[slot[2]] and loop in outer_loops:
                    leaves = True
                    break
            cur = self.parents.get(id(cur))
        for key in walked:
            self._leaves[key] = leaves
        return leaves

    def _slot(self, stmt: ast.AST) -> tuple[ast.AST, str, int] | None:
        """(parent, block name, index) of a statement in its parent's ``body`` / ``orelse`` / ``finalbody``, else None."""
        parent = self.parents.get(id(stmt))
        if parent is None:
            return None
        if id(parent) not in self._slotted:
            self._slotted.add(id(parent))
            for name in _BLOCKS:
                block = getattr(parent, name, None)
                if isinstance(block, list):
                    for i, st in enumerate(block):
                        self._slots.setdefault(id(st), (name, i))
        hit = self._slots.get(id(stmt))
        return (parent, hit[0], hit[1]) if hit else None

    def _block_exits(self, parent: ast.AST, name: str) -> tuple[list[bool], list[bool], int | None]:
        """For each position of the block ``parent.<name>``: is a ``return`` after it, is a ``continue`` / ``break``
        after it; and the loop those belong to (the same for every statement of one block)."""
        key = (id(parent), name)
        got = self._exits.get(key)
        if got is None:
            block = getattr(parent, name)
            returns, jumps = [False] * len(block), [False] * len(block)
            ret = jump = False
            jumper: ast.AST | None = None
            for i in range(len(block) - 1, -1, -1):
                returns[i], jumps[i] = ret, jump
                if isinstance(block[i], ast.Return):
                    ret = True
                elif isinstance(block[i], (ast.Continue, ast.Break)):
                    jump, jumper = True, block[i]
            got = (returns, jumps, self._loop_of(jumper) if jumper is not None else None)
            self._exits[key] = got
        return got

    def block_of(self, node: ast.AST, holder: ast.AST) -> str | None:
        """The block of ``holder`` (``body``, ``orelse`` or ``finalbody``) whose statements hold ``node``; None when
        ``node`` is elsewhere (in its test, outside it). Costs the depth of ``node`` below ``holder`` up to
        :data:`_SHORT_CLIMB` steps, then a search among ``holder``'s statements (:meth:`_child_holding`), so a node
        deep in an ``elif`` chain asked about each ``if`` above it does not climb the chain each time."""
        self.tick()
        cur = node
        for _ in range(_SHORT_CLIMB):
            parent = self.parents.get(id(cur))
            if parent is None:
                return None
            if parent is holder:
                slot = self._slot(cur)
                return slot[1] if slot else None
            cur = parent
        for name in _BLOCKS:
            block = getattr(holder, name, None)
            if isinstance(block, list) and self._child_holding(block, node) is not None:
                return name
        return None

    def _child_holding(self, block: list[ast.stmt], node: ast.AST) -> ast.stmt | None:
        """The statement of ``block`` that is ``node`` or holds it, else None: a binary search on the nodes' places in
        source order (:attr:`nodes`; each node's subtree is the run of places up to its last descendant's)."""
        spans = self._spans()
        at = spans.get(id(node))
        if at is None or not block:
            return None
        firsts = [spans[id(st)][0] for st in block]
        i = bisect.bisect_right(firsts, at[0]) - 1
        return block[i] if i >= 0 and at[0] <= spans[id(block[i])][1] else None

    def _spans(self) -> dict[int, tuple[int, int]]:
        """id(node) -> (its place in :attr:`nodes`, the place of its last descendant); built on first use."""
        spans: dict[int, tuple[int, int]] | None = self.cache.get(("facts", "spans"))
        if spans is None:
            last = list(range(len(self.nodes)))
            place = {id(n): i for i, n in enumerate(self.nodes)}
            for i in range(len(self.nodes) - 1, 0, -1):  # children after their parent: each end is final when read
                parent = place[id(self.parents[id(self.nodes[i])])]
                last[parent] = max(last[parent], last[i])
            spans = {key: (i, last[i]) for key, i in place.items()}
            self.cache["facts", "spans"] = spans
        return spans

    def _loop_of(self, stmt: ast.AST) -> int | None:
        """id of the loop a ``continue`` / ``break`` belongs to."""
        for anc in self.ancestors(stmt):
            if isinstance(anc, (ast.For, ast.While, ast.AsyncFor)):
                return id(anc)
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return None
        return None

    def _after(self, stmt: ast.AST) -> list[ast.AST]:
        """The statements after ``stmt`` in its block."""
        slot = self._slot(stmt)
        if slot is None:
            return []
        block: list[ast.AST] = getattr(slot[0], slot[1])
        return block[slot[2] + 1 :]

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        """The nodes that hold ``node``, innermost first, up to the module."""
        cur = self.parents.get(id(node))
        while cur is not None:
            self.tick()
            yield cur
            cur = self.parents.get(id(cur))

    def exclusive(self, a: ast.AST, b: ast.AST) -> bool:
        """Are ``a`` and ``b`` in different branches of one ``if``/``try``?"""
        pa = {id(x) for x in self.ancestors(a)}
        for anc in self.ancestors(b):
            if id(anc) in pa and isinstance(anc, ast.If):
                return (self.block_of(a, anc) == "body") != (self.block_of(b, anc) == "body")
        return False

    # --- wrapped modules -----------------------------------------------------------------------------
    def _variable_key(self, node: ast.AST) -> tuple[int, str] | None:
        """Where a module variable lives: (scope of its binding, name) for a bare name, (0, 'self.model') else.
        A name a nested function (or lambda) does not bind is the enclosing function's, as Python's closures see it."""
        if isinstance(node, ast.Name):
            scope = self.scope_of(node)
            if isinstance(scope, _FUNCS) and (id(scope), node.id) not in self.bindings:
                outer = self.scope_of(scope)
                while isinstance(outer, _FUNCS):
                    if (id(outer), node.id) in self.bindings:
                        return (id(outer), node.id)
                    outer = self.scope_of(outer)
            return self.binding(node)[0][:2]
        name = dotted(node)
        return (0, name) if name else None

    def note_wrap(self, target: ast.AST, pos: Pos) -> None:
        """Record that the plain name ``target`` is wrapped or sharded from ``pos`` on in its scope (:attr:`wrap_at`)."""
        if isinstance(target, ast.Name):
            key = (id(self.scope_of(target)), target.id)
            if key not in self.wrap_at or pos < self.wrap_at[key]:
                self.wrap_at[key] = pos

    def _wrapped(self) -> None:
        fsdp1, fsdp2 = set(), set()
        for node in self.nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                q = self.qual(node.value)
                for t in node.targets:
                    key = (id(self.scope_of(node)), t.id) if isinstance(t, ast.Name) else self._variable_key(t)
                    if key and q == DDP:
                        self.ddp.add(key)
                    if key and q == FSDP1:
                        fsdp1.add(key)
                    elif key and q == FULLY_SHARD:
                        fsdp2.add(key)
                    if key and q in (DDP, FSDP1, FULLY_SHARD):
                        self.note_wrap(t, end(node))
            if isinstance(node, ast.Call) and self.qual(node) == FULLY_SHARD and node.args:
                key = self._variable_key(node.args[0])
                if key:
                    fsdp2.add(key)
                    self.note_wrap(node.args[0], end(node))
            if (
                isinstance(node, ast.Call)
                and self.qual(node) == JOIN
                and node.args
                and isinstance(node.args[0], (ast.List, ast.Tuple))
            ):
                self.joined |= {k for el in node.args[0].elts if (k := self._variable_key(el))}
        self.fsdp1, self.fsdp2 = fsdp1, fsdp2 - fsdp1

    def is_fsdp1(self, node: ast.AST) -> bool:
        """Does this Name/Attribute hold an FSDP1 wrapper (a variable of this scope, or an attribute anywhere)? Not a
        name read before its scope wraps it (:meth:`before_wrap`)."""
        key = self._variable_key(node)
        return key in self.fsdp1 and not self.before_wrap(node, key)

    def is_fsdp2(self, node: ast.AST) -> bool:
        """Does this Name/Attribute hold an FSDP2 (fully_shard) module? (Sharded in place: a read before the
        ``fully_shard`` is the same object; the rules that care ask :meth:`before_wrap`.)"""
        return self._variable_key(node) in self.fsdp2

    def before_wrap(self, node: ast.AST, key: tuple[int, str] | None = None) -> bool:
        """Is ``node`` a plain name read, in the scope that binds it, before that scope first wraps or shards it
        (:attr:`wrap_at`), and bound there other than as a parameter (which a caller may have given wrapped)?
        LLaMA2-Accessory loads pretrained weights through ``model.state_dict()`` on one rank before ``model = FSDP(model)``."""
        if not isinstance(node, ast.Name):
            return False
        key = key or self._variable_key(node)
        at = self.wrap_at.get(key) if key is not None else None
        if at is None or key is None or key[0] != id(self.scope_of(node)) or start(node) >= at:
            return False
        _, seen = self.binding(node)
        return seen is not None and seen.kind != "param"

    def is_fsdp(self, node: ast.AST) -> bool:
        """Does this Name/Attribute hold an FSDP1 wrapper or an FSDP2 module?"""
        return self.is_fsdp1(node) or self.is_fsdp2(node)

    def is_joined_ddp(self, node: ast.AST) -> bool:
        """A DDP wrapper that some ``Join([...])`` of this file was given (its join config stays on)."""
        key = self._variable_key(node)
        return key in self.ddp and key in self.joined
