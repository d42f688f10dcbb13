"""A page's robots directives: ``<meta name=robots>`` and the ``X-Robots-Tag`` header (pure).

Both say the same things in the same words (Google's and Bing's documented syntax, which
other crawlers follow): a comma-separated list of directives, ``none`` meaning
``noindex, nofollow``, and ``unavailable_after: <date>`` meaning ``noindex`` from that
date on. The header may be sent several times, and each value may start with a crawler's
name (``X-Robots-Tag: crawlproj: nofollow``): a named value applies only to that crawler,
an unnamed one to all. The crawler acts on ``noindex`` (the page is not stored) and
``nofollow`` (its links are not followed); the rest are recorded as read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import timezone
from email.utils import parsedate_to_datetime

from .sitemaps import w3c_datetime

#: Directives that carry a value after a colon (so that colon does not name a crawler).
VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
_NAMED = re.compile(r"\s*([A-Za-z0-9._-]+)\s*:\s*(.*)", re.S)
#: ``unavailable_after``'s date may hold commas (RFC 850 and 1123 dates): it runs to the
#: next directive or the end.
_UNAVAILABLE_AFTER = re.compile(r"unavailable_after\s*:\s*(.+?)\s*(?=,\s*(?:[a-z-]+\s*(?:,|:|$))|$)", re.I | re.S)


def _date(text: str) -> float | None:
    """Epoch seconds of an RFC 822/850/1123 or ISO 8601 date (UTC when it names no zone)."""
    text = text.strip()
    try:
        parsed = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return w3c_datetime(text)  # ISO 8601 as sitemaps write it
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


def parse_directives(text: str, now: float) -> set[str]:
    """The directives of one list, lower case, with ``none`` and a past ``unavailable_after``
    turned into what they mean."""
    out: set[str] = set()
    for match in _UNAVAILABLE_AFTER.finditer(text):
        when = _date(match.group(1))
        if when is not None and now >= when:
            out.add("noindex")
    rest = _UNAVAILABLE_AFTER.sub("", text)
    for part in rest.split(","):
        name = part.split(":", 1)[0].strip().lower()
        if name:
            out.add(name)
    if "none" in out:
        out.update({"noindex", "nofollow"})
    return out


def header_directives(values: Iterable[str], agent: str, now: float) -> set[str]:
    """The directives of every ``X-Robots-Tag`` value that applies to ``agent`` (unnamed, or
    named for it, case-insensitively)."""
    agent = agent.lower()
    out: set[str] = set()
    for value in values:
        named = _NAMED.match(value)
        name = named.group(1).lower() if named else None
        if name is not None and name not in VALUED and name not in ("none", "all"):  # "crawler: directives"
            if name != agent:
                continue
            value = named.group(2)  # type: ignore[union-attr]
        out |= parse_directives(value, now)
    return out
