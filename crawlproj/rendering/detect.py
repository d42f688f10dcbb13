"""Does a page need JavaScript to show its text and links? Judged on the static HTML (pure).

Rendering costs 10-20x a static fetch (seed 002), so only pages whose static
HTML is an empty shell are rendered. The heuristic, in the order it is reported:

* ``empty_mount``: an application mount node (``#app``, ``#root``, ``#__next``,
  ``#__nuxt``, ``<app-root>``...) with nothing inside, on a page with little text;
* ``noscript``: a ``<noscript>`` asking for JavaScript, on a page with little text;
* ``framework``: a framework marker (React, Vue, Angular, Next, Nuxt, Svelte) on a
  page with little text and few links;
* ``script_heavy``: little text and few links against much script.

"Little text" is fewer than ``min_text`` characters of visible text (scripts,
styles, ``<noscript>`` and ``<template>`` left out); "few links" is fewer than
``min_links`` ``<a href>``; "much script" is at least ``script_ratio`` times the
text and at least 1 KiB. A server-rendered Next or Nuxt page carries the markers
but also its text, so it is not rendered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.html
from lxml import etree

#: Ids of the nodes single-page applications mount into.
MOUNT_IDS = frozenset({"app", "root", "__next", "__nuxt", "___gatsby", "svelte", "react-root", "main-app",
                       "application", "vue-app", "ng-app", "spa-root"})
MOUNT_TAGS = frozenset({"app-root"})  # Angular's default root component
#: Framework markers in attributes, script URLs and inline scripts.
FRAMEWORK_PATTERNS = {
    "react": re.compile(r"data-reactroot|react(?:-dom)?(?:\.production)?(?:\.min)?\.js|__REACT_DEVTOOLS|createRoot\(", re.I),
    "vue": re.compile(r"data-v-app|data-server-rendered|vue(?:\.global|\.runtime)?(?:\.prod)?(?:\.min)?\.js|createApp\(", re.I),
    "angular": re.compile(r"ng-version|ng-app|angular(?:\.min)?\.js|<app-root", re.I),
    "next": re.compile(r"__NEXT_DATA__|/_next/static/"),
    "nuxt": re.compile(r"__NUXT__|/_nuxt/"),
    "svelte": re.compile(r"svelte-[a-z0-9]{5,}|__sveltekit", re.I),
}
_NOSCRIPT_JS = re.compile(r"javascript|java script|ジャバスクリプト|スクリプト|JS\b", re.I)
_INVISIBLE = ("script", "style", "noscript", "template")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Verdict:
    """What the static HTML shows, and whether it needs rendering (``reasons`` says why)."""

    needs: bool
    reasons: tuple[str, ...]
    text_chars: int
    links: int
    script_bytes: int
    frameworks: tuple[str, ...] = ()


def needs_rendering(html: str, min_text: int = 200, min_links: int = 3, script_ratio: float = 4.0) -> Verdict:
    """Judge a page's static HTML (see the module docstring for the rules)."""
    try:
        root = lxml.html.document_fromstring(html) if html.strip() else None
    except (etree.ParserError, ValueError):
        root = None
    if root is None:
        return Verdict(False, (), 0, 0, 0)
    script_bytes = sum(len(s.text or "") for s in root.iter("script"))
    frameworks = tuple(name for name, pattern in FRAMEWORK_PATTERNS.items() if pattern.search(html))
    noscript = any(_NOSCRIPT_JS.search(n.text_content() or "") for n in root.iter("noscript"))
    body = root.find("body")
    text_chars = len(_SPACE.sub(" ", _visible_text(body if body is not None else root)).strip())
    links = sum(1 for a in root.iter("a") if a.get("href"))
    empty_mount = any(_is_empty(node) for node in root.iter()
                      if isinstance(node.tag, str) and (node.get("id") in MOUNT_IDS or node.tag in MOUNT_TAGS))
    little_text = text_chars < min_text
    few_links = links < min_links
    reasons = []
    if empty_mount and little_text:
        reasons.append("empty_mount")
    if noscript and little_text:
        reasons.append("noscript")
    if frameworks and little_text and few_links:
        reasons.append("framework")
    if little_text and few_links and script_bytes >= max(1024, script_ratio * text_chars):
        reasons.append("script_heavy")
    return Verdict(bool(reasons), tuple(reasons), text_chars, links, script_bytes, frameworks)


def _visible_text(node: etree._Element) -> str:
    parts: list[str] = []

    def walk(el: etree._Element) -> None:
        if isinstance(el.tag, str) and el.tag in _INVISIBLE:
            return  # its tail is still visible; the caller adds it
        if el.text and isinstance(el.tag, str):
            parts.append(el.text)
        for child in el:
            walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(node)
    return " ".join(parts)


def _is_empty(node: etree._Element) -> bool:
    """A mount node with no element children and no text: the app has not run yet."""
    return len(node) == 0 and not (node.text or "").strip()
