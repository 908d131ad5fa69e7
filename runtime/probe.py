# file-run: started as a file under the user's interpreter; standard library and torch only (tests/test_layers.py)
"""Facts about a Python environment's torch, found without importing torch: ``python probe.py`` prints JSON.

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
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # Python < 3.8
        return None
    try:
        return version("torch")
    except PackageNotFoundError:
        return None


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


if __name__ == "__main__":
    sys.stdout.write(json.dumps(static_facts()) + "\n")
