"""fsdp-skill plan: spec parsing and validation (no torch), the CLI's exit codes and one-line errors, and
small plans through the child process (built-in transformer and a user factory)."""

from __future__ import annotations

import json
import os

import pytest
from pydantic import ValidationError

from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.core.plan.advice import suggestions
from fsdp_skill.core.plan.models import PlanRow
from fsdp_skill.core.plan.spec import Setting, parse_bytes, parse_mesh, parse_transformer, settings_for
from fsdp_skill.errors import InvalidArgument
from fsdp_skill.main import main

SMALL = "layers=2,dim=64,heads=4,kv_heads=2,ffn=128,vocab=256"


def test_parse_bytes_units():
    assert parse_bytes("80GiB") == 80 * 2**30
    assert parse_bytes("80GB") == 80 * 10**9
    assert parse_bytes("1.5TiB") == int(1.5 * 2**40)
    assert parse_bytes("4096B") == 4096
    with pytest.raises(InvalidArgument, match="80 parsecs"):
        parse_bytes("80 parsecs")
    with pytest.raises(InvalidArgument, match="'80' is not a number with a unit"):
        parse_bytes("80")  # meant as GiB, it would be 80 bytes: refused


def test_parse_transformer_names_missing_keys_and_checks_heads():
    assert parse_transformer(SMALL).heads == 4
    with pytest.raises(InvalidArgument, match="missing kv_heads, ffn, vocab"):
        parse_transformer("layers=2,dim=64,heads=4")
    with pytest.raises(InvalidArgument, match=r"dim\(66\) is not a multiple of heads\(4\)"):
        parse_transformer(SMALL.replace("dim=64", "dim=66"))
    with pytest.raises(InvalidArgument, match=r"heads\(4\) is not a multiple of kv_heads\(3\)"):
        parse_transformer(SMALL.replace("kv_heads=2", "kv_heads=3"))
    with pytest.raises(InvalidArgument, match="head size dim/heads = 65 must be even"):
        parse_transformer("layers=2,dim=260,heads=4,kv_heads=2,ffn=512,vocab=1000")
    with pytest.raises(InvalidArgument, match=r"gives layers twice \(2 and 80\)"):
        parse_transformer(SMALL + ",layers=80")


def test_labels_say_what_was_planned():
    assert Setting(mesh=[8]).label() == "ws=8 b1xs2048 bf16/fp32 adamw ac=none reshard=true"
    assert Setting(mesh=[2, 4], param_dtype=None, reduce_dtype=None).label().startswith("mesh=2x4 b1xs2048 no-mp ")
    assert " orig/fp32 " in Setting(mesh=[8], param_dtype=None).label()
    assert " bf16/bf16 " in Setting(mesh=[8], reduce_dtype=None).label()
    assert " input=factory " in Setting(mesh=[8]).label(custom_input=True)


def test_sizes_in_the_terminal_follow_the_model():
    from fsdp_skill.adapters.cli.plan_render import count
    from fsdp_skill.core.plan.advice import format_bytes as size

    assert size(49 * 2**30 + 2**29) == "49.50 GiB" and size(3 * 2**20) == "3.00 MiB" and size(512) == "512 B"
    assert size(2**20, unit=2**30) == "0.00 GiB"
    assert count(8_030_261_248) == "8.03 B" and count(33_088) == "33.09 K" and count(12) == "12"


def test_honesty_lines_note_an_integer_reshard():
    from fsdp_skill.core.plan.advice import NOT_MEASURED, OFFLOAD_NOTE, RESHARD_INT_NOTE, not_measured

    rows = [_row(Setting(mesh=[8])), _row(Setting(mesh=[8], reshard_after_forward=2))]
    assert not_measured(rows[:1]) == NOT_MEASURED
    assert not_measured(rows) == NOT_MEASURED + [RESHARD_INT_NOTE]
    assert not_measured(rows[:1] + [_row(Setting(mesh=[8], cpu_offload=True))]) == NOT_MEASURED + [OFFLOAD_NOTE]


