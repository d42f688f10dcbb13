"""What a page's content becomes: main text, Markdown and metadata (pure functions, no crawl)."""

import dataclasses
from pathlib import Path

import pytest

from crawlproj.content.budget import PageBudget, depth_bound, nesting
from crawlproj.content.extraction import extract_content, without_unread
from crawlproj.content.metadata import iso_date

ARTICLE = """<!DOCTYPE html><html lang="en-GB"><head>
<title>Rivers of Europe | The Daily Example</title>
<meta name="description" content="A tour of the rivers.">
<meta property="og:title" content="Rivers of Europe">
<meta property="article:published_time" content="2024-03-05T09:30:00+01:00">
<link rel="canonical" href="/news/rivers">
<script type="application/ld+json">{"@context": "https://schema.org", "@graph": [
  {"@type": "WebSite", "name": "The Daily Example"},
  {"@type": "NewsArticle", "headline": "Rivers of Europe", "author": [{"@type": "Person", "name": "Ada Lovelace"}],
   "datePublished": "2024-03-05T09:30:00+01:00", "dateModified": "2024-03-06"}]}</script>
<style>p { color: red }</style></head>
<body>
<header class="site"><a href="/">The Daily Example</a><nav><a href="/world">World</a> <a href="/sport">Sport</a></nav></header>
<main><article>
<h1>Rivers of Europe</h1>
<p class="byline">By Ada Lovelace</p>
<time datetime="2024-03-05">March 5, 2024</time>
<p>The Danube flows through ten countries, more than any other river in the world, and it carries
a long history of trade, war and music along its banks.</p>
<div class="share-buttons"><a href="https://x.test/share">Share on X</a> <a href="https://f.test/s">Facebook</a></div>
<h2>Lengths</h2>
<p>Its length is <strong>2,850 km</strong>, and <em>the Rhine</em> is shorter: see
<a href="/rivers/rhine">the Rhine's page</a> for its figures, which are kept there.</p>
<figure><img src="/img/danube.jpg" alt="The Danube at Budapest"><figcaption>The river at dusk. Photo: A. Person</figcaption></figure>
<table><tr><th>River</th><th>Length</th></tr><tr><td>Danube</td><td>2,850 km</td></tr><tr><td>Rhine</td><td>1,233 km</td></tr></table>
<ul><li>It rises in the Black Forest, at Donaueschingen.</li><li>It ends in the Black Sea, in a wide delta.</li></ul>
<pre><code class="language-python">print("hello, river")
</code></pre>
<dl><dt>Delta</dt><dd>Where a river meets the sea, in many arms.</dd></dl>
<p>Advertisement</p>
<div class="related-articles"><h3>More from us</h3><ul><li><a href="/a">Lakes of Asia</a></li><li><a href="/b">Seas</a></li></ul></div>
</article></main>
<aside class="sidebar"><p>Most read today: a long list of other stories that are not this one at all, none of them.</p></aside>
<footer><p>Copyright 2024 The Daily Example. All rights reserved.</p></footer>
</body></html>"""


def test_the_article_alone_is_the_main_text_in_reading_order():
    content = extract_content(ARTICLE.encode(), "utf-8", "https://news.test/2024/rivers")
    text = content.text
    assert text.startswith("The Danube flows through ten countries")
    for kept in ("Lengths", "2,850 km", "the Rhine's page", "Danube | 2,850 km", "It rises in the Black Forest",
                 'print("hello, river")', "Delta", "Where a river meets the sea"):
        assert kept in text, kept
    for left in ("Rivers of Europe", "By Ada Lovelace", "March 5, 2024", "Share on X", "The river at dusk",
                 "Advertisement", "Lakes of Asia", "Most read today", "Copyright", "World", "color: red"):
        assert left not in text, left
    assert text.index("Lengths") < text.index("Danube | 2,850 km") < text.index("Delta")
    assert content.limited is None


