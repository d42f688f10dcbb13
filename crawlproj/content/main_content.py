"""Which part of a parsed page is its main content (pure logic on a lexbor tree).

One walk over the page's elements (after :func:`strip_junk`) scores its paragraphs the way
Readability does: a paragraph of text scores by its length and commas, and passes its
score to its block ancestors, less with each level up, so the element that holds the most
running prose (the article's body) collects the most. Each candidate's score is scaled by
its share of text that is not link text, and weighed by what its class and id say
(``article-body`` and ``itemprop=articleBody`` for, ``comments`` and ``sidebar`` against).
The best candidate, with the siblings that continue it, is the main content; inside it,
:func:`is_boilerplate` names the parts a reader skips (share buttons, related links,
captions, bylines, link lists), which the renderer leaves out.

Everything per element here is a C call through selectolax (its tag, its own text, its
children); attributes, which cost a Python dict each, are read only for the few elements
that become candidates or lie inside the main content.
"""

from __future__ import annotations

import re
from functools import lru_cache
from operator import itemgetter
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, LexborNode

#: Elements whose content is never text a reader reads (removed with their content).
JUNK_TAGS = ["script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed", "canvas",
             "video", "audio", "map", "button", "select", "textarea", "input", "option", "head", "link", "meta",
             "dialog"]
#: Elements that lie in the flow of a paragraph: their text belongs to the paragraph around them.
INLINE = frozenset(
    "a abbr b bdi bdo big cite code data del dfn em font i ins kbd mark nobr q rp rt ruby s samp small span "
    "strike strong sub sup time tt u var wbr br img label acronym picture source".split())
#: Where a reader never looks for the article (removed wholesale when they are small).
NAVIGATION_TAGS = frozenset({"nav", "aside", "footer", "header", "form", "menu"})
#: Readability's starting score of a candidate by its tag.
TAG_WEIGHT = {"div": 5, "article": 10, "main": 5, "section": 2, "pre": 3, "td": 3, "blockquote": 3,
              "address": -3, "ol": -3, "ul": -3, "dl": -3, "dd": -3, "dt": -3, "li": -3, "form": -3,
              "h1": -5, "h2": -5, "h3": -5, "h4": -5, "h5": -5, "h6": -5, "th": -5}
#: A paragraph's text below this many characters (not counting spaces) scores nothing.
MIN_PARAGRAPH = 25
_COMMAS = re.compile(r"[,，、،]")

# The expressions on class and id names are written in lower case and matched against names
# made lower case (:func:`class_and_id`): three times faster than matching ignoring case.

#: Class and id words of the article's body (a candidate's weight +25).
POSITIVE = re.compile(r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story|prose|"
                      r"storytext|articletext|abstract")
#: Class and id words of what is not the article (a candidate's weight -25).
NEGATIVE = re.compile(r"-ad-|(?<![a-z])ads?(?![a-z])|(?:^|\s)(?:hidden|hide|hid)(?:$|\s)|banner|combx|comment|com-|contact|foot|footnote|"
                      r"gdpr|masthead|media|meta|outbrain|(?<![a-z])promo(?!ted)|related|scroll|share|shoutbox|sidebar|"
                      r"skyscraper|sponsor|shopping|tags|tool|widget|taboola|newsletter|subscri|signup|"
                      r"social|popular|trending|recommend|breadcrumb|cookie|consent|disqus|reply|replies|"
                      r"byline|author|caption|credit|pagination|pager|navbar|menu|modal|popup")
#: Within the main content: class and id words of parts a reader skips.
BOILERPLATE = re.compile(
    r"(?<![a-z])(?:share|sharing|social)(?![a-z_])|related|recommend|newsletter|subscri|signup|sign-up|"
    r"(?<![a-z])promo(?!ted)|advert|sponsor|"
    r"(?<![a-z])ads?(?![a-z])|-ad-|adslot|ad-slot|ad-container|adunit|outbrain|taboola|comment|disqus|"
    r"breadcrumb|pagination|pager|cookie|consent|popup|modal|byline|author|dateline|timestamp|"
    r"(?<![a-z])date(?![a-z])|posted|published|caption|credit|(?<![a-z])tags?(?![a-z])|tag-?list|"
    r"toolbar|print|rating|trending|popular|more-stories|read-?more|further-reading|also-read|"
    r"see-also-links|next-?prev|prev-?next|post-?nav|article-?nav|navigation|(?<![a-z])nav(?![a-z])|"
    r"(?<![a-z])menu(?![a-z])|sidebar|widget|banner|masthead|(?<![a-z])bio(?![a-z])|about-?the-?author|"
    r"hidden|visually-hidden|sr-only|screen-reader|skip-?link|donate|paywall|inline-?cta|(?<![a-z])cta(?![a-z])|"
    r"(?<![a-z])meta(?![a-z])|entry-meta|post-meta|article-meta|infobox-ad|toc-?toggle|headerlink|permalink|"
    r"gallery|slideshow|carousel|slider|lightbox|media-?title|media-?caption|photo-?credit|image-?credit|"
    r"img-?caption|login|log-in|signin|sign-in|regist|paywall|report-?error|error-?report|feedback|"
    r"last-?updated|updated-?date|submitted")
