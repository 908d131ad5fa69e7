"""Rules about rank-divergent control flow in the shapes frameworks and training loops give it (FSD054-FSD060).

- **FSD054**: a framework's collective under a rank condition. Accelerate's ``accelerator.gather`` /
  ``gather_for_metrics`` / ``reduce`` / ``pad_across_processes`` / ``wait_for_everyone()`` / ``backward`` and the
  ``accelerate.utils`` functions (``gather_object``, ``broadcast``...), Lightning's ``self.all_gather`` (in a
  ``LightningModule``; ``pl_module.all_gather`` in a callback), ``self.log(..., sync_dist=True)``,
  ``trainer.strategy.barrier()`` / ``broadcast`` / ``reduce``, Fabric's ``fabric.barrier()`` / ``all_reduce``...:
  each is a ``torch.distributed`` collective underneath, so under ``if accelerator.is_main_process:``,
  ``if self.trainer.is_global_zero:``, ``if self.global_rank == 0:`` or in a ``@rank_zero_only`` function the other
  ranks never join it. FSD003 covers the ``torch.distributed`` calls themselves; a call of a function of the file
  whose body reaches such a collective counts as the collective. A call the other ranks reach on their own path
  (``if main: accelerator.wait_for_everyone() else: accelerator.wait_for_everyone()``) is not reported, nor one
  whose other ranks do synchronised work of their own there (``if rank == 0: player() else: trainer()``: two roles,
  each with its own group), nor any in a file that builds groups of chosen ranks (``new_group(ranks=[...])``,
  ``create_group(ranks=[...])``: the condition may select a group's members), nor one after ``if rank != 0: return`` (FSD037 reports that exit).
  A read of a Lightning ``Trainer`` property that is a collective counts too: ``trainer.log_dir`` (``self.trainer``
  of a LightningModule / Callback, or a name bound to ``Trainer(...)``) broadcasts the directory from rank 0, so read
  in a ``@rank_zero_only`` hook or under ``if trainer.is_global_zero:`` it waits for ranks that never read it; not
  when the other ranks' path reads it too.
- **FSD057**: a ``continue`` / ``break`` decided on this rank's data (``if torch.isnan(loss): continue``,
  ``if batch is None: continue``, ``if not torch.isfinite(loss).all(): continue``, ``if len(batch) == 0:
  continue``) that skips synchronised work (the backward of a wrapped model, whose gradient all-reduce the other
  ranks wait in; a wrapped forward; a collective). Silent when the flag was handed to a collective first
  (``dist.all_reduce(flag)``, ``accelerator.gather(flag)``, in the same function before the test), on a gradient
  norm (``clip_grad_norm_`` returns the norm of the all-reduced gradients: the same on every rank), when the file
  uses torch's ``Join``, and where the test is a rank test (FSD037's). The ``continue`` / ``break`` of an ``except``
  counts too when its ``try`` reads this rank's data (``try: loss = compute_loss(model, batch) except
  EmptyBatchError: continue``) and the step it skips holds the backward: only the rank that raised leaves it out
  (not ``except StopIteration``, not a handler that re-raises). A ``return`` decided the same way counts as well when
  the rest of its function holds that work (a ``train_step(batch)`` that returns ``None`` on a bad batch before its
  ``loss.backward()``: called once per step, it is the ``continue`` of the caller's loop). The wrapped model's forward
  may run in a function of the file the step calls (``loss = self.compute_loss(batch)``).
- **FSD055**: a file written under a rank condition (``if rank == 0: torch.save(sd, path)``, ``save_pretrained(path)``,
  ``open(path, "w")``) and then read outside any rank condition in the same function (``torch.load(path)``,
  ``from_pretrained(path)``, ``open(path)``), the same path expression, with nothing between them that makes the
  readers wait for the writer: no barrier (``dist.barrier()``, ``accelerator.wait_for_everyone()``), no other
  collective, no call of a function of the file that reaches one (``sync()`` running ``dist.barrier()``, a method
  running ``accelerator.wait_for_everyone()``). The write and the read may each be made by a function of the file
  given the path or its directory (``save_checkpoint(model, out_dir)`` whose body saves below ``out_dir``; a method
  ``self.save(path)`` running ``save_pretrained(path)``), and a name is followed to the path it was assigned
  (:mod:`~fsdp_skill.core.check.paths`). A directory made on one rank (``os.makedirs(d)``) and then written into by
  every rank counts the same way. The other ranks race rank 0's write: they read
  no file, a partial one, or the previous one. The mirror (the barrier only in the ``else:`` of the save, which rank
  0 never joins) is FSD003's (``dist.barrier``) or FSD054's (a framework barrier).
- **FSD058**: a ``break`` out of a loop that runs synchronised work, decided on a metric this rank computed alone:
  the result of a function of the file named like an evaluation (``evaluate``, ``validate``) that reaches no
  collective combining values, or a name derived from it (``best = val_loss``, ``bad_epochs += 1`` under ``if
  val_loss > best``), never handed to a collective in the loop. A metric bound under a rank condition is FSD038's;
  a metric from a function the file does not define (``trainer.evaluate()``) is not reported: the file cannot tell.
  This rank's wall clock counts as such a metric (``if time.perf_counter() - start > min_time: break`` in a
  benchmark or a time budget; ``elapsed = now - start``): each rank reads its own clock at its own instant.
- **FSD059**: a ``DataLoader`` with a shuffling ``DistributedSampler`` that a function of the file builds and returns
  (``loader = build_loader(ds)``, or in a tuple: ``loader, sampler = build_loaders(ds)``), iterated over epochs (here,
  or by a helper called once per epoch: ``for epoch in ...: train_one_epoch(model, loader)``), with no ``set_epoch`` in the file: FSD035's mistake in a
  helper's shape (FSD035 looks at the sampler where it is built, or at a helper returning the sampler itself).
- **FSD060**: the micro-batch that runs outside DDP's ``no_sync()`` and the one that steps the optimizer chosen by
  modular tests on the same counter and modulus with different offsets (``if step % accum != 0: with
  model.no_sync(): ...`` beside ``if (step + 1) % accum == 0: optimizer.step()``; the context also picked as a name,
  ``ctx = model.no_sync if c else nullcontext; with ctx():``; an accumulating arm that ends in ``continue``). A test
  kept in a name (``sync = (i + 1) % k == 0``) and a counter kept in another (``step = i + 1``) are followed to what
  they were assigned. Only where the two tests visibly disagree; FSD040 / FSD046 are the other ``no_sync()`` mistakes.
- **FSD056**: an ``if`` on a filesystem fact (``os.path.exists(p)``, ``Path(p).is_file()``) with synchronised work in
  one arm only, where the file tells that the ranks can answer differently: ``p`` is node-local (``/tmp``,
  ``/dev/shm``, ``tempfile``), names the rank (``f"cache_{rank}.pt"``), or was written under a rank condition
  earlier in the function with no barrier since, or is read inside the arm by one rank only (``if rank == 0:
  obj[0] = torch.load(p)`` before a ``broadcast_object_list``: the file is that rank's, and the others' answer can
  differ on a node-local disk or behind a network filesystem's attribute cache). A path on a shared filesystem that
  every rank reads answers the same everywhere: not reported.
"""

