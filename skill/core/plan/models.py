"""Typed results of a plan (pydantic; every byte figure is an int of bytes, times are seconds)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from fsdp_skill.core.plan.spec import Setting, TransformerSpec
from fsdp_skill.core.plan.steptime import StepTime

CATEGORY_ORDER = (
    "sharded_param",
    "unsharded_param",
    "buffer",
    "sharded_grad",
    "unsharded_grad",
    "activation",
    "temp",
    "all_gather",
    "reduce_scatter",
    "optimizer_state",
    "inputs",
)


class Fit(BaseModel):
    """The fit verdict of one row against the GPU's memory."""

    status: Literal["fits", "tight", "does not fit"] = Field(
        description="fits: peak + the high estimates fit; tight: only peak + the low estimates fit; else does not fit"
    )
    gpu_memory_bytes: int = Field(description="The GPU memory the verdict is for, bytes")
    headroom_bytes: int = Field(description="gpu_memory - measured peak, bytes (negative: over)")
    headroom_after_estimates_bytes: int = Field(description="gpu_memory - peak - the high end of the estimates, bytes")


class PlanRow(BaseModel):
    """One planned setting: the per-rank peak by category, where it happens, and the steady sharded state."""

    setting: Setting = Field(description="The run that was planned")
    label: str = Field(description="The setting in a few words, for a table row")
    world_size: int = Field(description="Ranks in the mesh")
    peak_bytes: int = Field(description="Peak tensor memory of the planned rank during one steady-state step, bytes")
    device_peak_bytes: int = Field(
        description="Peak on the GPU, bytes: peak_bytes, or with cpu_offload the step's "
        "own peak of everything but the sharded parameters, gradients and "
        "optimizer state (host memory), measured op by op"
    )
    device_peak_by_category: dict[str, int] | None = Field(
        None, description="With cpu_offload: bytes per category at the GPU's own peak (host categories 0)"
    )
    peak_phase: Literal["forward", "backward", "optimizer step"] = Field(
        description="Phase of the step whose end first saw the peak (with cpu_offload: the GPU's own peak, device_peak_bytes)"
    )
    peak_by_category: dict[str, int] = Field(description="Bytes per FSDPMemTracker category at the peak")
    sharded_param_bytes: int = Field(description="This rank's sharded parameters after the step, bytes")
    sharded_grad_bytes: int = Field(description="This rank's sharded gradients after backward, bytes")
    optimizer_state_bytes: int = Field(description="This rank's optimizer state, bytes")
    blocks: int = Field(description="Modules given their own fully_shard (the largest nn.ModuleList's children)")
    seconds: float = Field(description="Time to plan this row, seconds")
    fit: Fit | None = Field(None, description="Fit verdict (with gpu_memory)")
    step_time: StepTime | None = Field(
        None, description="With --gpu: a step-time estimate from stated peak FLOPs and bandwidth (not measured)"
    )


class Estimate(BaseModel):
    """Memory the plan does not measure, as a documented rough range (an estimate, not a measurement)."""

    name: str = Field(description="What it is")
    low_bytes: int = Field(description="Low end of the range, bytes")
    high_bytes: int = Field(description="High end of the range, bytes")
    basis: str = Field(description="Where the range comes from")


class Suggestion(BaseModel):
    """A knob that lowers the peak, with the knowledge section that explains it."""

    text: str = Field(description="What to change and what it does here")
    section: str = Field(description="Knowledge section id (fsdp-skill show ID)")


class Probe(BaseModel):
    """One value a largest-fit search planned (:mod:`fsdp_skill.core.plan.search`)."""

    value: int = Field(description="The batch or sequence length planned")
    device_peak_bytes: int = Field(description="The planned GPU peak at that value, bytes")
    status: Literal["fits", "tight", "does not fit"] = Field(description="Its fit verdict")


class LargestFit(BaseModel):
    """The answer of ``plan --max-batch`` / ``--max-seq``: the largest value whose plan fits, from measured rows."""

    key: Literal["batch", "seq"] = Field(description="What was searched: the micro-batch per rank or the sequence length")
    value: int | None = Field(description="The largest value that fits (None: not even the lowest fits)")
    next_value: int | None = Field(
        description="The smallest value above it that was planned and does not fit (None: value is the limit)"
    )
    gpu_memory_bytes: int = Field(description="The GPU memory the search fitted to, bytes")
    limit: int = Field(description="The highest value the search may try (the request's own limit)")
    probes: list[Probe] = Field(description="Every value planned, in order")
    child_runs: int = Field(description="Planner child runs the search took")


class PlanReport(BaseModel):
    """``fsdp-skill plan --json`` / ``POST /v1/plan`` / MCP ``plan_memory``."""

    model: str = Field(description="The planned model: 'transformer layers=...' or the factory reference")
    transformer: TransformerSpec | None = Field(None, description="The built-in transformer's sizes, when used")
    params: int = Field(description="Parameters of the model (unsharded)")
    rows: list[PlanRow] = Field(description="One row per planned setting")
    gpu_memory_bytes: int | None = Field(None, description="GPU memory for the fit verdicts, bytes")
    estimates: list[Estimate] = Field(description="Not measured; rough documented ranges per GPU (estimates)")
    measured: str = Field(description="What the figures are")
    not_measured: list[str] = Field(description="What the figures leave out")
    suggestions: list[Suggestion] = Field(description="Knobs that lower the peak, each with its knowledge section")
    command: str = Field(description="The fsdp-skill plan command line that reproduces this plan")
    torch_version: str = Field(description="torch that ran the plan (FSDP2 as implemented there)")
    largest: LargestFit | None = Field(
        None, description="With --max-batch / --max-seq: the search's answer (the rows are the plan at its value)"
    )
