"""Page requisites end to end: a site with stylesheets (an @import, a font, a background image),
scripts, a srcset image, an iframe with a stylesheet of its own, a poster, an image robots.txt
forbids and a stylesheet two hosts serve byte for byte, plus the real Node.js API documentation,
served by nginx and crawled with requisites on. Judged from the WARC files and from nginx's log."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from sandbox import docsites
from sandbox.audit import politeness_report
from sandbox.harness import error_lines, run_crawl
from sandbox.servers import NginxServer

pytestmark = pytest.mark.slow

NODE = docsites.SITES[4]
INTERVAL = 0.25
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
SITE_CSS = '@import url("base.css");\n@font-face { font-family: F; src: url(fonts/f.woff2) format("woff2") }\n' \
           'body { background: url("../img/bg.png") } /* url(gone.png) */\n'


def _page(title: str, body: str) -> str:
    return (f'<html><head><title>{title}</title><link rel="stylesheet" href="/static/site.css">'
            f'<link rel="icon" href="/favicon.ico"><script src="/static/app.js"></script></head>'
            f'<body><h1>{title}</h1><p>Some words about {title}.</p>{body}</body></html>')


def _sites(root: Path, port_marker: str = "PORT") -> None:
    a, b = root / "a", root / "b"
    for site in (a, b):
        (site / "static" / "fonts").mkdir(parents=True)
        (site / "img").mkdir()
        (site / "static" / "site.css").write_text(SITE_CSS)  # the same bytes on both hosts
        (site / "static" / "base.css").write_text("h1 { color: #333 }\n")
        (site / "static" / "fonts" / "f.woff2").write_bytes(b"wOF2 not really a font")
        (site / "img" / "bg.png").write_bytes(PNG)
        (site / "static" / "app.js").write_text("document.title += '';\n")
        (site / "favicon.ico").write_bytes(PNG)
    (a / "private").mkdir()
    (a / "private" / "secret.png").write_bytes(PNG)
    (a / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    (a / "img" / "logo-1x.png").write_bytes(PNG)
    (a / "img" / "logo-2x.png").write_bytes(PNG + b"2x")
    (a / "img" / "poster.png").write_bytes(PNG + b"poster")
    (a / "frame.html").write_text('<html><head><link rel="stylesheet" href="/static/frame.css"></head>'
                                  '<body>framed</body></html>')
    (a / "static" / "frame.css").write_text("body { margin: 0 }\n")
    (a / "index.html").write_text(_page("Home", (
        '<img src="/img/logo-1x.png" srcset="/img/logo-1x.png 1x, /img/logo-2x.png 2x" alt="logo">'
        '<img src="/private/secret.png"><iframe src="/frame.html"></iframe>'
        '<video poster="/img/poster.png"></video><a href="/two.html">two</a>'
        f'<a href="http://b.{docsites.DOMAIN}:{port_marker}/index.html">b</a>')))
    (a / "two.html").write_text(_page("Two", '<img src="/img/logo-1x.png"><a href="/index.html">home</a>'))
    (b / "index.html").write_text(_page("B", '<img src="/img/bg.png">'))


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    docsites.ensure_installed((NODE,))
    tmp = tmp_path_factory.mktemp("requisites")
    with NginxServer({f"a.{docsites.DOMAIN}": str(tmp / "a"), f"b.{docsites.DOMAIN}": str(tmp / "b"),
                      NODE.name: NODE.root}) as nginx:
        _sites(tmp, str(nginx.port))
        (tmp / "seeds.txt").write_text(f"http://a.{docsites.DOMAIN}:{nginx.port}/index.html\n"
                                       f"http://{NODE.name}:{nginx.port}{NODE.start}\n")
        result = run_crawl("web", tmp / "run", args={"seeds": str(tmp / "seeds.txt")}, settings={
            "HOST_RESOLVE": docsites.HOST_RESOLVE, "ALLOWED_DOMAINS": docsites.DOMAIN, "MIN_INTERVAL": INTERVAL,
            "RENDER_MODE": "never", "MAX_PAGES_PER_HOST": 12, "STORE_URI": f"sqlite:///{tmp}/crawl.db",
            "REQUISITES_ENABLED": True, "WARC_OUTLINKS": True})
        assert result.returncode == 0, result.log[-3000:]
        assert not error_lines(result.log) and "Traceback" not in result.log, result.log[-3000:]
        yield tmp, nginx.port, nginx.records(), result


def _records(tmp: Path) -> list[tuple[str, object]]:
    out = []
    for path in sorted((tmp / "warc").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            out += [(path.name, (r.rec_type, r.rec_headers.get_header("WARC-Target-URI"),
                                 r.rec_headers.get_header("WARC-Refers-To-Target-URI"),
                                 r.content_stream().read() if r.rec_type in ("warcinfo", "metadata") else b""))
                    for r in ArchiveIterator(fh)]
    return out


def test_requisites_are_archived_as_responses_or_revisits_never_stored_as_pages(crawled):
    tmp, port, _, result = crawled
    a, b = f"http://a.{docsites.DOMAIN}:{port}", f"http://b.{docsites.DOMAIN}:{port}"
    records = [r for _, r in _records(tmp)]
    captured = {uri: kind for kind, uri, _, _ in records if kind in ("response", "revisit")}
    wanted = [f"{a}/static/site.css", f"{a}/static/base.css", f"{a}/static/fonts/f.woff2", f"{a}/img/bg.png",
              f"{a}/static/app.js", f"{a}/favicon.ico", f"{a}/img/logo-1x.png", f"{a}/frame.html",
              f"{a}/static/frame.css", f"{a}/img/poster.png", f"{b}/static/site.css",
              f"http://{NODE.name}:{port}/assets/style.css", f"http://{NODE.name}:{port}/assets/hljs.css",
              f"http://{NODE.name}:{port}/assets/api.js"]
    assert [url for url in wanted if url not in captured] == []
    # b's stylesheet is a's byte for byte: a revisit pointing at a's capture.
    revisit = next(r for r in records if r[0] == "revisit" and r[1] == f"{b}/static/site.css")
    assert revisit[2] == f"{a}/static/site.css"
    assert f"{a}/img/logo-2x.png" not in captured  # srcset: the 1x candidate only
    assert f"{a}/private/secret.png" not in captured  # robots.txt forbids it
    assert "gone.png" not in " ".join(captured)  # a commented-out url() is not one
    # Only pages are pages: no stylesheet, script, image or iframe in the store.
    stored = {url for (url,) in sqlite3.connect(tmp / "crawl.db").execute("SELECT url FROM pages")}
    assert stored and all(u.endswith((".html", "/")) for u in stored) and f"{a}/frame.html" not in stored
    stats = result.stats
    assert stats["warc/requisite_responses"] + stats.get("warc/requisite_revisits", 0) >= len(wanted)
    assert stats["crawlproj/requisites/failed/robots"] == 1
    # Each page's outlinks, in a metadata record (WARC_OUTLINKS).
    meta = next(r for r in records if r[0] == "metadata" and r[1] == f"{a}/index.html")
    assert f"outlink: {a}/two.html L a/@href".encode() in meta[3]


def test_every_warc_file_opens_with_warcinfo_and_reads_without_a_warning(crawled):
    tmp, _, _, _ = crawled
    files = sorted((tmp / "warc").glob("*.warc.gz"))
    assert files
    by_file: dict[str, list] = {}
    for name, record in _records(tmp):
        by_file.setdefault(name, []).append(record)
    for path in files:
        first = by_file[path.name][0]
        assert first[0] == "warcinfo" and b"software: crawlproj/" in first[3] and b"robots: obey" in first[3]
        bindir = os.path.dirname(sys.executable)
        for tool in (["warcio", "check"], ["cdxj-indexer"]):
            out = subprocess.run([os.path.join(bindir, tool[0]), *tool[1:], str(path)], capture_output=True,
                                 text=True, timeout=120)
            assert out.returncode == 0 and not out.stderr.strip(), (tool, out.stderr[-2000:])


def test_requisites_keep_each_hosts_interval_and_are_fetched_once(crawled):
    tmp, _, log, _ = crawled
    report = politeness_report(log, INTERVAL)
    assert report["violations"] == 0, {h: v for h, v in report["per_host"].items() if v["gap_violations"]}
    counts = Counter((r.host, r.path) for r in log)
    assert [key for key, n in counts.items() if n > 1] == []  # the URL-seen filter: once per crawl
    assert not [r for r in log if r.path.startswith("/private/")]
