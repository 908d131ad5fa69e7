"""Rules about control flow that splits the ranks of a job, and about DDP wrappers used where DDP cannot
synchronise (FSD037, FSD038, FSD040, FSD045, FSD046).

- **Synchronised work** (:class:`Reach`): a call that every rank of the job must make together: a collective
  or another call the rank-conditional rules know (:func:`~fsdp_skill.core.check.rank_conditional.collective_kind`),
  the forward of a DDP / FSDP module, a ``backward()`` in a file that wraps a module, and the collectives of
  Accelerate (``accelerator.wait_for_everyone()``, ``gather``, ``reduce``, ``backward``) and Lightning
  (``trainer.strategy.barrier()``, ``fabric.all_reduce``...). A call to a function or method of the file whose
  body reaches such work counts as that work (``self.train_step(batch)``).
- **FSD037**: a ``break`` / ``continue`` / ``return`` under a rank condition that leaves synchronised work to the
  other ranks: the rest of the loop's iterations (``break``), the rest of this iteration (``continue``), or the
  rest of the function and its enclosing loops (``return``). Where the skipped work is a collective that FSD003
  (or another rank-conditional rule) already reports, that rule speaks and this one does not. A framework's stop
  flag set under a rank condition counts as such an exit (``if trainer.is_global_zero: trainer.should_stop = True``,
  Hugging Face's ``control.should_training_stop = True``): Lightning and the HF Trainer leave their loop on the ranks
  that set it. Silent when a collective takes the flag later in the function (``trainer.should_stop =
  trainer.strategy.reduce_boolean_decision(trainer.should_stop, all=False)``, ``strategy.broadcast(...)``).
- **FSD038**: an ``if`` / ``while`` (not itself a rank test) that decides on a value only one rank holds: the
  tensor of ``dist.reduce(t, dst=...)``, the list of ``dist.gather(..., gather_list=..., dst=...)`` or
  ``gather_object`` (and what is derived from it: ``loss = t[0] / t[1]``, a function's ``return`` of it, bound at
  its call sites ``val = validation(...)``; not its shape), a name last bound under a rank condition, or a ``self.`` attribute that the file writes
  (outside ``__init__``) only under rank conditions, with no collective naming it in between,
  when the decision guards synchronised work or a ``break`` / ``return`` out of a loop that holds some.
- **FSD040**: an optimizer step inside the ``with ... no_sync():`` that also runs the backward (those gradients
  are never synchronised: the replicas drift apart); with a context picked per micro-batch (``ctx = model.no_sync()
  if accumulating else nullcontext(); with ctx:``), a step there under no test of its own (it also runs on the
  accumulating micro-batches).
- **FSD046**: only the backward inside a DDP ``no_sync()`` while the forward ran before it (DDP arms the gradient
  all-reduce in forward, so the context does nothing: the gradients are right, the communication is not saved).
  The context may be conditional (``ctx = m.no_sync() if not last else nullcontext(); with ctx:``), and the forward
  may run in the caller of a method that holds the ``with`` (``loss = self.model(x); self._backward(loss)``).
- **FSD045**: the forward of a DDP wrapper (directly or through a function of the file) on some ranks only.
  DDP broadcasts the module's buffers from rank 0 at the start of a forward (what it does unless told otherwise:
  ``broadcast_buffers``, deprecated from torch 2.13 for ``forward_sync_buffers``), so the other ranks' next
  collective pairs with it. A wrapper built with ``broadcast_buffers=False`` or ``forward_sync_buffers=False``
  is not reported; a wrapper given to ``Join`` is FSD036's, an FSDP module FSD010's.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Iterator

from fsdp_skill.core.check import calls as callgraph  # `calls` is a common local name here
from fsdp_skill.core.check import rank_conditional as rc
from fsdp_skill.core.check.facts import DDP, FileFacts, dotted, end, is_true, kwarg, last_name, start
from fsdp_skill.core.check.finders import Found, finder

Func = ast.FunctionDef | ast.AsyncFunctionDef
Direct = Callable[[ast.Call], str | None]  # a label for a call that is itself the work looked for, else None

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_EXIT_WORD = {ast.Break: "break", ast.Continue: "continue", ast.Return: "return"}
# framework objects (by the last part of the receiver's name) and their methods that every process must call
_FRAMEWORK_SYNC = {
    "accelerator": {"wait_for_everyone", "gather", "gather_for_metrics", "reduce", "pad_across_processes", "backward"},
    "strategy": {"barrier", "broadcast", "reduce", "all_gather", "reduce_boolean_decision"},
    "fabric": {"barrier", "broadcast", "all_reduce", "all_gather", "backward"},
}
NO_SYNC = {"no_sync", "no_backward_sync"}


def nodes_of_type(facts: FileFacts, *types: type[ast.AST]) -> list[ast.AST]:
    """The nodes of the file of exactly these types, in source (pre-)order; the index is built once per file."""
    key = ("divergence", "by-type")
    if key not in facts.cache:
        index: dict[type[ast.AST], list[tuple[int, ast.AST]]] = {}
        for i, n in enumerate(facts.nodes):
            index.setdefault(type(n), []).append((i, n))
        facts.cache[key] = index
    by_type: dict[type[ast.AST], list[tuple[int, ast.AST]]] = facts.cache[key]
    return (
        [n for _, n in sorted(item for t in types for item in by_type.get(t, []))]
        if len(types) > 1
        else [n for _, n in by_type.get(types[0], [])]
    )


def stmt_holds(block: list[ast.stmt], node: ast.AST) -> bool:
    """Is ``node`` inside the statements of ``block``? (by source span: statements of one block do not overlap)"""
    if not block or not hasattr(node, "lineno"):
        return False
    pos = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    return start(block[0]) <= pos and pos < end(block[-1]) or any(node is st for st in block)


def _arm(branch: ast.If, node: ast.AST) -> list[ast.stmt]:
    """The arm (body or orelse) of ``branch`` that holds ``node``."""
    return branch.body if stmt_holds(branch.body, node) else branch.orelse


def _is_ddp(facts: FileFacts, node: ast.AST) -> bool:
    """Does this Name/Attribute hold a DDP wrapper (``x = DistributedDataParallel(...)``) where it is read? Not a name
    read before its function (or the module) first binds it to ``DistributedDataParallel(...)`` (llm.c's reference
    forward before ``model = DDP(model)``), nor one last bound to an unwrapped module (``model = model.module``,
    ``model = unwrap_model(model)``)."""
    key = facts._variable_key(node)
    if key not in facts.ddp:
        return False
    if not isinstance(node, ast.Name) or key[0] != id(facts.scope_of(node)):
        return True
    ident, seen = facts.binding(node)
    if seen is not None and seen.kind == "assign" and _unwraps(seen.value):
        return False
    wraps = [b.index for b in facts.bindings.get(key, []) if b.kind == "assign" and _ddp_call(facts, b.value)]
    return not wraps or ident[2] >= min(wraps)


def is_wrapped(facts: FileFacts, node: ast.AST) -> bool:
    """Does this Name/Attribute hold a module the file wrapped in DDP or FSDP where it is read?"""
    return facts.is_fsdp(node) or _is_ddp(facts, node)


def _ddp_call(facts: FileFacts, value: ast.AST | None) -> bool:
    return isinstance(value, ast.Call) and facts.qual(value) == DDP


def _unwraps(value: ast.AST | None) -> bool:
    """``model.module`` / ``unwrap_model(model)`` / ``accelerator.unwrap_model(model)``: the module inside a wrapper."""
    if isinstance(value, ast.Attribute):
        return value.attr == "module"
    return isinstance(value, ast.Call) and "unwrap" in (last_name(value) or "").lower()


def _wraps_any(facts: FileFacts) -> bool:
    return bool(facts.ddp or facts.fsdp1 or facts.fsdp2)


def framework_sync(call: ast.Call) -> str | None:
    """``accelerator.wait_for_everyone()`` / ``trainer.strategy.barrier()``: a framework's collective."""
    if not isinstance(call.func, ast.Attribute):
        return None
    owner = (dotted(call.func.value) or "").rsplit(".", 1)[-1].lower()
    for word, methods in _FRAMEWORK_SYNC.items():
        if word in owner and call.func.attr in methods:
            return f"{dotted(call.func)}()"
    return None


