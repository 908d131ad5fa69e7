"""The torch matrix (``scripts/dev matrix [--fresh] [VERSION...]``): every knowledge snippet run on several torch releases.

Per version: a venv ``$FSDP_SKILL_MATRIX/torch-VERSION`` (default ``.matrix/``, git-ignored) with ``torch==VERSION``
and numpy (what training environments carry; torch's object collectives need it), then ``fsdp-skill verify --all
--json --python`` that venv's interpreter (verdicts cached in ``torch-VERSION.home`` between matrix runs, so an
unchanged snippet is not run again; ``--fresh`` runs every one), the record written to
``knowledge/compat/torch-<torch.__version__>.json`` (:mod:`fsdp_skill.core.knowledge.compat`), the error atlas
built from that torch (its python and native message counts) and a small plan under it (the planner's peak, or its
one-line error where that torch cannot run it).  Prints one row per version: version, build, passed,
failed, skipped, atlas counts, wall seconds.

Versions default to :data:`VERSIONS`.  pip takes what the registry and this machine's disk offer; a version pip cannot
install is reported and the rest go on.  Exit status: 0 when every version ran, 1 otherwise (a failed snippet is a
result, not an error: the record holds it and ``tests/test_compat.py`` wants it declared by its section).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("2.6.0", "2.9.1", "2.13.0", "2.14.1")  # the oldest declared, one between, the CPU build, the newest here (the dev pin)
FACTS = (
    "import json, sys, torch; print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda, "
    "'hip': getattr(torch.version, 'hip', None), 'python': '.'.join(map(str, sys.version_info[:3]))}))"
)


def _venv(base: Path, version: str) -> Path:
    """The venv of ``version`` (made and filled when missing); raises RuntimeError when pip fails."""
    venv = base / f"torch-{version}"
    python = venv / "bin" / "python"
    if python.exists() and subprocess.run([python, "-c", "import torch, numpy"], capture_output=True).returncode == 0:
        return venv
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"torch=={version}", "numpy"]
    done = subprocess.run(pip, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip could not install torch=={version}: {done.stderr.strip().splitlines()[-1:]}")
    return venv


def _atlas_counts(python: Path) -> dict[str, int]:
    """Entries per kind of the error atlas built from the torch of ``python`` (the atlas never imports it)."""
    code = (
        "import json; from fsdp_skill.core.atlas.lookup import load_atlas, torch_dir; "
        "print(json.dumps(load_atlas(torch_dir()).counts()))"
    )
    env = {**os.environ, "FSDP_SKILL_PYTHON": str(python)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


PLAN = [
    "--transformer",
    "layers=2,dim=256,heads=4,kv_heads=4,ffn=512,vocab=1000",
    "--world-size",
    "8",
    "--batch",
    "2",
    "--seq",
    "128",
    "--param-dtype",
    "bf16",
    "--json",
]  # a small plan: the planner's private torch internals


def _plan_peak(python: Path) -> str:
    """The planned peak (bytes) of a small FSDP2 setting under ``python``'s torch, or the planner's one-line error."""
    cmd = [Path(sys.executable).with_name("fsdp-skill"), "plan", *PLAN, "--python", python]
    done = subprocess.run(cmd, capture_output=True, text=True)
    try:
        data = json.loads(done.stdout)
    except ValueError:
        return f"no output (exit {done.returncode})"
    if "rows" not in data:
        return str(data.get("error", data))[:120]
    return str(data["rows"][0]["peak_bytes"])


def run_version(base: Path, version: str, fresh: bool) -> dict[str, object]:
    """Run the matrix for one version; returns its table row.  Raises RuntimeError when it cannot run."""
    from fsdp_skill.core.knowledge.compat import build_of, record_file

    started = time.monotonic()
    venv = _venv(base, version)
    python = venv / "bin" / "python"
    facts = json.loads(subprocess.run([python, "-W", "ignore", "-c", FACTS], capture_output=True, text=True, check=True).stdout)
    home = base / f"torch-{version}.home"
    home.mkdir(parents=True, exist_ok=True)
    cmd = [Path(sys.executable).with_name("fsdp-skill"), "verify", "--all", "--json", "--python", python]
    cmd += ["--no-cache"] if fresh else []
    env = {**os.environ, "FSDP_SKILL_HOME": str(home)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode not in (0, 1):  # 1: some snippet failed, which the record holds
        raise RuntimeError(f"verify exited {done.returncode}: {done.stderr.strip()[-300:]}")
    verdicts = json.loads(done.stdout)
    build = build_of(facts["version"], facts["cuda"], facts["hip"])
    host = f"{platform.machine()}, {os.cpu_count()} CPUs, " + (
        "no GPU" if not os.path.exists("/proc/driver/nvidia/gpus") else "GPUs"
    )
    today = _dt.datetime.now(_dt.timezone.utc).date().isoformat()
    record = record_file(verdicts, torch_version=facts["version"], build=build, python=facts["python"], date=today, host=host)
    out = ROOT / "knowledge" / "compat" / f"torch-{facts['version']}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    statuses = [row["status"] for row in record["snippets"].values()]
    return {
        "version": facts["version"],
        "build": build,
        "passed": statuses.count("passed"),
        "failed": statuses.count("failed") + statuses.count("timeout"),
        "skipped": statuses.count("skipped"),
        "atlas": _atlas_counts(python),
        "plan": _plan_peak(python),
        "seconds": round(time.monotonic() - started),
        "record": str(out.relative_to(ROOT)),
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: ``matrix.py [--fresh] [VERSION...]``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="scripts/dev matrix", description=__doc__.split("\n", 1)[0])
    parser.add_argument("versions", nargs="*", default=list(VERSIONS), metavar="VERSION")
    parser.add_argument("--fresh", action="store_true", help="run every snippet again (verify --no-cache)")
    args = parser.parse_args(argv)
    base = Path(os.environ.get("FSDP_SKILL_MATRIX") or ROOT / ".matrix")
    base.mkdir(parents=True, exist_ok=True)
    status = 0
    print(f"{'torch':<16} {'build':<5} {'passed':>6} {'failed':>6} {'skipped':>7}  atlas (python/native)  seconds  plan peak (B)")
    for version in args.versions:
        try:
            row = run_version(base, version, args.fresh)
        except (RuntimeError, subprocess.CalledProcessError, ValueError) as exc:
            print(f"{version:<16} not run: {exc}")
            status = 1
            continue
        atlas = row["atlas"]
        assert isinstance(atlas, dict)
        print(
            f"{row['version']:<16} {row['build']:<5} {row['passed']:>6} {row['failed']:>6} {row['skipped']:>7}  "
            f"{atlas.get('python', 0):>6}/{atlas.get('native', 0):<14} {row['seconds']:>7}  {row['plan']}  -> {row['record']}"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
