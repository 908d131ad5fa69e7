"""FSD089, FSD090 (``skill/core/check/accelerate_rules.py``): Accelerate contexts around the wrong code. The marked
fixtures are in ``tests/data/check/accelerate/`` (``test_check_marked.py``); these are the edges."""

from __future__ import annotations

import pytest

from fsdp_skill.core.check import check_source


def _lines(src: str, code: str) -> list[int]:
    return [f.line for f in check_source(src, "t.py") if f.code == code]


ACCUM = """from accelerate import Accelerator
accelerator = Accelerator(gradient_accumulation_steps=4)
{body}
"""


@pytest.mark.parametrize(
    ("body", "want"),
    [
        ("with accelerator.accumulate(model):\n    for b in loader:\n        accelerator.backward(model(b))\n", [3]),
        ("for b in loader:\n    with accelerator.accumulate(model):\n        accelerator.backward(model(b))\n", []),
        ("with accelerator.accumulate(model):\n    for b in loader:\n        preds.append(model(b))\n", []),  # no backward
        ("with acc.accumulate(model):\n    for b in loader:\n        acc.backward(model(b))\n", []),  # not known as Accelerate's
        ("acc = Accelerator()\nwith acc.accumulate(model):\n    for b in loader:\n        acc.backward(model(b))\n", [4]),
    ],
)
def test_accumulate_edges(body, want):
    assert _lines(ACCUM.format(body=body), "FSD089") == want


FIRST = """from transformers import AutoModelForCausalLM, AutoConfig
{config}
with accelerator.main_process_first():
    x = {load}
"""


@pytest.mark.parametrize(
    ("config", "load", "want"),
    [
        ("plugin = DeepSpeedPlugin(zero_stage=3)", 'AutoModelForCausalLM.from_pretrained("m")', [4]),
        ('ds = {"zero_optimization": {"stage": 3}}', 'AutoModelForCausalLM.from_pretrained("m")', [4]),
        ("plugin = DeepSpeedPlugin(zero_stage=2)", 'AutoModelForCausalLM.from_pretrained("m")', []),
        ("plugin = DeepSpeedPlugin(zero_stage=3, zero3_init_flag=False)", 'AutoModelForCausalLM.from_pretrained("m")', []),
        ("plugin = DeepSpeedPlugin(zero_stage=3)", 'AutoConfig.from_pretrained("m")', []),  # a config: no parameters
        ("plugin = DeepSpeedPlugin(zero_stage=3)", 'load_dataset("wikitext")', []),
    ],
)
def test_zero3_load_edges(config, load, want):
    assert _lines(FIRST.format(config=config, load=load), "FSD090") == want
