"""What a crawl keeps of each page's content for its users (pure data, no I/O).

A :class:`PageContent` is filled in by the content stage for every stored page (HTML,
rendered, PDF or feed) and travels on the item (``PageItem.content``): the store keeps it
(compressed) beside the page's row, feed exports and ``scrapy export`` write it, and the
search index reads its text.

The settings (declared in :mod:`crawlproj.defaults`): ``CONTENT_MARKDOWN`` (Markdown extracted
and kept, or not) and ``CONTENT_MAX_CHARS`` (each of text and Markdown cut to so many
characters; 0: whole) are read by the extraction and applied again by the store and the feeds
(:func:`crawlproj.store.content.kept`), so a page is kept as they say whatever extracted it;
``CONTENT_STORE`` and ``CONTENT_SEARCH`` are the store's (keep the content; index its text).
"""

from __future__ import annotations

from dataclasses import dataclass


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
