"""Archive-grade output, end to end: two crawls of the sandbox into one store with a host
that is a byte copy of another, packaged as a WACZ, validated by py-wacz, and replayed by a
real pywb in a real Chromium."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlproj.rendering.browser import find_chromium
from sandbox.harness import PROJECT_DIR, SandboxProcess, run_crawl
from sandbox.servers import PywbServer

pytestmark = pytest.mark.slow

ARTIFACTS = Path(os.environ.get("CRAWLPROJ_ARTIFACTS", Path(__file__).parent / "artifacts"))
WACZ_BIN = os.path.join(os.path.dirname(sys.executable), "wacz")


@pytest.fixture(scope="module")
def two_crawls(tmp_path_factory):
    """Hosts 0 and 2 are sites; host 1 serves host 0's very bytes. Crawled twice into one
    store, the second crawl writing the WACZ at close."""
    tmp = tmp_path_factory.mktemp("archive")
    with SandboxProcess("--hosts", "3", "--pages", "8", "--no-robots-mix", "--cross-host", "0", "--crawl-delay", "0.1",
                        "--host", "1:content=copy,mirror_of=0", seeds_file=tmp / "seeds.txt") as sandbox:
        results = []
        for n in (1, 2):
            settings = {"HOST_RESOLVE": sandbox.host_resolve, "MIN_INTERVAL": 0.02, "RENDER_MODE": "never",
                        "STORE_URI": f"sqlite:///{tmp}/crawl.db", "WACZ_ON_CLOSE": n == 2}
            result = run_crawl("web", tmp / f"run{n}", args={"seeds": sandbox.seeds_file}, settings=settings)
            assert result.returncode == 0, result.log[-3000:]
            results.append(result)
        yield sandbox, tmp, results


def _records(warc_dir: Path) -> list[tuple[str, dict, str]]:
    """(file name, headers, type) of every response and revisit record, in file order."""
    out = []
    for path in sorted(warc_dir.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type in ("response", "revisit"):
                    out.append((path.name, dict(record.rec_headers.headers), record.rec_type))
    return out


def test_each_payload_is_archived_once_across_urls_and_crawls(two_crawls):
    sandbox, tmp, (first, second) = two_crawls
    web = sandbox.web
    # Host 1 is host 0 byte for byte: the first crawl archives each payload once, whichever
    # host it reached first; the second crawl archives nothing again.
    assert first.stats["warc/responses"] == 16 and first.stats["warc/revisits"] == 8
    assert "warc/responses" not in second.stats and second.stats["warc/revisits"] == 24
    records = _records(tmp / "warc")
    originals = {h["WARC-Payload-Digest"]: (name, h) for name, h, kind in records if kind == "response"}
    assert len(originals) == 16
    by_digest = defaultdict(list)
    for name, headers, kind in records:
        by_digest[headers["WARC-Payload-Digest"]].append((name, headers, kind))
    files = sorted({name for name, _, _ in records})
    assert len(files) == 2
    for digest, captures in by_digest.items():
        assert [kind for _, _, kind in captures].count("response") == 1
        name, original = originals[digest]
        assert name == files[0]  # the first crawl's file
        for _, headers, kind in captures:
            if kind == "revisit":  # points at the first capture, at whatever URL it was
                assert headers["WARC-Refers-To-Target-URI"] == original["WARC-Target-URI"]
                assert headers["WARC-Refers-To-Date"] == original["WARC-Date"]
                assert headers["WARC-Refers-To"] == original["WARC-Record-ID"]
    # The copy's pages and the original's share payloads: cross-URL revisits in one crawl.
    h0, h1 = web.host_name(0), web.host_name(1)
    cross = [h for _, h, kind in records if kind == "revisit" and {
        h["WARC-Target-URI"].split("/")[2].split(":")[0],
        h["WARC-Refers-To-Target-URI"].split("/")[2].split(":")[0]} == {h0, h1}]
    assert len(cross) >= 8
    index = sqlite3.connect(tmp / "crawl.digests.db")
    assert index.execute("SELECT COUNT(*) FROM digests").fetchone()[0] == 16


def test_the_crawl_is_packaged_as_a_valid_wacz(two_crawls):
    sandbox, tmp, (_, second) = two_crawls
    wacz = tmp / "crawl.wacz"
    assert second.stats["wacz/pages"] == 24 and second.stats["wacz/bytes"] == wacz.stat().st_size
    check = subprocess.run([WACZ_BIN, "validate", "-f", str(wacz)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and "the passed WACZ is valid" in check.stdout, check.stdout + check.stderr
    with zipfile.ZipFile(wacz) as z:
        names = set(z.namelist())
        assert {"indexes/index.cdx.gz", "indexes/index.idx", "pages/pages.jsonl", "datapackage.json",
                "datapackage-digest.json"} <= names
        assert {n for n in names if n.startswith("archive/")} == {
            f"archive/{p.name}" for p in (tmp / "warc").glob("*.warc.gz")}
        pages = [json.loads(line) for line in z.read("pages/pages.jsonl").splitlines()]
        index = [json.loads(line.split(b" ", 2)[2]) for line in gzip.decompress(z.read("indexes/index.cdx.gz")).splitlines()]
        package = json.loads(z.read("datapackage.json"))
    assert pages[0]["format"] == "json-pages-1.0"
    stored = {u for (u,) in sqlite3.connect(tmp / "crawl.db").execute(
        "SELECT COALESCE(final_url, url) FROM pages WHERE status = 200 AND warc_file IS NOT NULL")}
    assert {p["url"] for p in pages[1:]} == stored and all(p.get("ts") and p.get("title") for p in pages[1:])
    assert stored <= {entry["url"] for entry in index}
    assert package["wacz_version"] == "1.1.1"
    assert all(r["hash"].startswith("sha256:") for r in package["resources"])


def test_scrapy_wacz_packages_a_store_and_refuses_a_missing_one_in_one_line(two_crawls, tmp_path):
    _, tmp, _ = two_crawls
    out = tmp_path / "again.wacz"
    run = subprocess.run([sys.executable, "-m", "scrapy", "wacz", "--store", f"sqlite:///{tmp / 'crawl.db'}",
                          "--out", str(out)], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert said == {"wacz": str(out), "pages": 24, "warc_files": 2, "bytes": out.stat().st_size}
    missing = subprocess.run([sys.executable, "-m", "scrapy", "wacz", "--store", f"sqlite:///{tmp_path}/none.db"],
                             cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert missing.returncode != 0 and f"no crawl store at {tmp_path}/none.db" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_pywb_replays_the_wacz_in_chromium_revisits_included(two_crawls):
    from playwright.sync_api import sync_playwright

    sandbox, tmp, _ = two_crawls
    web = sandbox.web
    chromium = find_chromium()
    assert chromium, "chromium is missing: sudo apt-get install -y --no-install-recommends chromium"
    # The copy host's page 3: its capture in the second crawl is a revisit of a first capture
    # that may be at the original host's URL, so replay must follow WARC-Refers-To-Target-URI.
    page_url = web.url(1, 3)
    expected = web.page(1, 3)
    with PywbServer([str(tmp / "crawl.wacz")]) as pywb, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(pywb.url + page_url)  # framed replay, as an archivist sees it
        frame = page.frame_locator("iframe")  # pywb's replay frame
        frame.locator("h1").wait_for(timeout=30000)
        assert frame.locator("h1").text_content() == expected.title
        assert expected.text[:200] in frame.locator("p").first.text_content()
        # Its links are there (wombat, pywb's client side, shows the page its original URLs)...
        hrefs = frame.locator("a[href]").evaluate_all("as => as.map(a => a.href)")
        assert set(hrefs) == {link.target for link in expected.links if link.kind not in ("link", "area")}
        # ...and following one stays in the archive: the next page comes from pywb.
        target = next(h for h in hrefs if h.endswith(".html"))
        k = next(k for k in range(8) if web.url(1, k) == target)
        frame.locator(f'a[href$="{target.split("/", 3)[3]}"]').first.click()
        frame.locator("h1", has_text=web.page(1, k).title).wait_for(timeout=30000)
        replayed = [f.url for f in page.frames if f != page.main_frame]
        assert replayed and all(u.startswith(pywb.url) and u.endswith("mp_/" + target) for u in replayed), replayed
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "replay.png"), full_page=True)
        browser.close()