from __future__ import annotations

import ast
import bisect

from fsdp_skill.core.check import calls as callgraph  # `calls` is a common local name here
from fsdp_skill.core.check import divergence, finders, paths
from fsdp_skill.core.check import rank_conditional as rc
from fsdp_skill.core.check.calls_rules import lightning_trainer
from fsdp_skill.core.check.facts import JOIN, FileFacts, Pos, dotted, end, is_true, kwarg, last_name, start
from fsdp_skill.core.check.finders import Found, finder

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# accelerate.utils functions that are collectives (every process must call them)
_ACCELERATE_UTILS = {
    "gather",
    "gather_object",
    "broadcast",
    "broadcast_object_list",
    "reduce",
    "pad_across_processes",
    "wait_for_everyone",
}
_LIGHTNING_RECEIVERS = {"pl_module", "lightning_module", "trainer.lightning_module", "self.trainer.lightning_module"}
_LOG_METHODS = {"log", "log_dict"}


# --- FSD054: a framework collective under a rank condition ----------------------------------------------------


def _lightning_class(facts: FileFacts, node: ast.AST) -> bool:
    """Is ``node`` inside a class whose bases name a Lightning module (``pl.LightningModule``, ``L.LightningModule``),
    or inside any class of a file that imports Lightning?"""
    for anc in facts.ancestors(node):
        if isinstance(anc, ast.ClassDef):
            if any("Lightning" in (dotted(b) or "") for b in anc.bases):
                return True
            return _imports_lightning(facts)
    return False


def _imports_lightning(facts: FileFacts) -> bool:
    key = ("flow", "imports-lightning")
    if key not in facts.cache:
        facts.cache[key] = any((a.split(".", 1)[0] in ("lightning", "pytorch_lightning")) for a in facts.aliases.values())
    return bool(facts.cache[key])


def framework_collective(facts: FileFacts, call: ast.Call) -> str | None:
    """A label when ``call`` is a collective of Accelerate, Lightning or Fabric (see the module docstring), else
    None."""
    label = divergence.framework_sync(call)
    if label is not None:
        return label
    q = facts.qual(call) or ""
    name = q.rsplit(".", 1)[-1]
    if q.startswith("accelerate.") and name in _ACCELERATE_UTILS:
        return f"{name}() (accelerate.utils)"
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    owner = dotted(func.value) or ""
    lightning = owner in _LIGHTNING_RECEIVERS or owner == "self" and _lightning_class(facts, call)
    if not lightning:
        return None
    if func.attr == "all_gather":
        return f"{owner}.all_gather() (a Lightning all-gather)"
    if func.attr in _LOG_METHODS and is_true(kwarg(call, "sync_dist")):
        return f"{owner}.{func.attr}(..., sync_dist=True) (reduced across the ranks)"
    return None


def _framework_reach(facts: FileFacts) -> divergence.Reach:
    key = ("flow", "framework-reach")
    if key not in facts.cache:
        facts.cache[key] = divergence.Reach(facts, lambda c: framework_collective(facts, c))
    found: divergence.Reach = facts.cache[key]
    return found


def _makes_subgroups(facts: FileFacts) -> bool:
    """Does the file build a process group of chosen ranks (``new_group(ranks=[...])``, Lightning's
    ``TorchCollective.create_group(ranks=[...])``, ``new_subgroups``)?"""
    return any(
        last_name(c) in ("new_group", "create_group", "new_subgroups", "new_subgroups_by_enumeration")
        and (bool(c.args) or kwarg(c, "ranks") is not None or (last_name(c) or "").startswith("new_subgroups"))
        for c in facts.calls()
    )


def _inside_arm(branch: ast.AST, node: ast.AST) -> bool:
    """Is ``node`` in the body or else-branch of ``branch`` (an ``if``), or in a ``@rank_zero_only`` function
    (``branch`` a function), rather than after an ``if`` that exits on the other ranks?"""
    if not isinstance(branch, ast.If):
        return True
    return divergence.stmt_holds(branch.body, node) or divergence.stmt_holds(branch.orelse, node)


_COLLECTIVE_PROPERTIES = {"log_dir"}  # Lightning Trainer properties whose getter broadcasts from rank 0


def _property_reads_on_some_ranks(facts: FileFacts) -> Found:
    """FSD054's property reads: ``trainer.log_dir`` of a Lightning Trainer on some ranks only (module docstring)."""
    if not _imports_lightning(facts):
        return
    branches = facts.rank_branches()
    for node in facts.nodes:
        if not (isinstance(node, ast.Attribute) and node.attr in _COLLECTIVE_PROPERTIES and isinstance(node.ctx, ast.Load)):
            continue
        enclosing = branches.get(id(node))
        if not enclosing or not lightning_trainer(facts, node.value):
            continue
        for branch in reversed(enclosing):
            other = facts.other_path(branch, node)
            if _inside_arm(branch, node) and not any(
                isinstance(x, ast.Attribute) and x.attr == node.attr for stmt in other for x in ast.walk(stmt)
            ):
                yield (
                    node,
                    (
                        f"{dotted(node)} (Lightning's Trainer.{node.attr} broadcasts it from rank 0) is read only on some "
                        f"ranks (rank condition at line {branch.lineno})"
                    ),
                )
                break


@finder("FSD054")
def framework_collective_on_some_ranks(facts: FileFacts) -> Found:
    """FSD054: an Accelerate / Lightning / Fabric collective (directly or through a function of the file) on some
    ranks only (see the module docstring)."""
    yield from _property_reads_on_some_ranks(facts)
    reach = _framework_reach(facts)
    if not reach.summary and not any(framework_collective(facts, c) for c in facts.calls()):
        return
    if _makes_subgroups(facts):
        return  # the rank condition may select the members of a group the framework runs on (a player/trainer split)
    branches = facts.rank_branches()
    sync = divergence.reach_of(facts)  # the other ranks' path doing synchronised work of its own: another role
    for call in facts.calls():
        enclosing = branches.get(id(call))
        if not enclosing:
            continue
        hit = reach.call(call)
        if hit is None or any(rc.not_distributed_side(facts, b, call) for b in enclosing):
            continue
        for branch in reversed(enclosing):
            if not _inside_arm(branch, call) or rc.guarded_by_the_rest(facts, branch, call):
                continue
            if not facts.other_branch_has(branch, call, lambda c: reach.call(c) is not None or sync.call(c) is not None):
                yield call, f"{hit[0]} runs only on some ranks (rank condition at line {branch.lineno})"
                break


