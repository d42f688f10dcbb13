"""Distributed crawling on Redis: 1 worker against 2, and scrapy-redis's stock scheduler, same run.

Sandbox: 500 hosts, one seed per host, a 5 s interval, SECONDS per run (the bound is
what an ideal polite crawler fetches in that time, about hosts / interval pages/s;
``SandboxWeb.ideal_polite_fetches``). Each run gets a fresh redis-server on a free port.
Pages are counted on the sandbox's record within SECONDS of the run's first request;
violations come from the same record (gaps under the interval, two requests at once).

Also measured from Redis's own counters: commands and network bytes per crawled page,
and Redis memory: the URL-seen bitmap per URL, and a queued URL's bytes (pushed in bulk
into a fresh prefix), projected to 100 M URLs. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlproj.distributed.dupefilter import bloom_shape  # noqa: E402
from crawlproj.distributed.frontier import RedisFrontier  # noqa: E402
from sandbox.harness import PROJECT_DIR, SandboxProcess, crawl_command  # noqa: E402
from sandbox.servers import RedisServer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from politeness import scrapy_redis_settings  # noqa: E402

HOSTS, INTERVAL = 500, 5.0


def redis_counters(client: redis.Redis) -> tuple[int, int, int]:
    """(commands, script inner ones included; calls sent by clients; network bytes)."""
    stats, commands = client.info("stats"), client.info("commandstats")
    inner = ("bitfield", "bitfield_ro", "rpush", "lpush", "lpop", "llen", "zadd", "zrem", "zscore", "zrange",
             "zrangebyscore", "zcount", "hset", "hdel", "hget", "hgetall", "incr", "incrby", "decr", "decrby",
             "get", "set", "del", "pexpire")
    sent = sum(v["calls"] for k, v in commands.items() if k.removeprefix("cmdstat_") not in inner)
    return (stats["total_commands_processed"], sent,
            stats["total_net_input_bytes"] + stats["total_net_output_bytes"])


def run(sandbox: SandboxProcess, workdir: Path, seconds: float, workers: int, settings: dict) -> dict:
    sandbox.reset()
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        commands0, sent0, bytes0 = redis_counters(client)
        base = {"HOST_RESOLVE": sandbox.host_resolve, "REDIS_URL": server.url, "CLOSESPIDER_TIMEOUT": seconds,
                "CONCURRENT_REQUESTS": 64, "LOG_LEVEL": "WARNING", "RENDER_MODE": "never",
                "STORE_URI": f"sqlite:///{workdir}/{{worker}}/crawl.db", **settings}
        procs = [subprocess.Popen(crawl_command("web", {"seeds": sandbox.seeds_file}, {**base, "WORKER_ID": f"w{i}"}),
                                  cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i in range(workers)]
        for proc in procs:
            proc.wait(timeout=seconds * 3 + 120)
        commands1, sent1, bytes1 = redis_counters(client)
    records = sandbox.records()
    start = min((r.arrival for r in records), default=0.0)
    pages = sum(1 for r in records if r.path != "/robots.txt" and r.status == 200 and r.arrival < start + seconds)
    report = sandbox.report(INTERVAL, basis="idle")
    return {"pages": pages, "pages_per_s": round(pages / seconds, 2), "violations": report["violations"],
            "min_gap": report["min_gap"], "max_concurrency": report["max_concurrency"],
            "redis_commands_per_page": round((commands1 - commands0) / max(1, pages), 1),
            "redis_calls_per_page": round((sent1 - sent0) / max(1, pages), 2),
            "redis_bytes_per_page": round((bytes1 - bytes0) / max(1, pages))}


class _Spider:
    """Stands in for the crawl's spider: its requests name ``parse`` and ``on_error``, as a crawl's links do."""

    name = "web"

    def parse(self, response):  # noqa: ANN001, ANN201
        pass

    def on_error(self, failure):  # noqa: ANN001, ANN201
        pass


def queued_bytes(urls: int, hosts: int, long_form: bool = False) -> dict:
    """Redis memory of the queue, from Redis's own ``used_memory``: ``urls`` links like a crawl's
    (GET, depth, CGI hops; URLs of about 60 characters) over ``hosts`` hosts, pushed into a
    fresh Redis. One link per host first (each host's keys are made then), then the rest:
    bytes per queued URL, and per host beyond its URLs. The URL-seen bitmap's share per URL
    comes from its shape (``bloom_shape``) for this many URLs."""
    import scrapy

    from crawlproj.frontier.entry import request_entry

    from crawlproj.distributed import frontier as frontier_module

    spider = _Spider()
    if long_form:  # every entry pickled, as every entry was before the lean form
        frontier_module.pack = lambda entry, key: b"P" + __import__("pickle").dumps(entry, protocol=5)
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        frontier = RedisFrontier(client, "m", "w", partitions=64)
        lengths, lean = [], 0

        def push(i: int) -> None:
            host = f"www.site{i % hosts}.example.org"
            url = f"http://{host}/articles/2026/{i % 12 + 1:02d}/story-{i // hosts}.html"
            entry = request_entry(scrapy.Request(url, callback=spider.parse, errback=spider.on_error,
                                                 meta={"depth": 3, "cgi_hops": 0}), spider)
            lengths.append(len(url)) if len(lengths) < 10_000 else None
            frontier.push(host, entry)

        client.config_set("save", "")
        before = client.info("memory")["used_memory"]
        for i in range(hosts):
            push(i)
        frontier.flush()
        first = client.info("memory")["used_memory"] - before
        for i in range(hosts, urls):
            push(i)
        frontier.flush()
        total = client.info("memory")["used_memory"] - before
        lean = frontier.packed[1]
    if long_form:
        from crawlproj.distributed.entries import pack

        frontier_module.pack = pack
    per_url = (total - first) / max(1, urls - hosts)
    bits, _ = bloom_shape(urls, 0.001)
    return {"urls": urls, "hosts": hosts, "url_chars_mean": round(sum(lengths) / len(lengths), 1),
            "lean_share": round(lean / urls, 4), "redis_bytes": total,
            "bytes_per_url": round(total / urls, 1), "bytes_per_url_beyond_its_host": round(per_url, 1),
            "bytes_per_host": round(first / hosts - per_url, 1),
            "seen_bytes_per_url": round(bits / 8 / urls, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--only-one", action="store_true", help="only the one-worker run (for tuning)")
    parser.add_argument("--queued", type=int, default=10_000_000, help="queued URLs for the memory figure")
    parser.add_argument("--queued-hosts", type=int, default=1_000_000, help="their hosts")
    parser.add_argument("--only-queued", action="store_true", help="only the memory figure")
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    opts = parser.parse_args()
    if opts.smoke:
        opts.seconds, opts.queued, opts.queued_hosts = 8.0, 20_000, 2_000
    if opts.only_queued:
        print(json.dumps({"bench": "distributed", "queued": queued_bytes(opts.queued, opts.queued_hosts),
                          "queued_long_form": queued_bytes(opts.queued // 10, opts.queued_hosts // 10, long_form=True)}))
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-distributed-"))
    seconds = opts.seconds
    ours = {"PROFILE": "sandbox", "SCHEDULER": "crawlproj.distributed.scheduler.DistributedScheduler",
            "DUPEFILTER_CLASS": "crawlproj.distributed.dupefilter.RedisBloomDupeFilter", "MIN_INTERVAL": INTERVAL,
            "FRONTIER_PARTITIONS": 64, "WORKER_HEARTBEAT": 1.0, "WORKER_TTL": 10}
    started = time.monotonic()
    with SandboxProcess("--hosts", str(HOSTS), "--pages", str(int(seconds / INTERVAL) + 10), "--no-robots-mix",
                        "--no-japanese", "--cross-host", "0", seeds_file=tmp / "seeds.txt") as sandbox:
        web = sandbox.web
        bound = web.ideal_polite_fetches(web.seeds(), INTERVAL, seconds) / seconds
        one = run(sandbox, tmp / "one", seconds, 1, ours)
        if opts.only_one:
            print(json.dumps({"bound_pages_per_s": round(bound, 2), "one_worker": one}))
            return
        two = run(sandbox, tmp / "two", seconds, 2, ours)
        peer = run(sandbox, tmp / "scrapy-redis", seconds, 1,
                   {**{k: v for k, v in scrapy_redis_settings("").items() if k != "REDIS_URL"},
                    "DOWNLOAD_DELAY": INTERVAL,
                    "CONCURRENT_REQUESTS_PER_DOMAIN": 1})
    bits, _ = bloom_shape(100_000_000, 0.001)
    queued = queued_bytes(opts.queued, opts.queued_hosts)
    long_form = queued_bytes(opts.queued // 10, opts.queued_hosts // 10, long_form=True)
    out = {
        "bench": "distributed", "hosts": HOSTS, "interval_s": INTERVAL, "seconds": seconds,
        "workers": 2,
        "pages_per_s": two["pages_per_s"],
        "bound_pages_per_s": round(bound, 2),
        "efficiency": round(two["pages_per_s"] / bound, 3),
        "violations": two["violations"],
        "max_concurrency": two["max_concurrency"],
        "one_worker": {**one, "efficiency": round(one["pages_per_s"] / bound, 3)},
        "two_workers": two,
        "scrapy_redis_pages_per_s": peer["pages_per_s"],
        "scrapy_redis_violations": peer["violations"],
        "ratio_vs_scrapy_redis": round(two["pages_per_s"] / peer["pages_per_s"], 2) if peer["pages_per_s"] else None,
        "redis_commands_per_page": two["redis_commands_per_page"],
        "redis_calls_per_page": two["redis_calls_per_page"],
        "redis_bytes_per_page": two["redis_bytes_per_page"],
        "redis_seen_bytes_per_url": round(bits / 8 / 100_000_000, 2),
        "redis_queued_bytes_per_url": queued["bytes_per_url"],
        "queued": queued,
        "queued_long_form": long_form,  # every entry pickled, as before the lean form (a tenth of the URLs)
        "projected_redis_gb_per_100m_urls": {"seen_only": round(bits / 8 / 1e9, 2),
                                             "all_queued": round((bits / 8 + queued["bytes_per_url"] * 1e8) / 1e9, 1)},
        "wall_seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
