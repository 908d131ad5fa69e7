"""Terminal rendering of a PlanReport (rich tables)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from fsdp_skill.core.plan.advice import BYTE_UNITS, format_bytes
from fsdp_skill.core.plan.models import CATEGORY_ORDER, PlanReport

_SHORT = {
    "sharded_param": "sharded params",
    "unsharded_param": "unsharded params",
    "buffer": "buffers",
    "sharded_grad": "sharded grads",
    "unsharded_grad": "unsharded grads",
    "activation": "activations",
    "temp": "temporaries",
    "all_gather": "all-gather buffers",
    "reduce_scatter": "reduce-scatter buffers",
    "optimizer_state": "optimizer state",
    "inputs": "inputs",
}


def _unit(report: PlanReport) -> int:
    """The unit of the report's tables: the one the largest peak reaches (GiB for any real model)."""
    top = max(max(r.device_peak_bytes for r in report.rows), report.gpu_memory_bytes or 0)
    return next((factor for factor, _ in BYTE_UNITS if top >= factor), 1)


def _wrapping(report: PlanReport) -> str:
    blocks = report.rows[0].blocks
    return f"on {blocks} blocks and the root" if blocks else "on the root only: no nn.ModuleList of blocks"


def _num(n: int, unit: int) -> str:
    return f"{n / unit:.2f}" if unit > 1 else str(n)


def count(n: int) -> str:
    """A parameter count: ``8.03 B``, ``12.4 M``, ``5.1 K`` or the number."""
    for factor, name in ((10**9, "B"), (10**6, "M"), (10**3, "K")):
        if n >= factor:
            return f"{n / factor:.2f} {name}"
    return str(n)


def print_plan(report: PlanReport, console: Console | None = None) -> None:
    """Print the per-rank table (one row per setting), the fit verdicts, estimates, honesty lines and suggestions."""
    console = console or Console()
    unit = _unit(report)
    name = dict(BYTE_UNITS).get(unit, "B")
    console.print(
        f"[bold]{report.model}[/bold]  {count(report.params)} parameters  (torch {report.torch_version}, "
        f"FSDP2 fully_shard {_wrapping(report)})"
    )
    cats = [c for c in CATEGORY_ORDER if any(r.peak_by_category.get(c) for r in report.rows)]
    rows = Table(title="per-rank peak memory of one training step", title_justify="left")
    for col in ("#", "setting", f"GPU peak {name}", "phase"):
        rows.add_column(col, justify="right" if col in ("#", f"GPU peak {name}") else "left")
    if report.gpu_memory_bytes:
        rows.add_column(f"fit in {format_bytes(report.gpu_memory_bytes)} (left after estimates)")
    for i, r in enumerate(report.rows, 1):
        cells = [str(i), r.label, _num(r.device_peak_bytes, unit), r.peak_phase]
        if r.fit:
            color = {"fits": "green", "tight": "yellow", "does not fit": "red"}[r.fit.status]
            cells.append(f"[{color}]{r.fit.status}[/{color}] ({format_bytes(r.fit.headroom_after_estimates_bytes)})")
        rows.add_row(*cells)
    console.print(rows)
    offload = any(r.device_peak_by_category for r in report.rows)
    by_cat = Table(
        title=f"at the peak, by category ({name})"
        + ("; cpu-offload rows: on the GPU at its own peak, host state below" if offload else ""),
        title_justify="left",
    )
    by_cat.add_column("category")
    for i in range(1, len(report.rows) + 1):
        by_cat.add_column(f"#{i}", justify="right")
    for c in cats:
        by_cat.add_row(_SHORT[c], *(_num((r.device_peak_by_category or r.peak_by_category).get(c, 0), unit) for r in report.rows))
    console.print(by_cat)
    for i, r in enumerate(report.rows, 1):
        where = "in host memory (cpu-offload)" if r.device_peak_by_category else "per rank"
        console.print(
            f"  #{i} steady shards {where}: params {format_bytes(r.sharded_param_bytes, unit)}, grads "
            f"{format_bytes(r.sharded_grad_bytes, unit)}, optimizer {format_bytes(r.optimizer_state_bytes, unit)} ({r.seconds:.1f} s)",
            highlight=False,
        )
    console.print("[bold]not measured — estimates[/bold] (per GPU, for the largest row):")
    for e in report.estimates:
        console.print(f"  {e.name}: {format_bytes(e.low_bytes)}–{format_bytes(e.high_bytes)} — {e.basis}", highlight=False)
    console.print(report.measured, highlight=False)
    for line in report.not_measured:
        console.print(f"  - {line}", highlight=False)
    console.print("[bold]to lower the peak[/bold]:")
    for s in report.suggestions:
        console.print(f"  - {s.text}  [dim](fsdp-skill show {s.section})[/dim]", highlight=False)
    if report.largest is not None:
        console.print(largest_line(report), highlight=False)
    timed = [(i, r.step_time) for i, r in enumerate(report.rows, 1) if r.step_time is not None]
    if timed:
        table = Table(title=f"step time — an ESTIMATE, not measured ({timed[0][1].gpu})", title_justify="left")
        for col in ("#", "compute s", "collectives s", "step s", "tokens/s per GPU", "recompute share"):
            table.add_column(col, justify="right")
        for i, st in timed:
            table.add_row(
                str(i),
                f"{st.compute_seconds[0]:.3g}–{st.compute_seconds[1]:.3g}",
                f"{st.comm_seconds[0]:.3g}–{st.comm_seconds[1]:.3g}",
                f"{st.step_seconds[0]:.3g}–{st.step_seconds[1]:.3g}",
                f"{st.tokens_per_second[0]:,.0f}–{st.tokens_per_second[1]:,.0f}",
                f"{st.recompute_flops / (st.model_flops + st.recompute_flops):.0%}",
            )
        console.print(table)
        for line in timed[0][1].basis:
            console.print(f"  - {line}", highlight=False)


def largest_line(report: PlanReport) -> str:
    """The answer of ``--max-batch`` / ``--max-seq`` in one line (printed after the plan at its value)."""
    lf = report.largest
    assert lf is not None
    flag = "--batch" if lf.key == "batch" else "--seq"
    gpu = format_bytes(lf.gpu_memory_bytes)
    tried = ", ".join(f"{p.value}: {p.status}" for p in lf.probes)
    if lf.value is None:
        return f"largest {flag} that fits {gpu}: none, not even {lf.probes[0].value} (planned {tried}; the plan above is at {lf.probes[0].value})"
    status = {p.value: p.status for p in lf.probes}
    above = f"{lf.next_value}: {status[lf.next_value]}" if lf.next_value is not None else f"the limit, {lf.limit:,}, fits"
    return (
        f"largest {flag} that fits {gpu} (the peak with every estimate at its high end): {lf.value}; {above} "
        f"(planned {tried}, in {lf.child_runs} planner run(s); the plan above is at {lf.value})"
    )