def test_a_model_without_blocks_is_told_so_not_offered_per_block_checkpointing():
    texts = [s.text for s in suggestions([_row(Setting(mesh=[8]), blocks=0)])]
    assert any("no nn.ModuleList" in t for t in texts)
    assert not any("--activation-checkpointing per-block" in t for t in texts)
    assert any("--activation-checkpointing per-block" in s.text for s in suggestions([_row(Setting(mesh=[8]))]))


def test_a_peak_in_the_optimizer_step_is_told_so_not_offered_activation_knobs():
    row = _row(
        Setting(mesh=[8], activation_checkpointing="per-block"),
        phase="optimizer step",
        cats={"optimizer_state": 3 * 2**30, "activation": 0},
        optimizer_state_bytes=2 * 2**30,
    )
    texts = [s.text for s in suggestions([row])]
    assert any("peak is in the optimizer step" in t and "add 1.0 GiB to the 2.0 GiB" in t for t in texts)
    assert not any("checkpointing" in t or "--batch" in t for t in texts)
    bigger = _row(Setting(mesh=[8]), cats={"activation": 9 * 2**30})
    bigger.device_peak_bytes = 9 * 2**30
    texts = [s.text for s in suggestions([bigger, row])]  # in a sweep: the optimizer-step row is named
    assert any(t.startswith("row #2's peak is in the optimizer step") for t in texts)


