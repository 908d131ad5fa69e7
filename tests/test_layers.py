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
# A module started (or loaded) as a file under the user's interpreter (``--python``) opens with this line; such a
# module may use only the standard library and torch (test_file_run_modules_need_only_stdlib_and_torch), and
# every module the package starts or loads by file must carry it (test_every_module_run_as_a_file_is_marked).
FILE_RUN_MARKER = "# file-run: "
# run inside ranks or the fork server: started by file, never imported as part of the package
RANK_SIDE = {"fsdp_skill.runtime.zygote", "fsdp_skill.runtime.worker"}
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


# what the runtime may import of the package outside itself: the error tree and the records base (both standard library only)
RUNTIME_MAY_IMPORT = {"fsdp_skill.errors", "fsdp_skill.records"}


def test_runtime_imports_nothing_of_the_skill_layer():
    for name, deps in GRAPH.items():
        if name.startswith("fsdp_skill.runtime"):
            assert deps <= {d for d in MODULES if d.startswith("fsdp_skill.runtime")} | RUNTIME_MAY_IMPORT, (name, deps)


def _module_level_imports(path: Path) -> set[str]:
    """Top-level names of the imports a module runs when it is imported (not those inside functions or under
    ``if TYPE_CHECKING:``)."""
    tops = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            tops |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            tops.add(node.module.split(".")[0])
    return tops


def test_what_the_runtime_may_import_needs_only_the_standard_library():
    for name in RUNTIME_MAY_IMPORT:
        assert GRAPH[name] == set(), (name, GRAPH[name])
        # pydantic (the lazy TypeAdapter of fsdp_skill.records) only inside functions, never on import
        assert _module_level_imports(MODULES[name]) <= set(sys.stdlib_module_names) | {"__future__"}, name
        assert _external(MODULES[name]) - set(sys.stdlib_module_names) <= {"pydantic"}, name


def _file_run(path: Path) -> bool:
    return path.read_text(encoding="utf-8").startswith(FILE_RUN_MARKER)


FILE_RUN = {name for name, path in MODULES.items() if _file_run(path)}


@pytest.mark.parametrize("name", sorted(FILE_RUN))
def test_file_run_module_needs_only_stdlib_and_torch(name):
    """A file-run module imports nothing of fsdp_skill (at any level, in any function) and no third-party
    package but torch: under ``--python`` the user's interpreter has neither."""
    assert GRAPH[name] == set(), (name, GRAPH[name])
    foreign = {m for m in _external(MODULES[name]) if m not in sys.stdlib_module_names} - {"torch", "__future__"}
    assert foreign == set(), (name, foreign)
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    relative = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert relative == [], (name, "relative imports", relative)


def _run_as_file(name: str, path: Path) -> set[str]:
    """Modules of ours that ``name`` starts or loads as files: a ``"x.py"`` string naming a sibling file, a
    ``load_sibling("x")`` call, or a module's ``.__file__`` (``python <module>.__file__``)."""
    siblings = {p.stem: p for p in path.parent.glob("*.py")}
    package = name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".py"):
            stem = node.value[: -len(".py")]
            if stem in siblings and siblings[stem] != path:
                found.add(f"{package}.{stem}")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "load_sibling":
            if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in siblings:
                found.add(f"{package}.{node.args[0].value}")
        elif isinstance(node, ast.Attribute) and node.attr == "__file__" and isinstance(node.value, ast.Name):
            target = _imported_as(name, path, node.value.id)
            if target:
                found.add(target)
    return found


def _imported_as(name: str, path: Path, alias: str) -> str | None:
    """The module of ours bound to ``alias`` in ``name`` (``from pkg import mod as alias``), or None."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                if (a.asname or a.name) == alias and f"{base}.{a.name}" in MODULES:
                    return f"{base}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if (a.asname or a.name) == alias and a.name in MODULES:
                    return a.name
    return None


RUN_AS_FILE = {target: name for name, path in MODULES.items() for target in _run_as_file(name, path)}


def test_every_module_run_as_a_file_is_marked():
    """What the package starts or loads by file is marked, so the stdlib-and-torch rule guards it; a marked
    module nobody runs as a file would be a stale marker."""
    unmarked = {target: by for target, by in RUN_AS_FILE.items() if target not in FILE_RUN}
    assert unmarked == {}, f"run as a file but not marked '{FILE_RUN_MARKER}...': {unmarked}"
    assert FILE_RUN <= set(RUN_AS_FILE), f"marked but never run as a file: {FILE_RUN - set(RUN_AS_FILE)}"


def test_file_run_guard_sees_the_known_ones():
    """The discovery finds the launchers' files (a guard that found nothing would pass vacuously)."""
    assert {
        "fsdp_skill.runtime.zygote",
        "fsdp_skill.runtime.worker",
        "fsdp_skill.runtime.shepherd",
        "fsdp_skill.runtime.probe",
        "fsdp_skill.runtime.introspect",
        "fsdp_skill.core.plan.child",
        "fsdp_skill.core.plan.transformer",
    } <= set(RUN_AS_FILE)


def test_graph_sees_function_level_imports():
    """The checker must see imports inside functions (the cycle it guards against was one)."""
    assert "fsdp_skill.adapters.http.app" in GRAPH["fsdp_skill.adapters.http"]  # imported inside cmd_serve


def _readme_layout() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text[text.index("## Code layout") : text.index("## Knowledge card format")]


def test_readme_layout_names_real_files():
    """Every repository path README's "Code layout" and "Where a change goes" name exists (placeholders such as
    ``<topic>`` and ``FSDxxx`` aside), so the table of where a change goes cannot point at a moved file."""
    import re

    roots = ("skill/", "runtime/", "knowledge/", "tests/", "benchmarks/", "scripts/")
    paths = {p for p in re.findall(r"`([^`\s]+)`", _readme_layout()) if p.startswith(roots) and not re.search(r"[<*]|FSDxxx", p)}
    assert len(paths) > 40, paths  # the tables were read
    missing = sorted(p for p in paths if not (ROOT / p.rstrip("/")).exists())
    assert missing == [], missing


def test_readme_lists_the_file_run_modules():
    """README's list of files run under the user's interpreter is the set the marker test discovers."""
    import re

    section = _readme_layout()
    listed = section[section.index("**Files run under the user's interpreter.**") :].split("\n\n")[0]
    named = {p for p in re.findall(r"`((?:skill|runtime)/[\w/]+\.py)`", listed)}

    def module(path: str) -> str:
        parts = path[: -len(".py")].split("/")
        return ".".join(["fsdp_skill", *parts[1:]] if parts[0] == "skill" else ["fsdp_skill", *parts])

    assert {module(p) for p in named} == FILE_RUN
