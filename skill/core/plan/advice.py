"""What a plan adds to the measured figures: the estimates it does not measure, the fit verdict, the
knobs that would lower the peak (each with its knowledge section) and the honesty lines."""

from __future__ import annotations

from fsdp_skill.core.plan.models import Estimate, Fit, PlanRow, Suggestion
from fsdp_skill.core.plan.spec import Setting

GIB, MIB = 2**30, 2**20
FRAGMENTATION_HIGH = 0.15  # share of the peak

MEASURED = (
    "Measured: FSDP2 (fully_shard) as implemented in the installed torch, on this model, acting as one rank "
    "of the fake process group with fake tensors (nothing allocated), with FSDPMemTracker over one "
    "steady-state training step (optimizer state created first): every tensor the step holds at its peak, "
    "by category. The plan runs on the CPU device type: FSDP2's sharding, all-gather and reduce-scatter "
    "buffers and the tensors of the step are the same on a GPU, but CUDA stream overlap is not modelled."
)
NOT_MEASURED = [
    "CUDA context and kernel images, NCCL communicator buffers and caching-allocator fragmentation: not tensors, so "
    "not measured; rough ranges are given separately as estimates",
    "memory of other processes on the GPU, CUDA graphs, torch.compile workspaces and cuBLAS/cuDNN workspaces",
    "collectives are counted as NCCL runs them, in place in FSDP2's own buffers (the fake backend completes "
    "each at once; FSDP2 frees its buffers at the same points either way). gloo, the CPU backend, also copies "
    "each reduce-scatter's whole input first; the plan does not count that copy (tests/test_plan_exact.py: "
    "against real gloo runs the plan equals MemTracker's peak without it to the byte, and was 0-14% under the "
    "peak with it on a tiny model)",
    "FSDP1 (FullyShardedDataParallel) is out of scope: its FlatParameter memory is not what FSDP2 allocates",
    "fake tensors carry shapes and dtypes but do not check every rule a real kernel does (e.g. int64 tokens fed to "
    "a bf16 nn.Linear plan fine and fail for real): run your step once for real at a small size",
]
OFFLOAD_NOTE = (
    "with cpu_offload the plan runs on one device type and counts the sharded parameters, gradients and "
    "optimizer state as host memory; device_peak_bytes is the step's own peak of everything else, measured "
    "op by op. On a GPU FSDP2 also copies a group's fp32 parameter shards to the GPU before its all-gather "
    "and holds each reduce-scatter output there until it is copied back: a 1/world_size share of one FSDP "
    "group at a time, not counted (the root group, with the embedding and output layer, is the largest: "
    "about 0.5 GiB at 8B on 8 ranks)"
)


RESHARD_INT_NOTE = (
    "with an integer reshard_after_forward, FSDPMemTracker counts each block's smaller copy of its "
    "parameters, kept from forward to backward, under activation (it is in the peak either way)"
)


SAC_OP_NOTE = (
    "selective-op: the outputs the policy keeps (matmuls but every second one, the attention kernel's, "
    "reduce-scatters') are held in the checkpoint's own cache, outside autograd's saved tensors, so "
    "FSDPMemTracker counts them under temp, not activation; the plan runs the CPU attention kernel "
    "(aten._scaled_dot_product_flash_attention_for_cpu) where a GPU runs flash or memory-efficient attention, "
    "whose kept outputs (the output and a log-sum-exp per query) are of about the same sizes (the memory-efficient "
    "kernel pads the log-sum-exp to a multiple of 32 positions)"
)


def not_measured(rows: list[PlanRow]) -> list[str]:
    """The honesty lines of a plan of ``rows``: NOT_MEASURED, plus a note on categories a setting shifts."""
    ints = any(not isinstance(r.setting.reshard_after_forward, bool) for r in rows)
    offload = any(r.setting.cpu_offload for r in rows)
    sac_op = any(r.setting.activation_checkpointing == "selective-op" for r in rows)
    return (
        NOT_MEASURED
        + ([RESHARD_INT_NOTE] if ints else [])
        + ([OFFLOAD_NOTE] if offload else [])
        + ([SAC_OP_NOTE] if sac_op else [])
    )


