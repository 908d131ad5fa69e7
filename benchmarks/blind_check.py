"""Blind recall of ``check``: caught / total, by kind, on a set of scripts written from public bug reports by someone who
had not read the rules, and every other finding, for judging.

A blind set is a folder of ``NN_name.py`` scripts (one mistake each, the report's), ``good_NN_name.py`` scripts (no
mistake) and ``manifest.jsonl``: per script ``file``, ``kind``, ``line`` (of the mistake; null for a good one),
``description``, ``source`` (the report's URL) and ``counts``: the rule codes whose report in that file catches the
mistake, judged from the rule table (``fsdp-skill check --rules``) when the set was first run, before any rule was
changed for it ([] where no rule is about that kind; when a later rule is written for such a kind, its code is added
there, and a set whose kinds were given to rule writers is a development set from then on, no longer blind).  A mistake is caught when a finding with one of those codes is
reported in its file.  Every other finding (in a bug script, or in a good one) is printed, to be judged right, wrong
or debatable by a reader.  Never tune the rules on a blind set; say so when a figure is on a set that was.

    python benchmarks/blind_check.py [--set tests/data/check/blind26]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from fsdp_skill.core.check import check_paths

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SET = ROOT / "tests" / "data" / "check" / "blind26"


def main(argv: list[str] | None = None) -> int:
    """Print each script's findings, recall by kind and overall; returns 0 (a figure, not a gate)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=Path, default=DEFAULT_SET, help="folder of a blind set (manifest.jsonl beside the scripts)")
    args = ap.parse_args(argv)
    manifest = [
        json.loads(line) for line in (args.set / "manifest.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    found: dict[str, list] = defaultdict(list)
    for f in check_paths([str(args.set / m["file"]) for m in manifest]):
        found[Path(f.path).name].append(f)
    by_kind: dict[str, list[bool]] = defaultdict(list)
    others = []
    for m in manifest:
        findings = found.get(m["file"], [])
        hit = [f for f in findings if f.code in m.get("counts", [])]
        others += [(m["file"], f) for f in findings if f not in hit]
        codes = ", ".join(f"{f.code}@{f.line}" for f in findings) or "-"
        if m["kind"] == "none":
            print(f"  good  {m['file']:48s} {codes}")
            continue
        by_kind[m["kind"]].append(bool(hit))
        print(
            f"  {'CAUGHT' if hit else 'missed'} {m['file']:48s} {m['kind']} (line {m['line']}; counts {m.get('counts') or 'no rule'}): {codes}"
        )
    caught = sum(sum(v) for v in by_kind.values())
    total = sum(len(v) for v in by_kind.values())
    print("\nby kind:")
    for kind, hits in sorted(by_kind.items()):
        print(f"  {kind:45s} {sum(hits)}/{len(hits)}")
    covered = [m for m in manifest if m["kind"] != "none" and m.get("counts")]
    covered_hits = sum(1 for m in covered if any(f.code in m["counts"] for f in found.get(m["file"], [])))
    print(
        f"\nblind recall: {caught}/{total} = {caught / max(total, 1):.0%} (target >= 70%); of the mistakes a rule is about: "
        f"{covered_hits}/{len(covered)}"
    )
    print(f"other findings, to judge ({len(others)}):")
    for name, f in others:
        print(f"  {name}:{f.line} {f.code} {f.message[:160]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