# --- FSD057: a data-dependent continue / break before the synchronised work of the step -----------------------

_NONFINITE = {"isnan", "isinf", "isfinite", "isneginf", "isposinf"}
# words of names that hold this rank's data or what it computed from it
_DATA_WORDS = {
    "loss",
    "batch",
    "sample",
    "input",
    "output",
    "logit",
    "data",
    "example",
    "target",
    "label",
    "token",
    "batches",
    "losses",
}  # not "grad": `param.grad is None` is a fact of the model, the same on every rank (modded-nanogpt's optimizer)
_FLAG_PREFIXES = (
    "split",
    "use",
    "sync",
    "is",
    "do",
    "num",
    "n",
    "per",
    "max",
    "min",
    "drop",
    "skip",
    "has",
    "with",
    "dispatch",
    "accum",
)
_SCAN = 500  # calls looked at per exit: bounded work


def _data_name(node: ast.AST) -> str | None:
    """The dotted name of ``node`` when it names this rank's data: its last word is a data noun (``batch``, ``loss``,
    ``micro_batch``, ``inputs``) and not a setting (``split_batch``, ``num_samples``); a loop target alone is not
    enough (``for sync_each_batch in (False, True)`` loops over settings)."""
    name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) else None
    if isinstance(node, ast.Subscript):
        name = dotted(node.value)
    if name is None:
        return None
    tail = name.rsplit(".", 1)[-1].lower()
    head, _, last = tail.rpartition("_")
    if (last in _DATA_WORDS or last[-1:] == "s" and last[:-1] in _DATA_WORDS) and not head.startswith(_FLAG_PREFIXES):
        return name  # batch, loss, micro_batch, cur_inputs; not split_batch, use_labels, num_samples
    return None


def _data_test(test: ast.expr, targets: set[str]) -> tuple[str, set[str]] | None:
    """(what the test looks at, the names it reads) when ``test`` is decided on this rank's data: a non-finite
    check (``torch.isnan(loss)``, ``loss.isinf().any()``, ``math.isnan(x)``), ``batch is None``, ``len(batch) == 0``,
    ``batch.numel() == 0``, ``not batch`` (of the loop's own target: ``targets``); else None."""
    names = {d for n in ast.walk(test) if isinstance(n, (ast.Name, ast.Attribute)) and (d := dotted(n)) is not None}
    for n in ast.walk(test):
        if isinstance(n, ast.Call) and last_name(n) in _NONFINITE:
            return f"`{last_name(n)}()` of this rank's values", names
        if isinstance(n, ast.Compare) and len(n.ops) == 1:
            left, right, op = n.left, n.comparators[0], n.ops[0]
            if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
                name = _data_name(left)
                if name is not None:
                    return f"`{name} is None` on this rank", names
            size = left.args[0] if isinstance(left, ast.Call) and last_name(left) == "len" and left.args else None
            if isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and left.func.attr in ("numel", "nelement"):
                size = left.func.value
            if size is not None and isinstance(right, ast.Constant) and right.value in (0, 1):
                name = _data_name(size)
                if name is not None and isinstance(op, (ast.Eq, ast.Lt, ast.LtE)):
                    return f"the size of `{name}` on this rank", names
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and isinstance(n.operand, (ast.Name, ast.Attribute)):
            name = _data_name(n.operand)
            if name is not None and name in targets:  # `for batch in loader: if not batch:`, not a setting's flag
                return f"`not {name}` on this rank", names
    return None


def _loop_targets(loop: ast.For | ast.AsyncFor | ast.While) -> set[str]:
    """The names a ``for`` loop binds (none for a ``while``)."""
    if isinstance(loop, ast.While):
        return set()
    return {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}


def _agreed_before(facts: FileFacts, scope: ast.AST, names: set[str], before: tuple[int, int]) -> bool:
    """Is one of ``names`` handed to, or bound from, a collective (torch's or a framework's) earlier in ``scope``
    (``dist.all_reduce(flag)``, ``bad = accelerator.gather(bad)``)? Then every rank tests the same value."""
    return any(pos < before and touched & names for pos, touched in _collective_names(facts, scope))


def _collective_names(facts: FileFacts, scope: ast.AST) -> list[tuple[tuple[int, int], set[str]]]:
    """(position, names given to it or bound from it) of each collective of ``scope``, memoised per scope: one pass
    however many exits ask."""
    memo: dict[int, list[tuple[tuple[int, int], set[str]]]] = facts.cache.setdefault(("flow", "collective-names"), {})
    if id(scope) not in memo:
        found: list[tuple[tuple[int, int], set[str]]] = []
        for node in facts.scope_nodes(scope):
            if not isinstance(node, ast.Call):
                continue
            q = facts.qual(node) or ""
            if not (
                q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in rc.COLLECTIVES or framework_collective(facts, node)
            ):
                continue
            touched = {d for a in [*node.args, *(k.value for k in node.keywords)] for n in ast.walk(a) if (d := dotted(n))}
            parent = facts.parents.get(id(node))
            if isinstance(parent, ast.Assign):
                touched |= {d for t in parent.targets for n in ast.walk(t) if (d := dotted(n))}
            found.append((start(node), touched))
        memo[id(scope)] = found
    return memo[id(scope)]


def _exit_if(facts: FileFacts, exit_: ast.stmt, loop: ast.AST) -> ast.If | None:
    """The innermost ``if`` between ``exit_`` and ``loop`` whose body or else-branch holds it."""
    for anc in facts.ancestors(exit_):
        if anc is loop:
            return None
        if isinstance(anc, ast.If):
            return anc
    return None


def _forward_reach(facts: FileFacts) -> divergence.Reach:
    """The functions of the file that run a wrapped module's forward (``self.compute_loss(batch)`` whose body runs
    ``self.model(h)`` of a DDP ``self.model``), built once per file."""
    key = ("flow", "forward-reach")
    if key not in facts.cache:
        facts.cache[key] = divergence.Reach(facts, lambda c: divergence.wrapped_forward(facts, c))
    found: divergence.Reach = facts.cache[key]
    return found


def _wrapped_forward_in(facts: FileFacts, loop: ast.AST, scope: ast.AST) -> bool:
    """Does ``loop`` run the forward of a module the file knows is DDP / FSDP-wrapped, itself, through a helper it
    hands the wrapped module to (``loss = compute_loss(model, batch)``) or through a function of the file whose body
    runs it (``loss = self.compute_loss(batch)``)?"""
    reach = _forward_reach(facts)
    return any(
        isinstance(c, ast.Call)
        and facts.scope_of(c) is scope
        and (
            reach.call(c) is not None
            or any(isinstance(a, (ast.Name, ast.Attribute)) and divergence.is_wrapped(facts, a) for a in c.args)
        )
        for c in ast.walk(loop)
    )


