"""A page's content for its users: main text, Markdown and metadata from its HTML (pure logic).

:func:`extract_content` parses the page once (lexbor, through selectolax), reads what it
states about itself (:mod:`.metadata`) before anything is removed, strips what no reader
reads, finds the main content (:mod:`.main_content`) and renders it as text and Markdown in
one walk (:mod:`.markdown`). The page budget holds as everywhere: a page past its depth or
element bound is read up to there, and one nested deeper than ``MAIN_TEXT_MAX_DEPTH`` gives
all of its visible text instead of its main content (scoring it would be superlinear).

``docs/exporting.md`` says what each field holds; ``bench/content.py`` measures the text's
quality against hand-checked articles and documentation pages, beside trafilatura's.
"""

from __future__ import annotations

import re

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str
from resiliparse.parse.html import HTMLTree
from selectolax.lexbor import LexborHTMLParser, LexborNode

from .budget import Nesting, PageBudget
from .main_content import MainContent, find_main_content, is_boilerplate, strip_junk
from .markdown import Renderer, comparable
from .metadata import read_metadata
from .page import INVISIBLE, clean
from ..items import PageContent

DEFAULT_BUDGET = PageBudget()
#: What a reader leaves aside on a page: its navigation, banners and footers (by element and by ARIA role).
NAVIGATION = "nav, header, footer, aside, [role=navigation], [role=banner], [role=contentinfo]"
#: A rendered page keeps its main content's text only while that is at least this share of what
#: a reader sees (:func:`reader_text`); below, it keeps the reader's text.
READER_MIN_SHARE = 0.7



_UTF8 = frozenset({"utf-8", "utf8", "utf_8"})


def decode(body: bytes, charset: str | None) -> str:
    """The body as text in its declared charset; undecodable bytes become U+FFFD, never an error."""
    if charset:
        try:
            return body.decode(charset, errors="replace")
        except LookupError:  # a charset Python does not know
            pass
    return bytes_to_str(body)


def reader_text(html: str) -> str:
    """The text a reader sees: the body's text without scripts, styles and the like, and without
    :data:`NAVIGATION`; whitespace folded."""
    tree = LexborHTMLParser(html)
    for node in reversed(tree.css(", ".join((*INVISIBLE, NAVIGATION)))):  # inner ones first (see strip_junk)
        node.decompose()
    body = tree.body
    return clean(body.text(deep=True, separator=" ")) if body is not None else ""


#: What a page holds that no reader reads and no parse needs: comments, scripts (but JSON-LD, which
#: says what the page is), styles and inline frames' fallback. Often most of a news page's bytes.
_UNREAD = re.compile(rb"<!--|<(script|style|iframe|noembed|noframes)(?=[\s/>])([^>]*)>", re.IGNORECASE)
_UNREAD_END = {name: re.compile(b"</" + name, re.IGNORECASE)
               for name in (b"script", b"style", b"iframe", b"noembed", b"noframes")}


def without_unread(body: bytes) -> bytes:
    """``body`` less its comments and the contents of its scripts (JSON-LD kept), styles and
    frames' fallback, so that decoding and parsing skip them: C searches, one step a script."""
    pieces, pos = [], 0
    search = _UNREAD.search
    while True:
        m = search(body, pos)
        if m is None:
            break
        if m.group(1) is None:  # a comment: to its end (an unclosed one runs to the end, as in HTML)
            end = body.find(b"-->", m.end())
            pieces.append(body[pos : m.start()])
            pos = len(body) if end < 0 else end + 3
            continue
        name = m.group(1).lower()
        closing = _UNREAD_END[name].search(body, m.end())
        if name == b"script" and b"ld+json" in m.group(2).lower():
            pos_end = len(body) if closing is None else closing.start()
            pieces.append(body[pos:pos_end])
            pos = pos_end
            continue
        pieces.append(body[pos : m.end()])  # the start tag stays (an element, emptied)
        pos = len(body) if closing is None else closing.start()
    if not pieces:
        return body
    pieces.append(body[pos:])
    return b"".join(pieces)


