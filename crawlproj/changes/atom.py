"""An Atom feed (RFC 4287) of a crawl's changes (pure): one entry per change, newest first, its
diff as the entry's content. Served by the dashboard at ``/changes.atom``."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import datetime, timezone

ATOM = "http://www.w3.org/2005/Atom"


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _add(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, f"{{{ATOM}}}{tag}", attrs)
    if text is not None:
        el.text = text
    return el


def atom_feed(changes: Sequence, self_url: str, title: str = "crawlproj: changes", now: float = 0.0) -> bytes:
    """The feed of ``changes`` (:class:`~crawlproj.store.changes.ChangeRecord`, newest first)."""
    ET.register_namespace("", ATOM)
    feed = ET.Element(f"{{{ATOM}}}feed")
    _add(feed, "id", f"urn:crawlproj:changes:{self_url.split('?', 1)[0]}")
    _add(feed, "title", title)
    _add(feed, "updated", _iso(changes[0].at if changes else now))
    _add(feed, "link", rel="self", href=self_url)
    author = _add(feed, "author")
    _add(author, "name", "crawlproj")
    for c in changes:
        entry = _add(feed, "entry")
        _add(entry, "id", f"urn:crawlproj:change:{c.id}")
        kind = "changed" if c.meaningful else "noise"
        _add(entry, "title", f"{c.title_after or c.url} {kind} ({c.reason}, {c.similarity:.0%} alike, "
                             f"+{c.lines_added} -{c.lines_removed})")
        _add(entry, "updated", _iso(c.at))
        _add(entry, "link", rel="alternate", href=c.url)
        _add(entry, "category", term="meaningful" if c.meaningful else "noise")
        summary = [f"links added: {u}" for u in c.links_added] + [f"links removed: {u}" for u in c.links_removed]
        if (c.title_before or "") != (c.title_after or ""):
            summary.insert(0, f"title: {c.title_before} -> {c.title_after}")
        _add(entry, "summary", "\n".join(summary) or f"{c.reason} changed")
        _add(entry, "content", c.diff, type="text")
    return ET.tostring(feed, encoding="utf-8", xml_declaration=True)
