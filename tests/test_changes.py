"""Change classification on real Debian documentation pages, edited in both ways: content
(a paragraph rewritten, a section added, a link removed, a version or a price changed) and
noise (a timestamp, a counter, a shuffled list of related links, a session token)."""

from __future__ import annotations

import json
import re
import threading
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from crawlproj.changes.atom import atom_feed
from crawlproj.changes.classify import Snapshot, compare, markdown_links, normalise_line
from crawlproj.changes.pipeline import console_line
from crawlproj.changes.watches import check_selector, parse_duration, selection
from crawlproj.changes.webhooks import SIGNATURE_HEADER, WebhookSender, backoff, verify
from crawlproj.commands.changes import parse_since
from crawlproj.extensions.console import progress_line
from crawlproj.store.changes import ChangeRecord
from crawlproj.content.extraction import extract_content

PAGES = {
    "python": "/usr/share/doc/python3.11/html/library/json.html",
    "postgresql": "/usr/share/doc/postgresql-doc-15/html/tutorial-select.html",
    "nodejs": "/usr/share/doc/nodejs/api/path.html",
}
URL = "http://docs.test/page.html"


def page(name: str) -> str:
    path = Path(PAGES[name])
    assert path.exists(), f"{path} missing: run scripts/system-deps.sh"
    return path.read_text(encoding="utf-8", errors="replace")


def after_heading(html: str, insert: str) -> str:
    """``insert`` placed just after the page's first heading, inside its main content."""
    end = heading_end(html)
    return html[:end] + insert + html[end:]


def heading_end(html: str) -> int:
    """Where the main content's first heading ends (after role="main" when the page marks it)."""
    main = html.find('role="main"')
    m = re.compile(r"</h1>|</h2>").search(html, max(main, 0))
    assert m, "no heading"
    return m.end()


def first_paragraph(html: str) -> re.Match:
    """The first paragraph after the first heading with 60+ characters of text."""
    start = heading_end(html)
    pattern = re.compile(r"<p[ >].*?</p>", re.S)
    for m in pattern.finditer(html, start):
        if len(re.sub(r"<[^>]+>", "", m.group())) > 60:
            return m
    raise AssertionError("no paragraph")


def snap(html: str) -> Snapshot:
    content = extract_content(html.encode(), "utf-8", URL)
    return Snapshot(content.title, content.text, tuple(markdown_links(content.markdown)))


def change(before: str, after: str, ignore=()):
    return compare(snap(before), snap(after), [re.compile(p) for p in ignore], URL)


LINKS = ["intro.html", "install.html", "tutorial.html", "reference.html", "faq.html"]


def related(order) -> str:
    items = "".join(f'<li><a href="/docs/{LINKS[i]}">{LINKS[i][:-5].title()} guide</a></li>' for i in order)
    return f"<p>Related pages:</p><ul>{items}</ul>"


NOISE = {
    "timestamp": (lambda h: after_heading(h, "<p>Last updated: 2026-11-27 17:45:16 UTC</p>"),
                  lambda h: after_heading(h, "<p>Last updated: 2026-11-28 09:02:51 UTC</p>")),
    "long date": (lambda h: after_heading(h, "<p>Page generated on Friday, November 27, 2026 at 5:45 pm.</p>"),
                  lambda h: after_heading(h, "<p>Page generated on Saturday, November 28, 2026 at 9:02 am.</p>")),
    "counter": (lambda h: after_heading(h, "<p>This page has been viewed 12,345 times.</p>"),
                lambda h: after_heading(h, "<p>This page has been viewed 12,391 times.</p>")),
    "counter line": (lambda h: after_heading(h, "<p>Visitors online: 17</p>"),
                     lambda h: after_heading(h, "<p>Visitors online: 23</p>")),
    "shuffled related links": (lambda h: after_heading(h, related([0, 1, 2, 3, 4])),
                               lambda h: after_heading(h, related([3, 0, 4, 2, 1]))),
    "session token": (lambda h: after_heading(h, "<p>Session 9f86d081884c7d659a2feaa0c55ad015 active.</p>"),
                      lambda h: after_heading(h, "<p>Session 60303ae22b998861bce3b28f33eec1be active.</p>")),
    "token in link": (lambda h: after_heading(h, '<p><a href="/account?sid=a8F3kq9ZpL2m7XwR">Your account</a></p>'),
                      lambda h: after_heading(h, '<p><a href="/account?sid=Qz81LmN0vB4cXy7T">Your account</a></p>')),
    "whitespace": (lambda h: h, lambda h: re.sub(r"(<p>)(\w)", r"\1  \n \2", h, count=5)),
}


