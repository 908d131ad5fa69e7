"""A step-time ESTIMATE for a planned row of the built-in transformer: ``fsdp-skill plan --gpu NAME``.

Nothing here is measured (the plan runs on fake tensors on the CPU). Two ranges, each from stated figures:

- compute: the step's FLOPs on one rank over the GPU's dense peak for the step's matmul dtype, at an assumed
  utilisation of :data:`UTILISATION` (30-50% of peak: an assumption, not a measurement; MFU is what a real run
  reports). FLOPs are model FLOPs in the convention torchtitan and PaLM use: 2 per multiply-add of every matmul
  (the embedding is a lookup: none), the attention's scores and weighted sum counted whole (not halved for the
  causal mask), 3x the forward for forward + backward; plus what activation checkpointing recomputes (per-block and
  selective-N: the checkpointed blocks' forward again; selective-op: the blocks' matmuls the policy does not keep:
  wk, wo and w3, the 2nd, 4th and 6th of the block's seven; the attention is kept).
- communication: the bytes FSDP2's collectives move through each rank (all-gather of the parameters in
  ``param_dtype`` for the forward and, with ``reshard_after_forward``, again for the backward; reduce-scatter of the
  gradients in ``reduce_dtype``; with HSDP an all-reduce of the shards across replicas), each times (n-1)/n as a
  ring moves it, over one link's bandwidth in one direction at an assumed :data:`LINK_EFFICIENCY` (60-80%) of it:
  NVLink within a node of :data:`GPUS_PER_NODE` GPUs, else one 400 Gb/s network port per GPU.

The step is between max(compute, communication) (FSDP2 overlapping them fully) and their sum (no overlap).
Sources: NVIDIA's data sheets (URLs in :data:`GPUS`; their Tensor Core figures are given with sparsity, twice the
dense rate used here), torchtitan's FLOP count (``get_num_flop_per_token``), and PaLM's appendix B (MFU).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from fsdp_skill.core.plan.spec import Setting, TransformerSpec
from fsdp_skill.errors import InvalidArgument

UTILISATION = (0.30, 0.50)  # assumed share of the dense peak a training step reaches (low, high)
LINK_EFFICIENCY = (0.60, 0.80)  # assumed share of a link's one-direction bandwidth a ring collective reaches
GPUS_PER_NODE = 8
NETWORK_GB_S = 50.0  # one 400 Gb/s port per GPU (InfiniBand NDR / 400G Ethernet), one direction, GB/s
NETWORK_SOURCE = "https://www.nvidia.com/en-us/networking/infiniband-adapters/ (ConnectX-7: 400 Gb/s per port)"
FLOPS_SOURCES = (
    "model FLOPs counted per matmul (2 per multiply-add, 3x the forward for a training step, the attention's two "
    "products counted whole), the convention of torchtitan's get_num_flop_per_token (github.com/pytorch/torchtitan) "
    "and PaLM's appendix B (arxiv.org/abs/2204.02311); the embedding (a lookup) counts none"
)


@dataclass(frozen=True)
class Gpu:
    """Dense peak TFLOP/s (bf16/fp16 Tensor Core; fp32 without TF32, torch's default for matmuls) and the NVLink
    bandwidth in one direction (GB/s), from the data sheet at ``source``."""

    name: str
    bf16_tflops: float
    fp32_tflops: float
    nvlink_gb_s: float
    source: str
    link: str = "NVLink"


GPUS: dict[str, Gpu] = {
    "a100": Gpu("A100 SXM", 312.0, 19.5, 300.0, "https://www.nvidia.com/en-us/data-center/a100/"),
    "h100": Gpu("H100 SXM", 989.4, 66.9, 450.0, "https://www.nvidia.com/en-us/data-center/h100/"),
    "h100-pcie": Gpu(
        "H100 PCIe",
        756.0,
        51.0,
        64.0,
        "https://www.nvidia.com/en-us/data-center/h100/",
        "PCIe Gen5 x16 (128 GB/s both ways; an NVLink bridge joins pairs only)",
    ),
    "h200": Gpu("H200 SXM", 989.4, 66.9, 450.0, "https://www.nvidia.com/en-us/data-center/h200/"),
}


class StepTime(BaseModel):
    """The step-time estimate of one row (seconds, FLOPs, bytes); every figure an estimate from stated assumptions."""

    gpu: str = Field(description="The GPU the estimate is for")
    model_flops: float = Field(description="Forward + backward FLOPs of one rank's micro-batch (no recomputation)")
    recompute_flops: float = Field(description="FLOPs activation checkpointing adds (the recomputed forward)")
    compute_seconds: tuple[float, float] = Field(description="FLOPs / (dense peak x utilisation), at 50% and 30%")
    comm_bytes: int = Field(description="Bytes the step's FSDP2 collectives move through one rank")
    comm_seconds: tuple[float, float] = Field(description="comm_bytes / (link bandwidth x efficiency), at 80% and 60%")
    step_seconds: tuple[float, float] = Field(
        description="max(compute, comm) at the high ends of utilisation and efficiency .. compute + comm at the low ends"
    )
    tokens_per_second: tuple[float, float] = Field(description="This rank's tokens over step_seconds (low, high)")
    basis: list[str] = Field(description="Where each figure comes from")


def gpu_named(name: str) -> Gpu:
    """The GPU of ``name`` (a100, h100, h100-pcie, h200; case and '_' ignored); raises InvalidArgument."""
    key = name.strip().lower().replace("_", "-")
    key = {"h100-sxm": "h100", "a100-sxm": "a100", "h200-sxm": "h200"}.get(key, key)
    if key not in GPUS:
        raise InvalidArgument(f"--gpu {name!r}: one of {', '.join(GPUS)} (the data-sheet figures the estimate uses)")
    return GPUS[key]


def block_matmul_flops(t: TransformerSpec, tokens: int) -> tuple[float, float]:
    """(all, not kept by selective-op) forward FLOPs of one block's seven matmuls for ``tokens`` tokens."""
    hd = t.dim // t.heads
    wq, wk, wv, wo = t.dim * t.heads * hd, t.dim * t.kv_heads * hd, t.dim * t.kv_heads * hd, t.heads * hd * t.dim
    w1 = w3 = w2 = t.dim * t.ffn
    every = 2 * tokens * (wq + wk + wv + wo + w1 + w3 + w2)
    recomputed = 2 * tokens * (wk + wo + w3)  # the 2nd, 4th and 6th matmul of the block in the order it runs them
    return float(every), float(recomputed)


def step_time(t: TransformerSpec, s: Setting, gpu: Gpu, params: int) -> StepTime:
    """The estimate for setting ``s`` of transformer ``t`` (``params`` parameters, as the plan counted them) on
    ``gpu`` (see the module docstring)."""
    tokens = s.batch * s.seq
    hd = t.dim // t.heads
    block_mm, not_kept = block_matmul_flops(t, tokens)
    attention = 2.0 * 2 * s.batch * t.heads * s.seq * s.seq * hd  # scores and weighted sum, per block, forward
    block_forward = block_mm + attention
    forward = t.layers * block_forward + 2.0 * tokens * t.dim * t.vocab  # + the output projection
    model_flops = 3 * forward
    ac = s.activation_checkpointing
    if ac == "per-block":
        recompute = t.layers * block_forward
    elif ac == "selective-op":
        recompute = t.layers * not_kept
    elif ac.startswith("selective-"):
        every = int(ac.split("-", 1)[1])
        recompute = (t.layers // every) * block_forward
    else:
        recompute = 0.0
    low_precision = s.param_dtype in ("bf16", "fp16")
    peak = (gpu.bf16_tflops if low_precision else gpu.fp32_tflops) * 1e12
    compute = ((model_flops + recompute) / (peak * UTILISATION[1]), (model_flops + recompute) / (peak * UTILISATION[0]))

    shard = s.mesh[-1]
    replicas = s.mesh[0] if len(s.mesh) == 2 else 1
    p_bytes = 2 if low_precision else 4
    r_bytes = {"bf16": 2, "fp16": 2, "fp32": 4}.get(s.reduce_dtype or "", p_bytes)
    gathers = 2 if s.reshard_after_forward is not False else 1
    ring = (shard - 1) / shard
    shard_bytes = gathers * params * p_bytes * ring + params * r_bytes * ring
    replica_bytes = 2 * (replicas - 1) / replicas * params / shard * r_bytes if replicas > 1 else 0.0

    def link_of(group: int) -> tuple[float, str]:
        if group <= GPUS_PER_NODE:
            return gpu.nvlink_gb_s, f"{gpu.link} {gpu.nvlink_gb_s:g} GB/s one way ({gpu.source})"
        return NETWORK_GB_S, f"the network, {NETWORK_GB_S:g} GB/s one way per GPU ({NETWORK_SOURCE})"

    # the shard group's ring stays in a node when it has GPUS_PER_NODE or fewer ranks; replicas span nodes once
    # the whole mesh does
    shard_link, shard_name = link_of(shard)
    replica_link, replica_name = link_of(s.world_size)
    comm_s = tuple(
        shard_bytes / (shard_link * 1e9 * eff) + replica_bytes / (replica_link * 1e9 * eff)
        for eff in (LINK_EFFICIENCY[1], LINK_EFFICIENCY[0])
    )
    comm = shard_bytes + replica_bytes
    links = f"shard group of {shard}: {shard_name}" + (f"; replicas: {replica_name}" if replicas > 1 else "")
    step = (max(compute[0], comm_s[0]), compute[1] + comm_s[1])
    return StepTime(
        gpu=gpu.name,
        model_flops=model_flops,
        recompute_flops=recompute,
        compute_seconds=compute,
        comm_bytes=int(comm),
        comm_seconds=(comm_s[0], comm_s[1]),
        step_seconds=step,
        tokens_per_second=(tokens / step[1], tokens / step[0]),
        basis=[
            f"{gpu.name}: {gpu.bf16_tflops:g} TFLOP/s dense bf16/fp16 ({gpu.fp32_tflops:g} fp32), from {gpu.source} "
            "(the data sheet's Tensor Core figures are with sparsity, twice these)",
            f"utilisation {UTILISATION[0]:.0%}-{UTILISATION[1]:.0%} of that peak: assumed, not measured",
            FLOPS_SOURCES,
            f"collectives: {links}, at an assumed {LINK_EFFICIENCY[0]:.0%}-{LINK_EFFICIENCY[1]:.0%} of the "
            f"bandwidth; {GPUS_PER_NODE} GPUs a node assumed",
            "step between max(compute, communication) (full overlap, as FSDP2 prefetching aims for) and their sum",
        ],
    )
