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
* ``ideal_top``: the PageRank of the top 20% of pages, the bound no crawl reaches (it
  would need every important URL known from the start).

``harvest_rate`` is the share of the first N pages (N = 10%; the topic holds about 13%)
that belong to the target topic: breadth-first against the topical ordering
(``-a topic=...``, a few of the topic's words in English and Japanese) with the TF-IDF
model (``topical``) and with the embedding model (``topical_embedding``). ``violations`` counts requests closer than the interval, per policy (must be 0).
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlproj.sandbox.graph import TOPIC_WORDS_EN, TOPIC_WORDS_JA, TOPICS  # noqa: E402
from crawlproj.sandbox.harness import SandboxProcess, run_crawl  # noqa: E402

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
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="extra crawl settings for every run (e.g. FRONTIER_LEVELS=16)")
    args = parser.parse_args()
    EXTRA.update(item.split("=", 1) for item in args.set)
    work = Path(tempfile.mkdtemp(prefix="bench-ordering-"))
    options = ["--hosts", str(args.hosts), "--pages", str(args.pages), "--power-law", "1.0", "--importance",
               "--out-links", "12", "--cross-host", "0.3",
               "--topics", "5", "--no-robots-mix", "--seed", "3"]
    out: dict = {"bench": "ordering", "hosts": args.hosts}
    with SandboxProcess(*options) as sandbox:
        web = sandbox.web
        rank = web.pagerank()
        pages = set(rank)
        budget = int(len(pages) * args.share)
        seed_hosts = [h for h in web.hosts][:: max(1, args.hosts // args.seeds)][: args.seeds]
        seeds = work / "seeds.txt"
        seeds.write_text("\n".join(web.origin(h) + "/" for h in seed_hosts) + "\n")
        scores = work / "pagerank.json"
        scores.write_text(json.dumps(rank))
        out.update(pages=len(pages), budget=budget, seeds=len(seed_hosts),
                   ideal_top=round(sum(sorted(rank.values(), reverse=True)[:budget]), 4))
        share, runs = {}, {}
        for name in filter(None, args.policies.split(",")):
            run = crawl(sandbox, work, name, POLICIES[name], budget, str(seeds), args.interval,
                        {"PRIORITY_SCORES_FILE": str(scores)} if name == "oracle" else None)
            first = served_pages(sandbox, pages, budget)
            share[name] = round(sum(rank[u] for u in first), 4)
            runs[name] = {"seconds": run["seconds"], "served": len(first), "violations": run["violations"],
                          "promotions": run["stats"].get("ordering/promotions", 0)}
            print(f"{name}: share {share[name]} ({runs[name]})", file=sys.stderr)
        # Topical: the target topic's hosts, from the same ground truth.
        topic = TOPICS[args.topic]
        relevant = {u for u in pages if web.topic_of(web.host_index(u.split("/")[2])) == args.topic}
        # The user's query names the topic in both languages of the sandbox (a third of its hosts are Japanese).
        query = " ".join(TOPIC_WORDS_EN[topic][:4] + TOPIC_WORDS_JA[topic][:3])
        harvest, n = {}, int(len(pages) * args.topic_share)
        for name, prioritizer, model in (("bfs", "bfs", "tfidf"), ("topical", "topical", "tfidf"),
                                         ("topical_embedding", "topical", "embedding")):
            run = crawl(sandbox, work, f"topic-{name}", prioritizer, n, str(seeds), args.interval,
                        {"TOPICAL_TUNNEL": args.tunnel, "TOPICAL_MODEL": model},
                        args={"topic": query} if prioritizer == "topical" else None)
            first = served_pages(sandbox, pages, n)
            harvest[name] = round(sum(u in relevant for u in first) / max(1, len(first)), 4)
            runs[f"topic-{name}"] = {"seconds": run["seconds"], "served": len(first), "violations": run["violations"],
                                     "crawler_harvest_rate": run["stats"].get("topical/harvest_rate")}
            print(f"topic {name}: harvest {harvest[name]} ({runs[f'topic-{name}']})", file=sys.stderr)
    best = max((k for k in share if k not in ("bfs", "oracle")), key=share.get, default=None)
    out.update(
        pagerank_share=share, harvest_rate=harvest, harvest_after_pages=n, topic=topic, query=query,
        relevant_share_of_web=round(len(relevant) / len(pages), 4),
        best=best,
        best_vs_bfs=round(share[best] / share["bfs"], 3) if best and share.get("bfs") else None,
        best_vs_oracle=round(share[best] / share["oracle"], 3) if best and share.get("oracle") else None,
        best_vs_ideal_top=round(share[best] / out["ideal_top"], 3) if best else None,
        topical_vs_bfs=round(harvest["topical"] / harvest["bfs"], 3) if harvest.get("bfs") else None,
        violations=sum(r["violations"] for r in runs.values()), runs=runs,
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