def wrapped_forward(facts: FileFacts, call: ast.Call) -> str | None:
    """``model(x)`` / ``model.forward(x)`` of a DDP or FSDP module."""
    func = call.func
    if isinstance(func, (ast.Name, ast.Attribute)) and (facts.is_fsdp(func) or _is_ddp(facts, func)):
        return f"{dotted(func)}(...) (forward of a {'DDP' if _is_ddp(facts, func) else 'FSDP'} module)"
    if isinstance(func, ast.Attribute) and func.attr in ("forward", "generate"):
        recv = func.value
        if facts.is_fsdp(recv) or _is_ddp(facts, recv):
            return f"{dotted(func)}() (of a {'DDP' if _is_ddp(facts, recv) else 'FSDP'} module)"
    return None


def is_backward(call: ast.Call) -> bool:
    """``loss.backward()`` or Lightning's ``self.manual_backward(loss)``."""
    return isinstance(call.func, ast.Attribute) and call.func.attr in ("backward", "manual_backward")


def sync_work(facts: FileFacts, call: ast.Call) -> str | None:
    """A label when every rank must make ``call`` together (see the module docstring), else None."""
    kind = rc.collective_kind(facts, call)
    if kind is not None:
        return kind[1]
    forward = wrapped_forward(facts, call)
    if forward is not None:
        return forward
    framework = framework_sync(call)
    if framework is not None:
        return framework
    if is_backward(call) and _wraps_any(facts):
        return ".backward() (the gradient reduction of a wrapped model)"
    return None


class Reach:
    """Which functions and methods of the file reach the work ``direct`` accepts, directly or through each other
    (a fixpoint over module-level functions and class methods; ``f(...)`` and ``self.m(...)`` calls)."""

    def __init__(self, facts: FileFacts, direct: Direct) -> None:
        self.facts, self.direct = facts, direct
        self.methods: dict[int, dict[str, Func]] = {}
        for node in nodes_of_type(facts, ast.ClassDef):
            if isinstance(node, ast.ClassDef):
                self.methods[id(node)] = {
                    st.name: st for st in node.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))
                }
        funcs: list[Func] = list(facts.functions.values()) + [m for ms in self.methods.values() for m in ms.values()]
        listed = {id(fn) for fn in funcs}
        funcs += [fn for fn in callgraph.local_functions(facts).values() if id(fn) not in listed]  # nested ones too
        self.summary: dict[int, tuple[str, int]] = {}  # id(function) -> (label, line) of the first work it reaches
        for _ in range(4):
            changed = False
            for fn in funcs:
                if id(fn) in self.summary:
                    continue
                for node in facts.scope_nodes(fn):
                    hit = self.call(node) if isinstance(node, ast.Call) else None
                    if hit is not None:
                        self.summary[id(fn)] = hit
                        changed = True
                        break
            if not changed:
                break

    def callee(self, call: ast.Call) -> Func | None:
        """The function of this file that ``call`` runs: what :func:`~fsdp_skill.core.check.calls.callee` resolves
        it to (a module-level or nested function, a method through ``self.`` or its class), else a module-level
        ``f(...)`` or ``self.m(...)`` of the enclosing class."""
        target = callgraph.callee(self.facts, call)
        if target is not None and target.fn is not None:
            return target.fn if self.facts.scope_of(call) is not target.fn else None
        func = call.func
        if isinstance(func, ast.Name):
            fn = self.facts.functions.get(func.id)
            return fn if fn is not None and self.facts.scope_of(call) is not fn else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            for anc in self.facts.ancestors(call):
                if isinstance(anc, ast.ClassDef):
                    fn = self.methods.get(id(anc), {}).get(func.attr)
                    return fn if fn is not None and self.facts.scope_of(call) is not fn else None
        return None

    def call(self, call: ast.Call) -> tuple[str, int] | None:
        """(label, line) of the work ``call`` is or runs, else None."""
        label = self.direct(call)
        if label is not None:
            return label, call.lineno
        fn = self.callee(call)
        if fn is not None and id(fn) in self.summary:
            label, line = self.summary[id(fn)]
            name = dotted(call.func) or getattr(fn, "name", "?")
            return f"{name}(), which runs {label} at line {line},", call.lineno
        return None


def reach_of(facts: FileFacts) -> Reach:
    """The file's :class:`Reach` of work every rank must do together (:func:`sync_work`), built once per file."""
    key = ("divergence", "sync")
    if key not in facts.cache:
        facts.cache[key] = Reach(facts, lambda c: sync_work(facts, c))
    found: Reach = facts.cache[key]
    return found


def rc_summaries(facts: FileFacts) -> rc.Summaries:
    """:func:`~fsdp_skill.core.check.rank_conditional.collective_summaries` of the file, computed once per file."""
    key = ("divergence", "rc-summaries")
    if key not in facts.cache:
        facts.cache[key] = rc.collective_summaries(facts)
    found: rc.Summaries = facts.cache[key]
    return found


def calls_in(facts: FileFacts, stmts: list[ast.stmt], scope: ast.AST) -> Iterator[ast.Call]:
    """The calls of ``stmts`` that belong to ``scope`` (not to nested functions), in source order."""
    calls = [n for st in stmts for n in ast.walk(st) if isinstance(n, ast.Call) and facts.scope_of(n) is scope]
    return iter(sorted(calls, key=start))


def _rank_branch(facts: FileFacts, node: ast.AST) -> ast.If | None:
    """The outermost ``if`` with a rank test that holds ``node`` inside its function (None: none)."""
    found: ast.If | None = None
    for anc in facts.ancestors(node):
        if isinstance(anc, (*_FUNCS, ast.ClassDef)):
            break
        if isinstance(anc, ast.If) and facts.is_rank_test(anc.test) and not rc.not_distributed_side(facts, anc, node):
            found = anc
    return found


def inner_loop(facts: FileFacts, node: ast.AST) -> ast.For | ast.AsyncFor | ast.While | None:
    """The innermost loop around ``node`` in its own function or class body, or None."""
    for anc in facts.ancestors(node):
        if isinstance(anc, (*_FUNCS, ast.ClassDef)):
            return None
        if isinstance(anc, _LOOPS):
            return anc
    return None


def _loops_around(facts: FileFacts, node: ast.AST) -> list[ast.For | ast.AsyncFor | ast.While]:
    out = []
    for anc in facts.ancestors(node):
        if isinstance(anc, (*_FUNCS, ast.ClassDef)):
            break
        if isinstance(anc, _LOOPS):
            out.append(anc)
    return out


