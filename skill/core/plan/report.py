"""The plan's report: run the child for every setting and add the fit verdict, estimates and suggestions.

    plan_request(PlanRequest | LocalPlanRequest) -> PlanReport          what the CLI calls (now, in its thread)
    prepare_plan(request) -> PreparedPlan; run_plan(PreparedPlan)        the two halves: HTTP and MCP check the
                                                                         request, then queue the run (:mod:`.queue`)
    plan_memory([Setting, ...], transformer=TransformerSpec | factory="path.py:fn", ...) -> PlanReport

The measuring happens in a child process (:mod:`.runner` runs :mod:`.child` under the target
interpreter); this module only validates, runs it and adds the fit verdict, estimates and suggestions
(:mod:`.advice`).  Importing it never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fsdp_skill.core.plan.advice import MEASURED, estimates, fit, not_measured, suggestions
from fsdp_skill.core.plan.models import PlanReport, PlanRow
from fsdp_skill.core.plan.request import PlanKnobs, command_line
from fsdp_skill.core.plan.runner import DEFAULT_TIMEOUT_S, run_child
from fsdp_skill.core.plan.spec import Setting, TransformerSpec
from fsdp_skill.errors import HarnessError, InvalidArgument

__all__ = [
    "plan_request",
    "prepare_plan",
    "run_plan",
    "PreparedPlan",
    "plan_memory",
    "child_request",
    "PlanReport",
    "Setting",
    "TransformerSpec",
]


@dataclass(frozen=True)
class PreparedPlan:
    """A plan request read whole and checked (:func:`prepare_plan`): what :func:`run_plan` measures."""

    settings: list[Setting]
    transformer: TransformerSpec | None
    factory: str | None
    input_factory: str | None
    gpu_memory: int | None  # bytes, or None: no fit verdict
    timeout: float  # seconds for the whole plan
    command: str


def prepare_plan(request: PlanKnobs, *, command: str = "") -> PreparedPlan:
    """``request`` read whole and checked, without starting anything (microseconds: the doors call it before a
    plan is queued, so a bad request never waits); ``command``: the report's command line (default
    :meth:`~.request.PlanKnobs.command_line`).  Raises InvalidArgument with the numbers."""
    transformer, factory, input_factory = request.models()
    return PreparedPlan(
        settings=request.settings(),
        transformer=transformer,
        factory=factory,
        input_factory=input_factory,
        gpu_memory=request.gpu_bytes(),
        timeout=request.timeout_s(),
        command=command or request.command_line(),
    )


def run_plan(plan: PreparedPlan) -> PlanReport:
    """Measure a prepared plan in the planner's child (seconds to minutes; blocks).  Raises as :func:`plan_memory`."""
    return plan_memory(
        plan.settings,
        transformer=plan.transformer,
        factory=plan.factory,
        input_factory=plan.input_factory,
        gpu_memory=plan.gpu_memory,
        timeout=plan.timeout,
        command=plan.command,
    )


def plan_request(request: PlanKnobs, *, command: str = "", on_start: Callable[[int], None] | None = None) -> PlanReport:
    """Plan ``request`` now, in this thread (the CLI's door; HTTP and MCP queue theirs: :mod:`.queue`).
    ``command``: the report's command line (default :meth:`~.request.PlanKnobs.command_line`); ``on_start(n)`` is
    called once the request is read whole, before the child starts on its ``n`` settings.  Raises as
    :func:`prepare_plan` and :func:`plan_memory` do."""
    plan = prepare_plan(request, command=command)
    if on_start is not None:
        on_start(len(plan.settings))
    return run_plan(plan)


def child_request(
    settings: list[Setting], transformer: TransformerSpec | None, factory: str | None, input_factory: str | None
) -> dict[str, Any]:
    """The JSON document the planner's child reads on stdin (drawn in ``child.py``'s docstring): the model (the
    transformer's sizes, or the factory and input factory references) and every setting's fields."""
    model: dict[str, Any] = (
        {"transformer": transformer.check().model_dump()} if transformer else {"factory": factory, "input": input_factory}
    )
    return {"model": model, "settings": [s.check().model_dump() for s in settings]}


def plan_memory(
    settings: list[Setting],
    *,
    transformer: TransformerSpec | None = None,
    factory: str | None = None,
    input_factory: str | None = None,
    gpu_memory: int | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    command: str = "",
) -> PlanReport:
    """Plan every setting for the built-in ``transformer`` or the user's ``factory`` (``path.py:fn`` or
    ``pkg.mod:fn``, called with no arguments under FakeTensorMode; CLI only: it runs user code).

    ``gpu_memory`` (bytes) adds a fit verdict per row; ``timeout`` (seconds) bounds the whole plan.
    Raises InvalidArgument (no model or two, a bad setting, a model the child cannot build or step) and
    HarnessError (torch missing, the child crashed or timed out).
    """
    if (transformer is None) == (factory is None):
        raise InvalidArgument("give exactly one model: --transformer SPEC or --model FILE.py:FUNCTION")
    if not settings:
        raise InvalidArgument("no setting to plan")
    if gpu_memory is not None and gpu_memory <= 0:
        raise InvalidArgument(f"gpu_memory({gpu_memory}) must be > 0 bytes")
    results = run_child(child_request(settings, transformer, factory, input_factory), timeout=timeout)
    if len(results) != len(settings):
        raise HarnessError(f"the planner returned {len(results)} result(s) for {len(settings)} setting(s)")
    rows = [_row(s, r, gpu_memory, bool(input_factory)) for s, r in zip(settings, results, strict=True)]
    name = f"transformer {transformer.text()}" if transformer else str(factory)
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
        command=command
        or command_line(
            settings[0], transformer=transformer, factory=factory, input_factory=input_factory, gpu_memory=gpu_memory
        ),
        torch_version=results[0]["torch_version"],
    )


def _row(setting: Setting, r: dict[str, Any], gpu_memory: int | None, custom_input: bool) -> PlanRow:
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
