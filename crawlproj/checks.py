"""The checks of crawlproj's settings: what each setting accepts (a leaf: no domain imports).

Each check reads a setting the way its component will (``getfloat``, ``getlist``, ...) so a
value given as a string with ``-s`` is judged exactly as it will be used. A bad value raises
:class:`~crawlproj.errors.SettingsError` naming the setting. :mod:`crawlproj.defaults` names
a check for every setting; :mod:`crawlproj.config` runs them. A check that needs a domain's
own parser (a store URI, an ordering's spec) loads it by its path when it runs, as Scrapy
loads components: the settings core imports no domain module.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable

from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from .errors import SettingsError


Check = Callable[[BaseSettings, str], None]


def accepts(text: str) -> Callable[[Check], Check]:
    """Name what a check accepts (shown in docs/settings.md)."""
    def mark(check: Check) -> Check:
        check.accepts = text  # type: ignore[attr-defined]
        return check

    return mark


@accepts("any string")
def text(settings: BaseSettings, name: str) -> None:
    raw = settings.get(name)
    if raw is not None and not isinstance(raw, str):
        raise SettingsError(name, raw, "expected a string")


@accepts("an importable class path")
def class_path(settings: BaseSettings, name: str) -> None:
    non_empty(settings, name)
    if not re.fullmatch(r"[A-Za-z_][\w.]*\.[A-Za-z_]\w*", str(settings.get(name))):
        raise SettingsError(name, settings.get(name), "expected a dotted class path such as package.module.Class")


def _mapping(keys: str, values: str, key_ok: Callable[[object], bool],
             value_ok: Callable[[object], bool]) -> Check:
    """A dict setting of Scrapy's kind (merged with Scrapy's own): {key: value or None}."""
    def check(settings: BaseSettings, name: str) -> None:
        raw = settings.get(name)
        try:
            values_ = settings.getdict(name)
        except (TypeError, ValueError):
            raise SettingsError(name, raw, f"expected a dict of {keys} to {values}") from None
        for key, value in values_.items():
            if not key_ok(key) or not (value is None or value_ok(value)):
                raise SettingsError(name, raw, f"{key!r}: expected {keys} and {values} (or None)")

    check.accepts = f"{{{keys}: {values} or None}} (merged with Scrapy's own)"  # type: ignore[attr-defined]
    return check


def _path_or_class(value: object) -> bool:
    return isinstance(value, (str, type))


#: Components by order (middlewares, pipelines, extensions, add-ons), and download handlers by scheme.
components = _mapping("a class path", "an order", _path_or_class,
                      lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
handlers = _mapping("a URL scheme", "a class path", lambda k: isinstance(k, str), _path_or_class)


#: Feed exporters by format (Scrapy's FEED_EXPORTERS).
exporters = _mapping("a feed format", "a class path", lambda k: isinstance(k, str), _path_or_class)


@accepts("None, a list of record fields, or {field: column name} (docs/exporting.md)")
def export_fields(settings: BaseSettings, name: str) -> None:
    unknown_fields = load_object("crawlproj.exports.records.unknown_fields")

    raw = settings.get(name)
    if raw is None:
        return
    try:
        fields = settings.getdictorlist(name)
    except (TypeError, ValueError):
        raise SettingsError(name, raw, "expected a list of field names, or {field: column name}") from None
    if unknown_fields(fields):
        FIELDS = load_object("crawlproj.exports.records.FIELDS")
        raise SettingsError(name, raw, f"unknown field {unknown_fields(fields)[0]!r}; choose from {', '.join(FIELDS)}")


@accepts("{URI: feed options} (Scrapy's FEEDS, set by -o and -O): a known format, a file that can be written")
def feeds(settings: BaseSettings, name: str) -> None:
    """Each feed's format and fields are known and its file can be written (crawlproj.exports.targets)."""
    raw = settings.get(name)
    try:
        given = settings.getdict(name)
    except (TypeError, ValueError):
        raise SettingsError(name, raw, "expected {URI: {'format': ...}}") from None
    if not given:
        return
    feed_problem = load_object("crawlproj.exports.targets.feed_problem")
    formats = [f for f, path in settings.getwithbase("FEED_EXPORTERS").items() if path]
    default_fields = settings.getdictorlist("FEED_EXPORT_FIELDS") or None
    for uri, options in given.items():
        problem = feed_problem(str(uri), dict(options or {}), formats, default_fields, settings.getint("WORKERS") or 1)
        if problem:
            raise SettingsError(name, str(uri), f"{problem} (-o and -O set {name})")


