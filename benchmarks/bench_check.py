"""Speed of ``check``: each figure beside its target (issue 23's "Speed" must-show); exit 1 when one is missed.

1. a 2,000-line training file built from the knowledge's verified snippets: <= 0.2 s (in process; the CLI end
   to end is printed beside it, a new interpreter's start-up included);
2. 1,000 ``dist.barrier()`` lines under one ``if rank == 0:`` (1,000 findings): <= 1 s;
3. growth with findings, 10, 100 and 1,000 of them, in two series: rank-0 barriers in one ``if`` (figure 2's shape)
   and a training script of several rules (rank-0 collectives, a rank-0 call of a helper that reaches one, an
   optimizer built before ``fully_shard``); in each, the time per finding at 1,000 over that at 100 must stay <= 2
   (roughly linear; a quadratic checker gives about 10);
4. a 3,000-file repository: <= 30 s, in process (``check_paths`` on the folder) and through the CLI
   (``fsdp-skill check DIR``, one process). The files are ``--repo DIR``'s ``*.py`` files (real code: a checkout of
   torchtitan, nanoGPT, ...) copied round-robin into 3,000 files, by default this repository's own Python files,
   its check fixtures and the knowledge's snippets.

Figures 1-3 are the minimum over ``--rounds`` (the median is printed too); figure 4 is one run each. Each target
is judged on wall seconds; the CPU seconds of the work are printed beside them, with the load average, since on a
shared machine the wall figure also measures the other processes (a miss with the CPU figure inside the target
says so). Run: ``.venv/bin/python benchmarks/bench_check.py [--rounds 5] [--repo DIR] [--files N]``
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from fsdp_skill.core.check import check_paths, check_source
from fsdp_skill.core.knowledge.cards import load_knowledge

ROOT = Path(__file__).resolve().parent.parent
EXE = Path(sys.executable).parent / "fsdp-skill"
T = TypeVar("T")

TARGET_FILE_S = 0.2  # a 2,000-line file
TARGET_BARRIERS_S = 1.0  # 1,000 rank-0 barriers
TARGET_GROWTH = 2.0  # time per finding at 1,000 findings / at 100
TARGET_REPO_S = 30.0  # a 3,000-file repository

HEAD = """import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

rank = dist.get_rank()
"""

# one block of a training script, with 4 findings: two rank-0 collectives (FSD003), a rank-0 call of a helper that
# runs a barrier (FSD003 through the helper), an optimizer built before fully_shard (FSD001)
BLOCK = """

def save_{i}(model, path):
    dist.barrier()
    torch.save(model.state_dict(), path)


def step_{i}(model, optimizer, batch, rank):
    loss = model(batch).sum()
    loss.backward()
    optimizer.step()
    if rank == 0:
        dist.all_reduce(loss)
        print("step", loss.item())
        dist.barrier()
        save_{i}(model, "ckpt_{i}.pt")
    return loss


def setup_{i}(model):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    return optimizer
"""
BLOCK_FINDINGS = 4


def snippet_file(lines: int) -> str:
    """About ``lines`` lines of the knowledge's verified snippets, one after the other."""
    codes = [sp.code for sp in load_knowledge().snippets.values()]
    out, i = "", 0
    while out.count("\n") < lines:
        out += codes[i % len(codes)] + "\n"
        i += 1
    return out


def barriers_file(n: int) -> str:
    """``n`` ``dist.barrier()`` lines under one ``if rank == 0:``."""
    return HEAD + "if rank == 0:\n" + "    dist.barrier()\n" * n


