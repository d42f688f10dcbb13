"""Webhooks: each meaningful change POSTed as JSON to every ``WEBHOOK_URLS`` address.

The body is signed with HMAC-SHA256 of ``WEBHOOK_SECRET`` (header ``X-Crawlproj-Signature:
sha256=<hex>``, as GitHub's webhooks sign); ``X-Crawlproj-Delivery`` is the change's id, the
same on every attempt, so a receiver can drop a repeat. A delivery that fails (no answer, or
not a 2xx) is tried again after ``WEBHOOK_BACKOFF`` seconds, doubled each time, up to
``WEBHOOK_RETRIES`` times; then it is dead-lettered: a JSON line in ``WEBHOOK_DEADLETTER_FILE``
(the payload, the address, the last error). Deliveries go from a thread of their own, so a slow
receiver never holds the crawl up.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import queue
import threading
import time
import urllib.error
import urllib.request

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Crawlproj-Signature"


def sign(secret: str, body: bytes) -> str:
    """The signature header's value for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, signature: str) -> bool:
    """Whether ``signature`` is ``body``'s under ``secret`` (for receivers, and the tests)."""
    return hmac.compare_digest(sign(secret, body), signature or "")


def backoff(attempt: int, base: float) -> float:
    """Seconds to wait before retry ``attempt`` (1, 2, ...): ``base`` doubled each time."""
    return base * 2 ** (attempt - 1)


class WebhookSender:
    """Delivers payloads to the webhook addresses from one thread (see the module docstring)."""

    def __init__(self, urls: list[str], secret: str, retries: int, base: float, timeout: float,
                 deadletter_file: str, stats=None) -> None:  # noqa: ANN001 - Scrapy's stats collector
        self.urls, self.secret, self.retries, self.base, self.timeout = urls, secret, retries, base, timeout
        self.deadletter_file = deadletter_file
        self.stats = stats
        self.queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="webhooks", daemon=True)
        self._thread.start()

    def send(self, payload: dict) -> None:
        for url in self.urls:
            self.queue.put((url, payload))

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            self.deliver(*item)

    def _post(self, url: str, body: bytes, delivery: str) -> None:
        headers = {"Content-Type": "application/json", "User-Agent": "crawlproj-webhooks",
                   "X-Crawlproj-Event": "change", "X-Crawlproj-Delivery": delivery}
        if self.secret:
            headers[SIGNATURE_HEADER] = sign(self.secret, body)
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - the user's address
            if not 200 <= response.status < 300:
                raise urllib.error.HTTPError(url, response.status, "not a 2xx", response.headers, None)

    def deliver(self, url: str, payload: dict) -> bool:
        """POST ``payload`` to ``url``, retrying with back-off; dead-letter it when every attempt failed."""
        body = json.dumps(payload, sort_keys=True).encode()
        error = ""
        for attempt in range(self.retries + 1):
            if attempt:
                if self._stop.wait(backoff(attempt, self.base)):
                    break  # closing: what is left is dead-lettered, not lost
                self._inc("webhooks/retries")
            try:
                self._post(url, body, str(payload.get("id", "")))
                self._inc("webhooks/delivered")
                return True
            except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
                error = f"{type(exc).__name__}: {exc}"
        self._inc("webhooks/dead_lettered")
        logger.warning("webhook %s failed %d time(s) (%s): dead-lettered in %s", url, self.retries + 1, error,
                       self.deadletter_file)
        self._dead_letter(url, payload, error)
        return False

    def _dead_letter(self, url: str, payload: dict, error: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(self.deadletter_file)), exist_ok=True)
        with open(self.deadletter_file, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"webhook": url, "error": error, "at": time.time(), "payload": payload},
                                sort_keys=True) + "\n")

    def close(self, wait: float = 30.0) -> None:
        """Deliver what is queued within ``wait`` seconds; after that, a failing delivery stops
        retrying and is dead-lettered."""
        self.queue.put(None)
        self._thread.join(wait)
        self._stop.set()
        self._thread.join()
