# file-run: started as a file under the user's interpreter (each rank of a CPU dry run); standard library and torch only (tests/test_layers.py)
"""A CPU dry run of a CUDA training script: CUDA placement mapped to the CPU, NCCL to gloo, in one rank.

    python cpu_dry.py --rundir DIR -- SCRIPT.py ARGS...     (the entry of every rank of ``verify --cpu``)

Both launchers start this file as the rank's script; it installs the mapping (:func:`install`), then runs
``SCRIPT.py ARGS`` as ``__main__`` the way the worker runs any script (:func:`worker.run_script`: its
directory first on ``sys.path``, ``sys.argv == [SCRIPT.py, *ARGS]``, trimmed traceback in
``DIR/rank<RANK>.tb``) with a :class:`_CudaToCpu` torch-function mode entered for the whole run.

What is mapped (README "CPU dry run" has the table): the ``device=`` of every torch function and
``Tensor.to`` / ``Tensor.cuda`` (so ``Module.cuda()`` / ``.to("cuda")``) to ``cpu``; ``pin_memory`` to the
identity; ``torch.cuda`` queries answered for ``LOCAL_WORLD_SIZE`` devices (memory queries answer 0 bytes);
streams and events inert (CPU work is synchronous); NCCL backends to gloo and ``device_id`` dropped;
``init_device_mesh("cuda")`` to ``"cpu"``; FSDP1 ``device_id`` and DDP ``device_ids`` / ``output_device``
dropped; CUDA autocast and gradient scalers to their CPU versions.

What cannot be mapped raises :class:`CannotDryRun` ("cannot dry-run on CPU: <what>, at <file:line>") and is
written to ``DIR/rank<RANK>.dryrun`` first, so the harness reports it (exit 2) even when the script catches it:
CUDA-only extensions (imports of :data:`CUDA_ONLY_MODULES` from outside torch), CUDA sources given to
``torch.utils.cpp_extension``, fp8 dtypes, the CUDA memory history and snapshots, ``SyncBatchNorm`` and a script
that starts its own ranks with ``torch.multiprocessing.spawn``.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import types
from collections.abc import Callable
from typing import Any

# Top-level modules that hold CUDA kernels only; importing one from the script (not from torch) cannot dry-run.
CUDA_ONLY_MODULES = frozenset(
    {
        "flash_attn",
        "flash_attn_interface",
        "flash_attn_2_cuda",
        "apex",
        "xformers",
        "transformer_engine",
        "triton",
        "bitsandbytes",
        "mamba_ssm",
        "causal_conv1d",
        "deep_gemm",
        "fused_dense_lib",
        "amp_C",
    }
)
DEVICE_NAME = "cpu (fsdp-skill dry run)"
REFUSAL_PREFIX = "cannot dry-run on CPU: "

_HERE = os.path.abspath(__file__)
_record_path: str | None = None  # DIR/rank<RANK>.dryrun: where a refusal is written before it is raised


class CannotDryRun(RuntimeError):
    """The script needs something the CPU cannot stand in for (a CUDA kernel, fp8, the CUDA allocator)."""


def load_sibling(name: str) -> types.ModuleType:
    """Module ``name`` (its file beside this one) as a private module object, not in ``sys.modules``."""
    import importlib.util

    path = os.path.join(os.path.dirname(_HERE), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_fsdp_skill_rank_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_dir() -> str:
    import torch

    return os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _caller_site() -> tuple[str, int] | None:
    """``(file, line)`` of the innermost frame outside torch, this file, importlib and runpy: the user's call."""
    skip = (_torch_dir(), _HERE, os.path.join(os.path.dirname(_HERE), "worker.py"), "<frozen")
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(skip) or name.endswith(os.sep + "runpy.py")):
            return name, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _from_torch() -> bool:
    """Whether the function calling the caller of this one lives in torch (it should see the real CPU host)."""
    return sys._getframe(2).f_code.co_filename.startswith(_torch_dir())


def refuse(what: str) -> CannotDryRun:
    """Record ``what`` cannot be dry-run (``DIR/rank<RANK>.dryrun``) and return the exception to raise."""
    site = _caller_site()
    message = REFUSAL_PREFIX + what + (f", at {os.path.basename(site[0])}:{site[1]}" if site else "")
    if _record_path is not None:
        try:
            with open(_record_path, "a", encoding="utf-8") as f:
                f.write(message + "\n")
        except OSError:
            pass
    return CannotDryRun(message)


# -- devices ------------------------------------------------------------------------------------------