@pytest.mark.torch
def test_cpu_offload_gpu_peak_is_measured_and_does_not_shrink_with_more_ranks(capsys):
    """Under CPUOffloadPolicy the GPU holds no sharded state, so its own peak (activations, unsharded
    parameters, buffers) cannot fall as ranks are added; the whole peak minus the held state at its moment could."""
    assert (
        main(
            [
                "plan",
                "--transformer",
                SMALL,
                "--seq",
                "64",
                "--cpu-offload",
                "--activation-checkpointing",
                "per-block",
                "--sweep",
                "world-size=2,8",
                "--json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["rows"]
    for r in rows:
        device = r["device_peak_by_category"]
        assert r["device_peak_bytes"] == sum(device.values()) < r["peak_bytes"]
        assert device["sharded_param"] == device["sharded_grad"] == device["optimizer_state"] == 0
    assert rows[1]["device_peak_bytes"] >= rows[0]["device_peak_bytes"]
    report = json.loads(capsys.readouterr().out or "{}") or None  # nothing more printed
    assert report is None


def _row(setting, blocks=1, phase="backward", cats=None, optimizer_state_bytes=1):
    cats = cats or dict.fromkeys(("activation", "temp", "unsharded_param"), 1)
    return PlanRow(
        setting=setting,
        label="x",
        world_size=setting.world_size,
        peak_bytes=1,
        device_peak_bytes=1,
        peak_phase=phase,
        peak_by_category=cats,
        sharded_param_bytes=1,
        sharded_grad_bytes=1,
        optimizer_state_bytes=optimizer_state_bytes,
        blocks=blocks,
        seconds=0.0,
    )


def test_mesh_and_sweep():
    assert parse_mesh("2x8") == [2, 8] and parse_mesh("64") == [64]
    with pytest.raises(InvalidArgument):
        parse_mesh("2x0")
    rows = settings_for({"mesh": [8]}, ["world-size=8,16", "ac=none,per-block"])
    assert [(s.world_size, s.activation_checkpointing) for s in rows] == [
        (8, "none"),
        (8, "per-block"),
        (16, "none"),
        (16, "per-block"),
    ]
    # torchtitan's spellings of its activation-checkpointing options read as the planner's
    rows = settings_for({"mesh": [8]}, ["ac=full,op,2,selective-4,none"])
    assert [s.activation_checkpointing for s in rows] == ["per-block", "selective-op", "selective-2", "selective-4", "none"]
    assert Setting(mesh=[8], activation_checkpointing="op").activation_checkpointing == "selective-op"
    with pytest.raises(ValidationError, match="selective-N"):
        Setting(mesh=[8], activation_checkpointing="selective-0")
    with pytest.raises(InvalidArgument, match="at most 16"):
        settings_for({"mesh": [8]}, ["world-size=" + ",".join(map(str, range(1, 18)))])
    with pytest.raises(InvalidArgument, match=r"reshard_after_forward\(3\) must be a positive divisor of the shard size\(8\)"):
        settings_for({"mesh": [2, 8], "reshard_after_forward": 3}, [])
    with pytest.raises(InvalidArgument, match="would replace the HSDP mesh 2x4 with a 1-D one"):
        settings_for({"mesh": [2, 4]}, ["world-size=2,4"])
    assert [s.mesh for s in settings_for({"mesh": [2, 4]}, ["mesh=2x4,4x4"])] == [[2, 4], [4, 4]]
    with pytest.raises(InvalidArgument, match="--sweep mesh and --sweep world-size both set mesh"):
        settings_for({"mesh": [8]}, ["world-size=2,4", "mesh=2x2"])
    with pytest.raises(InvalidArgument, match="cpu-offload 'maybe' is not true or false"):
        settings_for({"mesh": [8]}, ["cpu-offload=true,maybe"])


def test_every_suggestion_links_an_existing_section():
    ids = set(load_knowledge().sections)
    for setting, blocks in (
        (Setting(mesh=[8]), 1),
        (Setting(mesh=[8]), 0),
        (Setting(mesh=[2, 4], param_dtype=None, reshard_after_forward=False, activation_checkpointing="per-block"), 1),
    ):
        for s in suggestions([_row(setting, blocks)]):
            assert s.section in ids, s


@pytest.mark.parametrize(
    "argv, message",
    [
        (["plan"], "give exactly one model"),
        (["plan", "--transformer", "layers=2"], "missing dim"),
        (["plan", "--transformer", SMALL, "--mesh", "2x"], "is not N or RxS"),
        (["plan", "--transformer", SMALL, "--gpu-memory", "lots"], "is not a number with a unit"),
        (["plan", "--transformer", SMALL, "--sweep", "colour=red"], "is not KEY=V1,V2"),
        (["plan", "--transformer", SMALL, "--world-size", "4", "--mesh", "2x2"], "not both"),
        (["plan", "--transformer", SMALL, "--input", "x.py:f"], "--input goes with --model"),
    ],
    ids=["no-model", "missing-keys", "bad-mesh", "bad-size", "bad-sweep", "ws-and-mesh", "input-without-model"],
)
def test_bad_specs_exit_2_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]


@pytest.mark.torch
def test_plan_small_transformer_json(capsys):
    code = main(
        [
            "plan",
            "--transformer",
            SMALL,
            "--world-size",
            "4",
            "--seq",
            "32",
            "--gpu-memory",
            "80GiB",
            "--sweep",
            "ac=none,per-block",
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["params"] == 2 * 256 * 64 + 2 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128 + 2 * 64) + 64
    a, b = report["rows"]
    assert a["setting"]["activation_checkpointing"] == "none" and b["setting"]["activation_checkpointing"] == "per-block"
    for row in (a, b):
        assert row["peak_bytes"] == sum(row["peak_by_category"].values())
        assert row["fit"]["status"] == "fits" and row["peak_phase"] in ("forward", "backward", "optimizer step")
        # AdamW: two fp32 states per sharded fp32 parameter, plus one 4-byte step counter per parameter tensor
        assert row["optimizer_state_bytes"] == 2 * row["sharded_param_bytes"] + 4 * (2 + 2 * 9 + 1)
    assert b["peak_by_category"]["activation"] < a["peak_by_category"]["activation"]
    assert report["command"].startswith("fsdp-skill plan --transformer")
    assert any("estimate" in e["name"] for e in report["estimates"])


@pytest.mark.torch
def test_selective_checkpointing_keeps_part_of_the_activations():
    """selective-N checkpoints every N-th block, selective-op every block but keeps its matmul and attention outputs:
    the peak falls in that order between no checkpointing and every block checkpointed, and selective-1 is
    per-block. (What selective-op keeps is held in the checkpoint's own cache, outside autograd's saved tensors:
    FSDPMemTracker counts it as temporaries, so its "activation" category alone is below per-block's.)"""
    from fsdp_skill.core.plan.report import plan_memory
    from fsdp_skill.core.plan.spec import TransformerSpec

    acs = ["none", "selective-2", "selective-op", "per-block", "selective-1"]
    rows = plan_memory(
        [Setting(mesh=[4], batch=2, seq=256, activation_checkpointing=ac) for ac in acs],
        transformer=TransformerSpec(layers=4, dim=256, heads=4, kv_heads=2, ffn=768, vocab=1000),
    ).rows
    acts = {ac: r.peak_by_category["activation"] for ac, r in zip(acs, rows, strict=True)}
    peaks = {ac: r.peak_bytes for ac, r in zip(acs, rows, strict=True)}
    assert peaks["none"] > peaks["selective-2"] > peaks["selective-op"] > peaks["per-block"], peaks
    assert acts["none"] > acts["selective-2"] > acts["per-block"], acts
    assert peaks["selective-1"] == peaks["per-block"] and acts["selective-1"] == acts["per-block"]
    # the shards do not depend on what is recomputed
    assert len({(r.sharded_param_bytes, r.sharded_grad_bytes, r.optimizer_state_bytes) for r in rows}) == 1


MODEL_FILE = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(64, 64) for _ in range(3))
    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x

def make():
    return Net()

def inputs():
    return torch.randn(4, 64)

def broken():
    raise RuntimeError("no weights here")

def flat():
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU())


class Masked(Net):
    def forward(self, x, *, mask):
        return super().forward(x * mask)


def masked():
    return Masked()


def masked_inputs():
    return {"x": torch.randn(4, 64), "mask": torch.ones(4, 64)}


class TakesABatch(Net):
    def forward(self, batch):
        return super().forward(batch["x"])


def batch_model():
    return TakesABatch()


def one_dict():
    return ({"x": torch.randn(4, 64)},)


def nothing():
    return None
"""


@pytest.mark.torch
def test_plan_user_factory_and_its_errors(tmp_path, capsys, monkeypatch):
    (tmp_path / "net.py").write_text(MODEL_FILE)
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            ["plan", "--model", "net.py:make", "--input", "net.py:inputs", "--world-size", "2", "--json", "--param-dtype", "none"]
        )
        == 0
    )
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["blocks"] == 3
    assert row["sharded_param_bytes"] == 3 * (64 * 64 + 64) * 4 // 2
    assert main(["plan", "--model", "net.py:make", "--input", "net.py:inputs", "--world-size", "2", "--embedding-groups"]) == 2
    assert "has no such modules" in capsys.readouterr().err
    assert main(["plan", "--model", "net.py:broken", "--world-size", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "fsdp-skill: error: net.py:broken() failed: RuntimeError: no weights here"
    assert main(["plan", "--model", "net.py:missing", "--world-size", "2"]) == 2
    assert "has no callable 'missing'" in capsys.readouterr().err
    assert (
        main(
            [
                "plan",
                "--model",
                "net.py:flat",
                "--input",
                "net.py:inputs",
                "--world-size",
                "2",
                "--activation-checkpointing",
                "per-block",
            ]
        )
        == 2
    )
    assert "per block needs blocks, and the model has no nn.ModuleList" in capsys.readouterr().err
    assert (
        main(["plan", "--model", "net.py:masked", "--input", "net.py:masked_inputs", "--world-size", "2", "--json"]) == 0
    )  # a dict from the input factory: keyword arguments
    assert json.loads(capsys.readouterr().out)["rows"][0]["peak_by_category"]["inputs"] == 2 * 4 * 64 * 4
    assert (
        main(["plan", "--model", "net.py:batch_model", "--input", "net.py:one_dict", "--world-size", "2", "--json"]) == 0
    )  # a tuple holding a dict: one positional argument
    capsys.readouterr()
    assert main(["plan", "--model", "net.py:make", "--input", "net.py:nothing", "--world-size", "2"]) == 2
    assert "net.py:nothing() returned None" in capsys.readouterr().err
    monkeypatch.setenv("COLUMNS", "240")
    assert main(["plan", "--model", "net.py:flat", "--input", "net.py:inputs", "--world-size", "2"]) == 0
    out = capsys.readouterr().out
    assert "on the root only: no nn.ModuleList of blocks" in out and "4.16 K parameters" in out
    assert "input=factory" in out and "--batch" not in out  # activations under 5% of the peak: no input knob


@pytest.mark.torch
def test_a_factory_that_starts_a_process_neither_hangs_the_plan_nor_leaves_it(tmp_path, capsys, monkeypatch):
    """The planner's output goes to files and its whole session is killed when it exits: a process the user's
    factory started (and keeps) holds no pipe the plan would wait on, and does not outlive the plan."""
    import os
    import signal
    import subprocess

    marker = f"sleep {os.getpid() % 1000 + 5000}"
    (tmp_path / "net.py").write_text(
        MODEL_FILE
        + f"""

def forks():
    import subprocess
    subprocess.Popen({marker.split()!r})
    return make()
"""
    )
    monkeypatch.chdir(tmp_path)
    assert (
        main(["plan", "--model", "net.py:forks", "--input", "net.py:inputs", "--world-size", "2", "--json", "--timeout", "120"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["rows"][0]["blocks"] == 3
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    for pid in left:
        os.kill(int(pid), signal.SIGKILL)
    assert left == []


def test_http_plan_route_validates_and_refuses_code():
    from fastapi.testclient import TestClient

    from fsdp_skill.adapters.http.app import create_app

    with TestClient(create_app()) as client:
        body = {"transformer": SMALL.replace("dim=64", "dim=66")}
        r = client.post("/v1/plan", json=body)
        assert r.status_code == 400 and "dim(66) is not a multiple of heads(4)" in r.json()["error"]
        r = client.post("/v1/plan", json={**body, "model": "evil.py:f"})
        assert r.status_code == 422 and r.json()["code"] == "invalid_request"
        r = client.post(
            "/v1/plan", json={"transformer": {"layers": 2, "dim": 66, "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 256}}
        )
        assert r.status_code == 400 and "dim(66) is not a multiple of heads(4)" in r.json()["error"]
        r = client.post("/v1/plan", json={"transformer": {"layers": 2}})
        assert r.status_code == 422 and r.json()["code"] == "invalid_request"
        spec = dict(item.split("=") for item in SMALL.split(","))
        for wrong in (
            {"world_size": "8"},
            {"world_size": 8.0},
            {"cpu_offload": "true"},  # not coerced, as MCP
            {"transformer": {**{k: int(v) for k, v in spec.items()}, "layers": "2"}},
            {"transformer": {**{k: int(v) for k, v in spec.items()}, "layers": True}},
        ):
            r = client.post("/v1/plan", json={"transformer": SMALL, **wrong})
            assert r.status_code == 422 and r.json()["code"] == "invalid_request", wrong
        r = client.post("/v1/plan", json={"transformer": SMALL, "world_size": 4, "mesh": "2x2"})
        assert r.status_code == 400 and "not both" in r.json()["error"]
        r = client.post("/v1/plan", json={"transformer": SMALL, "world_size": 8, "reshard_after_forward": 12345678908})
        assert r.status_code == 400 and "reshard_after_forward(12345678908)" in r.json()["error"]  # as sent, whole


@pytest.mark.torch
def test_plan_memory_tool_and_http_route_plan_the_same():
    from fastapi.testclient import TestClient

    from fsdp_skill.adapters.http.app import create_app
    from fsdp_skill.adapters.tools import invoke

    args = {"transformer": SMALL, "world_size": 2, "seq": 16, "gpu_memory_gib": 0.001}
    tool = invoke("plan_memory", args)
    with TestClient(create_app()) as client:
        r = client.post("/v1/plan", json=args)
        assert r.status_code == 200
        again = client.post(
            "/v1/plan",
            json={
                **args,
                "transformer": r.json()["transformer"],  # the report's own
                "reshard_after_forward": r.json()["rows"][0]["setting"]["reshard_after_forward"],
            },
        )
    assert again.status_code == 200 and again.json()["rows"][0]["peak_bytes"] == tool.rows[0].peak_bytes
    http = r.json()["rows"][0]
    assert http["peak_bytes"] == tool.rows[0].peak_bytes
    assert http["fit"]["status"] == "does not fit"  # 1 MiB: under the CUDA-context estimate alone


@pytest.mark.parametrize(
    "question, expect",
    [
        ("Will a 70B model fit on 16 GPUs with 80GB each using FSDP?", "layers=80,dim=8192"),
        ("How much memory does FSDP need for an 8B model?", "layers=32,dim=4096"),
        ("用 FSDP 训练 70B 模型 8 张卡 显存够吗", "layers=80"),
        ("Will a 13B model fit on 16 H100s?", "layers=40,dim=5120"),
        ("can I train 70b on 32 A100 40GB with FSDP", "--world-size 32 --seq 4096 --gpu-memory 40GiB"),
        ("llama 8b OOM with FSDP on 8 RTX 4090", "--gpu-memory 24GiB"),
        ("how much memory for qwen 32B with fsdp2", "layers=64,dim=5120"),
        ("7B with FSDP on 4x 24GB GPUs, will it fit?", "kv_heads=32,ffn=11008,vocab=32000 --world-size 4"),
        ("Will Llama 3 8B fit on 8 H100s?", "--world-size 8 --seq 4096 --gpu-memory 80GiB"),  # no API named: abstains
        (
            "Can I train Qwen 32B on 8xH200?",
            "layers=64,dim=5120,heads=40,kv_heads=8,ffn=27648,vocab=152064 --world-size 8 --seq 4096 --gpu-memory 141GiB",
        ),
        ("用4张4090微调7B，显存够吗", "--world-size 4 --seq 4096 --gpu-memory 24GiB"),
        ("70B on 16 nodes of 8 H100, will it fit?", "--world-size 128"),
        ("7B on one T4, will it fit?", "--world-size 1 --seq 4096 --gpu-memory 16GiB"),
    ],
)
def test_ask_points_fit_questions_at_plan(question, expect):
    from fsdp_skill.core.answer import ask

    ans = ask(question, verify=False, with_api=False)
    assert ans.plan and ans.plan.startswith("fsdp-skill plan --transformer") and expect in ans.plan
    assert not ans.abstained or "the plan command below measures" in ans.reason
    assert "16 GPUs" not in question or "--world-size 16" in ans.plan
    for other in (
        "How do I use FSDP2 mixed precision with bf16?",
        "best fit for reshard_after_forward?",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "how much memory does NCCL use per communicator",
        "my 7B training job runs slow on 8 GPUs",
        "what is the best fit for reshard_after_forward with 8 GPUs",
    ):
        assert ask(other, verify=False, with_api=False).plan is None, other


def test_every_preset_is_a_valid_transformer():
    from fsdp_skill.core.plan.hint import PRESETS
    from fsdp_skill.core.plan.spec import parse_transformer

    for billions, spec in PRESETS.items():
        t = parse_transformer(spec)
        params = (
            2 * t.vocab * t.dim
            + t.dim
            + t.layers * (t.dim * t.dim * 2 + 2 * t.dim * (t.dim // t.heads * t.kv_heads) + 3 * t.dim * t.ffn + 2 * t.dim)
        )
        assert 0.75 < params / (billions * 1e9) < 1.3, (billions, params)


def test_markdown_answer_shows_the_plan_command():
    from fsdp_skill.adapters.cli.render import answer_markdown
    from fsdp_skill.core.answer import ask

    text = answer_markdown(ask("Will a 70B model fit on 64 GPUs with FSDP?", verify=False, with_api=False))
    assert "```sh\nfsdp-skill plan --transformer layers=80" in text and "--world-size 64" in text


def test_the_terminal_prints_the_plan_command_on_one_copyable_line():
    import io

    from rich.console import Console

    from fsdp_skill.adapters.cli.render import print_answer
    from fsdp_skill.core.answer import ask

    ans = ask("Will a 70B model fit on 64 GPUs with FSDP?", verify=False, with_api=False)
    out = io.StringIO()
    print_answer(ans, Console(file=out, width=80))
    assert ans.plan in out.getvalue().splitlines()  # whole, unwrapped, with no panel border around it


def test_an_abstained_fit_question_prints_the_plan_command_its_reason_points_at():
    """ "Will Llama 3 8B fit on 8 H100s?" names no API, so the answer abstains; its reason says the plan command below
    measures it, and the terminal and markdown views print that command (the JSON carries it as ``plan``)."""
    import io

    from rich.console import Console

    from fsdp_skill.adapters.cli.render import answer_markdown, print_answer
    from fsdp_skill.core.answer import ask

    ans = ask("Will Llama 3 8B fit on 8 H100s?", verify=False, with_api=False)
    assert ans.abstained and "the plan command below measures" in (ans.reason or "")
    assert ans.plan and ans.plan.startswith("fsdp-skill plan --transformer")
    out = io.StringIO()
    print_answer(ans, Console(file=out, width=80))
    lines = out.getvalue().splitlines()
    assert ans.plan in lines and lines.index(ans.plan) > next(i for i, ln in enumerate(lines) if "out of scope" in ln)
    text = answer_markdown(ans)
    assert f"```sh\n{ans.plan}\n```" in text and text.index("**Out of scope.**") < text.index(ans.plan)


@pytest.mark.torch
def test_a_meta_device_or_parameterless_model_is_told_what_to_do(tmp_path, capsys, monkeypatch):
    (tmp_path / "odd.py").write_text(
        "import torch\n\n\ndef meta():\n    with torch.device('meta'):\n        return torch.nn.Linear(8, 8)\n\n\n"
        "def empty():\n    return torch.nn.Sequential(torch.nn.ReLU())\n\n\n"
        "def moved():\n    return torch.nn.Linear(8, 8).to('meta')\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "--model", "odd.py:meta", "--world-size", "2"]) == 2
    err = capsys.readouterr().err
    assert "built 2 of 2 parameters on the meta device (weight, bias)" in err and "drop torch.device('meta')" in err
    assert main(["plan", "--model", "odd.py:empty", "--world-size", "2"]) == 2
    err = capsys.readouterr().err
    assert "returned a Sequential with no parameters" in err and "--transformer SPEC" in err and "--model a factory" in err
    # a module moved after it was built (.to('meta'), .cuda()) fails inside the factory under FakeTensorMode
    assert main(["plan", "--model", "odd.py:moved", "--world-size", "2"]) == 2
    err = capsys.readouterr().err
    assert "odd.py:moved() failed" in err and "moves a built module to a device" in err and "default device" in err


NOISY_FACTORY = """

def noisy():
    import sys
    print('{"ok": false, "kind": "model", "error": "printed by the factory"}')
    print('{"ok": true, "peak_bytes": 1, "blocks": 0}')
    print("no newline: ", end="")
    sys.stdout = sys.stderr  # and never put back
    return make()
"""


def _wrapper(path, body: str) -> str:
    """A ``--python`` wrapper script around this interpreter (``$PY``), with the shell ``body``."""
    import sys

    path.write_text(f'#!/bin/sh\nPY="{sys.executable}"\n{body}\n')
    path.chmod(0o755)
    return str(path)


@pytest.mark.torch
def test_what_a_factory_or_a_python_wrapper_prints_is_not_a_result(tmp_path, capsys, monkeypatch):
    """The child's result lines are framed with this run's nonce: a factory that prints JSON shaped like them
    (and leaves ``sys.stdout`` replaced), under a ``--python`` wrapper that prints JSON too, plans the same as a
    quiet one; a wrapper that runs no Python for the child is one line naming it."""
    (tmp_path / "net.py").write_text(MODEL_FILE + NOISY_FACTORY)
    monkeypatch.chdir(tmp_path)
    argv = ["plan", "--input", "net.py:inputs", "--world-size", "2", "--json", "--param-dtype", "none"]
    assert main([*argv, "--model", "net.py:make"]) == 0
    quiet = json.loads(capsys.readouterr().out)["rows"][0]
    noisy_python = _wrapper(tmp_path / "noisy-python", """echo '{"ok": true}'\necho '{"ok": false}'\nexec "$PY" "$@\"""")
    code = main([*argv, "--model", "net.py:noisy", "--python", noisy_python])
    out, err = capsys.readouterr()
    assert code == 0, err
    noisy = json.loads(out)["rows"][0]
    assert noisy["blocks"] == quiet["blocks"] == 3
    keys = ("peak_bytes", "peak_by_category", "peak_phase", "sharded_param_bytes", "optimizer_state_bytes")
    assert {k: noisy[k] for k in keys} == {k: quiet[k] for k in keys}
    # the probe runs, the planner's child does not: the wrapper prints only junk for it
    junk = _wrapper(
        tmp_path / "junk-python",
        """case "$1" in */probe.py) exec "$PY" "$@";; esac\necho '{"ok": true, "peak_bytes": 1}'\necho junk""",
    )
    assert main([*argv, "--model", "net.py:make", "--python", junk]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "error": f"the planner's child process ({junk}) gave 0 result(s) for 1 setting(s): it printed 'junk'",
        "code": "error",
    }


