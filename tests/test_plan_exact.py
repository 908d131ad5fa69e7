"""The plan against a real gloo run of the same model and step (world size 2 and 4, every rank): sharded
parameter, gradient and optimizer-state bytes equal exactly; the planned peak is within 10% of MemTracker
on the real CPU run.  Uneven shards on purpose (vocab 499, ffn 250 do not divide by 4)."""
from __future__ import annotations

import pytest

from fsdp_skill.core.plan import plan_memory
from fsdp_skill.core.plan.spec import Setting, TransformerSpec
from tests.helpers import plan_real

SPEC = {"layers": 2, "dim": 96, "heads": 6, "kv_heads": 2, "ffn": 250, "vocab": 499}


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize("world_size", [2, 4])
def test_plan_equals_real_shards_and_peak_within_10_percent(world_size, tmp_path):
    setting = Setting(mesh=[world_size], batch=2, seq=32, param_dtype="bf16", reduce_dtype="fp32")
    real = plan_real.run(world_size, setting.model_dump(), {"transformer": SPEC}, str(tmp_path))
    planned = plan_memory([setting.model_copy(update={"rank": r}) for r in range(world_size)],
                          transformer=TransformerSpec(**SPEC)).rows
    for rank, (p, r) in enumerate(zip(planned, real, strict=True)):
        got = (p.sharded_param_bytes, p.sharded_grad_bytes, p.optimizer_state_bytes)
        want = (r["sharded_param_bytes"], r["sharded_grad_bytes"], r["optimizer_state_bytes"])
        print(f"ws={world_size} rank={rank} planned(param, grad, optim)={got} real={want} "
              f"planned peak={p.peak_bytes} MemTracker peak={r['peak_bytes']} ({p.peak_bytes / r['peak_bytes'] - 1:+.1%})")
        assert got == want, f"rank {rank}: planned {got} != real {want}"
        assert abs(p.peak_bytes - r["peak_bytes"]) <= 0.10 * r["peak_bytes"], (
            f"rank {rank}: planned peak {p.peak_bytes} vs MemTracker {r['peak_bytes']}: over the 10% tolerance")
