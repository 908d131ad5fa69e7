"""Time of `fsdp-skill plan` for the 70B built-in transformer at world size 64 (target < 30 s on the 2-core
machine) and of a 4-setting sweep (target < 2 min).  Prints figures; asserts nothing.

    python benchmarks/bench_plan.py [--sweep-only | --single-only]
"""

from __future__ import annotations

import sys
import time

from fsdp_skill.core.plan.report import plan_memory
from fsdp_skill.core.plan.spec import parse_transformer, settings_for

SPEC_70B = "layers=80,dim=8192,heads=64,kv_heads=8,ffn=28672,vocab=128256"
BASE = {"mesh": [64], "batch": 1, "seq": 4096, "activation_checkpointing": "per-block"}


def _run(sweep: list[str]) -> None:
    t0 = time.perf_counter()
    report = plan_memory(settings_for(BASE, sweep), transformer=parse_transformer(SPEC_70B), timeout=1800)
    wall = time.perf_counter() - t0
    for r in report.rows:
        print(f"  {r.label}: peak {r.peak_bytes / 2**30:.2f} GiB ({r.peak_phase}), planned in {r.seconds:.1f} s")
    print(f"70B plan, {len(report.rows)} setting(s): {wall:.1f} s wall (child start and torch import included)")


if __name__ == "__main__":
    if "--sweep-only" not in sys.argv:
        _run([])
    if "--single-only" not in sys.argv:
        _run(["world-size=8,16,32,64"])
