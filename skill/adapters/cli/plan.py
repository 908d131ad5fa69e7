"""``fsdp-skill plan``: per-rank peak memory by category for a model at any world size (rich table, or --json).

    fsdp-skill plan (--transformer layers=..,dim=..,heads=..,kv_heads=..,ffn=..,vocab=.. | --model FILE.py:FN | --model pkg.mod:FN)
        [--world-size N | --mesh RxS] [--batch B] [--seq S] [--input FILE.py:FN] [--param-dtype bf16] [--reduce-dtype fp32]
        [--optimizer adamw|adam|sgd] [--activation-checkpointing none|per-block] [--reshard-after-forward true|false|N]
        [--cpu-offload] [--gpu-memory 80GiB] [--sweep KEY=V1,V2 ...] [--timeout S] [--json] [--python PATH]

Exit 0 with a plan (with --gpu-memory: 1 when some row does not fit), 2 for a bad spec or a model that
cannot be planned (one line on stderr), 1 when the planner could not run (no torch, crash, timeout).
"""

from __future__ import annotations

import shlex
import sys

from fsdp_skill.adapters.exitcodes import EXIT_FAIL, EXIT_OK
from fsdp_skill.adapters.options import PYTHON_HELP
from fsdp_skill.errors import InvalidArgument


def cmd_plan(args) -> int:
    """Run the plan and print it; see the module docstring for exit codes."""
    from fsdp_skill.core.plan.report import plan_memory
    from fsdp_skill.core.plan.spec import parse_bytes, parse_mesh, parse_reshard, parse_transformer, settings_for

    if bool(args.transformer) == bool(args.model):
        raise InvalidArgument("give exactly one model: --transformer SPEC or --model FILE.py:FUNCTION")
    if args.world_size is not None and args.mesh:
        raise InvalidArgument("give --world-size N or --mesh RxS, not both")
    if args.input and not args.model:
        raise InvalidArgument("--input goes with --model (the built-in transformer takes --batch and --seq)")
    if args.world_size is not None and args.world_size < 1:
        raise InvalidArgument(f"--world-size must be >= 1, not {args.world_size}")
    if not 0 < args.timeout <= 86400:
        raise InvalidArgument(f"--timeout must be a positive number of seconds, at most 86400, not {args.timeout:g}")
    mesh = parse_mesh(args.mesh) if args.mesh else [args.world_size or 8]
    base = {
        "mesh": mesh,
        "batch": args.batch,
        "seq": args.seq,
        "optimizer": args.optimizer,
        "param_dtype": None if args.param_dtype == "none" else args.param_dtype,
        "reduce_dtype": None if args.reduce_dtype == "none" else args.reduce_dtype,
        "activation_checkpointing": args.activation_checkpointing,
        "reshard_after_forward": parse_reshard(args.reshard_after_forward),
        "cpu_offload": args.cpu_offload,
    }
    settings = settings_for(base, args.sweep)
    gpu = parse_bytes(args.gpu_memory) if args.gpu_memory else None
    transformer = parse_transformer(args.transformer) if args.transformer else None
    print(f"planning {len(settings)} setting(s) in a child process (fake process group, fake tensors)…", file=sys.stderr)
    report = plan_memory(
        settings,
        transformer=transformer,
        factory=args.model,
        input_factory=args.input,
        gpu_memory=gpu,
        timeout=args.timeout,
        command=shlex.join(["fsdp-skill", *args.argv]) if getattr(args, "argv", None) else "",
    )
    if args.json:
        sys.stdout.write(report.model_dump_json() + "\n")
    else:
        from fsdp_skill.adapters.cli.plan_render import print_plan

        print_plan(report)
    return EXIT_FAIL if any(r.fit and r.fit.status == "does not fit" for r in report.rows) else EXIT_OK


def add_plan_parser(sub) -> None:
    """Register ``plan`` on the ``fsdp-skill`` subparsers."""
    p = sub.add_parser(
        "plan",
        help="per-rank peak GPU memory by category for FSDP2 at any world size, planned on CPU",
        description="Plan one FSDP2 training step as one rank of any world size (fake process group, "
        "fake tensors, FSDPMemTracker): peak memory by category, the phase of the peak, a "
        "fit verdict and the knobs that lower it. FSDP1 is out of scope.",
    )
    m = p.add_argument_group("model (one of)")
    m.add_argument(
        "--transformer",
        metavar="SPEC",
        help="built-in Llama-style decoder: layers=32,dim=4096,heads=32,kv_heads=8,ffn=14336,vocab=128256",
    )
    m.add_argument(
        "--model",
        metavar="FILE.py:FN",
        help="your factory returning an nn.Module (path.py:fn or "
        "pkg.module:fn), called with no arguments under FakeTensorMode in a child process",
    )
    m.add_argument(
        "--input",
        metavar="FILE.py:FN",
        help="with --model: a factory returning the step's input tensor (or tuple); default int64 tokens of --batch x --seq",
    )
    r = p.add_argument_group("run")
    r.add_argument("--world-size", type=int, default=None, metavar="N", help="ranks of the 1-D mesh (default 8)")
    r.add_argument("--mesh", metavar="RxS", help="HSDP: R replicas of S-way shards, e.g. 2x8")
    r.add_argument("--batch", type=int, default=1, metavar="B", help="micro-batch per rank (default 1)")
    r.add_argument("--seq", type=int, default=2048, metavar="S", help="sequence length (default 2048)")
    r.add_argument(
        "--param-dtype",
        choices=("bf16", "fp16", "fp32", "none"),
        default="bf16",
        help="MixedPrecisionPolicy.param_dtype (default bf16; none: no mixed precision)",
    )
    r.add_argument(
        "--reduce-dtype",
        choices=("fp32", "bf16", "fp16", "none"),
        default="fp32",
        help="MixedPrecisionPolicy.reduce_dtype (default fp32)",
    )
    r.add_argument("--optimizer", choices=("adamw", "adam", "sgd"), default="adamw", help="default adamw")
    r.add_argument("--activation-checkpointing", choices=("none", "per-block"), default="none", help="default none")
    r.add_argument("--reshard-after-forward", default="true", metavar="true|false|N", help="for the blocks (default true)")
    r.add_argument("--cpu-offload", action="store_true", help="CPUOffloadPolicy (sharded state in host memory)")
    o = p.add_argument_group("output")
    o.add_argument(
        "--gpu-memory", metavar="SIZE", help="GPU memory for a fit verdict, e.g. 80GiB (exit 1 when a row does not fit)"
    )
    o.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="one row per value (repeatable: every combination): world-size, mesh, ac, reshard, dtype, "
        "reduce-dtype, optimizer, batch, seq, cpu-offload",
    )
    o.add_argument("--timeout", type=float, default=600.0, metavar="S", help="seconds for the whole plan (default 600)")
    o.add_argument("--json", action="store_true", help="print the PlanReport as JSON (bytes)")
    o.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    p.set_defaults(func=cmd_plan)
