"""The store's full-text index of page text (SQLite FTS5, ranked by bm25; pure: SQLite and text).

``page_search`` is a contentless FTS5 table: it holds the index only, keyed by the rowid of
the page's ``page_content`` row, whose compressed text is the one copy. SQLite 3.40 has no
``contentless_delete``, so an entry is taken out with FTS5's ``delete`` command and the very
values it went in with, read back from the ``page_content`` row it replaces
(:func:`crawlproj.store.content.replace_row`), in the same transaction.

FTS5's ``unicode61`` tokenizer takes a run of CJK characters for one word (Japanese and
Chinese put no spaces between words), so CJK runs are indexed and searched as overlapping
bigrams (東京都 -> 東京 京都), as Lucene's CJKAnalyzer does: any two or more characters of a run
are found, without word segmentation. Other text goes through ``unicode61`` with diacritics
removed and Porter's English stemmer.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from dataclasses import dataclass, field

from .zstd_text import unpack

SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS page_search USING fts5(
    title, text, content='', tokenize='porter unicode61 remove_diacritics 2');
"""

#: bm25's weights of the title and the text.
WEIGHTS = (4.0, 1.0)

#: Han (with its iteration marks), Hiragana, Katakana (full and half width) and Hangul.
_CJK = ("\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
        "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f")
_CJK_RUN = re.compile(f"[{_CJK}]+")


def _bigrams(match: re.Match) -> str:
    run = match.group()
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "


def index_text(text: str) -> str:
    """``text`` as the index sees it: each CJK run written as its overlapping bigrams."""
    return _CJK_RUN.sub(_bigrams, text) if text else ""


def add(cur: sqlite3.Cursor, rowid: int, title: str | None, text: str) -> None:
    cur.execute("INSERT INTO page_search (rowid, title, text) VALUES (?, ?, ?)",
                (rowid, index_text(title or ""), index_text(text)))


def remove(cur: sqlite3.Cursor, rowid: int, title: str | None, text: str) -> None:
    """Take out the entry :func:`add` made with these same values."""
    cur.execute("INSERT INTO page_search (page_search, rowid, title, text) VALUES ('delete', ?, ?, ?)",
                (rowid, index_text(title or ""), index_text(text)))


# -- queries ---------------------------------------------------------------------------------

_PART = re.compile(r'"([^"]*)"?|(\S+)')
_OPERATORS = ("OR", "AND", "NOT")
_WORD = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class Query:
    """A user's query: FTS5's MATCH expression, and the terms a snippet highlights."""

    expression: str
    terms: tuple[str, ...] = field(default=())


def parse(query: str) -> Query:
    """Words are all required (``OR`` and ``NOT`` between them work as in FTS5), ``"a phrase"``
    keeps its words together and in order, ``word*`` is a prefix. Anything else in the query is
    taken as text, never as FTS5 syntax."""
    parts: list[str] = []
    terms: list[str] = []
    negated = False
    for phrase, word in _PART.findall(query):
        if word in _OPERATORS:
            if parts and parts[-1] not in _OPERATORS:
                parts.append(word)
            negated = word == "NOT"
            continue
        text = phrase if phrase else word
        prefix = bool(word) and word.endswith("*")
        text = text.rstrip("*") if prefix else text
        if not _WORD.search(text):
            continue
        parts.append('"' + index_text(text).strip().replace('"', '""') + '"' + ("*" if prefix else ""))
        if not negated:
            terms.append(text)
        negated = False
    while parts and parts[-1] in _OPERATORS:
        parts.pop()
    return Query(" ".join(parts), tuple(terms))


@dataclass(frozen=True)
class Hit:
    url: str
    title: str | None
    score: float  # bm25: lower is better
    snippet: str
    highlights: tuple[tuple[int, int], ...]  # (start, end) of each term found in the snippet


def search(conn: sqlite3.Connection, query: str, limit: int = 10, duplicates: bool = False) -> list[Hit]:
    """The ``limit`` best pages for ``query``, best first; duplicates of other pages left out
    unless asked for."""

    parsed = parse(query)
    if not parsed.expression:
        return []
    rows = conn.execute(f"""
        SELECT c.url, COALESCE(c.title, p.title), s.score, c.text
        FROM (SELECT rowid, bm25(page_search, {WEIGHTS[0]}, {WEIGHTS[1]}) AS score
              FROM page_search WHERE page_search MATCH ?) s
        JOIN page_content c ON c.rowid = s.rowid
        LEFT JOIN pages p ON p.url = c.url
        {'' if duplicates else 'WHERE c.url NOT IN (SELECT url FROM duplicates)'}
        ORDER BY s.score LIMIT ?""", (parsed.expression, limit)).fetchall()
    hits = []
    for url, title, score, blob in rows:
        text, spans = snippet(unpack(blob), parsed.terms)
        hits.append(Hit(url, title, score, text, spans))
    return hits


