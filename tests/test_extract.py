from crawlproj.content.extract import ExtractedLink, iter_links, robots_directives, title_and_text
from crawlproj.content.page import ParsedPage
from crawlproj.urls import InvalidURL

PAGE = """<html><head><title> A  title </title>
<base href="http://h.test/base/dir/">
<link rel="next" href="page2.html"><link rel="stylesheet" href="s.css">
<link rel="alternate" hreflang="ja" href="/ja/">
<meta name="ROBOTS" content="NoIndex">
</head><body>
<a href="a.html">Anchor <b>text</b></a>
<a href="/b.html" rel="nofollow noopener">B</a>
<a href="javascript:void(0)">js</a>
<a href="http://other.test/x#frag">other</a>
<map><area href="c.html" alt="area alt"></map>
<script>var a = "<a href='no.html'>";</script>
<p>Body text</p>
</body></html>"""


def test_links_follow_base_href_and_keep_anchor_text():
    found = list(iter_links(ParsedPage(PAGE), "http://h.test/page.html"))
    links = [f for f in found if isinstance(f, ExtractedLink)]
    refused = [f for f in found if isinstance(f, InvalidURL)]
    assert [(l.url, l.anchor, l.nofollow, l.kind) for l in links] == [
        ("http://h.test/base/dir/page2.html", "", False, "link"),
        ("http://h.test/ja/", "", False, "link"),
        ("http://h.test/base/dir/a.html", "Anchor text", False, "a"),
        ("http://h.test/b.html", "B", True, "a"),
        ("http://other.test/x", "other", False, "a"),
        ("http://h.test/base/dir/c.html", "area alt", False, "area"),
    ]
    assert [r.reason for r in refused] == ["scheme"]


def test_meta_robots_directives_are_case_insensitive_and_agent_specific():
    sel = ParsedPage(PAGE)
    assert robots_directives(sel) == {"noindex"}
    sel = ParsedPage('<meta name="crawlproj" content="nofollow"><meta name="otherbot" content="noindex">')
    assert robots_directives(sel) == {"nofollow"}
    assert robots_directives(ParsedPage('<meta name="robots" content="none">')) == {"none", "noindex", "nofollow"}


def test_x_robots_tag_reads_like_the_meta_tag_for_this_crawler_only():
    from crawlproj.content.robots_directives import header_directives

    now = 1_780_000_000.0  # 2026-05-28
    read = lambda *values: header_directives(values, "crawlproj", now)  # noqa: E731
    assert read("noindex, nofollow") == {"noindex", "nofollow"}
    assert read("googlebot: noindex", "CrawlProj: nofollow") == {"nofollow"}  # several headers, named or not
    assert read("otherbot: none") == set() and read("none") == {"none", "noindex", "nofollow"}
    # unavailable_after: noindex once the date has passed, in any of the dates sites write.
    assert read("unavailable_after: Friday, 25-Jun-10 15:00:00 GMT, noarchive") == {"noindex", "noarchive"}
    assert read("unavailable_after: 25 Jun 2010 15:00:00 PST") == {"noindex"}
    assert read("unavailable_after: 2099-01-01T00:00:00Z") == set()
    assert read("unavailable_after: not a date") == set()
    assert read("max-snippet: 20, noindex") == {"max-snippet", "noindex"}  # a valued directive is no crawler name
    page = ParsedPage('<meta name="robots" content="unavailable_after: 2010-06-25, follow">')
    assert page.robots_directives("crawlproj", now) == {"noindex", "follow"}


def test_title_and_text_skip_scripts():
    title, text = title_and_text(ParsedPage(PAGE))
    assert title == "A title"
    assert "Body text" in text and "no.html" not in text


def test_malformed_html_still_yields_links():
    broken = "<html><body><a href='/x'>unclosed <div><a href=/y>y</a></p></td><a href='http://[bad/'>z"
    found = list(iter_links(ParsedPage(broken), "http://h.test/"))
    urls = {f.url for f in found if isinstance(f, ExtractedLink)}
    assert {"http://h.test/x", "http://h.test/y"} <= urls
    assert any(isinstance(f, InvalidURL) for f in found)


def test_main_text_survives_bad_input():
    from crawlproj.content.main_text import main_text

    assert main_text(b"") == ""
    assert "broken" in main_text(b"<html><body><div><p>broken <b>markup<i></div></span>", "utf-8")
    assert isinstance(main_text(bytes(range(256)) * 40, "utf-8"), str)  # binary served as HTML
    assert "x" in main_text(b"<p>x</p>", "no-such-charset")  # falls back to detection
    sjis = "<html><head><title>表題</title></head><body><p>日本語の本文です</p></body></html>".encode("shift_jis")
    assert "日本語の本文です" in main_text(sjis, "shift_jis") and main_text(sjis, "shift_jis").startswith("表題")


def test_a_body_cut_at_the_size_limit_is_named_too_large():
    from scrapy.exceptions import DownloadCancelledError
    from twisted.internet.defer import CancelledError
    from twisted.python.failure import Failure

    from crawlproj.fetch_errors import error_kind as _error_kind

    announced = DownloadCancelledError("Expected to receive 20000000 bytes which is larger than download max size "
                                       "(16777216) in request <GET http://h.test/big>.")
    for exc in (announced, DownloadCancelledError(), CancelledError()):  # announced, and cut mid-stream
        assert _error_kind(Failure(exc)) == "too_large", exc
    assert _error_kind(Failure(TimeoutError())) == "timeout"


def test_render_timeouts_are_named_so_not_too_large():
    from playwright.async_api import TimeoutError as PlaywrightTimeout
    from twisted.python.failure import Failure

    from crawlproj.rendering.handler import RenderTimeout
    from crawlproj.fetch_errors import error_kind as _error_kind

    assert _error_kind(Failure(PlaywrightTimeout("Timeout 30000ms exceeded."))) == "render_timeout"
    assert _error_kind(Failure(RenderTimeout("rendering http://h.test/ took over 30 s"))) == "render_timeout"


def test_links_resolved_where_the_page_was_parsed_are_handed_out_for_that_url_only():
    from crawlproj.content.extract import page_links, resolve_links
    from crawlproj.content.page import ParsedPage
    from crawlproj.urls import canonicalizer_for

    page = ParsedPage('<a href="x.html#top">x</a><a href="http://-bad-.test/">bad</a>')
    resolve_links(page, "http://a.test/d/", canonicalizer_for())
    links = page_links(page, "http://a.test/d/", canonicalizer_for())
    assert links is page.resolved_links[1]  # not canonicalised again
    assert [getattr(f, "url", None) for f in links] == ["http://a.test/d/x.html", "http://-bad-.test/"]
    assert [f.url for f in page_links(page, "http://b.test/e/", canonicalizer_for())][0] == "http://b.test/e/x.html"


def test_a_link_farm_pages_further_links_are_left_to_the_spider_in_order():
    from crawlproj.content.extract import iter_links, page_links, resolve_links
    from crawlproj.content.page import ParsedPage
    from crawlproj.urls import canonicalizer_for

    page = ParsedPage("".join(f'<a href="http://h{n}.farm.test/">{n}</a>' for n in range(30)))
    resolve_links(page, "http://farm.test/", canonicalizer_for(), most=10)
    assert len(page.resolved_links[1]) == 10
    handed = [f.url for f in page_links(page, "http://farm.test/", canonicalizer_for())]
    assert handed == [f.url for f in iter_links(page, "http://farm.test/", canonicalizer_for())]
    assert handed[0] == "http://h0.farm.test/" and handed[-1] == "http://h29.farm.test/" and len(handed) == 30
