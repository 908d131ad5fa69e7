# file-run: started as a file under the user's interpreter; standard library and torch only (tests/test_layers.py)
"""Facts about a Python environment's torch, found without importing torch: ``python probe.py`` prints JSON.

The tool runs it as ``python probe.py --frame NONCE`` and reads only the line framed with that nonce
(:mod:`fsdp_skill.runtime.framing`).

Runs under the *target* interpreter (``--python PATH``) as a file, so it needs nothing but the standard
library (no fsdp_skill, no pydantic); the tool also imports it for its own interpreter, which saves a
subprocess on the ``ask`` hot path.  Output of :func:`static_facts`::

    {"python": "/venv/bin/python", "python_version": [3, 11, 9], "torch_version": "2.13.0+cpu" | null,
     "torch_dir": "/venv/lib/python3.11/site-packages/torch" | null, "cuda_build": false, "nccl_build": false}

GPU counts are not part of it: they depend on the host and ``CUDA_VISIBLE_DEVICES``, not on the
interpreter, and are computed by the caller with :func:`device_count`.
"""

import json
import os
import sys

NVIDIA_GPUS = "/proc/driver/nvidia/gpus"


def _torch_dir():
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")  # finds the package without importing it
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def _torch_version():
    """``importlib.metadata.version("torch")``, or None when torch has no metadata.  The common layout (a
    ``torch-*.dist-info`` directory on ``sys.path``) is read directly (importing importlib.metadata and the email
    package costs ~25 ms of a cached ``ask``); anything else is left to importlib.metadata."""
    found = _dist_info_version("torch")
    if found is not _UNSURE:
        return found
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # Python < 3.8
        return None
    try:
        return version("torch")
    except PackageNotFoundError:
        return None


_UNSURE = object()


def _dist_info_version(name):
    """What ``importlib.metadata.version(name)`` returns, found as it finds it (the first ``sys.path`` directory
    holding a ``NAME-*.dist-info`` or ``NAME-*.egg-info`` entry, in ``os.listdir`` order), when that is a
    ``.dist-info`` directory whose ``METADATA`` has a plain ``Version:`` header; ``_UNSURE`` otherwise (another
    finder on ``sys.meta_path`` that can list distributions, a zip or egg entry on ``sys.path``, an ``.egg-info``
    match, an unusual METADATA): the caller asks importlib.metadata then."""
    import importlib.machinery

    finders = [f for f in sys.meta_path if getattr(f, "find_distributions", None) is not None]
    if finders != [importlib.machinery.PathFinder]:
        return _UNSURE
    want = _normalize(name)
    for entry in sys.path:
        root = entry or "."
        if not isinstance(entry, str) or root.lower().endswith(".egg"):
            return _UNSURE
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.isfile(root):  # a zip archive: importlib.metadata looks inside
                return _UNSURE
            continue  # missing, or a path hook's name: importlib.metadata finds nothing there either
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            if _normalize(low.rpartition(".")[0].partition("-")[0]) != want:
                continue
            if not low.endswith(".dist-info"):
                return _UNSURE
            return _metadata_version(os.path.join(root, child))
    return None


def _normalize(name):
    """importlib.metadata's ``Prepared.normalize``: runs of ``-_.`` become ``_``, lower case."""
    out, run = [], False
    for c in name.lower():
        if c in "-_.":
            if not run:
                out.append("_")
            run = True
        else:
            out.append(c)
            run = False
    return "".join(out)


def _metadata_version(dist_info):
    """The ``Version`` header of ``DIST_INFO/METADATA`` as the email parser importlib.metadata uses reads it;
    ``_UNSURE`` when the file is missing or its headers are not plain ``Name: value`` lines."""
    try:
        with open(os.path.join(dist_info, "METADATA"), encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return _UNSURE
    for line in text.split("\n"):
        if line in ("", "\r"):
            break  # end of the headers
        key, colon, value = line.partition(":")
        if not colon or key != key.strip() or not key or line[0] in " \t":
            return _UNSURE  # folded or malformed headers: the email parser's rules apply
        if key.lower() == "version":
            value = value.lstrip(" \t").rstrip("\r")
            return value if value else _UNSURE
    return _UNSURE


def static_facts():
    """This interpreter's path, version, torch version and build (CUDA, NCCL), as a JSON-ready dict.

    ``nccl_build`` is a CUDA build on Linux, where torch's wheels always ship NCCL.  Never imports torch.
    """
    tdir = _torch_dir()
    version = _torch_version() if tdir else None
    cuda = False
    if tdir:
        try:
            cuda = any(name.startswith("libtorch_cuda") for name in os.listdir(os.path.join(tdir, "lib")))
        except OSError:
            cuda = False
    return {
        "python": sys.executable,
        "python_version": list(sys.version_info[:3]),
        "torch_version": version if tdir else None,
        "torch_dir": tdir,
        "cuda_build": cuda,
        "nccl_build": cuda and sys.platform.startswith("linux"),
    }


def visible(physical, env):
    """Devices left of ``physical`` by ``CUDA_VISIBLE_DEVICES`` ``env`` (parsed like the CUDA runtime:
    it stops at the first invalid entry); ``physical`` when ``env`` is None."""
    if env is None:
        return physical
    count = 0
    for item in env.split(","):
        item = item.strip()
        if not item:
            break
        if item.lstrip("-").isdigit():
            if int(item) < 0 or int(item) >= physical:
                break
        elif not item.startswith(("GPU-", "MIG-")):
            break
        count += 1
    return min(count, physical)


def device_count(cuda_build):
    """CUDA devices a rank could use: NVIDIA driver entries honoring ``CUDA_VISIBLE_DEVICES``; 0 for a
    CPU-only torch build or without the driver."""
    if not cuda_build:
        return 0
    try:
        physical = len(os.listdir(NVIDIA_GPUS))
    except OSError:
        return 0
    return visible(physical, os.environ.get("CUDA_VISIBLE_DEVICES"))


def main(argv):
    """Print :func:`static_facts` as one JSON line; with ``--frame NONCE`` (how the tool runs it) the line is
    framed as ``@fsdp-skill-result:NONCE {...}`` (runtime/framing.py), so whatever else a ``--python`` wrapper
    prints is not taken for it."""
    line = json.dumps(static_facts())
    if len(argv) == 2 and argv[0] == "--frame":
        line = "@fsdp-skill-result:" + argv[1] + " " + line
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
