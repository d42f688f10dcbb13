"""Change reports measured: real Debian documentation pages served by nginx, edited on a script
during an incremental crawl, each edit content or noise; prints ONE JSON line.

Each page gets, inside its main content, a block a site could carry: a "last updated" stamp, a
view counter, a session token, a release and a price, a sentence of links, a list of related
pages; and an advertisement outside it. Then, for ``--seconds``, pages are edited at random:

* content (meaningful): a paragraph of the page rewritten, a section added, a link removed
  (with its words), the version or the price changed;
* noise: the stamp (in one of several date formats), the counter, the related links shuffled,
  a new session token, a new advertisement, and on watched pages a build number that their
  watch ignores (``--ignore 'Build \\d+'``).

Half the pages are watched (``--css`` their main content, ``--every`` ``--interval`` real
seconds); the others are revisited on the schedule the crawler learns. Every version of a
page carries its number in a ``<meta>`` (no reader sees it), so each change record's two
captures, read back from the WARC files it names, say exactly which edits it spans: a record
is truly meaningful when one of them was content. Precision and recall are of the records
(and webhook deliveries) the crawl judged meaningful; a content edit no record spans counts
as missed. Time to report is from the edit to the webhook delivery (a loopback receiver),
against the page's interval. Politeness is judged from nginx's own log.

    flock /tmp/crawlproj-cpu.lock .venv/bin/python bench/changes.py          # about 3 minutes
    .venv/bin/python bench/changes.py --smoke                                  # 40 s, tests/test_benches.py
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from warcio.archiveiterator import ArchiveIterator  # noqa: E402

from crawlproj.store.changes import Watch, add_watch, read_changes  # noqa: E402
from crawlproj.store.sqlite import SqliteStore  # noqa: E402
from sandbox.audit import politeness_report  # noqa: E402
from sandbox.harness import PROJECT_DIR, crawl_command, with_peak_rss  # noqa: E402
from sandbox.servers import NginxServer  # noqa: E402

SCALE = 3600.0  # a real second is an hour of the crawl's clock
SITES = {  # host -> (Debian folder, a watch's CSS selector for its main content, the markup it picks)
    "python.changes.test": ("/usr/share/doc/python3.11/html/library", "div.body", 'class="body"'),
    "postgresql.changes.test": ("/usr/share/doc/postgresql-doc-15/html", "div.sect1", 'class="sect1"'),
    "nodejs.changes.test": ("/usr/share/doc/nodejs/api", "#apicontent", 'id="apicontent"'),
}
CONTENT = ("paragraph rewritten", "section added", "link removed", "version changed", "price changed")
NOISE = ("timestamp", "counter", "related links shuffled", "session token", "advertisement")
WATCH_NOISE = ("build number",)  # noise only a watch's --ignore removes
LINKS = ["tutorial", "reference", "FAQ", "changelog", "glossary"]
RELATED = ["Installing", "Upgrading", "Security notes", "Performance tips", "Getting help", "Release notes"]
ADS = ["Sponsored: fast hosting for your docs", "Ad: learn SQL in a weekend", "Sponsored: the keyboard for coders",
       "Ad: cloud servers from $5", "Sponsored: conference tickets on sale"]
WORDS = ("the module reads configuration files and reports errors with their line numbers while the server "
         "keeps running and answers requests from clients connecting over the network").split()


def heading_end(html: str) -> int:
    main = html.find('role="main"')
    m = re.compile(r"</h1>|</h2>").search(html, max(main, 0))
    return m.end() if m else html.lower().find("<body") + html[html.lower().find("<body"):].find(">") + 1


def stamp(rng: random.Random, t: float) -> str:
    lt = time.gmtime(t)
    return rng.choice([time.strftime("%Y-%m-%d %H:%M:%S UTC", lt), time.strftime("%B %d, %Y at %I:%M %p", lt),
                       time.strftime("%a, %d %b %Y %H:%M:%S GMT", lt), time.strftime("%d/%m/%Y %H:%M", lt)])


@dataclass
class Page:
    """One page and the state its edits change; :meth:`render` writes it out."""

    host: str
    name: str
    original: str
    watched: bool
    css: str
    version: int = 0
    stamp: str = "2026-11-27 09:00:00 UTC"
    views: int = 1200
    token: str = "9f86d081884c7d659a2feaa0c55ad015"
    release: tuple = (15, 4)
    price: float = 19.99
    links: list = field(default_factory=lambda: list(LINKS))
    related: list = field(default_factory=lambda: list(RELATED))
    ad: str = ADS[0]
    build: int = 4711
    rewrites: int = 0
    sections: int = 0
    last_edit: float = 0.0

    @property
    def url_path(self) -> str:
        return "/" + self.name

    def render(self) -> str:
        html = self.original
        end = heading_end(html)
        head, rest = html[:end], html[end:]
        if self.rewrites:  # the first paragraph of real text after the heading, rewritten
            m = next((m for m in re.finditer(r"<p[ >].*?</p>", rest, re.S)
                      if len(re.sub(r"<[^>]+>", "", m.group())) > 60), None)
            if m:
                words = random.Random(self.rewrites * 7919 + len(self.name)).sample(WORDS, 14)
                rest = rest[:m.start()] + f"<p>Revised ({self.rewrites}): {' '.join(words)}.</p>" + rest[m.end():]
        sentence = ", ".join(f'the <a href="/more/{w.lower()}.html">{w}</a>' for w in self.links)
        block = (f'<div class="bench-live"><p>Last updated: {self.stamp}</p>'
                 f"<p>This page has been viewed {self.views:,} times.</p>"
                 f"<p>Your session: {self.token}</p>"
                 f"<p>The current release is version {self.release[0]}.{self.release[1]}. Support costs "
                 f"${self.price:.2f} a month.</p>"
                 + (f"<p>See {sentence} for more.</p>" if self.links else "")
                 + "<p>Related pages:</p><ul>" + "".join(f'<li><a href="/related/{r.split()[0].lower()}.html">{r}</a>'
                                                        "</li>" for r in self.related) + "</ul>"
                 + (f"<p>Build {self.build} of the nightly snapshot.</p>" if self.watched else "")
                 + "".join(f"<h3>Notes {i}</h3><p>Added section {i}: {' '.join(WORDS[i:i + 12])}.</p>"
                           for i in range(1, self.sections + 1))
                 + "</div>")
        html = head + block + rest
        html = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + f'<div class="bench-ad">{self.ad}</div>', html, count=1)
        return re.sub(r"(<head[^>]*>)", lambda m: m.group(1) + f'<meta name="bench-version" content="{self.version}">',
                      html, count=1)

    def edit(self, kind: str, rng: random.Random, now: float) -> None:
        self.version += 1
        self.last_edit = now
        if kind == "paragraph rewritten":
            self.rewrites += 1
        elif kind == "section added":
            self.sections += 1
        elif kind == "link removed":
            self.links.remove(rng.choice(self.links))
        elif kind == "version changed":
            self.release = (self.release[0], self.release[1] + 1)
        elif kind == "price changed":
            self.price += 5
        elif kind == "timestamp":
            self.stamp = stamp(rng, now)
        elif kind == "counter":
            self.views += rng.randint(1, 500)
        elif kind == "related links shuffled":
            while True:
                order = rng.sample(self.related, len(self.related))
                if order != self.related:
                    self.related = order
                    break
        elif kind == "session token":
            self.token = "%032x" % rng.getrandbits(128)
        elif kind == "advertisement":
            self.ad = rng.choice([a for a in ADS if a != self.ad])
        elif kind == "build number":
            self.build += 1


def write(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # nginx never serves half a page


class Hook(BaseHTTPRequestHandler):
    received: dict[str, float] = {}  # change id -> when delivered

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Hook.received[json.loads(body)["id"]] = time.time()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def choose_pages(per_host: int, rng: random.Random) -> list[tuple[str, Path, str]]:
    out = []
    for host, (folder, css, marker) in SITES.items():
        files = sorted(p for p in Path(folder).glob("*.html") if 20_000 < p.stat().st_size < 400_000)
        picked = []
        for p in rng.sample(files, len(files)):
            text = p.read_text(encoding="utf-8", errors="replace")
            # The selection holds the first heading (the edits go after it) and a paragraph to rewrite.
            if 0 <= text.find(marker) < heading_end(text) and any(
                    len(re.sub(r"<[^>]+>", "", m.group())) > 60
                    for m in re.finditer(r"<p[ >].*?</p>", text[heading_end(text):], re.S)):
                picked.append(p)
            if len(picked) == per_host:
                break
        out += [(host, p, css) for p in picked]
    return out


def versions(warc_dir: Path) -> dict:
    """The bench-version every WARC capture carries, by (file, offset); a revisit record (the same
    payload as an earlier capture) carries its original's."""
    by_id, at, refers = {}, {}, {}
    for path in sorted(warc_dir.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            it = ArchiveIterator(fh)
            for record in it:
                head = record.content_stream().read(200_000) if record.rec_type == "response" else b""
                offset, rid = it.get_record_offset(), record.rec_headers.get_header("WARC-Record-ID")  # (once read)
                if record.rec_type == "response":
                    m = re.search(rb'name="bench-version" content="(\d+)"', head)
                    by_id[rid] = at[(str(path), offset)] = int(m.group(1)) if m else None
                elif record.rec_type == "revisit":
                    refers[(str(path), offset)] = record.rec_headers.get_header("WARC-Refers-To")
    at.update({key: by_id.get(rid) for key, rid in refers.items()})
    return at


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages-per-host", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=120, help="how long pages are edited")
    ap.add_argument("--interval", type=float, default=4.0, help="a watch's --every, real seconds")
    ap.add_argument("--polite", type=float, default=0.2, help="MIN_INTERVAL: seconds between a host's fetches")
    ap.add_argument("--grace", type=float, default=30, help="seconds the crawl goes on after the last edit")
    ap.add_argument("--seed", type=int, default=57)
    ap.add_argument("--smoke", action="store_true", help="tiny: for tests/test_benches.py")
    args = ap.parse_args()
    if args.smoke:
        args.pages_per_host, args.seconds, args.grace = 2, 18, 10
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="crawlproj-changes-bench-"))
    roots: dict[str, Path] = {}
    pages: list[Page] = []
    for i, (host, path, css) in enumerate(choose_pages(args.pages_per_host, rng)):
        root = roots.setdefault(host, work / host)
        root.mkdir(exist_ok=True)
        page = Page(host, path.name, path.read_text(encoding="utf-8", errors="replace"), watched=i % 2 == 0, css=css)
        write(root / page.name, page.render())
        pages.append(page)
    for host, root in roots.items():
        links = "".join(f'<a href="/{p.name}">{p.name}</a> ' for p in pages if p.host == host)
        (root / "index.html").write_text(f"<html><head><title>{host}</title></head><body><h1>Docs</h1>{links}</body></html>")
    db = work / "crawl.db"
    store = SqliteStore(str(db))
    with NginxServer({h: str(r) for h, r in roots.items()}) as nginx:
        base = {h: f"http://{h}:{nginx.port}" for h in roots}
        for p in pages:
            if p.watched:
                add_watch(store.conn, Watch(f"{base[p.host]}{p.url_path}", css=p.css, ignore=(r"Build \d+",),
                                            every=args.interval * SCALE, added_at=time.time()))
        store.close()
        hook = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
        threading.Thread(target=hook.serve_forever, daemon=True).start()
        seeds = work / "seeds.txt"
        seeds.write_text("".join(f"{b}/index.html\n" for b in base.values()))
        settings = {"HOST_RESOLVE": "*.changes.test=127.0.0.1", "ALLOWED_DOMAINS": "changes.test",
                    "STORE_URI": f"sqlite:///{db}", "REVISIT_MODE": "incremental", "REVISIT_TIME_SCALE": SCALE,
                    "REVISIT_MIN_INTERVAL": 3600, "REVISIT_FIRST_INTERVAL": [3600, 7200],
                    "REVISIT_REFRESH_SECONDS": 0.1, "REVISIT_REPLAN_SECONDS": 2, "REVISIT_BUDGET": 24 * 2 * len(roots),
                    "STORE_FLUSH_INTERVAL": 0.2, "MIN_INTERVAL": args.polite, "RENDER_MODE": "never",
                    "WATCH_REFRESH_SECONDS": 1, "DASHBOARD_ENABLED": False, "LOG_LEVEL": "INFO",
                    "WEBHOOK_URLS": f"http://127.0.0.1:{hook.server_port}/", "STATS_FILE": str(work / "stats.json")}
        log = open(work / "crawl.log", "w")
        crawl = subprocess.Popen(crawl_command("web", {"seeds": str(seeds)}, settings), cwd=PROJECT_DIR,
                                 stdout=subprocess.DEVNULL, stderr=log)
        edits: list[dict] = []
        try:
            deadline = time.time() + 120
            while time.time() < deadline:  # every page captured once before the edits start
                served = {(r.host, r.path) for r in nginx.records() if r.status == 200}
                if all((p.host, p.url_path) in served for p in pages):
                    break
                if crawl.poll() is not None:
                    raise SystemExit(f"the crawl ended: {(work / 'crawl.log').read_text()[-2000:]}")
                time.sleep(0.2)
            time.sleep(2 * args.interval)  # ... and its store written
            started = time.time()
            gap = 1.5 * args.interval  # a page's edits apart: each can be seen on its own
            every = args.seconds / max(1, len(pages) * args.seconds / gap / 2)
            while time.time() - started < args.seconds:
                now = time.time()
                ready = [p for p in pages if now - p.last_edit >= gap]
                if ready:
                    page = rng.choice(ready)
                    meaningful = rng.random() < 0.5
                    kinds = [k for k in CONTENT if k != "link removed" or page.links] if meaningful else \
                        list(NOISE) + (list(WATCH_NOISE) if page.watched else [])
                    kind = rng.choice(kinds)
                    page.edit(kind, rng, now)
                    write(roots[page.host] / page.name, page.render())
                    edits.append({"url": f"{base[page.host]}{page.url_path}", "version": page.version, "kind": kind,
                                  "meaningful": meaningful, "at": time.time(), "watched": page.watched})
                time.sleep(every)
            time.sleep(args.grace)  # the last edits' revisits, and their reports
        finally:
            crawl.send_signal(signal.SIGINT)
            try:
                crawl.wait(60)
            except subprocess.TimeoutExpired:
                crawl.kill()
            log.close()
            hook.shutdown()
        records = nginx.records()
    polite = politeness_report([r for r in records if r.path != "/robots.txt"], interval=args.polite, basis="idle",
                               tolerance=0.01)

    conn = sqlite3.connect(db)
    changes = read_changes(conn)
    conn.close()
    version_at = versions(work / "warc")
    (work / "edits.jsonl").write_text("".join(json.dumps(e) + "\n" for e in edits))
    by_url: dict[str, list[dict]] = {}
    for e in edits:
        by_url.setdefault(e["url"], []).append(e)
    tp = fp = fn = 0
    unjudged: list[str] = []  # records whose captures carry no version (cannot be scored)
    covered: set[tuple[str, int]] = set()
    noise_reports_watched = 0
    latencies_watched, latencies_other, late_watched = [], [], []
    for c in changes:
        if c.at < started:
            continue
        v0 = version_at.get((c.previous_warc_file, c.previous_warc_offset))
        v1 = version_at.get((c.warc_file, c.warc_offset))
        if v0 is None or v1 is None:
            unjudged.append(f"{c.url.rsplit('/', 1)[1]} {c.reason} ({c.previous_warc_file and 'archived'}, "
                            f"{v0}->{v1})")
            continue
        spanned = [e for e in by_url.get(c.url, []) if v0 < e["version"] <= v1]
        covered.update((c.url, e["version"]) for e in spanned)
        truth = any(e["meaningful"] for e in spanned)
        if c.meaningful and truth:
            tp += 1
            reported = Hook.received.get(c.id, c.at)
            for e in spanned:
                if e["meaningful"]:
                    delay = reported - e["at"]
                    (latencies_watched if e["watched"] else latencies_other).append(delay)
                    if e["watched"] and delay > args.interval:
                        late_watched.append(round(delay, 2))
        elif c.meaningful:
            fp += 1
            noise_reports_watched += any(e["watched"] for e in spanned)
        elif truth:
            fn += 1
    missed = [e for e in edits if e["meaningful"] and (e["url"], e["version"]) not in covered]
    fn += len({(e["url"], e["version"]) for e in missed})
    stats = json.loads((work / "stats.json").read_text()) if (work / "stats.json").exists() else {}
    meaningful_edits = sum(e["meaningful"] for e in edits)
    out = {
        "bench": "changes", "pages": len(pages), "watched": sum(p.watched for p in pages), "seconds": args.seconds,
        "edits": len(edits), "meaningful_edits": meaningful_edits, "noise_edits": len(edits) - meaningful_edits,
        "by_kind": {k: sum(e["kind"] == k for e in edits) for k in (*CONTENT, *NOISE, *WATCH_NOISE)},
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "true_reports": tp, "false_reports": fp, "missed": len(missed),
        "missed_edits": [f"{e['kind']} ({'watched' if e['watched'] else 'unwatched'}, "
                         f"{round(time.time() - e['at'])} s before the end)" for e in missed], "judged_noise_wrongly": fn - len(missed),
        "noise_reports_on_watched_pages": noise_reports_watched, "unjudged_records": unjudged,
        "watch_interval_s": args.interval,
        "watched_report_s": {"median": round(statistics.median(latencies_watched), 2) if latencies_watched else None,
                             "max": round(max(latencies_watched), 2) if latencies_watched else None},
        "watched_reported_within_interval": (round(1 - len(late_watched) / len(latencies_watched), 4)
                                             if latencies_watched else None),
        "late_watched_s": late_watched,
        "unwatched_report_s": {"median": round(statistics.median(latencies_other), 2) if latencies_other else None,
                               "max": round(max(latencies_other), 2) if latencies_other else None},
        "webhooks_delivered": len(Hook.received), "webhooks_dead_lettered": stats.get("webhooks/dead_lettered", 0),
        "changes_recorded": sum(c.at >= started for c in changes),
        "revisits": stats.get("revisit/visits", 0), "not_modified": stats.get("revisit/not_modified", 0),
        "politeness_violations": polite["violations"], "min_gap_s": polite["min_gap"],
    }
    print(json.dumps(with_peak_rss(out)))


if __name__ == "__main__":
    main()
