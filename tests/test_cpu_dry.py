"""CPU dry run (`verify --cpu`, `check --run --cpu`, MCP `verify_script` cpu): a CUDA script on gloo ranks.

The GPU-style script ``tests/data/cpu_dry/gpu_train.py`` (NCCL, set_device(local_rank), .cuda(), device="cuda",
DDP(device_ids=[local_rank]), FSDP2 on init_device_mesh("cuda"), FSDP1 with device_id, autocast("cuda", bf16),
GradScaler("cuda")) passes under --cpu with the losses of its CPU version (``--device cpu --backend gloo``); with an
injected mistake it fails naming the rank, the collective and the line; a CUDA-only extension exits 2.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fsdp_skill.main import main
from fsdp_skill.runtime import cache
from fsdp_skill.runtime.models import RankResult, Verdict

DATA = Path(__file__).parent / "data" / "cpu_dry"
TRAIN = str(DATA / "gpu_train.py")
CPU_VERSION = ["--device", "cpu", "--backend", "gloo"]
LOSS = re.compile(r"rank (\d) step (\d) loss (-?\d+\.\d+)")


def _verify(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["verify", "--json", "--timeout", "60", *argv])
    return code, json.loads(capsys.readouterr().out)[0]


def _losses(verdict: dict) -> dict[tuple[int, int], float]:
    """(rank, step) -> the loss each rank printed."""
    out = {}
    for r in verdict["ranks"]:
        for m in LOSS.finditer(r["output_tail"]):
            out[int(m[1]), int(m[2])] = float(m[3])
    return out


def _line_of(text: str) -> int:
    """The line of gpu_train.py that holds ``text`` (1-based)."""
    lines = Path(TRAIN).read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if text in ln)


@pytest.mark.slow
@pytest.mark.parametrize(
    "mode,amp", [("ddp", "none"), ("fsdp2", "bf16"), ("fsdp1", "scaler"), ("ddp", "scaler")], ids=lambda x: x
)
def test_gpu_script_passes_with_the_losses_of_its_cpu_version(capsys, mode, amp):
    code, dry = _verify(capsys, "--cpu", TRAIN, "--", "--mode", mode, "--amp", amp)
    assert code == 0 and dry["status"] == "passed" and dry["dry_run"] == "cpu", dry
    code, real = _verify(capsys, TRAIN, "--", "--mode", mode, "--amp", amp, *CPU_VERSION)
    assert code == 0 and real["status"] == "passed" and real["dry_run"] is None, real
    dry_losses, real_losses = _losses(dry), _losses(real)
    assert len(dry_losses) == 6, dry  # 2 ranks x 3 steps
    for k, v in real_losses.items():
        assert dry_losses[k] == pytest.approx(v, abs=1e-6), f"{k}: dry {dry_losses[k]} vs cpu {v} (tolerance 1e-6)"


@pytest.mark.slow
def test_report_first_line_says_cpu_dry_run(capsys):
    code = main(["verify", "--cpu", TRAIN, "--", "--mode", "ddp", "--steps", "1"])
    first = capsys.readouterr().out.splitlines()[0]
    assert code == 0 and first.startswith("PASS") and "CPU dry run" in first, first


@pytest.mark.slow
@pytest.mark.parametrize(
    "mode,bug,rank,op,text",
    [
        ("fsdp2", "rank0-eval", 0, "_ALLGATHER_BASE", 'print("eval"'),
        ("ddp", "rank0-collective", 0, "ALLREDUCE", "dist.all_reduce(flag)"),
        ("fsdp1", "shapes", 0, "ALLREDUCE", "dist.all_reduce(counts)"),
        ("fsdp2", "early-stop", 1, "_ALLGATHER_BASE", "loss = ((model(x)"),  # rank 1's next forward
    ],
    ids=["rank0-eval", "rank0-collective", "shapes", "early-stop"],
)
def test_injected_mistake_names_rank_collective_and_line(capsys, mode, bug, rank, op, text):
    code, v = _verify(capsys, "--cpu", TRAIN, "--", "--mode", mode, "--bug", bug, "--steps", "2")
    assert code == 1 and v["status"] == "failed" and v["dry_run"] == "cpu", v
    culprit = v["ranks"][rank]
    assert culprit["error_at"] == f"gpu_train.py:{_line_of(text)}", culprit
    assert "Detected mismatch between collectives" in culprit["error"] and f"OpType={op}" in culprit["error"], culprit
    if bug == "shapes":
        assert "Tensor shapes: 2vs 1" in v["reason"] or "Tensor shapes: 1vs 2" in v["reason"], v["reason"]
    else:  # the other rank went on to its barrier: the mismatch names both places
        other = v["ranks"][1 - rank]
        assert other["error_at"] == f"gpu_train.py:{_line_of('dist.barrier()')}" and "OpType=BARRIER" in other["error"], other


@pytest.mark.slow
def test_rank0_only_state_dict_gather_is_reported_as_a_hang_with_both_places(capsys):
    code = main(["verify", "--json", "--cpu", "--timeout", "20", TRAIN, "--", "--mode", "fsdp2", "--bug", "rank0-state-dict"])
    """Both places are named, in the form the torch gives: up to 2.13 the gather is an all-gather that DETAIL's
    checking wrapper does not see, so the run hangs (a timeout naming where each rank blocked); on 2.14.1 it is
    a coalesced all-gather the wrapper checks, so the ranks fail at once with a mismatch (ALLGATHER_INTO_TENSOR_
    COALESCED on rank 0 against BARRIER on rank 1), each at its own line."""
    v = json.loads(capsys.readouterr().out)[0]
    assert code == 1 and v["status"] in ("timeout", "failed") and v["dry_run"] == "cpu", v
    gather, barrier = _line_of("get_model_state_dict(model"), _line_of("dist.barrier()")
    if v["status"] == "timeout":
        assert f"rank 0 blocked in get_model_state_dict at gpu_train.py:{gather}" in v["reason"], v["reason"]
        assert f"rank 1 blocked in barrier at gpu_train.py:{barrier}" in v["reason"], v["reason"]
        return
    zero, one = v["ranks"]
    assert zero["error_at"] == f"gpu_train.py:{gather}" and "OpType=ALLGATHER" in zero["error"], zero
    assert one["error_at"] == f"gpu_train.py:{barrier}" and "OpType=BARRIER" in one["error"], one
    assert "Detected mismatch between collectives" in v["reason"], v["reason"]


@pytest.mark.slow
def test_cuda_only_extension_exits_2_with_the_reason(capsys):
    code = main(["verify", "--cpu", str(DATA / "flash_train.py")])
    out = capsys.readouterr().out
    assert code == 2, out
    assert "cannot dry-run on CPU: import of flash_attn (a CUDA-only extension), at flash_train.py:11" in out, out
    assert out.startswith("SKIP") and "CPU dry run" in out.splitlines()[0], out


@pytest.mark.slow
def test_without_cpu_a_cuda_script_still_fails_on_this_host(capsys):
    code, v = _verify(capsys, TRAIN, "--", "--mode", "ddp", "--steps", "1")
    assert code == 1 and v["status"] == "failed" and v["dry_run"] is None, v
    assert "NCCL" in v["reason"], v["reason"]


@pytest.mark.slow
def test_torchrun_launcher_runs_the_dry_run(capsys):
    code, v = _verify(capsys, "--cpu", "--launcher", "torchrun", TRAIN, "--", "--mode", "fsdp2", "--amp", "bf16")
    assert code == 0 and v["status"] == "passed" and v["launcher"] == "torchrun" and v["dry_run"] == "cpu", v
    assert len(_losses(v)) == 6, v


@pytest.mark.slow
def test_check_run_cpu_runs_the_dry_run(capsys):
    main(["check", "--json", "--run", "--cpu", TRAIN, "--", "--mode", "ddp", "--steps", "1"])
    verdict = json.loads(capsys.readouterr().out)["verdict"]
    assert verdict["status"] == "passed" and verdict["dry_run"] == "cpu", verdict


@pytest.mark.slow
def test_check_run_cpu_refusal_exits_2(capsys):
    code = main(["check", "--run", "--cpu", str(DATA / "flash_train.py")])
    out = capsys.readouterr().out
    assert code == 2 and "cannot dry-run on CPU: import of flash_attn" in out, out


@pytest.mark.slow
def test_mcp_verify_script_cpu_flag(tmp_path):
    from fsdp_skill.core.toolspec import VerifyScriptInput, verify_script_spec

    spec = verify_script_spec(str(tmp_path))
    code = Path(TRAIN).read_text()
    run = spec.call(VerifyScriptInput(code=code, cpu=True, args=["--mode", "fsdp2", "--steps", "1"]), None)
    assert run.verification.status == "passed" and run.verification.dry_run == "cpu", run.verification
    run = spec.call(VerifyScriptInput(code=code, args=["--mode", "fsdp2", "--steps", "1"]), None)
    assert run.verification.status == "failed" and run.verification.dry_run is None, run.verification


@pytest.mark.parametrize(
    "argv,message",
    [
        (["verify", "--cpu", "--backend", "nccl", TRAIN], "--cpu runs the ranks on gloo"),
        (["check", "--run", "--cpu", "--backend", "nccl", TRAIN], "--cpu runs the ranks on gloo"),
        (["check", "--cpu", TRAIN], "--cpu only apply with --run"),
    ],
    ids=["verify-nccl", "check-nccl", "check-without-run"],
)
def test_bad_cpu_combinations_are_one_line_exit_2(capsys, argv, message):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err


def _verdict(dry_run: str | None) -> Verdict:
    ranks = [RankResult(rank=r, exit_code=0) for r in range(2)]
    return Verdict(
        status="passed", code_sha256="a" * 64, backend="gloo", world_size=2, torch_version="2.13.0", python="/p",
        launcher="warm", seconds=1.0, ranks=ranks, dry_run=dry_run,
    )  # fmt: skip


def test_cache_keeps_dry_run_and_real_verdicts_apart():
    real = cache.VerdictKey("a" * 64, 2, "gloo", "2.13.0", "/p", "warm", "e")
    dry = cache.VerdictKey("a" * 64, 2, "gloo", "2.13.0", "/p", "warm", "e", "cpu")
    assert real.name != dry.name
    assert cache.store(dry, _verdict("cpu"))
    assert cache.load(real) is None  # a dry run's verdict never answers for a real run
    assert cache.load(dry) is not None and cache.load(dry).dry_run == "cpu"
    assert cache.store(real, _verdict(None))
    assert cache.load(real).dry_run is None
    # a file that says it is a dry run under a real run's name (or the reverse) is a miss
    (cache.state_path() / "verdicts" / f"{real.name}.json").write_text(_verdict("cpu").model_dump_json())
    assert cache.load(real) is None


@pytest.mark.slow
def test_policy_stores_a_dry_run_under_its_own_key():
    from fsdp_skill.runtime import policy, target
    from fsdp_skill.runtime.api import Job, cached_verdict

    code = (
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('nccl')\n"
        "t = torch.ones(2, device='cuda')\n"
        "dist.all_reduce(t)\n"
        "assert t.tolist() == [2.0, 2.0]\n"
        "dist.destroy_process_group()\n"
    )
    v = policy.verify(Job(code=code, timeout=60, dry_run="cpu"), launcher="warm", use_cache=True, facts=target.facts(None))
    assert v.status == "passed" and v.dry_run == "cpu" and not v.cached, v
    assert cached_verdict(code) is None  # the real run's key finds nothing
    again = policy.verify(Job(code=code, timeout=60, dry_run="cpu"), launcher="warm", use_cache=True, facts=target.facts(None))
    assert again.cached and again.dry_run == "cpu"


_HEAD = "import importlib.util\nimport torch\nimport torch.distributed as dist\n\ndist.init_process_group('nccl')\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    "body,code,text",
    [
        ("x = torch.ones(2, device='cuda').to(torch.float8_e4m3fn)\n", 2, "fp8 dtype torch.float8_e4m3fn, at train.py:6"),
        ("torch.cuda.memory._record_memory_history()\n", 2, "torch.cuda.memory.record_memory_history"),
        ("print(importlib.util.find_spec('flash_attn'))\n", 0, "PASS"),  # a probe is answered as usual
        ("assert torch.cuda.max_memory_allocated() == 0 and torch.cuda.device_count() == 2\n", 0, "PASS"),
        (
            "torch.nn.SyncBatchNorm.convert_sync_batchnorm(torch.nn.Sequential(torch.nn.BatchNorm1d(4)))\n",
            2,
            "cannot dry-run on CPU: torch.nn.SyncBatchNorm (CUDA only in torch; BatchNorm would not sync statistics), at train.py:6",
        ),
        (
            "import torch.multiprocessing as mp\nmp.spawn(print, nprocs=2)\n",
            2,
            "cannot dry-run on CPU: the script starts its own ranks (torch.multiprocessing.spawn); run the worker function",
        ),
        ("torch.cuda.current_stream().synchronize(); torch.cpu.current_stream().synchronize()\n", 0, "PASS"),  # FSDP1 offload
    ],
    ids=["fp8", "memory-history", "probe", "memory-query", "sync-batchnorm", "mp-spawn", "cpu-stream-synchronize"],
)
def test_what_cannot_be_mapped_exits_2(tmp_path, capsys, body, code, text):
    script = tmp_path / "train.py"
    script.write_text(_HEAD + body + "dist.destroy_process_group()\n")
    got = main(["verify", "--cpu", str(script)])
    out = capsys.readouterr().out
    assert got == code and text in out, out


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["warm", "torchrun"])
def test_dry_run_reaps_children_and_detached_grandchildren(tmp_path, monkeypatch, launcher):
    """tests/data/scripts/spawn_children.py under --cpu (as tests/test_supervision.py runs it without): each rank
    starts a sleeper in a session of its own and a plain child; once the verdict is back none of them is alive."""
    import os

    from fsdp_skill.runtime import policy, target
    from fsdp_skill.runtime.api import Job

    folder = tmp_path / "pids"
    folder.mkdir()
    monkeypatch.setenv("SUPERVISION_PIDS", str(folder))
    monkeypatch.delenv("SUPERVISION_HANG", raising=False)
    code = (Path(__file__).parent / "data" / "scripts" / "spawn_children.py").read_text()
    job = Job(code=code, filename="spawn_children.py", timeout=60, dry_run="cpu")
    v = policy.verify(job, launcher=launcher, use_cache=False, facts=target.facts(None))
    assert v.status == "passed" and v.dry_run == "cpu", v.reason
    pids = [int(p) for f in sorted(folder.glob("rank*.pids")) for p in f.read_text().split()]
    assert len(pids) == 6 and [p for p in pids if os.path.exists(f"/proc/{p}")] == [], pids