def extract_content(body: bytes | str, charset: str | None = None, url: str | None = None,
                    budget: PageBudget = DEFAULT_BUDGET, rendered: bool = False, markdown: bool = True,
                    max_chars: int = 0, nesting: Nesting | None = None) -> PageContent:
    """The page's :class:`PageContent`. ``rendered``: the body is a browser's DOM after scripts
    ran (an app's main content may be most of what it shows: see :func:`_reader_fallback`);
    ``markdown`` False leaves the Markdown empty; ``max_chars`` (0: no cap) cuts text and
    Markdown at a block boundary.

    A ``rendered`` page (an app's DOM after its scripts ran) is often ``<div>``s to the last
    element, where main-content scoring can drop most of what the app shows (Swagger UI's
    operations, 72% of its text): its text is then all the reader's text, when the main
    content's is under :data:`READER_MIN_SHARE` of it (``limited`` says ``reader_text``).

    ``nesting``: the page's nesting as measured already (:attr:`ParsedPage.nesting`), read
    instead of measuring again when it cut nothing."""
    if isinstance(body, bytes) and b"\0" not in body[:4096]:  # an ASCII-compatible charset
        body = without_unread(body)
    quick = isinstance(body, bytes) and budget.quick(body)
    if quick or isinstance(body, str):
        found = None
    elif nesting is not None and nesting.cut_at is None:
        found = nesting
    else:
        found = budget.settled(body)
    # UTF-8 goes to lexbor as it is (lexbor reads UTF-8; a str would be encoded back to it), and
    # is decoded only when something below reads the text again.
    raw = quick and (charset or "").lower() in _UTF8
    html = "" if raw else body if isinstance(body, str) else decode(body, charset)
    if found is None and not quick:
        html, found = budget.bounded(html)
    tree = LexborHTMLParser(body if raw else html)
    meta = read_metadata(tree, url)
    strip_junk(tree)
    if found is None:  # parsed unmeasured (few tags): scoring measures the depth itself
        content = find_main_content(tree, budget.main_text_max_depth)
        if content is None and tree.body is not None:  # too deep to score: measured now, and cut if
            html, found = budget.bounded(decode(body, charset) if raw else html)  # past PAGE_MAX_DEPTH
            raw = False
        limited = found.cut_reason if found is not None else None
    else:
        limited = found.cut_reason
        content = find_main_content(tree) if budget.main_content_ok(found) else None
    headline = meta.title
    renderer = None
    if content is not None:
        try:
            renderer = _render(content, url, headline, markdown)
        except RecursionError:  # deeper than the thread's stack allows: read linearly below
            renderer = None
    if renderer is None:
        # Too deep to score (or to render by recursion): all of its visible text, in linear time.
        limited = limited or "main_content_depth"
        html = decode(body, charset) if raw else html
        text = extract_plain_text(HTMLTree.parse(html), main_content=False, list_bullets=False, links=False,
                                  alt_texts=False, form_fields=False, noscript=False)
        md = text if markdown else ""
    else:
        text, md = renderer.text(), renderer.md()
    if rendered and content is not None:
        html = decode(body, charset) if raw else html
        reader = reader_text(html)
        if len(" ".join(text.split())) < READER_MIN_SHARE * len(reader):
            # All a reader sees, controls included (an app's operations are buttons), layout aside.
            whole_tree = LexborHTMLParser(html)
            for node in reversed(whole_tree.css(", ".join((*INVISIBLE, NAVIGATION)))):
                node.decompose()
            whole = Renderer(url, lambda node: False, headline, markdown)
            if whole_tree.body is not None:
                whole.render(whole_tree.body)
            _drop_leading_headline(whole, headline)
            text, md, limited = whole.text(), whole.md(), limited or "reader_text"
    if max_chars and (len(text) > max_chars or len(md) > max_chars):
        text, md, limited = _cut(text, max_chars), _cut(md, max_chars), limited or "max_chars"
    return PageContent(text=text, markdown=md, title=meta.title, description=meta.description,
                       language=meta.language, canonical_url=meta.canonical_url, author=meta.author,
                       published=meta.published, modified=meta.modified, limited=limited)


def _render(content: MainContent, url: str | None, headline: str | None, markdown: bool) -> Renderer:
    roots = content.roots
    root_text = sum(s.text for s in (content.of(r) for r in roots) if s is not None) or content.page_text

    def skip(node: LexborNode) -> bool:
        return is_boilerplate(node, content, root_text)

    renderer = Renderer(url, skip, headline, markdown)
    for root in roots:
        if root.tag in ("body", "html"):
            renderer.render(root)
        else:
            renderer.block(root)
    _drop_leading_headline(renderer, headline)
    return renderer


def _drop_leading_headline(renderer: Renderer, headline: str | None) -> None:
    """The article's headline is its title, a field of its own: a heading that opens the
    content, or one that reads as the title, is left out of the text (the Markdown keeps it)."""
    if renderer.headline_seen:
        return
    for block in renderer.blocks[:2]:
        if block.md.startswith("# ") and block.text:
            block.text = ""
            return
        if block.text and headline and comparable(block.text) == comparable(headline) and block.md.startswith("#"):
            block.text = ""
            return


def _cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at the last block boundary before it when there is one."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit]
