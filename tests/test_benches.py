"""Benches that cannot rot: each bench's --smoke mode runs the same code paths in seconds, and
its one JSON line must parse and hold its figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from crawlproj.sandbox.harness import PROJECT_DIR


def smoke(name: str, timeout: float = 300) -> dict:
    proc = subprocess.run([sys.executable, f"bench/{name}.py", "--smoke"], cwd=PROJECT_DIR, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = proc.stdout.strip().splitlines()[-1]
    out = json.loads(line)
    assert out["bench"] == name
    return out


def test_memory_bench_smoke():
    out = smoke("memory")
    for run in ("bare", "cpu", "workers", "polite", "incremental"):
        assert out[run]["pages"] > 0 and out[run]["peak_mb"] > 0, run
    assert len(out["workers"]["workers"]) == 2
    assert out["error_lines"] == {"cpu": 0, "workers": 0, "polite": 0, "incremental": 0}


@pytest.mark.parametrize("name", ["memory_budget"])
def test_budget_bench_smoke(name):
    out = smoke(name)
    rows = out["structures"]
    assert rows["near_duplicate_index"]["memory_bytes"] < 100  # on disk, not per page in memory
    assert 1.5 < rows["url_seen_bloom"]["bytes"] < 2.5
    assert all(row["bound"] for row in rows.values())


def test_near_duplicates_bench_smoke():
    out = smoke("near_duplicates")
    assert out["pages"] > 0 and out["flagged"] > 0 and out["template_false_positives"] == 0
    assert out["crawl"]["pipeline_on"]["crawler_cpu_ms_per_page"] > 0
