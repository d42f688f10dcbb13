"""What spiders hand to the item pipelines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PageItem:
    """One fetched URL. ``links`` are (target, anchor, nofollow) triples.

    The spider fills in the fetch; the content pipeline fills in ``duplicate_of``
    (the canonical page, for an exact or near duplicate), the archive pipeline
    ``warc_file`` and ``warc_offset``. The store drops ``body`` once written.
    """

    url: str
    final_url: str
    host: str
    status: int
    content_type: str | None
    charset: str | None
    fetched_at: float
    fetch_duration: float | None
    bytes: int
    content_hash: str
    title: str | None
    depth: int
    ip: str | None = None
    text_length: int | None = None  # characters of main text, set by the content pipeline
    links: list[tuple[str, str, bool]] = field(default_factory=list)
    body: bytes = b""
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    duplicate_of: str | None = None
    duplicate_kind: str | None = None  # "exact" | "near"
    jaccard: float | None = None  # estimated, against duplicate_of
    warc_file: str | None = None
    warc_offset: int | None = None
    rendered: bool = False  # the body is the DOM after scripts ran in the browser
    text_hash: str | None = None  # hash of the normalised main text, set by the content pipeline
    not_modified: bool = False  # a revisit answered 304: the stored capture is still current
    ai_signals: dict[str, str] = field(default_factory=dict)  # what the publisher says of AI use (ai_signal_rules)
    language: str | None = None  # the language the page declares (markup, else Content-Language), primary subtag; "" none
    # A document that is not HTML, as read (crawlproj.content.pdf.PdfDocument: kind, pages, text,
    # author, outcome); the store keeps it in its documents table.
    document: Any = None
    # What users keep of the page (PageContent: main text, Markdown,
    # description, dates...), set by the content stage; None when it was not extracted.
    content: PageContent | None = None
    # What this capture changed from the last (crawlproj.store.changes.ChangeRecord), set by the
    # change pipeline on a revisit that found new content; the store writes it with the page.
    change: Any = None
    # A watched page's watched content (crawlproj.store.changes.WatchSnapshot), kept by the store
    # for its next comparison.
    watch_snapshot: Any = None


@dataclass
class PageContent:
    """A page's main text and Markdown, and what the page states about itself.

    ``text`` is the main content as plain text, blocks separated by a blank line (the page's
    title is a field of its own and is not repeated there). ``markdown`` renders the same
    content as Markdown (headings, lists, tables, code blocks, emphasis, absolute links,
    image alt text); empty when ``CONTENT_MARKDOWN`` is off. Dates are ISO 8601 as the page
    states them (a date, or a date and time with its offset). ``limited`` says why the text is
    less than the page's when it is (a page budget, ``CONTENT_MAX_CHARS``), else None."""

    text: str = ""
    markdown: str = ""
    title: str | None = None
    description: str | None = None
    language: str | None = None  # as the page states it (og:locale, JSON-LD inLanguage), primary subtag
    canonical_url: str | None = None  # absolute
    author: str | None = None
    published: str | None = None
    modified: str | None = None
    limited: str | None = None

    # How each content setting applies (CONTENT_MARKDOWN and CONTENT_MAX_CHARS are read by the
    # extraction and applied again by the store and the feeds, crawlproj.store.content.kept;
    # CONTENT_STORE and CONTENT_SEARCH are the store's): docs/exporting.md.


@dataclass
class RequisiteItem:
    """A page requisite fetched (a stylesheet, script, image, font...: what a browser needs to
    show a page). Archived (a response, or a revisit record when its payload was archived
    before), never stored or read as a page; the store reports its URL completed."""

    url: str  # as fetched, after redirects
    requested_url: str  # as the page named it
    kind: str  # crawlproj.content.requisites.KINDS
    status: int
    body: bytes
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    warc_file: str | None = None
    warc_offset: int | None = None
    requested: bool = True  # a request of the crawl's (completed on commit); False: a render's own load


@dataclass
class FetchError:
    """A URL that could not be fetched: DNS, connection, timeout, size, ..."""

    url: str
    host: str
    kind: str
    message: str
    depth: int
    at: float


@dataclass
class Skipped:
    """A URL visited on purpose without a page to store (``noindex``, forbidden by robots.txt).

    The store records nothing for it but still reports it completed on commit, so a
    resumed crawl does not visit it again.
    """

    url: str
    reason: str


@dataclass
class SitemapUrls:
    """The URL entries of one sitemap file, in scope or not, canonical.

    ``entries`` are :class:`crawlproj.content.sitemaps.SitemapEntry` with canonical ``loc``.
    The store records each URL's ``lastmod``, ``changefreq`` and ``priority``; the revisit
    pipeline takes ``lastmod`` as change evidence.
    """

    sitemap: str
    entries: list = field(default_factory=list)
    at: float = 0.0