# exceptions that end the data (or the run) the same way on every rank: not a decision on this rank's data
_NOT_DATA_ERRORS = {"StopIteration", "StopAsyncIteration", "KeyboardInterrupt", "SystemExit", "GeneratorExit"}


def _except_on_data(facts: FileFacts, exit_: ast.stmt, loop: ast.AST) -> tuple[ast.Try, str, set[str]] | None:
    """(the ``try``, what raised, the names its body reads) when ``exit_`` is a statement of an ``except`` handler
    (not under an ``if`` in it, no ``raise`` in it) whose ``try`` body reads this rank's data (a data noun:
    ``loss = compute_loss(model, batch)``; a loop target alone is not enough), and the handler catches something a
    batch can raise (not ``StopIteration``: the end of the loader); else None."""
    for anc in facts.ancestors(exit_):
        if anc is loop or isinstance(anc, ast.If):
            return None
        if isinstance(anc, ast.ExceptHandler):
            handler = anc
            break
    else:
        return None
    caught = (
        {last_name(t) or "" for t in (handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type])}
        if handler.type
        else set()
    )
    if caught & _NOT_DATA_ERRORS:
        return None
    try_ = facts.parents.get(id(handler))
    if not isinstance(try_, ast.Try) or any(isinstance(n, ast.Raise) for st in handler.body for n in ast.walk(st)):
        return None
    loads = [
        n for st in try_.body for n in ast.walk(st) if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load)
    ]
    read = {d for n in loads if (d := dotted(n)) is not None}
    data = sorted({d for n in loads if (d := dotted(n)) is not None and _data_name(n) is not None})
    if not data:
        return None
    what = f"`{'` / `'.join(sorted(caught))}`" if caught else "an exception"
    return try_, f"{what} raised on this rank's `{data[0]}`", read


def _exit_region(facts: FileFacts, exit_: ast.stmt) -> ast.stmt | None:
    """What ``exit_`` leaves: the innermost loop around a ``continue`` / ``break``; for a ``return``, the function
    that holds it (a step function returning early skips its own backward, as ``continue`` does in a loop)."""
    if not isinstance(exit_, ast.Return):
        return divergence.inner_loop(facts, exit_)
    scope = facts.scope_of(exit_)
    return scope if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _skipped_calls(facts: FileFacts, exit_: ast.stmt, branch: ast.stmt, region: ast.stmt) -> list[ast.Call]:
    """The calls of ``exit_``'s function that the rank leaving skips: the rest of the iteration (``continue``), the
    loop's next iterations too (``break``), the rest of the function and of the loops around it there (``return``)."""
    calls, positions = divergence.scope_calls(facts, facts.scope_of(exit_))
    cut, stop = bisect.bisect_left(positions, end(branch)), bisect.bisect_left(positions, end(region))
    skipped = calls[cut:stop]
    if isinstance(exit_, ast.Break):
        skipped += calls[bisect.bisect_left(positions, start(region)) : cut]
    elif isinstance(exit_, ast.Return):
        loops = [a for a in facts.ancestors(exit_) if isinstance(a, (ast.For, ast.AsyncFor, ast.While))]
        outer = next((a for a in reversed(loops) if facts.scope_of(a) is region), None)
        skipped += calls[bisect.bisect_left(positions, start(outer)) : cut] if outer is not None else []
    return skipped


def _decision_on_data(facts: FileFacts, exit_: ast.stmt, region: ast.AST) -> tuple[ast.If | ast.Try, str, bool] | None:
    """(the ``if`` / ``try`` deciding ``exit_``, what it looks at, whether it is an ``except``) when the decision is
    on this rank's data and no collective agreed on it first (see the module docstring), else None."""
    decided = _except_on_data(facts, exit_, region)
    if decided is not None:
        return decided[0], decided[1], True
    branch = _exit_if(facts, exit_, region)
    if branch is None or facts.is_rank_test(branch.test):
        return None
    targets = _loop_targets(region) if isinstance(region, (ast.For, ast.AsyncFor, ast.While)) else set()
    seen = _data_test(branch.test, targets)
    if seen is None:
        return None
    what, names = seen
    if any("norm" in n.rsplit(".", 1)[-1].lower() for n in names):
        return None  # a gradient norm (clip_grad_norm_): computed from all-reduced gradients, the same on every rank
    if _agreed_before(facts, facts.scope_of(exit_), names, start(branch)):
        return None
    return branch, what, False


@finder("FSD057")
def data_dependent_skip(facts: FileFacts) -> Found:
    """FSD057: a ``continue`` / ``break`` / ``return`` decided on this rank's data that skips synchronised work the
    other ranks run (see the module docstring)."""
    if facts.uses(JOIN):
        return
    branches = facts.rank_branches()
    reach = divergence.reach_of(facts)
    for exit_ in divergence.nodes_of_type(facts, ast.Continue, ast.Break, ast.Return):
        assert isinstance(exit_, (ast.Continue, ast.Break, ast.Return))
        region = _exit_region(facts, exit_)
        if region is None or branches.get(id(exit_)):
            continue  # a rank condition around it: FSD037's
        decided = _decision_on_data(facts, exit_, region)
        if decided is None:
            continue
        branch, what, in_except = decided
        inside = [branch] if isinstance(branch, ast.Try) else [*branch.body, *branch.orelse]
        hit = None
        for call in _skipped_calls(facts, exit_, branch, region)[:_SCAN]:
            if any(divergence.stmt_holds([st], call) for st in inside) or branches.get(id(call)):
                continue
            hit = reach.call(call)
            if hit is not None:
                break
        if hit is None or hit[0].startswith(".backward()") and not _wrapped_forward_in(facts, region, facts.scope_of(exit_)):
            continue  # a bare backward of a module the file cannot tell is wrapped (a parameter `model`)
        if in_except and "backward()" not in hit[0]:
            continue  # an `except` skips this step's backward; other work after a failed try is the file's own design
        word = {ast.Continue: "continue", ast.Break: "break"}.get(type(exit_), "return")
        label, line = hit
        yield exit_, f"`{word}` decided on {what} (line {branch.lineno}) skips {label} at line {line} on this rank only"


# --- FSD056: synchronised work gated on a per-rank filesystem fact -------------------------------------------

_FS_FUNCS = {"os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.lexists"}
_FS_METHODS = {"exists", "is_file", "is_dir"}
_NODE_LOCAL = ("/tmp", "/dev/shm", "/local", "/scratch/local", "/var/tmp")
_WRITERS = {"save", "save_pretrained", "save_model", "write_text", "write_bytes", "to_json_file", "save_file"}
_BARRIERS = {"barrier", "monitored_barrier", "wait_for_everyone"}


