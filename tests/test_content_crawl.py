"""The content pipeline in real crawls: near-duplicates, mirrors, templates, WARC read-back."""

import json
import os
import subprocess
import sys

import pytest

from crawlproj.content.near_duplicates import jaccard, shingles
from sandbox import harness
from crawlproj.store.warc import WarcLocation, read_response

pytestmark = pytest.mark.slow

INTERVAL = 0.02


def crawl(sandbox, workdir, spider="web", args=None, **settings):
    return harness.crawl_sandbox(sandbox, workdir, spider, args, **{"MIN_INTERVAL": INTERVAL, **settings})


def true_jaccard(web, a, b):
    ha, hb = web.host_index(a.split("/")[2]), web.host_index(b.split("/")[2])
    ka, kb = (web.page_index(h, "/" + u.split("/", 3)[3]) for h, u in ((ha, a), (hb, b)))
    return jaccard(shingles(web.main_text(ha, ka)), shingles(web.main_text(hb, kb)))


def test_duplicates_are_recorded_against_ground_truth_and_every_capture_reads_back(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "20", "--pages", "19", "--content-mix", "--no-robots-mix")
    web = sandbox.web
    conn, result = crawl(sandbox, tmp_path)
    pages = {url: (host, warc_file, warc_offset) for url, host, warc_file, warc_offset in
             conn.execute("SELECT url, host, warc_file, warc_offset FROM pages")}
    assert set(pages) == web.expected_pages()
    # text_length is the main text's (the title is a field of its own): the template's ~25 KB of
    # layout is not counted.
    lengths = dict(conn.execute("SELECT url, text_length FROM pages"))
    assert all(abs(lengths[web.url(0, k)] - len(web.page(0, k).text)) <= 5 for k in range(19) if web.url(0, k) in lengths)
    dups = {url: (canonical, kind, j) for url, canonical, kind, j in conn.execute("SELECT * FROM duplicates")}
    # Precision: every recorded duplicate really is one (true Jaccard of the main texts near the threshold or above).
    for url, (canonical, kind, estimate) in dups.items():
        truth = true_jaccard(web, url, canonical)
        assert canonical in pages and canonical not in dups, (url, canonical)
        assert truth >= 0.75, (url, canonical, kind, truth, estimate)
        assert (kind == "exact") == (truth == 1.0), (url, kind, truth)
    # No template page is a duplicate, though template pages share ~80% of their visible text.
    kinds = {web.host_name(h): web.specs[h].content for h in web.hosts}
    assert not [u for u in dups if kinds[pages[u][0]] == "template"]
    assert not [u for u in dups if kinds[pages[u][0]] == ""]  # nor any ordinary page
    # Recall: any two pages of a family (English and Japanese, with its mirror) at true Jaccard >= 0.85
    # end up with the same canonical page.
    def cluster(url):
        return dups[url][0] if url in dups else url

    families = {}
    for url, (host, _, _) in pages.items():
        h = web.host_index(host)
        page = web.page(h, web.page_index(h, "/" + url.split("/", 3)[3]))
        if page.family:
            families.setdefault(page.family, []).append(url)  # a mirror page keeps its original's family
    assert len(families) >= 8, {k: len(v) for k, v in families.items()}
    close = [(a, b) for members in families.values() for i, a in enumerate(members) for b in members[i + 1:]
             if true_jaccard(web, a, b) >= 0.85]
    missed = [(a, b) for a, b in close if cluster(a) != cluster(b)]
    assert len(close) > 100 and len(missed) <= 0.1 * len(close), missed
    assert result.stats["near_duplicates/exact"] > 0 and result.stats["near_duplicates/near"] > 0
    # Mirrors: each variants host pairs with its mirror, and nothing else pairs.
    out = subprocess.run([sys.executable, "-m", "scrapy", "mirrors", "--json", "-s", f"STORE_URI=sqlite:///{tmp_path}/crawl.db"],
                         cwd=harness.PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    pairs = {tuple(json.loads(line)["hosts"]) for line in out.stdout.splitlines()}
    assert pairs == {tuple(sorted((web.host_name(h), web.host_name(h + 1)))) for h in (2, 7, 12, 17)}
    # WARC: every page not skipped as a duplicate reads back byte for byte; a body archived once
    # more is a revisit record, and only duplicates are left out.
    records = {}
    for url, (host, warc_file, offset) in pages.items():
        h = web.host_index(host)
        body = web.render(h, web.page_index(h, "/" + url.split("/", 3)[3]))[0]
        if warc_file is None:
            assert url in dups
            continue
        kind, target, payload = read_response(WarcLocation(warc_file, offset))
        assert target == url and kind in ("response", "revisit")
        assert payload == (body if kind == "response" else b"")
        records.setdefault(body, []).append(kind)
    assert sum(found.count("revisit") for found in records.values()) >= 4
    assert all(found.count("response") == 1 for found in records.values())
    checker = os.path.join(os.path.dirname(sys.executable), "warcio")
    files = sorted({f for _, f, _ in pages.values() if f})
    out = subprocess.run([checker, "check", *files], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_index_persists_across_runs(sandbox_factory, tmp_path):
    """A mirror crawled in a later run is recognised against pages stored by an earlier one."""
    sandbox = sandbox_factory("--hosts", "10", "--pages", "19", "--content-mix", "--no-robots-mix")
    web = sandbox.web
    first, _ = crawl(sandbox, tmp_path, "site", {"url": web.origin(2) + "/"})
    assert first.execute("SELECT COUNT(*) FROM pages WHERE host = 'h3.sandbox.test'").fetchone()[0] == 0
    assert (tmp_path / "crawl.near_duplicates.db").exists()
    second, result = crawl(sandbox, tmp_path, "site", {"url": web.origin(3) + "/"})
    mirror_pages = {u for (u,) in second.execute("SELECT url FROM pages WHERE host = 'h3.sandbox.test'")}
    dups = dict(second.execute("SELECT url, canonical FROM duplicates WHERE url LIKE 'http://h3.%'"))
    # Every page of the mirror copies one stored by the first run (signatures are deterministic, so
    # a mirror page matches exactly what its original matched, or its original itself).
    assert len(mirror_pages) == web.size(3) and set(dups) == mirror_pages
    assert all(c.startswith(web.origin(2) + "/") for c in dups.values())
    assert result.stats["near_duplicates/exact"] + result.stats.get("near_duplicates/near", 0) == len(mirror_pages)

