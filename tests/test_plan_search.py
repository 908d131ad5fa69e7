"""``plan --max-batch`` / ``--max-seq`` (fsdp_skill.core.plan.search): the answer is the largest value whose measured
row fits and the next one up does not, found in a few planner runs; with a stand-in planner (no torch) for the
search itself, and the CLI on the built-in transformer."""

from __future__ import annotations

import json

import pytest

from fsdp_skill.core.plan.advice import estimates, fit
from fsdp_skill.core.plan.models import PlanReport, PlanRow
from fsdp_skill.core.plan.search import MAX_ROUNDS, largest_fitting
from fsdp_skill.core.plan.spec import Setting
from fsdp_skill.main import main

GIB = 2**30


def fake_planner(peak, gpu: int, calls: list[list[int]], key: str = "batch"):
    """A plan() whose row for value v has device peak ``peak(v)`` bytes, with the real fit verdict and estimates."""

    def plan(settings: list[Setting]) -> PlanReport:
        calls.append([getattr(s, key) for s in settings])
        rows = []
        for s in settings:
            p = peak(getattr(s, key))
            row = PlanRow(
                setting=s,
                label=s.label(),
                world_size=s.world_size,
                peak_bytes=p,
                device_peak_bytes=p,
                peak_phase="backward",
                peak_by_category={"activation": p},
                sharded_param_bytes=0,
                sharded_grad_bytes=0,
                optimizer_state_bytes=0,
                blocks=2,
                seconds=0.0,
            )
            rows.append(row.model_copy(update={"fit": fit(row, gpu)}))
        return PlanReport(
            model="m",
            params=1,
            rows=rows,
            gpu_memory_bytes=gpu,
            estimates=estimates(max(rows, key=lambda r: r.device_peak_bytes)),
            measured="",
            not_measured=[],
            suggestions=[],
            command="",
            torch_version="x",
        )

    return plan


def truth(peak, gpu: int, limit: int) -> int | None:
    """The largest value that fits, by planning every value (what the search must find with few)."""
    best = None
    for v in range(1, limit + 1):
        row_fits = fake_planner(peak, gpu, [])([Setting(mesh=[8], batch=v)]).rows[0].fit.status == "fits"
        if row_fits:
            best = v
        else:
            break
    return best


@pytest.mark.parametrize(
    "peak",
    [
        lambda b: 20 * GIB + b * 3 * GIB,  # affine: the prediction is right
        lambda b: 10 * GIB + b * 2 * GIB + b * b * 50 * 2**20,  # grows faster than the two probes say
        lambda b: 30 * GIB + int(b**0.5 * 4 * GIB),  # grows slower
        lambda b: 16 * GIB + (b // 4) * 5 * GIB,  # steps: equal peaks for the first probes
    ],
    ids=["affine", "convex", "concave", "steps"],
)
def test_the_answer_is_exact_in_few_runs(peak):
    calls: list[list[int]] = []
    answer, report = largest_fitting(Setting(mesh=[8], batch=1), "batch", 80 * GIB, fake_planner(peak, 80 * GIB, calls))
    want = truth(peak, 80 * GIB, 200)
    assert answer.value == want and answer.next_value == want + 1, (answer, calls)
    assert [r.setting.batch for r in report.rows] == [want] and report.rows[0].fit.status == "fits"
    statuses = {p.value: p.status for p in answer.probes}
    assert statuses[want] == "fits" and statuses[want + 1] != "fits"
    assert answer.child_runs == len(calls) <= MAX_ROUNDS


def test_nothing_fits_and_everything_fits():
    calls: list[list[int]] = []
    none, report = largest_fitting(Setting(mesh=[8]), "batch", 8 * GIB, fake_planner(lambda b: 9 * GIB * b, 8 * GIB, calls))
    assert none.value is None and report.rows[0].setting.batch == 1 and len(calls) == 1
    calls.clear()
    every, _ = largest_fitting(Setting(mesh=[8]), "seq", 80 * GIB, fake_planner(lambda s: GIB, 80 * GIB, calls, "seq"))
    assert every.value == every.limit == 10_000_000 and every.next_value is None and every.child_runs <= MAX_ROUNDS


def test_cli_refuses_a_search_it_cannot_make(capsys):
    small = "layers=2,dim=64,heads=4,kv_heads=2,ffn=128,vocab=256"
    for argv, message in [
        ([], "--max-batch needs --gpu-memory"),
        (["--gpu-memory", "8GiB", "--sweep", "ac=none,per-block"], "--max-batch searches one setting"),
    ]:
        assert main(["plan", "--transformer", small, "--max-batch", *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    with pytest.raises(SystemExit):
        main(["plan", "--transformer", small, "--max-batch", "--max-seq", "--gpu-memory", "8GiB"])


@pytest.mark.torch
def test_cli_max_seq_on_the_built_in_transformer(capsys):
    small = "layers=2,dim=64,heads=4,kv_heads=2,ffn=128,vocab=256"
    # 2.5 GiB: the fixed estimates (CUDA context 1 GiB, NCCL 1 GiB) leave a few hundred MiB for the step
    code = main(["plan", "--transformer", small, "--world-size", "2", "--gpu-memory", "2.5GiB", "--max-seq", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    lf = report["largest"]
    assert lf["key"] == "seq" and lf["value"] and lf["next_value"] == lf["value"] + 1
    (row,) = report["rows"]
    assert row["setting"]["seq"] == lf["value"] and row["fit"]["status"] == "fits"
    statuses = {p["value"]: p["status"] for p in lf["probes"]}
    assert statuses[lf["next_value"]] != "fits" and lf["child_runs"] <= MAX_ROUNDS
