"""robots.txt rules as RFC 9309 and Google's reference parser read them (pure: no I/O).

protego matches paths well (``*``, ``$``, percent-encoding, the longest match, allow on a
tie) but reads the file's structure its own way. This layer reads the structure as the RFC
says, and hands protego only the rules of the group that applies:

* the file: at most 500 KiB (RFC 9309 2.5), a UTF-8 byte-order mark skipped, lines ended by
  CR, LF or CRLF, ``#`` comments;
* a line is ``key: value``; a line without a colon is skipped, and does not end its group;
* a group is one or more ``User-agent`` lines and the rules after them; rules before any
  ``User-agent`` line belong to no group;
* the crawler's product token is the part of its user agent before ``/`` or a space
  (``crawlproj/0.1 (+https://...)`` is ``crawlproj``); a group's name is read as the
  reference parser reads it, its leading run of letters, ``-`` and ``_`` (``crawlproj/2.0``
  and ``crawlproj images`` name ``crawlproj``), and names match case-insensitively and
  exactly (a group for ``crawl`` is not one for ``crawlproj``);
* every group naming the crawler applies, their rules merged; if none does, every ``*``
  group; if none does either, everything is allowed;
* ``/robots.txt`` itself is always allowed.

``Crawl-delay`` (not in the RFC) and ``Content-Signal`` (contentsignals.org: what the
publisher allows of AI use) are read from the groups that apply; ``Sitemap`` lines are the
file's, wherever they stand.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from protego import Protego

from .ai_signal_rules import parse_content_signal

#: RFC 9309 2.5: a crawler must parse at least 500 KiB; we parse exactly that much.
MAX_BYTES = 500 * 1024
_LINES = re.compile(r"\r\n|\r|\n")
_NAME = re.compile(r"[A-Za-z_-]*")


def product_token(user_agent: str) -> str:
    """The crawler's product token: its user agent up to the first ``/`` or space, lower case."""
    return re.split(r"[/\s]", user_agent.strip(), maxsplit=1)[0].lower()


def group_name(value: str) -> str:
    """The name a ``User-agent`` line gives, as the reference parser reads it (``*`` stays ``*``)."""
    value = value.strip()
    return "*" if value.startswith("*") else _NAME.match(value).group(0).lower()  # type: ignore[union-attr]


class RobotsRules:
    """One robots.txt, read once; :meth:`allowed` answers for any crawler and URL."""

    def __init__(self, robots_txt: bytes | str) -> None:
        if isinstance(robots_txt, str):
            robots_txt = robots_txt.encode("utf-8")
        text = robots_txt[:MAX_BYTES].decode("utf-8", errors="replace").removeprefix("\ufeff")
        self.groups: list[tuple[set[str], list[tuple[str, str]]]] = []  # (names, [(key, value)])
        self.sitemaps: list[str] = []
        self._matchers: dict[str, Protego] = {}  # user agent -> protego over its group's rules
        agents_open = False  # the last directive was a User-agent line: more names join its group
        for line in _LINES.split(text):
            line = line.split("#", 1)[0].strip()
            if ":" not in line:
                continue  # not a directive; the group goes on
            key, value = (part.strip() for part in line.split(":", 1))
            key = key.lower()
            if key == "user-agent":
                if not agents_open:
                    self.groups.append((set(), []))
                self.groups[-1][0].add(group_name(value))
                agents_open = True
            elif key == "sitemap":
                if value:
                    self.sitemaps.append(value)
            else:
                agents_open = False
                if self.groups and key in ("allow", "disallow", "crawl-delay", "content-signal"):
                    self.groups[-1][1].append((key, value))

    def rules_for(self, user_agent: str) -> list[tuple[str, str]]:
        """The rules of every group that applies to ``user_agent``, merged, in file order."""
        token = product_token(user_agent)
        named = [rules for names, rules in self.groups if token in names]
        chosen = named or [rules for names, rules in self.groups if "*" in names]
        return [rule for rules in chosen for rule in rules]

    def allowed(self, url: str, user_agent: str) -> bool:
        if urlsplit(url).path == "/robots.txt":
            return True
        return self._matcher(user_agent).can_fetch(url, "*")

    def crawl_delay(self, user_agent: str) -> float | None:
        return self._matcher(user_agent).crawl_delay("*")

    def content_signals(self, user_agent: str) -> dict[str, str]:
        """The ``Content-Signal`` values of the groups that apply (a later line overrides a name)."""
        signals: dict[str, str] = {}
        for key, value in self.rules_for(user_agent):
            if key == "content-signal":
                signals.update(parse_content_signal(value))
        return signals

    def _matcher(self, user_agent: str) -> Protego:
        """protego over just the rules that apply (it matches paths; this chose the rules).
        Kept per user agent string: a crawl asks with one, once per request."""
        matcher = self._matchers.get(user_agent)
        if matcher is None:
            lines = ["User-agent: *", *(f"{key}: {value}" for key, value in self.rules_for(user_agent)
                                        if value and key != "content-signal")]
            matcher = self._matchers[user_agent] = Protego.parse("\n".join(lines))
        return matcher


def is_allowed(robots_txt: bytes | str, user_agent: str, url: str) -> bool:
    """Whether ``user_agent`` may fetch ``url`` under ``robots_txt`` (RFC 9309; see the module)."""
    return RobotsRules(robots_txt).allowed(url, user_agent)