def test_markdown_keeps_the_structure_with_absolute_links():
    md = extract_content(ARTICLE.encode(), "utf-8", "https://news.test/2024/rivers").markdown
    assert md.startswith("# Rivers of Europe\n\n")  # the headline stays in the Markdown
    assert "## Lengths" in md
    assert "**2,850 km**" in md and "*the Rhine*" in md
    assert "[the Rhine's page](https://news.test/rivers/rhine)" in md
    assert "![The Danube at Budapest](https://news.test/img/danube.jpg)" in md
    assert "| River | Length |\n| --- | --- |\n| Danube | 2,850 km |" in md
    assert "- It rises in the Black Forest, at Donaueschingen.\n- It ends in the Black Sea" in md
    assert '```python\nprint("hello, river")\n```' in md
    assert "Delta\n\n:   Where a river meets the sea" in md
    assert "Share on X" not in md and "Lakes of Asia" not in md and "Photo: A. Person" not in md


def test_what_the_page_states_about_itself():
    content = extract_content(ARTICLE.encode(), "utf-8", "https://news.test/2024/rivers")
    assert content.title == "Rivers of Europe"
    assert content.description == "A tour of the rivers."
    assert content.language == "en"
    assert content.canonical_url == "https://news.test/news/rivers"
    assert content.author == "Ada Lovelace"
    assert content.published == "2024-03-05T09:30:00+01:00"
    assert content.modified == "2024-03-06"


def test_metadata_falls_back_through_meta_names_and_time_elements():
    page = b"""<html><head><title>T</title><meta name="author" content="By Grace Hopper">
    <meta name="DC.date.issued" content="2019/11/19"></head><body><p>x</p>
    <article><time datetime="2020-01-02T03:04:05Z">then</time></article></body></html>"""
    content = extract_content(page, "utf-8", "http://h.test/")
    assert content.author == "Grace Hopper" and content.published == "2019-11-19"
    assert extract_content(b"<html><body><article><time datetime='2020-01-02T03:04:05Z'>x</time></article></body></html>",
                           "utf-8").published == "2020-01-02T03:04:05+00:00"
    assert iso_date("Tue, 19 Nov 2019 08:00:00 GMT") == "2019-11-19T08:00:00+00:00"
    assert iso_date("20191119") == "2019-11-19" and iso_date("not a date") is None and iso_date("0001-01-01") is None


def test_markdown_links_are_what_urljoin_makes_of_them():
    from urllib.parse import urljoin

    from crawlproj.content.markdown import Renderer

    hrefs = ["x.html", "../up", "//o.test/p", "http://x.test/", "https://x.test/a;p?q=1#f", "http://x.test/a/./b",
             "http://x.test/a/../b", "http://x.test/?", "http://x.test/#", "http://x.test/a?#", "HTTP://X.test/A",
             "http://x.test/a?q=/./", " http://x.test/sp ", "?q", "#top",
             # plain relative paths (joined without urljoin) and the ones that look plain but are not
             "c.html#s", "d/e.html?x=1", "a//b", "x/..", "x/./y", "...", "c?", "c#", "c?#", "a\tb", "mailto:x@y",
             "q?x=/../y", "é.html", "a b"]
    for base in ("http://h.test/a/b.html", "http://h.test", "http://h.test/a/./b/../c//d.html?x=1/2#f", "about:blank", ""):
        renderer = Renderer(base, lambda node: False)
        for href in hrefs:
            assert renderer._url(href) == urljoin(base, href.strip()), (base, href)


def test_markdown_can_be_left_out_and_text_capped():
    content = extract_content(ARTICLE.encode(), "utf-8", markdown=False, max_chars=120)
    assert content.markdown == "" and len(content.text) <= 120 and content.limited == "max_chars"


def test_a_page_without_an_article_keeps_its_prose_and_drops_link_lists():
    page = b"""<html><body><div id="menu"><ul><li><a href=/1>One</a></li><li><a href=/2>Two</a></li></ul></div>
    <div class="text"><p>Plain words of a small site, written by hand, with no article element at all.</p>
    <p>A second paragraph, which says a little more about the same small subject.</p></div></body></html>"""
    text = extract_content(page, "utf-8").text
    assert "Plain words of a small site" in text and "A second paragraph" in text
    assert "One" not in text


