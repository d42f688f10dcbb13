"""The live dashboard: its arithmetic directly, then the page in headless Chromium during a sandbox crawl."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from crawlproj.dashboard.board import HostBoard, RateSeries, errors_by_kind, robots_state, snapshot
from crawlproj.rendering.browser import find_chromium
from sandbox.harness import PROJECT_DIR, crawl_command, dashboard_urls

pytestmark = pytest.mark.slow

ARTIFACTS = Path(os.environ.get("CRAWLPROJ_ARTIFACTS", Path(__file__).parent / "artifacts"))
OPERATOR, VIEWER = "operator-token-0123456789", "viewer-token-0123456789"


def test_rate_series_and_host_board():
    series = RateSeries(window=2.0)
    assert series.tick(0.0, 0) == 0.0
    assert series.tick(1.0, 10) == 10.0 and series.tick(3.0, 30) == 10.0
    # Over the window back to the last sample at or before t - 2 s (the one at 1.0, then at 3.0).
    assert series.tick(4.0, 30) == pytest.approx(20 / 3) and series.tick(5.5, 35) == pytest.approx(5 / 2.5)
    assert series.recent(1.6) == pytest.approx((20 / 3 + 2) / 2)  # the ticks at 4.0 and 5.5
    board = HostBoard()
    board.robots("a.test", 200, now=1.0)
    board.response("a.test", 200, "127.0.0.1", now=2.0)
    board.response("b.test", 404, "133.11.0.1", now=3.0)
    board.error("c.test", "timeout", now=4.0)
    board.robots("d.test", None, now=0.5)
    assert board.busiest(2) == ["c.test", "b.test"]
    rows = {r["host"]: r for r in board.rows(["a.test", "b.test", "c.test", "d.test"], 5.0,
                                             {"a.test": {"interval": 1.5, "rule": "duration"}})}
    assert rows["a.test"]["robots"] == "rules" and rows["a.test"]["robots_age"] == 4.0
    assert rows["a.test"]["interval"] == 1.5 and rows["a.test"]["location"] == "local"
    assert rows["b.test"]["location"] == "JP" and rows["b.test"]["robots"] == "not fetched"
    assert rows["c.test"]["last_status"] == "timeout" and rows["c.test"]["errors"] == 1
    assert rows["d.test"]["robots"] == "disallow all (unreachable)" and robots_state(404) == "allow all (absent)"
    assert board.locations() == {"local": 1, "JP": 1, "unknown": 2}


def test_snapshot_reads_the_counters():
    stats = {"response_received_count": 40, "store/pages": 31, "crawlproj/fetch_errors/timeout": 2,
             "robotstxt/unreachable/dns": 1, "downloader/exception_type_count/twisted.internet.error.TimeoutError": 2,
             "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest": 9,
             "downloader/response_status_count/200": 30, "downloader/response_status_count/503": 3,
             "frontier/fetch_failures/dns": 1, "near_duplicates/checked": 20, "near_duplicates/near": 4,
             "near_duplicates/exact": 1, "revisit/requests": 10, "revisit/changed": 4, "frontier/queued_disk": 7,
             "render/rendered": 5}
    # The console's errors, the console's pages (a 503 is a stored page; a refusal is the crawler's own).
    assert errors_by_kind(stats) == {"timeout": 2, "robots.txt dns": 1}
    view = snapshot(stats, RateSeries(), HostBoard(), [], {}, 0.0, spider="web")
    assert view["near_duplicates"] == {"checked": 20, "duplicates": 5, "rate": 0.25}
    assert view["revisit"]["change_rate"] == 0.4 and view["frontier"]["disk"] == 7
    assert view["renders"]["rendered"] == 5 and view["spider"] == "web" and view["pages"] == 31
    assert view["responses"] == 40


def _get(url: str, method: str = "GET") -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_dashboard_in_headless_chromium_during_a_crawl(sandbox_factory, tmp_path):
    from playwright.sync_api import sync_playwright

    chromium = find_chromium()
    assert chromium, "chromium is missing: sudo apt-get install -y --no-install-recommends chromium"
    sandbox = sandbox_factory("--hosts", "5", "--pages", "20")
    url_file = tmp_path / "dashboard.json"
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path / 'crawl.db'}",
                "MIN_INTERVAL": 0.3, "RENDER_MODE": "never", "DASHBOARD_PORT": 0, "DASHBOARD_INTERVAL": 0.2,
                "DASHBOARD_TOKEN": OPERATOR, "DASHBOARD_READONLY_TOKEN": VIEWER,
                "DASHBOARD_URL_FILE": str(url_file), "STATS_FILE": str(tmp_path / "stats.json")}
    proc = subprocess.Popen(crawl_command("web", {"seeds": sandbox.seeds_file}, settings), cwd=PROJECT_DIR,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        urls = dashboard_urls(url_file, proc)
        base = f"http://127.0.0.1:{urls['port']}/"
        assert urls["operator"] == f"{base}?token={OPERATOR}"
        # Nothing without a token; the read-only token cannot control the crawl.
        assert _get(base)[0] == 401 and _get(base + "snapshot.json?token=wrong-token-000000")[0] == 401
        assert _get(f"{base}control?token={VIEWER}&action=pause", "POST")[0] == 403
        assert _get(f"{base}control?token={OPERATOR}&action=explode", "POST")[0] == 400
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            page.goto(urls["operator"])
            # Live values: the page count rises while we watch, with no reload.
            page.wait_for_function("Number(document.getElementById('pages').textContent) > 3", timeout=30000)
            first = int(page.text_content("#pages"))
            page.wait_for_function(f"Number(document.getElementById('pages').textContent) > {first + 3}",
                                   timeout=30000)
            assert page.text_content("#state") == "running" and page.text_content("#spider") == "web"
            # Each host: the interval in force, the rule that set it, robots.txt, location.
            page.wait_for_function("document.querySelectorAll('#hosts tbody tr').length >= 3", timeout=30000)
            rows = page.eval_on_selector_all(
                "#hosts tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
            by_host = {r[0]: r for r in rows}
            assert set(by_host) <= {sandbox.web.host_name(h) for h in sandbox.web.hosts}
            fetched = [r for r in rows if r[2]]
            assert fetched and all(float(r[2]) >= 0.3 for r in fetched)  # no interval below MIN_INTERVAL
            assert {r[3] for r in fetched} <= {"min_interval", "waseda", "duration", "crawl_delay", "backoff",
                                               "suspended", "parked", "keepalive"}
            assert all("min_interval=" in r[4] for r in fetched)
            assert {r[1] for r in rows} == {"local"}
            assert any(r[6] in ("rules", "allow all (absent)", "disallow all (unreachable)") for r in rows)
            # One place only: said in words, the map hidden.
            assert page.text_content("#unplaced") == "All 5 servers are in one place: local."
            assert page.eval_on_selector("#map", "m => getComputedStyle(m).display") == "none"
            assert page.eval_on_selector_all("#map path[data-country]", "p => p.length") > 150
            frontier = dict(page.eval_on_selector_all(
                "#frontier tbody tr", "rows => rows.map(r => [r.cells[0].textContent, r.cells[1].textContent])"))
            assert {"queued", "in memory", "on disk", "active hosts", "due hosts"} <= set(frontier)
            # The estimate as a clock time and a duration; the chart fills its panel, with a time axis.
            assert frontier["finishes"] == "not yet known" or frontier["finishes"].startswith("about "), frontier
            fills = page.evaluate("(() => { const c = document.getElementById('chart'); "
                                  "return c.width >= c.parentElement.clientWidth - 40; })()")
            assert fills
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
            # The operator pauses: the server sees no request while paused; resume goes on.
            page.click("button[data-action=pause]")
            page.wait_for_function("document.getElementById('state').textContent === 'paused'", timeout=10000)
            time.sleep(1.0)  # requests already in flight finish
            before = len(sandbox.records())
            time.sleep(1.5)
            assert len(sandbox.records()) == before
            paused_pages = int(page.text_content("#pages"))
            page.click("button[data-action=resume]")
            page.wait_for_function(f"Number(document.getElementById('pages').textContent) > {paused_pages}",
                                   timeout=30000)
            # The read-only view: the same live values, no controls.
            viewer = browser.new_page()
            viewer.goto(urls["viewer"])
            viewer.wait_for_function("Number(document.getElementById('pages').textContent) > 0", timeout=30000)
            assert viewer.query_selector("#controls") is None and viewer.query_selector("#read-only") is not None
            browser.close()
        assert proc.wait(timeout=180) == 0, proc.stderr.read()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["dashboard/pause"] == 1 and stats["dashboard/resume"] == 1
    assert stats["finish_reason"] == "finished"
