"""URL canonicalisation: the one function every component uses to name a URL.

Pure logic: no Scrapy, no I/O. A URL that cannot be crawled raises
:class:`InvalidURL` with a short machine-readable ``reason`` that callers count
in stats; nothing here is allowed to kill a crawl.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from w3lib.url import canonicalize_url, safe_url_string

from .errors import InvalidURL

#: Query and path parameters that may carry a session id. A parameter of one of these names is
#: removed only when its value looks like a session token (:func:`is_session_token`): ``sid``
#: is a session id in phpBB and a story id in Slash, PHP-Nuke and LimeSurvey.
DEFAULT_SESSION_PARAMS: tuple[str, ...] = (
    "jsessionid",
    "phpsessid",
    "sid",
    "sessionid",
    "session_id",
    "aspsessionid",
    "cfid",
    "cftoken",
    "zenid",
    "oscsid",
)
DEFAULT_MAX_LENGTH = 2048
_DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 1123 labels (after IDNA); the host as a whole is at most 253 characters.
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


def _check_host(host: str, url: str) -> None:
    if not host:
        raise InvalidURL("bad_host", url)
    if ":" in host:  # urlsplit strips the brackets of an IPv6 literal
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise InvalidURL("bad_host", url) from None
        return
    if len(host) > 253:
        raise InvalidURL("bad_host", url)
    labels = host.rstrip(".").split(".")
    if not all(_LABEL.match(label) for label in labels):
        raise InvalidURL("bad_host", url)


#: What a session token is made of: letters, digits and the separators servers put in them
#: (Tomcat's ``.route``, WebSphere's ``:clone``, WebLogic's ``!``, UUIDs' ``-``, PHP's ``,``).
#: No ``/``, ``%`` or space: a value with a path in it (Slash's ``sid=00/01/25/1430236``) names content.
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9._~!:,=-]{16,512}")
_HEX = re.compile(r"[0-9a-f._:-]+|[0-9A-F._:-]+")
_ISO_DATE = re.compile(r"\d{4}-\d\d-\d\d")
#: Letters and digits a token has at least, whatever its separators.
TOKEN_MIN_ALNUM = 16


def _alternations(alnum: str) -> int:
    """How often a run of letters turns into a run of digits or back."""
    return sum(a.isdigit() != b.isdigit() for a, b in zip(alnum, alnum[1:]))


def is_session_token(value: str) -> bool:
    """Whether ``value`` looks like a session token a server made, not a name of content.

    A session token is random: at least 16 letters and digits, both kinds, and no ``/``. Hex of
    one case (PHP, Tomcat, osCommerce, UUIDs) is random enough as it is; any other alphabet
    must turn from letters to digits or back at least 3 times (Jetty's ``node0a7x2kq9d4m1z8w3n5``), which
    a word with a number (``ISBN9780131103627``), a date (``2001-01-25T14:30:00Z``) or a page
    name (``Main.WebHome``) does not. A small number (``sid=123``) or a date is never one.
    When in doubt the value is kept: a session id left in a URL costs a duplicate fetch (which
    the duplicate-text check catches), a content id taken out merges pages and loses all but one.
    """
    if not _TOKEN_CHARS.fullmatch(value) or _ISO_DATE.search(value):
        return False
    alnum = "".join(c for c in value if c.isalnum())
    digits = sum(c.isdigit() for c in alnum)
    if len(alnum) < TOKEN_MIN_ALNUM or not 0 < digits < len(alnum):
        return False
    return bool(_HEX.fullmatch(value)) or _alternations(alnum) >= 3


def _is_session(name: str, value: str, session_params: frozenset[str]) -> bool:
    return name.lower() in session_params and is_session_token(value)


def _session_free(pairs: list[tuple[str, str]], session_params: frozenset[str]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in pairs if not _is_session(k, v, session_params)]


def canonicalize(
    url: str,
    base: str | None = None,
    *,
    session_params: tuple[str, ...] | frozenset[str] = DEFAULT_SESSION_PARAMS,
    max_length: int = DEFAULT_MAX_LENGTH,
) -> str:
    """Return the canonical form of ``url`` (resolved against ``base``).

    Canonical means: absolute, http(s) only, lower-case scheme and host, IDNA
    host, no default port, no fragment, dot segments resolved, escapes
    normalised, query sorted, session ids removed (a parameter named in
    ``session_params`` whose value :func:`is_session_token`, in the query or in a
    ``;param=`` path segment), and an empty path written as ``/``.
    """
    if not isinstance(url, str):
        raise InvalidURL("malformed", repr(url))
    raw = url.strip()
    if not raw:
        raise InvalidURL("empty", url)
    if len(raw) > max_length * 4:  # don't spend work on absurd inputs
        raise InvalidURL("too_long", raw)
    if any(ord(c) < 32 for c in raw):
        raise InvalidURL("malformed", raw)
    try:
        absolute = urljoin(base, raw) if base else raw
        parts = urlsplit(safe_url_string(absolute))
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise InvalidURL("scheme", raw)
        # A trailing dot names the same host (the DNS root): "dot.test." and "dot.test" must be one
        # politeness key and one URL, or one site is crawled twice and its interval halved.
        host = (parts.hostname or "").lower().rstrip(".")
        port = parts.port  # raises ValueError on a non-numeric or out-of-range port
    except InvalidURL:
        raise
    except (ValueError, UnicodeError):
        raise InvalidURL("malformed", raw) from None
    if parts.username is not None or parts.password is not None:
        # Credentials in links are a classic trap and leak secrets into logs.
        raise InvalidURL("credentials", raw)
    _check_host(host, raw)
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    sessions = frozenset(p.lower() for p in session_params)
    path = parts.path or "/"
    if ";" in path:
        segments = []
        for segment in path.split("/"):
            name, *params = segment.split(";")
            kept = [p for p in params if not _is_session(*p.partition("=")[::2], sessions)]
            segments.append(";".join([name, *kept]))
        path = "/".join(segments)
    query = parts.query
    if query and sessions:
        query = urlencode(_session_free(parse_qsl(query, keep_blank_values=True), sessions))
    try:
        result = canonicalize_url(urlunsplit((scheme, netloc, path, query, "")))
    except (ValueError, UnicodeError):
        raise InvalidURL("malformed", raw) from None
    if len(result) > max_length:
        raise InvalidURL("too_long", raw)
    return result


def host_of(url: str) -> str:
    """The host name of a canonical URL (no port): the default politeness key."""
    return urlsplit(url).hostname or ""


class LinkCanonicalizer:
    """:func:`canonicalize` for the links of pages, remembering its answers.

    A site's navigation repeats on every page, so most links a crawler reads are
    hrefs it has canonicalised before, relative to another page of the same
    directory. An href resolves the same against any base in one directory (RFC
    3986 drops the base's last segment), except an empty one or one that starts
    with ``?`` or ``#``; so answers are remembered per (href, the base's directory),
    refusals included, and absolute ``http(s)://`` hrefs per href alone. At most
    ``size`` answers are kept (then it starts again): some 370 bytes each, and a broad crawl's
    links are mostly new, so the memo's high-water mark is a worker's resident set. Pure logic.

    A refusal is remembered as its reason and URL, and raised as a new exception each
    time: an exception object raised again grows its traceback by the raising frames, and
    a refused href in a site's navigation would keep every page that linked it (its parse
    tree too) alive for as long as the memo.
    """

    def __init__(self, session_params: tuple[str, ...] | frozenset[str] = DEFAULT_SESSION_PARAMS,
                 max_length: int = DEFAULT_MAX_LENGTH, size: int = 50_000) -> None:
        self.session_params = frozenset(session_params)
        self.max_length = max_length
        self.size = size
        self._memo: dict[tuple[str, str], str | tuple[str, str]] = {}  # URL, or (reason, url) refused

    @staticmethod
    def context(href: str, base: str) -> str:
        """The part of ``base`` that ``href`` resolves against."""
        head = href[:8].lower()
        if head.startswith(("http://", "https://")):
            return ""
        if not href or href[0] in "?#" or href.lstrip() != href:
            return base
        cut = base.split("#", 1)[0].split("?", 1)[0]
        slash = cut.find("/", cut.find("//") + 2)
        return cut + "/" if slash < 0 else cut[: cut.rfind("/") + 1]

    def __call__(self, href: str, base: str) -> str:
        """The canonical URL of ``href`` on a page at ``base``; raises :class:`InvalidURL`."""
        if "#" in href and href.isprintable():
            # The canonical form has no fragment: "a.html#s1" and "a.html#s2" are one answer
            # (an index page links hundreds of sections). Not when a control character could
            # hide in the fragment: canonicalize() refuses those.
            href = href.split("#", 1)[0] or "#"  # "#top" stays a link to this very page
        key = (href, self.context(href, base))
        found = self._memo.get(key)
        if found is None:
            try:
                found = canonicalize(href, base, session_params=self.session_params, max_length=self.max_length)
            except InvalidURL as exc:
                found = (exc.reason, exc.url)
            if len(self._memo) >= self.size:
                self._memo.clear()
            self._memo[key] = found
        if isinstance(found, tuple):
            raise InvalidURL(*found)
        return found

    def __reduce__(self) -> tuple:
        # Sent to the page helper process as its configuration, not its memo: there it is
        # the helper's own one for that configuration, memo and all.
        return canonicalizer_for, (tuple(sorted(self.session_params)), self.max_length, self.size)


_canonicalizers: dict[tuple, LinkCanonicalizer] = {}


def canonicalizer_for(session_params: tuple[str, ...] = DEFAULT_SESSION_PARAMS, max_length: int = DEFAULT_MAX_LENGTH,
                      size: int = 50_000) -> LinkCanonicalizer:
    """The process's one :class:`LinkCanonicalizer` of this configuration: the spider and the
    page threads share its memo (each answer is the same wherever it is computed)."""
    key = (tuple(sorted(session_params)), max_length, size)
    found = _canonicalizers.get(key)
    if found is None:
        found = _canonicalizers[key] = LinkCanonicalizer(session_params, max_length, size)
    return found
