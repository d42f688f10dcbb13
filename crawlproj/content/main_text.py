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

from .budget import PageBudget

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
    up to there), or ``main_content_depth`` when it nests too deep for main-content scoring
    and all of its visible text was taken (linear time) instead."""

    text: str
    limited: str | None = None


def extract_main_text(body: bytes, charset: str | None = None, budget: PageBudget = DEFAULT_BUDGET) -> MainText:
    """The page's main content as plain text (title and headings included, layout left out),
    within ``budget``."""
    html, found = budget.bounded(decode(body, charset))
    scored = budget.main_content_ok(found)
    tree = HTMLTree.parse(html)
    title = tree.title or ""
    text = extract_plain_text(tree, main_content=scored, list_bullets=False, links=False, alt_texts=False,
                              form_fields=False, noscript=False)
    if title and not text.startswith(title):
        text = f"{title}\n{text}"
    return MainText(text, found.cut_reason or (None if scored else "main_content_depth"))


def main_text(body: bytes, charset: str | None = None, budget: PageBudget = DEFAULT_BUDGET) -> str:
    """:func:`extract_main_text`'s text."""
    return extract_main_text(body, charset, budget).text
