"""Every ``FSDP_SKILL_*`` variable is declared once, in runtime/knobs.py: no other literal in the code of skill/ and
runtime/, each knob read where it says, README's table the rendered one.

What the literal scan reads: every string constant in the code of ``skill/**.py`` and ``runtime/**.py`` but
``runtime/knobs.py`` (f-string parts included), except docstrings and other bare string statements; comments are
not code.  A constant that holds ``FSDP_SKILL_...`` and no whitespace is a *use* of the name (an environment key,
a pattern, ``NAME=value``): only knobs.py may hold one, readers take its constant.  A constant with whitespace is
a sentence (help text, an error message, a field description): it may *mention* a declared knob or the prefix.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from fsdp_skill.runtime import knobs

ROOT = Path(__file__).resolve().parent.parent
KNOBS_FILE = ROOT / "runtime" / "knobs.py"
NAME = re.compile(r"FSDP_SKILL_\w*")
# the module's constants that hold a knob's name (PREFIX is not a knob)
CONSTS = {attr: v for attr, v in vars(knobs).items() if isinstance(v, str) and v.startswith(knobs.PREFIX) and v != knobs.PREFIX}
DECLARED = {k.name for k in knobs.KNOBS}


def _code_files() -> list[Path]:
    return sorted(p for folder in ("skill", "runtime") for p in (ROOT / folder).rglob("*.py") if p != KNOBS_FILE)


def _strings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant of ``source`` that is code, not documentation."""
    tree = ast.parse(source)
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return sorted(
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    )


def _violations(source: str) -> list[str]:
    """Uses of a knob's name in ``source`` (see the module docstring), and mentions of an undeclared one."""
    out = []
    for line, text in _strings(source):
        names = NAME.findall(text)
        if names and not any(c.isspace() for c in text):
            out.append(f"{line}: {text!r} (use the constant of fsdp_skill.runtime.knobs)")
        out += [f"{line}: {n} is not declared in runtime/knobs.py" for n in names if n not in DECLARED | {knobs.PREFIX}]
    return out


def test_no_knob_literal_outside_the_knobs_module():
    found = {str(p.relative_to(ROOT)): v for p in _code_files() if (v := _violations(p.read_text(encoding="utf-8")))}
    assert found == {}


def test_the_literal_scan_sees_uses_and_lets_sentences_and_docstrings_be():
    """The scan itself (a scan that saw nothing would pass vacuously)."""
    source = (
        '"""Module docs may name $FSDP_SKILL_ANYTHING."""\n'
        "import os, re\n"
        'A = os.environ.get("FSDP_SKILL_HOME")\n'
        'B = re.compile(r"^(?:NCCL_\\w*|FSDP_SKILL_WARM_EXIT)$")\n'
        'C = f"FSDP_SKILL_{A}"\n'
        'D = "the interpreter (default: $FSDP_SKILL_PYTHON, else this one)"\n'
        'E = "names starting FSDP_SKILL_ are dropped"\n'
        'F = "point $FSDP_SKILL_NOPE at it"\n'
        "def f():\n"
        '    """FSDP_SKILL_HOME in a docstring"""\n'
        "    # FSDP_SKILL_HOME in a comment\n"
    )
    got = _violations(source)
    assert [v.split(":")[0] for v in got] == ["3", "4", "5", "8"], got
    assert got[-1] == "8: FSDP_SKILL_NOPE is not declared in runtime/knobs.py"


def test_every_knob_is_declared_once_with_its_words():
    names = [k.name for k in knobs.KNOBS]
    assert len(names) == len(set(names)) and set(names) == set(CONSTS.values())
    for k in knobs.KNOBS:
        assert k.name.startswith(knobs.PREFIX) and k.default and k.effect and k.readers, k
        assert all((ROOT / r).is_file() for r in k.readers), k
    assert knobs.STATE == (knobs.HOME, knobs.KNOWLEDGE, knobs.PYTHON)


def _reads(source: str) -> set[str]:
    """Knobs ``source`` names through the knobs module: ``<...knobs>.CONST`` or ``from ...knobs import CONST``."""
    out = set()
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Attribute) and n.attr in CONSTS and isinstance(n.value, ast.Name) and n.value.id.endswith("knobs"):
            out.add(CONSTS[n.attr])
        elif isinstance(n, ast.ImportFrom) and (n.module or "").endswith("knobs"):
            out |= {CONSTS[a.name] for a in n.names if a.name in CONSTS}
    return out


def test_each_knob_is_read_where_it_says():
    found: dict[str, set[str]] = {}
    for path in _code_files():
        for name in _reads(path.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    assert found == {k.name: set(k.readers) for k in knobs.KNOBS}


def test_readme_table_is_the_rendered_one():
    """README's "Environment variables" table is ``knobs.markdown_table()`` (``python runtime/knobs.py`` prints it)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = knobs.markdown_table()
    assert table in readme, "README's knobs table differs from `python runtime/knobs.py`"
    rows = [ln for ln in readme.splitlines() if ln.startswith("| `FSDP_SKILL_")]
    assert rows == table.splitlines()[2:]  # no other row names a knob
