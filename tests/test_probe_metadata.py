"""The probe's torch version (:func:`fsdp_skill.runtime.probe._torch_version`) is ``importlib.metadata.version``'s:
read directly from the first ``torch-*.dist-info`` on ``sys.path`` when the layout is the common one, left to
importlib.metadata otherwise, on the real environment and on planted layouts (several directories, name
variants, egg-info, a missing or folded METADATA, a zip archive, no torch at all)."""

from __future__ import annotations

import importlib.metadata
import zipfile

import pytest

from fsdp_skill.runtime import probe


def _metadata_version(name: str = "torch") -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def test_the_real_environment():
    assert probe._torch_version() == _metadata_version()


def _dist(folder, name, metadata: str | None, *, kind="dist-info"):
    path = folder / f"{name}.{kind}"
    path.mkdir(parents=True)
    if metadata is not None:
        (path / ("METADATA" if kind == "dist-info" else "PKG-INFO")).write_text(metadata, encoding="utf-8")


PLAIN = "Metadata-Version: 2.4\nName: torch\nVersion: 9.1.0+cpu\nSummary: x\n\nBody\nVersion: 0\n"
LAYOUTS = {
    "one dist-info": lambda a, b: _dist(b, "torch-9.1.0+cpu", PLAIN),
    "the first directory wins": lambda a, b: (
        _dist(a, "torch-1.0", PLAIN.replace("9.1.0+cpu", "1.0")),
        _dist(b, "torch-9.1.0", PLAIN),
    ),
    "upper-case name": lambda a, b: _dist(a, "Torch-2.0", PLAIN.replace("9.1.0+cpu", "2.0")),
    "other packages only": lambda a, b: (_dist(a, "torchvision-0.1", PLAIN), _dist(a, "torch_xla-2.0", PLAIN)),
    "lower-case header name": lambda a, b: _dist(a, "torch-3", "Name: torch\nversion: 3.0 \n"),
    "CRLF lines": lambda a, b: _dist(a, "torch-4", "Name: torch\r\nVersion: 4.0\r\n\r\n"),
    "a folded header first": lambda a, b: _dist(a, "torch-5", "Name: torch\nLicense: a\n  b\nVersion: 5.0\n"),
    "no Version header": lambda a, b: _dist(a, "torch-6", "Name: torch\n\nVersion: 6.0\n"),
    "no METADATA": lambda a, b: _dist(a, "torch-7", None),
    "an egg-info first": lambda a, b: (
        _dist(a, "torch-8.0", "Name: torch\nVersion: 8.0\n", kind="egg-info"),
        _dist(b, "torch-9", PLAIN),
    ),
    "no torch": lambda a, b: None,
}


@pytest.mark.parametrize("layout", list(LAYOUTS.values()), ids=list(LAYOUTS))
def test_a_planted_layout(tmp_path, monkeypatch, layout):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    layout(a, b)
    monkeypatch.setattr("sys.path", [str(tmp_path / "missing"), str(a), str(b)])
    assert probe._torch_version() == _metadata_version()
    direct = probe._dist_info_version("torch")
    assert direct is probe._UNSURE or direct == _metadata_version()


def test_a_zip_archive_on_the_path_is_left_to_importlib_metadata(tmp_path, monkeypatch):
    archive = tmp_path / "site.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("torch-7.7.dist-info/METADATA", "Name: torch\nVersion: 7.7\n")
    monkeypatch.setattr("sys.path", [str(archive)])
    assert probe._dist_info_version("torch") is probe._UNSURE
    assert probe._torch_version() == _metadata_version() == "7.7"