def estimates(row: PlanRow) -> list[Estimate]:
    """Rough ranges (bytes, per GPU) of what the plan does not measure, for ``row``; marked as estimates."""
    comms = 2 if len(row.setting.mesh) == 2 else 1
    return [
        Estimate(
            name="CUDA context (estimate)",
            low_bytes=300 * MIB,
            high_bytes=1 * GIB,
            basis="the CUDA runtime's context and loaded kernels of a PyTorch process, outside the caching "
            "allocator (torch.cuda.memory_allocated does not count it: docs.pytorch.org/docs/stable/"
            "generated/torch.cuda.memory.memory_allocated.html); the docs give no size: this range is what "
            "users report (e.g. 781 MB for a bare process, github.com/pytorch/pytorch/issues/34323) and "
            "varies with GPU, driver, CUDA and CUDA_MODULE_LOADING",
        ),
        Estimate(
            name=f"NCCL buffers (estimate, {comms} communicator{'s' if comms > 1 else ''})",
            low_bytes=comms * 200 * MIB,
            high_bytes=comms * 1 * GIB,
            basis="per communicator: NCCL_BUFFSIZE (default 4 MiB, docs.nvidia.com/deeplearning/nccl/"
            "user-guide/docs/env.html#nccl-buffsize) per channel and peer connection, plus proxy and NVLS "
            "buffers; grows with channels and peers. The range is our estimate, not a documented figure",
        ),
        Estimate(
            name="allocator fragmentation (estimate)",
            low_bytes=0,
            high_bytes=int(row.device_peak_bytes * FRAGMENTATION_HIGH),
            basis="reserved minus allocated in PyTorch's caching allocator (docs.pytorch.org/docs/stable/"
            "notes/cuda.html#memory-management); 0-15% of the peak is our rule of thumb, not a documented "
            "figure; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True keeps it low",
        ),
    ]


def fit(row: PlanRow, gpu_memory: int) -> Fit:
    """The fit verdict of ``row`` for a GPU of ``gpu_memory`` bytes."""
    ests = estimates(row)
    low = row.device_peak_bytes + sum(e.low_bytes for e in ests)
    high = row.device_peak_bytes + sum(e.high_bytes for e in ests)
    status = "fits" if high <= gpu_memory else "tight" if low <= gpu_memory else "does not fit"
    return Fit(
        status=status,
        gpu_memory_bytes=gpu_memory,
        headroom_bytes=gpu_memory - row.device_peak_bytes,
        headroom_after_estimates_bytes=gpu_memory - high,
    )


BYTE_UNITS = ((GIB, "GiB"), (MIB, "MiB"), (2**10, "KiB"))


def format_bytes(n: int, unit: int | None = None, digits: int = 2) -> str:
    """Bytes in the unit given (one of BYTE_UNITS' factors), else the largest of GiB / MiB / KiB that ``n``
    reaches, with ``digits`` decimals (``49.31 GiB``, ``3.20 MiB``); below 1 KiB, ``512 B``."""
    for factor, name in BYTE_UNITS:
        if unit == factor or (unit is None and abs(n) >= factor):
            return f"{n / factor:.{digits}f} {name}"
    return f"{n} B"


def _gib(n: int) -> str:
    return format_bytes(n, digits=1)


