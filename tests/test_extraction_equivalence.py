"""The one-parse extraction (lexbor) stores what the old parsel extraction stored.

Links (canonical URL, anchor text, nofollow, in page order, and refusal reasons),
titles and meta-robots decisions are compared on every page of a sandbox web with
every page family on, and on real pages from Debian documentation packages.
Anchors and titles are compared with whitespace folded, as both extractions store
them. Main text is not compared: it comes from the same resiliparse call as before.

One difference is deliberate: an ``<a>`` nested in another ``<a>`` (PostgreSQL's
glossary links). lxml kept both anchors with the inner text; lexbor builds the tree
as the HTML standard, and a browser, do: the inner ``<a>`` closes the outer one,
which is left empty. Same URLs, same order; the outer anchor's text is now "".
"""

from __future__ import annotations

import pytest
from parsel import Selector
from w3lib.encoding import html_to_unicode

from crawlproj.content.extract import ExtractedLink, iter_links
from crawlproj.content.page import ParsedPage
from sandbox.docsites import TEST_SITES, ensure_installed, html_files
from sandbox.graph import SandboxConfig, SandboxWeb
from crawlproj.urls import LinkCanonicalizer

from . import reference_extract as old

pytestmark = pytest.mark.slow


def new_links(page: ParsedPage, url: str, canonical: LinkCanonicalizer) -> list:
    return [(f.url, f.anchor, f.nofollow) if isinstance(f, ExtractedLink) else f.reason
            for f in iter_links(page, url, canonical)]


def nested_anchor(want, got, after: list) -> bool:
    """``got`` is the emptied outer anchor of a nested pair: same URL, no text, and the link
    right after it is the inner anchor with the text the old extraction gave both."""
    return (isinstance(want, tuple) and isinstance(got, tuple) and want[0] == got[0] and got[1] == ""
            and want[1] != "" and after == [want])


def compare(pages: list[tuple[str, str]]) -> tuple[int, list]:
    """(links compared, differences) over (url, html) pairs; one canonicaliser for all, as in a crawl."""
    canonical = LinkCanonicalizer()
    differences, compared = [], 0
    for url, html in pages:
        sel, page = Selector(text=html, type="html"), ParsedPage(html)  # as response.selector was
        want, got = old.links(sel, url), new_links(page, url, canonical)
        compared += len(want)
        got = [w if nested_anchor(w, g, got[i + 1:i + 2]) else g for i, (w, g) in enumerate(zip(want, got))] + got[len(want):]
        if want != got:
            differences.append((url, "links", [w for w in want if w not in got][:3], [g for g in got if g not in want][:3]))
        if old.page_title(sel) != page.title:
            differences.append((url, "title", old.page_title(sel), page.title))
        for agent in ("crawlproj", "otherbot"):
            if old.robots_directives(sel, agent) != page.robots_directives(agent):
                differences.append((url, "robots", old.robots_directives(sel, agent), page.robots_directives(agent)))
    return compared, differences


def test_same_extraction_on_every_sandbox_page_family():
    web = SandboxWeb(SandboxConfig(hosts=40, pages=15, js_mix=True, content_mix=True))
    pages = []
    for host in web.hosts:
        for k in range(web.size(host)):
            body, _ = web.render(host, k)
            pages.append((web.url(host, k), body.decode(web.specs[host].charset, errors="replace")))
    compared, differences = compare(pages)
    assert len(pages) > 400 and compared > 3000
    assert differences == []


@pytest.mark.parametrize("site", TEST_SITES, ids=lambda s: s.package)
def test_same_extraction_on_real_documentation_pages(site):
    ensure_installed((site,))
    files = html_files(site, 150)
    pages = []
    for path in files:
        _, text = html_to_unicode("text/html", path.read_bytes())  # what Scrapy's TextResponse decodes
        pages.append((f"http://{site.name}/{path.relative_to(site.root)}", text))
    compared, differences = compare(pages)
    assert compared > 20 * len(pages)
    assert differences == []
