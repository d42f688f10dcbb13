"""Main text: the article of a page without the layout around it, as one string (pure logic).

Near-duplicate detection compares main text only, so boilerplate that every page of a site
shares (header, navigation, sidebar, footer) cannot make two pages look alike, and two sites
built on one template stay different content. The text is :func:`extract_content`'s, with
the page's title in front (two pages of one article under different titles differ).
"""

from __future__ import annotations

from dataclasses import dataclass

from .budget import PageBudget
from .extraction import DEFAULT_BUDGET, NAVIGATION, READER_MIN_SHARE, decode, extract_content, reader_text

__all__ = ["DEFAULT_BUDGET", "NAVIGATION", "READER_MIN_SHARE", "MainText", "decode", "extract_main_text", "main_text",
           "reader_text"]


@dataclass(frozen=True)
class MainText:
    """A page's main text, and why it is less than that when it is (None: it is the main text).

    ``limited`` is ``depth`` or ``elements`` when the page passed that bound (its text was read
    up to there), ``main_content_depth`` when it nests too deep for main-content scoring
    and all of its visible text was taken (linear time) instead, or ``reader_text`` when a
    rendered page's main content fell short of what a reader sees and that was taken."""

    text: str
    limited: str | None = None


def extract_main_text(body: bytes, charset: str | None = None, budget: PageBudget = DEFAULT_BUDGET,
                      rendered: bool = False) -> MainText:
    """The page's main content as plain text, its title first, within ``budget``."""
    content = extract_content(body, charset, None, budget, rendered, markdown=False)
    return MainText(with_title(content.title, content.text), content.limited)


def with_title(title: str | None, text: str) -> str:
    """The text near-duplicates compare: the title, then the main text."""
    return f"{title}\n{text}" if title and not text.startswith(title) else text


def main_text(body: bytes, charset: str | None = None, budget: PageBudget = DEFAULT_BUDGET) -> str:
    """:func:`extract_main_text`'s text."""
    return extract_main_text(body, charset, budget).text
