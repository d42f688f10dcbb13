"""How many requests/s the sandbox web answers on this machine (target: >= 2,000).

Starts the sandbox server (500 hosts) as a real process and loads it from
CLIENTS client processes over keep-alive connections for SECONDS seconds,
requesting random pages of random hosts. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402

from sandbox.harness import SandboxProcess, with_peak_rss  # noqa: E402


async def _load(port: int, hosts: int, pages: int, seconds: float, connections: int, seed: int) -> tuple[int, int]:
    from sandbox.graph import SandboxWeb

    rng = random.Random(seed)
    ok = failed = 0
    deadline = time.monotonic() + seconds
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            nonlocal ok, failed
            while time.monotonic() < deadline:
                host = rng.randrange(hosts)
                path = SandboxWeb.path(rng.randrange(pages))
                try:
                    async with session.get(f"http://127.0.0.1:{port}{path}",
                                           headers={"Host": f"h{host}.sandbox.test:{port}"}) as resp:
                        await resp.read()
                        ok += resp.status == 200
                        failed += resp.status != 200
                except aiohttp.ClientError:
                    failed += 1

        await asyncio.gather(*(worker() for _ in range(connections)))
    return ok, failed


def _client(args: tuple) -> tuple[int, int]:
    return asyncio.run(_load(*args))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--connections", type=int, default=32, help="per client process")
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    opts = parser.parse_args()
    if opts.smoke:
        opts.seconds, opts.clients, opts.connections, opts.hosts = 2.0, 1, 4, 20
    with SandboxProcess("--hosts", str(opts.hosts), "--pages", str(opts.pages), "--no-japanese") as sandbox:
        jobs = [(sandbox.port, opts.hosts, opts.pages, opts.seconds, opts.connections, i) for i in range(opts.clients)]
        started = time.monotonic()
        with mp.Pool(opts.clients) as pool:
            results = pool.map(_client, jobs)
        elapsed = time.monotonic() - started
        recorded = sandbox.report()["requests"]
    ok = sum(r[0] for r in results)
    failed = sum(r[1] for r in results)
    print(json.dumps(with_peak_rss({
        "bench": "sandbox_capacity",
        "requests_per_s": round(ok / elapsed, 1),
        "ok": ok,
        "non_200": failed,
        "recorded_by_server": recorded,
        "seconds": round(elapsed, 2),
        "clients": opts.clients,
        "connections": opts.clients * opts.connections,
        "target_requests_per_s": 2000,
    })))


if __name__ == "__main__":
    main()
