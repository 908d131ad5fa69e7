"""Cheap facts about this host, found without importing torch.

Used on the ``ask`` hot path (cache keys, skip decisions), so everything here reads package metadata and
``/proc`` and returns in milliseconds.
"""
from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass

from fsdp_skill.errors import InvalidArgument

BACKENDS = ("auto", "gloo", "nccl")
KNOWN_REQUIREMENTS = ("cuda",)
_NVIDIA_GPUS = "/proc/driver/nvidia/gpus"


@functools.lru_cache(maxsize=1)
@functools.lru_cache(maxsize=1)
def torch_version() -> str:
    """Installed torch version from package metadata, e.g. ``'2.13.0+cpu'`` (never imports torch).

    Read once per process: parsing package metadata costs about 2 ms.

    Returns ``'absent'`` when torch is not installed (verification then fails with a HarnessError).
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "absent"


@functools.lru_cache(maxsize=1)
def _torch_has_cuda() -> bool:
    """Whether the installed torch build ships CUDA libraries (a ``+cpu`` build never sees a GPU)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return False
    lib = os.path.join(list(spec.submodule_search_locations)[0], "lib")
    try:
        return any(name.startswith("libtorch_cuda") for name in os.listdir(lib))
    except OSError:
        return False


def _visible(physical: int, env: str | None) -> int:
    """Devices left by ``CUDA_VISIBLE_DEVICES`` (parsed like the CUDA runtime: stops at the first invalid entry)."""
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


def cuda_device_count() -> int:
    """Number of CUDA devices a rank could use: NVIDIA driver entries honoring ``CUDA_VISIBLE_DEVICES``.

    Zero when the driver is absent or the installed torch is a CPU-only build.
    """
    if not _torch_has_cuda():
        return 0
    try:
        physical = len(os.listdir(_NVIDIA_GPUS))
    except OSError:
        return 0
    return _visible(physical, os.environ.get("CUDA_VISIBLE_DEVICES"))


@dataclass(frozen=True)
class Placement:
    """Where a run goes: the resolved backend and device, or why it cannot run here (``skip``)."""

    backend: str
    device: str
    skip: str | None = None


def resolve(backend: str, world_size: int, requires=()) -> Placement:
    """Resolve ``backend`` ('auto' | 'gloo' | 'nccl') for ``world_size`` ranks on this host.

    'auto' is NCCL when at least ``world_size`` CUDA devices are visible, else gloo on CPU.  A requirement
    the host cannot meet (``requires=['cuda']`` or an explicit 'nccl' with too few GPUs, an unknown
    requirement) gives a Placement with ``skip`` set to a one-line reason.  Raises InvalidArgument for an
    unknown backend or a world_size below 1.
    """
    if backend not in BACKENDS:
        raise InvalidArgument(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if not isinstance(world_size, int) or world_size < 1:
        raise InvalidArgument(f"world_size must be a positive integer, not {world_size!r}")
    gpus = cuda_device_count()
    if backend == "auto":
        backend = "nccl" if gpus >= world_size else "gloo"
    device = f"cuda ({gpus} devices)" if backend == "nccl" else "cpu"
    for req in requires:
        if req not in KNOWN_REQUIREMENTS:
            return Placement(backend, device, f"unknown requirement {req!r} (known: {', '.join(KNOWN_REQUIREMENTS)})")
        if req == "cuda" and gpus < world_size:
            return Placement(backend, device, f"requires cuda: world_size({world_size}) > CUDA devices({gpus})")
    if backend == "nccl" and gpus < world_size:
        return Placement(backend, device, f"world_size({world_size}) > CUDA devices({gpus}) for nccl")
    return Placement(backend, device)
