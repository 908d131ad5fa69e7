"""Latency of ``ask``: in-process p50/p99 over the question sets, and the cached CLI beside ``import torch``.

Targets (issue 22): in-process ``ask(..., verify=False)`` p50 and p99 <= 1 ms (warm index, cached API); the
CLI ``fsdp-skill ask --json --no-verify`` on a cached path <= 0.15 s and <= 0.13x ``python -c "import torch"``
measured in the same run (the two interleaved, medians).  Each figure is printed beside its target; the exit
code is 1 when one is missed.  Also printed, as context: ``python -c pass`` and the floor of any answer that
is a pydantic model (importing pydantic and defining one model), the first ask of each question (its words
not yet seen by the memos), the modules a cached ask must not import, and with ``--importtime`` the top of
``python -X importtime`` for a cached ask.

The package's bytecode is compiled first (``compileall``, as ``pip install`` does): with
``PYTHONDONTWRITEBYTECODE`` set and no ``__pycache__``, every run would compile the modules again.
Run: ``.venv/bin/python benchmarks/bench_ask.py [--rounds 20] [--cli-runs 9] [--importtime]``
"""

from __future__ import annotations

import argparse
import compileall
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
QUESTION = "How do I train in bf16 with FSDP2 but reduce gradients in fp32?"
IN_PROCESS_P50_MS = 1.0
IN_PROCESS_P99_MS = 1.0
CLI_S = 0.15
CLI_TORCH_RATIO = 0.13
# What a cached ask must not import: the list tests/test_cli.py checks
NOT_IMPORTED = tuple(
    line.strip()
    for line in (ROOT / "tests" / "data" / "cached_ask_not_imported.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
)


def load_questions() -> list[str]:
    out = []
    for path in QUESTION_FILES:
        if path.exists():
            out += [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def mark(ok: bool) -> str:
    return "met" if ok else "NOT met"


def in_process(rounds: int) -> bool:
    """p50/p99 of warm in-process asks (the targets), and of each question's first ask once the API cache is
    warm but the router's and tokenizer's memos are empty (context: a question whose words are new)."""
    from fsdp_skill.core.answer import ask
    from fsdp_skill.core.routing import router, tokenize

    questions = load_questions()
    for q in questions:  # warm: index, API cache (imports torch once, in this process only)
        ask(q, verify=False)
    router._ROUTERS.clear()  # a fresh router (index from its cache file) and tokenizer: no word seen yet
    tokenize._identifier_tokens.cache_clear()
    router.get_router()
    first = []
    for q in questions:
        t0 = time.perf_counter()
        ask(q, verify=False)
        first.append((time.perf_counter() - t0) * 1000)
    lat = []
    for _ in range(rounds):
        for q in questions:
            t0 = time.perf_counter()
            ask(q, verify=False)
            lat.append((time.perf_counter() - t0) * 1000)
    p50, p99 = pct(lat, 50), pct(lat, 99)
    ok = p50 <= IN_PROCESS_P50_MS and p99 <= IN_PROCESS_P99_MS
    print(
        f"in-process ask (--no-verify, warm index, cached API): n={len(lat)} questions={len(questions)} "
        f"p50={p50:.3f} ms (target <= {IN_PROCESS_P50_MS}) p99={p99:.3f} ms (target <= {IN_PROCESS_P99_MS}) "
        f"mean={statistics.mean(lat):.3f} ms: {mark(ok)}"
    )
    print(
        f"  first ask of each question, its words new to the router and tokenizer: p50={pct(first, 50):.3f} ms p99={pct(first, 99):.3f} ms"
    )
    return ok


def cli(runs: int, env: dict[str, str]) -> bool:
    """The cached CLI ask beside import torch, interleaved; medians (and minima) of ``runs`` each."""
    exe = str(Path(sys.executable).with_name("fsdp-skill"))
    commands = {
        "ask": [exe, "ask", "--json", "--no-verify", QUESTION],
        "torch": [sys.executable, "-c", "import torch"],
        "pass": [sys.executable, "-c", "pass"],
        "pydantic": [sys.executable, "-c", "from pydantic import BaseModel\nclass A(BaseModel):\n    x: int"],
    }
    first = subprocess.run(commands["ask"], env=env, capture_output=True, text=True)  # builds the caches
    if first.returncode not in (0, 3):
        print(f"CLI ask failed ({first.returncode}):\n{first.stderr[-800:]}")
        return False
    walls: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            t0 = time.perf_counter()
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            walls[name].append(time.perf_counter() - t0)
            if p.returncode not in (0, 3):
                print(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-500:]}")
    med = {k: statistics.median(v) for k, v in walls.items()}
    ratio = med["ask"] / med["torch"]
    ok = med["ask"] <= CLI_S and ratio <= CLI_TORCH_RATIO
    print(
        f"CLI ask --json --no-verify (cached): median {med['ask']:.3f} s (min {min(walls['ask']):.3f}) over {runs} runs "
        f"(target <= {CLI_S} s): {mark(med['ask'] <= CLI_S)}"
    )
    print(f"python -c 'import torch':            median {med['torch']:.3f} s (min {min(walls['torch']):.3f}) over {runs} runs")
    print(f"ratio = {ratio:.3f} (target <= {CLI_TORCH_RATIO}): {mark(ratio <= CLI_TORCH_RATIO)}")
    print(
        f"  context: python -c pass {med['pass']:.3f} s ({med['pass'] / med['torch']:.3f}x); importing pydantic and "
        f"defining one model {med['pydantic']:.3f} s ({med['pydantic'] / med['torch']:.3f}x), the floor of an answer "
        f"that is a pydantic model"
    )
    code = (
        "import json, sys, fsdp_skill.main\n"
        f"rc = fsdp_skill.main.main(['ask', '--json', '--no-verify', {QUESTION!r}])\n"
        f"bad = sorted(m for m in sys.modules if any(m == p or m.startswith(p + '.') for p in {NOT_IMPORTED!r}))\n"
        "print(json.dumps(bad), file=sys.stderr)\n"
    )
    check = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    bad = json.loads(check.stderr.strip().splitlines()[-1]) if check.stderr.strip() else ["(no report)"]
    print(f"  a cached ask imported none of {', '.join(NOT_IMPORTED)}: {'yes' if not bad else 'NO: ' + ', '.join(bad)}")
    return ok and not bad


def importtime(env: dict[str, str], top: int = 25) -> None:
    """The ``top`` slowest imports (cumulative) of a cached ask, as ``python -X importtime`` reports them."""
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "fsdp_skill.main", "ask", "--json", "--no-verify", QUESTION],
        env=env,
        capture_output=True,
        text=True,
    )
    rows = [line for line in p.stderr.splitlines() if line.startswith("import time:") and "|" in line]
    rows = [r for r in rows if r.split("|")[1].strip().isdigit()]
    print(f"python -X importtime, cached ask: {len(rows)} modules; the {top} largest cumulative (us):")
    print("import time: self [us] | cumulative | imported package")
    for line in sorted(rows, key=lambda r: int(r.split("|")[1]))[-top:]:
        print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20, help="passes over the question set (in-process)")
    ap.add_argument("--cli-runs", type=int, default=9, help="runs of each CLI command (interleaved)")
    ap.add_argument("--importtime", action="store_true", help="also print the top of -X importtime for a cached ask")
    args = ap.parse_args()
    os.environ.setdefault("FSDP_SKILL_HOME", tempfile.mkdtemp(prefix="fsdp-skill-bench-"))
    import fsdp_skill
    import fsdp_skill.runtime

    for folder in {*fsdp_skill.__path__, *fsdp_skill.runtime.__path__}:  # the bytecode an installed package has
        compileall.compile_dir(folder, quiet=1)
    print("bytecode of fsdp_skill compiled before timing (as pip install does)")
    env = dict(os.environ)
    ok = in_process(args.rounds)
    ok = cli(args.cli_runs, env) and ok
    if args.importtime:
        importtime(env)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
