"""``check --fix`` / ``--diff``: the mechanical fixes, planned on the :mod:`ast` facts and applied with LibCST.

A fix is attached to a finding (:attr:`Finding.fix <fsdp_skill.core.check.models.Finding.fix>` says what it would
change) and applied only on request.  Planning (:func:`plan_fixes`, :func:`with_fixes`) needs only :mod:`ast`;
LibCST is imported by :func:`fix_source` alone (through :mod:`.fix_cst`; the plan itself is
:class:`~fsdp_skill.core.check.fix_plan.FixPlan`; files are read and written by :mod:`.fix_files`), so ``check`` without ``--fix`` / ``--diff`` never loads it.
LibCST keeps the concrete syntax: every byte outside an edit, comments and formatting included, is kept, and a file
with nothing to fix comes back byte-identical (it is not even re-rendered).

What is fixed, and only where the edit cannot change a correct program (anything else is left as "not fixable",
with the reason):

- FSD011: ``GradScaler(...)`` -> ``ShardedGradScaler(...)`` in an FSDP1 file (not FSDP2), the import added after
  the last top-level import; ``torch.cuda.amp.GradScaler`` only without positional arguments (its first one is
  ``init_scale``, ShardedGradScaler's is ``device``).
- FSD012: ``torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm[, norm_type])`` -> the FSDP1 method
  ``model.clip_grad_norm_(max_norm[, norm_type])``, which returns the same total norm; not with
  ``error_if_nonfinite`` / ``foreach`` (the method has neither).
- FSD014: ``<dist>.destroy_process_group()`` appended to the function that forms the group (or the
  ``__main__`` block), when that function is the script's main flow (called, or given to ``spawn``, as the last
  statement of the ``__main__`` block), forms the group at its top level and has no ``return`` / ``exit``.
- FSD027: ``use_reentrant=False`` added to ``torch.utils.checkpoint.checkpoint(...)``.
- FSD035: ``sampler.set_epoch(epoch)`` inserted first in the epoch loop (a ``for`` with a plain target around the
  loop over the loader, in the sampler's function, the sampler bound once).
- FSD043: ``map_location="cpu"`` added to ``torch.load(...)`` when what it loads only goes into
  ``load_state_dict`` / ``set_*_state_dict`` (also through ``ckpt["model"]``, ``ckpt.get(...)`` or a name bound to
  them), ``in`` tests, ``len`` or scalar reads (``int(ckpt["step"])``, ``.item()``).  Why ``"cpu"``: it exists on
  every host and every rank, and ``load_state_dict`` copies each tensor into the parameter or buffer where it
  already lives (``Optimizer.load_state_dict`` moves the state to its parameter's device), so the model ends the
  same while nothing lands on GPU 0.  A tensor used directly would stay on the CPU: that load is left to the
  author (the rank's device, named as the file names it).  Not in an FSDP2 file (DTensor shards).
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from fsdp_skill.core.check.calls import build_facts
from fsdp_skill.core.check.facts import FSDP1, FULLY_SHARD, FileFacts, dotted, kwarg, last_name
from fsdp_skill.core.check.fix_plan import FixPlan
from fsdp_skill.core.parsing import parse_module

if TYPE_CHECKING:
    from fsdp_skill.core.check.models import Finding

FIXABLE = frozenset({"FSD011", "FSD012", "FSD014", "FSD027", "FSD035", "FSD043"})  # codes with a planner
_SHARDED = "ShardedGradScaler"
_SHARDED_IMPORT = "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler"
_SD_LOADERS = {"load_state_dict", "set_model_state_dict", "set_optimizer_state_dict", "set_state_dict"}
_SCALAR_READS = {"int", "float", "bool", "str", "len"}


@dataclass(slots=True)
class FixResult:
    """The outcome of :func:`fix_source` for one text."""

    source: str  # the fixed text (the input itself, unchanged, when nothing was fixed)
    fixed: list[Finding] = field(default_factory=list)  # the findings whose fix was applied
    unfixed: list[tuple[Finding, str]] = field(default_factory=list)  # fixable-code findings left, with the reason

    @property
    def changed(self) -> bool:
        """Was any edit applied?"""
        return bool(self.fixed)


def _char_col(lines: Sequence[str], line: int, byte_col: int) -> int:
    """The character column of ``ast``'s UTF-8 byte offset ``byte_col`` on 1-based ``line``."""
    if not 0 < line <= len(lines):
        return byte_col
    return len(lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace"))


class _Planner:
    """Plans the fix of one finding on the facts of its file; each method returns a plan or the reason there is none."""

    def __init__(self, facts: FileFacts, source: str) -> None:
        self.facts = facts
        self.lines = source.splitlines()

    def at(self, node: ast.expr) -> tuple[int, int]:
        return node.lineno, _char_col(self.lines, node.lineno, node.col_offset)

    def call_at(self, line: int, col: int) -> ast.Call | None:
        for c in self.facts.calls():
            if c.lineno == line and c.col_offset + 1 == col:
                return c
        return None

    def plan(self, f: Finding) -> FixPlan | str:
        call = self.call_at(f.line, f.col)
        if call is None:
            return "the finding is not on a call"
        method = {
            "FSD011": self.scaler,
            "FSD012": self.clip,
            "FSD014": self.destroy,
            "FSD027": self.reentrant,
            "FSD035": self.set_epoch,
            "FSD043": self.map_location,
        }[f.code]
        return method(call)

    # FSD011 ------------------------------------------------------------------------------------------------------
    def scaler(self, call: ast.Call) -> FixPlan | str:
        facts = self.facts
        if facts.uses(FULLY_SHARD) or not facts.uses(FSDP1):
            return "ShardedGradScaler is the fix for FSDP1 only; this file does not shard with FSDP1 alone"
        spelled = facts.aliases.get((dotted(call.func) or "").split(".")[0], "") + "." + (dotted(call.func) or "")
        if "cuda" in spelled and call.args:
            return "torch.cuda.amp.GradScaler's positional arguments start at init_scale, ShardedGradScaler's at device"
        bound = facts.aliases.get(_SHARDED)
        if bound is not None and not bound.endswith(_SHARDED):
            return f"the name {_SHARDED} is taken by another import"
        if any(key[1] == _SHARDED for key in facts.bindings):
            return f"the name {_SHARDED} is assigned in this file"
        if bound is None and not any(isinstance(st, (ast.Import, ast.ImportFrom)) for st in facts.tree.body):
            return "the file has no top-level import to put ShardedGradScaler's beside"
        line, col = self.at(call)
        return FixPlan(
            "FSD011",
            "scaler",
            line,
            col,
            f"use {_SHARDED} (FSDP1's sharded gradients)",
            _SHARDED,
            "",
            "" if bound else _SHARDED_IMPORT,
        )

    # FSD012 ------------------------------------------------------------------------------------------------------
    def clip(self, call: ast.Call) -> FixPlan | str:
        if not call.args or kwarg(call, "parameters") is not None:
            return "the parameters are not the first positional argument"
        first = call.args[0]
        if not (
            isinstance(first, ast.Call)
            and isinstance(first.func, ast.Attribute)
            and first.func.attr == "parameters"
            and not first.args
            and not first.keywords
            and self.facts.is_fsdp1(first.func.value)
        ):
            return "the parameters are not written as model.parameters() of the FSDP1 module"
        if len(call.args) > 3 or any(isinstance(a, ast.Starred) for a in call.args):
            return "arguments the FSDP1 method does not take"
        if any(k.arg not in ("max_norm", "norm_type") for k in call.keywords):
            return "error_if_nonfinite / foreach (or **kwargs): the FSDP1 method takes only max_norm and norm_type"
        owner = ast.get_source_segment("\n".join(self.lines), first.func.value) or "model"
        line, col = self.at(call)
        return FixPlan("FSD012", "clip", line, col, f"call {owner}.clip_grad_norm_(...) (the norm over all shards)")

    # FSD027 ------------------------------------------------------------------------------------------------------
    def reentrant(self, call: ast.Call) -> FixPlan | str:
        if (self.facts.qual(call) or "") != "torch.utils.checkpoint.checkpoint":
            return "checkpoint_impl=CheckpointImpl.REENTRANT is written out: a choice to change by hand"
        if any(k.arg is None for k in call.keywords):
            return "**kwargs may carry use_reentrant"
        line, col = self.at(call)
        return FixPlan("FSD027", "keyword", line, col, "pass use_reentrant=False", "use_reentrant=False")

    # FSD043 ------------------------------------------------------------------------------------------------------
    def map_location(self, call: ast.Call) -> FixPlan | str:
        if self.facts.uses(FULLY_SHARD):
            return "an FSDP2 file (DTensor shards): name this rank's device by hand"
        if last_name(call) == "load_from_checkpoint":
            return "a Lightning module comes back on the saved device: pass map_location by hand if nothing uses it before fit"
        if not self._safe_value(call, 0):
            return "the loaded tensors are used directly (not only through load_state_dict): pass this rank's device by hand"
        line, col = self.at(call)
        return FixPlan(
            "FSD043",
            "keyword",
            line,
            col,
            'pass map_location="cpu" (load_state_dict copies to each parameter)',
            'map_location="cpu"',
        )

    def _safe_value(self, expr: ast.AST, depth: int) -> bool:
        """Does the value of ``expr`` only reach places where the device of its tensors does not matter?"""
        facts = self.facts
        parent = facts.parents.get(id(expr))
        if isinstance(parent, ast.Call) and expr in parent.args:
            name = last_name(parent) or ""
            return name in _SD_LOADERS or name in _SCALAR_READS and isinstance(expr, ast.Subscript)
        if isinstance(parent, ast.keyword):
            call = facts.parents.get(id(parent))
            return isinstance(call, ast.Call) and (last_name(call) or "") in _SD_LOADERS
        if isinstance(parent, ast.Subscript) and parent.value is expr:
            return depth < 4 and self._safe_value(parent, depth + 1)
        if isinstance(parent, ast.Attribute) and parent.value is expr:
            outer = facts.parents.get(id(parent))
            if parent.attr == "item":
                return True
            if parent.attr in ("get", "keys") and isinstance(outer, ast.Call) and outer.func is parent:
                return parent.attr == "keys" or depth < 4 and self._safe_value(outer, depth + 1)
            return False
        if isinstance(parent, ast.Compare) and expr in parent.comparators:
            return all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            return depth < 4 and self._safe_name(parent.targets[0].id, parent, depth + 1)
        return False

    def _safe_name(self, name: str, assign: ast.Assign, depth: int) -> bool:
        facts = self.facts
        scope = facts.scope_of(assign)
        if len(facts.bindings.get((id(scope), name), [])) != 1:
            return False  # bound again: the uses cannot be told apart
        uses = [n for n in facts.scope_nodes(scope) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
        nested = any(
            isinstance(n, ast.Name) and n.id == name
            for fn in facts.scope_nodes(scope)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for n in ast.walk(fn)
        )
        return not nested and all(self._safe_value(u, depth) for u in uses)

    # FSD035 ------------------------------------------------------------------------------------------------------
    def set_epoch(self, call: ast.Call) -> FixPlan | str:
        facts = self.facts
        assign = facts.parents.get(id(call))
        if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Name)):
            return "the sampler is not bound to a plain name"
        sampler, scope = assign.targets[0].id, facts.scope_of(assign)
        if len(facts.bindings.get((id(scope), sampler), [])) != 1:
            return f"{sampler} is bound more than once"
        loaders = {
            p.targets[0].id
            for c in facts.calls(scope)
            if (facts.qual(c) or "").endswith("DataLoader")
            and any(isinstance(n, ast.Name) and n.id == sampler for k in c.keywords for n in ast.walk(k.value))
            and isinstance(p := facts.parents.get(id(c)), ast.Assign)
            and isinstance(p.targets[0], ast.Name)
        }
        epoch_loops: dict[int, ast.For | ast.AsyncFor | ast.While] = {}
        for node in facts.scope_nodes(scope):
            if isinstance(node, (ast.For, ast.AsyncFor)) and any(
                isinstance(n, ast.Name) and n.id in loaders for n in ast.walk(node.iter)
            ):
                outer = next((a for a in facts.ancestors(node) if isinstance(a, (ast.For, ast.AsyncFor, ast.While))), None)
                if outer is not None:
                    epoch_loops[id(outer)] = outer
        if len(epoch_loops) != 1:
            return "more than one loop over the loader's epochs" if epoch_loops else "no epoch loop in the sampler's function"
        (loop,) = epoch_loops.values()
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(loop.target, ast.Name):
            return "the epoch loop has no plain loop variable to pass to set_epoch"
        if facts.scope_of(loop) is not scope or loop.lineno < assign.lineno:
            return "the epoch loop is not after the sampler in its function"
        if loop.body[0].lineno == loop.lineno:
            return "the epoch loop's body is on its own line"
        line, col = self.at(loop.target)
        stmt = f"{sampler}.set_epoch({loop.target.id})"
        return FixPlan("FSD035", "prepend", line, col, f"call {stmt} first in the epoch loop", stmt)

    # FSD014 ------------------------------------------------------------------------------------------------------
    def destroy(self, call: ast.Call) -> FixPlan | str:
        facts = self.facts
        if not isinstance(call.func, ast.Attribute):
            return "init_process_group is imported by name: add destroy_process_group by hand"
        stmt = f"{ast.unparse(call.func.value)}.destroy_process_group()"
        mains = [
            st
            for st in facts.tree.body
            if isinstance(st, ast.If)
            and isinstance(st.test, ast.Compare)
            and isinstance(st.test.left, ast.Name)
            and st.test.left.id == "__name__"
        ]
        if len(mains) != 1 or mains[0].orelse:
            return "not one plain `if __name__ == '__main__':` block"
        main = mains[0]
        holder = facts.parents.get(id(call))
        if not isinstance(holder, ast.Expr):
            return "init_process_group's result is used"
        scope = facts.scope_of(call)
        if holder in main.body:
            flow: ast.AST = main
        elif isinstance(scope, ast.FunctionDef) and holder in scope.body and scope in facts.tree.body:
            last = main.body[-1]
            named = isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            refs = [n for n in ast.walk(main) if isinstance(n, ast.Name) and n.id == scope.name]
            if not (named and len(refs) == 1 and any(n is refs[0] for n in ast.walk(last))):
                return f"{scope.name} is not the last thing the __main__ block runs"
            flow = scope
        else:
            return "init_process_group is not at the top level of the script's main function or __main__ block"
        body = flow.body if isinstance(flow, (ast.If, ast.FunctionDef)) else []
        for n in (x for st in body for x in ast.walk(st)):
            if isinstance(n, ast.Return) or isinstance(n, ast.Call) and (facts.qual(n) or "") in ("sys.exit", "exit", "os._exit"):
                return "the main flow can return or exit early"
        if isinstance(flow, ast.FunctionDef):
            line, col = flow.lineno, 0
            return FixPlan("FSD014", "append_function", line, col, f"call {stmt} at the end of {flow.name}()", stmt, flow.name)
        assert isinstance(main.test, ast.Compare)
        line, col = self.at(main.test.left)
        return FixPlan("FSD014", "append_main", line, col, f"call {stmt} at the end of the __main__ block", stmt)


