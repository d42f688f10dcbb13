"""Crawl ordering: the share of the sandbox's PageRank captured in the first 20% of pages, and
the topical harvest rate.

One sandbox web of 200 hosts with preferential links (``--importance``: a few hosts
and pages draw most links) and 5 topics clustered by host. Its ground truth is computed
here from the same deterministic graph: each page's PageRank (damping 0.85) and topic.

Each policy crawls it from the same seeds under the same politeness (``MIN_INTERVAL``)
until the server has served 20% of the fetchable pages; the server's record of requests
says which pages came first. ``pagerank_share[policy]`` is the PageRank of the first 20%
of pages the server served, out of a total of 1:

* ``bfs``, ``backlinks``, ``opic``, ``larger_sites``: the orderings of ``PRIORITIZER``;
* ``opic_backlinks``: OPIC and backlinks mixed half and half;
* ``oracle``: the ``scores`` ordering fed the true PageRank: a crawl that knows every
  page's importance in advance, under the same politeness and the same link discovery;
* ``plain_bfs``: a textbook breadth-first traversal of the same graph (one FIFO queue, no
  per-host queues, no politeness), for comparison with the frontier's ``bfs``;
* ``ideal_top``: the PageRank of the top 20% of pages, the bound no crawl reaches (it
  would need every important URL known from the start).

``best_vs_bfs`` and ``best_vs_plain_bfs`` compare the best online ordering with both.
``bound_vs_bfs`` is ``ideal_top`` over breadth-first's share: no ordering can capture more
than the top pages themselves, so it is the ceiling of ``best_vs_bfs`` on this web.
``indegree_exponent`` says how concentrated the web's links are (the Web's is about 2.1).
``--sweep 75:0.8,25:0.2`` adds ``bound_sweep``: that ceiling on webs of other shapes (mean
pages per host : the share of links that go to any page rather than a popular one).

``harvest_rate`` is the share of the first N pages (N = 10%; the topic holds about 13%)
that belong to the target topic: breadth-first against the topical ordering
(``-a topic=...``, a few of the topic's words in English and Japanese) with the TF-IDF
model (``topical``) and with the embedding model (``topical_embedding``). ``violations`` counts requests closer than the interval, per policy (must be 0).
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.graph import TOPIC_WORDS_EN, TOPIC_WORDS_JA, TOPICS, SandboxConfig  # noqa: E402
from sandbox.harness import SandboxProcess, run_crawl  # noqa: E402
from sandbox.order_sim import ordering_web_options  # noqa: E402

POLICIES = {"bfs": "bfs", "backlinks": "backlinks", "opic": "opic", "larger_sites": "larger_sites",
            "opic_backlinks": "opic:0.5,backlinks:0.5", "oracle": "scores"}


EXTRA: dict[str, str] = {}


def served_pages(sandbox: SandboxProcess, pages: set[str], n: int) -> list[str]:
    """The first ``n`` distinct fetchable pages the server served, in arrival order."""
    web = sandbox.web
    out, seen = [], set()
    for r in sorted(sandbox.records(), key=lambda r: r.arrival):
        url = f"http://{r.host}{r.path}"
        if web.port != 80:
            url = f"http://{r.host}:{web.port}{r.path}"
        if url in pages and url not in seen:
            seen.add(url)
            out.append(url)
            if len(out) == n:
                break
    return out


def crawl(sandbox: SandboxProcess, work: Path, name: str, prioritizer: str, budget: int, seeds: str,
          interval: float, extra: dict | None = None, args: dict | None = None) -> dict:
    sandbox.reset()
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{work / name / 'crawl.db'}",
                "PRIORITIZER": prioritizer, "MIN_INTERVAL": interval, "RENDER_MODE": "never",
                "CLOSESPIDER_PAGECOUNT": int(budget * 1.3) + 50, "CONCURRENT_REQUESTS": 16,
                "WARC_ENABLED": False, "REVISIT_ENABLED": False, "DASHBOARD_ENABLED": False,
                "LOG_LEVEL": "INFO", **EXTRA, **(extra or {})}
    started = time.monotonic()
    result = run_crawl("web", work / name, args={"seeds": seeds, **(args or {})}, settings=settings, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"{name}: crawl failed\n{result.log[-3000:]}")
    return {"seconds": round(time.monotonic() - started, 1), "stats": result.stats,
            "violations": sandbox.report(interval)["violations"]}


def web_options(args: argparse.Namespace, pages: int, tail: float) -> list[str]:
    """The sandbox of every run: ``pages`` mean pages per host, ``tail`` its importance tail."""
    return ordering_web_options(args.hosts, pages, tail)


def prepare(sandbox: SandboxProcess, args: argparse.Namespace, work: Path) -> tuple[dict[str, float], Path, int]:
    """The web's true PageRank, a seed file (the roots of ``args.seeds`` hosts spread over
    the web) and the page budget."""
    web = sandbox.web
    rank = web.pagerank()
    seed_hosts = [h for h in web.hosts][:: max(1, args.hosts // args.seeds)][: args.seeds]
    seeds = work / "seeds.txt"
    seeds.write_text("\n".join(web.origin(h) + "/" for h in seed_hosts) + "\n")
    return rank, seeds, int(len(rank) * args.share)


def captured(rank: dict[str, float], urls: list[str]) -> float:
    """The share of the web's PageRank in ``urls``."""
    return round(sum(rank[u] for u in urls), 4)