def _fs_probe(facts: FileFacts, test: ast.expr) -> ast.expr | None:
    """The path a filesystem test looks at (``os.path.exists(p)``, ``Path(p).is_file()``, ``not ...``), else None."""
    for n in ast.walk(test):
        if not isinstance(n, ast.Call):
            continue
        if facts.qual(n) in _FS_FUNCS and n.args:
            return n.args[0]
        if isinstance(n.func, ast.Attribute) and n.func.attr in _FS_METHODS and not n.args:
            recv = n.func.value
            if isinstance(recv, ast.Call) and last_name(recv) == "Path" and recv.args:
                return recv.args[0]
            return recv
    return None


def _per_rank_path(facts: FileFacts, path: ast.expr) -> str | None:
    """Why the answer about ``path`` can differ between ranks, when the code tells: a node-local directory
    (``/tmp``, ``/dev/shm``, ``tempfile``), or a name built from the rank (``f"ckpt_{rank}.pt"``); else None."""
    node = facts.resolve(path)
    for n in ast.walk(node) if node is not None else []:
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith(_NODE_LOCAL):
            return f"`{n.value}` is node-local"
        if isinstance(n, ast.Call) and (facts.qual(n) or "").startswith("tempfile."):
            return "a tempfile path is node-local"
        if isinstance(n, ast.FormattedValue) and facts.is_rank_expr(n.value):
            return "the path names this rank"
    for s in facts.strings(path):
        if s.startswith(_NODE_LOCAL):
            return f"`{s}` is node-local"
    return None


def _written_on_one_rank_before(facts: FileFacts, branch: ast.If, path: ast.expr) -> int | None:
    """The line of a write of ``path`` (the same expression) under a rank condition earlier in the function of
    ``branch``, with no barrier between it and ``branch``; else None."""
    scope = facts.scope_of(branch)
    text = rc.node_text(path)
    rank_branches = facts.rank_branches()
    calls, _ = divergence.scope_calls(facts, scope)
    write: ast.Call | None = None
    for c in calls:
        if start(c) >= start(branch):
            break
        if last_name(c) in _BARRIERS:
            write = None
        elif last_name(c) in _WRITERS and rank_branches.get(id(c)):
            if any(rc.node_text(a) == text for a in [*c.args, *(k.value for k in c.keywords)]):
                write = c
    return write.lineno if write is not None else None


def _read_on_one_rank_inside(facts: FileFacts, branch: ast.If, path: ast.expr) -> int | None:
    """The line of a read of ``path`` (the same expression: ``torch.load(p)``, ``open(p)``) inside an arm of
    ``branch`` under a rank condition of its own (``if rank == 0: obj[0] = torch.load(p)``, then a broadcast): the
    file is one rank's, so that rank's answer is the one that counts, and on a node-local disk or behind a network
    filesystem's attribute cache the others can answer differently; else None."""
    text = rc.node_text(path)
    rank_branches = facts.rank_branches()
    for call in divergence.calls_in(facts, [*branch.body, *branch.orelse], facts.scope_of(branch)):
        read = paths.read_path(facts, call)
        if read is None or rc.node_text(read) != text:
            continue
        inner = [b for b in rank_branches.get(id(call), []) if divergence.stmt_holds([*branch.body, *branch.orelse], b)]
        if inner:
            return call.lineno
    return None


@finder("FSD056")
def collective_on_filesystem_fact(facts: FileFacts) -> Found:
    """FSD056: an ``if`` on a filesystem fact (``os.path.exists(p)``) that the ranks can answer differently, with
    synchronised work in one arm only."""
    reach = divergence.reach_of(facts)
    for node in divergence.nodes_of_type(facts, ast.If):
        assert isinstance(node, ast.If)
        path = _fs_probe(facts, node.test)
        if path is None or facts.is_rank_test(node.test):
            continue
        arms = [
            next((h for c in divergence.calls_in(facts, arm, facts.scope_of(node)) if (h := reach.call(c)) is not None), None)
            for arm in (node.body, node.orelse)
        ]
        if (arms[0] is None) == (arms[1] is None):
            continue  # no synchronised work, or some in both arms
        why = _per_rank_path(facts, path)
        if why is None:
            line = _written_on_one_rank_before(facts, node, path)
            why = f"it was written under a rank condition at line {line} with no barrier since" if line else None
        if why is None:
            line = _read_on_one_rank_inside(facts, node, path)
            why = f"only one rank reads it (line {line}), yet every rank tests it on its own filesystem" if line else None
        if why is None:
            continue
        label, at = next(a for a in arms if a is not None)
        yield node, f"`{dotted(path) or 'the path'}` may exist on some ranks only ({why}); only those reach {label} at line {at}"


# --- FSD055: rank 0 writes a file the others read, with no barrier between ----------------------------------


def _synchronises(facts: FileFacts, call: ast.Call, reach: divergence.Reach) -> bool:
    """Does ``call`` make every rank wait for the others (a barrier, any collective, a function that runs one, a
    function of the file that calls a method named like a barrier on whatever it is given: ``def sync(acc):
    acc.wait_for_everyone()``)?"""
    q = facts.qual(call) or ""
    return (
        last_name(call) in _BARRIERS
        or q.startswith("torch.distributed.")
        and q.rsplit(".", 1)[-1] in rc.COLLECTIVES  # on a subgroup too (gpt-neox)
        or reach.call(call) is not None
        or framework_collective(facts, call) is not None
        or _framework_reach(facts).call(call) is not None
        or _barrier_reach(facts).call(call) is not None
    )


def _barrier_reach(facts: FileFacts) -> divergence.Reach:
    key = ("flow", "barrier-reach")
    if key not in facts.cache:
        facts.cache[key] = divergence.Reach(facts, lambda c: "barrier" if last_name(c) in _BARRIERS else None)
    found: divergence.Reach = facts.cache[key]
    return found


@finder("FSD055")
def read_after_one_rank_write(facts: FileFacts) -> Found:
    """FSD055: a file written under a rank condition, then read on every rank with no barrier between (see the
    module docstring)."""
    branches = facts.rank_branches()
    for write in facts.calls():
        enclosing = branches.get(id(write))
        if not enclosing:
            continue
        branch = enclosing[-1]
        if not isinstance(branch, ast.If) or not _inside_arm(branch, write):
            continue
        access = paths.writes(facts, write)
        folder = paths.made_dir(facts, write) if access is None else None
        if access is None and folder is None:
            continue
        hit = _unsynchronised_use(facts, enclosing[0], write, access, folder)
        if hit is not None:
            shown = access or paths.Access(folder or write.func, exact=False, line=write.lineno)
            yield hit[0], _handoff_message(write, branch, shown, hit[1])
    yield from _helper_guarded_writes(facts, branches)