def _pattern(terms: tuple[str, ...]) -> re.Pattern | None:
    """Where the terms occur in a text: a CJK term as it is, another word as the beginning of a
    word (its first letters: the index stems, so `crawling` finds `crawled`)."""
    alternatives = []
    for term in terms:
        for word in re.findall(r"[^\W_]+", term):
            if _CJK_RUN.search(word):
                alternatives.append(re.escape(word))
            else:
                stem = word if len(word) <= 4 else word[:max(4, len(word) - 3)]
                alternatives.append(r"\b" + re.escape(stem) + r"\w*")
    if not alternatives:
        return None
    return re.compile("|".join(sorted(alternatives, key=len, reverse=True)), re.IGNORECASE)


#: Latin letters with diacritics, each as its letter (one character for one: positions hold), as
#: the index's remove_diacritics reads them.
_FOLD = {c: base for c in range(0xC0, 0x250) if len(d := unicodedata.normalize("NFD", chr(c))) > 1
         and (base := d[0]).isascii()}
#: How far into a text a snippet is looked for.
SNIPPET_SCAN = 200_000


def snippet(text: str, terms: tuple[str, ...], width: int = 240) -> tuple[str, tuple[tuple[int, int], ...]]:
    """About ``width`` characters of ``text`` around where most of the terms occur (in its first
    :data:`SNIPPET_SCAN` characters), white space collapsed, with the (start, end) of each
    occurrence in it. Diacritics are ignored, as the index ignores them."""
    pattern = _pattern(tuple(t.translate(_FOLD) for t in terms))
    found = list(pattern.finditer(text[:SNIPPET_SCAN].translate(_FOLD))) if pattern else []
    start = 0
    if found:  # the window (from a little before a match) holding the most distinct terms
        words = [m.group().lower() for m in found]
        inside: dict[str, int] = {}
        best, j = 0, 0
        for i, m in enumerate(found):
            left = max(0, m.start() - width // 4)
            while j < len(found) and found[j].end() <= left + width:
                inside[words[j]] = inside.get(words[j], 0) + 1
                j += 1
            if len(inside) > best:
                best, start = len(inside), left
            if j > i:  # this match leaves the next windows
                inside[words[i]] -= 1
                if not inside[words[i]]:
                    del inside[words[i]]
    end = min(len(text), start + width)
    if start > 0:  # whole words at the edges
        space = text.find(" ", start, start + 20)
        start = space + 1 if space != -1 else start
    if end < len(text):
        space = text.rfind(" ", end - 20, end)
        end = space if space != -1 else end
    window = " ".join(text[start:end].split())
    window = ("… " if start > 0 else "") + window + (" …" if end < len(text) else "")
    spans = tuple((m.start(), m.end()) for m in pattern.finditer(window.translate(_FOLD))) if pattern else ()
    return window, spans


def marked(hit: Hit, before: str, after: str) -> str:
    """The hit's snippet with each highlight between ``before`` and ``after``."""
    out, at = [], 0
    for start, end in hit.highlights:
        out += [hit.snippet[at:start], before, hit.snippet[start:end], after]
        at = end
    return "".join(out) + hit.snippet[at:]


def indexed_pages(conn: sqlite3.Connection) -> int:
    """Pages in the index (0 as well for a store from before it)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'page_content'").fetchone():
        return 0
    return conn.execute("SELECT COUNT(*) FROM page_content WHERE indexed = 1").fetchone()[0]


def reindex(conn: sqlite3.Connection, tick=None) -> int:  # noqa: ANN001 - a progress bar's update
    """Build the index anew from every page's stored text, in one transaction (a crawl made with
    CONTENT_SEARCH off, or a store whose index is in doubt); the number of pages indexed."""

    cur = conn.cursor()
    cur.execute("BEGIN")
    try:
        cur.execute("INSERT INTO page_search (page_search) VALUES ('delete-all')")
        n = 0
        for rowid, title, blob in conn.execute("SELECT rowid, title, text FROM page_content"):
            add(cur, rowid, title, unpack(blob))
            n += 1
            if tick is not None:
                tick(1)
        cur.execute("UPDATE page_content SET indexed = 1")
        cur.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return n
