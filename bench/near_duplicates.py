"""Near-duplicate detection: throughput per core, accuracy on labelled families, cost in a crawl.

1. **Throughput.** Every page of a content-family sandbox web is rendered
   (10-50 KB: template pages carry ~25 KB of layout), then timed in this one
   process through the pipeline's pure path: main-text extraction, signature,
   LSH query and insert. ``pages_per_s_per_core`` is pages over CPU seconds.
2. **Accuracy** against exact Jaccard of the true main texts (known to the
   sandbox), pages taken in a crawl's (breadth-first) order, on a web of
   short articles (``--accuracy-page-bytes``: fewer shingles, so noisier
   estimates, and layout about ten times the article on template pages):
   * ``precision``: recorded duplicates whose true Jaccard with their canonical
     page is at least the threshold; ``precision_within_0.05`` allows 0.05 below
     it (MinHash estimates carry noise of about 0.035 at 128 permutations);
   * ``recall``: pairs of family members (mirrors included) at true Jaccard at
     least threshold + 0.05 that end up with the same canonical page;
   * ``template_false_positives``: template-host pages recorded as duplicates
     (their main texts are all distinct), and the same count had the whole
     visible text been compared instead of the main text.
3. **Cost in a crawl.** The same web crawled by real ``scrapy crawl`` runs
   with the content pipeline and WARC archive on, then off, with every
   politeness interval at zero (it is our own loopback sandbox), so the crawl
   is CPU-bound: the worst case for the pipeline's share. With any interval
   the feedback rules (10x the response time, Waseda) slow a loaded crawler
   down and hide the cost. The two alternate three times; medians. Wall
   pages/s swing by 30% between identical runs on this machine, so the ratio
   is taken from CPU time: ``throughput_ratio`` from the crawler process's
   CPU per page. The wall ratio is printed too. ``crawl`` has
   12 KB articles (the worst case: the pipeline's work grows with the text,
   the rest of the crawler's does not); ``crawl_short_articles`` 2 KB ones.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlproj.content.extract import title_and_text  # noqa: E402
from crawlproj.content.main_text import main_text  # noqa: E402
from crawlproj.content.near_duplicates import NearDuplicateIndex, jaccard, shingles  # noqa: E402
from crawlproj.content.page import ParsedPage  # noqa: E402
from sandbox.graph import SandboxConfig, SandboxWeb  # noqa: E402
from sandbox.harness import SandboxProcess, run_crawl, with_peak_rss  # noqa: E402

THRESHOLD = 0.8


def crawl_order(web: SandboxWeb) -> list[tuple[int, int]]:
    index = {web.url(h, k): (h, k) for h in web.hosts for k in range(web.size(h))}
    return [index[url] for url in web.expected_crawl()]


def throughput(web: SandboxWeb, order: list[tuple[int, int]]) -> dict:
    bodies = [(web.url(h, k), web.render(h, k)[0], web.specs[h].charset) for h, k in order]
    index = NearDuplicateIndex(THRESHOLD, min_shingles=10)
    cpu, wall = time.process_time(), time.perf_counter()
    extract_cpu = 0.0
    for url, body, charset in bodies:
        t = time.process_time()
        text = main_text(body, charset)
        extract_cpu += time.process_time() - t
        index.check_and_add(url, text)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sizes = sorted(len(b) for _, b, _ in bodies)
    return {"pages": len(bodies), "pages_per_s_per_core": round(len(bodies) / cpu), "wall_pages_per_s": round(len(bodies) / wall),
            "extraction_share": round(extract_cpu / cpu, 2),
            "body_bytes_p10_p50_p90": [sizes[len(sizes) // 10], sizes[len(sizes) // 2], sizes[9 * len(sizes) // 10]]}


def accuracy(web: SandboxWeb, order: list[tuple[int, int]], text_of, index=None) -> dict:  # noqa: ANN001
    """``index``: the one to judge (default: the local one)."""
    index = index if index is not None else NearDuplicateIndex(THRESHOLD, min_shingles=10)
    truth = {(h, k): shingles(web.main_text(h, k)) for h, k in order}
    key = {web.url(h, k): (h, k) for h, k in order}
    canonical: dict[tuple[int, int], tuple[int, int]] = {}
    for h, k in order:
        match = index.check_and_add(web.url(h, k), text_of(h, k))
        if match is not None:
            canonical[(h, k)] = key[match.canonical]
    true_j = {page: jaccard(truth[page], truth[c]) for page, c in canonical.items()}
    families: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for h, k in order:
        family = web.page(h, k).family
        if family:
            families.setdefault(family, []).append((h, k))
    pairs = [(a, b) for members in families.values() for i, a in enumerate(members) for b in members[i + 1:]
             if jaccard(truth[a], truth[b]) >= THRESHOLD + 0.05]
    found = sum(canonical.get(a, a) == canonical.get(b, b) for a, b in pairs)
    template = [p for p in canonical if web.specs[p[0]].content == "template"]
    flagged = len(canonical)
    return {
        "flagged": flagged,
        "precision": round(sum(j >= THRESHOLD for j in true_j.values()) / flagged, 4) if flagged else 1.0,
        "precision_within_0.05": round(sum(j >= THRESHOLD - 0.05 for j in true_j.values()) / flagged, 4) if flagged else 1.0,
        "recall": round(found / len(pairs), 4) if pairs else 1.0,
        "pairs": len(pairs),
        "template_false_positives": len(template),
        "ordinary_false_positives": sum(1 for p in canonical if web.specs[p[0]].content == ""),
    }


def shared_accuracy(web: SandboxWeb, order: list[tuple[int, int]], texts: dict) -> dict:
    """:func:`accuracy` of the distributed profile's index (in a real redis-server): its b-bit
    signatures and shortened keys must find what the local index finds."""
    import redis

    from crawlproj.distributed.near_duplicates import RedisNearDuplicateIndex
    from crawlproj.distributed.redis_server import RedisServer

    with RedisServer() as server:
        index = RedisNearDuplicateIndex(redis.Redis.from_url(server.url), "bench", THRESHOLD, min_shingles=10,
                                        capacity=len(order))
        found = accuracy(web, order, lambda h, k: texts[(h, k)], index)
    return {k: found[k] for k in ("flagged", "precision", "precision_within_0.05", "recall", "pairs",
                                  "template_false_positives")}


def crawl_cost(hosts: int, pages: int, page_bytes: int, repeats: int = 3) -> dict:
    """Pipeline on and off, interleaved ``repeats`` times on one sandbox; medians."""
    configs = {"pipeline_on": {}, "pipeline_off": {"NEAR_DUPLICATES_ENABLED": False, "WARC_ENABLED": False}}
    runs: dict[str, list[dict]] = {name: [] for name in configs}
    with tempfile.TemporaryDirectory() as tmp, SandboxProcess(
            "--hosts", str(hosts), "--pages", str(pages), "--page-bytes", str(page_bytes), "--content-mix",
            "--no-robots-mix", seeds_file=Path(tmp) / "seeds.txt") as sandbox:
        for repeat in range(repeats):
            for name, settings in configs.items():
                workdir = Path(tmp) / f"{name}-{repeat}"
                result = run_crawl("web", workdir, args={"seeds": sandbox.seeds_file}, settings={
                    "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{workdir}/crawl.db",
                    "MIN_INTERVAL": 0, "INTERVAL_DURATION_FACTOR": 0, "WASEDA_INTERVAL_ENABLED": False,
                    "CONCURRENT_REQUESTS": 64, "LOG_LEVEL": "WARNING", **settings}, timeout=1800)
                if result.returncode != 0:
                    raise SystemExit(f"crawl failed: {result.log[-2000:]}")
                items = result.stats.get("item_scraped_count", 0)
                runs[name].append({
                    "pages_per_s": items / result.stats["elapsed_time_seconds"],
                    "crawler_cpu_ms_per_page": 1000 * result.stats["process/cpu_seconds"] / items,
                })
    out: dict[str, object] = {"pages": items, "repeats": repeats}
    for name, found in runs.items():
        out[name] = {key: round(statistics.median(r[key] for r in found), 2) for key in found[0]}
    on, off = out["pipeline_on"], out["pipeline_off"]
    # A CPU-bound crawler's throughput is inversely proportional to the CPU a page costs it.
    out["throughput_ratio"] = round(off["crawler_cpu_ms_per_page"] / on["crawler_cpu_ms_per_page"], 3)
    out["wall_throughput_ratio"] = round(on["pages_per_s"] / off["pages_per_s"], 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--pages", type=int, default=37, help="pages per host (4 families of 9 on variants hosts)")
    parser.add_argument("--page-bytes", type=int, default=12000, help="main text size (template pages add ~25 KB)")
    parser.add_argument("--accuracy-page-bytes", type=int, default=2000,
                        help="main text size for accuracy: short articles, fewer shingles, layout ~10x the text")
    parser.add_argument("--crawl-hosts", type=int, default=200)
    parser.add_argument("--crawl-pages", type=int, default=20)
    parser.add_argument("--no-crawl", action="store_true", help="skip the end-to-end crawl comparison")
    parser.add_argument("--smoke", action="store_true", help="a small web and one short crawl each way")
    opts = parser.parse_args()
    repeats = 3
    if opts.smoke:
        opts.hosts, opts.pages, opts.crawl_hosts, opts.crawl_pages, repeats = 20, 19, 8, 5, 1
    web = SandboxWeb(SandboxConfig(hosts=opts.hosts, pages=opts.pages, page_bytes=opts.page_bytes, content_mix=True,
                                   robots_mix=False))
    order = crawl_order(web)
    out: dict[str, object] = {"bench": "near_duplicates", "threshold": THRESHOLD, "num_perm": 128}
    out.update(throughput(web, order))
    web = SandboxWeb(SandboxConfig(hosts=opts.hosts, pages=opts.pages, page_bytes=opts.accuracy_page_bytes,
                                   content_mix=True, robots_mix=False))
    order = crawl_order(web)
    texts = {(h, k): main_text(web.render(h, k)[0], web.specs[h].charset) for h, k in order}
    out.update(accuracy(web, order, lambda h, k: texts[(h, k)]))
    out["shared_index"] = shared_accuracy(web, order, texts)
    naive = accuracy(web, order, lambda h, k: title_and_text(ParsedPage(
        web.render(h, k)[0].decode(web.specs[h].charset)))[1])
    out["template_false_positives_without_extraction"] = naive["template_false_positives"]
    if not opts.no_crawl:
        out["crawl"] = crawl_cost(opts.crawl_hosts, opts.crawl_pages, opts.page_bytes, repeats)
        if not opts.smoke:
            out["crawl_short_articles"] = crawl_cost(opts.crawl_hosts, opts.crawl_pages, opts.accuracy_page_bytes)
    print(json.dumps(with_peak_rss(out)))


if __name__ == "__main__":
    main()