def _helper_guarded_writes(facts: FileFacts, branches: dict[int, list[ast.stmt]]) -> Found:
    """FSD055 through a helper whose own body writes under a rank condition (``save_state(d, model)`` with ``if
    dist.get_rank() == 0: torch.save(...)`` inside), called on every rank, then the file read on every rank."""
    for call in facts.calls():
        if branches.get(id(call)):
            continue
        access = paths.guarded_writes(facts, call)
        if access is None:
            continue
        stmt = next((a for a in facts.ancestors(call) if isinstance(a, ast.stmt)), None)
        if stmt is None:
            continue
        hit = _unsynchronised_use(facts, stmt, call, access, None)
        if hit is not None:
            name = dotted(access.path) or ast.unparse(access.path)
            yield (
                hit[0],
                f"`{name}` is written on some ranks only by {access.helper}() (its rank condition around line "
                f"{access.line}, called at line {call.lineno}) and {hit[1]} with no barrier between",
            )


def _unsynchronised_use(
    facts: FileFacts, outer: ast.stmt, write: ast.Call, access: paths.Access | None, folder: ast.expr | None
) -> tuple[ast.Call, str] | None:
    """The first call after ``outer`` (the rank condition around ``write``) in the same function, on every rank and
    before anything synchronises the ranks, that reads the file ``access`` names (or, for a directory ``folder``
    made on one rank, writes below it): (that call, what it does)."""
    reach = divergence.reach_of(facts)
    branches = facts.rank_branches()
    calls, positions = divergence.scope_calls(facts, facts.scope_of(write))
    for call in calls[bisect.bisect_left(positions, end(outer)) :][:_SCAN]:
        if _synchronises(facts, call, reach):
            return None
        if branches.get(id(call)) or _exclusive(facts, write, call):
            continue
        if access is not None:
            read = paths.reads(facts, call)
            if read is not None and paths.same_file(facts, access, read):
                return call, _via("read here", read)
        elif folder is not None:
            if paths.made_dir(facts, call) is not None and paths.same_file(
                facts, paths.Access(folder, exact=False), paths.Access(paths.made_dir(facts, call) or folder, exact=False)
            ):
                return None  # every rank makes the directory itself
            inner = paths.writes(facts, call)
            if inner is not None and paths.same_file(facts, paths.Access(folder, exact=False), inner):
                return call, _via("written below it here", inner)
    return None


def _exclusive(facts: FileFacts, a: ast.AST, b: ast.AST) -> bool:
    """Are ``a`` and ``b`` on the two sides of one ``if`` (one in its body, the other in its ``else``), so that no run
    reaches both? (axolotl: the folder made under ``if self.quantized:``, ``save_pretrained`` in its ``else``.)"""
    inside_b = {id(x) for x in facts.ancestors(b)}
    for anc in facts.ancestors(a):
        if isinstance(anc, ast.If) and id(anc) in inside_b:
            side_a, side_b = facts.block_of(a, anc), facts.block_of(b, anc)
            return side_a is not None and side_b is not None and side_a != side_b
    return False


def _via(what: str, access: paths.Access) -> str:
    return f"{what} (by {access.helper}(), line {access.line})" if access.helper else what


def _handoff_message(write: ast.Call, branch: ast.If, access: paths.Access, use: str) -> str:
    name = dotted(access.path) or "the file"
    if access.helper:
        made = f"written on some ranks only by {access.helper}() (line {access.line}, called at line {write.lineno}"
    elif last_name(write) in ("makedirs", "mkdir"):
        made = f"created on some ranks only (line {write.lineno}"
    else:
        made = f"written on some ranks only (line {write.lineno}"
    return f"`{name}` is {made}, rank condition at line {branch.lineno}) and {use} with no barrier between"


# --- FSD058: early stopping on a metric this rank computed alone --------------------------------------------

_EVAL_WORDS = ("eval", "valid", "val_", "test", "metric", "score")
_REDUCING = {"all_reduce", "all_gather", "all_gather_object", "broadcast", "broadcast_object_list", "reduce", "gather"}


def _reduces(facts: FileFacts, fn: ast.AST) -> bool:
    """Does function ``fn`` (of this file) reach a collective that combines values: torch's, a framework's, or through
    another function (:func:`~fsdp_skill.core.check.rank_conditional._summaries`, the framework reach)? A forward or a
    backward alone does not combine a metric. Memoised per function."""
    memo: dict[int, bool] = facts.cache.setdefault(("flow", "reduces"), {})
    if id(fn) not in memo:
        memo[id(fn)] = _scan_reduces(facts, fn)
    return memo[id(fn)]


def _scan_reduces(facts: FileFacts, fn: ast.AST) -> bool:
    for node in facts.scope_nodes(fn):
        if not isinstance(node, ast.Call):
            continue
        q = facts.qual(node) or ""
        if q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in _REDUCING or framework_collective(facts, node):
            return True
        target = divergence.reach_of(facts).callee(node)
        if target is not None and (
            _framework_reach(facts).call(node) is not None
            or rc.collective_reached(facts, node, divergence.rc_summaries(facts)) is not None
        ):
            return True
    return False


# wall clocks: each rank reads its own, and the ranks reach the same line at different instants
_CLOCKS = {
    "time.time",
    "time.time_ns",
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "timeit.default_timer",
    "datetime.datetime.now",
}


def _clock_in(facts: FileFacts, test: ast.expr) -> str | None:
    """The clock ``test`` reads itself (``if time.time() - start > budget:``), else None."""
    return next((q for n in ast.walk(test) if isinstance(n, ast.Call) and (q := facts.qual(n)) in _CLOCKS), None)


def _local_metrics(facts: FileFacts, loop: ast.AST) -> dict[str, str]:
    """Name -> what it is, for the names the body of ``loop`` binds to a metric this rank computes alone: the result
    of a function of this file named like an evaluation (``evaluate``, ``validate``, ``compute_metric``) that reaches
    no collective combining values; then, in source order, the names bound from them (``best = val_loss``) or under
    an ``if`` that tests them (``bad_epochs += 1``). A name handed to a collective in the loop is dropped."""
    reach = divergence.reach_of(facts)
    branches = facts.rank_branches()
    out: dict[str, str] = {}
    stmts = [
        n
        for n in ast.walk(loop)
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and not branches.get(id(n))  # rank 0's: FSD038's
    ]
    stmts.sort(key=start)
    handed = _handed_to_collectives(facts, loop)
    since: dict[str, Pos] = {}  # where each local name got its local value

    def local(name: str, here: Pos) -> bool:  # still this rank's own value here: no collective took it in between
        return name in out and not any(since[name] <= at < here for at in handed.get(name, ()))

    for st in stmts:
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        names = [k for t in targets for k in _bound_keys(t)]
        value = st.value
        if value is None or not names:
            continue
        source: str | None = None
        for call in (n for n in ast.walk(value) if isinstance(n, ast.Call)):
            if facts.qual(call) in _CLOCKS:
                source = f"read from this rank's own clock (`{facts.qual(call)}()`)"
                break
            fn = reach.callee(call)
            fname = getattr(fn, "name", "") or ""
            if fn is not None and any(w in fname.lower() for w in _EVAL_WORDS) and not _reduces(facts, fn):
                source = f"returned by `{fname}()` (line {fn.lineno}), which reduces nothing across the ranks"
                break
        if source is None:
            here = start(st)
            used = [k for k in _read_keys(value) if local(k, here)]
            guard = next(
                (a for a in facts.ancestors(st) if isinstance(a, ast.If) and any(local(k, here) for k in _read_keys(a.test))),
                None,
            )
            if used:
                source = f"derived from `{used[0]}`, " + out[used[0]].split(", derived from ")[-1].split(", counted on ")[-1]
            elif guard is not None:
                first = next(k for k in _read_keys(guard.test) if local(k, here))
                source = f"counted on `{first}`, " + out[first].split(", derived from ")[-1].split(", counted on ")[-1]
        if source is not None:
            for name in names:
                if name not in out:
                    out[name], since[name] = source, start(st)
    for name in handed:  # handed to a collective in the loop: every rank's value (open_clip's all-reduced stats)
        out.pop(name, None)
    return out


