"""Cheap facts about this host and the target interpreter, found without importing torch.

Used on the ``ask`` hot path (cache keys, skip decisions), so everything here reads package metadata and
``/proc`` (through :mod:`fsdp_skill.runtime.target`) and returns in milliseconds once the target is probed.
"""

from __future__ import annotations

from dataclasses import dataclass

from fsdp_skill.errors import InvalidArgument
from fsdp_skill.runtime import target

BACKENDS = ("auto", "gloo", "nccl")
KNOWN_REQUIREMENTS = ("cuda",)


def torch_version(python: str | None = None) -> str:
    """torch version of the target interpreter (default: the selected one, see
    :func:`fsdp_skill.runtime.target.python`) from package metadata, e.g. ``'2.13.0+cpu'``; never imports torch.

    Returns ``'absent'`` when torch is not installed there.  Raises InvalidArgument for a bad interpreter.
    """
    return target.facts(python).torch_version or "absent"


def cuda_device_count(python: str | None = None) -> int:
    """Number of CUDA devices a rank of the target interpreter could use: NVIDIA driver entries honoring
    ``CUDA_VISIBLE_DEVICES``; zero without the driver or when its torch is a CPU-only build."""
    return target.facts(python).device_count


@dataclass(frozen=True)
class Placement:
    """Where a run goes: the resolved backend and device, or why it cannot run here (``skip``)."""

    backend: str
    device: str
    skip: str | None = None


def resolve(backend: str, world_size: int, requires=(), python: str | None = None) -> Placement:
    """Resolve ``backend`` ('auto' | 'gloo' | 'nccl') for ``world_size`` ranks of ``python`` (default: the
    selected target interpreter) on this host.

    'auto' is NCCL when at least ``world_size`` CUDA devices are visible, else gloo on CPU.  A requirement
    the host cannot meet (``requires=['cuda']`` or an explicit 'nccl' with too few GPUs, an unknown
    requirement) gives a Placement with ``skip`` set to a one-line reason.  Raises InvalidArgument for an
    unknown backend or a world_size below 1.
    """
    if backend not in BACKENDS:
        raise InvalidArgument(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if not isinstance(world_size, int) or world_size < 1:
        raise InvalidArgument(f"world_size must be a positive integer, not {world_size!r}")
    gpus = cuda_device_count(python)
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
