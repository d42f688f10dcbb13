"""A page's requisites: what a browser fetches to show it (pure logic).

Stylesheets (and what they ``@import`` or name by ``url()``: fonts, background images),
scripts, images, icons, ``<iframe>`` documents and media posters, read from a lexbor tree
(one CSS query) or a stylesheet's text. An archive without them replays as bare text.

``srcset`` (and ``<picture>``'s ``<source srcset>``): the candidate a browser at device pixel
ratio 1 takes for a :data:`VIEWPORT_WIDTH` viewport, with no layout known: the ``1x`` one
(else the smallest density over 1, else the largest), or by width the smallest at least the
viewport wide (else the widest), as ``sizes`` defaults to ``100vw``. One candidate, not all:
a responsive image lists up to a dozen of which a browser loads one, and replay at that ratio
finds it; ``src`` is taken too (what a browser without ``srcset`` loads).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

#: The viewport a ``srcset`` candidate is chosen for (CSS pixels, device pixel ratio 1).
VIEWPORT_WIDTH = 1280

#: The kinds of requisite, for ``REQUISITES_TYPES``.
KINDS = ("stylesheet", "script", "image", "icon", "iframe", "media", "font")

_ICON_RELS = frozenset({"icon", "shortcut", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon"})
_PRELOAD_AS = {"style": "stylesheet", "script": "script", "image": "image", "font": "font"}
_CSS_URL = re.compile(r"""@import\s+(?:url\(\s*)?["']?([^"')\s;]+)|url\(\s*(["']?)([^"')]+?)\2\s*\)""", re.I)
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_FONT_EXTENSIONS = (".woff2", ".woff", ".ttf", ".otf", ".eot")

#: One query for every element that may name a requisite.
SELECTOR = ("link[href], script[src], img, picture source[srcset], iframe[src], frame[src], video[poster], "
            "input[type=image][src], style, [style]")


@dataclass(frozen=True)
class Requisite:
    """A URL as written (resolve it against the page's base) and its kind (:data:`KINDS`)."""

    url: str
    kind: str


def srcset_choice(srcset: str, viewport: int = VIEWPORT_WIDTH) -> str | None:
    """The candidate of ``srcset`` a browser at ratio 1 and ``viewport`` CSS pixels takes (see above)."""
    densities: list[tuple[float, str]] = []
    widths: list[tuple[float, str]] = []
    for url, descriptor in _srcset_candidates(srcset):
        try:
            if descriptor.endswith("w"):
                widths.append((float(descriptor[:-1]), url))
            elif descriptor.endswith("x"):
                densities.append((float(descriptor[:-1]), url))
        except ValueError:
            continue
    if widths:
        wide = sorted(w for w in widths if w[0] >= viewport)
        return (wide[0] if wide else max(widths))[1]
    if densities:
        over = sorted(d for d in densities if d[0] >= 1)
        return (over[0] if over else max(densities))[1]
    return None


def _srcset_candidates(srcset: str) -> Iterator[tuple[str, str]]:
    """(URL, descriptor lower case) of each candidate, as the HTML standard splits them: a URL
    runs to white space (commas inside it kept, trailing ones ending the candidate)."""
    i, n = 0, len(srcset)
    while i < n:
        while i < n and (srcset[i].isspace() or srcset[i] == ","):
            i += 1
        start = i
        while i < n and not srcset[i].isspace():
            i += 1
        url = srcset[start:i]
        if not url:
            return
        if url.endswith(","):
            yield url.rstrip(","), "1x"
            continue
        start = i
        while i < n and srcset[i] != ",":
            i += 1
        yield url, (srcset[start:i].split() or ["1x"])[0].lower()


def css_urls(css: str) -> Iterator[tuple[str, str]]:
    """(URL as written, kind) of each ``@import`` and ``url()`` of a stylesheet (or a ``style``
    attribute): ``stylesheet`` for an import, ``font`` for a font file, else ``image``."""
    for match in _CSS_URL.finditer(_CSS_COMMENT.sub("", css)):
        if match.group(1):
            yield match.group(1), "stylesheet"
            continue
        url = match.group(3).strip()
        if url.startswith(("data:", "#", "about:")) or not url:
            continue
        path = url.split("?", 1)[0].split("#", 1)[0].lower()
        yield url, "font" if path.endswith(_FONT_EXTENSIONS) else "image"


def page_requisites(nodes: Iterable) -> list[Requisite]:  # noqa: ANN001 - selectolax nodes
    """The requisites of a page's elements (:data:`SELECTOR`'s matches, in document order),
    each URL once, in the order met."""
    out: dict[str, Requisite] = {}

    def add(url: str | None, kind: str) -> None:
        url = (url or "").strip()
        if url and not url.startswith(("data:", "javascript:", "about:", "#", "blob:")) and url not in out:
            out[url] = Requisite(url, kind)

    for node in nodes:
        tag, attrs = node.tag, node.attributes
        if "style" in attrs and attrs.get("style"):
            for url, kind in css_urls(attrs["style"] or ""):
                add(url, kind)
        if tag == "link":
            rel = set((attrs.get("rel") or "").lower().split())
            if "stylesheet" in rel and "alternate" not in rel:
                add(attrs.get("href"), "stylesheet")
            elif rel & _ICON_RELS:
                add(attrs.get("href"), "icon")
            elif rel & {"preload", "modulepreload"}:
                kind = "script" if "modulepreload" in rel else _PRELOAD_AS.get((attrs.get("as") or "").lower())
                if kind:
                    add(attrs.get("href"), kind)
        elif tag == "script":
            add(attrs.get("src"), "script")
        elif tag == "img":
            add(attrs.get("src"), "image")
            if attrs.get("srcset"):
                add(srcset_choice(attrs["srcset"] or ""), "image")
        elif tag == "source":
            add(srcset_choice(attrs.get("srcset") or ""), "image")
        elif tag in ("iframe", "frame"):
            add(attrs.get("src"), "iframe")
        elif tag == "video":
            add(attrs.get("poster"), "media")
        elif tag == "input":
            add(attrs.get("src"), "image")
        elif tag == "style":
            for url, kind in css_urls(node.text(deep=True) or ""):
                add(url, kind)
    return list(out.values())


def stylesheet_requisites(css: str) -> list[Requisite]:
    """A stylesheet's own requisites (imports, fonts, images), each URL once."""
    out: dict[str, Requisite] = {}
    for url, kind in css_urls(css):
        out.setdefault(url, Requisite(url, kind))
    return list(out.values())


class RequisiteBudget:
    """How many requisites a page and a host may still have (pure logic): at most ``per_page``
    for one page (its stylesheets' own included), ``per_host`` over the crawl for one host
    (0: no bound), and only of ``kinds``."""

    def __init__(self, per_page: int, per_host: int, kinds: Iterable[str]) -> None:
        self.per_page, self.per_host = per_page, per_host
        self.kinds = frozenset(kinds)
        self._hosts: dict[str, int] = {}

    def admit(self, host: str, kind: str, page_count: int) -> str | None:
        """Why a requisite of ``host`` is refused (``kind``, ``page``, ``host``), or None after
        counting it; ``page_count`` is how many its page has had."""
        if kind not in self.kinds:
            return "kind"
        if self.per_page and page_count >= self.per_page:
            return "page"
        count = self._hosts.get(host, 0)
        if self.per_host and count >= self.per_host:
            return "host"
        self._hosts[host] = count + 1
        return None