def _spoken_for(facts: FileFacts, call: ast.Call, branch: ast.If, around: set[int]) -> str | None:
    """Which other rule owns ``call`` as work run on some ranks only: "branch" when it runs under ``branch`` itself
    (after ``if rank != 0: return``) and FSD003-FSD010 / FSD036 (a collective
    :func:`~fsdp_skill.core.check.rank_conditional.collective_kind` knows) or FSD045 (a DDP forward) report it, so
    the exit is that finding's cause; "other" when it sits under a rank condition of its own that ``branch`` does not
    hold (``around``: the ids of the nodes around ``branch``), those rules' concern and not skipped work; None when no
    other rule speaks for it."""
    enclosing = facts.rank_branches().get(id(call), [])
    if not enclosing:
        return None
    if any(b is branch for b in enclosing) and (
        rc.collective_reached(facts, call, rc_summaries(facts)) is not None or _ddp_forward_reached(facts, call)
    ):
        return "branch"
    return "other" if any(b is not branch and id(b) not in around for b in enclosing) else None


_SCAN_LIMIT = 500  # calls looked at after an exit and before it in its loop: bounded work per exit


def scope_calls(facts: FileFacts, scope: ast.AST) -> tuple[list[ast.Call], list[tuple[int, int]]]:
    """The calls of ``scope`` (not of nested functions) sorted by position, with their positions (memoised)."""
    memo = facts.cache.setdefault(("divergence", "scope-calls"), {})
    if id(scope) not in memo:
        calls = sorted((n for n in facts.scope_nodes(scope) if isinstance(n, ast.Call)), key=start)
        memo[id(scope)] = (calls, [start(c) for c in calls])
    found: tuple[list[ast.Call], list[tuple[int, int]]] = memo[id(scope)]
    return found


def _skipped_work(facts: FileFacts, exit_: ast.stmt, branch: ast.If) -> tuple[str, int] | None:
    """The first synchronised work that the ranks taking ``exit_`` under ``branch`` skip and the others run: for a
    ``continue`` the rest of the iteration, for a ``break`` the loop's body, for a ``return`` the rest of the function
    and the loops around ``branch``. What follows the exit is looked at first: a collective there that another rule
    reports (it runs under ``branch``) makes that rule's finding the one for this mistake."""
    scope = facts.scope_of(exit_)
    calls, positions = scope_calls(facts, scope)
    if isinstance(exit_, (ast.Break, ast.Continue)):
        loop = inner_loop(facts, exit_)
        if loop is None or not any(loop is a for a in facts.ancestors(branch)):
            return None  # the loop is inside the rank branch: every rank that runs it leaves it alike
        lo, hi = start(loop.body[0]), end(loop.body[-1])
        if isinstance(exit_, ast.Continue) and _realigns(facts, loop, exit_, calls, positions):
            return None
    elif isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        loops = _loops_around(facts, branch)
        lo, hi = (start(loops[-1]), end(loops[-1])) if loops else (end(exit_), end(scope))
    else:
        return None
    stop = end(scope) if isinstance(exit_, ast.Return) and isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) else hi
    after = calls[bisect.bisect_left(positions, end(exit_)) : bisect.bisect_left(positions, stop)]
    before = (
        []
        if isinstance(exit_, ast.Continue)
        else calls[bisect.bisect_left(positions, lo) : bisect.bisect_left(positions, start(exit_))]
    )
    after, before = after[:_SCAN_LIMIT], before[:_SCAN_LIMIT]
    around = {id(a) for a in facts.ancestors(branch)}
    reach = reach_of(facts)
    arm = _arm(branch, exit_)
    done = _done_before_continue(facts, exit_, arm, calls, positions, reach)
    first: tuple[str, int] | None = None
    for call in after:
        if facts.exclusive(exit_, call) or stmt_holds(arm, call):
            continue  # the other branch of an if around the exit: not on this path
        owner = _spoken_for(facts, call, branch, around)
        if owner == "branch":
            return None  # FSD003 / FSD045 report the work this exit leaves to some ranks: one finding for one mistake
        if owner is None and first is None and (hit := reach.call(call)) is not None and hit[0] not in done:
            first = hit
    for call in before:  # the next iterations of the loop
        if first is not None:
            break
        if not stmt_holds(arm, call) and _spoken_for(facts, call, branch, around) is None:
            first = reach.call(call)
    return first


def _realigns(facts: FileFacts, loop: ast.stmt, exit_: ast.stmt, calls: list[ast.Call], positions: list[tuple[int, int]]) -> bool:
    """Is ``exit_`` a ``continue`` of a ``while True:`` loop taken before any synchronised work of the iteration (an
    interactive loop: ``if rank == 0: prompt = input(); if not prompt: continue`` ahead of the broadcast)? The ranks
    taking it start the iteration again and meet the others in the same first collective: the order of the
    collectives is the same on every rank, only this rank's count of iterations differs, and a loop with no end of
    its own never ends on that count."""
    if not (isinstance(loop, ast.While) and (is_true(loop.test) or isinstance(loop.test, ast.Constant) and loop.test.value == 1)):
        return False
    reach = reach_of(facts)
    before = calls[bisect.bisect_left(positions, start(loop.body[0])) : bisect.bisect_left(positions, start(exit_))]
    return all(reach.call(c) is None for c in before[:_SCAN_LIMIT]) and len(before) <= _SCAN_LIMIT


def _done_before_continue(
    facts: FileFacts, exit_: ast.stmt, arm: list[ast.stmt], calls: list[ast.Call], positions: list[tuple[int, int]], reach: Reach
) -> set[str]:
    """For a ``continue``: the labels of the synchronised work that the ranks taking it already ran in this iteration,
    in the rank branch's arm before it (``dist.all_gather(...); continue`` while the other ranks make the same
    all_gather at the end of the iteration): each rank makes that work once per iteration, so it is not skipped."""
    if not isinstance(exit_, ast.Continue) or not arm:
        return set()
    lo, hi = bisect.bisect_left(positions, start(arm[0])), bisect.bisect_left(positions, start(exit_))
    on_path = {id(a) for a in facts.ancestors(exit_)}
    return {
        hit[0]
        for call in calls[lo:hi][:_SCAN_LIMIT]
        if _runs_on_the_way(facts, call, on_path) and (hit := reach.call(call)) is not None
    }


def _runs_on_the_way(facts: FileFacts, call: ast.Call, on_path: set[int]) -> bool:
    """Does ``call`` run on every way to the statement whose ancestors are ``on_path`` (no ``if``, loop, ``and`` /
    ``or``, conditional expression or ``except`` of its own between them)?"""
    for anc in facts.ancestors(call):
        if id(anc) in on_path:
            return True
        if isinstance(anc, (ast.If, ast.IfExp, ast.BoolOp, ast.ExceptHandler, *_LOOPS, *_FUNCS, ast.ClassDef)):
            return False
    return False


@finder("FSD037")
def rank_divergent_exit(facts: FileFacts) -> Found:
    """FSD037: ``break`` / ``continue`` / ``return`` under a rank condition that skips synchronised work the other
    ranks still run (see the module docstring)."""
    for node in nodes_of_type(facts, ast.Break, ast.Continue, ast.Return):
        if not isinstance(node, (ast.Break, ast.Continue, ast.Return)):
            continue
        branch = _rank_branch(facts, node)
        if branch is None:
            continue
        hit = _skipped_work(facts, node, branch)
        if hit is not None:
            label, line = hit
            word = _EXIT_WORD[type(node)]
            yield (
                node,
                f"`{word}` on some ranks only (rank condition at line {branch.lineno}) while the others go on to {label} at line {line}",
            )
    yield from _stop_flag_on_some_ranks(facts)


