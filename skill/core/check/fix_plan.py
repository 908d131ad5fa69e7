"""One planned edit of ``check --fix`` (:class:`FixPlan`): made by :mod:`fsdp_skill.core.check.fix` on the :mod:`ast`
facts, applied by :mod:`fsdp_skill.core.check.fix_cst` with LibCST (a module of its own so neither imports the other
at load time)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["keyword", "clip", "scaler", "prepend", "append_function", "append_main"]


@dataclass(frozen=True, slots=True)
class FixPlan:
    """One planned edit. ``line`` (1-based) and ``col`` (0-based, in characters, as LibCST counts) locate its anchor:
    the call to edit (``keyword``, ``clip``, ``scaler``), the target of the ``for`` to prepend to (``prepend``); a
    function is found by ``name`` (``append_function``), the ``__main__`` block by its ``__name__`` (``append_main``)."""

    code: str
    kind: Kind
    line: int
    col: int
    description: str
    text: str = ""  # the keyword, statement or new function name the edit writes
    name: str = ""  # append_function: the function
    import_line: str = ""  # scaler: an import to add after the last top-level import ("" when already there)
