"""Real URLs from Debian packages, for the canonicaliser's tests on real material.

``sid`` names a session in phpBB and a story in Slash and PHP-Nuke: these files hold both kinds
as they were written. ``scripts/system-deps.sh`` installs the packages.
"""

from __future__ import annotations

import re
from pathlib import Path

from .docsites import ensure_files

#: name: (package, path).
URL_FILES = {
    # A Slash site's RSS 1.0 feed (Slash is Slashdot's code): two stories, article.pl?sid=YY/MM/DD/NNNNNNN.
    "slash.rdf": ("libxml-rss-perl", "/usr/share/doc/libxml-rss-perl/examples/1.0/slash.rdf"),
    # AWStats' FAQ: a PHP-Nuke article link (sid=7041) and, in its sample log, a request with
    # Tomcat's ;jsessionid= and the AWStats tracker's own sid=awssession_id...
    "awstats_faq.html": ("awstats", "/usr/share/doc/awstats/html/awstats_faq.html"),
}


def ensure_installed() -> None:
    """Install the packages of :data:`URL_FILES` when root; otherwise fail naming the command."""
    ensure_files(URL_FILES)


def read(name: str) -> bytes:
    """The bytes of one of :data:`URL_FILES`."""
    return Path(URL_FILES[name][1]).read_bytes()


def urls_in(name: str, pattern: str = r"https?://[^\s\"'<>]+") -> list[str]:
    """The absolute URLs written in one of :data:`URL_FILES`, in order (HTML's ``&amp;`` read as ``&``)."""
    text = read(name).decode("latin-1").replace("&amp;", "&")
    return re.findall(pattern, text)
