"""Validation of crawlproj's own settings, run once at start-up.

Each check reads a setting the way its component will (``getfloat``,
``getlist``, ...) so a value given as a string with ``-s`` is judged exactly as
it will be used. A bad value raises :class:`SettingsError` naming the setting.
"""

from __future__ import annotations

import math

import os
import re
from collections.abc import Callable

from scrapy.settings import BaseSettings


class BadInput(ValueError):
    """Input the crawl cannot start with (a setting, a spider argument, a seeds file): the
    ``crawl`` command prints its message as one line and exits 2."""


class SettingsError(BadInput):
    """A setting with a value the crawler cannot use. The message names it."""

    def __init__(self, name: str, value: object, problem: str) -> None:
        super().__init__(f"setting {name}={value!r} is invalid: {problem}")
        self.name = name


def _number(kind: type, low: float, inclusive: bool = True) -> Callable[[BaseSettings, str], None]:
    def check(settings: BaseSettings, name: str) -> None:
        raw = settings.get(name)
        try:
            value = kind(raw)
        except (TypeError, ValueError):
            raise SettingsError(name, raw, f"expected a {kind.__name__}") from None
        if not math.isfinite(value):  # nan passes every comparison and stalls a crawl
            raise SettingsError(name, raw, "must be a finite number")
        if value < low or (not inclusive and value == low):
            bound = ">=" if inclusive else ">"
            raise SettingsError(name, raw, f"must be {bound} {low}")

    return check


def _fraction(settings: BaseSettings, name: str) -> None:
    _number(float, 0, inclusive=False)(settings, name)
    if float(settings.get(name)) >= 1:
        raise SettingsError(name, settings.get(name), "must be < 1")


def _string_list(settings: BaseSettings, name: str) -> None:
    raw = settings.get(name)
    try:
        values = settings.getlist(name)
    except ValueError:
        raise SettingsError(name, raw, "expected a list of strings") from None
    if not all(isinstance(v, str) and v.strip() for v in values):
        raise SettingsError(name, raw, "expected a list of non-empty strings")


def _regex_list(settings: BaseSettings, name: str) -> None:
    _string_list(settings, name)
    for pattern in settings.getlist(name):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SettingsError(name, pattern, f"not a regular expression: {exc}") from None


def _int_list(settings: BaseSettings, name: str) -> None:
    raw = settings.get(name)
    try:
        [int(v) for v in settings.getlist(name)]
    except (TypeError, ValueError):
        raise SettingsError(name, raw, "expected a list of integers") from None


def _boolean(settings: BaseSettings, name: str) -> None:
    try:
        settings.getbool(name)
    except ValueError:
        raise SettingsError(name, settings.get(name), "expected true or false") from None


def _non_empty(settings: BaseSettings, name: str) -> None:
    if not str(settings.get(name) or "").strip():
        raise SettingsError(name, settings.get(name), "must not be empty")


def _choice(*allowed: str) -> Callable[[BaseSettings, str], None]:
    def check(settings: BaseSettings, name: str) -> None:
        if settings.get(name) not in allowed:
            raise SettingsError(name, settings.get(name), f"choose one of: {', '.join(allowed)}")

    return check


def _store_uri(settings: BaseSettings, name: str) -> None:
    from .store import parse_store_uri

    try:
        parse_store_uri(settings.get(name))
    except ValueError as exc:
        raise SettingsError(name, settings.get(name), str(exc)) from None


def _host_resolve(settings: BaseSettings, name: str) -> None:
    from .resolver import parse_host_resolve

    try:
        parse_host_resolve(settings.get(name))
    except ValueError as exc:
        raise SettingsError(name, settings.get(name), str(exc)) from None


def _chromium(settings: BaseSettings, name: str) -> None:
    """A crawl that may render needs a browser; say how to get one before the crawl starts."""
    from .rendering.browser import INSTALL_HINT, find_chromium

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


def _identity(settings: BaseSettings, name: str = "USER_AGENT") -> None:
    """Checked after every other setting: a bad value elsewhere is reported first."""
    if PLACEHOLDER_CONTACT in settings.get(name) and settings.get("PROFILE") != "sandbox":
        raise SettingsError(name, settings.get(name),
                            "still the placeholder contact; say who runs this crawl, e.g. "
                            "-s 'USER_AGENT=crawlproj/0.1 (+https://your.site/crawler; you@your.site)' "
                            "(only the sandbox profile may keep it)")


def _cidr_list(settings: BaseSettings, name: str) -> None:
    import ipaddress

    _string_list(settings, name)
    for value in settings.getlist(name):
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError as exc:
            raise SettingsError(name, value, f"not an address range: {exc}") from None


