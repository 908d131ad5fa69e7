"""``fsdp-skill plan``: per-rank peak memory by category for a model at any world size (rich table, or --json).

    fsdp-skill plan (--transformer layers=..,dim=..,heads=..,kv_heads=..,ffn=..,vocab=.. | --model FILE.py:FN | --model pkg.mod:FN)
        [--world-size N | --mesh RxS] [--batch B] [--seq S] [--input FILE.py:FN] [--param-dtype bf16] [--reduce-dtype fp32]
        [--optimizer adamw|adam|sgd] [--activation-checkpointing none|per-block|selective-op|selective-N] [--reshard-after-forward true|false|N]
        [--cpu-offload] [--gpu-memory 80GiB] [--sweep KEY=V1,V2 ...] [--timeout S] [--max-batch | --max-seq] [--gpu NAME]
        [--json] [--python PATH]

Exit 0 with a plan (with --gpu-memory: 1 when some row does not fit), 2 for a bad spec or a model that
cannot be planned (one line on stderr), 1 when the planner could not run (no torch, crash, timeout).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import TYPE_CHECKING, Any, Literal

from fsdp_skill.adapters.exitcodes import EXIT_FAIL, EXIT_OK
from fsdp_skill.adapters.options import PYTHON_HELP
from fsdp_skill.errors import InvalidArgument

if TYPE_CHECKING:
    from fsdp_skill.core.plan.request import LocalPlanRequest

# An option whose help is this takes its help (description and default) and its choices from the request model,
# when --help is printed (building the parser for every command imports no model: see _KnobHelp)
FROM_MODEL = "%(from_model)s"


def cmd_plan(args: argparse.Namespace) -> int:
    """Run the plan and print it; see the module docstring for exit codes."""
    from fsdp_skill.core.plan.report import plan_request

    def starting(n: int) -> None:
        print(f"planning {n} setting(s) in a child process (fake process group, fake tensors)…", file=sys.stderr)

    command = shlex.join(["fsdp-skill", *args.argv]) if getattr(args, "argv", None) else ""
    request = request_from_args(args)
    key: Literal["batch", "seq"] | None = "batch" if args.max_batch else "seq" if args.max_seq else None
    gpu = None
    if args.gpu is not None:
        from fsdp_skill.core.plan.steptime import gpu_named

        gpu = gpu_named(args.gpu)
        if request.transformer is None:
            raise InvalidArgument("--gpu estimates the step time of the built-in --transformer only (its FLOPs are known)")
    if key is None:
        report = plan_request(request, command=command, on_start=starting)
    else:
        report = _search(request, key, command, starting)
    if gpu is not None:
        report = with_step_times(report, gpu)
    if args.json:
        sys.stdout.write(report.model_dump_json() + "\n")
    else:
        from fsdp_skill.adapters.cli.plan_render import print_plan

        print_plan(report)
    return EXIT_FAIL if any(r.fit and r.fit.status == "does not fit" for r in report.rows) else EXIT_OK


def with_step_times(report: Any, gpu: Any) -> Any:
    """``report`` with a step-time estimate on each row (:func:`fsdp_skill.core.plan.steptime.step_time`)."""
    from fsdp_skill.core.plan.steptime import step_time

    rows = [r.model_copy(update={"step_time": step_time(report.transformer, r.setting, gpu, report.params)}) for r in report.rows]
    return report.model_copy(update={"rows": rows})


def _search(request: LocalPlanRequest, key: Literal["batch", "seq"], command: str, starting: Any) -> Any:
    """``--max-batch`` / ``--max-seq``: the largest value that fits ``--gpu-memory`` (:mod:`fsdp_skill.core.plan.search`),
    each probe a plan, all within ``--timeout``; the report is the plan at that value with the search's answer.
    Raises InvalidArgument where the search does not apply (no --gpu-memory, a sweep, an input factory)."""
    import time

    from fsdp_skill.core.plan.report import plan_memory, prepare_plan
    from fsdp_skill.core.plan.search import largest_fitting
    from fsdp_skill.errors import HarnessError

    flag = f"--max-{key}"
    plan = prepare_plan(request, command=command)
    if plan.gpu_memory is None:
        raise InvalidArgument(f"{flag} needs --gpu-memory SIZE: the memory to fit")
    if len(plan.settings) != 1:
        raise InvalidArgument(f"{flag} searches one setting; drop --sweep (or run one search per setting)")
    if plan.input_factory:
        raise InvalidArgument(f"{flag} needs the planner's own input (batch x seq tokens); with --input the factory fixes it")
    deadline = time.monotonic() + plan.timeout

    def run(settings: list[Any]) -> Any:
        left = deadline - time.monotonic()
        if left <= 0:
            raise HarnessError(f"the {flag} search ran past --timeout {plan.timeout:g} s")
        starting(len(settings))
        return plan_memory(
            settings,
            transformer=plan.transformer,
            factory=plan.factory,
            gpu_memory=plan.gpu_memory,
            timeout=left,
            command=plan.command,
        )

    answer, report = largest_fitting(plan.settings[0], key, plan.gpu_memory, run)
    return report.model_copy(update={"largest": answer})


def request_from_args(args: argparse.Namespace) -> LocalPlanRequest:
    """The plan request of parsed ``fsdp-skill plan`` options: each option given sets the request field of its
    name (the model holds every default); ``--reshard-after-forward`` is read as true, false or an int, and
    ``--gpu-memory SIZE`` sets ``gpu_memory_gib``.  Raises InvalidArgument naming the option (a size without a
    unit, a value over its limit, a wrong choice)."""
    from pydantic import ValidationError

    from fsdp_skill.core.plan.request import LocalPlanRequest, flag
    from fsdp_skill.core.plan.spec import first_error, parse_bytes, parse_reshard

    given: dict[str, Any] = {f: getattr(args, f) for f in LocalPlanRequest.model_fields if getattr(args, f, None) is not None}
    if args.reshard_after_forward is not None:  # read as a report holds it: true / false / an int, read whole
        given["reshard_after_forward"] = parse_reshard(args.reshard_after_forward)
    if args.gpu_memory is not None:
        given["gpu_memory_gib"] = parse_bytes(args.gpu_memory) / 2**30
    model = given.get("model")
    if isinstance(model, str) and model != model.encode("utf-8", "surrogateescape").decode("utf-8", "replace"):
        shown = model.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise InvalidArgument(
            f"--model {shown}: the file name is not UTF-8, which the plan's request (JSON) cannot carry; "
            "rename the file or give a link to it with a UTF-8 name"
        )
    try:
        return LocalPlanRequest.model_validate(given)
    except ValidationError as exc:
        raise InvalidArgument(first_error(exc, flag)) from None


class _KnobHelp(argparse.HelpFormatter):
    """Help of the knob options from :class:`~fsdp_skill.core.plan.request.LocalPlanRequest`: the field's
    description and default, and a Literal field's values as the metavar (``{adamw,adam,sgd}``)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if text != FROM_MODEL:
            return text
        field = _field(action.dest)
        default = field.get_default(call_default_factory=True)
        shown = (
            ""
            if default in (None, False, "", [])
            else f" (default {str(default).lower() if isinstance(default, bool) else _num(default)})"
        )
        return (field.description or "").replace("%", "%%") + shown

    def _metavar_formatter(self, action: argparse.Action, default_metavar: str) -> Any:
        if action.help == FROM_MODEL and action.metavar is None:
            from typing import Literal, get_args, get_origin

            annotation = _field(action.dest).annotation
            if get_origin(annotation) is Literal:
                default_metavar = "{" + ",".join(map(str, get_args(annotation))) + "}"
        return super()._metavar_formatter(action, default_metavar)


