"""Latency of ``ask``: in-process p50/p99 over the question sets, and CLI wall time beside ``import torch``.

Prints figures and the targets beside them (p50 <= 2 ms, p99 <= 2 ms in-process; the CLI
``ask --json --no-verify`` on a cached path at most 0.4x the time of ``python -c "import torch"``).
Run: ``.venv/bin/python benchmarks/bench_ask.py [--rounds 20] [--cli-runs 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTION_FILES = [
    ROOT.parent / "shared" / "eval" / "dev_questions.jsonl",
    ROOT / "tests" / "data" / "questions.jsonl",
    ROOT / "tests" / "data" / "blind_questions.jsonl",
]


def load_questions() -> list[str]:
    out = []
    for path in QUESTION_FILES:
        if path.exists():
            out += [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=20, help="passes over the question set (in-process)")
    ap.add_argument("--cli-runs", type=int, default=5, help="CLI and import-torch runs each")
    args = ap.parse_args()
    os.environ.setdefault("FSDP_SKILL_HOME", tempfile.mkdtemp(prefix="fsdp-skill-bench-"))
    sys.path.insert(0, str(ROOT))
    from fsdp_skill.core.answer import ask

    questions = load_questions()
    for q in questions:  # warm: index, API cache (imports torch once, in this process only)
        ask(q, verify=False)
    lat = []
    for _ in range(args.rounds):
        for q in questions:
            t0 = time.perf_counter()
            ask(q, verify=False)
            lat.append((time.perf_counter() - t0) * 1000)
    p50, p99 = pct(lat, 50), pct(lat, 99)
    print(
        f"in-process ask (--no-verify, warm index, cached API): n={len(lat)} questions={len(questions)} "
        f"p50={p50:.3f} ms (target <= 2) p99={p99:.3f} ms (target <= 2) mean={statistics.mean(lat):.3f} ms"
    )

    exe = str(Path(sys.executable).with_name("fsdp-skill"))
    q = "How do I train in bf16 with FSDP2 but reduce gradients in fp32?"
    env = dict(os.environ)
    subprocess.run([exe, "ask", "--json", "--no-verify", q], env=env, capture_output=True, check=False)  # warm caches

    def timed(cmd):
        walls = []
        for _ in range(args.cli_runs):
            t0 = time.perf_counter()
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            walls.append(time.perf_counter() - t0)
            if p.returncode not in (0, 3):
                print(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-500:]}")
        return statistics.median(walls)

    cli = timed([exe, "ask", "--json", "--no-verify", q])
    torch_imp = timed([sys.executable, "-c", "import torch"])
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, fsdp_skill.main; fsdp_skill.main.main(['ask', '--json', '--no-verify', "
            + repr(q)
            + "]); print('torch imported:', 'torch' in sys.modules, file=sys.stderr)",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    print(f"CLI ask --json --no-verify (cached): median {cli:.3f} s over {args.cli_runs} runs")
    print(f"python -c 'import torch':            median {torch_imp:.3f} s over {args.cli_runs} runs")
    print(f"ratio = {cli / torch_imp:.2f} (target <= 0.40); {check.stderr.strip().splitlines()[-1] if check.stderr else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
