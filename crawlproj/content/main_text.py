"""Main-text extraction: the article of a page without the layout around it.

Near-duplicate detection compares main text only, so boilerplate that every
page of a site shares (header, navigation, sidebar, footer) cannot make two
pages look alike, and two sites built on one template stay different content.

Resiliparse's main-content extractor was chosen by ``bench/extractors.py``: on
the sandbox's template families (semantic HTML5 layouts and Japanese
``<div>`` soup) it recovered the main text exactly, at about 13 times the speed
of trafilatura; a tag-only rule with selectolax was faster still but kept the
boilerplate of ``<div>``-soup layouts.
"""

from __future__ import annotations

from dataclasses import dataclass

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str
from resiliparse.parse.html import HTMLTree
from selectolax.lexbor import LexborHTMLParser

from .budget import PageBudget
from .page import INVISIBLE, clean

DEFAULT_BUDGET = PageBudget()


def decode(body: bytes, charset: str | None) -> str:
    """The body as text in its declared charset; undecodable bytes become U+FFFD, never an error."""
    if charset:
        try:
            return body.decode(charset, errors="replace")
        except LookupError:  # a charset Python does not know
            pass
    return bytes_to_str(body)


@dataclass(frozen=True)
class MainText:
    """A page's main text, and why it is less than that when it is (None: it is the main text).

    ``limited`` is ``depth`` or ``elements`` when the page passed that bound (its text was read
    up to there), ``main_content_depth`` when it nests too deep for main-content scoring
    and all of its visible text was taken (linear time) instead, or ``reader_text`` when a
    rendered page's main content fell short of what a reader sees and that was taken."""

    text: str
    limited: str | None = None


#: What a reader leaves aside on a page: its navigation, banners and footers (by element and by ARIA role).
NAVIGATION = "nav, header, footer, aside, [role=navigation], [role=banner], [role=contentinfo]"
#: A rendered page keeps its main content's text only while that is at least this share of what
#: a reader sees (:func:`reader_text`); below, it keeps the reader's text.
READER_MIN_SHARE = 0.7


def reader_text(html: str) -> str:
    """The text a reader sees: the body's text without scripts, styles and the like, and without
    :data:`NAVIGATION`; whitespace folded."""
    tree = LexborHTMLParser(html)
    for node in tree.css(", ".join((*INVISIBLE, NAVIGATION))):
        node.decompose()
    body = tree.body
    return clean(body.text(deep=True, separator=" ")) if body is not None else ""


def extract_main_text(body: bytes, charset: str | None = None, budget: PageBudget = DEFAULT_BUDGET,
                      rendered: bool = False) -> MainText:
    """The page's main content as plain text (title and headings included, layout left out),
    within ``budget``.

    A ``rendered`` page (an app's DOM after its scripts ran) is often ``<div>``s to the last
    element, where main-content scoring can drop most of what the app shows: Swagger UI's
    operations, 72% of its text. Its main text is then the reader's text, when the main
    content's is under :data:`READER_MIN_SHARE` of it."""
    html, found = budget.bounded(decode(body, charset))
    scored = budget.main_content_ok(found)
    tree = HTMLTree.parse(html)
    title = tree.title or ""
    text = extract_plain_text(tree, main_content=scored, list_bullets=False, links=False, alt_texts=False,
                              form_fields=False, noscript=False)
    limited = found.cut_reason or (None if scored else "main_content_depth")
    if rendered and scored:
        reader = reader_text(html)
        if len(" ".join(text.split())) < READER_MIN_SHARE * len(reader):
            text, limited = reader, limited or "reader_text"
    if title and not text.startswith(title):
        text = f"{title}\n{text}"
    return MainText(text, limited)


def main_text(body: bytes, charset: str | None = None, budget: PageBudget = DEFAULT_BUDGET) -> str:
    """:func:`extract_main_text`'s text."""
    return extract_main_text(body, charset, budget).text