def test_a_factory_file_name_that_is_not_utf_8_is_one_line_saying_what_to_do(tmp_path, capsys):
    """The plan request travels as JSON, which cannot hold a non-UTF-8 file name: the message names the file
    (as check and verify show such names) and what to do, not pydantic's 'Input should be a valid string'."""
    name = os.fsdecode(b"m\xe9ta.py")
    (tmp_path / name).write_text("import torch.nn as nn\ndef make():\n    return nn.Linear(4, 4)\n")
    code = main(["plan", "--model", f"{tmp_path / name}:make", "--world-size", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "m\\xe9ta.py:make: the file name is not UTF-8" in err and "rename the file" in err, err


@pytest.mark.torch
def test_the_built_in_planner_runs_no_module_of_the_callers_directory(tmp_path, monkeypatch, capsys):
    """A ``random.py`` (or any stdlib name) in the caller's directory is not imported by the planner's child: only a
    ``--model pkg.module:fn`` reference looks there, after torch and the stdlib are loaded."""
    (tmp_path / "random.py").write_text("open('ran_marker', 'w').write('x')\nraise SystemExit(7)\n")
    monkeypatch.chdir(tmp_path)
    code = main(
        ["plan", "--transformer", "layers=2,dim=64,heads=4,kv_heads=4,ffn=256,vocab=1000", "--world-size", "2", "--seq", "16"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "peak" in out, out
    assert not (tmp_path / "ran_marker").exists()