# a framework's flag that ends its training loop on the rank that sets it: Lightning's `trainer.should_stop`, the
# Hugging Face Trainer's `control.should_training_stop` (owner word -> attribute)
_STOP_FLAGS = {"trainer": "should_stop", "control": "should_training_stop"}
_SHARING = {"broadcast", "reduce_boolean_decision", "all_reduce", "all_gather", "broadcast_object_list", "reduce", "gather"}


def _stop_flag(node: ast.AST) -> str | None:
    """``trainer.should_stop`` / ``self.trainer.should_stop`` / ``control.should_training_stop`` when ``node`` is that
    attribute, else None."""
    if not isinstance(node, ast.Attribute):
        return None
    owner = (dotted(node.value) or "").rsplit(".", 1)[-1].lower()
    return dotted(node) if any(w in owner and node.attr == a for w, a in _STOP_FLAGS.items()) else None


def _stop_flag_on_some_ranks(facts: FileFacts) -> Found:
    """FSD037 in a framework's shape: ``trainer.should_stop = True`` (``control.should_training_stop = True``) set
    under a rank condition (``if trainer.is_global_zero:``, a ``@rank_zero_only`` hook) with nothing after it in the
    function that hands the flag to a collective (``trainer.strategy.reduce_boolean_decision(...)``,
    ``trainer.strategy.broadcast(trainer.should_stop)``): the framework leaves its loop on those ranks only, and the
    others wait in the next step's collectives."""
    branches = facts.rank_branches()
    for node in nodes_of_type(facts, ast.Assign):
        assert isinstance(node, ast.Assign)
        flag = next((f for t in node.targets if (f := _stop_flag(t)) is not None), None)
        if flag is None or not (isinstance(node.value, ast.Constant) and node.value.value is True):
            continue
        enclosing = branches.get(id(node))
        if not enclosing:
            continue
        scope = facts.scope_of(node)
        shared = any(
            isinstance(n, ast.Call)
            and start(n) > start(node)
            and last_name(n) in _SHARING
            and not branches.get(id(n))
            and any(dotted(m) == flag for m in ast.walk(facts.parents.get(id(n)) or n) if isinstance(m, ast.Attribute))
            for n in facts.scope_nodes(scope)
        )
        if shared:
            continue
        yield (
            node,
            f"`{flag} = True` on some ranks only (rank condition at line {enclosing[-1].lineno}): the framework leaves "
            "its training loop on those ranks while the others wait for them in the next step's collectives",
        )


# --- FSD038: a decision on a value only one rank holds -------------------------------------------------------

_ONE_RANK_RESULTS = {  # collective -> (argument that only the destination rank holds afterwards: keyword, position)
    "torch.distributed.reduce": ("tensor", 0),
    "torch.distributed.gather": ("gather_list", 1),
    "torch.distributed.gather_object": ("object_gather_list", 1),
}


def _one_rank_values(facts: FileFacts) -> tuple[list[tuple[ast.Name, ast.Call, str]], list[tuple[ast.Name, ast.stmt, str]]]:
    """The values only some ranks hold: (the tensor or list passed to a collective whose result only its destination
    holds, that call, what it is), and (a name bound under a rank condition, the binding statement, what it is)."""
    results: list[tuple[ast.Name, ast.Call, str]] = []
    for call in facts.calls():
        q = facts.qual(call) or ""
        spec = _ONE_RANK_RESULTS.get(q)
        arg = kwarg(call, *spec) if spec else None
        if isinstance(arg, ast.Name):
            what = f"the result of dist.{q.rsplit('.', 1)[-1]}(..., dst=...) at line {call.lineno}, which only the destination rank holds"
            results.append((arg, call, what))
    bound: list[tuple[ast.Name, ast.stmt, str]] = []
    branches = facts.rank_branches()
    for node in nodes_of_type(facts, ast.Assign, ast.AugAssign, ast.AnnAssign):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and branches.get(id(node)):
            branch = branches[id(node)][-1]
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and not _received(facts, node, n.id):
                        bound.append((n, node, f"bound under the rank condition at line {branch.lineno} (line {node.lineno})"))
    return results, bound


# reads of a value that every rank agrees on whatever the data: its shape, type and place
_SHAPE_READS = {"shape", "size", "numel", "dim", "ndim", "dtype", "device", "is_cuda"}
_CARRY_DEPTH = 64  # derived values and returns followed from one collective's result, at most


def _reads(facts: FileFacts, expr: ast.AST, ident: tuple[int, str, int]) -> bool:
    """Does ``expr`` read the data of the binding ``ident`` (``t[0] / t[1]``, ``t.item()``), not only its shape
    (``t.shape``, ``t.size(0)``, ``len(t)``)?"""
    todo = [expr]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Attribute) and n.attr in _SHAPE_READS:
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len":
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id == ident[1] and facts.binding(n)[0] == ident:
            return True
        todo += list(ast.iter_child_nodes(n))
    return False


def _new_binding(facts: FileFacts, stmt: ast.stmt, name: str) -> tuple[int, str, int] | None:
    """The identity of the binding of ``name`` that the assignment ``stmt`` makes."""
    scope = facts.scope_of(stmt)
    b = next((b for b in facts.bindings.get((id(scope), name), []) if b.pos == end(stmt)), None)
    return (id(scope), name, b.index) if b is not None else None


def _carried(facts: FileFacts, results: list[tuple[ast.Name, ast.Call, str]]) -> list[tuple[tuple[int, str, int], ast.Call, str]]:
    """The values only the destination rank holds, carried from each collective's result: names assigned from it
    (``val_loss = t[0] / t[1]``), and what a function of the file returns from it, bound at its call sites
    (``curr = validation(...)``): (binding identity, the call after which it holds the value, what it is)."""
    todo = [(facts.binding(name)[0], call, what) for name, call, what in results]
    out: list[tuple[tuple[int, str, int], ast.Call, str]] = []
    seen: set[tuple[int, str, int]] = set()
    while todo and len(out) < _CARRY_DEPTH:
        ident, call, what = todo.pop()
        if ident in seen:
            continue
        seen.add(ident)
        out.append((ident, call, what))
        scope = facts.scope_of(call)
        for node in facts.scope_nodes(scope):
            if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.Return)) or node.value is None:
                continue
            if start(node) < end(call) or facts.exclusive(call, node) or not _reads(facts, node.value, ident):
                continue
            if _synced_between(facts, scope, ident[1], end(call), start(node)):
                continue  # every rank holds the value again
            if isinstance(node, ast.Return):
                if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    todo += _bound_from_calls(facts, scope, node, what)
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                key = _new_binding(facts, node, t.id) if isinstance(t, ast.Name) else None
                if key is not None:
                    todo.append((key, call, f"derived at line {node.lineno} from {what}"))
    return out


def _bound_from_calls(
    facts: FileFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef, ret: ast.Return, what: str
) -> list[tuple[tuple[int, str, int], ast.Call, str]]:
    """(binding, call) for each ``x = fn(...)`` of the file, ``fn`` returning at ``ret`` a value only one rank holds."""
    out: list[tuple[tuple[int, str, int], ast.Call, str]] = []
    for c in facts.calls():
        target = callgraph.callee(facts, c)
        if target is None or target.fn is not fn:
            continue
        stmt = facts.parents.get(id(c))
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is c:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                key = _new_binding(facts, stmt, t.id) if isinstance(t, ast.Name) else None
                if key is not None:
                    out.append((key, c, f"returned by {target.summary.name}() at line {ret.lineno}, {what}"))
    return out