def _bound_keys(target: ast.AST) -> list[str]:
    """What an assignment to ``target`` makes this rank's own: a name (``best``), each name it unpacks to, an
    attribute path (``state.elapsed``: that attribute, not the whole ``state``), or the container a subscript
    writes into (``metrics["loss"] = ...``: ``metrics``)."""
    todo, out = [target], []
    while todo:
        t = todo.pop()
        if isinstance(t, ast.Name):
            out.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            todo += reversed(t.elts)
        elif isinstance(t, ast.Starred):
            todo.append(t.value)
        elif isinstance(t, ast.Attribute):
            if (d := dotted(t)) is not None:
                out.append(d)
        elif isinstance(t, ast.Subscript):
            if (d := dotted(t.value)) is not None:
                out.append(d)
    return out


def _read_keys(expr: ast.AST) -> list[str]:
    """The names and attribute paths (``state.elapsed``, and ``state`` itself) that ``expr`` reads, in walk order."""
    return [d for n in ast.walk(expr) if isinstance(n, (ast.Name, ast.Attribute)) and (d := dotted(n)) is not None]


def _handed_to_collectives(facts: FileFacts, loop: ast.AST) -> dict[str, list[Pos]]:
    """Name -> where the body of ``loop`` hands it to a collective (torch's or a framework's): from there on the
    ranks hold the combined value (``dist.all_reduce(stats)``, then ``acc = stats[0] / stats[1]``)."""
    handed: dict[str, list[Pos]] = {}
    for call in (n for n in ast.walk(loop) if isinstance(n, ast.Call)):
        q = facts.qual(call) or ""
        if q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in rc.COLLECTIVES or framework_collective(facts, call):
            for a in [*call.args, *(k.value for k in call.keywords)]:
                for key in _read_keys(a):
                    handed.setdefault(key, []).append(start(call))
    return handed


@finder("FSD058")
def early_stop_on_local_metric(facts: FileFacts) -> Found:
    """FSD058: a ``break`` out of a training loop decided on a metric this rank computed alone (see
    :func:`_local_metrics`), while the loop runs synchronised work."""
    branches = facts.rank_branches()
    reach = divergence.reach_of(facts)
    memo: dict[int, dict[str, str]] = {}
    for exit_ in divergence.nodes_of_type(facts, ast.Break):
        assert isinstance(exit_, ast.Break)
        loop = divergence.inner_loop(facts, exit_)
        if loop is None or branches.get(id(exit_)):
            continue  # a rank condition around it: FSD037's / FSD038's
        branch = _exit_if(facts, exit_, loop)
        if branch is None or facts.is_rank_test(branch.test):
            continue
        if id(loop) not in memo:
            memo[id(loop)] = _local_metrics(facts, loop)
        metrics = memo[id(loop)]
        name = next((k for k in _read_keys(branch.test) if k in metrics), None)
        clock = _clock_in(facts, branch.test) if name is None else None
        if name is None and clock is None:
            continue
        scope = facts.scope_of(exit_)
        work = next(
            (
                h
                for c in divergence.calls_in(facts, loop.body, scope)
                if not branches.get(id(c)) and (h := reach.call(c)) is not None
            ),
            None,
        )
        if work is None:
            continue
        label, line = work
        what = f"`{name}`, {metrics[name]}" if name is not None else f"this rank's own clock (`{clock}()`)"
        yield (
            exit_,
            f"`break` decided on {what}; the ranks can leave at different iterations while the others go on to {label} at line {line}",
        )


# --- FSD059: a loader with a DistributedSampler returned by a helper, iterated over epochs without set_epoch -----


def _returns_sampled_loader(facts: FileFacts, fn: ast.AST) -> tuple[int, int | None] | None:
    """(line, position) of the ``DataLoader(..., sampler=DistributedSampler(...))`` that function ``fn`` returns
    (directly or through a name it binds; position: its index in a returned tuple, ``return loader, sampler``, else
    None), or None."""
    for node in facts.scope_nodes(fn):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        returned = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        for position, item in enumerate(returned):
            value = facts.resolve(item) if isinstance(item, ast.Name) else item
            if (
                isinstance(value, ast.Call)
                and (facts.qual(value) or "").endswith("DataLoader")
                and callgraph.is_shuffling_sampler(facts, kwarg(value, "sampler"))
            ):
                return value.lineno, position if isinstance(node.value, ast.Tuple) else None
    return None


@finder("FSD059")
def helper_loader_without_set_epoch(facts: FileFacts) -> Found:
    """FSD059: a ``DataLoader`` with a shuffling ``DistributedSampler``, built and returned by a function of the file
    (``loader = build_loader(ds)``), iterated in an epoch loop, and no ``set_epoch`` anywhere in the file (neither
    ``sampler.set_epoch`` nor ``loader.sampler.set_epoch``). FSD035 reports the sampler built where it is iterated,
    or returned by a helper itself."""
    if any(last_name(c) == "set_epoch" for c in facts.calls()):
        return
    for call in facts.calls():
        target = callgraph.callee(facts, call)
        if target is None or target.fn is None:
            continue
        found = _returns_sampled_loader(facts, target.fn)
        if found is None:
            continue
        line, position = found
        if finders.epoch_loop_over(facts, call, position):
            name = getattr(target.fn, "name", "the helper")
            yield call, f"the loader `{name}()` returns (built at line {line}) shuffles with a DistributedSampler"


# --- FSD060: the no_sync() accumulation and the optimizer step decided on different micro-batches ------------

# a modular test on the loop counter: (counter, offset, dump of the modulus, True when the test says "== 0")
Modular = tuple[str, int, str, bool]


