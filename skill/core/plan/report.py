"""The plan's report: run the child for every setting and add the fit verdict, estimates and suggestions.

    plan_memory(model=TransformerSpec | factory="path.py:fn", settings=[Setting, ...]) -> PlanReport

The measuring happens in a child process (:mod:`.runner` runs :mod:`.child` under the target
interpreter); this module only validates, runs it and adds the fit verdict, estimates and suggestions
(:mod:`.advice`).  Importing it never imports torch.
"""

from __future__ import annotations

import shlex

from fsdp_skill.core.plan.advice import MEASURED, estimates, fit, not_measured, suggestions
from fsdp_skill.core.plan.models import PlanReport, PlanRow
from fsdp_skill.core.plan.spec import Setting, TransformerSpec
from fsdp_skill.errors import HarnessError, InvalidArgument

__all__ = ["plan_memory", "PlanReport", "Setting", "TransformerSpec"]


def plan_memory(
    settings: list[Setting],
    *,
    transformer: TransformerSpec | None = None,
    factory: str | None = None,
    input_factory: str | None = None,
    gpu_memory: int | None = None,
    timeout: float = 600.0,
    command: str = "",
) -> PlanReport:
    """Plan every setting for the built-in ``transformer`` or the user's ``factory`` (``path.py:fn`` or
    ``pkg.mod:fn``, called with no arguments under FakeTensorMode; CLI only: it runs user code).

    ``gpu_memory`` (bytes) adds a fit verdict per row; ``timeout`` (seconds) bounds the whole plan.
    Raises InvalidArgument (no model or two, a bad setting, a model the child cannot build or step) and
    HarnessError (torch missing, the child crashed or timed out).
    """
    from fsdp_skill.core.plan.runner import run_child

    if (transformer is None) == (factory is None):
        raise InvalidArgument("give exactly one model: --transformer SPEC or --model FILE.py:FUNCTION")
    if not settings:
        raise InvalidArgument("no setting to plan")
    if gpu_memory is not None and gpu_memory <= 0:
        raise InvalidArgument(f"gpu_memory({gpu_memory}) must be > 0 bytes")
    model = {"transformer": transformer.check().model_dump()} if transformer else {"factory": factory, "input": input_factory}
    results = run_child({"model": model, "settings": [s.check().model_dump() for s in settings]}, timeout=timeout)
    if len(results) != len(settings):
        raise HarnessError(f"the planner returned {len(results)} result(s) for {len(settings)} setting(s)")
    rows = [_row(s, r, gpu_memory, bool(input_factory)) for s, r in zip(settings, results, strict=True)]
    name = f"transformer {transformer.text()}" if transformer else factory
    return PlanReport(
        model=name,
        transformer=transformer,
        params=results[0]["params"],
        rows=rows,
        gpu_memory_bytes=gpu_memory,
        estimates=estimates(max(rows, key=lambda r: r.device_peak_bytes)),
        measured=MEASURED,
        not_measured=not_measured(rows),
        suggestions=suggestions(rows, bool(input_factory)),
        command=command or command_line(settings, transformer, factory, gpu_memory),
        torch_version=results[0]["torch_version"],
    )


def _row(setting: Setting, r: dict, gpu_memory: int | None, custom_input: bool) -> PlanRow:
    device_peak = r["peak_bytes"]
    if setting.cpu_offload:
        if r.get("device_peak_bytes") is None:
            raise HarnessError(
                "this torch's FSDPMemTracker does not let the planner measure the GPU's own peak "
                "under --cpu-offload; plan without it"
            )
        device_peak = r["device_peak_bytes"]
    row = PlanRow(
        setting=setting,
        label=setting.label(custom_input),
        world_size=r["world_size"],
        peak_bytes=r["peak_bytes"],
        device_peak_bytes=device_peak,
        device_peak_by_category=r.get("device_peak_by_category"),
        peak_phase=r["peak_phase"],
        peak_by_category=r["peak_by_category"],
        sharded_param_bytes=r["sharded_param_bytes"],
        sharded_grad_bytes=r["sharded_grad_bytes"],
        optimizer_state_bytes=r["optimizer_state_bytes"],
        blocks=r["blocks"],
        seconds=round(r["seconds"], 3),
    )
    if gpu_memory is not None:
        row.fit = fit(row, gpu_memory)
    return row


def command_line(
    settings: list[Setting], transformer: TransformerSpec | None, factory: str | None, gpu_memory: int | None
) -> str:
    """An ``fsdp-skill plan`` command line for the first setting (a ready command for answers and reports)."""
    s = settings[0]
    parts = ["fsdp-skill", "plan"]
    parts += ["--transformer", transformer.text()] if transformer else ["--model", factory or ""]
    parts += ["--mesh", "x".join(map(str, s.mesh))] if len(s.mesh) == 2 else ["--world-size", str(s.world_size)]
    parts += [
        "--batch",
        str(s.batch),
        "--seq",
        str(s.seq),
        "--param-dtype",
        s.param_dtype or "none",
        "--reduce-dtype",
        s.reduce_dtype or "none",
        "--optimizer",
        s.optimizer,
        "--activation-checkpointing",
        s.activation_checkpointing,
        "--reshard-after-forward",
        str(s.reshard_after_forward).lower(),
    ]
    parts += ["--cpu-offload"] if s.cpu_offload else []
    parts += ["--gpu-memory", f"{gpu_memory / 2**30:g}GiB"] if gpu_memory else []
    return shlex.join(parts)
