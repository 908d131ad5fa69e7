"""The layers hold: every module imports; the import graph of fsdp_skill (module-level and function-level
imports alike) has no cycle; adapters never import each other; the core imports no adapter or web/MCP
library; the runtime imports nothing of the skill layer; what runs inside a rank needs only the standard
library and torch."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# installed name -> repository folder (pyproject's package-dir)
PACKAGES = {"fsdp_skill": ROOT / "skill", "fsdp_skill.runtime": ROOT / "runtime"}
# modules run inside ranks or the fork server: started by file, never imported as part of the package
RANK_SIDE = {"fsdp_skill.runtime.zygote", "fsdp_skill.runtime.worker"}
# run as files under the target interpreter (--python), and imported by the tool for its own interpreter
TARGET_SIDE = {"fsdp_skill.runtime.probe", "fsdp_skill.runtime.introspect"}
# loaded by the planner's child process, which has torch: importable only where torch is installed
NEEDS_TORCH = {"fsdp_skill.core.plan.transformer"}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([pkg, *parts])
            if pkg == "fsdp_skill" and parts and parts[0] == "runtime":
                continue
            out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every module of ours that ``name`` imports anywhere in its file (also inside functions)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import mod` depends on pkg.mod; `from mod import name` on mod
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            targets = subs + ([base] if len(subs) < len(node.names) else [])
        else:
            continue
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _external(path: Path) -> set[str]:
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            tops |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            tops.add(node.module.split(".")[0])
    return tops


@pytest.mark.parametrize("name", sorted(set(MODULES) - RANK_SIDE))
def test_every_module_imports(name):
    if name in NEEDS_TORCH:
        pytest.importorskip("torch")
    importlib.import_module(name)


def test_import_graph_has_no_cycle():
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(GRAPH):
        if node not in state:
            visit(node)


def _adapter(name: str) -> str | None:
    parts = name.split(".")
    if parts[:2] == ["fsdp_skill", "adapters"] and len(parts) > 2 and parts[2] not in ("exitcodes", "options"):
        return parts[2]
    return None


def test_no_adapter_imports_another():
    bad = [(a, b) for a, deps in GRAPH.items() for b in deps if _adapter(a) and _adapter(b) and _adapter(a) != _adapter(b)]
    assert bad == []


def test_core_imports_no_adapter_and_no_interface_library():
    for name, deps in GRAPH.items():
        if name.startswith("fsdp_skill.core") or name == "fsdp_skill.errors":
            assert not [d for d in deps if d.startswith(("fsdp_skill.adapters", "fsdp_skill.main"))], name
            assert not _external(MODULES[name]) & {"fastapi", "starlette", "uvicorn", "mcp", "rich", "argparse"}, name


def test_runtime_imports_nothing_of_the_skill_layer():
    for name, deps in GRAPH.items():
        if name.startswith("fsdp_skill.runtime"):
            assert deps <= {d for d in MODULES if d.startswith("fsdp_skill.runtime")} | {"fsdp_skill.errors"}, (name, deps)


def test_rank_side_needs_only_stdlib_and_torch():
    for name in RANK_SIDE | TARGET_SIDE:
        assert GRAPH[name] == set(), (name, GRAPH[name])
        foreign = {m for m in _external(MODULES[name]) if m not in sys.stdlib_module_names} - {"torch", "__future__"}
        assert foreign == set(), (name, foreign)


def test_graph_sees_function_level_imports():
    """The checker must see imports inside functions (the cycle it guards against was one)."""
    assert "fsdp_skill.adapters.http.app" in GRAPH["fsdp_skill.adapters.http"]  # imported inside cmd_serve