def rewrite_paragraph(html: str) -> str:
    m = first_paragraph(html)
    return html[:m.start()] + "<p>This paragraph was rewritten: the module now explains its purpose in other words " \
                              "and with a different example.</p>" + html[m.end():]


def remove_link(html: str) -> str:
    return html.replace(' See <a href="http://docs.test/more.html">more on this</a>.', "")


def with_link(html: str) -> str:
    m = first_paragraph(html)
    para = m.group().replace("</p>", ' See <a href="http://docs.test/more.html">more on this</a>.</p>')
    return html[:m.start()] + para + html[m.end():]


MEANINGFUL = {
    "paragraph rewritten": (lambda h: h, rewrite_paragraph),
    "section added": (lambda h: h, lambda h: after_heading(
        h, "<h2>Deprecation notice</h2><p>This interface will be removed in the next major release; use the new "
           "one instead.</p>")),
    "link removed": (with_link, lambda h: remove_link(with_link(h))),
    "version changed": (lambda h: after_heading(h, "<p>The current release is version 15.4.</p>"),
                        lambda h: after_heading(h, "<p>The current release is version 15.5.</p>")),
    "price changed": (lambda h: after_heading(h, "<p>Support costs $19.99 a month.</p>"),
                      lambda h: after_heading(h, "<p>Support costs $24.99 a month.</p>")),
    "number in prose": (lambda h: after_heading(h, "<p>The server needs 4 GB of memory and 2 cores to run it.</p>"),
                        lambda h: after_heading(h, "<p>The server needs 8 GB of memory and 2 cores to run it.</p>")),
    "sentence deleted": (lambda h: h, lambda h: h.replace(first_paragraph(h).group(), "")),
}


@pytest.mark.parametrize("name", PAGES)
@pytest.mark.parametrize("edit", NOISE)
def test_noise_edits_are_not_meaningful(name, edit):
    html = page(name)
    before, after = (f(html) for f in NOISE[edit])
    c = change(before, after)
    assert not c.meaningful, (edit, c.reason, c.diff)
    assert c.reason in ("noise", "reordered", "identical")


@pytest.mark.parametrize("name", PAGES)
@pytest.mark.parametrize("edit", MEANINGFUL)
def test_content_edits_are_meaningful_with_their_diff(name, edit):
    html = page(name)
    before, after = (f(html) for f in MEANINGFUL[edit])
    c = change(before, after)
    assert c.meaningful, (edit, c.reason)
    assert c.diff.startswith(f"--- {URL} (before)")
    assert 0 < c.similarity < 1 or edit == "link removed"
    if edit == "paragraph rewritten":
        assert "+This paragraph was rewritten" in c.diff and c.lines_removed >= 1
    if edit == "section added":
        assert "+Deprecation notice" in c.diff and c.lines_removed == 0
    if edit == "link removed":
        assert c.links_removed == ("http://docs.test/more.html",) and "-" in c.diff
    if edit == "price changed":
        assert "-Support costs $19.99 a month." in c.diff and "+Support costs $24.99 a month." in c.diff


