"""Speed of ``check`` on a 2,000-line file (target: <= 0.2 s), built from the knowledge's verified snippets.

Prints the minimum and median over the rounds (the minimum is the fair figure on a loaded machine) and
the target beside them. Run: ``.venv/bin/python benchmarks/bench_check.py [--rounds 10] [--lines 2000]``
"""
from __future__ import annotations

import argparse
import statistics
import time

from fsdp_skill.core.check import check_source
from fsdp_skill.core.knowledge import load_knowledge

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
    print(f"check on {source.count(chr(10))} lines: min {best:.3f} s, median {med:.3f} s "
          f"({len(findings)} findings); target <= {TARGET_S} s: {'met' if best <= TARGET_S else 'NOT met'}")
    return 0 if best <= TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