def _is_cuda(device: Any) -> bool:
    """Whether ``device`` (a str, torch.device or CUDA ordinal) names a CUDA device."""
    import torch

    if isinstance(device, bool):
        return False
    if isinstance(device, int):
        return True  # a bare ordinal in a device= argument is a CUDA device
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, str) and device.split(":")[0] == "cuda"


def _cpu(device: Any) -> Any:
    """``device`` with a CUDA device replaced by ``"cpu"`` (anything else as it is)."""
    return "cpu" if _is_cuda(device) else device


def _no_fp8(values: Any) -> None:
    import torch

    for value in values:
        if isinstance(value, torch.dtype) and "float8" in str(value):
            raise refuse(f"fp8 dtype {value}")


def _mode_class() -> type:
    import torch
    from torch.overrides import TorchFunctionMode

    tensor_to, tensor_cuda = torch.Tensor.to, torch.Tensor.cuda
    identity = {torch.Tensor.pin_memory, torch.Tensor.record_stream}

    class _CudaToCpu(TorchFunctionMode):
        """Every ``device=`` that names CUDA becomes ``cpu``; ``Tensor.to(cuda)`` and ``Tensor.cuda()`` stay on the CPU."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = _cpu(kwargs["device"])
            _no_fp8([kwargs.get("dtype"), *args])
            if func is tensor_cuda:
                return tensor_to(args[0], "cpu")
            if func in identity:
                return args[0]
            if func is tensor_to:
                args = (args[0], *(_cpu(a) for a in args[1:]))
            return func(*args, **kwargs)

    return _CudaToCpu


# -- torch.cuda ---------------------------------------------------------------------------------------


class _Stream:
    """An inert CUDA stream: CPU work is synchronous, so every wait and query is already satisfied."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device, self.priority = device, priority

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> _Event:
        event = event or _Event()
        event.record(self)
        return event

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class _Event:
    """A CUDA event on the CPU: ``elapsed_time`` is the wall time between two ``record`` calls, in milliseconds."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.at: float | None = None

    def record(self, stream: Any = None) -> None:
        self.at = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _Event) -> float:
        if self.at is None or end.at is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end.at - self.at) * 1000.0


class _Properties:
    """What ``torch.cuda.get_device_properties`` answers: the CPU's name and the host's memory in bytes."""

    def __init__(self) -> None:
        self.name = DEVICE_NAME
        self.total_memory = _meminfo("MemTotal")
        self.major, self.minor, self.multi_processor_count = 0, 0, os.cpu_count() or 1


def _meminfo(field: str) -> int:
    """Bytes of ``field`` in /proc/meminfo (0 where it cannot be read)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _patch_cuda() -> None:
    """Replace the ``torch.cuda`` functions a CUDA script calls with CPU answers (see the module docstring)."""
    import contextlib

    import torch

    cuda = torch.cuda
    real_available, real_count = cuda.is_available, cuda.device_count
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
    current = [0]

    def is_available() -> bool:
        return real_available() if _from_torch() else True

    def device_count() -> int:
        return real_count() if _from_torch() else local

    def set_device(device: Any) -> None:
        index = getattr(device, "index", device)
        current[0] = int(index) if isinstance(index, int) else 0

    def refused(what: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise refuse(what)

        return call

    def zero(*args: Any, **kwargs: Any) -> int:
        return 0

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    def seed(value: int) -> None:
        torch.default_generator.manual_seed(int(value))  # "CUDA" tensors draw from the CPU generator

    table: dict[str, Any] = {
        "is_available": is_available,
        "device_count": device_count,
        "set_device": set_device,
        "current_device": lambda: current[0],
        "synchronize": nothing,
        "empty_cache": nothing,
        "init": nothing,
        "ipc_collect": nothing,
        "manual_seed": seed,
        "manual_seed_all": seed,
        "is_bf16_supported": lambda *a, **k: True,
        "get_device_name": lambda *a, **k: DEVICE_NAME,
        "get_device_capability": lambda *a, **k: (0, 0),
        "get_device_properties": lambda *a, **k: _Properties(),
        "mem_get_info": lambda *a, **k: (_meminfo("MemAvailable"), _meminfo("MemTotal")),
        "memory_stats": lambda *a, **k: {},
        "memory_summary": lambda *a, **k: "CUDA memory: not measured in a CPU dry run",
        "Stream": _Stream,
        "Event": _Event,
        "stream": lambda s=None: contextlib.nullcontext(s),
        "device": lambda d=None: contextlib.nullcontext(d),
        "current_stream": lambda *a, **k: _Stream(),
        "default_stream": lambda *a, **k: _Stream(),
        "memory_snapshot": refused("torch.cuda.memory_snapshot (the CUDA caching allocator's state)"),
    }
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved"):
        table[name] = zero
    for name in ("reset_peak_memory_stats", "reset_max_memory_allocated", "reset_accumulated_memory_stats"):
        table[name] = nothing
    for name, value in table.items():
        setattr(cuda, name, value)
    _patch_accelerator(table)
    memory = cuda.memory
    for name in ("_record_memory_history", "_snapshot", "_dump_snapshot", "memory_snapshot"):
        setattr(memory, name, refused(f"torch.cuda.memory.{name.lstrip('_')} (the CUDA caching allocator's history)"))
    for name in ("range_push", "range_pop", "mark"):
        setattr(cuda.nvtx, name, nothing)
    cuda.nvtx.range = lambda *a, **k: contextlib.nullcontext()


def _patch_accelerator(cuda: dict[str, Any]) -> None:
    """``torch.accelerator`` answers as for CUDA to the script (torch's own calls get the real CPU host)."""
    import contextlib

    import torch

    acc = torch.accelerator
    real_available, real_current, real_count = acc.is_available, acc.current_accelerator, acc.device_count

    def is_available() -> bool:
        return real_available() if _from_torch() else True

    def current_accelerator(check_available: bool = False) -> Any:
        return real_current(check_available) if _from_torch() else torch.device("cuda")

    def device_count() -> int:
        return real_count() if _from_torch() else cuda["device_count"]()

    class device_index(contextlib.nullcontext):  # noqa: N801 - torch.accelerator.device_index's name
        def __init__(self, index: int | None) -> None:
            super().__init__(index)

    table = {
        "is_available": is_available,
        "current_accelerator": current_accelerator,
        "device_count": device_count,
        "device_index": device_index,
        "set_device_index": cuda["set_device"],
        "set_device_idx": cuda["set_device"],
        "current_device_index": cuda["current_device"],
        "current_device_idx": cuda["current_device"],
        "synchronize": cuda["synchronize"],
        "empty_cache": cuda["empty_cache"],
        "current_stream": cuda["current_stream"],
    }
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats"):
        table[name] = cuda[name]
    for name, value in table.items():
        if hasattr(acc, name):
            setattr(acc, name, value)


# -- distributed, wrappers, autocast, scalers ---------------------------------------------------------


def _gloo(backend: Any) -> Any:
    """A backend that names NCCL (``"nccl"``, ``"cpu:gloo,cuda:nccl"``) as ``"gloo"``; others as they are."""
    return "gloo" if isinstance(backend, str) and "nccl" in backend.lower() else backend


def _patch_distributed() -> None:
    import torch.distributed as dist
    from torch.distributed import device_mesh
    from torch.distributed import distributed_c10d as c10d

    init, new_group, mesh = c10d.init_process_group, c10d.new_group, device_mesh.init_device_mesh
    default_backend = c10d.get_default_backend_for_device

    def get_default_backend_for_device(device: Any) -> str:
        return "gloo" if _is_cuda(device) else default_backend(device)

    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("device_id", None)
        return init(_gloo(backend) or "gloo", *args, **kwargs)

    def new_group_(*args: Any, **kwargs: Any) -> Any:
        if "backend" in kwargs:
            kwargs["backend"] = _gloo(kwargs["backend"])
        kwargs.pop("device_id", None)
        return new_group(*args, **kwargs)

    def init_device_mesh(device_type: str, *args: Any, **kwargs: Any) -> Any:
        return mesh(_cpu(device_type), *args, **kwargs)

    for module in (dist, c10d):
        module.init_process_group, module.new_group = init_process_group, new_group_
        module.get_default_backend_for_device = get_default_backend_for_device
    for module in (dist, device_mesh):
        module.init_device_mesh = init_device_mesh


def _unchecked(group: Any) -> Any:
    """A process group of ``group``'s ranks (default: all) without TORCH_DISTRIBUTED_DEBUG=DETAIL's checking wrapper:
    torch 2.13 crashes (SIGSEGV, also outside a dry run) building DDP's construction log over the wrapper, so
    DDP's own gradient all-reduces run unchecked (they are the same on every rank); the script's stay checked."""
    import torch.distributed as dist

    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(dist.get_world_size()))
    dist.set_debug_level(dist.DebugLevel.INFO)
    try:
        return dist.new_group(ranks, use_local_synchronization=True)
    finally:
        dist.set_debug_level(dist.DebugLevel.DETAIL)


