"""The largest micro-batch (or sequence length) that fits a GPU: ``fsdp-skill plan --max-batch`` / ``--max-seq``.

Each probe is a plan (:func:`fsdp_skill.core.plan.report.plan_memory`) of the same setting at another value, and a
value *fits* when its row's fit verdict is ``fits``: the measured peak plus the high end of every estimate (CUDA
context, NCCL buffers, fragmentation) within ``gpu_memory``. The search assumes the peak does not fall as the value
grows (true of a training step: activations grow with tokens). It needs few planner runs: the peak is close to
affine in the batch and in the sequence length, so each run plans the value where the line through the nearest
measured values meets the memory (and its two neighbours), plus a safeguard (the midpoint of the bracket, or eight
times the largest fit while nothing fails yet) for where the peak bends; a run plans at most 4 values. The answer
is always two measured rows, never a prediction: the value that fits and the next one up that does not (or the
limit, when even it fits).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from fsdp_skill.core.plan.models import LargestFit, PlanReport, Probe
from fsdp_skill.core.plan.spec import MAX_BATCH, MAX_SEQ, Setting
from fsdp_skill.errors import InvalidArgument

Key = Literal["batch", "seq"]
LIMITS: dict[str, int] = {"batch": MAX_BATCH, "seq": MAX_SEQ}
LOWEST: dict[str, int] = {"batch": 1, "seq": 2}  # the fields' own lower bounds (spec.RunKnobs)
MAX_ROUNDS = 12  # planner runs at most (each of at most 4 values); interpolation usually ends in 3-5


def largest_fitting(
    base: Setting, key: Key, gpu_memory: int, plan: Callable[[list[Setting]], PlanReport]
) -> tuple[LargestFit, PlanReport]:
    """The largest ``key`` (``batch`` or ``seq``) of ``base`` whose plan fits ``gpu_memory`` bytes, and the plan at
    that value (or, where even the lowest value does not fit, the plan at the lowest).

    ``plan(settings)`` plans a list of settings in one child run (each row with its fit verdict for ``gpu_memory``);
    it raises what :func:`~fsdp_skill.core.plan.report.plan_memory` raises. Raises InvalidArgument for a bad key or
    a non-positive ``gpu_memory``."""
    if key not in LIMITS:
        raise InvalidArgument(f"the largest value can be searched for batch or seq, not {key!r}")
    if gpu_memory <= 0:
        raise InvalidArgument(f"gpu_memory({gpu_memory}) must be > 0 bytes")
    probes: dict[int, Probe] = {}
    reports: dict[int, PlanReport] = {}
    rounds = 0

    def run(values: list[int]) -> None:
        nonlocal rounds
        todo = sorted({v for v in values if LOWEST[key] <= v <= LIMITS[key] and v not in probes})
        if not todo:
            return
        rounds += 1
        report = plan([base.model_copy(update={key: v}) for v in todo])
        for v, row in zip(todo, report.rows, strict=True):
            assert row.fit is not None  # plan() gives every row a verdict for gpu_memory
            probes[v] = Probe(value=v, device_peak_bytes=row.device_peak_bytes, status=row.fit.status)
            reports[v] = report.model_copy(update={"rows": [row]})

    def fits(v: int) -> bool:
        return probes[v].status == "fits"

    low, limit = LOWEST[key], LIMITS[key]
    run([low, 2 * low])
    if not fits(low):
        return _result(key, gpu_memory, None, low, probes, rounds), reports[low]
    target = _peak_budget(gpu_memory, reports[low])  # the largest device peak whose verdict is "fits"
    while rounds < MAX_ROUNDS:
        good = max(v for v in probes if fits(v))
        above = [v for v in probes if v > good and not fits(v)]
        bad = min(above) if above else None
        if (bad is not None and bad == good + 1) or (bad is None and good >= limit):
            break
        if bad is None:  # extrapolate from the two largest values that fit; gallop too, in case it is too low
            a, b = sorted(v for v in probes if fits(v))[-2:]
            guess = _interpolate(probes[a], probes[b], target, limit)
            values = [guess - 1, guess, guess + 1, min(limit, 8 * good)]
        else:  # interpolate between the bracket's ends, and halve it too, in case the peak bends
            guess = _interpolate(probes[good], probes[bad], target, limit)
            guess = min(max(guess, good + 1), bad - 1)
            values = [guess - 1, guess, guess + 1, (good + bad) // 2]
        run([v for v in values if v > good and (bad is None or v < bad)])
    good = max(v for v in probes if fits(v))
    above = [v for v in probes if v > good and not fits(v)]
    return _result(key, gpu_memory, good, min(above) if above else None, probes, rounds), reports[good]


def _peak_budget(gpu_memory: int, report: PlanReport) -> float:
    """The device peak (bytes) at which a row's verdict stops being ``fits``: the GPU's memory less the fixed
    estimates (CUDA context, NCCL buffers) and the fragmentation share of the peak that the verdict adds."""
    from fsdp_skill.core.plan.advice import FRAGMENTATION_HIGH

    fixed = sum(e.high_bytes for e in report.estimates if "fragmentation" not in e.name)
    return (gpu_memory - fixed) / (1 + FRAGMENTATION_HIGH)


def _interpolate(a: Probe, b: Probe, target: float, limit: int) -> int:
    """The value where the line through probes ``a`` and ``b`` (value, device peak) reaches ``target`` bytes
    (``limit`` where the peak does not grow between them)."""
    slope = (b.device_peak_bytes - a.device_peak_bytes) / (b.value - a.value)
    if slope <= 0:
        return limit
    return int(min(limit, a.value + (target - a.device_peak_bytes) / slope))


def _result(key: str, gpu_memory: int, value: int | None, above: int | None, probes: dict[int, Probe], rounds: int) -> LargestFit:
    return LargestFit(
        key=key,
        value=value,
        next_value=above,
        gpu_memory_bytes=gpu_memory,
        limit=LIMITS[key],
        probes=[probes[v] for v in sorted(probes)],
        child_runs=rounds,
    )