#: ... unless it also says it is the article's body itself.
CONTENT_WORDS = re.compile(r"article-?body|articlebody|story-?body|entry-content|post-?content|post-?body|"
                           r"article-?content|main-?content|body-?text|content-?body|(?<![a-z])prose")
#: Elements kept whatever their class says: code, tables and definitions are content in documentation.
ALWAYS_KEPT = frozenset({"pre", "code", "table", "dl", "tbody", "thead", "tr", "td", "th", "dt", "dd", "h1", "h2",
                         "h3", "h4", "h5", "h6", "p", "blockquote", "li", "img", "picture"})
#: Landmarks around the content (menus, sidebars, site header and footer), removed before the walk
#: unless one holds much of the page's text (a page that puts its article in an <aside>).
LANDMARKS = ("nav, aside, footer, menu, header, [role=navigation], [role=contentinfo], [role=banner], "
             "[role=complementary], [role=search]")
#: Elements hidden from readers (``hidden``, an inline ``display:none``, ``aria-hidden``).
HIDDEN = '[hidden], [style*="display:none"], [style*="display: none"], [aria-hidden="true"]'


def strip_junk(tree: LexborHTMLParser) -> None:
    """Remove what no reader reads: scripts, styles, embedded objects, form controls, elements
    hidden from readers, and the landmarks around the content (menus, sidebars, the site's
    header and footer). A ``<header>`` that holds the page's ``<h1>`` is the article's own and
    stays; so does a header, footer, sidebar or hidden element that holds much of the page's
    text (a page that puts its article there, or collapses it behind a button)."""
    body = tree.body
    if body is None:
        return
    total = None
    # Inner elements first: removing an element frees the elements inside it, which must not be
    # touched after (a script inside a navigation bar comes after the bar in document order).
    for node in reversed(body.css(_STRIPPED_SELECTOR)):
        tag = node.tag
        if tag in _JUNK_TAGS:
            node.decompose()
            continue
        if not node.is_element_node:
            continue
        if tag not in _LANDMARK_TAGS and not node.attributes.get("role"):  # hidden, by an attribute or a style
            if node.css_first("p + p") is None:  # (a collapsed article, its rest behind a button, stays)
                node.decompose()
            continue
        if tag not in _NEVER_CONTENT:
            if tag == "header" and node.css_first("h1") is not None:
                continue
            if _in_content(node):  # the article's own header, footer or aside: judged with the article
                continue
            if total is None:
                total = len(body.text())
            if len(node.text()) > 0.4 * total:
                continue
        node.decompose()


def _in_content(node: LexborNode) -> bool:
    """Whether ``node`` lies in the page's ``<main>`` (or ``role=main``) or an ``<article>`` (a
    landmark there is the article's own: its header holds the lead, its aside a fact box or
    the footnotes)."""
    up = node.parent
    while up is not None:
        tag = up.tag
        if tag in ("main", "article"):
            return True
        if tag in ("body", "html"):
            return False
        if tag == "div" and up.attributes.get("role") == "main":  # (Sphinx's, around its footnotes)
            return True
        up = up.parent
    return False


_JUNK_TAGS = frozenset(JUNK_TAGS)
#: One query for all of it, in the body (each query walks the tree, and matches every selector at
#: every element): the head's elements are never walked, and empty elements (<meta>, <link> in
#: the body) are passed over by the walk.
_STRIPPED_SELECTOR = f"{', '.join(t for t in JUNK_TAGS if t not in ('head', 'link', 'meta', 'option'))}, {LANDMARKS}, {HIDDEN}"
_LANDMARK_TAGS = frozenset({"nav", "aside", "footer", "menu", "header"})
#: Landmarks never taken for content, whatever their size.
_NEVER_CONTENT = frozenset({"nav", "menu"})


@lru_cache(maxsize=8192)
def boilerplate_names(names: str) -> bool:
    """Whether a class and id say "not the article" (pages repeat their class names: cached)."""
    return bool(BOILERPLATE.search(names)) and not CONTENT_WORDS.search(names)


#: DocBook's titled blocks (their class is the one word), whose ids DocBook makes of their titles.
_TITLED = frozenset({"table", "informaltable", "example", "informalexample", "figure", "informalfigure",
                     "equation", "procedure"})
