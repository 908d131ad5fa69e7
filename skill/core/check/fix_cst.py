"""The LibCST side of ``check --fix``: :func:`apply` makes the edits that :mod:`fsdp_skill.core.check.fix` planned
(:class:`~fsdp_skill.core.check.fix_plan.FixPlan`).

Imported only when fixes are applied (``--fix`` / ``--diff``), so a plain ``check`` never loads libcst.  Each edit
finds its anchor by position (LibCST's :class:`~libcst.metadata.PositionProvider`, lines 1-based, columns in
characters) and changes only that node; the rest of the tree, and so every other byte, stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from fsdp_skill.core.check.fix_plan import FixPlan
from fsdp_skill.errors import MissingDependency

try:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider
except ImportError as exc:  # pragma: no cover - libcst is a dependency; a broken install says so
    raise MissingDependency("check --fix / --diff need libcst: pip install 'libcst>=1.9'") from exc


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _append_keyword(call: cst.Call, source: str) -> cst.Call:
    """``call`` with the keyword argument ``source`` (``use_reentrant=False``) added last, in its layout."""
    parsed = cst.parse_expression(f"f({source})")
    assert isinstance(parsed, cst.Call)
    arg = parsed.args[0]
    args = list(call.args)
    if not args:
        return call.with_changes(args=[arg])
    last = args[-1]
    between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else _comma()
    if isinstance(last.comma, cst.Comma):  # a trailing comma (and the line break after it) stays last
        args[-1] = last.with_changes(comma=between)
        return call.with_changes(args=[*args, arg.with_changes(comma=last.comma)])
    # the space before ")" (a line break in a call laid over lines) moves after the new argument
    args[-1] = last.with_changes(comma=between, whitespace_after_arg=cst.SimpleWhitespace(""))
    return call.with_changes(args=[*args, arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)])


def _clip(call: cst.Call) -> cst.Call | None:
    """``clip_grad_norm_(model.parameters(), *rest)`` -> ``model.clip_grad_norm_(*rest)``."""
    first = call.args[0].value if call.args else None
    if not (isinstance(first, cst.Call) and isinstance(first.func, cst.Attribute) and first.func.attr.value == "parameters"):
        return None
    rest = list(call.args[1:])
    if rest and not isinstance(rest[-1].comma, cst.Comma):
        rest[-1] = rest[-1].with_changes(whitespace_after_arg=call.args[-1].whitespace_after_arg)
    return call.with_changes(func=cst.Attribute(value=first.func.value, attr=cst.Name("clip_grad_norm_")), args=rest)


class _Apply(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, plans: Sequence[FixPlan]) -> None:
        super().__init__()
        self.calls = {(p.line, p.col): p for p in plans if p.kind in ("keyword", "clip", "scaler")}
        self.loops = {(p.line, p.col): p for p in plans if p.kind == "prepend"}
        self.functions = {p.name: p for p in plans if p.kind == "append_function"}
        self.mains = {(p.line, p.col): p for p in plans if p.kind == "append_main"}
        self.imports = sorted({p.import_line for p in plans if p.import_line})
        self.applied: set[int] = set()
        self.depth = 0  # function nesting: only module-level functions are appended to

    def _pos(self, node: cst.CSTNode) -> tuple[int, int]:
        r = self.get_metadata(PositionProvider, node)
        return r.start.line, r.start.column

    def _done(self, plan: FixPlan) -> None:
        self.applied.add(id(plan))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        plan = self.calls.get(self._pos(original_node))
        if plan is None:
            return updated_node
        new: cst.Call | None
        if plan.kind == "keyword":
            new = _append_keyword(updated_node, plan.text)
        elif plan.kind == "clip":
            new = _clip(updated_node)
        else:
            new = updated_node.with_changes(func=cst.Name(plan.text))
        if new is None:
            return updated_node
        self._done(plan)
        return new

    def _prepend(self, body: cst.BaseSuite, text: str) -> cst.BaseSuite | None:
        if not isinstance(body, cst.IndentedBlock):
            return None
        return body.with_changes(body=[cst.parse_statement(text + "\n"), *body.body])

    def _append(self, body: cst.BaseSuite, text: str) -> cst.BaseSuite | None:
        if not isinstance(body, cst.IndentedBlock):
            return None
        return body.with_changes(body=[*body.body, cst.parse_statement(text + "\n")])

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.BaseStatement:
        plan = self.loops.get(self._pos(original_node.target))
        body = self._prepend(updated_node.body, plan.text) if plan is not None else None
        if plan is None or body is None:
            return updated_node
        self._done(plan)
        return updated_node.with_changes(body=body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.BaseStatement:
        self.depth -= 1
        plan = self.functions.get(original_node.name.value) if self.depth == 0 else None
        body = self._append(updated_node.body, plan.text) if plan is not None else None
        if plan is None or body is None:
            return updated_node
        self._done(plan)
        return updated_node.with_changes(body=body)

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.BaseStatement:
        test = original_node.test
        anchor = test.left if isinstance(test, cst.Comparison) else test
        plan = self.mains.get(self._pos(anchor))
        body = self._append(updated_node.body, plan.text) if plan is not None else None
        if plan is None or body is None:
            return updated_node
        self._done(plan)
        return updated_node.with_changes(body=body)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.imports:
            return updated_node
        body = list(updated_node.body)
        last = max(
            (
                i
                for i, st in enumerate(body)
                if isinstance(st, cst.SimpleStatementLine) and any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in st.body)
            ),
            default=None,
        )
        if last is None:  # the planner saw an import; without one the scaler edits are undone by the caller's check
            return updated_node
        new = [cst.parse_statement(line + "\n") for line in self.imports]
        return updated_node.with_changes(body=[*body[: last + 1], *new, *body[last + 1 :]])


def apply(source: str, plans: Sequence[FixPlan]) -> tuple[str, set[int]]:
    """``source`` with the edits of ``plans`` made, and the ids of the plans that were applied.

    Raises libcst's ParserSyntaxError only for a text :mod:`ast` parsed and LibCST does not (then nothing is fixed)."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    edit = _Apply(plans)
    new = wrapper.visit(edit)
    return new.code, edit.applied
