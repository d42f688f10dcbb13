"""What publishers say of AI use, read (pure: no I/O).

Three sources, all recorded as ``{name: value}``:

* robots.txt ``Content-Signal`` lines (contentsignals.org): ``search=yes, ai-input=no,
  ai-train=no`` in the group that applies to the crawler, read by
  :meth:`crawlproj.politeness.robots_rules.RobotsRules.content_signals`;
* the W3C TDMRep ``tdm-reservation`` (``1``: text and data mining rights reserved) and
  ``tdm-policy`` (a URL) response headers, per page;
* ``/.well-known/tdmrep.json`` (TDMRep): an array of ``{"location", "tdm-reservation",
  "tdm-policy"}`` rules per host; a location is a path pattern as in robots.txt (``*`` any
  characters, a final ``$`` the end), and the first rule that matches a path applies.

A page's signals are keyed ``source:name`` (``robots.txt:ai-train``, ``header:tdm-reservation``,
``tdmrep.json:tdm-reservation``). :func:`reserved_uses` turns them into the uses the
publisher reserves, out of :data:`USES`: a Content-Signal ``=no`` reserves that use; a TDM
reservation reserves ``tdm`` and the AI uses, which are text and data mining.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

#: The uses an operator may name in ``AI_USE_SKIP``.
USES = ("search", "ai-input", "ai-train", "tdm")
#: The uses a TDM reservation (TDMRep, EU DSM Directive art. 4) covers.
TDM_USES = frozenset({"tdm", "ai-input", "ai-train"})
#: A tdmrep.json larger than this is not read (it is a short list of rules).
TDMREP_MAX_BYTES = 64 * 1024
TDMREP_PATH = "/.well-known/tdmrep.json"


def parse_content_signal(value: str) -> dict[str, str]:
    """``search=yes, ai-train=no`` as ``{"search": "yes", "ai-train": "no"}`` (names lower case;
    values other than yes and no, and pairs without ``=``, are left out)."""
    signals = {}
    for pair in value.split(","):
        name, eq, answer = pair.partition("=")
        name, answer = name.strip().lower(), answer.strip().lower()
        if eq and name and answer in ("yes", "no"):
            signals[name] = answer
    return signals


def header_signals(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The TDMRep headers of a response (``tdm-reservation``, ``tdm-policy``); a reservation
    other than ``0`` or ``1`` is left out."""
    signals = {}
    for name, value in headers:
        name, value = name.strip().lower(), value.strip()
        if name == "tdm-reservation" and value in ("0", "1"):
            signals[name] = value
        elif name == "tdm-policy" and value:
            signals[name] = value
    return signals


def _pattern(location: str) -> re.Pattern[str]:
    anchored = location.endswith("$")
    body = ".*".join(re.escape(part) for part in location.rstrip("$").split("*"))
    return re.compile(body + ("$" if anchored else ""))


class TdmRep:
    """One host's ``/.well-known/tdmrep.json``. Raises ValueError when it is not a list of rules."""

    def __init__(self, body: bytes | str) -> None:
        if len(body) > TDMREP_MAX_BYTES:
            raise ValueError(f"over {TDMREP_MAX_BYTES} bytes")
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"not JSON: {exc}") from None
        if not isinstance(data, list):
            raise ValueError("not a list of rules")
        self.rules: list[tuple[str, re.Pattern[str], dict[str, str]]] = []  # (location, its pattern, signals)
        for rule in data:
            if not isinstance(rule, dict) or not isinstance(rule.get("location"), str):
                continue
            reservation = rule.get("tdm-reservation")
            if reservation not in (0, 1, "0", "1"):
                continue
            signals = {"tdm-reservation": str(reservation)}
            if isinstance(rule.get("tdm-policy"), str) and rule["tdm-policy"]:
                signals["tdm-policy"] = rule["tdm-policy"]
            location = rule["location"].strip() or "/"
            location = location if location.startswith(("/", "*")) else "/" + location
            self.rules.append((location, _pattern(location), signals))

    def match(self, path: str) -> dict[str, str]:
        """The signals of the first rule whose location matches ``path`` (``{}``: none does)."""
        for _, pattern, signals in self.rules:
            if pattern.match(path or "/"):
                return signals
        return {}

    @property
    def reserves_any(self) -> bool:
        return any(signals["tdm-reservation"] == "1" for _, _, signals in self.rules)


def reserved_uses(signals: dict[str, str]) -> set[str]:
    """The uses of :data:`USES` that a page's signals (keyed ``source:name``) reserve."""
    reserved = set()
    for key, value in signals.items():
        _, _, name = key.partition(":")
        if name == "tdm-reservation" and value == "1":
            reserved |= TDM_USES
        elif name in USES and value == "no":
            reserved.add(name)
    return reserved