def _modular(facts: FileFacts, test: ast.expr) -> Modular | None:
    """``(step + c) % k == 0`` / ``!= 0`` (``not`` of one flips it) as (``step``, c, dump of k, is ``==``). The test may
    be a name bound to one (``sync = (i + 1) % k == 0; if sync:``), and the counter a name bound to another counter
    plus a constant (``step = i + 1``): both are followed to what they were assigned."""
    flip = False
    for _ in range(4):
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, flip = test.operand, not flip
        value = facts.resolve(test) if isinstance(test, ast.Name) else None
        if value is None or value is test or not isinstance(value, ast.expr):
            break
        test = value
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.NotEq))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == 0
        and isinstance(test.left, ast.BinOp)
        and isinstance(test.left.op, ast.Mod)
    ):
        return None
    counter = _counter(facts, test.left.left)
    if counter is None:
        return None
    eq = isinstance(test.ops[0], ast.Eq) != flip
    return counter[0], counter[1], rc.node_text(test.left.right), eq


def _counter(facts: FileFacts, node: ast.expr) -> tuple[str, int] | None:
    """(counter name, constant added) of ``step`` / ``step + c`` / ``step - c``, a name bound to one followed a few
    steps (``step = i + 1``: ``("i", 1)``); None for anything else."""
    offset = 0
    for _ in range(4):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            const = node.right
            if not (isinstance(const, ast.Constant) and isinstance(const.value, int) and not isinstance(const.value, bool)):
                return None
            offset += const.value if isinstance(node.op, ast.Add) else -const.value
            node = node.left
            continue
        if not isinstance(node, ast.Name):
            return None
        _, b = facts.binding(node)
        value = b.value if b is not None and b.kind == "assign" else None
        if not (isinstance(value, ast.Name) or isinstance(value, ast.BinOp) and isinstance(value.left, ast.Name)):
            return node.id, offset
        node = value
    return None


def _no_sync_in(facts: FileFacts, stmts: list[ast.stmt]) -> bool:
    """Do ``stmts`` run a backward inside ``with ... no_sync():``?"""
    return any(_holds_no_sync_backward(facts, st) for st in stmts)


def _holds_no_sync_backward(facts: FileFacts, stmt: ast.stmt) -> bool:
    """Does ``stmt``, or a statement below it, run a backward inside ``with ... no_sync():``? Memoised per statement
    and found bottom-up (a ``with`` is a statement, only ever below another's blocks): an ``if`` / ``elif`` chain asks
    about the rest of the chain at each ``elif``, which costs that rest once, not once per ``elif``."""
    memo: dict[int, bool] = facts.cache.setdefault(("flow_rules", "no_sync_backward"), {})
    todo: list[tuple[ast.stmt, bool]] = [(stmt, False)]
    while todo:
        st, children_done = todo.pop()
        if id(st) in memo:
            continue
        inner = _inner_statements(st)
        if not children_done:
            todo.append((st, True))
            todo += [(child, False) for child in inner if id(child) not in memo]
            continue
        facts.tick()
        memo[id(st)] = _no_sync_backward_here(facts, st) or any(memo[id(child)] for child in inner)
    return memo[id(stmt)]


def _inner_statements(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements of ``stmt``'s blocks: body, ``else``, ``finally``, each handler's and each ``case``'s body."""
    out: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list):
            out += block
    for holder in [*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]:
        out += holder.body
    return out


def _no_sync_backward_here(facts: FileFacts, stmt: ast.stmt) -> bool:
    """Is ``stmt`` itself a ``with ... no_sync():`` whose body runs a backward?"""
    return (
        isinstance(stmt, (ast.With, ast.AsyncWith))
        and any(divergence.no_sync_target(facts, i) is not None for i in stmt.items)
        and any(isinstance(c, ast.Call) and divergence.is_backward(c) for b in stmt.body for c in ast.walk(b))
    )


def _sync_condition(facts: FileFacts, node: ast.AST) -> tuple[Modular, ast.AST] | None:
    """The micro-batches that synchronise, as a modular test that holds on them ("== 0" form), from an ``if`` whose
    one arm accumulates inside ``no_sync()`` and whose other arm runs the backward outside it (or which accumulates
    and ends in ``continue``, leaving the synchronising backward to the rest of the loop), or from
    ``with model.no_sync() if c else nullcontext():``."""
    test: ast.expr | None = None
    no_sync_when_true = True
    if isinstance(node, ast.If) and node.orelse:
        in_body, in_else = _no_sync_in(facts, node.body), _no_sync_in(facts, node.orelse)
        if in_body == in_else:
            return None
        test, no_sync_when_true = node.test, in_body
    elif isinstance(node, ast.If) and isinstance(node.body[-1], ast.Continue) and _no_sync_in(facts, node.body):
        test = node.test  # accumulate inside no_sync() and `continue`: the rest of the loop body synchronises
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            conditional = divergence.conditional_no_sync(facts, item)  # also through `ctx = ...; with ctx():`
            if conditional is not None:
                test, no_sync_when_true, _ = conditional
    if test is None:
        return None
    mod = _modular(facts, test)
    if mod is None:
        return None
    counter, offset, k, eq = mod
    syncs_on_eq = eq != no_sync_when_true  # the test holds on the syncing micro-batches when it is "== 0" there
    if not syncs_on_eq:
        return None  # "sync when (step + c) % k != 0": not the shape of an accumulation
    return (counter, offset, k, True), node


@finder("FSD060")
def no_sync_and_step_disagree(facts: FileFacts) -> Found:
    """FSD060: in one loop, the micro-batch that runs outside ``no_sync()`` (and so all-reduces the accumulated
    gradients) and the one that steps the optimizer are chosen by modular tests on the same counter and modulus with
    different offsets (``if step % accum != 0: with model.no_sync(): ...`` beside ``if (step + 1) % accum == 0:
    optimizer.step()``): the step runs on gradients whose last micro-batches were never all-reduced."""
    for node in divergence.nodes_of_type(facts, ast.If, ast.With, ast.AsyncWith):
        found = _sync_condition(facts, node)
        if found is None:
            continue
        (counter, offset, k, _), _ = found
        loop = divergence.inner_loop(facts, node)
        if loop is None:
            continue
        for other in (n for n in ast.walk(loop) if isinstance(n, ast.If) and n is not node):
            mod = _modular(facts, other.test)
            if mod is None or not mod[3] or mod[0] != counter or mod[2] != k or mod[1] == offset:
                continue
            step = next(
                (c for st in other.body for c in ast.walk(st) if isinstance(c, ast.Call) and divergence.is_step(facts, c)),
                None,
            )
            if step is None:
                continue
            yield (
                step,
                f"the optimizer steps when `({counter} + {mod[1]}) % ...` is 0 (line {other.lineno}) but the gradients are "
                f"all-reduced, outside no_sync(), when `({counter} + {offset}) % ...` is 0 (line {getattr(node, 'lineno', 0)})",
            )
            break