def _field(name: str) -> Any:
    from fsdp_skill.core.plan.request import LocalPlanRequest

    return LocalPlanRequest.model_fields[name]


def _num(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def add_plan_parser(sub: Any) -> None:
    """Register ``plan`` on the ``fsdp-skill`` subparsers.  No option has a default here: an option not given
    leaves the request model's default (:func:`request_from_args`)."""
    p = sub.add_parser(
        "plan",
        help="per-rank peak GPU memory by category for FSDP2 at any world size, planned on CPU",
        description="Plan one FSDP2 training step as one rank of any world size (fake process group, "
        "fake tensors, FSDPMemTracker): peak memory by category, the phase of the peak, a "
        "fit verdict and the knobs that lower it. FSDP1 is out of scope.",
        formatter_class=_KnobHelp,
    )
    m = p.add_argument_group("model (one of)")
    m.add_argument(
        "--transformer",
        metavar="SPEC",
        help="built-in Llama-style decoder: layers=32,dim=4096,heads=32,kv_heads=8,ffn=14336,vocab=128256",
    )
    m.add_argument("--model", metavar="FILE.py:FN", help=FROM_MODEL)
    m.add_argument("--input", metavar="FILE.py:FN", help=FROM_MODEL)
    r = p.add_argument_group("run")
    r.add_argument("--world-size", type=int, metavar="N", help=FROM_MODEL)
    r.add_argument("--mesh", metavar="RxS", help=FROM_MODEL)
    r.add_argument("--batch", type=int, metavar="B", help=FROM_MODEL)
    r.add_argument("--seq", type=int, metavar="S", help=FROM_MODEL)
    r.add_argument("--param-dtype", help=FROM_MODEL)
    r.add_argument("--reduce-dtype", help=FROM_MODEL)
    r.add_argument("--optimizer", help=FROM_MODEL)
    r.add_argument("--activation-checkpointing", metavar="none|per-block|selective-op|selective-N", help=FROM_MODEL)
    r.add_argument("--reshard-after-forward", metavar="true|false|N", help=FROM_MODEL)
    r.add_argument("--cpu-offload", action="store_true", default=None, help=FROM_MODEL)
    r.add_argument("--embedding-groups", action="store_true", default=None, help=FROM_MODEL)
    o = p.add_argument_group("output")
    o.add_argument(
        "--gpu-memory", metavar="SIZE", help="GPU memory for a fit verdict, e.g. 80GiB (exit 1 when a row does not fit)"
    )
    o.add_argument(
        "--sweep",
        action="append",
        metavar="KEY=V1,V2",
        help="one row per value (repeatable: every combination): world-size, mesh, ac, reshard, dtype, "
        "reduce-dtype, optimizer, batch, seq, cpu-offload, embedding-groups",
    )
    o.add_argument("--timeout", type=float, metavar="S", help=FROM_MODEL)
    o.add_argument(
        "--gpu",
        metavar="NAME",
        help="add a step-time ESTIMATE per row (built-in transformer): FLOPs over the GPU's data-sheet peak at an "
        "assumed 30-50%% utilisation, collectives over its link bandwidth: a100, h100, h100-pcie, h200",
    )
    search = o.add_mutually_exclusive_group()
    search.add_argument(
        "--max-batch",
        action="store_true",
        help="find the largest --batch whose plan fits --gpu-memory (each probe a plan, a few planner runs); "
        "prints the plan at that value",
    )
    search.add_argument("--max-seq", action="store_true", help="the same for --seq (at the given --batch)")
    o.add_argument("--json", action="store_true", help="print the PlanReport as JSON (bytes)")
    o.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    p.set_defaults(func=cmd_plan)
