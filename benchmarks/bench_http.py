"""Throughput and latency of ``POST /v1/ask`` beside ``GET /healthz`` on the same real uvicorn.

Starts ``fsdp-skill serve`` on 127.0.0.1 (a free port) in a subprocess with a temporary state dir,
warms it (every question once, which verifies their snippets for real on this host), then, ``--rounds``
times, sends a bounded load of N requests at concurrency C with one httpx.AsyncClient load generator to
``GET /healthz`` and then to ``POST /v1/ask`` (verify=true: cached verdicts; ``--no-verify`` for
verify=false), and prints for each round and for the median of the rounds: req/s, p50, p99 and errors
of both side by side, and the ask/healthz throughput ratio (issue 12's target: at least 0.85).
Then, unless ``--no-inprocess``, the same figures for in-process ``fsdp_skill.core.answer.ask()``
(sequential, same questions, same cache), so the HTTP overhead is visible.  The server is stopped at
the end.  Only loopback traffic.

Run: ``.venv/bin/python benchmarks/bench_http.py [--requests 2000] [--concurrency 32] [--rounds 3] [--no-verify]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "tests" / "data" / "questions.jsonl"
EXE = Path(sys.executable).with_name("fsdp-skill")


def load_questions(limit: int) -> list[str]:
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["question"] for r in rows][:limit]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, env: dict, workers: int, log) -> subprocess.Popen:
    proc = subprocess.Popen(
        [str(EXE), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}: {Path(log.name).read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("server did not answer /healthz within 120 s")


async def load(base: str, request, n: int, concurrency: int):
    """Send ``n`` requests made by ``request(client, i)`` with ``concurrency`` in flight; returns the
    latencies (ms), error counts by kind and the wall time (s)."""
    latencies: list[float] = []
    errors: dict[str, int] = {}
    counter = iter(range(n))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as client:

        async def worker():
            for i in counter:
                t0 = time.perf_counter()
                try:
                    r = await request(client, i)
                    if r.status_code != 200:
                        errors[str(r.status_code)] = errors.get(str(r.status_code), 0) + 1
                except httpx.HTTPError as exc:
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                latencies.append((time.perf_counter() - t0) * 1000)

        t0 = time.perf_counter()
        await asyncio.gather(*[worker() for _ in range(concurrency)])
        wall = time.perf_counter() - t0
    return latencies, errors, wall


def figures(lat: list[float], errors: dict[str, int], wall: float) -> dict:
    """req/s, p50 and p99 (ms) and the error count of one measured load."""
    return {"rps": len(lat) / wall, "p50": pct(lat, 50), "p99": pct(lat, 99), "errors": sum(errors.values())}


def line(label: str, f: dict) -> str:
    return f"{label:<16}{f['rps']:>8.0f} req/s  p50={f['p50']:7.1f} ms  p99={f['p99']:7.1f} ms  errors={f['errors']}"


def measure(base: str, questions: list[str], args, verify: bool) -> tuple[dict, dict]:
    """One round: GET /healthz, then POST /v1/ask, each ``args.requests`` at ``args.concurrency``."""

    async def healthz(client, i):
        return await client.get("/healthz")

    async def ask(client, i):
        return await client.post("/v1/ask", json={"question": questions[i % len(questions)], "k": args.k, "verify": verify})

    h = figures(*asyncio.run(load(base, healthz, args.requests, args.concurrency)))
    a = figures(*asyncio.run(load(base, ask, args.requests, args.concurrency)))
    return h, a


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=2000, help="requests in the measured load (default 2000)")
    ap.add_argument("--concurrency", type=int, default=32, help="requests in flight (default 32)")
    ap.add_argument("--questions", type=int, default=16, help="distinct questions cycled through (default 16)")
    ap.add_argument("-k", type=int, default=3, help="sections per answer (default 3)")
    ap.add_argument("--no-verify", action="store_true", help="send verify=false (default: verify=true on a warm cache)")
    ap.add_argument("--workers", type=int, default=1, help="uvicorn workers (default 1)")
    ap.add_argument(
        "--rounds", type=int, default=3, help="healthz + ask rounds on the same server; the median is reported (default 3)"
    )
    ap.add_argument("--no-inprocess", action="store_true", help="skip the in-process ask() figures")
    ap.add_argument(
        "--home",
        metavar="DIR",
        help="state directory to use and keep (default: a new temporary one); reusing one skips the warm-up's snippet runs",
    )
    args = ap.parse_args()
    verify = not args.no_verify
    home = args.home or tempfile.mkdtemp(prefix="fsdp-skill-bench-http-")
    os.makedirs(home, exist_ok=True)
    os.environ["FSDP_SKILL_HOME"] = home
    env = dict(os.environ)
    questions = load_questions(args.questions)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(Path(home) / "server.log", "w")
    proc = start_server(port, env, args.workers, log)
    try:
        t0 = time.perf_counter()
        with httpx.Client(base_url=base, timeout=600) as c:
            warm = [c.post("/v1/ask", json={"question": q, "k": args.k, "verify": verify}) for q in questions]
        bad = [r.status_code for r in warm if r.status_code != 200]
        statuses: dict[str, int] = {}
        for r in warm:
            for s in r.json().get("sections", []) if r.status_code == 200 else []:
                for sn in s["snippets"]:
                    statuses[sn["verification"]["status"]] = statuses.get(sn["verification"]["status"], 0) + 1
        print(
            f"warm-up: {len(questions)} questions in {time.perf_counter() - t0:.1f} s (verify={str(verify).lower()}); "
            f"snippet verdicts {statuses}; non-200: {bad or 'none'}"
        )
        print(
            f"load: n={args.requests} per route, concurrency={args.concurrency}, workers={args.workers}, "
            f"verify={str(verify).lower()}, {args.rounds} round(s)"
        )
        rounds = []
        for i in range(args.rounds):
            h, a = measure(base, questions, args, verify)
            rounds.append((h, a))
            print(
                f"round {i + 1}: "
                + line("GET /healthz", h)
                + " | "
                + line("POST /v1/ask", a)
                + f" | ratio {a['rps'] / h['rps']:.2f}"
            )
        med = {
            key: {m: statistics.median(r[idx][m] for r in rounds) for m in ("rps", "p50", "p99", "errors")}
            for idx, key in ((0, "healthz"), (1, "ask"))
        }
        ratios = [r[1]["rps"] / r[0]["rps"] for r in rounds]
        print("median of rounds:")
        print("  " + line("GET /healthz", med["healthz"]))
        print("  " + line("POST /v1/ask", med["ask"]))
        print(
            f"  ask/healthz throughput ratio: {statistics.median(ratios):.2f} (median of {len(ratios)}; "
            f"target >= 0.85); p99 ratio {med['ask']['p99'] / med['healthz']['p99']:.2f}"
        )
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        tail = [ln for ln in Path(log.name).read_text().splitlines() if "WARNING" in ln or "ERROR" in ln]
        if tail:
            print("server log (warnings/errors):\n  " + "\n  ".join(tail[-10:]))

    if args.no_inprocess:
        return 0
    sys.path.insert(0, str(ROOT))
    from fsdp_skill.core.answer import ask

    for q in questions:  # warm this process: index, API cache
        ask(q, k=args.k, verify=verify)
    lat = []
    t0 = time.perf_counter()
    for i in range(args.requests):
        t1 = time.perf_counter()
        ask(questions[i % len(questions)], k=args.k, verify=verify)
        lat.append((time.perf_counter() - t1) * 1000)
    wall = time.perf_counter() - t0
    print(
        f"in-process ask()    n={len(lat)} sequential verify={str(verify).lower()}: {len(lat) / wall:.0f} calls/s, "
        f"p50={pct(lat, 50):.2f} ms, p99={pct(lat, 99):.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