def _fraction_or_one(settings: BaseSettings, name: str) -> None:
    _number(float, 0, inclusive=False)(settings, name)
    if float(settings.get(name)) > 1:
        raise SettingsError(name, settings.get(name), "must be <= 1")


def _probability(settings: BaseSettings, name: str) -> None:
    _number(float, 0)(settings, name)
    if float(settings.get(name)) >= 1:
        raise SettingsError(name, settings.get(name), "must be < 1")


def _revisit_range(settings: BaseSettings, name: str) -> None:
    """REVISIT_MAX_INTERVAL: above REVISIT_MIN_INTERVAL, at most 400 days (seed 001's cap)."""
    _number(float, 0, inclusive=False)(settings, name)
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


def _interval_pair(settings: BaseSettings, name: str) -> None:
    raw = settings.get(name)
    try:
        low, high = float_pair(settings, name)
    except (TypeError, ValueError):
        raise SettingsError(name, raw, "expected two numbers [low, high] in seconds") from None
    if not 0 < low <= high:
        raise SettingsError(name, raw, "need 0 < low <= high")


def _redis_url(settings: BaseSettings, name: str) -> None:
    from urllib.parse import urlsplit

    raw = str(settings.get(name) or "")
    if urlsplit(raw).scheme not in ("redis", "rediss", "unix"):
        raise SettingsError(name, raw, "expected redis://host:port/db, rediss://... or unix:///path")
    if settings.getfloat("WORKER_TTL") <= settings.getfloat("WORKER_HEARTBEAT"):
        raise SettingsError("WORKER_TTL", settings.get("WORKER_TTL"), "must be longer than WORKER_HEARTBEAT")


def _prioritizer(settings: BaseSettings, name: str) -> None:
    from .ordering.prioritizer import parse_spec

    try:
        parts = parse_spec(settings.get(name))
    except ValueError as exc:
        raise SettingsError(name, settings.get(name), str(exc)) from None
    if any(n == "scores" for n, _ in parts):
        path = settings.get("PRIORITY_SCORES_FILE")
        if not path or not os.path.isfile(path):
            raise SettingsError("PRIORITY_SCORES_FILE", path, "the 'scores' ordering needs a readable score file")


def _unit_interval(settings: BaseSettings, name: str) -> None:
    _number(float, 0)(settings, name)
    if float(settings.get(name)) > 1:
        raise SettingsError(name, settings.get(name), "must be between 0 and 1")


def _readable_file(settings: BaseSettings, name: str) -> None:
    path = settings.get(name)
    if path and not os.path.isfile(path):
        raise SettingsError(name, path, "no such file")


def _port(settings: BaseSettings, name: str) -> None:
    _number(int, 0)(settings, name)
    if settings.getint(name) > 65535:
        raise SettingsError(name, settings.get(name), "must be a TCP port, 0 to 65535")


def _token(settings: BaseSettings, name: str) -> None:
    value = settings.get(name) or ""
    if value and len(value) < 12:
        raise SettingsError(name, "(hidden)", "a token must have at least 12 characters (or be empty: random)")
    if value and name == "DASHBOARD_READONLY_TOKEN" and value == settings.get("DASHBOARD_TOKEN"):
        raise SettingsError(name, "(hidden)", "must differ from DASHBOARD_TOKEN, or the read-only view could control")


