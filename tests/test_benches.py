"""Benches that cannot rot: each bench's ``--smoke`` mode runs its code paths on tiny inputs in
seconds, and its one JSON line must parse and hold its figures. A bench that crashes fails
the suite (``bench/near_duplicates.py`` once crashed for weeks and nothing noticed)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sandbox.harness import PROJECT_DIR

pytestmark = pytest.mark.slow

#: Every bench script and what its smoke line must show. bench/bare_spider.py is no bench but
#: the peer spider the throughput and memory benches run.
CHECKS = {
    "distributed": lambda o: (o["violations"] == 0 and 0 < o["shared_bytes_per_page"] < 2000 and o["pages_per_s"] > 0 and o["cluster_violations"] == 0
                              and o["cluster"]["pages"] > 0 and len(o["cluster"]["per_master"]["commands_per_page"]) == 3
                              and 0 < o["queued"]["bytes_per_url"] < o["queued_long_form"]["bytes_per_url"]
                              # the Bloom chains' shape says what Redis holds
                              and abs(o["seen_measured"]["bytes"] / o["seen_measured"]["shape_bytes"] - 1) < 0.05
                              and len(o["sizing"]["frontier"]) == 6),
    "content": lambda o: (o["crawlproj_api"] in ("extract_content", "main_text")
                          and o["pages"]["articles"] > 0 and o["pages"]["docs"] > 0
                          and all(0 < o[c][e]["f1"] <= 1 and o[c][e]["cpu_ms_median"] > 0
                                  for c in ("articles", "docs") for e in ("crawlproj", "resiliparse", "trafilatura"))
                          and set(o["docs"]["crawlproj"]["kept"]) == {"code", "table", "dl"}),
    "content_store": lambda o: (o["pages_with_content"] > 0 and 0 < o["store"]["content_bytes_per_page_text_only"]
                                < o["store"]["content_bytes_per_page"] and o["store"]["search_index_bytes_per_page"] > 0
                                and o["cpu"]["compress_us_per_page"] > 0 and o["cpu"]["index_us_per_page"] > 0
                                and o["export"]["jsonl"]["pages"] == o["export"]["parquet"]["pages"] == o["pages"]
                                and 0 < o["export"]["wet"]["pages"] <= o["pages_with_content"]
                                and all(o["export"][f"{f}_times"]["pages"]
                                        == o["export"]["times"] * o["export"][f]["pages"]
                                        for f in ("jsonl", "parquet", "wet"))),
    "changes": lambda o: (o["edits"] > 0 and o["politeness_violations"] == 0 and o["false_reports"] == 0
                          and o["noise_reports_on_watched_pages"] == 0 and o["changes_recorded"] > 0
                          and o["webhooks_dead_lettered"] == 0),
    "completion": lambda o: all(s["low_s"] <= s["estimate_s"] <= s["high_s"] and s["peak_rss_mb"] > 0
                                for s in o["shapes"].values()) and len(o["shapes"]) == 1,
    "documents": lambda o: (o["pypdfium2"]["pages"] == o["pdfminer.six"]["pages"] > 0 and o["pypdfium2"]["failed"] == []
                            and o["pypdfium2_has_pdfminer_words"] > 0.9),
    "extractors": lambda o: o["pages"] > 0 and o["resiliparse"]["quality"] > 0,
    "frontier": lambda o: o["urls"] > 0 and o["rss_bytes_per_url"] > 0,
    "languages": lambda o: o["pages"] > 0 and o["languages"],
    "memory_budget": lambda o: (o["structures"]["near_duplicate_index"]["memory_bytes"] < 100  # on disk
                                and 1.5 < o["structures"]["url_seen_bloom"]["bytes"] < 2.5),
    "near_duplicates": lambda o: (o["flagged"] > 0 and o["template_false_positives"] == 0
                                  # the shared index's 4-bit signatures find what the local one does
                                  and o["shared_index"]["flagged"] > 0 and o["shared_index"]["template_false_positives"] == 0),
    "broad": lambda o: (o["pages"] > 0 and o["violations"] == 0 and o["hosts_seen"] > o["hosts_fetched"] > 20
                        and o["redis_shared_bytes_per_fetched_page"] > 0 and o["masters"] == 3),
    "ordering": lambda o: set(o["pagerank_share"]) == {"bfs", "backlinks"} and o["peak_rss_mb"] > 0,
    "pdf_accents": lambda o: (len(o["files"]) == 2
                              and all(f["recall_after"] > f["recall_before"] for f in o["files"])),
    "politeness": lambda o: o["violations"] == 0 and o["pages_per_s"] > 0,
    "politeness_soak": lambda o: o["pages"] > 0 and o["interval_violations"] == 0 and o["concurrency_violations"] == 0,
    "render": lambda o: o["pages"] > 0 and o["detection"],
    # Replay against the live page, on two real sites: what the targets of bench/replay.py ask.
    "replay": lambda o: (o["pages_compared"] == 4 and o["resources_present"] >= 0.99 and o["similarity_min"] >= 0.9
                         and o["text_match_min"] >= 0.99 and o["politeness_violations"] == 0),
    "revisit_sim": lambda o: (set(o["regimes"]) == {"loguniform", "realweb", "feeds"}
                              and o["regimes"]["feeds"]["feeds"]["feed_fetches_per_day"] > 0),
    "sandbox_capacity": lambda o: o["ok"] > 0 and o["non_200"] == 0,
    "throughput": lambda o: (o["cpu"]["crawlproj"]["pages"] > 0 and o["polite"]["crawlproj"]["violations"] == 0
                             and 0 < o["workers"]["one_cores_used"] and 0 < o["workers"]["two_cores_used"]
                             and o["workers"]["two_late_ms_per_page"] is not None
                             and len(o["workers"]["two_shares"]) == 2 and abs(sum(o["workers"]["two_shares"]) - 1) < 0.01
                             # a host's 404s and samples' scripts count beside its pages, never against them
                             and o["polite"]["share_of_bound"] <= o["polite"]["share_of_bound_all_fetches"]),
    "urlseen": lambda o: o["urls"] > 0 and o["bytes_per_url"] < 3,
    "memory": lambda o: (all(o[run]["pages"] > 0 and o[run]["peak_mb"] > 0
                             for run in ("bare", "cpu", "workers", "polite", "incremental"))
                         and len(o["workers"]["workers"]) == 2
                         and o["error_lines"] == {"cpu": 0, "workers": 0, "polite": 0, "incremental": 0}),
}
#: The smokes of a minute or more (they go first: see LONGEST_FIRST in tests/conftest.py).
LONGEST = ("memory", "throughput", "render", "distributed", "broad", "politeness", "replay")


def test_every_bench_has_a_smoke_test():
    scripts = {p.stem for p in (PROJECT_DIR / "bench").glob("*.py")} - {"bare_spider"}
    assert scripts == set(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS, key=lambda n: LONGEST.index(n) if n in LONGEST else len(LONGEST)))
def test_bench_smoke(name):
    proc = subprocess.run([sys.executable, f"bench/{name}.py", "--smoke"], cwd=PROJECT_DIR, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["bench"] == name
    assert CHECKS[name](out), out
    assert out["peak_rss_mb"] > 0, out  # every bench reports its peak RSS beside its speed
