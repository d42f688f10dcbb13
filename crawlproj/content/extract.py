"""Extraction from a fetched HTML page: links with anchor text, robots directives, title, text.

Works on a :class:`~crawlproj.content.page.ParsedPage` (one parse per page, shared
by every reader) and the page's URL, so it is testable without a crawl. URLs come
out canonical (:class:`crawlproj.urls.LinkCanonicalizer`); the ones the
canonicaliser refuses come back with their reason so the caller can count them.
:func:`parsed_page` is the one Scrapy-facing helper: it parses a response once and
hands every later caller the same parse.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain, islice
from weakref import WeakKeyDictionary

from selectolax.lexbor import LexborHTMLParser

from ..urls import InvalidURL, LinkCanonicalizer, canonicalizer_for
from .budget import PageBudget
from .page import INVISIBLE, ExtractedLink, ParsedPage, clean

_parsed: WeakKeyDictionary = WeakKeyDictionary()  # response -> its ParsedPage, while it lives


def is_html(content_type: str | bytes | None) -> bool:
    """Whether a Content-Type names HTML; a response without one is taken as HTML."""
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    return not content_type or "html" in content_type.lower()


def page_budget(settings) -> PageBudget:  # noqa: ANN001 - Scrapy settings
    """The :class:`PageBudget` of ``PAGE_MAX_DEPTH``, ``PAGE_MAX_ELEMENTS``, ``MAIN_TEXT_MAX_DEPTH``
    and ``MAX_LINKS_PER_PAGE``."""
    d = PageBudget()  # its defaults are the settings' (for settings made without the project's)
    return PageBudget(max_depth=settings.getint("PAGE_MAX_DEPTH", d.max_depth),
                      max_elements=settings.getint("PAGE_MAX_ELEMENTS", d.max_elements),
                      main_text_max_depth=settings.getint("MAIN_TEXT_MAX_DEPTH", d.main_text_max_depth),
                      max_links=settings.getint("MAX_LINKS_PER_PAGE", d.max_links),
                      requisites=settings.getbool("REQUISITES_ENABLED", d.requisites))


def link_canonicalizer(settings) -> LinkCanonicalizer:  # noqa: ANN001 - Scrapy settings
    """The process's :class:`LinkCanonicalizer` of ``SESSION_ID_PARAMS`` and ``URL_MAX_LENGTH``."""
    return canonicalizer_for(tuple(settings.getlist("SESSION_ID_PARAMS")), settings.getint("URL_MAX_LENGTH"))


def parsed_page(response, budget: PageBudget | None = None) -> ParsedPage:  # noqa: ANN001 - a TextResponse
    """The response's text parsed once, within ``budget``: the render decision, the spider and
    the pipelines share it."""
    page = _parsed.get(response)
    if page is None:
        page = _parsed[response] = ParsedPage(response.text, budget or PageBudget())
    return page


def adopt_parsed_page(response, page: ParsedPage) -> None:  # noqa: ANN001 - a TextResponse
    """Make ``page`` (parsed elsewhere, as in a page thread) the response's one parse."""
    _parsed[response] = page


def base_url(page: ParsedPage, page_url: str, canonical: LinkCanonicalizer) -> str:
    """The URL relative links resolve against: <base href> if present and valid."""
    href = page.base_href
    if href:
        try:
            return canonical(href, page_url)
        except InvalidURL:
            pass
    return page_url


def robots_directives(page: ParsedPage, agent: str = "crawlproj") -> set[str]:
    """Directives of <meta name=robots> and <meta name=AGENT> (lower case)."""
    return page.robots_directives(agent)


def iter_links(page: ParsedPage, page_url: str, canonical: LinkCanonicalizer | None = None, start: int = 0,
               ) -> Iterator[ExtractedLink | InvalidURL]:
    """Every link of the page (from its ``start``-th): <a href>, <area href>, <link rel=next|alternate href>."""
    canonical = canonical or LinkCanonicalizer()
    base = base_url(page, page_url, canonical)
    for link in islice(page.links, start, None):
        try:
            url = canonical(link.url, base)
        except InvalidURL as exc:
            yield exc
            continue
        yield ExtractedLink(url, link.anchor, link.nofollow, link.kind)


#: Links canonicalised where the page is parsed; a page's further ones (a link farm's thousands)
#: are left to the spider, which stops between them when the crawl closes.
RESOLVED_LINKS = 500


def resolve_links(page: ParsedPage, page_url: str, canonical: LinkCanonicalizer, most: int = RESOLVED_LINKS) -> None:
    """Canonicalise the page's first ``most`` links now (in a page thread: a tenth of the
    reactor's time in a polite crawl went to it) for :func:`page_links` to hand out."""
    page.resolved_links = (page_url, list(islice(iter_links(page, page_url, canonical), most)))


def page_links(page: ParsedPage, page_url: str, canonical: LinkCanonicalizer) -> Iterable[ExtractedLink | InvalidURL]:
    """:func:`iter_links`, beginning with what :func:`resolve_links` found for this URL already."""
    resolved = page.resolved_links
    if resolved is None or resolved[0] != page_url:
        return iter_links(page, page_url, canonical)
    if len(resolved[1]) == len(page.links):
        return resolved[1]
    return chain(resolved[1], iter_links(page, page_url, canonical, len(resolved[1])))


def page_title(page: ParsedPage) -> str | None:
    return page.title


def title_and_text(page: ParsedPage) -> tuple[str | None, str]:
    """The page title and its visible body text (scripts, styles and the like left out).
    Parses a copy of the page, since leaving elements out changes the tree."""
    copy = LexborHTMLParser(page.html)
    copy.strip_tags(list(INVISIBLE))
    body = copy.body
    return page.title, clean(body.text(deep=True, separator=" ")) if body is not None else ""