def number(kind: type, low: float, inclusive: bool = True, high: float | None = None,
           high_inclusive: bool = True) -> Callable[[BaseSettings, str], None]:
    """The one range check: a ``kind`` (int or float) from ``low`` (``inclusive`` or not), up to
    ``high`` (``high_inclusive`` or not) when given."""
    def check(settings: BaseSettings, name: str) -> None:
        raw = settings.get(name)
        try:
            value = kind(raw)
        except (TypeError, ValueError):
            raise SettingsError(name, raw, f"expected a {kind.__name__}") from None
        if not math.isfinite(value):  # nan passes every comparison and stalls a crawl
            raise SettingsError(name, raw, "must be a finite number")
        if value < low or (not inclusive and value == low):
            raise SettingsError(name, raw, f"must be {'>=' if inclusive else '>'} {low:g}")
        if high is not None and (value > high or (not high_inclusive and value == high)):
            raise SettingsError(name, raw, f"must be {'<=' if high_inclusive else '<'} {high:g}")

    what = "an integer" if kind is int else "a number"
    if high is None:
        check.accepts = f"{what} {'>=' if inclusive else '>'} {low:g}"
    else:
        check.accepts = (f"{what}, {low:g} {'<=' if inclusive else '<'} x "
                         f"{'<=' if high_inclusive else '<'} {high:g}")
    return check


#: Shares and probabilities, by which ends of 0..1 they take.
fraction = number(float, 0, inclusive=False, high=1, high_inclusive=False)
fraction_or_one = number(float, 0, inclusive=False, high=1)
probability = number(float, 0, high=1, high_inclusive=False)
unit_interval = number(float, 0, high=1)


@accepts("a list of non-empty strings")
def string_list(settings: BaseSettings, name: str) -> None:
    raw = settings.get(name)
    try:
        values = settings.getlist(name)
    except ValueError:
        raise SettingsError(name, raw, "expected a list of strings") from None
    if not all(isinstance(v, str) and v.strip() for v in values):
        raise SettingsError(name, raw, "expected a list of non-empty strings")


def _list_of(settings: BaseSettings, name: str, allowed_path: str, what: str) -> None:
    """A list of strings each among the values at ``allowed_path`` (loaded when checked)."""
    allowed = load_object(allowed_path)
    string_list(settings, name)
    unknown = [v for v in settings.getlist(name) if v not in allowed]
    if unknown:
        raise SettingsError(name, settings.get(name), f"unknown {what} {unknown[0]!r}; choose from {', '.join(allowed)}")


@accepts("a list of: search, ai-input, ai-train, tdm")
def ai_uses(settings: BaseSettings, name: str) -> None:
    _list_of(settings, name, "crawlproj.politeness.ai_signal_rules.USES", "use")


@accepts("a list of: stylesheet, script, image, icon, iframe, media, font")
def requisite_kinds(settings: BaseSettings, name: str) -> None:
    _list_of(settings, name, "crawlproj.content.requisites.KINDS", "kind")


@accepts("a list of regular expressions")
def regex_list(settings: BaseSettings, name: str) -> None:
    string_list(settings, name)
    for pattern in settings.getlist(name):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SettingsError(name, pattern, f"not a regular expression: {exc}") from None


