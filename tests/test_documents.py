"""Documents beyond HTML: PDFs read for their text, title, author, language and links, in a
helper process bounded in pages, time and memory; hostile PDFs end with a named outcome.
Real PDFs come from Debian's packages, served by nginx on loopback."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import threading
import time

import pytest

from crawlproj.content.offload import DocumentFailed, PageWorkers, StageTimeout
from crawlproj.content.pdf import is_pdf, prepare, read_pdf
from crawlproj.extensions.memory import rss_bytes
from crawlproj.rendering.browser import descendants
from sandbox import pdfs
from sandbox.harness import PROJECT_DIR, crawl_command, error_lines
from sandbox.servers import NginxServer


@pytest.fixture(scope="module")
def real():
    pdfs.ensure_installed()
    return {name: pdfs.real_pdf(name) for name in pdfs.REAL_PDFS}


def test_real_pdfs_give_their_text_title_language_and_links(real):
    tasn1 = read_pdf(real["libtasn1.pdf"])
    assert tasn1.outcome is None and tasn1.pages == tasn1.pages_read == 36
    assert "ASN.1" in tasn1.text and tasn1.text.count("\f") == 35  # a form feed between pages
    assert tasn1.title and "libtasn1" in tasn1.title.lower()  # no Title entry: its first line
    assert tasn1.language == "en"
    assert "http://fsf.org/" in tasn1.links and "mailto:help-libtasn1@gnu.org" in tasn1.links
    for name, body in real.items():
        doc = read_pdf(body)
        assert doc.outcome is None and len(doc.text) > 10_000 and doc.links, name


def test_real_pdfs_whose_first_line_is_a_page_number_or_a_running_head_get_their_title():
    """Without a usable Title entry the first line was the title: two real manuals were stored
    as "1" (the page number above their title), a manual as its running head, one as the file it
    was made from. Each gets what a reader sees as its title."""
    pdfs.ensure_installed(pdfs.TITLE_PDFS)
    titles = {name: read_pdf(pdfs.real_pdf(name), max_pages=20).title for name in pdfs.TITLE_PDFS}
    assert titles == {
        "docbook-xsl-reference.pdf": "DocBook XSL Stylesheets: Reference Documentation",  # was "1"
        "dmalloc.pdf": "Debug Malloc Library",  # was "1"
        "fasta_guide.pdf": "The FASTA program package",  # was "fasta-36.3.8i November 13, 2022"
        "ecasound_eci_doc.pdf": "Ecasound Control Interface Guide",  # was "eci_doc.dvi"
    }


def test_a_title_skips_page_numbers_running_heads_and_footnote_marks():
    from crawlproj.content.pdftitle import is_page_number, pick_title, running_heads, usable_metadata_title

    for line in ("1", "iii", "XIV", "Page 3", "page 12 of 40", "- 2 -", "3 / 10", "(4)", "— 7 —", "Seite 5"):
        assert is_page_number(line), line
    for line in ("1 Introduction", "Version 2", "Chapter 3", "I am", "Mix", "CIVIL", "Did"):
        assert not is_page_number(line), line
    body = [("Some ordinary text of the page that goes on.", 10.0)] * 5
    assert pick_title([("1", 9.0), ("Debug Malloc Library", 20.7), ("Version 5.5.2", 10.9)] + body) == \
        "Debug Malloc Library"
    # A title on two lines, as large, is one title; a version under it is not part of it.
    assert pick_title([("ALTree: Association and Localisation tests", 17.2), ("using phylogenetic trees", 17.2),
                       ("Version 1.1", 17.2)] + body) == "ALTree: Association and Localisation tests using phylogenetic trees"
    # No size stands out: the first line that is not page furniture nor a running head.
    pages = [f"Manual 1.0 — May 2007\nText of page {n}\n{n}" for n in range(1, 6)]
    heads = running_heads(pages)
    assert pick_title([("Manual 1.0 — May 2007", 10.0), ("- 1 -", 10.0), ("Getting started", 10.0)] + body,
                      heads) == "Getting started"
    # A title repeated as the running head is still the title when it is the largest text.
    assert pick_title([("The debdelta suite", 24.8)] + body, {"the debdelta suite"}) == "The debdelta suite"
    assert pick_title([("Contents", 18.0), ("1", 10.0)] + body[:1]) == body[0][0]
    assert pick_title([("-0.8", 8.0), ("12", 8.0)]) is None
    # Two lines run together in a bad PDF's text are cut where a word runs into the next.
    glued = "DocBook XSL Stylesheets: Reference DocumentationTable of ContentsDocBook XSL Stylesheets User " * 2
    assert pick_title([(glued, 10.0)]) == "DocBook XSL Stylesheets: Reference Documentation"
    assert [usable_metadata_title(t) for t in ("eci_doc.dvi", "Untitled", "Microsoft Word - npcUsage.doc",
                                               " Valgrind  Documentation ")] == [None, None, None,
                                                                                  "Valgrind Documentation"]


def test_real_older_latex_pdfs_have_their_words_with_diacritics():
    """Older LaTeX draws an accent as a glyph of its own, which PDFium put beside or far from its
    letter: "zale˙zno ´ s´c" for "zależność", "Anfuhrungszeichen" for "Anführungszeichen" (its
    diaeresis at the line's end). Each accent goes back on the letter under it."""
    polish, german = pdfs.accent_pdf("wkmgr1.pdf"), pdfs.accent_pdf("gerdoc.pdf")
    before = read_pdf(polish, as_read=True).text.split(), read_pdf(german, as_read=True).text.split()
    after = read_pdf(polish).text.split(), read_pdf(german).text.split()
    for words in ("zależność", "najczęściej", "Miśkiewicz", "stosowaną", "akceptację"):
        assert words not in before[0] and words in after[0], words
    for words in ("Anführungszeichen", "Änderung", "für", "können"):
        assert words not in before[1] and words in after[1], words
    assert not any(accent in " ".join(after[0] + after[1]) for accent in "´˙¨˛"), "an accent left alone"


def _chars(*placed):
    """Characters for compose_accents: (text, left, bottom, right, top[, generated])."""
    from crawlproj.content.pdfaccents import Char

    return [Char(text, None if left is None else (left, bottom, right, top), bool(rest))
            for text, left, bottom, right, top, *rest in placed]


def test_accents_drawn_apart_are_put_on_the_letter_under_them():
    from crawlproj.content.pdfaccents import compose_accents

    letters = lambda word, x=100.0: [(c, x + 6 * i, 100, x + 6 * i + 5, 107) for i, c in enumerate(word)]  # noqa: E731
    # Before its letter in the text (TeX draws it first), over it on the page.
    assert compose_accents(_chars(*letters("zale"), ("˙", 125.5, 108, 126.5, 109), *letters("zno", 124))) == "zależno"
    # At the line's end, far from its letter: OT1's umlaut.
    assert compose_accents(_chars(*letters("Anfuhrung"), (" ", 155, 100, 155, 100, 1), ("¨", 119, 108, 122, 109))) \
        == "Anführung "
    # After a space PDFium made up, under its letter (an ogonek), and the space goes.
    word = _chars(*letters("stosowan"), (" ", 148, 100, 148, 100, 1), ("˛", 150, 98.5, 152, 100),
                  ("a", 148, 100, 153, 107))
    assert compose_accents(word) == "stosowaną"
    # A dotless i takes the accent as an i; an accent after its letter in the text is the same.
    assert compose_accents(_chars(("ı", 100, 100, 103, 107), ("´", 100.5, 108, 102.5, 110))) == "í"
    assert compose_accents(_chars(("e", 100, 100, 105, 107), ("ˆ", 101, 108, 104, 110))) == "ê"
    # Not an accent: a caret in code on the baseline, an accent over nothing, no precomposed form.
    assert compose_accents(_chars(("a", 100, 100, 105, 107), ("^", 104, 103, 108, 108), ("2", 108, 100, 113, 107))) \
        == "a^2"
    assert compose_accents(_chars(("´", 200, 108, 202, 110), ("x", 100, 100, 105, 107))) == "´x"
    assert compose_accents(_chars(("q", 100, 100, 105, 107), ("˛", 103, 98, 105, 100))) == "q˛"
    # A character past U+FFFF comes as two halves of UTF-16: it is one again.
    assert compose_accents(_chars(("\ud835", None, 0, 0, 0), ("\udc00", None, 0, 0, 0), ("´", 9, 9, 9, 9))) \
        == "\U0001d400´"


def test_words_hyphenated_at_a_line_s_end_are_whole():
    from crawlproj.content.pdf import join_hyphenated

    assert join_hyphenated("manip\x02ulation of Quasi\x02Standard ent\x02\nhalten, at the end\x02") == \
        "manipulation of Quasi-Standard enthalten, at the end"


def test_a_pdf_s_metadata_and_link_annotations_are_read():
    body = pdfs.text_pdf(["Read http://pdfs.docs.test/written.html for more", "the second page"],
                         links=["http://pdfs.docs.test/clicked.html"], title="Annual  report", author="The Board")
    doc = read_pdf(body)
    assert (doc.title, doc.author, doc.pages) == ("Annual report", "The Board", 2)
    assert doc.links == ["http://pdfs.docs.test/clicked.html", "http://pdfs.docs.test/written.html"]
    assert doc.text.split("\f")[1] == "the second page"


def test_hostile_pdfs_end_with_a_named_outcome(real):
    assert read_pdf(pdfs.encrypted_pdf()).outcome == "pdf_encrypted"
    assert read_pdf(pdfs.MALFORMED_PDF).outcome == "pdf_malformed"
    assert read_pdf(pdfs.recursive_pdf()).outcome == "pdf_malformed"
    cut = real["libtasn1.pdf"][: len(real["libtasn1.pdf"]) // 2]
    assert read_pdf(cut).outcome == "pdf_malformed"
    long = read_pdf(pdfs.many_pages_pdf(30), max_pages=10)
    assert (long.outcome, long.pages, long.pages_read) == ("over_budget/pdf_pages", 30, 10)
    assert long.text.count("\f") == 9
    short = read_pdf(real["libtasn1.pdf"], max_chars=5000)
    assert short.outcome == "over_budget/pdf_text" and len(short.text) == 5000


def test_pdfs_are_known_by_type_or_by_their_magic_bytes(real):
    body = real["libtasn1.pdf"]
    assert is_pdf("application/pdf", b"")
    assert is_pdf(b"application/octet-stream", body) and is_pdf("text/plain", b"\n\n" + body)
    assert is_pdf(None, body)
    assert not is_pdf("application/octet-stream", b"\x89PNG....")
    # An HTML page that mentions the magic is HTML; one that is a PDF under that label is a PDF.
    assert not is_pdf("text/html", b"<html><p>Files start with %PDF-1.7</p></html>")
    assert is_pdf("text/html; charset=utf-8", body)


def _sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "woke"


def test_the_document_helper_is_bounded_in_time_and_memory_and_replaced_after_a_failure():
    bomb = pdfs.bomb_pdf(1 << 30)

    async def run():
        workers = PageWorkers(1, 20.0, 0)
        try:
            with pytest.raises(StageTimeout):
                await workers.run_document(_sleep, 30, timeout=3.0, memory=0)
            with pytest.raises(DocumentFailed):  # 1 GiB of inflated stream past a 256 MiB cap
                await workers.run_document(read_pdf, bomb, timeout=30.0, memory=256 << 20, prepare=prepare)
            ok = await workers.run_document(read_pdf, pdfs.text_pdf(["fine"]), timeout=30.0, memory=256 << 20,
                                            prepare=prepare)
            assert ok.text == "fine"
        finally:
            workers.close()

    asyncio.run(run())


def _watch_rss(proc: subprocess.Popen, peaks: dict) -> None:
    while proc.poll() is None:
        main = rss_bytes(proc.pid)
        tree = main + sum(rss_bytes(pid) for pid in descendants(proc.pid))
        peaks["main"], peaks["tree"] = max(peaks["main"], main), max(peaks["tree"], tree)
        time.sleep(0.1)


@pytest.mark.slow
def test_a_crawl_reads_pdfs_follows_their_links_and_survives_hostile_ones(tmp_path, real):
    docs, hostile, plain = tmp_path / "docs", tmp_path / "hostile", tmp_path / "plain"
    for d in (docs, hostile, plain):
        d.mkdir()
    (docs / "libtasn1.pdf").write_bytes(real["libtasn1.pdf"])
    (docs / "bzip2-manual.dat").write_bytes(real["bzip2-manual.pdf"])  # served as application/octet-stream
    (docs / "spec.pdf").write_bytes(real["shared-mime-info-spec.pdf"])
    for name in ("written", "clicked"):
        (docs / f"{name}.html").write_text(f"<html><title>{name}</title><body><p>reached from a PDF</p></body></html>")
    (docs / "index.html").write_text("<html><body>" + "".join(
        f'<a href="{n}">{n}</a>' for n in ("libtasn1.pdf", "bzip2-manual.dat", "spec.pdf", "report.pdf")) + "</body></html>")
    hostile_files = {"encrypted.pdf": pdfs.encrypted_pdf(), "malformed.pdf": pdfs.MALFORMED_PDF,
                     "recursive.pdf": pdfs.recursive_pdf(), "bomb.pdf": pdfs.bomb_pdf(1 << 31),
                     "truncated.pdf": real["libtasn1.pdf"][:60_000], "long.pdf": pdfs.many_pages_pdf(40)}
    for name, body in hostile_files.items():
        (hostile / name).write_bytes(body)
    (hostile / "index.html").write_text("<html><body>" + "".join(f'<a href="{n}">{n}</a>' for n in hostile_files)
                                        + '<a href="http://plain.docs.test:PORT/index.html">plain</a></body></html>')
    plain_pages = [f"p{i}.html" for i in range(12)]
    for i, name in enumerate(plain_pages):
        (plain / name).write_text(f"<html><body><p>ordinary page {i}</p>"
                                  + "".join(f'<a href="{n}">{n}</a>' for n in plain_pages) + "</body></html>")
    (plain / "index.html").write_text("<html><body>" + "".join(f'<a href="{n}">{n}</a>' for n in plain_pages)
                                      + "</body></html>")
    with NginxServer({"docs.docs.test": str(docs), "hostile.docs.test": str(hostile),
                      "plain.docs.test": str(plain)}) as nginx:
        (hostile / "index.html").write_text((hostile / "index.html").read_text().replace("PORT", str(nginx.port)))
        (docs / "report.pdf").write_bytes(pdfs.text_pdf(
            [f"See http://docs.docs.test:{nginx.port}/written.html", "page two"],
            links=[f"http://docs.docs.test:{nginx.port}/clicked.html"], title="Quarterly report", author="Finance"))
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(f"http://docs.docs.test:{nginx.port}/index.html\nhttp://hostile.docs.test:{nginx.port}/index.html\n")
        db = tmp_path / "crawl.db"
        settings = {"HOST_RESOLVE": "*.docs.test=127.0.0.1", "ALLOWED_DOMAINS": "docs.test", "MIN_INTERVAL": 0,
                    "RENDER_MODE": "never", "STORE_URI": f"sqlite:///{db}", "PDF_MAX_PAGES": 20,
                    "PDF_MAX_MEMORY": 256 << 20, "STATS_FILE": str(tmp_path / "stats.json")}
        proc = subprocess.Popen(crawl_command("web", {"seeds": str(seeds)}, settings), cwd=PROJECT_DIR,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        peaks = {"main": 0, "tree": 0}
        watcher = threading.Thread(target=_watch_rss, args=(proc, peaks), daemon=True)
        watcher.start()
        _, log = proc.communicate(timeout=300)
        watcher.join()
        records = nginx.records()
    assert proc.returncode == 0, log[-3000:]
    assert error_lines(log) == []
    fetched = {(r.host, r.path) for r in records if r.status == 200}
    # Links inside a PDF are followed: the one written in its text, and its link annotation.
    assert {("docs.docs.test", "/written.html"), ("docs.docs.test", "/clicked.html")} <= fetched
    # The ordinary host beside the hostile files is crawled completely.
    assert {("plain.docs.test", f"/{n}") for n in plain_pages} <= fetched
    conn = sqlite3.connect(db)
    docs_rows = {url.rsplit("/", 1)[1]: (outcome, pages, read, author, len(text)) for url, outcome, pages, read, author, text
                 in conn.execute("SELECT url, outcome, pages, pages_read, author, text FROM documents")}
    for name in ("libtasn1.pdf", "bzip2-manual.dat", "spec.pdf"):
        outcome, pages, read, _, chars = docs_rows[name]
        assert outcome in (None, "over_budget/pdf_pages") and read == min(pages, 20) and chars > 10_000, name
    assert docs_rows["report.pdf"][3] == "Finance"
    titles = dict(conn.execute("SELECT url, title FROM pages WHERE host = 'docs.docs.test' AND url NOT LIKE '%.html'"))
    assert titles[f"http://docs.docs.test:{nginx.port}/report.pdf"] == "Quarterly report"
    assert len(titles) == 4 and all(titles.values()), titles
    links = {target for (target,) in conn.execute("SELECT target FROM links WHERE source LIKE '%libtasn1.pdf'")}
    assert "https://www.gnu.org/software/libtasn1/" in links  # in its first 20 pages
    # Near-duplicate detection saw their text.
    assert conn.execute("SELECT COUNT(*) FROM pages WHERE url LIKE '%libtasn1.pdf' AND text_length > 10000").fetchone()[0] == 1
    outcomes = {name: docs_rows[name][0] for name in hostile_files}
    assert outcomes == {"encrypted.pdf": "pdf_encrypted", "malformed.pdf": "pdf_malformed",
                        "recursive.pdf": "pdf_malformed", "bomb.pdf": "over_budget/pdf_memory",
                        "truncated.pdf": "pdf_malformed", "long.pdf": "over_budget/pdf_pages"}
    # The bomb (2 GiB inflated) stayed in its capped helper: the crawl kept to its page budget.
    assert peaks["main"] < 600 << 20, peaks
    assert peaks["tree"] < 1500 << 20, peaks


RSS = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>News</title><language>en-us</language>
<item><title>One</title><link>/a/one.html</link><pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate></item>
<item><title>Two</title><link>http://x.test/two.html</link><pubDate>Tue, 03 Nov 2099 10:00:00 GMT</pubDate></item>
<item><title>One again</title><link>/a/one.html</link></item>
</channel></rss>"""
ATOM = b"""<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://x.test/blog/">
<title>Blog</title><entry><title>E1</title><link href="e1.html"/><updated>2026-11-01T12:00:00Z</updated></entry></feed>"""
RDF = b"""<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel rdf:about="http://x.test/">
<title>R</title><link>http://x.test/</link></channel><item rdf:about="http://x.test/r1.html"><title>R1</title>
<link>http://x.test/r1.html</link><dc:date>2026-10-01T00:00:00Z</dc:date></item></rdf:RDF>"""


def test_rss_atom_and_rdf_feeds_give_their_entries_links_and_dates():
    from crawlproj.content.feeds import read_feed

    now = 1795000000.0  # 2026-11-18
    rss = read_feed(RSS, "http://x.test/feed.xml", now=now)
    assert (rss.format, rss.title, rss.language, rss.pages) == ("rss20", "News", "en", 3)
    # relative links resolved against the feed, one entry a link, a date from the future dropped
    assert [(e.loc, e.lastmod) for e in rss.entries] == [("http://x.test/a/one.html", 1793613600.0),
                                                         ("http://x.test/two.html", None)]
    atom = read_feed(ATOM, "http://x.test/feed.atom", now=now)
    assert atom.format == "atom10" and [(e.loc, e.lastmod) for e in atom.entries] == [
        ("http://x.test/blog/e1.html", 1793534400.0)]  # xml:base
    rdf = read_feed(RDF, "http://x.test/index.rdf", now=now)
    assert rdf.format == "rss10" and rdf.links == ["http://x.test/r1.html"] and rdf.entries[0].lastmod == 1790812800.0
    assert read_feed(b"<html><body>no feed</body></html>", "http://x.test/").outcome == "feed_malformed"
    cut = read_feed(RSS, "http://x.test/feed.xml", max_entries=1, now=now)
    assert cut.outcome == "over_budget/feed_entries" and len(cut.entries) == 1


def test_a_feed_dated_by_the_server_s_clock_gives_no_dates():
    from crawlproj.content.feeds import read_feed
    from sandbox.graph import SandboxConfig, SandboxWeb

    web = SandboxWeb(SandboxConfig(hosts=4, documents=True, robots_mix=False))
    body, headers = web.document_file(3, "/feed.atom", now=1795000000.0)
    lying = read_feed(body, "http://h3.sandbox.test/feed.atom", headers["Content-Type"], now=1795000000.5)
    assert lying.dates_ignored and len(lying.entries) == web.size(3) and all(e.lastmod is None for e in lying.entries)
    body, headers = web.document_file(2, "/feed.xml")
    honest = read_feed(body, "http://h2.sandbox.test/feed.xml", headers["Content-Type"])
    assert not honest.dates_ignored and {e.loc: e.lastmod for e in honest.entries} == web.sitemap_lastmods(2)


def test_a_sandbox_crawl_reads_feeds_and_pdfs_and_follows_their_links(sandbox_factory, tmp_path, real):
    from sandbox.harness import crawl_sandbox

    sandbox = sandbox_factory("--hosts", "10", "--pages", "8", "--documents", "--no-robots-mix", "--no-japanese",
                              "--cross-host", "0")
    conn, result = crawl_sandbox(sandbox, tmp_path, MIN_INTERVAL=0, RENDER_MODE="never")
    web = sandbox.web
    fetched = {(r.host, r.path) for r in sandbox.records() if r.status == 200}
    for host in web.hosts:  # every feed and PDF the root pages link, as the server saw it
        assert {(web.host_name(host), path) for path in web.document_paths(host)} <= fetched, host
    assert (web.host_name(1), "/from-pdf.html") in fetched  # only the hand-made PDF links it
    kinds = dict(conn.execute("SELECT url, kind FROM documents"))
    assert sum(k == "pdf" for k in kinds.values()) == 4 and sum(k == "feed" for k in kinds.values()) == 2
    # The honest feed's dates reach the store as its pages' change evidence; the lying one's do not.
    dated = dict(conn.execute("SELECT url, lastmod FROM sitemap_urls WHERE sitemap LIKE '%/feed.xml'"))
    assert dated == web.sitemap_lastmods(2)
    assert conn.execute("SELECT COUNT(*) FROM sitemap_urls WHERE sitemap LIKE '%/feed.atom' AND lastmod IS NOT NULL"
                        ).fetchone()[0] == 0
    assert result.stats["crawlproj/documents/feed_dates_ignored"] == 1
    assert result.stats["crawlproj/content_types/pdf"] == 4 and result.stats["crawlproj/content_types/feed"] == 2
    # The report counts pages by what they are.
    from crawlproj.report.analysis import analyse

    figures = analyse(str(tmp_path / "crawl.db"))
    assert figures["by_content_type"]["pdf"] == 4 and figures["by_content_type"]["feed"] == 2
    assert {(d["kind"], d["outcome"]) for d in figures["documents"]} >= {("pdf", "read"), ("feed", "read")}


def test_a_due_feed_goes_to_the_top_of_the_frontier_before_its_host_s_pages(tmp_path):
    """The refresher hands a due feed to the engine at priority 1 (the frontier's top level),
    its host's other due pages at 0: the host is checked through its feed first."""
    import scrapy
    from scrapy.utils.test import get_crawler

    from crawlproj.revisit.estimator import PageHistory
    from crawlproj.revisit.queue import RevisitQueue
    from crawlproj.revisit.refresher import Refresher
    from crawlproj.revisit.state import UrlState

    queue = RevisitQueue(str(tmp_path / "revisit.db"))
    for url, kind in (("http://a.test/feed.xml", "feed"), ("http://a.test/page.html", "")):
        queue.put(UrlState(url, "a.test", PageHistory(0.0, 0.0), 3600.0, 1.0, "first", kind=kind))
    queue.commit()
    assert queue.get("http://a.test/feed.xml").kind == "feed"  # stored and read back

    class Spider(scrapy.Spider):
        name = "s"

        def request(self, url, **kwargs):
            return scrapy.Request(url, **kwargs)

    crawled = []
    import settings as defaults  # the project: its defaults and profiles

    crawler = get_crawler(Spider, {**{k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}, "PROFILE": "sandbox"})
    crawler.engine = type("Engine", (), {"crawl": staticmethod(crawled.append)})()
    refresher = Refresher(crawler)
    refresher.queue, refresher.spider = queue, Spider()
    refresher._refill(10.0)
    refresher._release(10.0)
    assert {r.url: r.priority for r in crawled} == {"http://a.test/feed.xml": 1, "http://a.test/page.html": 0}
