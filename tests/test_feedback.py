"""Fetch feedback for the politeness policy: line errors and Retry-After."""

import email.utils

from scrapy.exceptions import DownloadTimeoutError
from scrapy.http import Response
from twisted.internet.error import ConnectionLost, DNSLookupError

from crawlproj.politeness.feedback import backoff_seconds, failure_kind, retry_after_seconds, sample


def test_samples_count_line_errors_but_not_dns():
    assert sample(Response("http://h/", body=b"x" * 100), 0.5) == (100, 0.5, False)
    assert sample(ConnectionLost(), 0.2) == (0, 0.2, True)
    assert sample(DownloadTimeoutError(), 30.0) == (0, 30.0, True)
    assert sample(DNSLookupError(), 0.1) is None
    assert sample(Response("http://h/", body=b"x" * 100), 0.5, min_bytes=8192) is None  # latency, not speed
    assert sample(ConnectionLost(), 0.2, min_bytes=8192) == (0, 0.2, True)  # errors always count


def test_retry_after_in_seconds_or_as_a_date():
    now = 1_700_000_000.0
    assert retry_after_seconds(b"120", now) == 120
    assert retry_after_seconds(email.utils.formatdate(now + 90, usegmt=True), now) == 90
    assert retry_after_seconds(email.utils.formatdate(now - 90, usegmt=True), now) == 0
    assert retry_after_seconds("soon", now) is None
    assert retry_after_seconds(None, now) is None
    for unreadable in ("²", "１２", "1e3", "-5", "3.5"):  # only ASCII digits are seconds (RFC 9110)
        assert retry_after_seconds(unreadable.encode() if unreadable.isascii() else unreadable, now) is None


def test_backoff_only_for_the_configured_statuses_and_capped():
    now = 1_700_000_000.0
    r503 = Response("http://h/", status=503, headers={"Retry-After": "30"})
    assert backoff_seconds(r503, {429, 503}, 60, 3600, now) == 30
    assert backoff_seconds(Response("http://h/", status=429), {429, 503}, 60, 3600, now) == 60
    assert backoff_seconds(Response("http://h/", status=503, headers={"Retry-After": "99999"}), {503}, 60, 3600,
                           now) == 3600
    assert backoff_seconds(Response("http://h/", status=500), {429, 503}, 60, 3600, now) is None
    # An unreadable Retry-After rests the host the default, never 0 (it once raised ValueError).
    r503_odd = Response("http://h/", status=503, headers={"Retry-After": "²".encode("latin-1")})
    assert backoff_seconds(r503_odd, {429, 503}, 60, 3600, now) == 60
    assert backoff_seconds(ConnectionLost(), {429, 503}, 60, 3600, now) is None


def test_failure_kinds_per_host():
    assert failure_kind(Response("http://h/", status=502)) == "http_5xx"
    assert failure_kind(Response("http://h/", status=404)) is None
    assert failure_kind(DNSLookupError()) == "dns"
    assert failure_kind(DownloadTimeoutError()) == "timeout"
    assert failure_kind(ConnectionLost()) == "connection"
