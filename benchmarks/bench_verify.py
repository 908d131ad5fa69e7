"""Warm launcher vs cold torchrun: prints figures beside their targets (a benchmark, not a test).

    .venv/bin/python benchmarks/bench_verify.py [--reps 5] [--torchrun-reps 1] [--modules]

1. zygote start-up (one-off cost per CLI invocation);
2. per script: warm ``verify_code`` wall time (median of --reps, after one warm-up) beside a cold
   ``python -m torch.distributed.run --standalone --nproc_per_node=2 script.py`` of the same file;
3. one ``verify_many`` of the 5 scripts from a cold start (zygote included) and on a warm zygote,
   beside the 5 torchrun runs;
4. with --modules: the modules each script still imports lazily after the preload, and the per-script
   time with a minimal preload (torch, torch.distributed) for comparison.
Targets: <= 0.3 s per small FSDP2 script once warm, >= 10x faster than torchrun, 5-script batch >= 5x.
Figures depend on the machine's load; the script prints the load average it saw.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCRIPTS = ROOT / "tests" / "data" / "scripts"
BATCH = ["allreduce_env.py", "fsdp2_train.py", "ddp_train.py", "dtensor_shard.py", "dcp_state_dict.py"]
LAZY_PROBE = (
    "import sys as _s, atexit as _a\n_m0 = set(_s.modules)\n_a.register(lambda: print('LAZY', sorted(set(_s.modules) - _m0)))\n"
)


def torchrun_seconds(name: str, reps: int) -> tuple[float, int]:
    """Median wall time of a cold torchrun of ``name`` and how many runs failed.

    torch 2.13 sometimes aborts a worker at exit ("terminate called without an active exception");
    such a run still did all its work, so its time counts and the failure is reported beside it.
    """
    times, failed = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(reps):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(SCRIPTS / name)],
                cwd=tmp,
                capture_output=True,
                text=True,
            )
            times.append(time.perf_counter() - t0)
            if proc.returncode != 0:
                failed += 1
                if "terminate called without an active exception" not in proc.stdout + proc.stderr:
                    raise SystemExit(f"torchrun failed on {name}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return statistics.median(times), failed


def warm_seconds(runtime, name: str, reps: int, code: str | None = None) -> tuple[float, float]:
    code = code or (SCRIPTS / name).read_text()
    v = runtime.verify_code(code, filename=name, use_cache=False)  # warm-up (page faults, first fork)
    if v.status != "passed":
        raise SystemExit(f"{name} did not pass on the warm launcher: {v.reason}")
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        v = runtime.verify_code(code, filename=name, use_cache=False)
        times.append(time.perf_counter() - t0)
        assert v.status == "passed", v.reason
    return statistics.median(times), min(times)


def ok(flag: bool) -> str:
    return "met" if flag else "MISSED"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5, help="warm runs per script (median reported)")
    p.add_argument("--torchrun-reps", type=int, default=1, help="torchrun runs per script (median reported)")
    p.add_argument("--modules", action="store_true", help="also report lazy imports and a minimal-preload comparison")
    args = p.parse_args()
    home = tempfile.mkdtemp(prefix="bench-verify-")
    os.environ["FSDP_SKILL_HOME"] = home
    try:
        run(args)
    finally:
        import shutil

        shutil.rmtree(home, ignore_errors=True)


def run(args) -> None:
    import fsdp_skill.runtime as runtime
    from fsdp_skill.runtime import host, warm

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min) at start; torch {host.torch_version()}")
    t0 = time.perf_counter()
    launcher = warm.shared()
    print(f"zygote start-up: {time.perf_counter() - t0:.2f} s (preload {launcher.preload_s:.2f} s), paid once per process\n")

    print(f"{'script':<22}{'warm median':>12}{'warm min':>10}{'torchrun':>10}{'speed-up':>10}")
    rows = {}
    for name in BATCH:
        w_med, w_min = warm_seconds(runtime, name, args.reps)
        cold, failed = torchrun_seconds(name, args.torchrun_reps)
        rows[name] = (w_med, w_min, cold)
        note = f"  ({failed} torchrun run(s) aborted at exit: torch's teardown crash)" if failed else ""
        print(f"{name:<22}{w_med:>11.3f}s{w_min:>9.3f}s{cold:>9.2f}s{cold / w_med:>9.1f}x{note}")
    fsdp = rows["fsdp2_train.py"][0]
    worst = min(c / w for w, _, c in rows.values())
    print(f"\ntarget: FSDP2 script <= 0.3 s warm      -> {fsdp:.3f} s  [{ok(fsdp <= 0.3)}]")
    print(f"target: >= 10x faster than torchrun      -> worst {worst:.1f}x  [{ok(worst >= 10)}]")

    jobs = [runtime.Job(code=(SCRIPTS / n).read_text(), filename=n) for n in BATCH]
    runtime.shutdown()
    t0 = time.perf_counter()
    verdicts = runtime.verify_many(jobs, use_cache=False)
    batch_cold = time.perf_counter() - t0
    assert all(v.status == "passed" for v in verdicts), [v.reason for v in verdicts]
    t0 = time.perf_counter()
    runtime.verify_many(jobs, use_cache=False)
    batch_warm = time.perf_counter() - t0
    torchrun_total = sum(c for _, _, c in rows.values())
    print(
        f"\nbatch of 5: verify_many {batch_cold:.2f} s from a cold start (zygote included), "
        f"{batch_warm:.2f} s on a warm zygote; 5 torchrun runs {torchrun_total:.2f} s"
    )
    print(
        f"target: 5-script batch >= 5x faster       -> {torchrun_total / batch_cold:.1f}x cold start, "
        f"{torchrun_total / batch_warm:.1f}x warm  [{ok(torchrun_total / batch_cold >= 5)}]"
    )

    if args.modules:
        print("\nmodules still imported lazily inside a rank after the preload:")
        for name in BATCH:
            v = runtime.verify_code(LAZY_PROBE + (SCRIPTS / name).read_text(), filename=name, use_cache=False)
            lazy = next((ln for ln in v.ranks[0].output_tail.splitlines() if ln.startswith("LAZY")), "LAZY ?")
            print(f"  {name:<22}{lazy[5:]}")
        runtime.shutdown()
        os.environ["FSDP_SKILL_PRELOAD"] = "torch,torch.distributed"
        print("\nwith a minimal preload (torch, torch.distributed):")
        t0 = time.perf_counter()
        warm.shared()
        print(f"  zygote start-up {time.perf_counter() - t0:.2f} s")
        for name in BATCH:
            w_med, _ = warm_seconds(runtime, name, args.reps)
            print(f"  {name:<22}{w_med:>8.3f} s  (full preload {rows[name][0]:.3f} s)")
        runtime.shutdown()
        os.environ.pop("FSDP_SKILL_PRELOAD")
    verify_all_cli()
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


def verify_all_cli() -> None:
    """Wall time of ``fsdp-skill verify --all`` in a fresh state dir (cold), then again (cached)."""
    import subprocess
    import sys
    import tempfile

    exe = os.path.join(os.path.dirname(sys.executable), "fsdp-skill")
    env = {**os.environ, "FSDP_SKILL_HOME": tempfile.mkdtemp(prefix="fsdp-skill-bench-all-")}
    for label in ("cold", "cached"):
        t0 = time.perf_counter()
        p = subprocess.run([exe, "verify", "--all"], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        summary = (p.stdout.strip().splitlines() or ["?"])[-1]
        target = "" if label == "cold" else f"  target <= 1 s [{'met' if wall <= 1 else 'NOT met'}]"
        print(f"verify --all {label:<6}: {wall:6.2f} s (exit {p.returncode}) {summary}{target}")


if __name__ == "__main__":
    main()