def test_japanese_pages_in_their_own_charsets():
    page = "<html><head><title>川の話</title></head><body><div id=\"main\"><p>日本の川は短く、流れが速い。" \
           "山から海まで一日で下る川もある。</p><p>雨の多い季節には、水量が大きく変わる。</p></div></body></html>"
    for charset in ("shift_jis", "euc-jp", "utf-8"):
        content = extract_content(page.encode(charset), charset)
        assert "日本の川は短く" in content.text and "水量が大きく変わる" in content.text, charset
        assert content.title == "川の話"


def test_scripts_styles_and_comments_are_skipped_before_the_parse_json_ld_kept():
    body = (b'<p>a<!-- x --><script>var s = "</p><p>not text";</script>'
            b'<script type="application/ld+json">{"a": 1}</script><style>p{}</style><p>b<!-- unclosed')
    assert without_unread(body) == (b'<p>a<script></script><script type="application/ld+json">{"a": 1}</script>'
                                    b'<style></style><p>b')


def test_the_depth_bound_is_never_below_the_parsers_depth():
    pages = ["<div><div><p>a</div></div>", "<div>" * 300, "<div></b>" * 500, "<ul>" + "<li>x" * 400 + "</ul>",
             "<!--" + "</div>" * 50 + "-->" + "<div>" * 30, "<script>'<div>'</script><span>x</span>"]
    for page in pages:
        starts, bound = depth_bound(page)
        assert bound >= nesting(page).depth and depth_bound(page.encode()) == (starts, bound), page[:40]
    # exact on pages whose open elements it counts right: any case, void elements, stray end tags
    assert [depth_bound(page) for page in ("<ul>" + "<li>x" * 400 + "</ul>", "<DIV><Div></div><BR><img></DIV><div>",
                                           "</p></p><p><p><br></p>")] == [(401, 401), (5, 2), (3, 2)]
    # a page of many tags whose nesting the bound settles is not walked tag by tag
    wide = "<html><body>" + "<div><p>para <a href=/x>x</a> text</p></div>" * 3000 + "</body></html>"
    assert PageBudget().settled(wide.encode()).cut_reason is None


JAVADOC = "/usr/share/doc/openjdk-17-jre-headless/api"
#: Real pages of six documentation generators where main content once lost code, tables or
#: definitions (each element the page's content area holds is checked as bench/content.py
#: checks it): DocBook's titled table whose id says "subscription", Sphinx's footnotes,
#: Node.js's history tables and short sections beside a long one, Doxygen's code drawn a
#: <div> a line and its member signatures (tables of links), texi2html's definition lists
#: written flat between headings, the Apache manual's lists in table cells, javadoc's
#: summary tables drawn with boxes, its "Since" notes and members spread over many sections.
DOC_PAGES = [
    ("postgresql", "/usr/share/doc/postgresql-doc-15/html", "monitoring-stats.html"),
    ("python", "/usr/share/doc/python3.11/html", "c-api/unicode.html"),
    ("nodejs", "/usr/share/doc/nodejs/api", "http2.html"),
    ("cairomm", "/usr/share/doc/libcairomm-1.16-doc/reference/html", "classCairo_1_1Context.html"),
    ("gettext", "/usr/share/doc/gettext", "gettext_5.html"),
    ("apache", "/usr/share/doc/apache2-doc/manual/en", "server-wide.html"),
    ("javadoc", None, "java.desktop/javax/swing/ButtonGroup.html"),
    ("javadoc", None, "java.base/java/time/temporal/ValueRange.html"),
]


