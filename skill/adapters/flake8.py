"""flake8 plugin: ``check``'s rules as flake8 ``FSD`` codes, so existing lint setups and pre-commit pick them up.

Registered in pyproject as ``[project.entry-points."flake8.extension"] FSD = "fsdp_skill.adapters.flake8:Plugin"``;
``flake8 --select FSD`` (or ``extend-select = FSD``) runs it.  flake8 parses the file and applies ``# noqa``,
``--select`` and ``--ignore`` itself; the plugin only runs :func:`fsdp_skill.core.check.check_tree` on the tree.
Neither flake8 nor torch is imported here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version


def _version() -> str:
    try:
        return version("fsdp-skill")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0"


class Plugin:
    """A flake8 AST plugin: one ``(line, col, "FSD0xx message", type)`` per finding (col 0-based, as flake8 wants)."""

    name = "fsdp-skill"
    version = _version()

    def __init__(self, tree: ast.Module, filename: str = "<string>"):
        self.tree, self.filename = tree, filename

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from fsdp_skill.core.check import check_tree

        for f in check_tree(self.tree, self.filename):
            ref = f" [{f.section}]" if f.section else ""
            yield f.line, f.col - 1, f"{f.code} {f.message}{ref}", type(self)