CHECKS: dict[str, Callable[[BaseSettings, str], None]] = {
    "USER_AGENT": _non_empty,
    "ADDRESS_ALLOWLIST": _cidr_list,
    "ROBOTSTXT_USER_AGENT": _non_empty,
    "DEPTH_LIMIT": _number(int, 0),
    "CGI_HOP_LIMIT": _number(int, 0),
    "DYNAMIC_URL_PATTERNS": _regex_list,
    "MAX_REPEATED_SEGMENTS": _number(int, 0),
    "QUERY_MAX_PARAMS": _number(int, 0),
    "MAX_PAGES_PER_HOST": _number(int, 0),
    "ALLOWED_DOMAINS": _string_list,
    "ALLOWED_SUFFIXES": _string_list,
    "FOLLOW_NOFOLLOW": _boolean,
    "URL_MAX_LENGTH": _number(int, 16),
    "SESSION_ID_PARAMS": _string_list,
    "HOST_RESOLVE": _host_resolve,
    "DNSCACHE_TTL": _number(float, 0),
    "DNS_TIMEOUT": _number(float, 0, inclusive=False),
    "MIN_INTERVAL": _number(float, 0),
    "CONCURRENT_REQUESTS": _number(int, 1),
    "CONCURRENT_REQUESTS_PER_DOMAIN": _number(int, 1),
    "DOWNLOAD_DELAY": _number(float, 0),
    "INTERVAL_DURATION_FACTOR": _number(float, 0),
    "MAX_CRAWL_DELAY": _number(float, 0),
    "ROBOTSTXT_TTL": _number(float, 0),
    "ROBOTSTXT_ERROR_TTL": _number(float, 0),
    "ROBOTSTXT_SITEMAPS": _boolean,
    "WASEDA_INTERVAL_ENABLED": _boolean,
    "WASEDA_TARGET_SPEED": _number(float, 0, inclusive=False),
    "WASEDA_MAX_DELAY_1": _number(float, 0),
    "WASEDA_MAX_DELAY_2": _number(float, 0),
    "WASEDA_WINDOW": _number(int, 1),
    "WASEDA_MIN_BYTES": _number(int, 0),
    "BACKOFF_STATUSES": _int_list,
    "BACKOFF_DEFAULT": _number(float, 0),
    "BACKOFF_MAX": _number(float, 0),
    "RETRY_TIMES": _number(int, 0),
    "RETRY_BACKOFF_BASE": _number(float, 0),
    "RETRY_BACKOFF_MAX": _number(float, 0),
    "HOST_PARK_AFTER": _number(int, 0),
    "PER_IP_CONCURRENCY": _number(int, 0),
    "SUSPEND_AFTER_SECONDS": _number(float, 0),
    "SUSPEND_AFTER_PAGES": _number(int, 0),
    "SUSPEND_FOR": _number(float, 0),
    "KEEPALIVE_CLOSE_PAUSE": _number(float, 0),
    "HOST_PARK_FOR": _number(float, 0),
    "FRONTIER_LEVELS": _number(int, 1),
    "FRONTIER_BIAS": _number(float, 0),
    "PRIORITIZER": _prioritizer,
    "ORDERING_SAVE_SECONDS": _number(float, 0, inclusive=False),
    "TOPICAL_THRESHOLD": _number(float, 0),
    "TOPICAL_INHERIT": _unit_interval,
    "TOPICAL_TUNNEL": _number(int, 0),
    "TOPICAL_FOCUS": _boolean,
    "TOPICAL_FOCUS_WAIT": _number(float, 0),
    "TOPICAL_MODEL": _choice("tfidf", "embedding"),
    "TOPIC_FILE": _readable_file,
    "OPT_OUT_RELOAD_SECONDS": _number(float, 0, inclusive=False),
    "FRONTIER_ACTIVE_KEYS": _number(int, 0),
    "FRONTIER_MAX_ACTIVE_KEYS": _number(int, 1),
    "FRONTIER_KEY": _choice("host", "domain", "ip"),
    "FRONTIER_FRONT_BUFFER": _number(int, 0),
    "FRONTIER_BACK_BUFFER": _number(int, 0),
    "FRONTIER_SEGMENT_BYTES": _number(int, 4096),
    "URLSEEN_CAPACITY": _number(int, 1000),
    "URLSEEN_ERROR_RATE": _number(float, 0, inclusive=False),
    "DOWNLOAD_TIMEOUT": _number(float, 0, inclusive=False),
    "DOWNLOAD_MAXSIZE": _number(int, 0),
    "STORE_URI": _store_uri,
    "STORE_BATCH_SIZE": _number(int, 1),
    "STORE_FLUSH_INTERVAL": _number(float, 0, inclusive=False),
    "NEAR_DUPLICATES_ENABLED": _boolean,
    "NEAR_DUPLICATES_THRESHOLD": _fraction,
    "NEAR_DUPLICATES_NUM_PERM": _number(int, 16),
    "NEAR_DUPLICATES_MIN_SHINGLES": _number(int, 1),
    "NEAR_DUPLICATES_KEEP_CONTENT": _boolean,
    "NEAR_DUPLICATES_BACKEND": _choice("local", "redis"),
    "WARC_ENABLED": _boolean,
    "WARC_PREFIX": _non_empty,
    "WARC_MAX_BYTES": _number(int, 4096),
    "RENDER_MODE": _choice("auto", "always", "never"),
    "CHROMIUM_PATH": _chromium,
    "RENDER_MAX_PAGES": _number(int, 1),
    "RENDER_NAVIGATION_TIMEOUT": _number(float, 0, inclusive=False),
    "RENDER_TIMEOUT": _number(float, 0, inclusive=False),
    "RENDER_IDLE_SECONDS": _number(float, 0),
    "RENDER_IDLE_TIMEOUT": _number(float, 0),
    "RENDER_CONTEXT_MAX_PAGES": _number(int, 0),
    "RENDER_BLOCK_RESOURCE_TYPES": _string_list,
    "RENDER_OTHER_HOSTS": _boolean,
    "RENDER_MIN_TEXT": _number(int, 0),
    "RENDER_MIN_LINKS": _number(int, 0),
    "RENDER_SCRIPT_RATIO": _number(float, 0),
    "RENDER_HOST_SWITCH": _number(int, 1),
    "REVISIT_ENABLED": _boolean,
    "REVISIT_MODE": _choice("off", "incremental"),
    "REVISIT_BACKEND": _choice("sqlite", "redis"),
    "REVISIT_TIME_SCALE": _number(float, 0, inclusive=False),
    "REVISIT_SCHEDULE": _choice("budget", "estimate"),
    "REVISIT_MIN_INTERVAL": _number(float, 0, inclusive=False),
    "REVISIT_MAX_INTERVAL": _revisit_range,
    "REVISIT_FIRST_INTERVAL": _interval_pair,
    "REVISIT_BACKOFF": _number(float, 1),
    "REVISIT_SHRINK": _fraction_or_one,
    "REVISIT_FACTOR": _number(float, 0, inclusive=False),
    "REVISIT_BUDGET": _number(float, 0),
    "REVISIT_MIN_CHANGE": _probability,
    "REVISIT_SHARE": _fraction_or_one,
    "REVISIT_REPLAN_SECONDS": _number(float, 0),
    "REVISIT_RATE_SAMPLE": _number(int, 100),
    "REVISIT_CHANGE": _choice("text", "body"),
    "REVISIT_IGNORE_PATTERNS": _regex_list,
    "REVISIT_CONDITIONAL": _boolean,
    "REVISIT_OVERLOAD": _choice("stretch", "drop"),
    "REVISIT_HORIZON": _number(float, 0, inclusive=False),
    "REVISIT_SHORT_TERM_MAX": _number(int, 1),
    "REVISIT_REFRESH_SECONDS": _number(float, 0, inclusive=False),
    "REVISIT_IN_FLIGHT_TIMEOUT": _number(float, 0, inclusive=False),
    "REDIS_URL": _redis_url,
    "REDIS_PREFIX": _non_empty,
    "FRONTIER_PARTITIONS": _number(int, 1),
    "REDIS_POP_BATCH": _number(int, 1),
    "REDIS_POLL_SECONDS": _number(float, 0, inclusive=False),
    "REDIS_SHARED_PARTITIONS": _boolean,
    "GC_TUNING_ENABLED": _boolean,
    "NEAR_DUPLICATES_MAX_CHARS": _number(int, 0),
    "PAGE_MAX_DEPTH": _number(int, 16),
    "PAGE_MAX_ELEMENTS": _number(int, 100),
    "MAIN_TEXT_MAX_DEPTH": _number(int, 1),
    "PAGE_THREAD_MIN_BYTES": _number(int, 0),
    "PAGE_THREADS": _number(int, 0),
    "PAGE_THREAD_SWITCH_INTERVAL": _number(float, 0),
    "PAGE_STAGE_TIMEOUT": _number(float, 0, inclusive=False),
    "STALL_TICK": _number(float, 0),
    "STALL_WARN": _number(float, 0, inclusive=False),
    "HOST_LEASE": _number(float, 0, inclusive=False),
    "WORKER_HEARTBEAT": _number(float, 0, inclusive=False),
    "WORKER_TTL": _number(float, 0, inclusive=False),
    "PARTITION_LEASE": _number(float, 0, inclusive=False),
    "WORKER_IDLE_TIMEOUT": _number(float, 0),
    "WORKERS": _number(int, 1),
    "DASHBOARD_ENABLED": _boolean,
    "DASHBOARD_HOST": _non_empty,
    "DASHBOARD_PORT": _port,
    "DASHBOARD_TOKEN": _token,
    "DASHBOARD_READONLY_TOKEN": _token,
    "DASHBOARD_INTERVAL": _number(float, 0.05),
    "DASHBOARD_MAX_HOSTS": _number(int, 1),
    "DASHBOARD_REDIS": _boolean,
}


def validate(settings: BaseSettings) -> None:
    """Raise :class:`SettingsError` for the first bad crawlproj setting."""
    for name, check in CHECKS.items():
        check(settings, name)
    _identity(settings)