def suggestions(rows: list[PlanRow], custom_input: bool = False) -> list[Suggestion]:
    """Knobs that would lower the peak of the largest row (and a row whose peak is in the optimizer step), each
    with the section that explains it (``custom_input``: the input came from the user's factory, so
    --batch/--seq do not apply)."""
    row = max(rows, key=lambda r: r.device_peak_bytes)
    s: Setting = row.setting
    cat = row.device_peak_by_category or row.peak_by_category
    out = []
    acts = cat.get("activation", 0) + cat.get("temp", 0)
    in_step = [(i, r) for i, r in enumerate(rows, 1) if r.peak_phase == "optimizer step" and not r.setting.cpu_offload]
    if in_step:  # the largest such row, named when the plan has several rows
        i, r = max(in_step, key=lambda ir: ir[1].device_peak_bytes)
        extra = r.peak_by_category.get("optimizer_state", 0) - r.optimizer_state_bytes
        where = f"row #{i}'s peak" if len(rows) > 1 else "the peak"
        out.append(
            Suggestion(
                text=f"{where} is in the optimizer step: the foreach {r.setting.optimizer} update's "
                f"temporaries add {_gib(max(extra, 0))} to the {_gib(r.optimizer_state_bytes)} of "
                "optimizer state (the plan models foreach=True, torch's default on CUDA); fused=True "
                "or foreach=False avoids most of them",
                section="offload/offload-optimizer-choice",
            )
        )
    if not row.blocks:
        out.append(
            Suggestion(
                text="the model has no nn.ModuleList of blocks, so fully_shard went on the root alone: "
                "every parameter is all-gathered at once. Keep the blocks in an nn.ModuleList (or "
                "call fully_shard on each block yourself) to gather one block at a time, and to "
                "plan per-block activation checkpointing",
                section="sharding/fully-shard-order-root",
            )
        )
    elif s.activation_checkpointing == "none" and acts:
        out.append(
            Suggestion(
                text=f"activation checkpointing per block (--activation-checkpointing per-block; selective-op or "
                f"selective-2 keep part of the activations for less recomputation, --sweep ac=none,selective-op,"
                f"selective-2,per-block compares them): activations and temporaries are {_gib(acts)} of the peak",
                section="model/ac-fsdp2",
            )
        )
    if s.reshard_after_forward is not True:
        out.append(
            Suggestion(
                text=f"--reshard-after-forward true frees each block's unsharded parameters after "
                f"forward (unsharded now {_gib(cat.get('unsharded_param', 0))})",
                section="sharding/fsdp2-reshard-after-forward",
            )
        )
    if s.param_dtype in (None, "fp32"):
        out.append(
            Suggestion(
                text="--param-dtype bf16 --reduce-dtype fp32 halves the all-gathered parameters and the activations",
                section="mixed-precision/fsdp2-bf16-fp32-reduce",
            )
        )
    held = row.sharded_param_bytes + row.sharded_grad_bytes + row.optimizer_state_bytes
    if not s.cpu_offload:
        out.append(
            Suggestion(
                text=f"--cpu-offload moves the sharded parameters, gradients and optimizer state "
                f"({_gib(held)}) to host memory, at a cost in step time",
                section="offload/fsdp2-cpu-offload-policy",
            )
        )
    if len(s.mesh) == 2:
        out.append(
            Suggestion(
                text=f"HSDP keeps a full copy per replica: shard over more ranks (shard dim "
                f"{s.mesh[1]} now) to divide the {_gib(held)} of sharded state further",
                section="sharding/hybrid-sharding-hsdp",
            )
        )
    if not s.cpu_offload:  # offloaded, the sharded state is not on the GPU: more ranks do not lower its peak
        out.append(
            Suggestion(
                text="more ranks divide the parameters, gradients and optimizer state, not the "
                "activations (try --sweep world-size=...)",
                section="parallelism/memory-per-parameter",
            )
        )
    if cat.get("activation", 0) >= 0.05 * row.device_peak_bytes:
        smaller = "a smaller input from your --input factory" if custom_input else "a smaller --batch or --seq"
        out.append(
            Suggestion(
                text=f"{smaller} (with gradient accumulation) lowers the activations ({_gib(cat['activation'])} at the peak)",
                section="offload/offload-alternatives",
            )
        )
    return out
