"""The plan against a real gloo run of the same model and step, every rank: sharded parameter, gradient and
optimizer-state bytes equal exactly, and the planned peak is within 10% of ``MemTracker``'s peak on the
real CPU run (issue 15), counting every allocation but gloo's own staging copy of each reduce-scatter input.

gloo copies a reduce-scatter's whole input before reducing it; NCCL, which the plan is made for, reduces
in place into the output. ``tests/helpers/plan_real.py`` counts the storages the tracker first sees inside
``dist.reduce_scatter_single`` as that copy. Without them the plan has equalled the real peak to the byte
in every setting below but ws4-emb-groups (3.3% under it there), idle or under load (the 10% asserted is against
that figure); with them the plan
was 0-14% below the real peak on this tiny model, where one block's gradients are a large share, and the
copy's lifetime depends on gloo's worker thread.
Uneven shards on purpose (vocab 499, ffn 250 do not divide by 4)."""

from __future__ import annotations

import pytest

from fsdp_skill.core.plan.report import plan_memory
from fsdp_skill.core.plan.spec import Setting, TransformerSpec
from tests.helpers import plan_real

SPEC = {"layers": 2, "dim": 96, "heads": 6, "kv_heads": 2, "ffn": 250, "vocab": 499}
MP = {"param_dtype": "bf16", "reduce_dtype": "fp32"}
SETTINGS = {
    "ws2": {"mesh": [2], **MP},
    "ws4": {"mesh": [4], **MP},
    "ws2-ac": {"mesh": [2], "activation_checkpointing": "per-block", **MP},
    "ws2-sac-2": {"mesh": [2], "activation_checkpointing": "selective-2", **MP},  # the 2nd block of 2
    "ws2-sac-op": {"mesh": [2], "activation_checkpointing": "selective-op", **MP},  # every block, matmuls kept
    "ws4-emb-groups": {"mesh": [4], "embedding_groups": True, **MP},  # embedding, norm + output: groups of their own
    "hsdp-2x2": {"mesh": [2, 2], **MP},
    "ws4-reshard2-sgd": {"mesh": [4], "reshard_after_forward": 2, "optimizer": "sgd", "param_dtype": "bf16"},
    "ws2-cpu-offload": {"mesh": [2], "cpu_offload": True, **MP},  # one device type: the offload code path, same bytes
}


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize("name", list(SETTINGS))
def test_plan_equals_real_shards_and_peak(name, tmp_path):
    setting = Setting(batch=2, seq=32, **SETTINGS[name])
    world_size = setting.mesh[0] * (setting.mesh[1] if len(setting.mesh) == 2 else 1)
    real = plan_real.run(world_size, setting.model_dump(), {"transformer": SPEC}, str(tmp_path))
    planned = plan_memory(
        [setting.model_copy(update={"rank": r}) for r in range(world_size)], transformer=TransformerSpec(**SPEC)
    ).rows
    for rank, (p, r) in enumerate(zip(planned, real, strict=True)):
        got = (p.sharded_param_bytes, p.sharded_grad_bytes, p.optimizer_state_bytes)
        want = (r["sharded_param_bytes"], r["sharded_grad_bytes"], r["optimizer_state_bytes"])
        print(
            f"{name} rank={rank} planned(param, grad, optim)={got} real={want} planned peak={p.peak_bytes} "
            f"MemTracker peak without gloo's staging={r['peak_without_staging_bytes']} "
            f"({p.peak_bytes / r['peak_without_staging_bytes'] - 1:+.2%}), with it={r['peak_bytes']} "
            f"({p.peak_bytes / r['peak_bytes'] - 1:+.1%}; staging up to {r['staging_peak_bytes']})"
        )
        assert got == want, f"rank {rank}: planned {got} != real {want}"
        real_peak = r["peak_without_staging_bytes"]
        assert abs(p.peak_bytes - real_peak) <= 0.10 * real_peak, (
            f"rank {rank}: planned peak {p.peak_bytes} vs MemTracker {real_peak} (without gloo's staging copies)"
        )
        # the staging copies only add: the plan is never above the real run's whole peak
        assert p.peak_bytes <= r["peak_bytes"]
