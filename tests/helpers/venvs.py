"""Fresh virtual environments for install tests, built offline from what the test venv already has.

:func:`build_wheel` builds fsdp-skill's wheel from a copy of the checkout (the checkout gets no build/
or egg-info litter).  :func:`fresh_venv` makes a venv with no packages of its own and installs the wheel
into it with ``--no-deps``; its dependencies come from a ``.pth`` line naming a site directory:
either this test venv's whole site-packages (``deps="all"``), or a folder of links to the distributions
that the light core needs and nothing else (``deps="core"``: no torch, FastAPI, uvicorn or mcp).  A
``.pth`` *line* adds a folder to ``sys.path`` without running that folder's own ``.pth`` files, so the
test venv's editable install of the checkout stays invisible: the new venv imports the wheel.
"""

from __future__ import annotations

import importlib.metadata as md
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "skill", "runtime", "knowledge")


def build_wheel(out: Path) -> Path:
    """Build the wheel of the checkout into ``out``; returns its path (raises CalledProcessError)."""
    src = out / "src"
    src.mkdir(parents=True)
    for name in SOURCES:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(p, src / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-w",
            str(out),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("fsdp_skill-*.whl")
    return wheel


def _requirement_names(dist: md.Distribution) -> list[str]:
    names = []
    for req in dist.requires or []:
        if "extra ==" in req:
            continue
        names.append(re.match(r"[A-Za-z0-9._-]+", req).group(0))
    return names


def core_closure() -> list[md.Distribution]:
    """Installed distributions the light core needs: fsdp-skill's base requirements, recursively."""
    seen: dict[str, md.Distribution] = {}
    todo = _requirement_names(md.distribution("fsdp-skill"))
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # a requirement whose marker excludes this Python
        seen[key] = dist
        todo.extend(_requirement_names(dist))
    return list(seen.values())


def _core_site(dest: Path) -> Path:
    """A folder of symlinks to the files of :func:`core_closure` (top-level packages and dist-info)."""
    dest.mkdir(parents=True)
    site = Path(sysconfig.get_paths()["purelib"])
    for dist in core_closure():
        for f in dist.files or []:
            top = f.parts[0]
            if top in ("..", "__pycache__") or top.endswith(".pth"):
                continue
            link = dest / top
            if not link.exists():
                link.symlink_to(site / top)
    return dest


def fresh_venv(where: Path, wheel: Path, deps: str) -> Path:
    """A new venv at ``where`` with ``wheel`` installed (``--no-deps``); returns its ``bin`` folder.

    ``deps`` is ``"all"`` (this venv's site-packages: torch, FastAPI, mcp, ...) or ``"core"`` (only the
    light core's distributions).  Raises CalledProcessError when venv creation or the install fails.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    vpy = where / "bin" / "python"
    vsite = Path(
        subprocess.run(
            [str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    dep_dir = Path(sysconfig.get_paths()["purelib"]) if deps == "all" else _core_site(where.parent / "core-site")
    (vsite / "_fsdp_skill_test_deps.pth").write_text(f"{dep_dir}\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(vpy),
            "install",
            "-q",
            "--no-deps",
            "--disable-pip-version-check",
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    return where / "bin"
