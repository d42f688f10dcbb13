"""What kind of failure ended a fetch, in the words the stats, the store and the console use."""

from __future__ import annotations

from twisted.python.failure import Failure

from .downloadermiddlewares.redirects import LOOP as REDIRECT_LOOP

#: What changes each kind of failure, when it is why a crawl stored nothing.
REMEDIES = {
    "dns": "the host name did not resolve: check the URL, or pin the name to an address with "
           "-s HOST_RESOLVE='host.name=192.0.2.10'",
    "connection_refused": "nothing accepted the connection: check the URL's host and port, and that the server is up",
    "timeout": "the server did not answer in time: raise DOWNLOAD_TIMEOUT (-s DOWNLOAD_TIMEOUT=60) if it is slow",
    "connection_lost": "the server closed the connection before answering: check that it serves HTTP on that port",
}


def error_kind(failure: Failure | BaseException) -> str:
    """The kind of a fetch's failure (dns, timeout, connection_refused, ...): the stats' and the store's word."""
    exc = failure.value if isinstance(failure, Failure) else failure
    name = type(exc).__name__
    kinds = {
        "DNSLookupError": "dns",
        "TimeoutError": "timeout",
        "TCPTimedOutError": "timeout",
        "ConnectionRefusedError": "connection_refused",
        "ConnectionLost": "connection_lost",
        "ConnectionDone": "connection_lost",
        "ResponseNeverReceived": "connection_lost",
        "ResponseFailed": "receive",
        "IgnoreRequest": "ignored",
        "AddressRefused": "address_refused",
        # Scrapy 2.13+ wraps the Twisted errors in its own exceptions.
        "CannotResolveHostError": "dns",
        "DownloadTimeoutError": "timeout",
        "DownloadConnectionRefusedError": "connection_refused",
        "DownloadFailedError": "receive",
        "ResponseDataLossError": "receive",
        # Scrapy's HTTP handler cancels a download for one reason only: a body over
        # DOWNLOAD_MAXSIZE, announced (a message naming the max size) or found mid-stream
        # (no message at all).
        "DownloadCancelledError": "too_large",
        "CancelledError": "too_large",
    }
    if name == "IgnoreRequest" and str(exc) == "max redirections reached":
        return "redirect_limit"
    if name == "IgnoreRequest" and str(exc).startswith(REDIRECT_LOOP):
        return "redirect_loop"
    # A render's timeout: crawlproj's own, or Playwright's ("Timeout 30000ms exceeded.", which
    # the size test below would read as too_large).
    if name == "RenderTimeout" or (name == "TimeoutError" and type(exc).__module__.startswith("playwright")):
        return "render_timeout"
    if "maxsize" in str(exc).lower() or "max size" in str(exc).lower() or "exceeded" in str(exc).lower():
        return "too_large"
    return kinds.get(name, name.lower())


