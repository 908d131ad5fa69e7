"""Speed of ``check`` on a 2,000-line file (target: <= 0.2 s), built from the knowledge's verified snippets.

Prints the minimum and median over the rounds (the minimum is the fair figure on a loaded machine) and
the target beside them. Run: ``.venv/bin/python benchmarks/bench_check.py [--rounds 10] [--lines 2000]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from fsdp_skill.core.check import check_source
from fsdp_skill.core.knowledge.cards import load_knowledge

TARGET_S = 0.2


def build_file(lines: int) -> str:
    codes = [sp.code for sp in load_knowledge().snippets.values()]
    out, i = "", 0
    while out.count("\n") < lines:
        out += codes[i % len(codes)] + "\n"
        i += 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--lines", type=int, default=2000)
    args = ap.parse_args()
    source = build_file(args.lines)
    check_source(source)  # warm-up: imports, regex compilation
    times = []
    for _ in range(args.rounds):
        t = time.perf_counter()
        findings = check_source(source, "big.py")
        times.append(time.perf_counter() - t)
    best, med = min(times), statistics.median(times)
    print(
        f"check on {source.count(chr(10))} lines: min {best:.3f} s, median {med:.3f} s "
        f"({len(findings)} findings); target <= {TARGET_S} s: {'met' if best <= TARGET_S else 'NOT met'}"
    )
    cli = _cli_seconds(source, args.rounds)
    print(
        f"`fsdp-skill check FILE` end to end (a new interpreter: start-up, imports, analysis, output): "
        f"min {min(cli):.3f} s, median {statistics.median(cli):.3f} s"
    )
    return 0 if best <= TARGET_S else 1


def _cli_seconds(source: str, rounds: int) -> list[float]:
    """Wall seconds of ``fsdp-skill check`` on ``source`` written to a file, one new process per round."""
    import os
    import subprocess
    import sys
    import tempfile

    exe = os.path.join(os.path.dirname(sys.executable), "fsdp-skill")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            subprocess.run([exe, "check", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - t)
    return times


if __name__ == "__main__":
    raise SystemExit(main())