def _patch_wrappers() -> None:
    import inspect

    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp_init, fsdp_init = DDP.__init__, FSDP.__init__
    signature = inspect.signature(ddp_init)

    def ddp(self: Any, module: Any, device_ids: Any = None, output_device: Any = None, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, module, None, None, *args, **kwargs)  # a CPU module takes neither device
        if dist.get_debug_level() == dist.DebugLevel.DETAIL:
            bound.arguments["process_group"] = _unchecked(bound.arguments.get("process_group"))
        ddp_init(*bound.args, **bound.kwargs)

    def fsdp(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > 9:  # module, process_group, ..., param_init_fn, device_id, ...
            args = (*args[:9], torch.device("cpu"), *args[10:])
        else:
            kwargs["device_id"] = torch.device("cpu")  # FSDP1 needs the CPU named to run there
        fsdp_init(self, *args, **kwargs)

    DDP.__init__, FSDP.__init__ = ddp, fsdp


def _patch_amp() -> None:
    import torch
    from torch.distributed.fsdp import sharded_grad_scaler

    autocast, scaler, sharded = torch.amp.autocast, torch.amp.GradScaler, sharded_grad_scaler.ShardedGradScaler

    class Autocast(autocast):  # type: ignore[misc, valid-type]
        """torch.autocast with a CUDA device type run as CPU autocast."""

        def __init__(self, device_type: str = "cuda", *args: Any, **kwargs: Any) -> None:
            super().__init__(_cpu(device_type), *args, **kwargs)

    def cuda_autocast(enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> Any:
        return Autocast("cpu", dtype=dtype or torch.float16, enabled=enabled, cache_enabled=cache_enabled)

    class Scaler(scaler):  # type: ignore[misc, valid-type]
        """torch.amp.GradScaler on the CPU for a CUDA device."""

        def __init__(self, device: str = "cuda", *args: Any, **kwargs: Any) -> None:
            super().__init__(_cpu(device), *args, **kwargs)

    class Sharded(sharded):  # type: ignore[misc, valid-type]
        """ShardedGradScaler on the CPU for a CUDA device."""

        def __init__(self, device: str = "cuda", *args: Any, **kwargs: Any) -> None:
            super().__init__(_cpu(device), *args, **kwargs)

    torch.autocast = torch.amp.autocast = Autocast
    torch.amp.GradScaler = Scaler
    torch.cuda.amp.autocast = cuda_autocast
    torch.cuda.amp.GradScaler = lambda *a, **k: Scaler("cpu", *a, **k)
    sharded_grad_scaler.ShardedGradScaler = Sharded


def _patch_extensions() -> None:
    """Refuse CUDA-only extension modules imported from outside torch, and CUDA sources to build."""
    import importlib.abc

    from torch.utils import cpp_extension

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
            if name.split(".")[0] in CUDA_ONLY_MODULES and not _from_torch_import():
                raise refuse(f"import of {name} (a CUDA-only extension)")
            return None

    sys.meta_path.insert(0, Refuse())
    load, inline = cpp_extension.load, cpp_extension.load_inline

    def load_(name: str, sources: Any, *args: Any, **kwargs: Any) -> Any:
        files = [sources] if isinstance(sources, str) else list(sources)
        if kwargs.get("with_cuda") or any(str(s).endswith((".cu", ".cuh")) for s in files):
            raise refuse(f"torch.utils.cpp_extension.load of CUDA sources ({name})")
        return load(name, sources, *args, **kwargs)

    def inline_(name: str, cpp_sources: Any, cuda_sources: Any = None, *args: Any, **kwargs: Any) -> Any:
        if cuda_sources or kwargs.get("with_cuda"):
            raise refuse(f"torch.utils.cpp_extension.load_inline of CUDA sources ({name})")
        return inline(name, cpp_sources, cuda_sources, *args, **kwargs)

    cpp_extension.load, cpp_extension.load_inline = load_, inline_


def _from_torch_import() -> bool:
    """Whether the import being resolved was started by torch's own code (torch probes for triton itself) or is a
    probe (``importlib.util.find_spec``, as libraries check for flash_attn), which is answered as usual."""
    allowed = (_torch_dir(), *_admitted_dirs())
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if frame.f_code.co_name == "find_spec" and (name == "<frozen importlib.util>" or name.endswith("util.py")):
            return True  # a probe
        if not name.startswith(("<frozen", _IMPORTLIB)):  # importlib.import_module is the importer's tool
            return name.startswith(allowed)
        frame = frame.f_back  # type: ignore[assignment]
    return False


_IMPORTLIB = os.path.dirname(os.path.abspath(importlib.__file__)) + os.sep


def _admitted_dirs() -> list[str]:
    """The folders of the CUDA-only packages already imported (torch's own import of triton was let through):
    such a package importing its own submodules (``triton/__init__.py`` imports ``triton.runtime``) is part of
    the import torch started.  A CUDA build of torch imports triton lazily, after this mapping is installed,
    when the script runs under torchrun (the warm launcher's zygote imported it before)."""
    found = []
    for top in CUDA_ONLY_MODULES:
        module = sys.modules.get(top)
        where = getattr(module, "__file__", None)
        if where:
            found.append(os.path.dirname(os.path.abspath(where)) + os.sep)
    return found


def install(record: str | None = None) -> Any:
    """Install the mapping in this rank and return the torch-function mode to enter around the script;
    ``record`` is the file a refusal is written to before it is raised."""
    global _record_path
    import torch

    _record_path = record
    _patch_cuda()
    _patch_distributed()
    _patch_wrappers()
    _patch_amp()
    _patch_extensions()
    _patch_cpu_stream()
    _patch_unmappable()
    set_default, load = torch.set_default_device, torch.load
    torch.set_default_device = lambda device: set_default(_cpu(device))

    def load_(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        return load(f, _cpu(map_location), *args, **kwargs)  # a checkpoint mapped to "cuda:N" loads on the CPU

    torch.load = load_
    _patch_module()
    return _mode_class()()


def _patch_cpu_stream() -> None:
    """``torch.cpu.Stream`` as the CUDA code paths use it: FSDP1 with ``CPUOffload(offload_params=True)`` calls
    ``current_stream().synchronize()`` after backward, which the CPU stream lacks (2.13, 2.14.1); CPU work is
    synchronous, so it is satisfied already, as is ``query()``."""
    import torch

    stream = getattr(torch.cpu, "Stream", None)
    if stream is None:
        return
    if not hasattr(stream, "synchronize"):
        stream.synchronize = lambda self: None
    if not hasattr(stream, "query"):
        stream.query = lambda self: True


def _patch_unmappable() -> None:
    """Refuse what has no CPU counterpart that keeps its meaning: ``SyncBatchNorm`` (torch runs it on CUDA only;
    plain BatchNorm would drop the cross-rank statistics) and a script that starts its own ranks
    (``torch.multiprocessing.spawn`` / ``start_processes``: the mapping lives in the ranks the harness starts, not in
    processes the script spawns)."""
    import torch
    import torch.multiprocessing as tmp

    def sync_bn(self: Any, *args: Any, **kwargs: Any) -> None:  # also what convert_sync_batchnorm builds
        raise refuse("torch.nn.SyncBatchNorm (CUDA only in torch; BatchNorm would not sync statistics)")

    torch.nn.SyncBatchNorm.__init__ = sync_bn

    def own_ranks(*args: Any, **kwargs: Any) -> Any:
        raise refuse(
            "the script starts its own ranks (torch.multiprocessing.spawn); run the worker function as the "
            "script's main instead, with rank and world size from the environment, as under torchrun"
        )

    tmp.spawn = tmp.start_processes = own_ranks


def _patch_module() -> None:
    """``Module.to(0)`` / ``.to("cuda")`` / ``.to_empty(device="cuda")`` on the CPU (``Module.cuda()`` goes
    through ``Tensor.cuda``, which the mode maps)."""
    from torch import nn

    to, to_empty = nn.Module.to, nn.Module.to_empty

    def to_(self: Any, *args: Any, **kwargs: Any) -> Any:
        if "device" in kwargs:
            kwargs["device"] = _cpu(kwargs["device"])
        return to(self, *(_cpu(a) for a in args), **kwargs)

    def to_empty_(self: Any, *, device: Any, recurse: bool = True) -> Any:
        return to_empty(self, device=_cpu(device), recurse=recurse)

    nn.Module.to, nn.Module.to_empty = to_, to_empty_


def main(argv: list[str] | None = None) -> int:
    """``cpu_dry.py --rundir DIR -- SCRIPT.py ARGS``: the script's exit code under the mapping."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 4 or argv[0] != "--rundir" or argv[2] != "--":
        print("usage: cpu_dry.py --rundir DIR -- SCRIPT.py [ARGS...]", file=sys.stderr)
        return 2
    rundir, script, args = argv[1], argv[3], argv[4:]
    rank = os.environ.get("RANK", "0")
    mode = install(os.path.join(rundir, f"rank{rank}.dryrun"))
    run_script = load_sibling("worker").run_script
    with mode:
        return run_script(script, os.path.join(rundir, f"rank{rank}.tb"), args)


if __name__ == "__main__":
    sys.exit(main())