# collectives after which every rank holds the same value in the tensor or list it was given
_AGREED = {"broadcast", "broadcast_object_list", "all_reduce", "all_gather", "all_gather_object", "all_gather_into_tensor"}


def _received(facts: FileFacts, stmt: ast.Assign | ast.AugAssign | ast.AnnAssign, name: str) -> bool:
    """Is ``name`` bound here to what a collective that gives every rank the same value filled before, from a value
    that carried ``name`` itself (yolov5: ``broadcast_list = [stop if RANK == 0 else None]``,
    ``dist.broadcast_object_list(broadcast_list, 0)``, ``if RANK != 0: stop = broadcast_list[0]``)? Then the ranks
    that bind it get the value the others already hold."""
    if stmt.value is None:
        return False
    scope = facts.scope_of(stmt)
    read = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - {name}
    if not read:
        return False
    for node in _agreeing_calls(facts, scope):
        if not start(node) < start(stmt):
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            given = [n for n in ast.walk(arg) if isinstance(n, ast.Name) and n.id in read]
            if any(_mentions(arg, name) or _mentions(facts.resolve(g) or g, name) for g in given):
                return True
    return False


def _agreeing_calls(facts: FileFacts, scope: ast.AST) -> list[ast.Call]:
    """The calls of ``scope`` (in source order) to a collective that gives every rank the same value (:data:`_AGREED`);
    memoised per scope: :func:`_received` asks for each assignment of a rank-conditional name."""
    memo: dict[int, list[ast.Call]] = facts.cache.setdefault(("divergence", "agreeing_calls"), {})
    got = memo.get(id(scope))
    if got is None:
        got = memo[id(scope)] = [
            node
            for node in facts.scope_nodes(scope)
            if isinstance(node, ast.Call)
            and (q := facts.qual(node) or "").startswith("torch.distributed.")
            and q.rsplit(".", 1)[-1] in _AGREED
        ]
    return got


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _synced_between(facts: FileFacts, scope: ast.AST, name: str, lo: tuple[int, int], hi: tuple[int, int]) -> bool:
    """Is there, between positions ``lo`` and ``hi`` of ``scope``, a collective (torch's or a framework's) given
    ``name`` (``dist.broadcast(flag, src=0)``, ``dist.broadcast_object_list([stop], 0)``)?"""
    for node in facts.scope_nodes(scope):
        if isinstance(node, ast.Call) and lo <= start(node) <= hi:
            q = facts.qual(node) or ""
            is_coll = (q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in rc.COLLECTIVES) or framework_sync(node)
            if is_coll and any(_mentions(a, name) for a in [*node.args, *(k.value for k in node.keywords)]):
                return True
    return False


def _exits_skip_work(facts: FileFacts, block: list[ast.stmt], scope: ast.AST) -> tuple[str, int] | None:
    """Synchronised work in ``block``, or skipped by a ``break`` / ``continue`` / ``return`` of ``block``."""
    reach = reach_of(facts)
    branches = facts.rank_branches()
    for call in calls_in(facts, block, scope):
        if branches.get(id(call)):
            continue  # under a rank condition of its own: the rank-conditional rules' concern
        hit = reach.call(call)
        if hit is not None:
            return hit
    for st in block:
        for n in ast.walk(st):
            if isinstance(n, (ast.Break, ast.Continue, ast.Return)) and facts.scope_of(n) is scope:
                hit = _skipped_by(facts, n, scope)
                if hit is not None:
                    return hit
    return None


def _skipped_by(facts: FileFacts, exit_: ast.stmt, scope: ast.AST) -> tuple[str, int] | None:
    reach = reach_of(facts)
    if isinstance(exit_, (ast.Break, ast.Continue)):
        loop = inner_loop(facts, exit_)
        if loop is None:
            return None
        calls = [c for c in calls_in(facts, loop.body, scope) if not isinstance(exit_, ast.Continue) or start(c) >= end(exit_)]
    elif isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        loops = _loops_around(facts, exit_)
        calls = [
            c for c in calls_in(facts, scope.body, scope) if start(c) >= end(exit_) or any(stmt_holds(lp.body, c) for lp in loops)
        ]
    else:
        return None
    for c in calls:
        if facts.rank_branches().get(id(c)):
            continue
        hit = reach.call(c)
        if hit is not None:
            return hit
    return None


def _one_rank_load(
    facts: FileFacts,
    node: ast.If | ast.While,
    results: dict[tuple[int, str, int], list[tuple[ast.Call, str]]],
    bound: dict[tuple[int, str], list[tuple[ast.stmt, str]]],
    names: set[str],
) -> tuple[str, str] | None:
    """(name, what it is) for the first name of ``node``'s test that holds a value only some ranks hold there."""
    scope = facts.scope_of(node)
    loops: list[ast.For | ast.AsyncFor | ast.While] = [node] if isinstance(node, ast.While) else []
    loops += _loops_around(facts, node)
    for n in ast.walk(node.test):
        if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)) or n.id not in names:
            continue
        ident, b = facts.binding(n)
        for call, what in results.get(ident, []):  # the same tensor / list the collective filled, not rebound since
            if (
                facts.scope_of(call) is scope
                and end(call) <= start(n)
                and not facts.exclusive(call, n)  # the else of the if that made the collective: it never ran there
                and not _synced_between(facts, scope, n.id, end(call), start(n))
            ):
                return n.id, what
        for stmt, what in bound.get((id(scope), n.id), []):
            if b is not None and b.pos == end(stmt) and not _synced_between(facts, scope, n.id, end(stmt), start(n)):
                return n.id, what  # the binding the test sees
            # a binding later in a loop around the test reaches it on the next iteration (loop-carried)
            loop = next((lp for lp in loops if stmt_holds(lp.body, stmt) and start(stmt) > start(n)), None)
            if loop is not None and not _synced_between(facts, scope, n.id, start(loop), end(loop)):
                return n.id, what
    return None


def _one_rank_attributes(facts: FileFacts) -> dict[str, str]:
    """``self.x`` -> what it is, for the attributes that the file writes outside ``__init__`` only under rank
    conditions (``if self.rank == 0: self.should_stop = True``) and never hands to a collective: the other ranks keep
    the initial value."""
    writes: dict[str, list[ast.stmt]] = {}
    for node in nodes_of_type(facts, ast.Assign, ast.AugAssign, ast.AnnAssign):
        assert isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        fn = facts.scope_of(node)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == "__init__":
            continue
        for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
            name = dotted(t) if isinstance(t, ast.Attribute) else None
            if name and name.startswith("self."):
                writes.setdefault(name, []).append(node)
    branches = facts.rank_branches()
    out = {
        name: f"written only under the rank condition at line {branches[id(stmts[0])][-1].lineno} (line {stmts[0].lineno})"
        for name, stmts in writes.items()
        if all(branches.get(id(st)) for st in stmts)
    }
    if out:
        for call in facts.calls():
            q = facts.qual(call) or ""
            if (q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in rc.COLLECTIVES) or framework_sync(call):
                for arg in [*call.args, *(k.value for k in call.keywords)]:
                    for n in ast.walk(arg):
                        if isinstance(n, ast.Attribute):
                            out.pop(dotted(n) or "", None)
    return out