def findings_file(findings: int) -> str:
    """A training script with ``findings`` findings (rounded down to whole blocks of :data:`BLOCK_FINDINGS`)."""
    return HEAD + "".join(BLOCK.format(i=i) for i in range(max(1, findings // BLOCK_FINDINGS)))


CPU: dict[str, float] = {}  # the CPU seconds of the last timed() minimum or CLI run, for verdict()


def timed(fn: Callable[[], T], rounds: int) -> tuple[float, float, T]:
    """(minimum, median) wall seconds of ``fn()`` over ``rounds`` calls after one warm-up, and its last result;
    the CPU seconds of the fastest call go to ``CPU["last"]``."""
    result = fn()
    times, cpus = [], []
    for _ in range(rounds):
        t, c = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    CPU["last"] = cpus[times.index(min(times))]
    return min(times), statistics.median(times), result


def verdict(wall: float, target: float, cpu: float | None = None, unit: str = " s") -> str:
    """'met' / 'NOT met' for the ``wall`` figure against ``target``; a miss where the CPU figure was inside it says so."""
    if wall <= target:
        return "met"
    if cpu is not None and cpu <= target:
        return f"NOT met (CPU {cpu:.3f}{unit} is inside it: a loaded machine, load average {os.getloadavg()[0]:.1f})"
    return "NOT met"


def bench_file(rounds: int) -> bool:
    source = snippet_file(2000)
    best, med, found = timed(lambda: check_source(source, "big.py"), rounds)
    cpu = CPU["last"]
    print(
        f"1. a {source.count(chr(10)):,}-line file of verified snippets: min {best:.3f} s (CPU {cpu:.3f} s), median "
        f"{med:.3f} s ({len(found)} findings); target <= {TARGET_FILE_S} s: {verdict(best, TARGET_FILE_S, cpu)}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.py"
        path.write_text(source, encoding="utf-8")
        cli = [_cli_seconds([str(path)]) for _ in range(rounds)]
    print(
        f"   `fsdp-skill check FILE` end to end (a new interpreter: start-up, imports, analysis, output): "
        f"min {min(cli):.3f} s, median {statistics.median(cli):.3f} s (CPU {CPU['cli']:.3f} s, the last run)"
    )
    return best <= TARGET_FILE_S


def bench_barriers(rounds: int) -> bool:
    source = barriers_file(1000)
    best, med, found = timed(lambda: check_source(source, "barriers.py"), rounds)
    cpu = CPU["last"]
    print(
        f"2. 1,000 dist.barrier() under one `if rank == 0:` ({len(source) / 1000:.0f} KB, {len(found)} findings): "
        f"min {best:.3f} s (CPU {cpu:.3f} s), median {med:.3f} s; target <= {TARGET_BARRIERS_S} s: "
        f"{verdict(best, TARGET_BARRIERS_S, cpu)}"
    )
    return best <= TARGET_BARRIERS_S


def bench_growth(rounds: int) -> bool:
    met = True
    for what, build in (("rank-0 barriers in one `if`", barriers_file), ("a script of several rules", findings_file)):
        per: dict[int, float] = {}
        per_cpu: dict[int, float] = {}
        for n in (10, 100, 1000):
            source = build(n)
            best, _, found = timed(lambda source=source: check_source(source, "train.py"), rounds)
            per[n], per_cpu[n] = best / max(len(found), 1), CPU["last"] / max(len(found), 1)
            print(
                f"3. {what}: {len(found):>5,} findings in {source.count(chr(10)):>6,} lines: {best:.3f} s "
                f"(CPU {CPU['last']:.3f} s), {per[n] * 1e3:.3f} ms per finding"
            )
        ratio, cpu_ratio = per[1000] / per[100], per_cpu[1000] / max(per_cpu[100], 1e-9)
        met = met and ratio <= TARGET_GROWTH
        print(
            f"   {what}: time per finding, 1,000 / 100: {ratio:.2f} (CPU {cpu_ratio:.2f}; 1,000 / 10: "
            f"{per[1000] / per[10]:.2f}); target <= {TARGET_GROWTH}: {verdict(ratio, TARGET_GROWTH, cpu_ratio, unit='')}"
        )
    return met


def repo_sources(repo: str | None) -> list[Path]:
    """The ``*.py`` files to multiply: ``repo``'s, else this repository's code, fixtures and snippets."""
    if repo:
        files = sorted(Path(repo).rglob("*.py"))
        if not files:
            raise SystemExit(f"{repo}: no *.py files")
        return files
    return sorted(p for d in ("skill", "runtime", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py"))


def build_repo(dest: Path, repo: str | None, files: int) -> int:
    """``files`` Python files under ``dest`` (folders of 100), copied round-robin from :func:`repo_sources`; bytes."""
    srcs = repo_sources(repo)
    texts = [p.read_bytes() for p in srcs]
    if not repo:
        texts += [sp.code.encode() for sp in load_knowledge().snippets.values()]
    size = 0
    for i in range(files):
        folder = dest / f"pkg{i // 100:02d}"
        folder.mkdir(exist_ok=True)
        data = texts[i % len(texts)]
        (folder / f"mod{i % 100:02d}.py").write_bytes(data)
        size += len(data)
    return size


def bench_repo(repo: str | None, files: int) -> bool:
    tmp = Path(tempfile.mkdtemp(prefix="bench-check-"))
    try:
        size = build_repo(tmp, repo, files)
        what = repo or "this repository's code, fixtures and snippets"
        t, c = time.perf_counter(), time.process_time()
        found = check_paths([str(tmp)])
        inproc, inproc_cpu = time.perf_counter() - t, time.process_time() - c
        cli = _cli_seconds([str(tmp)])
        cli_cpu = CPU["cli"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"4. a {files:,}-file repository ({size / 1e6:.1f} MB, from {what}; {len(found)} findings): "
        f"in process {inproc:.1f} s (CPU {inproc_cpu:.1f} s), CLI {cli:.1f} s (CPU {cli_cpu:.1f} s); "
        f"target <= {TARGET_REPO_S:.0f} s: {verdict(max(inproc, cli), TARGET_REPO_S, max(inproc_cpu, cli_cpu))}"
    )
    return max(inproc, cli) <= TARGET_REPO_S


def _cli_seconds(args: list[str]) -> float:
    """Wall seconds of one ``fsdp-skill check ARGS`` (a new process; its output discarded); its CPU seconds go to
    ``CPU["cli"]``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([str(EXE), "check", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["cli"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds of figures 1-3 (default 5)")
    ap.add_argument("--repo", metavar="DIR", help="figure 4 multiplies DIR's *.py files (default: this repository's)")
    ap.add_argument("--files", type=int, default=3000, help="files of figure 4's repository (default 3,000)")
    ap.add_argument("--only", choices=("file", "barriers", "growth", "repo"), action="append", help="run only these")
    args = ap.parse_args()
    runs = {
        "file": lambda: bench_file(args.rounds),
        "barriers": lambda: bench_barriers(args.rounds),
        "growth": lambda: bench_growth(args.rounds),
        "repo": lambda: bench_repo(args.repo, args.files),
    }
    met = [fn() for name, fn in runs.items() if not args.only or name in args.only]
    return 0 if all(met) else 1


if __name__ == "__main__":
    raise SystemExit(main())
