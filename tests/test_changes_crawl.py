"""Watching a site end to end: a real Debian documentation page, served by nginx from a copy in a
temporary folder, edited on disk during an incremental crawl. The change must reach `scrapy
changes`, the console, the dashboard's Atom feed and a webhook receiver on loopback, each with
the right diff; a noise-only edit of another page must reach none of the notifications."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from crawlproj.changes.webhooks import SIGNATURE_HEADER, verify
from sandbox import docsites
from sandbox.harness import PROJECT_DIR, error_lines, run_crawl
from sandbox.servers import NginxServer

pytestmark = pytest.mark.slow

PAGE = "/usr/share/doc/python3.11/html/library/json.html"
NOISY = "/usr/share/doc/postgresql-doc-15/html/tutorial-select.html"
SECRET = "s3cret-shared-with-the-receiver"
HOST = "watch.docs.test"
SCALE = 3600.0  # a real second is an hour of the crawl's clock: revisits 1-2 s apart
OLD = "JSON (JavaScript Object Notation), specified by"  # the first paragraph's text, which this begins
OLD_HTML = '<p><a class="reference external" href="https://json.org">'  # ... and its markup
NEW = ("This paragraph was rewritten during the crawl: JSON is a small text format for data, and this "
       "module reads and writes it.")


class Receiver(BaseHTTPRequestHandler):
    """A webhook receiver: refuses the first delivery (503), then records each."""

    received: list[tuple[dict, bytes]] = []
    refused = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if Receiver.refused == 0:
            Receiver.refused += 1
            self.send_response(503)
            self.end_headers()
            return
        Receiver.received.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def _site(root: Path) -> None:
    root.mkdir()
    shutil.copy(PAGE, root / "json.html")
    html = Path(NOISY).read_text(encoding="utf-8")
    (root / "select.html").write_text(html.replace("</h2>", "</h2><p>Visitors online: 17</p>", 1), encoding="utf-8")
    (root / "index.html").write_text('<html><head><title>Docs</title></head><body><h1>Docs</h1><p>The manuals.</p>'
                                     '<a href="/json.html">json</a> <a href="/select.html">select</a></body></html>')


def _served(nginx: NginxServer, path: str) -> int:
    return sum(1 for r in nginx.records() if r.path == path and r.status in (200, 304))


def test_an_edit_during_an_incremental_crawl_is_reported_everywhere(tmp_path):
    assert Path(PAGE).exists() and Path(NOISY).exists(), "run scripts/system-deps.sh"
    root = tmp_path / "site"
    _site(root)
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    Receiver.received, Receiver.refused = [], 0
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    db, url_file = tmp_path / "crawl.db", tmp_path / "dashboard.json"
    with NginxServer({HOST: str(root)}) as nginx:
        base = f"http://{HOST}:{nginx.port}"
        page_url = f"{base}/json.html"
        (tmp_path / "seeds.txt").write_text(f"{base}/index.html\n")
        state = {"edited": None, "feed": None}

        def until() -> bool:
            if state["edited"] is None:
                # Captured and revisited once unchanged: now edit both pages on disk.
                if _served(nginx, "/json.html") < 2 or _served(nginx, "/select.html") < 2:
                    return False
                text = (root / "json.html").read_text(encoding="utf-8")
                para = re.search(re.escape(OLD_HTML) + r".*?</p>", text, re.S).group()
                (root / "json.html").write_text(text.replace(para, f"<p>{NEW}</p>"), encoding="utf-8")
                noisy = (root / "select.html").read_text(encoding="utf-8")
                (root / "select.html").write_text(noisy.replace("Visitors online: 17", "Visitors online: 2315"),
                                                  encoding="utf-8")
                state["edited"] = time.time()
                return False
            if not Receiver.received or not url_file.exists():
                return False
            viewer = json.loads(url_file.read_text())["viewer"]
            feed = urllib.request.urlopen(viewer.replace("/?", "/changes.atom?"), timeout=10).read()
            if b"This paragraph was rewritten" not in feed:
                return False
            state["feed"] = feed
            # The noisy page was revisited after its edit too (its noise was seen and dropped).
            conn = sqlite3.connect(db)
            try:
                noise = conn.execute("SELECT COUNT(*) FROM changes WHERE url LIKE '%select.html' AND meaningful = 0"
                                     ).fetchone()[0]
            finally:
                conn.close()
            return noise > 0

        result = run_crawl("web", tmp_path / "run", args={"seeds": str(tmp_path / "seeds.txt")}, timeout=300,
                           until=until, settings={
                               "HOST_RESOLVE": docsites.HOST_RESOLVE, "ALLOWED_DOMAINS": docsites.DOMAIN,
                               "STORE_URI": f"sqlite:///{db}", "REVISIT_MODE": "incremental",
                               "REVISIT_TIME_SCALE": SCALE, "REVISIT_MIN_INTERVAL": 3600,
                               "REVISIT_FIRST_INTERVAL": [3600, 7200], "REVISIT_REFRESH_SECONDS": 0.2,
                               "REVISIT_BUDGET": 24 * 100, "STORE_FLUSH_INTERVAL": 0.2, "MIN_INTERVAL": 0.1,
                               "RENDER_MODE": "never", "PROGRESS_INTERVAL": 1, "DASHBOARD_ENABLED": True,
                               "DASHBOARD_PORT": 0, "DASHBOARD_URL_FILE": str(url_file),
                               "WEBHOOK_URLS": f"http://127.0.0.1:{receiver.server_port}/hook",
                               "WEBHOOK_SECRET": SECRET, "WEBHOOK_BACKOFF": 0.2})
        report = nginx.records()
    receiver.shutdown()
    assert result.returncode == 0, result.log[-3000:]
    assert not error_lines(result.log) and "Traceback" not in result.log, result.log[-3000:]

    # scrapy changes: the page's meaningful change, with the paragraph's diff.
    out = subprocess.run([sys.executable, "-m", "scrapy", "changes", "--store", f"sqlite:///{db}", "--url", page_url,
                          "--meaningful"], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"== {page_url}" in out.stdout and "meaningful (text)" in out.stdout
    assert f"+{NEW}" in out.stdout and re.search(r"^-.*" + re.escape(OLD), out.stdout, re.M), out.stdout
    assert "captures: " in out.stdout  # the previous and current WARC records
    listed = subprocess.run([sys.executable, "-m", "scrapy", "changes", "--store", f"sqlite:///{db}", "--json"],
                            cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    changes = [json.loads(line) for line in listed.stdout.splitlines()]
    assert {c["url"].rsplit("/", 1)[1] for c in changes if c["meaningful"]} == {"json.html"}
    assert any(c["url"].endswith("select.html") and c["reason"] == "noise" for c in changes)
    meaningful = [c for c in changes if c["meaningful"]]
    assert len(meaningful) == 1 and meaningful[0]["warc_file"] and meaningful[0]["previous_warc_file"]

    # The console: one line for the meaningful change, none for the noise; the progress line says what is due.
    lines = [line for line in result.log.splitlines() if "changed: " in line]
    assert len(lines) == 1 and page_url in lines[0], lines
    progress = [line for line in result.log.splitlines() if "URLs tracked" in line]
    assert progress and "runs until Ctrl-C" in progress[-1] and "done about" not in result.log
    assert re.search(r"[1-9]\d* URLs tracked", progress[-1]), progress[-1]

    # The Atom feed served beside the dashboard.
    feed = ET.fromstring(state["feed"])
    ns = {"a": "http://www.w3.org/2005/Atom"}
    entries = feed.findall("a:entry", ns)
    assert [e.find("a:link", ns).get("href") for e in entries] == [page_url]
    assert f"+{NEW}" in entries[0].find("a:content", ns).text

    # The webhook: refused once, then delivered, signed, with the diff; the noise was never sent.
    assert Receiver.refused == 1 and len(Receiver.received) == 1
    headers, body = Receiver.received[0]
    assert verify(SECRET, body, headers[SIGNATURE_HEADER])
    payload = json.loads(body)
    assert payload["url"] == page_url and payload["meaningful"] and f"+{NEW}" in payload["diff"]
    assert result.stats.get("webhooks/retries") == 1 and result.stats.get("webhooks/delivered") == 1
    assert not (db.parent / "crawl.webhooks-failed.jsonl").exists()
    assert report  # (nginx's record, read before it stopped)


def _scrapy(*args: str):
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=PROJECT_DIR, capture_output=True, text=True,
                          timeout=120)


def test_watch_commands_add_list_remove_and_refuse_bad_input(tmp_path):
    store = f"sqlite:///{tmp_path / 'crawl.db'}"
    added = _scrapy("watch", "add", "http://Docs.test/a.html", "--css", "main", "--ignore", r"Build \d+",
                    "--every", "15m", "--store", store)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["watching"] == "http://docs.test/a.html"
    listed = [json.loads(line) for line in _scrapy("watch", "list", "--store", store).stdout.splitlines()]
    assert listed == [{"url": "http://docs.test/a.html", "css": "main", "xpath": None, "ignore": [r"Build \d+"],
                       "every": 900.0, "added_at": listed[0]["added_at"]}]
    for bad, cause in ((["watch", "add", "http://docs.test/", "--css", "div["], "not a valid CSS selector"),
                       (["watch", "add", "http://docs.test/", "--every", "soon"], "not a duration"),
                       (["watch", "add", "http://docs.test/", "--ignore", "("], "not a regular expression"),
                       (["watch", "remove", "http://docs.test/b.html"], "is not watched"),
                       (["changes", "--since", "whenever"], "--since 'whenever'")):
        out = _scrapy(*bad, "--store", store)
        assert out.returncode != 0 and cause in out.stderr, (bad, out.stderr)
    assert _scrapy("watch", "remove", "http://docs.test/a.html", "--store", store).returncode == 0
    assert _scrapy("watch", "list", "--store", store).stdout == ""
    nothing = _scrapy("changes", "--store", store)
    assert nothing.returncode == 0 and "no change recorded" in nothing.stderr