def test_identical_and_title_changes():
    html = page("python")
    assert change(html, html).reason == "identical"
    retitled = re.sub(r"<title>(.*?)</title>", r"<title>\1 (new)</title>", html, count=1, flags=re.S)
    c = change(html, retitled)
    assert c.meaningful and c.reason in ("title", "text") and c.title_after.endswith("(new)")


def test_a_watch_ignore_pattern_makes_an_edit_noise():
    html = page("postgresql")
    before = after_heading(html, "<p>Build 4711 of the nightly snapshot.</p>")
    after = after_heading(html, "<p>Build 4712 of the nightly snapshot.</p>")
    assert change(before, after).meaningful  # a build number is content by default
    assert not change(before, after, ignore=[r"Build \d+"]).meaningful


def test_reordered_blocks_and_noise_lines_in_the_main_text():
    text = "Intro paragraph about the module.\n\nRelated: intro\n\nRelated: install\n\nRelated: faq"
    shuffled = "Intro paragraph about the module.\n\nRelated: faq\n\nRelated: intro\n\nRelated: install"
    c = compare(Snapshot("T", text, ("http://a/1", "http://a/2")), Snapshot("T", shuffled, ("http://a/2", "http://a/1")))
    assert (c.meaningful, c.reason) == (False, "reordered") and c.diff
    inline = compare(Snapshot("T", "Related: intro, install, faq and the changelog of this release"),
                     Snapshot("T", "Related: faq, the changelog and install, intro of this release"))
    assert not inline.meaningful
    tokened = compare(Snapshot("T", "x", ("http://a/s/a8F3kq9ZpL2m7XwR/page",)),
                      Snapshot("T", "x", ("http://a/s/Qz81LmN0vB4cXy7T/page",)))
    assert not tokened.meaningful
    stamped = compare(Snapshot("T", text + "\n\nLast updated: 2026-11-27 17:45:16 UTC"),
                      Snapshot("T", text + "\n\nLast updated: 2026-11-28 09:02:51 UTC"))
    assert (stamped.meaningful, stamped.reason) == (False, "noise") and "+Last updated: 2026-11-28" in stamped.diff


@pytest.mark.parametrize("line, same_as", [
    ("Updated 2026-11-27T17:45:16Z", "Updated 2025-01-02T00:00:00+02:00"),
    ("Posted 3 hours ago", "Posted 2 days ago"),
    ("Downloads: 5,821", "Downloads: 6,004"),
    ("1,234 views", "1,301 views"),
    ("ref a3f9c2e1d4b5", "ref 0b1c2d3e4f5a"),
    ("id 123e4567-e89b-12d3-a456-426614174000", "id 00000000-0000-0000-0000-000000000000"),
    ("This page was last modified on Fri Nov 27 17:45:16 2026 by the build system of the project",
     "This page was last modified on Sat Nov 28 09:02:51 2026 by the build system of the project"),
    ("generated 2026/11/27 17:45 from the sources in the repository of the whole documentation set",
     "generated 2026/11/28 09:02 from the sources in the repository of the whole documentation set"),
    ("request 1795801798 served from the cache of the edge server in the nearest location to you",
     "request 1795809999 served from the cache of the edge server in the nearest location to you"),
    ("csrf dGhpcyBpcyBhIHRva2Vu+2a== was issued to you", "csrf cXVpdGUgYW5vdGhlcg2+b== was issued to you"),
])
def test_noise_normalises_alike(line, same_as):
    assert normalise_line(line) == normalise_line(same_as)


@pytest.mark.parametrize("line, other", [
    ("version 15", "version 16"),
    ("Python 3.11.2", "Python 3.12.0"),
    ("costs €20", "costs €25"),
    ("it takes 4 GB", "it takes 8 GB"),
    ("Pass the timeout in seconds; 30 is the default value of this option", "Pass the timeout in seconds; 60 is the default value of this option"),
])
def test_content_numbers_stay(line, other):
    assert normalise_line(line) != normalise_line(other)