def plan_fixes(tree: ast.Module, source: str, findings: Iterable[Finding]) -> dict[int, FixPlan | str]:
    """id(finding) -> its plan, or the reason it is not fixable, for the findings of a fixable code.

    Raises nothing; a finding of another code is not in the result."""
    todo = [f for f in findings if f.code in FIXABLE]
    if not todo:
        return {}
    planner = _Planner(build_facts(tree), source)  # the facts the rules saw: wrapped modules followed through calls
    out: dict[int, FixPlan | str] = {}
    for f in todo:
        try:
            out[id(f)] = planner.plan(f)
        except (ValueError, TypeError, AttributeError, RecursionError) as exc:  # a planner bug: no fix, never a crash
            out[id(f)] = f"not planned ({type(exc).__name__})"
    return out


def with_fixes(tree: ast.Module, source: str, findings: list[Finding]) -> list[Finding]:
    """``findings`` with :attr:`Finding.fix` set where a fix is planned (the others unchanged)."""
    plans = plan_fixes(tree, source, findings)
    if not plans:
        return findings
    return [replace(f, fix=p.description) if isinstance(p := plans.get(id(f)), FixPlan) else f for f in findings]


def fix_source(source: str, findings: Sequence[Finding]) -> FixResult:
    """Apply the planned fixes of ``findings`` (found in ``source``) with LibCST: the fixed text and what was and
    was not fixed.  A text with nothing to fix is returned as it is (the same object, byte for byte).

    Raises :class:`fsdp_skill.errors.MissingDependency` when libcst is not installed."""
    plans_by = plan_fixes(parse_module(source), source, findings)
    result = FixResult(source)
    plans: list[tuple[Finding, FixPlan]] = []
    for f in findings:
        p = plans_by.get(id(f))
        if isinstance(p, FixPlan):
            plans.append((f, p))
        elif p is not None:
            result.unfixed.append((f, p))
    if not plans:
        return result
    from fsdp_skill.core.check import fix_cst

    new, applied = fix_cst.apply(source, [p for _, p in plans])
    for f, p in plans:
        if id(p) in applied:
            result.fixed.append(f)
        else:
            result.unfixed.append((f, "the edit's place was not found in the concrete syntax"))
    if result.fixed:
        try:
            parse_module(new)
        except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):  # never write a broken file
            result.unfixed += [(f, "the edited text did not parse") for f in result.fixed]
            result.fixed = []
            return result
        result.source = new
    return result


def unified_diff(old: str, new: str, path: str) -> str:
    """The unified diff from ``old`` to ``new`` (``--- path`` / ``+++ path``, as ruff prints); "" when equal."""
    if old == new:
        return ""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, fromfile=path, tofile=path))
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


__all__ = ["FIXABLE", "FixPlan", "FixResult", "fix_source", "plan_fixes", "unified_diff", "with_fixes"]
