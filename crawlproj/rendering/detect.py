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

from ..content.page import ParsedPage

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
_MOUNT_SELECTOR = ", ".join([*(f"#{i}" for i in sorted(MOUNT_IDS)), *sorted(MOUNT_TAGS)])


@dataclass(frozen=True)
class Verdict:
    """What the static HTML shows, and whether it needs rendering (``reasons`` says why)."""

    needs: bool
    reasons: tuple[str, ...]
    text_chars: int
    links: int
    script_bytes: int
    frameworks: tuple[str, ...] = ()


def needs_rendering(page: ParsedPage | str, min_text: int = 200, min_links: int = 3,
                    script_ratio: float = 4.0) -> Verdict:
    """Judge a page's static HTML (see the module docstring for the rules).

    Every rule needs little text, so a page with enough visible text is settled by that
    one count, read from the page's shared parse; the framework patterns, mount nodes
    and ``<noscript>`` are looked at only for the rest.
    """
    if isinstance(page, str):
        page = ParsedPage(page)
    text_chars, links = page.visible_text_chars, page.anchor_count
    script_bytes = page.inline_script_bytes
    if text_chars >= min_text or not page.html.strip():
        return Verdict(False, (), text_chars, links, script_bytes)
    few_links = links < min_links
    frameworks = tuple(name for name, pattern in FRAMEWORK_PATTERNS.items() if pattern.search(page.html))
    reasons = []
    if page.empty_nodes(_MOUNT_SELECTOR):
        reasons.append("empty_mount")
    if any(_NOSCRIPT_JS.search(text) for text in page.noscript_texts()):
        reasons.append("noscript")
    if frameworks and few_links:
        reasons.append("framework")
    if few_links and script_bytes >= max(1024, script_ratio * text_chars):
        reasons.append("script_heavy")
    return Verdict(bool(reasons), tuple(reasons), text_chars, links, script_bytes, frameworks)