_SECTION_CLASS = re.compile(r"(?:^|\s)(?:section|(?:ref)?sect\d|chapter|appendix|refentry)(?:$|\s)")


def class_and_id(node: LexborNode) -> str:
    """What an element's names say of it (lower case, as the expressions on them are written):
    its class, and its id (``#id``) unless it is a
    section of a document or one of its titled tables, examples or figures, whose id is its
    title's words (a manual's "Comments" or "Related functions" section is no comment box,
    its table of ``pg_stat_subscription`` no subscription form)."""
    attrs = node.attributes
    classes = (attrs.get("class") or "").lower()
    if node.tag == "section" or classes in _TITLED or (
            ("sect" in classes or "chapter" in classes or "appendix" in classes or "refentry" in classes)
            and _SECTION_CLASS.search(classes)):
        return classes.strip()
    return f"{classes} #{(attrs.get('id') or '').lower()}".strip(" #")


class Stats(list):
    """One block element's text: its characters (outer spaces left out), of which inside links,
    and its Readability score (from the paragraphs below it). A list ``[node, text, links,
    score, prose]`` with names: one is made for every block of every page, and a list is the cheapest
    object to make."""

    __slots__ = ()
    node = property(itemgetter(0))
    text = property(itemgetter(1), lambda self, value: self.__setitem__(1, value))
    links = property(itemgetter(2), lambda self, value: self.__setitem__(2, value))
    score = property(itemgetter(3), lambda self, value: self.__setitem__(3, value))
    #: The scores of all the paragraphs inside it, however deep (how much of the page's prose it holds).
    prose = property(itemgetter(4), lambda self, value: self.__setitem__(4, value))

    @property
    def link_density(self) -> float:
        return self[2] / self[1] if self[1] else 0.0


@dataclass
class MainContent:
    """The main content: its root elements in document order (one, nearly always), the stats
    of every block element by ``mem_id``, and the page's total text."""

    roots: list[LexborNode]
    stats: dict[int, Stats] = field(default_factory=dict)
    page_text: int = 0
    dropped: frozenset[int] = frozenset()  # junk regions (their mem_id), left out of the content

    def of(self, node: LexborNode) -> Stats | None:
        return self.stats.get(node.mem_id)


_SCORED_TAGS = frozenset({"p", "pre", "blockquote", "td", "dd", "li"})
_EMPTY = frozenset({"img", "br", "hr", "wbr", "source", "area", "col", "track", "link", "meta", "-comment"})


def _tag_ids(names) -> frozenset[int]:  # noqa: ANN001 - tag names
    """lexbor's ids of standard tags (an int is cheaper to read and test than a name)."""
    tree = LexborHTMLParser("<body>" + "".join(f"<{name}></{name}>" for name in names if name[0] != "-")
                            + "<table><caption></caption><colgroup><col></colgroup><thead><tr><th></th></tr></thead>"
                              "<tbody><tr><td></td></tr></tbody><tfoot></tfoot></table>")
    found = {node.tag: node.tag_id for node in tree.body.traverse()}
    missing = {name for name in names if name[0] != "-"} - set(found)
    assert not missing, missing  # a tag the parser dropped out of context would go unrecognised
    return frozenset(found[name] for name in names if name in found)


_INLINE_IDS = _tag_ids(INLINE)
_NO_TEXT_IDS = _tag_ids(frozenset({"ul", "ol", "dl", "table", "tbody", "thead", "tfoot", "tr", "colgroup"}))
_SCORED_IDS = _tag_ids(_SCORED_TAGS)
_EMPTY_IDS = _tag_ids(_EMPTY)  # (comments: the walk's traverse() gives elements only)
_A_ID = next(iter(_tag_ids({"a"})))


#: The share of a paragraph's score each of its five nearest ancestors gets (Readability's).
DIVIDERS = (1.0, 2.0, 6.0, 9.0, 12.0)


