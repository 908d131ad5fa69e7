"""Terminal rendering of a PlanReport (rich tables)."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from fsdp_skill.core.plan.models import CATEGORY_ORDER, PlanReport

GIB = 2**30
_SHORT = {"sharded_param": "sharded params", "unsharded_param": "unsharded params", "buffer": "buffers",
          "sharded_grad": "sharded grads", "unsharded_grad": "unsharded grads", "activation": "activations",
          "temp": "temporaries", "all_gather": "all-gather buffers", "reduce_scatter": "reduce-scatter buffers",
          "optimizer_state": "optimizer state", "inputs": "inputs"}


def gib(n: int) -> str:
    """Bytes as GiB with two decimals."""
    return f"{n / GIB:.2f}"


def print_plan(report: PlanReport, console: Console | None = None) -> None:
    """Print the per-rank table (one row per setting), the fit verdicts, estimates, honesty lines and suggestions."""
    console = console or Console()
    console.print(f"[bold]{report.model}[/bold]  {report.params / 1e9:.2f} B parameters  (torch {report.torch_version}, "
                  f"FSDP2 fully_shard per block and root)")
    cats = [c for c in CATEGORY_ORDER if any(r.peak_by_category.get(c) for r in report.rows)]
    rows = Table(title="per-rank peak memory of one training step", title_justify="left")
    for col in ("#", "setting", "peak GiB", "phase"):
        rows.add_column(col, justify="right" if col in ("#", "peak GiB") else "left")
    if report.gpu_memory_bytes:
        rows.add_column(f"fit in {gib(report.gpu_memory_bytes)} GiB (left after estimates)")
    for i, r in enumerate(report.rows, 1):
        cells = [str(i), r.label, gib(r.device_peak_bytes), r.peak_phase]
        if r.fit:
            color = {"fits": "green", "tight": "yellow", "does not fit": "red"}[r.fit.status]
            cells.append(f"[{color}]{r.fit.status}[/{color}] ({gib(r.fit.headroom_after_estimates_bytes)})")
        rows.add_row(*cells)
    console.print(rows)
    by_cat = Table(title="at the peak, by category (GiB)", title_justify="left")
    by_cat.add_column("category")
    for i in range(1, len(report.rows) + 1):
        by_cat.add_column(f"#{i}", justify="right")
    for c in cats:
        by_cat.add_row(_SHORT[c], *(gib(r.peak_by_category.get(c, 0)) for r in report.rows))
    console.print(by_cat)
    for i, r in enumerate(report.rows, 1):
        console.print(f"  #{i} steady shards per rank: params {gib(r.sharded_param_bytes)}, grads "
                      f"{gib(r.sharded_grad_bytes)}, optimizer {gib(r.optimizer_state_bytes)} GiB ({r.seconds:.1f} s)",
                      highlight=False)
    console.print("[bold]not measured — estimates[/bold] (per GPU, for the largest row):")
    for e in report.estimates:
        console.print(f"  {e.name}: {gib(e.low_bytes)}–{gib(e.high_bytes)} GiB — {e.basis}", highlight=False)
    console.print(report.measured, highlight=False)
    for line in report.not_measured:
        console.print(f"  - {line}", highlight=False)
    console.print("[bold]to lower the peak[/bold]:")
    for s in report.suggestions:
        console.print(f"  - {s.text}  [dim](fsdp-skill show {s.section})[/dim]", highlight=False)
