"""The plan queue under load (issue 25): ``/healthz`` latency while 60 plans are posted at once, and the memory of
8 parallel MCP ``plan_memory`` calls.

HTTP: starts ``fsdp-skill serve`` on 127.0.0.1 (a free port, a temporary state dir), posts ``--plans`` small plans
at once (``POST /v1/plan``, real planner children) while one client polls ``GET /healthz`` every 20 ms until every
plan is answered; prints the /healthz p50/p99/max beside the 100 ms target, and the plans' status counts (200,
429 with Retry-After, 5xx: target 0).  MCP: launches ``fsdp-skill mcp`` over stdio, makes ``--mcp-calls`` parallel
``plan_memory`` calls, samples the RSS of the server and all its descendants every 50 ms, and prints the peak
and the calls' outcomes.  Only loopback traffic and local processes.

Run: ``.venv/bin/python benchmarks/bench_plan_queue.py [--plans 60] [--mcp-calls 8] [--no-mcp]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
from bench_http import free_port, pct  # the percentile and free-port helpers of the /v1/ask benchmark (this folder)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EXE = Path(sys.executable).with_name("fsdp-skill")
SMALL = "layers=2,dim=64,heads=4,kv_heads=2,ffn=128,vocab=256"
BODY = {"transformer": SMALL, "world_size": 2, "seq": 16}
HEALTHZ_P99_TARGET_MS = 100.0


async def http_bench(port: int, plans: int) -> None:
    base = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=base, timeout=600, limits=httpx.Limits(max_connections=plans + 8)) as c:
        for _ in range(600):
            try:
                if (await c.get("/healthz")).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
        else:
            raise SystemExit("the server did not start")
        latencies: list[float] = []
        done = asyncio.Event()

        async def poll():
            while not done.is_set():
                t = time.perf_counter()
                r = await c.get("/healthz")
                latencies.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200, r.text
                await asyncio.sleep(0.02)

        poller = asyncio.create_task(poll())
        t0 = time.perf_counter()
        results = await asyncio.gather(*(c.post("/v1/plan", json=BODY) for _ in range(plans)), return_exceptions=True)
        wall = time.perf_counter() - t0
        done.set()
        await poller
    codes = Counter(r.status_code if isinstance(r, httpx.Response) else type(r).__name__ for r in results)
    retry = [int(r.headers["Retry-After"]) for r in results if isinstance(r, httpx.Response) and r.status_code == 429]
    fivexx = sum(n for k, n in codes.items() if isinstance(k, int) and k >= 500)
    p99 = pct(latencies, 99)
    print(f"HTTP: {plans} concurrent POST /v1/plan ({SMALL}, world_size 2), all answered in {wall:.1f} s")
    print(f"  statuses: {dict(codes)}; Retry-After of the 429s: {min(retry) if retry else '-'}..{max(retry) if retry else '-'} s")
    print(f"  5xx: {fivexx}  (target 0)")
    print(
        f"  /healthz while they ran: {len(latencies)} requests, p50 {pct(latencies, 50):.1f} ms, p99 {p99:.1f} ms "
        f"(target <= {HEALTHZ_P99_TARGET_MS:.0f} ms: {'met' if p99 <= HEALTHZ_P99_TARGET_MS else 'MISSED'}), "
        f"max {max(latencies):.1f} ms"
    )


def tree_rss_kib(root: int) -> int:
    from fsdp_skill.runtime import procfs

    total = 0
    for pid in [root, *procfs.descendants(root)]:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


async def mcp_bench(calls: int, env: dict) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=str(EXE), args=["mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        server = max(
            (p for p in map(int, filter(str.isdigit, os.listdir("/proc"))) if _is_server(p)), default=None
        )  # the newest `fsdp-skill mcp` of ours
        peak, samples, stop = 0, 0, False

        async def sample():
            nonlocal peak, samples
            while not stop:
                if server:
                    peak = max(peak, tree_rss_kib(server))
                    samples += 1
                await asyncio.sleep(0.05)

        sampler = asyncio.create_task(sample())
        idle = tree_rss_kib(server) if server else 0
        t0 = time.perf_counter()
        results = await asyncio.gather(*(session.call_tool("plan_memory", BODY) for _ in range(calls)))
        wall = time.perf_counter() - t0
        stop = True
        await sampler
    errors = [r.content[0].text for r in results if r.is_error]
    full = sum("plan queue is full" in e for e in errors)
    print(
        f"MCP: {calls} parallel plan_memory calls answered in {wall:.1f} s: {calls - len(errors)} planned, {full} refused "
        f"(queue full), {len(errors) - full} other errors"
    )
    print(
        f"  server + children RSS: idle {idle / 1024:.0f} MiB, peak {peak / 1024:.0f} MiB over {samples} samples "
        f"(before the queue: 8 calls took 2.5 GB)"
    )


def _is_server(pid: int) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        return os.getppid() != pid and any(a.endswith(b"fsdp-skill") for a in cmd) and b"mcp" in cmd
    except OSError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plans", type=int, default=60)
    ap.add_argument("--mcp-calls", type=int, default=8)
    ap.add_argument("--no-mcp", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-plan-queue-") as home:
        env = {**os.environ, "FSDP_SKILL_HOME": home}
        port = free_port()
        log = open(os.path.join(home, "serve.log"), "w")
        proc = subprocess.Popen(
            [str(EXE), "serve", "--port", str(port), "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL, stderr=log
        )
        try:
            asyncio.run(http_bench(port, args.plans))
        finally:
            proc.terminate()
            proc.wait(60)
        if not args.no_mcp:
            asyncio.run(mcp_bench(args.mcp_calls, env))


if __name__ == "__main__":
    main()
