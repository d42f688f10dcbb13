"""The dashboard's HTTP side (twisted.web, in the crawl's own reactor: no threads).

Routes (each needs ``?token=`` or ``Authorization: Bearer``):

* ``/`` the page; ``/events`` Server-Sent Events, one ``snapshot`` event per tick;
* ``/snapshot.json`` the latest snapshot; ``/metrics`` the same in Prometheus's text format
  (:mod:`.metrics`);
* ``/changes.atom`` an Atom feed of the crawl's meaningful changes, newest first (``?all=1``: noise too);
* ``POST /control`` with ``action=pause|resume|stop``: the operator token only;
* ``POST /seed`` with URLs in the body, one a line: added to the running crawl (operator only).

The operator token may control the crawl; the read-only token may only look.
Any other token gets 401, a viewer's control request 403.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
from collections.abc import Callable
from typing import Any

from twisted.internet import error
from twisted.web import resource, server

from .metrics import metrics_text
from .page import render_page

OPERATOR, VIEWER = "operator", "viewer"
#: The most one POST /seed may carry (about 100,000 URLs).
MAX_SEED_BYTES = 8 * 2**20
logger = logging.getLogger(__name__)


def tokens_from_settings(settings) -> tuple[str, str]:  # noqa: ANN001 - Scrapy Settings
    """(operator, viewer) tokens: ``DASHBOARD_TOKEN`` and ``DASHBOARD_READONLY_TOKEN``, each made
    up when empty (``listen`` logs them)."""
    return (settings.get("DASHBOARD_TOKEN") or secrets.token_urlsafe(18),
            settings.get("DASHBOARD_READONLY_TOKEN") or secrets.token_urlsafe(18))


def listen(site_resource: resource.Resource, host: str, port: int, tokens: tuple[str, str],
           url_file: str = "") -> tuple[Any, dict]:
    """Serve ``site_resource`` on ``host:port`` (any free port if taken); log the URLs with their
    tokens and, with ``url_file``, write them there (mode 0600). Returns the listening port and the URLs."""
    from twisted.internet import reactor

    site = server.Site(site_resource)
    site.noisy = False
    try:
        listening = reactor.listenTCP(port, site, interface=host)
    except error.CannotListenError as exc:
        logger.warning("dashboard: port %s is taken (%s); using a free port", port, exc.socketError)
        listening = reactor.listenTCP(0, site, interface=host)
    base = f"http://{host}:{listening.getHost().port}/"
    urls = {"port": listening.getHost().port, "operator": f"{base}?token={tokens[0]}",
            "viewer": f"{base}?token={tokens[1]}"}
    logger.info("dashboard: %s (read-only view: %s)", urls["operator"], urls["viewer"])
    if url_file:
        os.makedirs(os.path.dirname(os.path.abspath(url_file)), exist_ok=True)
        fd = os.open(url_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(urls, fh)
    return listening, urls


class DashboardResource(resource.Resource):
    """Every route of the dashboard; ``control(action)`` carries out an operator's request."""

    isLeaf = True

    def __init__(self, operator_token: str, viewer_token: str, control: Callable[[str], str],
                 seed: Callable[[list[str]], dict] | None = None,
                 changes_feed: Callable[[str, bool], bytes] | None = None) -> None:
        super().__init__()
        self.changes_feed = changes_feed  # (the feed's own URL, noise too) -> Atom
        self.tokens = ((operator_token, OPERATOR), (viewer_token, VIEWER))
        self.control = control
        self.seed = seed
        self.latest: dict = {}
        self.streams: set[server.Request] = set()

    def role(self, request: server.Request) -> str | None:
        given = (request.args.get(b"token") or [b""])[0].decode("utf-8", "replace")
        header = (request.getHeader("authorization") or "").strip()
        if header.lower().startswith("bearer "):
            given = header[7:].strip()
        for token, role in self.tokens:
            if token and hmac.compare_digest(given.encode(), token.encode()):
                return role
        return None

    def render(self, request: server.Request) -> bytes | int:
        request.setHeader("cache-control", "no-store")
        request.setHeader("x-content-type-options", "nosniff")
        role = self.role(request)
        if role is None:
            request.setResponseCode(401)
            request.setHeader("content-type", "text/plain; charset=utf-8")
            return b"dashboard: a valid token is required (?token=...)\n"
        path, method = request.path.decode(), request.method.decode()
        if path in ("/control", "/seed") and method == "POST":
            if role != OPERATOR:
                request.setResponseCode(403)
                return b"read-only view: controls need the operator token\n"
            request.setHeader("content-type", "application/json")
            try:
                if path == "/seed":
                    return json.dumps(self._seed(request)).encode()
                action = (request.args.get(b"action") or [b""])[0].decode()
                return json.dumps({"done": self.control(action)}).encode()
            except ValueError as exc:
                request.setResponseCode(400)
                return json.dumps({"error": str(exc)}).encode()
        if method not in ("GET", "HEAD"):
            request.setResponseCode(405)
            return b""
        if path == "/":
            request.setHeader("content-type", "text/html; charset=utf-8")
            return render_page(role).encode()
        if path == "/snapshot.json":
            request.setHeader("content-type", "application/json")
            return json.dumps(self.latest).encode()
        if path == "/metrics":  # Prometheus scrapes with the token as a Bearer header
            body, content_type = metrics_text(self.latest, request.getHeader("accept"))
            request.setHeader("content-type", content_type)
            return body
        if path == "/changes.atom" and self.changes_feed is not None:
            request.setHeader("content-type", "application/atom+xml; charset=utf-8")
            noise = (request.args.get(b"all") or [b""])[0] in (b"1", b"true", b"yes")
            return self.changes_feed(request.uri.decode("utf-8", "replace"), noise)
        if path == "/events":
            request.setHeader("content-type", "text/event-stream")
            request.write(b"retry: 2000\n\n")
            if self.latest:
                request.write(self._event(self.latest))
            self.streams.add(request)
            request.notifyFinish().addBoth(lambda _: self.streams.discard(request))
            return server.NOT_DONE_YET
        request.setResponseCode(404)
        return b"not found\n"

    def _seed(self, request: server.Request) -> dict:
        """URLs to add, one a line in the body (UTF-8), at most :data:`MAX_SEED_BYTES` of them."""
        if self.seed is None:
            raise ValueError("this view cannot add URLs: send them to a crawl's own dashboard")
        body = request.content.read(MAX_SEED_BYTES + 1) if request.content is not None else b""
        if len(body) > MAX_SEED_BYTES:
            raise ValueError(f"at most {MAX_SEED_BYTES} bytes of URLs at a time")
        try:
            lines = body.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            raise ValueError("URLs must be UTF-8 text, one a line") from None
        return self.seed([line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")])

    @staticmethod
    def _event(snapshot: dict) -> bytes:
        return b"event: snapshot\ndata: " + json.dumps(snapshot, separators=(",", ":")).encode() + b"\n\n"

    def publish(self, snapshot: dict) -> None:
        """Make ``snapshot`` the latest and send it to every open event stream."""
        self.latest = snapshot
        event = self._event(snapshot)
        for request in list(self.streams):
            request.write(event)

    def close_streams(self) -> None:
        for request in list(self.streams):
            request.finish()
        self.streams.clear()