@accepts("a list of integers")
def int_list(settings: BaseSettings, name: str) -> None:
    raw = settings.get(name)
    try:
        [int(v) for v in settings.getlist(name)]
    except (TypeError, ValueError):
        raise SettingsError(name, raw, "expected a list of integers") from None


@accepts("true or false")
def boolean(settings: BaseSettings, name: str) -> None:
    try:
        settings.getbool(name)
    except ValueError:
        raise SettingsError(name, settings.get(name), "expected true or false") from None


@accepts("a non-empty string")
def non_empty(settings: BaseSettings, name: str) -> None:
    if not str(settings.get(name) or "").strip():
        raise SettingsError(name, settings.get(name), "must not be empty")


def choice(*allowed: str) -> Callable[[BaseSettings, str], None]:
    def check(settings: BaseSettings, name: str) -> None:
        if settings.get(name) not in allowed:
            raise SettingsError(name, settings.get(name), f"choose one of: {', '.join(allowed)}")

    check.accepts = "one of " + ", ".join(allowed)
    return check


@accepts("sqlite:///relative/path or sqlite:////absolute/path")
def store_uri(settings: BaseSettings, name: str) -> None:
    parse_store_uri = load_object("crawlproj.store.parse_store_uri")

    try:
        parse_store_uri(settings.get(name))
    except ValueError as exc:
        raise SettingsError(name, settings.get(name), str(exc)) from None


@accepts("{pattern: address} or \"pattern=address,...\"")
def host_resolve(settings: BaseSettings, name: str) -> None:
    parse_host_resolve = load_object("crawlproj.resolver.parse_host_resolve")

    try:
        parse_host_resolve(settings.get(name))
    except ValueError as exc:
        raise SettingsError(name, settings.get(name), str(exc)) from None


@accepts("a Chromium executable, or empty: found on its own")
def chromium(settings: BaseSettings, name: str) -> None:
    """A crawl that may render needs a browser; say how to get one before the crawl starts."""
    find_chromium = load_object("crawlproj.rendering.browser.find_chromium")
    INSTALL_HINT = load_object("crawlproj.rendering.browser.INSTALL_HINT")

    if settings.get("RENDER_MODE") == "never":
        return
    configured = str(settings.get(name) or "")
    if find_chromium(configured) is None:
        problem = (f"{configured} is not an executable file" if configured
                   else "no Chromium found (/usr/bin/chromium, or chromium on PATH)")
        raise SettingsError(name, configured, f"{problem}; install it with `{INSTALL_HINT}`, "
                                              "point CHROMIUM_PATH at a Chromium, or set RENDER_MODE=never")


#: Marks the shipped User-Agent: a crawl of the real web must say who runs it.
PLACEHOLDER_CONTACT = "example.invalid"


#: A contact in a User-Agent: a URL or an e-mail address (as "+https://..." in Googlebot's).
_CONTACT = re.compile(r"https?://|\bwww\.|[\w.+-]+@[\w-]+\.[\w.-]+")


def identity(settings: BaseSettings, name: str = "USER_AGENT") -> None:
    """Checked after every other setting: a bad value elsewhere is reported first."""
    if settings.get("PROFILE") == "sandbox":
        return
    example = "e.g. -s 'USER_AGENT=crawlproj/0.1 (+https://your.site/crawler; you@your.site)'"
    if PLACEHOLDER_CONTACT in settings.get(name):
        raise SettingsError(name, settings.get(name), f"still the placeholder contact; say who runs this crawl, "
                                                      f"{example} (only the sandbox profile may keep it)")
    if not _CONTACT.search(settings.get(name) or ""):
        raise SettingsError(name, settings.get(name), "names no contact (a URL or an e-mail address) where site "
                                                      f"owners can reach whoever runs this crawl; {example}")


@accepts("a list of address ranges (CIDR)")
def cidr_list(settings: BaseSettings, name: str) -> None:
    import ipaddress

    string_list(settings, name)
    for value in settings.getlist(name):
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError as exc:
            raise SettingsError(name, value, f"not an address range: {exc}") from None


