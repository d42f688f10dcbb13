"""What the store keeps of each page's content: the ``page_content`` table (pure: SQLite and zstd).

A page's :class:`~crawlproj.items.PageContent` (set by the content stage) is
kept beside its ``pages`` row, in the same transaction: what the page says of itself in
columns, its main text and Markdown as zstd-compressed UTF-8 (``text``, ``markdown``), their
lengths in characters. :class:`ContentPolicy` says what is kept (``CONTENT_STORE``,
``CONTENT_MARKDOWN``, ``CONTENT_MAX_CHARS``) and whether the page enters the search index
(``CONTENT_SEARCH``, :mod:`crawlproj.store.search`). A page stored again replaces its row and
its index entry; a page stored again without content loses both.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace
from typing import Any

from ..items import PageContent
from .search import add as index_page, remove as unindex_page
from .zstd_text import pack, unpack

SCHEMA = """
CREATE TABLE IF NOT EXISTS page_content (     -- each stored page's content (crawlproj.items.PageContent)
    url TEXT PRIMARY KEY,
    title TEXT,                  -- as the content stage read it (the page's <title>, og:title, a PDF's)
    description TEXT,
    language TEXT,               -- as the page states it (og:locale, JSON-LD inLanguage), primary subtag
    canonical_url TEXT,
    author TEXT,
    published TEXT,              -- ISO 8601, as the page states it
    modified TEXT,
    limited TEXT,                -- why the text is less than the page's (max_chars, a page budget...); NULL: whole
    text_chars INTEGER NOT NULL,
    markdown_chars INTEGER NOT NULL,  -- 0: none kept (CONTENT_MARKDOWN off, or no content)
    text BLOB NOT NULL,          -- the main text, zstd-compressed UTF-8
    markdown BLOB,               -- the same as Markdown, zstd-compressed UTF-8; NULL: none kept
    indexed INTEGER NOT NULL DEFAULT 0  -- 1: in the search index (page_search), under this row's rowid
);
"""

#: The columns of a page_content row a reader gets back as they are (with text and markdown unpacked).
META_COLUMNS = ("title", "description", "language", "canonical_url", "author", "published", "modified", "limited")

@dataclass(frozen=True)
class ContentPolicy:
    """What the store keeps of a page's content (the settings of the same names)."""

    store: bool = True  # CONTENT_STORE: keep text, Markdown and what the page says of itself
    markdown: bool = True  # CONTENT_MARKDOWN: keep the Markdown too
    max_chars: int = 0  # CONTENT_MAX_CHARS: each of text and Markdown cut to this many characters; 0: whole
    search: bool = True  # CONTENT_SEARCH: index the text for `scrapy search` (needs store)

    @classmethod
    def from_settings(cls, settings: Any) -> ContentPolicy:
        return cls(settings.getbool("CONTENT_STORE"), settings.getbool("CONTENT_MARKDOWN"),
                   settings.getint("CONTENT_MAX_CHARS"), settings.getbool("CONTENT_SEARCH"))


def kept(content: PageContent | None, policy: ContentPolicy) -> PageContent | None:
    """``content`` as the policy keeps it: Markdown dropped when off, text and Markdown cut to
    ``max_chars`` (``limited`` then says so, unless it already said why). Also what feeds export."""
    if content is None:
        return None
    text, markdown, limited = content.text or "", (content.markdown or "") if policy.markdown else "", content.limited
    if policy.max_chars and (len(text) > policy.max_chars or len(markdown) > policy.max_chars):
        text, markdown = text[:policy.max_chars], markdown[:policy.max_chars]
        limited = limited or "max_chars"
    if (text, markdown, limited) == (content.text, content.markdown, content.limited):
        return content
    return replace(content, text=text, markdown=markdown, limited=limited)


#: The columns of a row as :func:`replace_row` takes it, in order (text and markdown packed).
ROW_COLUMNS = (*META_COLUMNS, "text_chars", "markdown_chars", "text", "markdown")


def put(cur: sqlite3.Cursor, url: str, content: PageContent | None, policy: ContentPolicy) -> None:
    """Replace ``url``'s content row and search entry with ``content`` as ``policy`` keeps it
    (none kept: both go). Runs in the caller's transaction."""
    content = kept(content, policy) if policy.store else None
    if content is None:
        replace_row(cur, url, None, None)
        return
    values = (content.title, content.description, content.language, content.canonical_url, content.author,
              content.published, content.modified, content.limited, len(content.text), len(content.markdown),
              pack(content.text), pack(content.markdown) if content.markdown else None)
    replace_row(cur, url, values, content.text if policy.search else None)


def replace_row(cur: sqlite3.Cursor, url: str, values: tuple | None, indexed_text: str | None) -> None:
    """Replace ``url``'s content row with ``values`` (:data:`ROW_COLUMNS`; None: no row) and its
    search entry with ``indexed_text`` (None: not indexed). The index is contentless, so the old
    entry is taken out with the very title and text it went in with, read back from the old row."""
    old = cur.execute("SELECT rowid, title, text, indexed FROM page_content WHERE url = ?", (url,)).fetchone()
    if old is not None and old[3]:
        unindex_page(cur, old[0], old[1], unpack(old[2]))
    if values is None:
        if old is not None:
            cur.execute("DELETE FROM page_content WHERE rowid = ?", (old[0],))
        return
    indexed = int(indexed_text is not None)
    if old is None:
        cur.execute(f"INSERT INTO page_content (url, {', '.join(ROW_COLUMNS)}, indexed) "
                    f"VALUES ({', '.join('?' * (len(ROW_COLUMNS) + 2))})", (url, *values, indexed))
        rowid = cur.lastrowid
    else:  # the rowid stays: it is the page's key in the search index
        rowid = old[0]
        cur.execute(f"UPDATE page_content SET {', '.join(f'{c} = ?' for c in ROW_COLUMNS)}, indexed = ? "
                    "WHERE rowid = ?", (*values, indexed, rowid))
    if indexed_text is not None:
        index_page(cur, rowid, values[0], indexed_text)


def read(conn: sqlite3.Connection, url: str) -> PageContent | None:
    """The content the store keeps for ``url`` (None: none)."""
    row = conn.execute(f"SELECT {', '.join(META_COLUMNS)}, text, markdown FROM page_content WHERE url = ?",
                       (url,)).fetchone()
    return None if row is None else from_row(row)


def from_row(row: tuple) -> PageContent:
    """A PageContent from the columns META_COLUMNS, text, markdown of a page_content row."""
    meta = dict(zip(META_COLUMNS, row[:len(META_COLUMNS)]))
    return PageContent(text=unpack(row[-2]), markdown=unpack(row[-1]), **meta)
