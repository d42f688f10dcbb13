"""Does a page need JavaScript to show its text and links? Judged on the static HTML (pure).

Rendering costs 10-20x a static fetch (the asyncio crawler report), so only pages whose static HTML
is an application shell are rendered. One general rule, whatever the framework:

* the page shows **little visible text**: fewer than ``min_text`` characters (scripts,
  styles, ``<noscript>`` and ``<template>`` left out) in at most :data:`SHELL_TEXTS`
  pieces (a loading message, a name, a button), **and**
* **few links** (fewer than ``min_links`` ``<a href>``), **and**
* it **loads script**: a ``<script src>`` or an inline script, classic or module
  (data blocks such as JSON-LD and import maps are not script).

A small page of content has more pieces than a shell, however short it is: a heading, a
sentence, a footer (Doxygen's near-empty reference pages have five to seven, and their
script only adds a navigation tree). The mount node does not matter: an app may mount into ``#root``, ``#swagger-ui`` or a
custom element. A server-rendered page, with its text and links in the HTML, is left
static whatever frameworks it uses. A page with little text but no script has nothing
to render. What the rule gets wrong on a host, the per-host evidence
(:mod:`crawlproj.rendering.hosts`) finds by rendering samples.

The reasons name what the shell loads (``external_script``, ``module_script``,
``inline_script``). Every count comes from the page's shared parse, cheapest first: the
links (already read by the spider) settle most pages for free, the visible text most of
the rest; only a near-empty page is walked for its pieces of text and its scripts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..content.page import SHELL_TEXTS, ParsedPage


@dataclass(frozen=True)
class Verdict:
    """What the static HTML shows, and whether it needs rendering (``reasons`` says why)."""

    needs: bool
    reasons: tuple[str, ...]
    links: int


def needs_rendering(page: ParsedPage | str, min_text: int = 200, min_links: int = 3) -> Verdict:
    """Judge a page's static HTML (see the module docstring for the rule)."""
    if isinstance(page, str):
        page = ParsedPage(page)
    links = page.anchor_count  # read from the links the spider has already taken: free
    if links >= min_links or not page.html.strip():
        return Verdict(False, (), links)
    if page.visible_text_chars >= min_text or page.text_pieces(SHELL_TEXTS + 1) > SHELL_TEXTS:
        return Verdict(False, (), links)
    scripts = page.scripts
    reasons = tuple(kind for kind, present in (("external_script", scripts.external), ("module_script", scripts.module),
                                               ("inline_script", scripts.inline_bytes)) if present)
    return Verdict(bool(reasons), reasons, links)