@accepts("seconds, REVISIT_MIN_INTERVAL to 400 days")
def revisit_range(settings: BaseSettings, name: str) -> None:
    """REVISIT_MAX_INTERVAL: above REVISIT_MIN_INTERVAL, at most 400 days (Tamura and Kitsuregawa's cap)."""
    number(float, 0, inclusive=False)(settings, name)
    value = settings.getfloat(name)
    if value < settings.getfloat("REVISIT_MIN_INTERVAL"):
        raise SettingsError(name, settings.get(name), "must be >= REVISIT_MIN_INTERVAL")
    if value > 400 * 86400:
        raise SettingsError(name, settings.get(name), "must be <= 400 days (34560000 s)")


def float_pair(settings: BaseSettings, name: str) -> tuple[float, float]:
    """A two-number setting: a list, "low,high" or "[low, high]" (JSON, as -s passes a list)."""
    raw = settings.get(name)
    values = raw.strip().strip("[]").split(",") if isinstance(raw, str) else list(raw)
    low, high = (float(x) for x in values)
    return low, high


@accepts("two numbers [low, high], 0 < low <= high")
def interval_pair(settings: BaseSettings, name: str) -> None:
    raw = settings.get(name)
    try:
        low, high = float_pair(settings, name)
    except (TypeError, ValueError):
        raise SettingsError(name, raw, "expected two numbers [low, high] in seconds") from None
    if not 0 < low <= high:
        raise SettingsError(name, raw, "need 0 < low <= high")


@accepts("redis://host:port/db, rediss://... or unix:///path")
def redis_url(settings: BaseSettings, name: str) -> None:
    from urllib.parse import urlsplit

    raw = str(settings.get(name) or "")
    if urlsplit(raw).scheme not in ("redis", "rediss", "unix"):
        raise SettingsError(name, raw, "expected redis://host:port/db, rediss://... or unix:///path")
    if settings.getfloat("WORKER_TTL") <= settings.getfloat("WORKER_HEARTBEAT"):
        raise SettingsError("WORKER_TTL", settings.get("WORKER_TTL"), "must be longer than WORKER_HEARTBEAT")


@accepts("an ordering, or a weighted mix such as opic:0.7,depth:0.3")
def prioritizer(settings: BaseSettings, name: str) -> None:
    parse_spec = load_object("crawlproj.ordering.prioritizer.parse_spec")

    try:
        parts = parse_spec(settings.get(name))
    except ValueError as exc:
        raise SettingsError(name, settings.get(name), str(exc)) from None
    if any(n == "scores" for n, _ in parts):
        path = settings.get("PRIORITY_SCORES_FILE")
        if not path or not os.path.isfile(path):
            raise SettingsError("PRIORITY_SCORES_FILE", path, "the 'scores' ordering needs a readable score file")


@accepts("a readable file, or empty")
def readable_file(settings: BaseSettings, name: str) -> None:
    path = settings.get(name)
    if path and not os.path.isfile(path):
        raise SettingsError(name, path, "no such file")


@accepts("a TCP port, 0 to 65535")
def port(settings: BaseSettings, name: str) -> None:
    number(int, 0)(settings, name)
    if settings.getint(name) > 65535:
        raise SettingsError(name, settings.get(name), "must be a TCP port, 0 to 65535")


@accepts("at least 12 characters, or empty: random")
def token(settings: BaseSettings, name: str) -> None:
    value = settings.get(name) or ""
    if value and len(value) < 12:
        raise SettingsError(name, "(hidden)", "a token must have at least 12 characters (or be empty: random)")
    if value and name == "DASHBOARD_READONLY_TOKEN" and value == settings.get("DASHBOARD_TOKEN"):
        raise SettingsError(name, "(hidden)", "must differ from DASHBOARD_TOKEN, or the read-only view could control")