def ideal_top(rank: dict[str, float], budget: int) -> float:
    return captured(rank, sorted(rank, key=rank.get, reverse=True)[:budget])


def indegree_exponent(web, pages: set[str], least: int = 20) -> float:
    """The power-law exponent of the web's in-degrees (maximum likelihood over pages with at
    least ``least`` in-links); the Web's is about 2.1 (Broder et al., Graph structure in the
    Web, 2000)."""
    indegree = Counter(target for _, target in web.expected_links(pages) if target in pages)
    tail = [d for d in indegree.values() if d >= least]
    return round(1 + len(tail) / sum(math.log(d / (least - 0.5)) for d in tail), 2)


def plain_bfs(web, rank: dict[str, float], seeds: Path, budget: int) -> float:
    """The share a textbook breadth-first crawl (one FIFO queue, no per-host queues, no
    politeness) gets on the same graph: a traversal, not a crawl (the sandbox's own, which
    lists pages in the order it reaches them)."""
    return captured(rank, list(web.expected_crawl(seeds.read_text().split()))[:budget])


def bound_sweep(args: argparse.Namespace, work: Path) -> list[dict]:
    """The ceiling of any ordering over breadth-first (``ideal_top / bfs``) on webs of other
    shapes: larger sites, and links more or less concentrated on popular pages."""
    rows = []
    for shape in args.sweep.split(","):
        pages, tail = shape.split(":")
        with SandboxProcess(*web_options(args, int(pages), float(tail))) as sandbox:
            rank, seeds, budget = prepare(sandbox, args, work)
            run = crawl(sandbox, work, f"sweep-{pages}-{tail}", "bfs", budget, str(seeds), args.interval)
            bfs = captured(rank, served_pages(sandbox, set(rank), budget))
            top = ideal_top(rank, budget)
            rows.append({"pages_per_host": int(pages), "importance_tail": float(tail), "pages": len(rank),
                         "indegree_exponent": indegree_exponent(sandbox.web, set(rank)), "ideal_top": top,
                         "bfs": bfs, "bound_vs_bfs": round(top / bfs, 3), "violations": run["violations"]})
            print(f"sweep {shape}: {rows[-1]}", file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=25, help="mean pages per host (Zipf host sizes)")
    parser.add_argument("--share", type=float, default=0.2, help="stop after this share of the pages")
    parser.add_argument("--seeds", type=int, default=10, help="roots of this many hosts seed the crawl")
    parser.add_argument("--interval", type=float, default=0.1, help="MIN_INTERVAL, seconds")
    parser.add_argument("--topic", type=int, default=0, help="index of the target topic")
    parser.add_argument("--tunnel", type=int, default=1, help="TOPICAL_TUNNEL of the topical crawl")
    parser.add_argument("--topic-share", type=float, default=0.1,
                        help="the harvest rate is taken after this share of the pages (the topic holds ~13%%)")
    parser.add_argument("--importance-tail", type=float, default=SandboxConfig.importance_tail,
                        help="share of links that go to any page rather than a popular one")
    parser.add_argument("--topical-models", default="tfidf,embedding",
                        help="relevance models of the harvest-rate runs (empty: no harvest runs)")
    parser.add_argument("--sweep", default="", metavar="PAGES:TAIL,...",
                        help="also the ceiling over breadth-first on webs of these shapes, e.g. 75:0.8,25:0.2")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="extra crawl settings for every run (e.g. FRONTIER_LEVELS=16)")
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.hosts, args.pages, args.policies, args.topical_models = 30, 8, "bfs,backlinks", "tfidf"
    EXTRA.update(item.split("=", 1) for item in args.set)
    work = Path(tempfile.mkdtemp(prefix="bench-ordering-"))
    out: dict = {"bench": "ordering", "hosts": args.hosts}
    with SandboxProcess(*web_options(args, args.pages, args.importance_tail)) as sandbox:
        web = sandbox.web
        rank, seeds, budget = prepare(sandbox, args, work)
        pages = set(rank)
        scores = work / "pagerank.json"
        scores.write_text(json.dumps(rank))
        out.update(pages=len(pages), budget=budget, seeds=args.seeds, importance_tail=args.importance_tail,
                   indegree_exponent=indegree_exponent(web, pages), ideal_top=ideal_top(rank, budget),
                   plain_bfs=plain_bfs(web, rank, seeds, budget))
        share, runs = {}, {}
        for name in filter(None, args.policies.split(",")):
            run = crawl(sandbox, work, name, POLICIES[name], budget, str(seeds), args.interval,
                        {"PRIORITY_SCORES_FILE": str(scores)} if name == "oracle" else None)
            first = served_pages(sandbox, pages, budget)
            share[name] = captured(rank, first)
            runs[name] = {"seconds": run["seconds"], "served": len(first), "violations": run["violations"],
                          "promotions": run["stats"].get("ordering/promotions", 0),
                          "peak_rss_mb": round(run["stats"].get("process/max_rss_bytes", 0) / 2**20)}
            print(f"{name}: share {share[name]} ({runs[name]})", file=sys.stderr)
        # Topical: the target topic's hosts, from the same ground truth.
        topic = TOPICS[args.topic]
        relevant = {u for u in pages if web.topic_of(web.host_index(u.split("/")[2])) == args.topic}
        # The user's query names the topic in both languages of the sandbox (a third of its hosts are Japanese).
        query = " ".join(TOPIC_WORDS_EN[topic][:4] + TOPIC_WORDS_JA[topic][:3])
        harvest, n = {}, int(len(pages) * args.topic_share)
        models = [m for m in args.topical_models.split(",") if m]
        for name, prioritizer, model in [("bfs", "bfs", "tfidf")] * bool(models) + [
                ("topical" if m == "tfidf" else f"topical_{m}", "topical", m) for m in models]:
            run = crawl(sandbox, work, f"topic-{name}", prioritizer, n, str(seeds), args.interval,
                        {"TOPICAL_TUNNEL": args.tunnel, "TOPICAL_MODEL": model},
                        args={"topic": query} if prioritizer == "topical" else None)
            first = served_pages(sandbox, pages, n)
            harvest[name] = round(sum(u in relevant for u in first) / max(1, len(first)), 4)
            runs[f"topic-{name}"] = {"seconds": run["seconds"], "served": len(first), "violations": run["violations"],
                                     "crawler_harvest_rate": run["stats"].get("topical/harvest_rate"),
                                     "peak_rss_mb": round(run["stats"].get("process/max_rss_bytes", 0) / 2**20)}
            print(f"topic {name}: harvest {harvest[name]} ({runs[f'topic-{name}']})", file=sys.stderr)
    best = max((k for k in share if k not in ("bfs", "oracle")), key=share.get, default=None)
    out.update(
        pagerank_share=share, harvest_rate=harvest, harvest_after_pages=n, topic=topic, query=query,
        relevant_share_of_web=round(len(relevant) / len(pages), 4),
        best=best,
        best_vs_bfs=round(share[best] / share["bfs"], 3) if best and share.get("bfs") else None,
        # Against the textbook breadth-first of the literature (which has no politeness to obey).
        best_vs_plain_bfs=round(share[best] / out["plain_bfs"], 3) if best and out.get("plain_bfs") else None,
        best_vs_oracle=round(share[best] / share["oracle"], 3) if best and share.get("oracle") else None,
        best_vs_ideal_top=round(share[best] / out["ideal_top"], 3) if best else None,
        # No ordering can beat the top pages themselves: the ceiling of best_vs_bfs on this web.
        bound_vs_bfs=round(out["ideal_top"] / share["bfs"], 3) if share.get("bfs") else None,
        topical_vs_bfs=round(harvest["topical"] / harvest["bfs"], 3) if harvest.get("bfs") else None,
        violations=sum(r["violations"] for r in runs.values()),
        peak_rss_mb=max((r["peak_rss_mb"] for r in runs.values()), default=0), runs=runs,
    )
    if args.sweep:
        out["bound_sweep"] = bound_sweep(args, work)
        out["violations"] += sum(row.pop("violations") for row in out["bound_sweep"])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
