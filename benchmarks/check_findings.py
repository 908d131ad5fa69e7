"""Do two versions of the checker find the same things? Saves every finding ``check`` makes on a set of sources, or
compares them with a saved set, so that a change meant to be only faster or sturdier is shown to change no finding.

The sources: every fixture in ``tests/data/check``, every verified snippet of the knowledge, a few generated
stress files small enough for a slow checker (rank-0 barriers, a long expression, nested blocks), and the
``*.py`` files below each ``--dir`` (real training code: a checkout of nanoGPT, torchtitan, ...).

    python benchmarks/check_findings.py --save before.json [--dir REPO]...    # on the old version
    python benchmarks/check_findings.py --against before.json [--dir REPO]... # on the new one: exit 1 on a difference

A finding is compared whole: code, severity, position (line, column, end), message, section and snippet.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fsdp_skill.core.check import check_source
from fsdp_skill.core.knowledge.cards import load_knowledge

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "check"


def stress_sources() -> dict[str, str]:
    """Generated files with findings, each small enough for the old (about cubic) checker to finish in seconds."""
    head = "import torch\nimport torch.distributed as dist\n\nrank = dist.get_rank()\n"
    barriers = head + "if rank == 0:\n" + "    dist.barrier()\n" * 60
    paired = head + "if rank == 0:\n" + "    dist.barrier()\n" * 30 + "else:\n" + "    dist.all_reduce(t)\n" * 30
    long_expr = head + "total = " + " + ".join(f"x{i}" for i in range(300)) + "\nif rank == 0:\n    dist.barrier()\n"
    nested = head + "".join("    " * i + f"if x{i}:\n" for i in range(60)) + "    " * 60 + "if rank == 0:\n"
    nested += "    " * 61 + "dist.barrier()\n"
    helpers = head + "".join(f"def save{i}(m):\n    dist.barrier()\n\n" for i in range(40))
    helpers += "if rank == 0:\n" + "".join(f"    save{i}(model)\n" for i in range(40))
    return {
        "<stress: 60 rank-0 barriers>": barriers,
        "<stress: 30 barriers against 30 all_reduce>": paired,
        "<stress: a 300-term expression>": long_expr,
        "<stress: 60 nested ifs>": nested,
        "<stress: 40 helpers reached under rank 0>": helpers,
    }


def sources(dirs: list[str]) -> dict[str, str]:
    """label -> source text of every source compared (see the module docstring)."""
    out = {f"tests/data/check/{p.name}": p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.py"))}
    out |= {f"<snippet {sid}>": sp.code for sid, sp in sorted(load_knowledge().snippets.items())}
    out |= stress_sources()
    for d in dirs:
        base = Path(d)
        for p in sorted(base.rglob("*.py")):
            try:
                out[f"{base.name}/{p.relative_to(base)}"] = p.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # the old checker refused such a file; nothing to compare
    return out


def findings(srcs: dict[str, str]) -> dict[str, list[dict[str, object]]]:
    """label -> its findings as JSON objects (the path left out: it is the label)."""
    out = {}
    for label, code in srcs.items():
        out[label] = [{k: v for k, v in f.model_dump().items() if k != "path"} for f in check_source(code, label)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--save", metavar="FILE", help="write the findings to FILE (JSON)")
    what.add_argument("--against", metavar="FILE", help="compare the findings with FILE; exit 1 on any difference")
    ap.add_argument("--dir", action="append", default=[], metavar="DIR", help="also every *.py below DIR; repeatable")
    args = ap.parse_args()
    found = findings(sources(args.dir))
    total = sum(map(len, found.values()))
    if args.save:
        Path(args.save).write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{len(found)} sources, {total} findings saved to {args.save}")
        return 0
    old = json.loads(Path(args.against).read_text(encoding="utf-8"))
    differ = sorted(label for label in set(old) | set(found) if old.get(label) != found.get(label))
    for label in differ:
        before, after = old.get(label), found.get(label)
        if before is None or after is None:
            print(f"{label}: only in the {'new' if before is None else 'saved'} set")
            continue
        for f in (f for f in before if f not in after):
            print(f"{label}: lost   {f['code']} {f['line']}:{f['col']} {f['message']}")
        for f in (f for f in after if f not in before):
            print(f"{label}: gained {f['code']} {f['line']}:{f['col']} {f['message']}")
    print(f"{len(found)} sources, {total} findings; {len(differ)} source(s) differ from {args.against}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