@finder("FSD038")
def decision_on_one_rank_value(facts: FileFacts) -> Found:
    """FSD038: an ``if`` / ``while`` on a value only one rank holds, guarding synchronised work or an exit from a
    loop that holds some (see the module docstring)."""
    results_list, bound_list = _one_rank_values(facts)
    attributes = _one_rank_attributes(facts)
    if not results_list and not bound_list and not attributes:
        return
    results: dict[tuple[int, str, int], list[tuple[ast.Call, str]]] = {}
    carried = _carried(facts, results_list)
    for ident, call, what in carried:
        results.setdefault(ident, []).append((call, what))
    bound: dict[tuple[int, str], list[tuple[ast.stmt, str]]] = {}
    for name, stmt, what in bound_list:
        bound.setdefault((id(facts.scope_of(stmt)), name.id), []).append((stmt, what))
    names = {ident[1] for ident, _, _ in carried} | {name.id for name, _, _ in bound_list}
    branches = facts.rank_branches()
    for node in nodes_of_type(facts, ast.If, ast.While):
        if (
            not isinstance(node, (ast.If, ast.While))
            or branches.get(id(node))
            or not any(
                isinstance(n, ast.Name) and n.id in names or isinstance(n, ast.Attribute) and dotted(n) in attributes
                for n in ast.walk(node.test)
            )
            or facts.is_rank_test(node.test)
        ):
            continue
        hit = _one_rank_load(facts, node, results, bound, names)
        attr = next((d for n in ast.walk(node.test) if isinstance(n, ast.Attribute) and (d := dotted(n)) in attributes), None)
        if hit is None and attr is not None:
            hit = attr, attributes[attr]
        if hit is None:
            continue
        work = _exits_skip_work(facts, node.body + node.orelse, facts.scope_of(node))
        if work is None:
            continue
        held, what = hit
        label, line = work
        yield node, f"`{held}` is {what}; the ranks may decide differently here, and only some reach {label} at line {line}"


# --- FSD040: DDP no_sync() misuse ----------------------------------------------------------------------------