def score_blocks(body: LexborNode, paragraphs: list[tuple[float, tuple[int, ...]]] | None = None,
                 depth: list[int] | None = None) -> dict[int, Stats]:
    """Every block element's :class:`Stats` by ``mem_id``, from one pass. Inline elements' text joins the paragraph of the block around
    them; a paragraph of ``MIN_PARAGRAPH`` characters or more, not mostly links, gives its score
    to its five nearest ancestors (1, 1/2, 1/6, 1/9, 1/12 of it, as Readability).

    The elements are visited children first (lexbor's pre-order, reversed), each adding its
    figures to its parent's: no Python recursion, and one C call for each figure read. Each
    paragraph's score and the ancestors it reached go to ``paragraphs`` when it is given (so
    that a region found to be junk can be taken back out: :func:`_discount`)."""
    nodes = list(body.traverse())
    if not nodes:
        return {}
    inline_ids, scored_ids, commas, empty_ids, a_id = _INLINE_IDS, _SCORED_IDS, _COMMAS.findall, _EMPTY_IDS, _A_ID
    no_text_ids = _NO_TEXT_IDS
    # [text, links, paragraph text, paragraph links, height, prose] gathered from each element's children
    gathered: dict[int, list] = {}
    scores: dict[int, float] = {}
    stats: dict[int, Stats] = {}
    dividers = DIVIDERS
    body_key = nodes[0].mem_id
    for node in reversed(nodes):
        tag = node.tag_id
        if tag in empty_ids:
            continue
        key = node.mem_id
        parent = node.parent if key != body_key else None
        up = parent.mem_id if parent is not None else None
        if tag in no_text_ids:  # a list's or a table's own text is only the whitespace between its items
            own, own_text = "", 0
        else:
            own = node.text(deep=False)
            own_text = len(own.strip()) if own and not own.isspace() else 0
        got = gathered.get(key)
        if got is None:
            total, links, para_text, para_links, height, prose = own_text, 0, own_text, 0, 1, 0.0
        else:
            total, links = own_text + got[0], got[1]
            para_text, para_links, height, prose = own_text + got[2], got[3], got[4] + 1, got[5]
        if tag in inline_ids:
            if tag == a_id:
                links = total
            if up is not None:
                acc = gathered.get(up)
                if acc is None:
                    gathered[up] = [total, links, total, links, height, prose]
                else:
                    acc[0] += total
                    acc[1] += links
                    acc[2] += total
                    acc[3] += links
                    if height > acc[4]:
                        acc[4] = height
                    acc[5] += prose
            continue
        if para_text >= MIN_PARAGRAPH and para_links < 0.5 * para_text:
            score = 1 + len(commas(node.text(deep=True) if tag in scored_ids else own)) + min(para_text // 100, 3)
            prose += score
            ancestor = parent
            reached = []
            for divider in dividers:
                if ancestor is None:
                    break
                at = ancestor.mem_id
                scores[at] = scores.get(at, 0.0) + score / divider
                reached.append(at)
                ancestor = ancestor.parent if at != body_key else None
            if paragraphs is not None:
                paragraphs.append((score, tuple(reached)))
        stats[key] = Stats((node, total, links, scores.get(key, 0.0), prose))
        if up is not None:
            acc = gathered.get(up)
            if acc is None:
                gathered[up] = [total, links, 0, 0, height, prose]
            else:
                acc[0] += total
                acc[1] += links
                if height > acc[4]:
                    acc[4] = height
                acc[5] += prose
        elif depth is not None:
            depth.append(height)
    # Ancestors come later in reversed pre-order: each block read its final score when it was made.
    return stats


#: Class and id names of an article's body container (a strong hint, not just a word in a name).
ARTICLE_BODY = re.compile(
    r"(?:^|[\s_-])(?:article-?body|articlebody|article__body|article-?content|articlecontent|article__content|"
    r"article-?text|articletext|story-?body|storybody|story-?content|storycontent|story-?text|post-?content|"
    r"postcontent|post-?body|postbody|post-?entry|entry-?content|entry-?body|entrytext|body-?text|bodytext|"
    r"main-?text|blog-?content|single-?content|page-?content|text-?content|content-?body|rich-?text|"
    r"article-?section|td-post-content|c-entry-content|l-article__text|caas-body)(?:$|[\s_-])|"
    r"#(?:story|article|content|maincontent|main-content|articlecontent|bodytext)$")
#: Where an article never is: a candidate so named is junk, and the walk is made again without it.
JUNK_REGION = re.compile(r"comment|disqus|respond|repl(?:y|ies)|sidebar|related|recommend|also-?read|"
                         r"more-?stories|next-?posts?|prev-?posts?|popular|trending|newsletter|subscribe|"
                         r"outbrain|taboola|(?<![a-z])promo(?!ted)|sponsor|footer|breadcrumb|"
                         r"(?<![a-z])(?:share|sharing|social)(?![a-z_])")


_BODY, _NOT_ARTICLE, _ARTICLE_WORD = 1, 2, 3


@lru_cache(maxsize=8192)
def _names_say(names: str) -> int:
    """What a class and id say (pages repeat their names: cached): the article's body, not the
    article, a word of the article's, or nothing (0)."""
    if ARTICLE_BODY.search(names):
        return _BODY
    if NEGATIVE.search(names) and not CONTENT_WORDS.search(names):
        return _NOT_ARTICLE
    if POSITIVE.search(names):
        return _ARTICLE_WORD
    return 0


def _weight(stats: Stats) -> float:
    """Readability's class weight, and crawlproj's semantic hints. A name that merely contains
    a word of the body (``content``, ``post``, ``main``: most wrappers have one) adds at most
    half the candidate's own score, and 10, so that a box or a page's wrapper so named does not
    outscore the article; ``itemprop=articleBody``
    and an article body's own class name add at least 25, or double the score."""
    node = stats.node
    weight = float(TAG_WEIGHT.get(node.tag, 0))
    attrs = node.attributes
    names = class_and_id(node)
    said = _names_say(names) if names else 0
    if attrs.get("itemprop") == "articleBody" or said == _BODY:
        weight += max(25.0, stats.score)
    elif said == _NOT_ARTICLE:
        weight -= 25
    elif said == _ARTICLE_WORD:
        weight += min(10.0, stats.score / 2)
    role = attrs.get("role")
    if role in ("main", "article"):
        weight += 10
    elif role in ("navigation", "complementary", "contentinfo", "banner"):
        weight -= 25
    return weight


def _top(stats: dict[int, Stats], dropped: list[LexborNode]) -> list[Stats]:
    """The best candidates by raw score (``TOP_CANDIDATES`` of them), none in a dropped region."""
    top: list[Stats] = []
    for s in sorted((s for s in stats.values() if s.score > 0), key=lambda s: s.score, reverse=True):
        if dropped and any(s.node.mem_id == d.mem_id or _is_under(s.node, d) for d in dropped):
            continue
        top.append(s)
        if len(top) == TOP_CANDIDATES:
            break
    return top


def _discount(region: LexborNode, stats: dict[int, Stats], paragraphs: list[tuple[float, tuple[int, ...]]],
              body: LexborNode) -> None:
    """Take a junk region's text, links and paragraph scores back out of its ancestors' figures,
    exactly as if it had not been there when they were counted."""
    own = stats.get(region.mem_id)
    key = region.mem_id
    if own is not None:
        node = region.parent
        while node is not None:
            up = stats.get(node.mem_id)
            if up is not None:
                up.text -= own.text
                up.links -= own.links
                up.prose -= own.prose
            if node.mem_id == body.mem_id:
                break
            node = node.parent
    for score, reached in paragraphs:
        if key in reached:
            for level in range(reached.index(key) + 1, len(reached)):
                up = stats.get(reached[level])
                if up is not None:
                    up.score -= score / DIVIDERS[level]


def _junk(node: LexborNode) -> bool:
    """Whether an element is a region the article never is (comments, sidebars, related links)."""
    if node.tag in ("body", "html", "main", "article") or node.attributes.get("itemprop") == "articleBody":
        return False
    names = class_and_id(node)
    return _junk_names(names)


@lru_cache(maxsize=8192)
def _junk_names(names: str) -> bool:
    return bool(JUNK_REGION.search(names)) and not ARTICLE_BODY.search(names) and not CONTENT_WORDS.search(names)


def _junk_regions(candidates: list[Stats], stats: dict[int, Stats]) -> list[LexborNode]:
    """The junk regions (:func:`_junk`) the candidates are, or lie in (three levels up: a
    comment's paragraphs score in a box inside the comments' block)."""
    found: dict[int, LexborNode] = {}
    # A wrapper around the best candidate is no junk for its name alone (a "share-zone" around
    # an article, a "sidebar-layout" around the page) when that candidate names itself the body.
    best = candidates[0].node if candidates and _strong(candidates[0]) else None
    for candidate in candidates:
        node = candidate.node
        for _ in range(4):
            if node is None or node.tag in ("body", "html"):
                break
            if node.mem_id in found:
                break
            if node.mem_id in stats and _junk(node) and (best is None or not _is_under(best, node)):
                found[node.mem_id] = node
                break
            node = node.parent
    # A region inside another goes with it.
    return [n for n in found.values() if not any(_is_under(n, other) for other in found.values() if other is not n)]


#: Candidates whose class weight is read (by raw score): enough to meet the article's container.
TOP_CANDIDATES = 12
#: Candidates that score this share of the best one's or more are its peers (:func:`_common_ancestor`).
CLOSE = 0.75


def find_main_content(tree: LexborHTMLParser, max_depth: int | None = None) -> MainContent | None:
    """The main content of a page whose junk is stripped (:func:`strip_junk`); None when the
    page has no body, or nests deeper than ``max_depth`` (when given: a page whose depth was
    not measured before its parse; the caller then reads all of its text in linear time).

    The best few candidates by score are weighed by their names; a region the article never
    is (comments, a sidebar, related stories) that scored among them is left out, and what
    its paragraphs gave the wrapper it shares with the article taken back (:func:`_discount`)."""
    body = tree.body
    if body is None:
        return None
    paragraphs: list[tuple[float, tuple[int, ...]]] = []
    height: list[int] = []
    stats = score_blocks(body, paragraphs, height)
    if max_depth is not None and height and height[0] > max_depth:
        return None
    dropped: list[LexborNode] = []
    for _ in range(3):
        top = _top(stats, dropped)
        best_raw = top[0].score if top else 0.0
        junk = _junk_regions([s for s in top if s.score >= 0.1 * best_raw], stats)
        if not junk:
            break
        for node in junk:
            _discount(node, stats, paragraphs, body)
        dropped.extend(junk)
    gone = frozenset(node.mem_id for node in dropped)
    page_text = stats[body.mem_id].text if body.mem_id in stats else 0
    declared = _declared_main(tree, stats) if not top or top[0].score < WEAK_SCORE else None
    if declared is not None:  # a page of little prose (a table of contents) that says where its content is
        return MainContent([declared.node], stats, page_text, gone)
    if not top:
        return MainContent([body], stats, page_text, gone)
    finals = [((s.score + _weight(s)) * (1 - s.link_density), s) for s in top]
    best_score, best = max(finals, key=lambda f: f[0])
    best = _common_ancestor(best, [s for f, s in finals if s is not best and f >= CLOSE * best_score], stats)
    best = _out_of_structures(best, stats)
    if top[0].score < WEAK_SCORE:
        best = _holding(best, stats, page_text)
    else:
        strong = _strong(best)
        best = _climb(best, stats, strong=strong)
        if not strong and best.node.tag != "article":  # an article that says it is one stays itself
            best = _main_landmark(best, stats)
        if not strong:
            best = _gather(best, stats, stats[body.mem_id].prose)
    return MainContent([r for r in _with_siblings(best, best_score, stats) if r.mem_id not in gone], stats,
                       page_text, gone)


def _common_ancestor(best: Stats, close: list[Stats], stats: dict[int, Stats]) -> Stats:
    """As Readability: when three or more candidates score nearly as well as the best and lie
    under one of its ancestors, the article is in pieces (sections, ad breaks) and that ancestor
    holds it all."""
    if len(close) < 3:
        return best
    keys = {s.node.mem_id for s in close}
    node = best.node.parent
    while node is not None and node.tag not in ("body", "html"):
        inside = sum(1 for key in keys if _is_under(stats[key].node, node))
        if inside >= 3:
            return stats.get(node.mem_id, best)
        node = node.parent
    return best


def _is_under(node: LexborNode, ancestor: LexborNode) -> bool:
    target = ancestor.mem_id
    node = node.parent
    for _ in range(64):
        if node is None:
            return False
        if node.mem_id == target:
            return True
        node = node.parent
    return False


def _strong(stats: Stats) -> bool:
    """Whether a candidate says it is the article's body (``itemprop``, its container's name)."""
    node = stats.node
    return node.attributes.get("itemprop") == "articleBody" or _names_say(class_and_id(node)) == _BODY


#: A page whose best candidate scores less than this has little prose (a reference page of
#: tables and code, a gallery): its content is where most of its text is (:func:`_holding`).
WEAK_SCORE = 5.0
#: ... the smallest element around the best candidate holding this share of the page's text.
HOLDING_SHARE = 0.7


#: Parts of a table or list: a candidate that is one holds one table or list of a page's content.
STRUCTURE_PARTS = frozenset({"tbody", "thead", "tfoot", "tr", "td", "th", "table", "ul", "ol", "li", "dl", "dd", "dt"})


def _out_of_structures(best: Stats, stats: dict[int, Stats]) -> Stats:
    """A table's body (or a list) that scores best is one of the content's tables: the element
    around the outermost table or list is the content's container (a reference page's member
    tables, one after another)."""
    node = best
    while node.node.tag in STRUCTURE_PARTS:
        parent = node.node.parent
        up = stats.get(parent.mem_id) if parent is not None else None
        if up is None or up.node.tag in ("body", "html"):
            break
        node = up
    return node


#: Where a page says its content is: the article's body, the <main> landmark.
DECLARED_MAIN = ('[itemprop="articleBody"]', "main", '[role="main"]')


def _declared_main(tree: LexborHTMLParser, stats: dict[int, Stats]) -> Stats | None:
    """The element the page declares its content (:data:`DECLARED_MAIN`, in that order), if it
    holds text: on a page with little prose to score, what the page says beats the layout's
    text mass (a manual's contents page beside a sidebar holding the whole manual's contents)."""
    for selector in DECLARED_MAIN:
        node = tree.css_first(selector)
        found = stats.get(node.mem_id) if node is not None else None
        if found is not None and found.text:
            return found
    return None


def _holding(best: Stats, stats: dict[int, Stats], page_text: int) -> Stats:
    """The nearest ancestor of ``best`` (or itself) that holds ``HOLDING_SHARE`` of the page's text."""
    node = best
    while node.text < HOLDING_SHARE * page_text:
        parent = node.node.parent
        up = stats.get(parent.mem_id) if parent is not None else None
        if up is None:
            break
        node = up
    return node


#: The page's <main> around the best candidate is its content when it has at most this share of
#: link text and this many times the candidate's text (:func:`_main_landmark`).
MAIN_LINKS = 0.5
MAIN_GROWTH = 10.0


def _main_landmark(best: Stats, stats: dict[int, Stats]) -> Stats:
    """The page's ``<main>`` (or ``role=main``, or its ``itemprop=articleBody``) up to eight
    levels above the best candidate, with little
    link text and not much more text: the page says that is its content (a reference page's
    description scores best; its members' sections are in <main> too)."""
    node = best.node.parent
    for _ in range(8):
        if node is None or node.tag in ("body", "html"):
            return best
        attrs = node.attributes
        if node.tag == "main" or attrs.get("role") == "main" or attrs.get("itemprop") == "articleBody":
            up = stats.get(node.mem_id)
            if up is not None and up.link_density <= MAIN_LINKS and up.text <= MAIN_GROWTH * best.text:
                return up
            return best
        node = node.parent
    return best


#: A candidate holding less than this share of the page's prose is one block of a document spread
#: over many (a reference page's members, a few sentences each): the nearest element around it
#: holding ``GATHERED`` of the prose, with at most ``GATHER_LINKS`` of link text, and a heading
#: or a defined term for every ``HEADED_PART`` characters of text, is the content. (An article
#: above a long discussion holds little of its page's prose too, but runs long between headings.)
DISPERSED = 0.5
GATHERED = 0.8
GATHER_LINKS = 0.25
HEADED_PART = 600


def _gather(best: Stats, stats: dict[int, Stats], page_prose: float) -> Stats:
    """The element around ``best`` that holds most of the page's prose, when ``best`` holds
    little of it (:data:`DISPERSED`)."""
    if best.prose >= DISPERSED * page_prose:
        return best
    node = best
    while True:
        parent = node.node.parent
        up = stats.get(parent.mem_id) if parent is not None else None
        if up is None or up.node.tag == "html":  # (a document written straight into <body> is all of it)
            return best
        if up.prose >= GATHERED * page_prose:
            if up.link_density > GATHER_LINKS:
                return best
            heads = len(up.node.css("h2, h3, h4, h5, h6, dt"))
            return up if heads >= 3 and up.text <= HEADED_PART * heads else best
        node = up


#: A parent scoring this share of its child's raw score or more, with little link text, holds
#: more of the same document (the sections of a manual): :func:`_climb` takes it.
PARENT_SCORE = 0.5
PARENT_LINKS = 0.05
#: A document's blocks have at most this share of link text, its sections this (its references).
DOCUMENT_LINKS = 0.25
SECTION_LINKS = 0.5


def _climb(best: Stats, stats: dict[int, Stats], strong: bool = False) -> Stats:
    """Up from the best candidate to the element that holds all of its document: a wrapper
    holding little more text than it (an ad cut the article in two, its pieces share it), or,
    unless the candidate named itself the article's body, a parent that scores nearly as well
    from prose of its own (a manual's page, section after section)."""
    node = best
    while True:
        parent = node.node.parent
        up = stats.get(parent.mem_id) if parent is not None else None
        if up is None or up.node.tag in ("body", "html"):
            return node
        extra = up.text - node.text
        extra_links = up.links - node.links
        if extra <= 0.15 * node.text and extra_links <= 0.5 * max(extra, 1) + 20:
            node = up
            continue
        if not strong and up.score >= PARENT_SCORE * node.score and up.link_density <= PARENT_LINKS \
                and extra_links <= PARENT_LINKS * extra:
            node = up
            continue
        if not strong and up.link_density <= DOCUMENT_LINKS and _is_section(node.node) and _is_section(up.node):
            node = up  # a section of a section: the same document
            continue
        return node


def _with_siblings(best: Stats, best_score: float, stats: dict[int, Stats]) -> list[LexborNode]:
    """The best candidate and the siblings that continue it: as Readability, a sibling that
    scores well, or a paragraph of prose."""
    parent = best.node.parent
    if parent is None:
        return [best.node]
    threshold = max(10.0, best_score * 0.2)
    sectioned = _is_section(best.node) or parent.tag == "section"  # (a section's blocks: one document)
    siblings = list(parent.iter())
    # A document written flat (headings between its blocks, as texi2html and many manuals write it),
    # or in sections: every block of it between the headings is the content, however short.
    flat = sum(1 for sibling in siblings if sibling.tag in _SUBHEADINGS) >= 2
    # A reference's members, one box each of one kind (Haddock's declarations): all of them.
    kind = best.node.attributes.get("class")
    members = [sibling for sibling in siblings if sibling.tag == best.node.tag] if kind else []
    members = {m.mem_id for m in members if m.attributes.get("class") == kind} if len(members) >= MEMBERS else set()
    if len(members) < MEMBERS:
        members = set()
    roots: list[LexborNode] = []
    headings: list[LexborNode] = []  # kept when the block after them is
    for sibling in siblings:
        if (flat or sectioned) and sibling.tag in _SUBHEADINGS:
            headings.append(sibling)
            continue
        s = stats.get(sibling.mem_id)
        if sibling.mem_id != best.node.mem_id and (s is None or s.text == 0):
            continue
        if sibling.mem_id in members and s.link_density < MEMBER_LINKS:
            roots.extend(headings)
            roots.append(sibling)
        elif _continues(sibling, s, best, threshold, flat or sectioned):
            roots.extend(headings)
            roots.append(sibling)
        headings = []
    return roots


def _continues(sibling: LexborNode, s: Stats, best: Stats, threshold: float, document: bool) -> bool:
    if sibling.mem_id == best.node.mem_id:
        return True
    if document and sibling.tag in _DOCUMENT_BLOCKS and (
            s.link_density < DOCUMENT_LINKS or (s.link_density < SECTION_LINKS and _is_section(sibling))):
        attrs = sibling.attributes
        return not boilerplate_names(f"{attrs.get('class') or ''} #{attrs.get('id') or ''}".lower())
    if s.score and (s.score + _weight(s)) * (1 - s.link_density) >= threshold:
        return True
    if sibling.tag == "p" and s.link_density < 0.25 and s.text > 80:
        return True
    return sibling.tag == "pre"  # a document's code, however short


#: Siblings of the best candidate's tag and class, this many or more, are a reference's members
#: (with less than this share of link text: a member's signature links its types).
MEMBERS = 5
MEMBER_LINKS = 0.8
_SUBHEADINGS = frozenset({"h2", "h3", "h4", "h5", "h6"})
_DOCUMENT_BLOCKS = frozenset({"p", "dl", "table", "pre", "ul", "ol", "blockquote", "div", "section"})


def _is_section(node: LexborNode) -> bool:
    """Whether an element is a section of a document (``<section>``, or a div so named)."""
    if node.tag == "section":
        return True
    return node.tag == "div" and bool(_SECTION_CLASS.search(node.attributes.get("class") or ""))


def is_boilerplate(node: LexborNode, content: MainContent, root_text: int) -> bool:
    """Whether a reader skips this element of the main content (and everything in it)."""
    if content.dropped and node.mem_id in content.dropped:
        return True
    tag = node.tag
    if tag in ALWAYS_KEPT:
        return False
    s = content.of(node)
    text = s.text if s is not None else 0
    if tag in NAVIGATION_TAGS and text < 0.5 * root_text:
        return not (tag == "aside" and _footnotes(node))
    if tag == "figcaption":
        return True
    names = class_and_id(node)
    if names and text < 0.5 * root_text and boilerplate_names(names):
        return True
    if s is not None and s.text and tag in ("ul", "ol", "div", "section", "span", "figure", "menu", "nav"):
        # Lists and boxes of links: related stories, tag clouds, "more from"; but not a list that
        # is part of a definition or a table (a reference's "See also" links are its content).
        if s.link_density > 0.5 and s.text < 0.5 * root_text:
            parent = node.parent
            if parent is None:
                return True
            if parent.tag in ("dd", "td", "th", "dt") or _grid_cell(node, parent):
                return False
            # (a reference's signature: a table of names, some linked; not a figure, a table of links)
            return tag == "figure" or s.link_density > 0.9 or node.css_first("table, pre, dl") is None
    return False


def _footnotes(node: LexborNode) -> bool:
    """Whether an ``<aside>`` holds the document's footnotes (Sphinx's, DPub-ARIA's)."""
    attrs = node.attributes
    return "footnote" in (attrs.get("class") or "") or (attrs.get("role") or "").startswith(("doc-footnote", "doc-endnote"))


#: A class naming a table drawn with boxes (javadoc's ``summary-table``, a ``data-table``).
_TABLE_CLASS = re.compile(r"(?:^|[\s_-])table(?:$|\s)", re.I)
_CELL_ROLES = frozenset({"cell", "gridcell", "row", "rowheader", "columnheader", "table", "grid"})


def _grid_cell(node: LexborNode, parent: LexborNode) -> bool:
    """Whether a box is a cell of a table drawn with boxes (its links name a reference's members)."""
    if node.attributes.get("role") in _CELL_ROLES or parent.attributes.get("role") in _CELL_ROLES:
        return True
    return bool(_TABLE_CLASS.search(parent.attributes.get("class") or ""))
