"""Bounds on what one page may cost (pure logic).

HTML parsers and main-text extraction are linear in size but not in nesting:
lexbor (selectolax) rebuilds its scope checks on every start tag, so a page of
24,000 unclosed ``<div>`` (1 MB) takes it 0.9 s and 48,000 take it 7 s, and
resiliparse's main-content scoring walks each node's text once per ancestor
(6,000 levels: 2.2 s). Browsers bound depth for the same reason (Blink stops
nesting at 512). A page is therefore measured before it is parsed:

- the count of start tags bounds both the node count and the depth, so a page
  with few start tags (nearly every page) is settled by one C-speed count;
- a page with many is walked by :func:`nesting`, a tokenizer that knows
  comments, raw-text elements, void elements and the end tags HTML lets a page
  leave out, so long ``<li>`` or ``<p>`` lists do not count as depth.

A page over a bound is cut where it first passes the bound (what comes before
is still extracted), and main text falls back to the linear plain-text
extraction when the page nests deeper than ``MAIN_TEXT_MAX_DEPTH``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .. import defaults

#: One C-speed pass over a page's tags: "" for a start tag, "/" for an end tag, "!" or "?" for
#: a comment or doctype, the name of the void elements pages are full of (other voids count as starts).
_TALLY = re.compile(r"<([/!?]|(?:br|img|meta|link|input|hr)(?=[\s/>])|(?=[A-Za-z]))", re.IGNORECASE)
_TOKEN = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)|<!--|<[!?]")
VOID = frozenset("area base br col embed hr img input keygen link meta param source track wbr".split())
RAW_TEXT = frozenset("script style textarea title xmp iframe noembed noframes plaintext".split())
_RAW_END = {name: re.compile(f"</{name}", re.IGNORECASE) for name in RAW_TEXT}
#: Start tags that first close the nearest open element of these names (and all inside it).
IMPLIED_END = {
    "p": ("p",), "li": ("li",), "dt": ("dt", "dd"), "dd": ("dt", "dd"), "option": ("option",),
    "tr": ("tr",), "td": ("td", "th"), "th": ("td", "th"),
    "tbody": ("tbody", "thead", "tfoot"), "thead": ("tbody", "thead", "tfoot"), "tfoot": ("tbody", "thead", "tfoot"),
}
#: Start tags that close an open ``<p>``.
CLOSES_P = frozenset(
    "address article aside blockquote details div dl fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 "
    "header hgroup hr main menu nav ol p pre section table ul".split())


@dataclass(frozen=True)
class Nesting:
    """What :func:`nesting` found: the deepest nesting, the start tags seen, and where the page
    first passed a bound (None when it never did)."""

    depth: int
    elements: int
    cut_at: int | None
    cut_reason: str | None


_TALLY_BYTES = re.compile(_TALLY.pattern.encode(), re.IGNORECASE)


def tag_tally(html: str | bytes) -> tuple[int, int]:
    """``(start tags, estimated depth)``: the start tags counted in C (an upper bound on the
    page's elements and on its depth), less its end tags and common void elements."""
    if isinstance(html, bytes):
        tokens = _TALLY_BYTES.findall(html)
        ends = tokens.count(b"/")
        starts = len(tokens) - ends - tokens.count(b"!") - tokens.count(b"?")
        return starts, starts - ends - (starts - tokens.count(b""))
    tokens = _TALLY.findall(html)
    ends = tokens.count("/")
    starts = len(tokens) - ends - tokens.count("!") - tokens.count("?")
    voids = starts - tokens.count("")
    return starts, starts - ends - voids


def nesting(html: str, max_depth: int | None = None, max_elements: int | None = None) -> Nesting:
    """The page's nesting depth as an HTML parser would build it (closely, not exactly), walked
    in one pass; stops at the first tag that passes ``max_depth`` or ``max_elements``."""
    stack: list[str] = []
    open_count: dict[str, int] = {}
    deepest = elements = 0
    pos = 0
    find = _TOKEN.search
    while True:
        m = find(html, pos)
        if m is None:
            break
        name = m.group(2)
        if name is None:  # a comment, doctype or processing instruction
            end = html.find("-->", m.end()) if m.group(0) == "<!--" else html.find(">", m.end())
            pos = len(html) if end < 0 else end + 1
            continue
        pos = m.end()
        name = name.lower()
        if m.group(1):  # an end tag closes up to its element, if that is open at all
            if open_count.get(name):
                while stack:
                    top = stack.pop()
                    open_count[top] -= 1
                    if top == name:
                        break
            continue
        elements += 1
        if max_elements is not None and elements > max_elements:
            return Nesting(deepest, elements - 1, m.start(), "elements")
        if name in VOID:
            continue
        closes = IMPLIED_END.get(name)
        if name in CLOSES_P and open_count.get("p"):
            closes = ("p",) + (closes or ())
        if closes:
            # the parser closes the nearest such element (looking past inline ones)
            for i in range(len(stack) - 1, max(-1, len(stack) - 8), -1):
                if stack[i] in closes:
                    for top in stack[i:]:
                        open_count[top] -= 1
                    del stack[i:]
                    break
        if name in RAW_TEXT:  # its content is text up to its own end tag
            closing = _RAW_END[name].search(html, pos)
            pos = len(html) if closing is None else closing.start()
            continue
        stack.append(name)
        open_count[name] = open_count.get(name, 0) + 1
        if len(stack) > deepest:
            deepest = len(stack)
            if max_depth is not None and deepest > max_depth:
                return Nesting(deepest - 1, elements, m.start(), "depth")
    return Nesting(deepest, elements, None, None)


_HIDDEN_START = re.compile(r"<!--|<(script|style|textarea|title|xmp|iframe|noembed|noframes|plaintext)(?=[\s/>])",
                           re.IGNORECASE)
_TAG = re.compile(r"<(/?[a-z][a-z0-9-]*)")
#: The same for a page's undecoded bytes (an ASCII-compatible charset).
_HIDDEN_START_BYTES = re.compile(_HIDDEN_START.pattern.encode(), re.IGNORECASE)
_TAG_BYTES = re.compile(_TAG.pattern.encode())
_VOID_BYTES = frozenset(name.encode() for name in VOID)
_RAW_END_BYTES = {name.encode(): re.compile(f"</{name}".encode(), re.IGNORECASE) for name in RAW_TEXT}


def _markup(html: str | bytes) -> list:
    """The page's text outside comments and raw-text elements (whose ``<`` are no tags)."""
    raw = isinstance(html, bytes)
    hidden, raw_end, comment_end = ((_HIDDEN_START_BYTES, _RAW_END_BYTES, b"-->") if raw
                                    else (_HIDDEN_START, _RAW_END, "-->"))
    pieces, pos = [], 0
    while True:
        m = hidden.search(html, pos)
        if m is None:
            pieces.append(html[pos:])
            break
        pieces.append(html[pos : m.start()])
        if m.group(1) is None:
            end = html.find(comment_end, m.end())
            pos = len(html) if end < 0 else end + 3
        else:
            closing = raw_end[m.group(1).lower()].search(html, m.end())
            pos = len(html) if closing is None else closing.start() + 2  # past "</": its end tag is skipped too
    return pieces


def depth_bound(html: str | bytes) -> tuple[int, int]:
    """``(start tags, depth bound)``: an upper bound on how deep a parser nests the page, from
    its tags in document order, computed with numpy (no Python step per tag). Each name's open
    elements are counted apart, an end tag closing one of its own name if one is open (a stray
    end tag closes nothing, as in a parser); implied ends and end tags that close several
    elements at once are not credited, so the bound can only be high, never low."""
    raw = isinstance(html, bytes)
    markup = (b"" if raw else "").join(_markup(html)).lower()
    tokens = (_TAG_BYTES if raw else _TAG).findall(markup)  # "div", "/div"...
    if not tokens:
        return 0, 0
    # Tokens are told apart by their hashes (SipHash, keyed per process: a page cannot aim at a
    # collision), which numpy sorts as integers: an array of the strings themselves cost twice
    # the time. Each kind of token is then read once, from its first occurrence.
    _, first_at, ids = np.unique(np.fromiter(map(hash, tokens), np.int64, len(tokens)),
                                 return_index=True, return_inverse=True)
    spelled = [tokens[i] for i in first_at]
    slash = b"/" if raw else "/"
    kind_ends = np.array([t[:1] == slash for t in spelled])
    kind_names = [t[1:] if end else t for t, end in zip(spelled, kind_ends)]
    numbers: dict = {}
    kind_name = np.array([numbers.setdefault(name, len(numbers)) for name in kind_names])
    kind_void = np.array([name in (_VOID_BYTES if raw else VOID) for name in kind_names])
    ends = kind_ends[ids]
    delta = np.where(ends, -1, np.where(kind_void[ids], 0, 1)).astype(np.int64)
    starts = int(np.count_nonzero(~ends))
    ids = kind_name[ids]  # an end tag and its start tag: one name
    order = np.argsort(ids, kind="stable")
    group, step = ids[order], delta[order]
    first = np.concatenate(([True], group[1:] != group[:-1]))
    total = np.cumsum(step)
    base = np.maximum.accumulate(np.where(first, np.arange(len(step)), 0))
    within = total - (total[base] - step[base])  # each name's running count
    # Clipped at zero (a stray end tag): the running minimum within each name, made to restart
    # at each name by an offset that makes every later name's values lower than any before.
    rank = np.cumsum(first) - 1
    offset = rank * (2 * len(step) + 2)
    floor = np.minimum.accumulate(within - offset) + offset
    clipped = within - np.minimum(floor, 0)
    before = np.concatenate(([0], clipped[:-1]))
    effect = clipped - np.where(first, 0, before)
    in_order = np.empty_like(effect)
    in_order[order] = effect
    return starts, int(np.cumsum(in_order).max(initial=0))


@dataclass(frozen=True)
class PageBudget:
    """The bounds one page is held to (``PAGE_MAX_DEPTH``, ``PAGE_MAX_ELEMENTS``, ``MAIN_TEXT_MAX_DEPTH``)."""

    max_depth: int = defaults.PAGE_MAX_DEPTH
    max_elements: int = defaults.PAGE_MAX_ELEMENTS
    main_text_max_depth: int = defaults.MAIN_TEXT_MAX_DEPTH
    max_links: int = defaults.MAX_LINKS_PER_PAGE  # 0: all
    #: Read the page's requisites before its tree is let go (REQUISITES_ENABLED).
    requisites: bool = False
    #: Pages with more start tags than this are walked whatever the estimate says.
    walk_start_tags: int = 2048

    def measure(self, html: str) -> Nesting:
        """The page's nesting: walked by :func:`nesting` when a count says it could pass a bound.

        Start tags less end tags less void elements is the depth when every tag is real; end
        tags hidden in comments or scripts can only pull that estimate down by as many as the
        page has, so a page with more than ``WALK_START_TAGS`` start tags is always walked."""
        starts, estimate = tag_tally(html)
        if estimate <= self.main_text_max_depth and starts <= min(self.walk_start_tags, self.max_elements):
            return Nesting(max(estimate, 0), starts, None, None)
        starts, bound = depth_bound(html)  # a page of many tags, or tags in its scripts
        if bound <= self.main_text_max_depth and starts <= self.max_elements:
            return Nesting(bound, starts, None, None)
        return nesting(html, self.max_depth, self.max_elements)

    #: A page with at most this many ``<`` is parsed without being measured first: its nesting
    #: cannot pass this (lexbor parses even that deep a page in a few milliseconds), and
    #: main-content scoring measures its depth itself (``MAIN_TEXT_MAX_DEPTH``).
    quick_tags: int = 4096

    def quick(self, body: bytes) -> bool:
        """Whether an undecoded page is small enough in tags to parse unmeasured (a count of its
        ``<``, at memory speed; a page without NUL bytes: its tags are ASCII)."""
        return body.count(b"<") <= min(self.quick_tags, self.max_elements) and b"\0" not in body

    def settled(self, body: bytes) -> Nesting | None:
        """The nesting of an undecoded page when one count settles it (as :meth:`measure`'s
        first step, on the bytes: the tags are ASCII in any charset that keeps ASCII, which a
        page without NUL bytes does), else None: decode it and :meth:`bounded` it."""
        if b"\0" in body:  # UTF-16 or UTF-32: its tags are not ASCII bytes
            return None
        starts, estimate = tag_tally(body)
        if estimate <= self.main_text_max_depth and starts <= min(self.walk_start_tags, self.max_elements):
            return Nesting(max(estimate, 0), starts, None, None)
        starts, bound = depth_bound(body)
        if bound <= self.main_text_max_depth and starts <= self.max_elements:
            return Nesting(bound, starts, None, None)
        return None

    def bounded(self, html: str) -> tuple[str, Nesting]:
        """The part of the page that is within the bounds (all of it, nearly always), and its nesting."""
        found = self.measure(html)
        if found.cut_at is None:
            return html, found
        return html[: found.cut_at], found

    def main_content_ok(self, found: Nesting) -> bool:
        """Whether main-content scoring (superlinear in depth) may run on a page nested this deep."""
        return found.depth <= self.main_text_max_depth