def is_step(facts: FileFacts, call: ast.Call) -> bool:
    """``optimizer.step()`` (or ``scaler.step(optimizer)``), not a scheduler's step."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
        return False
    owner = (dotted(call.func.value) or "").rsplit(".", 1)[-1].lower()
    if "sched" in owner:
        return False
    if "scaler" in owner:
        return bool(call.args)  # scaler.step(optimizer)
    return (
        "optim" in owner
        or owner == "opt"
        or owner.endswith("_opt")
        or owner.startswith("opt_")
        or _built_as_optimizer(facts, call)
    )


def _built_as_optimizer(facts: FileFacts, call: ast.Call) -> bool:
    """Is the receiver of ``call`` bound to ``torch.optim.X(...)`` in this file?"""
    key = ("divergence", "optimizers")
    if key not in facts.cache:
        facts.cache[key] = {
            dotted(t)
            for n in nodes_of_type(facts, ast.Assign)
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and (facts.qual(n.value) or "").startswith("torch.optim.")
            for t in n.targets
        }
    names: set[str | None] = facts.cache[key]
    return isinstance(call.func, ast.Attribute) and dotted(call.func.value) in names


def no_sync_target(facts: FileFacts, item: ast.withitem) -> ast.expr | None:
    """The module a ``with model.no_sync():`` / ``with accelerator.no_sync(model):`` item names, else None."""
    ce = item.context_expr
    if isinstance(ce, ast.Call) and isinstance(ce.func, ast.Attribute) and ce.func.attr in NO_SYNC:
        return ce.args[0] if ce.args else ce.func.value  # accelerator.no_sync(model) / model.no_sync()
    return None


def _no_sync_arm(node: ast.AST, called: bool) -> ast.expr | None:
    """The module of one arm of a conditional context: ``model.no_sync()`` (``called``) or ``model.no_sync`` (a
    context factory, called at the ``with``), else None."""
    if called and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NO_SYNC:
        return node.args[0] if node.args else node.func.value
    if not called and isinstance(node, ast.Attribute) and node.attr in NO_SYNC:
        return node.value
    return None


def conditional_no_sync(facts: FileFacts, item: ast.withitem) -> tuple[ast.expr, bool, ast.expr] | None:
    """(test, does ``no_sync()`` hold when the test is true, the module) for a ``with`` item that enters ``no_sync()``
    on some micro-batches only: ``with m.no_sync() if c else nullcontext():``, ``ctx = m.no_sync() if c else
    nullcontext(); with ctx:``, or ``ctx = m.no_sync if c else nullcontext; with ctx():`` (the name followed to its
    last assignment in the function)."""
    ce: ast.AST | None = item.context_expr
    called = True
    if isinstance(ce, ast.Call) and isinstance(ce.func, ast.Name) and not ce.args and not ce.keywords:
        ce, called = facts.resolve(ce.func), False
    elif isinstance(ce, ast.Name):
        ce = facts.resolve(ce)
    if not isinstance(ce, ast.IfExp):
        return None
    body, other = _no_sync_arm(ce.body, called), _no_sync_arm(ce.orelse, called)
    if (body is None) == (other is None):
        return None
    module = body if body is not None else other
    assert module is not None
    return ce.test, body is not None, module


def _guarded_within(facts: FileFacts, node: ast.AST, holder: ast.AST) -> bool:
    """Is ``node`` under an ``if`` (or a conditional expression) inside ``holder``?"""
    for anc in facts.ancestors(node):
        if anc is holder:
            return False
        if isinstance(anc, (ast.If, ast.IfExp, ast.Try)):
            return True
    return False


def _names_module(node: ast.AST, target: str) -> bool:
    return any(
        (d := dotted(n)) is not None and (d == target or d.startswith(target + "."))
        for n in ast.walk(node)
        if isinstance(n, (ast.Name, ast.Attribute))
    )


@finder("FSD040")
def step_inside_no_sync(facts: FileFacts) -> Found:
    """FSD040: an optimizer step inside ``no_sync()`` after a backward there (the gradients are never all-reduced)."""
    for kind, node, message in _no_sync_misuse(facts):
        if kind == "step":
            yield node, message


@finder("FSD046")
def backward_only_in_no_sync(facts: FileFacts) -> Found:
    """FSD046: only the backward inside a DDP ``no_sync()``, its forward before it (the gradients are still
    all-reduced: the accumulation saves no communication)."""
    for kind, node, message in _no_sync_misuse(facts):
        if kind == "backward-only":
            yield node, message


def _no_sync_misuse(facts: FileFacts) -> Iterator[tuple[str, ast.expr | ast.stmt, str]]:
    """("step" | "backward-only", node, message) for each misuse of ``no_sync()`` (memoised per file)."""
    key = ("divergence", "no_sync")
    if key not in facts.cache:
        facts.cache[key] = list(_find_no_sync_misuse(facts))
    found: list[tuple[str, ast.expr | ast.stmt, str]] = facts.cache[key]
    return iter(found)


def _find_no_sync_misuse(facts: FileFacts) -> Iterator[tuple[str, ast.expr | ast.stmt, str]]:
    for node in nodes_of_type(facts, ast.With, ast.AsyncWith):
        if not isinstance(node, (ast.With, ast.AsyncWith)):
            continue
        scope = facts.scope_of(node)
        for item in node.items:
            target = no_sync_target(facts, item)
            conditional = conditional_no_sync(facts, item) if target is None else None
            if conditional is not None:
                target = conditional[2]  # no_sync() on some micro-batches: its forward still matters (FSD046)
            if target is None or facts.is_fsdp2(target):
                continue  # FSDP2 has no no_sync(): FSD018
            calls = list(calls_in(facts, node.body, scope))
            backwards = [c for c in calls if is_backward(c) or last_name(c) == "backward"]
            if not backwards:
                continue
            step = next((c for c in calls if is_step(facts, c) and start(c) > start(backwards[0])), None)
            if step is not None and conditional is None:
                ctx = dotted(item.context_expr.func) if isinstance(item.context_expr, ast.Call) else None
                yield "step", step, f"optimizer step inside `with {ctx}():` (line {node.lineno}) after the backward there"
                continue
            if step is not None and not _guarded_within(facts, step, node):
                # a conditional context is nullcontext() on the synchronising micro-batches only: a step under a test
                # of its own may be on those; an unguarded one steps on the accumulating micro-batches too
                yield (
                    "step",
                    step,
                    (
                        f"optimizer step on every micro-batch inside the `with` of line {node.lineno}, which enters "
                        f"{dotted(target) or 'the model'}.no_sync() on some of them, after the backward there"
                    ),
                )
                continue
            name = dotted(target)
            if name is None or not _is_ddp(facts, target) or isinstance(item.context_expr, ast.Call) and item.context_expr.args:
                continue
            if _forward_before_only(facts, node, scope, name, calls):
                yield (
                    "backward-only",
                    node,
                    f"only the backward runs inside `with {name}.no_sync():`; its forward ran before (DDP decides in forward whether to all-reduce)",
                )


def _forward_before_only(
    facts: FileFacts, with_: ast.With | ast.AsyncWith, scope: ast.AST, name: str, body_calls: list[ast.Call]
) -> bool:
    """Does the forward of ``name`` run before ``with_`` in ``scope`` (or, for a ``self.`` module in a method that
    runs none itself, before every call of the method in the class: ``loss = self.model(x);
    self._backward(loss)``), and nothing in its body run one?"""
    if not _forward_before(facts, with_, scope, name) and not _forward_before_callers(facts, scope, name):
        return False
    reach = reach_of(facts)
    for c in body_calls:
        if is_backward(c):
            continue
        if _names_module(c, name) or reach.callee(c) is not None and reach.call(c) is not None:
            return False
        if isinstance(c.func, ast.Attribute) and dotted(c.func.value) == "self" and name.startswith("self."):
            return False  # a method of the class: it may run the forward
    return True


def _forward_before(facts: FileFacts, node: ast.stmt | ast.expr, scope: ast.AST, name: str) -> bool:
    """Does ``scope`` run the forward of ``name`` (``name(...)``, ``name.forward(...)``) before ``node``?"""
    tail = name.rsplit(".", 1)[-1]
    return any(
        last_name(c) in (tail, "forward")
        and end(c) <= start(node)
        and facts.scope_of(c) is scope
        and dotted(c.func) in (name, f"{name}.forward")
        for c in facts.calls()
    )


def _forward_before_callers(facts: FileFacts, scope: ast.AST, name: str) -> bool:
    """For a method that runs no forward of the ``self.`` module ``name`` (anywhere in it): is it called in the file,
    and every call of it preceded, in the caller, by that forward?"""
    if not name.startswith("self.") or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    tail = name.rsplit(".", 1)[-1]
    if any(
        facts.scope_of(c) is scope and dotted(c.func) in (name, f"{name}.forward") and last_name(c) in (tail, "forward")
        for c in facts.calls()
    ):
        return False
    sites = [c for c in facts.calls() if last_name(c) == scope.name and (t := callgraph.callee(facts, c)) and t.fn is scope]
    return bool(sites) and all(_forward_before(facts, c, facts.scope_of(c), name) for c in sites)


# --- FSD045: a DDP wrapper's forward on some ranks only -------------------------------------------------------


def _ddp_direct(facts: FileFacts, call: ast.Call) -> str | None:
    """``model(x)`` / ``model.forward(x)`` of a DDP wrapper that broadcasts its buffers and was not given to Join."""
    func = call.func
    recv: ast.expr | None = func if isinstance(func, (ast.Name, ast.Attribute)) else None
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        recv = func.value
    if recv is None or not _is_ddp(facts, recv) or facts.is_joined_ddp(recv) or _no_buffer_broadcast(facts, recv):
        return None
    return f"{dotted(func)}(...) (forward through a DDP wrapper)"


def _no_buffer_broadcast(facts: FileFacts, recv: ast.AST) -> bool:
    """Is every ``DistributedDataParallel(...)`` bound to this variable built without the buffer broadcast
    (:func:`_no_forward_sync`)?"""
    key = facts._variable_key(recv)
    memo = facts.cache.setdefault(("divergence", "no-buffer-broadcast"), {})
    if key not in memo:
        memo[key] = _built_without_buffer_broadcast(facts, key)
    found: bool = memo[key]
    return found


def _built_without_buffer_broadcast(facts: FileFacts, key: tuple[int, str] | None) -> bool:
    """Every DDP(...) bound to ``key`` has ``broadcast_buffers=False`` or wraps a module with no buffer
    (:func:`_buffer_free`); for a variable the file binds to no DDP(...)
    of its own (a parameter or return value the wrapper reaches through calls, :mod:`~fsdp_skill.core.check.calls`): every DDP(...) of the
    file has it."""
    built = [
        n
        for n in nodes_of_type(facts, ast.Assign)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and facts.qual(n.value) == DDP
    ]
    made = [
        n.value
        for n in built
        if any(((id(facts.scope_of(n)), t.id) if isinstance(t, ast.Name) else facts._variable_key(t)) == key for t in n.targets)
    ] or [n.value for n in built]
    return bool(made) and all(
        _no_forward_sync(m) or (m.args and _buffer_free(facts, m.args[0], 0)) for m in made if isinstance(m, ast.Call)
    )


# torch.nn modules that hold no buffer (so DDP has none to broadcast in forward); containers hold what they are given
_NO_BUFFERS = frozenset(
    {"Linear", "Bilinear", "Embedding", "LayerNorm", "RMSNorm", "GroupNorm", "Dropout", "Dropout1d", "Dropout2d"}
    | {"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "MultiheadAttention", "Identity"}
    | {"ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LeakyReLU", "Mish", "Flatten", "Unflatten"}
)
_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
_MOVES = frozenset({"to", "cuda", "cpu", "half", "bfloat16", "float", "double", "train", "eval", "requires_grad_"})


def _buffer_free(facts: FileFacts, expr: ast.AST | None, depth: int) -> bool:
    """Is the module ``expr`` builds provably free of buffers (FSD045: a DDP forward then runs no collective): a
    torch.nn module of :data:`_NO_BUFFERS`, a container of such, or a class of this file none of whose methods
    registers a buffer and each of whose ``self.x = ...`` is such a module or a plain value; through ``.to(...)``,
    ``torch.compile(m)`` and names bound to them (rasbt's GPT: embeddings, linear layers, layer norms, dropout)."""
    if depth > 12 or expr is None:
        return False
    expr = facts.resolve(expr)
    if isinstance(expr, ast.Starred):
        return _buffer_free(facts, expr.value, depth + 1)
    if isinstance(expr, (ast.List, ast.Tuple)):
        return all(_buffer_free(facts, e, depth + 1) for e in expr.elts)
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp)):
        return _buffer_free(facts, expr.elt, depth + 1)
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Attribute) and func.attr in _MOVES:
        return _buffer_free(facts, func.value, depth + 1)
    q = facts.qual(expr) or ""
    if q == "torch.compile":
        return bool(expr.args) and _buffer_free(facts, expr.args[0], depth + 1)
    name = last_name(expr) or ""
    if q.startswith("torch.nn.") and name in _NO_BUFFERS:
        return True
    if q.startswith("torch.nn.") and name in _CONTAINERS:
        return all(_buffer_free(facts, a, depth + 1) for a in expr.args) and not expr.keywords
    cls = _file_class(facts, func)
    return cls is not None and _class_buffer_free(facts, cls, depth + 1)