# -- telling people: webhooks, the Atom feed, the console ---------------------------------------
class _Hook(BaseHTTPRequestHandler):
    status = 500
    bodies: list = []

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        _Hook.bodies.append((self.headers.get(SIGNATURE_HEADER), body))
        self.send_response(_Hook.status)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_a_webhook_that_keeps_failing_is_retried_then_dead_lettered(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Hook.status, _Hook.bodies = 500, []
    dead = tmp_path / "dead.jsonl"
    sender = WebhookSender([f"http://127.0.0.1:{server.server_port}/"], "k3y", retries=2, base=0.01, timeout=5,
                           deadletter_file=str(dead))
    assert not sender.deliver(f"http://127.0.0.1:{server.server_port}/", {"id": "c1", "url": "http://a/"})
    assert len(_Hook.bodies) == 3 and all(verify("k3y", body, sig) for sig, body in _Hook.bodies)
    letter = json.loads(dead.read_text())
    assert letter["payload"]["id"] == "c1" and "500" in letter["error"]
    _Hook.status = 200
    assert sender.deliver(f"http://127.0.0.1:{server.server_port}/", {"id": "c2"})
    sender.close()
    server.shutdown()
    assert backoff(1, 2.0) == 2.0 and backoff(3, 2.0) == 8.0


def _record(url="http://docs.test/a.html", meaningful=True, at=1_795_000_000.0):
    return ChangeRecord("id1", url, at, at - 60, "w.warc.gz", 10, "w.warc.gz", 0, meaningful, "text", 0.9, 1, 1,
                        "A", "A", (), ("http://x/",), False, "--- a\n+++ b\n-old line\n+new line")


def test_atom_feed_lists_changes_with_their_diff():
    feed = ET.fromstring(atom_feed([_record()], "http://127.0.0.1:1/changes.atom?token=t"))
    ns = {"a": "http://www.w3.org/2005/Atom"}
    entry = feed.find("a:entry", ns)
    assert entry.find("a:link", ns).get("href") == "http://docs.test/a.html"
    assert "+new line" in entry.find("a:content", ns).text and entry.find("a:updated", ns).text.endswith("Z")
    assert "links removed: http://x/" in entry.find("a:summary", ns).text


def test_the_progress_line_of_an_incremental_crawl_counts_revisits_apart_and_says_what_is_due():
    stats = {"store/pages": 30, "revisit/visits": 22, "revisit/tracked": 11, "revisit/not_modified": 20,
             "revisit/changed": 2, "changes/meaningful": 1, "revisit/short_term": 11, "revisit/next_due_in": 75,
             "frontier/estimate_seconds": 0}
    line = progress_line(stats, 60, 0, incremental=True)
    assert line.startswith("8 pages") and "11 URLs tracked, 22 revisits (20 not modified, 2 changed, 1 meaningful" \
        in line and "the next in 1 min 15 s" in line and "done about" not in line
    assert "done about" in progress_line(stats, 60, 0)
    assert console_line(_record()).startswith("changed: http://docs.test/a.html (text; 90% alike")


def test_watch_selection_and_durations():
    html = page("python")
    snap_ = selection(html, "http://docs.test/library/json.html", css="div.body h1")
    assert snap_.text.startswith("json") and snap_.title.startswith("json")
    assert selection(html, "http://docs.test/", xpath="//title/text()").text.startswith("json")
    # DocBook's XHTML (an XML declaration, a namespace) is read as HTML: the selector matches.
    pg = selection(page("postgresql"), "http://docs.test/tutorial-select.html", css="div.sect1")
    assert "Querying a Table" in pg.text and len(pg.text) > 1000 and pg.links
    assert parse_duration("15m") == 900 and parse_duration("1h30m") == 5400 and parse_duration("90") == 90
    with pytest.raises(ValueError):
        parse_duration("soon")
    with pytest.raises(ValueError):
        check_selector("div[", None)
    assert parse_since("2026-11-27T00:00") == 1_795_737_600
    assert parse_since("2h", now=10_000.0) == 2_800.0

