"""``plan --gpu NAME``: the step-time estimate (fsdp_skill.core.plan.steptime) from stated FLOPs and bandwidth."""

from __future__ import annotations

import json

import pytest

from fsdp_skill.core.plan.spec import Setting, TransformerSpec
from fsdp_skill.core.plan.steptime import GPUS, LINK_EFFICIENCY, NETWORK_GB_S, UTILISATION, gpu_named, step_time
from fsdp_skill.errors import InvalidArgument
from fsdp_skill.main import main

LLAMA8B = TransformerSpec(layers=32, dim=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256)
PARAMS_8B = 8_030_261_248  # the plan's count of LLAMA8B (embedding and output untied)


def test_model_flops_are_the_usual_count():
    st = step_time(LLAMA8B, Setting(mesh=[8], seq=8192), GPUS["h100"], PARAMS_8B)
    tokens = 8192
    embedding = 128256 * 4096
    attention = 12 * 32 * 32 * 128 * 8192  # 12 x layers x heads x head_dim x seq per token
    assert st.model_flops == pytest.approx(tokens * (6 * (PARAMS_8B - embedding) + attention), rel=1e-3)
    assert st.recompute_flops == 0
    peak = 989.4e12
    assert st.compute_seconds == pytest.approx(
        (st.model_flops / (peak * UTILISATION[1]), st.model_flops / (peak * UTILISATION[0]))
    )


def test_recomputation_follows_the_checkpointing():
    rec = {
        ac: step_time(LLAMA8B, Setting(mesh=[8], activation_checkpointing=ac), GPUS["h100"], PARAMS_8B).recompute_flops
        for ac in ("none", "selective-op", "selective-2", "per-block")
    }
    assert rec["none"] == 0 < rec["selective-op"] < rec["selective-2"] < rec["per-block"]
    assert rec["selective-2"] == pytest.approx(rec["per-block"] / 2)


def test_collectives_bytes_and_links():
    one_node = step_time(LLAMA8B, Setting(mesh=[8]), GPUS["h100"], PARAMS_8B)
    # all-gather twice in bf16 (forward, and backward after the reshard) + reduce-scatter in fp32, (n-1)/n each
    assert one_node.comm_bytes == int((2 * 2 + 4) * PARAMS_8B * 7 / 8)
    assert one_node.comm_seconds[0] == pytest.approx(one_node.comm_bytes / (450e9 * LINK_EFFICIENCY[1]), rel=1e-6)
    no_reshard = step_time(LLAMA8B, Setting(mesh=[8], reshard_after_forward=False), GPUS["h100"], PARAMS_8B)
    assert no_reshard.comm_bytes == int((2 + 4) * PARAMS_8B * 7 / 8)
    two_nodes = step_time(LLAMA8B, Setting(mesh=[16]), GPUS["h100"], PARAMS_8B)
    assert two_nodes.comm_seconds[0] == pytest.approx(two_nodes.comm_bytes / (NETWORK_GB_S * 1e9 * LINK_EFFICIENCY[1]), rel=1e-6)
    hsdp = step_time(LLAMA8B, Setting(mesh=[2, 8]), GPUS["h100"], PARAMS_8B)  # shards in a node, replicas across
    assert hsdp.comm_bytes == int((2 * 2 + 4) * PARAMS_8B * 7 / 8 + 2 * 0.5 * PARAMS_8B / 8 * 4)
    assert one_node.comm_seconds[0] < hsdp.comm_seconds[0] < two_nodes.comm_seconds[0]
    for st in (one_node, two_nodes, hsdp):
        low, high = st.step_seconds
        assert low == max(st.compute_seconds[0], st.comm_seconds[0]) and high == st.compute_seconds[1] + st.comm_seconds[1]
        assert st.tokens_per_second == pytest.approx((2048 / high, 2048 / low))
        assert any("assumed" in b for b in st.basis) and any("nvidia.com" in b for b in st.basis)


def test_gpu_names():
    assert gpu_named("H100_SXM") is GPUS["h100"] and gpu_named(" a100 ") is GPUS["a100"]
    with pytest.raises(InvalidArgument, match="one of a100, h100"):
        gpu_named("v100")


def test_cli_refuses_a_factory_model(capsys):
    assert main(["plan", "--model", "x.py:f", "--gpu", "h100"]) == 2
    assert "built-in --transformer only" in capsys.readouterr().err


@pytest.mark.torch
def test_cli_adds_the_estimate_to_every_row(capsys):
    small = "layers=2,dim=64,heads=4,kv_heads=2,ffn=128,vocab=256"
    code = main(
        [
            "plan",
            "--transformer",
            small,
            "--world-size",
            "2",
            "--seq",
            "64",
            "--gpu",
            "a100",
            "--sweep",
            "ac=none,per-block",
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    a, b = (r["step_time"] for r in report["rows"])
    assert a["gpu"] == b["gpu"] == "A100 SXM" and a["recompute_flops"] == 0 < b["recompute_flops"]
    assert a["model_flops"] == b["model_flops"] > 0