def _file_class(facts: FileFacts, func: ast.expr) -> ast.ClassDef | None:
    """The class of this file's module level that ``func`` (a plain name) names, else None."""
    if not isinstance(func, ast.Name):
        return None
    return next((n for n in facts.tree.body if isinstance(n, ast.ClassDef) and n.name == func.id), None)


def _class_buffer_free(facts: FileFacts, cls: ast.ClassDef, depth: int) -> bool:
    """No ``register_buffer`` in ``cls`` (nor a base other than ``nn.Module``), and every ``self.x = value`` in it a
    buffer-free module (:func:`_buffer_free`) or a plain value: a constant, arithmetic, a config item
    (``cfg["drop_rate"]``), a parameter with a constant default, or a tensor built by a torch function."""
    if any((dotted(b) or "").rsplit(".", 1)[-1] != "Module" for b in cls.bases):
        return False
    called = {  # self.x(...) somewhere in the class: x is used as a module
        n.func.attr
        for n in ast.walk(cls)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "self"
    }
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and last_name(node) == "register_buffer":
            return False
        if not isinstance(node, ast.Assign):
            continue
        own = [t for t in node.targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"]
        if own and not _plain_or_free(facts, node.value, depth, any(t.attr in called for t in own)):
            return False
    return True


def _plain_or_free(facts: FileFacts, value: ast.expr, depth: int, called: bool) -> bool:
    """Is ``value`` (assigned to ``self.x``; ``called``: ``self.x(...)`` appears in the class) a buffer-free module or
    a plain value? A name is a plain value when ``self.x`` is never called (a module is: it is run in forward)."""
    if isinstance(value, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Subscript)):
        return not called or isinstance(value, ast.Constant)
    if isinstance(value, (ast.Name, ast.Attribute)):
        return not called
    if isinstance(value, ast.Call):
        q = facts.qual(value) or ""
        if q.startswith("torch.") and not q.startswith("torch.nn."):
            return True  # a plain tensor attribute (torch.zeros, torch.triu): not a buffer, not broadcast
        return _buffer_free(facts, value, depth)
    return False


def _no_forward_sync(ddp: ast.Call) -> bool:
    """Does this ``DistributedDataParallel(...)`` turn the buffer broadcast in forward off? ``forward_sync_buffers=False``
    (torch 2.13+), or ``broadcast_buffers=False`` without ``forward_sync_buffers`` (which wins when both are given)."""
    forward_sync, broadcast = kwarg(ddp, "forward_sync_buffers"), kwarg(ddp, "broadcast_buffers")
    if forward_sync is not None:
        return isinstance(forward_sync, ast.Constant) and forward_sync.value is False
    return isinstance(broadcast, ast.Constant) and broadcast.value is False


def _ddp_reach(facts: FileFacts) -> Reach:
    key = ("divergence", "ddp")
    if key not in facts.cache:
        facts.cache[key] = Reach(facts, lambda c: _ddp_direct(facts, c))
    found: Reach = facts.cache[key]
    return found


def _ddp_forward_reached(facts: FileFacts, call: ast.Call) -> bool:
    return bool(facts.ddp) and _ddp_reach(facts).call(call) is not None


def _passes_unwrapped(facts: FileFacts, reach: Reach, call: ast.Call) -> bool:
    """``call`` runs a function each of whose DDP forwards is on one of its parameters (directly, or through the
    functions it hands them to: ``evaluate(model, ...)`` calling ``predict(model, x)``), a DDP module there only
    because some call passes one, and this call passes no DDP module to any of those parameters
    (``evaluate(model.module)`` on rank 0 beside ``evaluate(model)`` on every rank): this call runs no DDP forward."""
    target = callgraph.callee(facts, call)
    fn = target.fn if target is not None else None
    if target is None or fn is None or id(fn) not in reach.summary:
        return False
    deps = _forward_params(facts, reach, fn, 0)
    if deps is None:
        return False
    given = _given_args(call, target)
    return not any(p in given and _is_ddp(facts, given[p]) for p in deps)


def _given_args(call: ast.Call, target: callgraph.Callee) -> dict[str, ast.expr]:
    given = {target.summary.params[i]: arg for i, arg in callgraph.bound_args(call, target)}
    return given | {kw.arg: kw.value for kw in call.keywords if kw.arg is not None}


def _forward_params(facts: FileFacts, reach: Reach, fn: Func, depth: int) -> set[str] | None:
    """The parameters of ``fn`` whose module every DDP forward that ``fn`` reaches runs on (through the calls it makes
    with them); None when some forward runs on something else (``self.model``, a local wrapper) or cannot be told.
    Memoised per function."""
    memo: dict[int, set[str] | None] = facts.cache.setdefault(("divergence", "forward-params"), {})
    if id(fn) in memo:
        return memo[id(fn)]
    memo[id(fn)] = None  # a recursion reaching back here: cannot be told
    if depth > 4:
        return None
    names = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    deps: set[str] = set()
    for node in facts.scope_nodes(fn):
        if not isinstance(node, ast.Call):
            continue
        if _ddp_direct(facts, node) is not None:
            recv = node.func.value if isinstance(node.func, ast.Attribute) and node.func.attr == "forward" else node.func
            if not (isinstance(recv, ast.Name) and recv.id in names and _param_bound(facts, recv)):
                return None
            deps.add(recv.id)
            continue
        inner = reach.callee(node)
        if inner is None or id(inner) not in reach.summary:
            continue
        target = callgraph.callee(facts, node)
        inner_deps = _forward_params(facts, reach, inner, depth + 1) if target is not None else None
        if inner_deps is None or target is None:
            return None
        given = _given_args(node, target)
        for p in inner_deps:
            arg = given.get(p)
            if arg is None:
                continue
            if isinstance(arg, ast.Name) and arg.id in names and _param_bound(facts, arg):
                deps.add(arg.id)
            elif _is_ddp(facts, arg):
                return None
    memo[id(fn)] = deps
    return deps


def _param_bound(facts: FileFacts, name: ast.Name) -> bool:
    """Is the binding ``name`` reads its function's parameter (not rebound before)?"""
    _, seen = facts.binding(name)
    return seen is not None and seen.kind == "param"


@finder("FSD045")
def ddp_forward_on_some_ranks(facts: FileFacts) -> Found:
    """FSD045: a DDP wrapper's forward (directly or through a function of the file) on some ranks only."""
    if not facts.ddp:
        return
    reach = _ddp_reach(facts)
    branches = facts.rank_branches()
    for call in facts.calls():
        enclosing = branches.get(id(call))
        if not enclosing:
            continue
        hit = reach.call(call)
        if (
            hit is None
            or any(rc.not_distributed_side(facts, b, call) for b in enclosing)
            or _passes_unwrapped(facts, reach, call)
        ):
            continue
        for branch in reversed(enclosing):
            if rc.guarded_by_the_rest(facts, branch, call):
                continue
            if not facts.other_branch_has(branch, call, lambda c: reach.call(c) is not None):
                yield call, f"{hit[0]} runs only on some ranks (rank condition at line {branch.lineno})"
                break