@pytest.mark.parametrize("site_name, root, page", DOC_PAGES, ids=[f"{s}/{p}" for s, _, p in DOC_PAGES])
def test_documentation_pages_keep_their_code_tables_and_definitions(site_name, root, page):
    from sandbox import content_docs, docsites
    from sandbox.content_metric import bag, kept

    if site_name == "javadoc":  # (276 MB installed: two pages are taken out of the package)
        path = docsites.extracted("openjdk-17-doc", f"{JAVADOC}/{page}")
        root = str(path.parent)
        page = path.name
    site = next((s for s in content_docs.SITES if s.name == site_name), None)
    if site is None:  # a Doxygen site the tests' machine has (libstdc++'s reference is the bench's)
        libstdcxx = next(s for s in content_docs.SITES if s.name == "libstdcxx")
        site = dataclasses.replace(libstdcxx, name=site_name)
    site = dataclasses.replace(site, root=root)
    measured = content_docs.measure(site, Path(root, page))
    assert measured is not None and measured.elements
    text = bag(extract_content(measured.path.read_bytes(), measured.charset, url="http://docs.test/").text)
    lost = [element[:80] for kind, element in measured.elements if not kept(element, text)]
    assert not lost, lost


def test_a_summary_table_drawn_with_boxes_keeps_its_linked_names():
    from sandbox import docsites

    path = docsites.extracted("openjdk-17-doc", f"{JAVADOC}/java.desktop/javax/swing/ButtonGroup.html")
    text = extract_content(path.read_bytes(), "utf-8", url="http://docs.test/").text
    # each method is named in the summary table (a box of one link a cell) and again in its details
    for name in ("add(AbstractButton b)", "getButtonCount()", "setSelected(ButtonModel m, boolean b)"):
        assert text.count(name) == 2, name


#: Reference pages whose members are boxes of one kind (Haddock's declarations), a section's
#: blocks beside its description (gi-docgen's declaration and arguments), and sections inside
#: sections (docutils'): the whole document is the content, not its best-scoring part.
MEMBER_PAGES = [
    ("ghc-doc", "/usr/share/doc/ghc-doc/html/libraries/ghc-prim-0.7.0/GHC-Types.html",
     ("data Bool", "data RuntimeRep", "TrNameS", "data Multiplicity")),
    ("libgtk-4-doc", "/usr/share/doc/libgtk-4-doc/gtk4/vfunc.Widget.keynav_failed.html",
     ("gboolean keynav_failed", "Direction of focus movement")),
    (None, "/usr/share/doc/docutils-doc/docs/user/smartquotes.html",
     ("Why You Might Not Want to Use", "Escaping", "Localization", "'Afrikaans' quotes")),
]


@pytest.mark.parametrize("package, path, phrases", MEMBER_PAGES, ids=[p.rsplit("/", 1)[1] for _, p, _ in MEMBER_PAGES])
def test_a_reference_page_is_read_whole(package, path, phrases):
    from sandbox import docsites

    page = docsites.extracted(package, path) if package else Path(path)
    text = " ".join(extract_content(page.read_bytes(), "utf-8", url="http://docs.test/").text.split())
    missing = [phrase for phrase in phrases if phrase not in text]
    assert not missing, missing


def test_content_read_with_the_parses_nesting_is_the_same_and_not_measured_again(monkeypatch):
    """The page-parse stage measures a page's nesting and extracts its content in the same trip:
    a page of many tags is not measured twice, and its content is what a measure of its own gives."""
    from crawlproj.content.page import ParsedPage

    body = ("<html><body><nav>" + "<a href=/n>n</a>" * 300 + "</nav><main>"
            + "<div><p>para, with <a href=x.html>a link</a> and <em>words</em> enough to score.</p></div>" * 1500
            + "</main></body></html>").encode()
    budget = PageBudget()
    assert not budget.quick(body)
    parsed = ParsedPage(body.decode(), budget)
    alone = extract_content(body, "utf-8", "http://h.test/", budget)
    monkeypatch.setattr(PageBudget, "settled", lambda self, body: pytest.fail("measured again"))
    monkeypatch.setattr(PageBudget, "bounded", lambda self, html: pytest.fail("measured again"))
    assert extract_content(body, "utf-8", "http://h.test/", budget, nesting=parsed.nesting) == alone
    assert "a link" in alone.text and "](http://h.test/x.html)" in alone.markdown
    # a nesting that cut the page is not taken for the stripped page's
    cut = dataclasses.replace(parsed.nesting, cut_at=10, cut_reason="depth")
    with pytest.raises(pytest.fail.Exception):
        extract_content(body, "utf-8", "http://h.test/", budget, nesting=cut)
