"""The spiders' page requisites: the requests for what a page needs to replay as it looked
(stylesheets and what they import, scripts, images, fonts, iframes), and what a render's
browser loaded, archived as :class:`~crawlproj.items.RequisiteItem` and never read as pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from ..content.extract import parsed_page
from ..content.requisites import SELECTOR as REQUISITE_SELECTOR
from ..content.requisites import Requisite, RequisiteBudget, page_requisites, stylesheet_requisites
from ..content.types import content_family
from ..fetch_errors import error_kind
from ..items import RequisiteItem, Skipped
from ..urls import InvalidURL, canonicalize, host_of

#: A render's loads by Playwright resource type, as requisite kinds ("fetch": fetch() and XHR answers).
_RESOURCE_KINDS = {"stylesheet": "stylesheet", "script": "script", "image": "image", "font": "font",
                   "media": "media", "document": "iframe"}


def header_pairs(headers: Any) -> list[tuple[str, str]]:
    """Scrapy headers as (name, value) pairs, one per value."""
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, values in headers.items() for v in values]


class RequisiteCallbacks:
    """The page spider's part for requisites (``REQUISITES_*`` settings, read by
    :meth:`init_requisites`); its callbacks are the spider's, so that a request's callback is
    found by name in a journal or a shared queue."""

    def init_requisites(self, s: Any) -> None:
        self.requisite_budget = RequisiteBudget(s.getint("REQUISITES_MAX_PER_PAGE"), s.getint("REQUISITES_MAX_PER_HOST"),
                                                s.getlist("REQUISITES_TYPES"))
        self.requisite_max_bytes = s.getint("REQUISITES_MAX_BYTES")
        self.requisite_other_hosts = s.getbool("REQUISITES_OTHER_HOSTS")
        self._loaded_archived: set[str] = set()  # what renders' browsers loaded and the archive has

    def loaded_requisites(self, loaded: list[tuple], referer: str) -> list[RequisiteItem]:
        """What a render's browser loaded (scripts, the answers to its fetch() and XHR calls), as
        Browsertrix archives a browser's traffic: each URL once per crawl."""
        items = []
        for url, resource_type, status, headers, body in loaded:
            if url in self._loaded_archived:
                continue
            self._loaded_archived.add(url)
            items.append(RequisiteItem(url=url, requested_url=url, kind=_RESOURCE_KINDS.get(resource_type, "fetch"),
                                       status=status, body=body, response_headers=headers,
                                       request_headers=[("Referer", referer)], requested=False))
        self.count("requisites/rendered", len(items))
        return items

    def requisite_requests(self, requisites: list[Requisite], base: str, referer: str,
                           loaded: set[str] = frozenset()) -> list[scrapy.Request]:
        """Requests for a page's (or a stylesheet's) requisites: resolved as written (no session id
        removed: replay asks for the URL the page names), in scope by ALLOWED_DOMAINS, not seen
        before, within the budget; at depth 0, so DEPTH_LIMIT never drops a page's last ones."""
        seen, taken = self.links.url_seen(), {}
        page_host = host_of(referer)
        for requisite in requisites:
            try:
                url = canonicalize(requisite.url, base, session_params=(), max_length=self.max_url_length)
            except InvalidURL as exc:
                self.count(f"requisites/refused/{exc.reason}")
                continue
            if url in taken or url in loaded:
                continue
            host = host_of(url)
            if self.scope.refuses_requisite(url) or (not self.requisite_other_hosts and host != page_host):
                self.count("requisites/refused/scope")
                continue
            if seen is not None and seen(url):
                self.count("requisites/seen")
                continue
            refused = self.requisite_budget.admit(host, requisite.kind, len(taken))
            if refused:
                self.count(f"requisites/refused/{refused}")
                continue
            taken[url] = scrapy.Request(
                url, callback=self.parse_requisite, errback=self.on_requisite_error, headers={"Referer": referer},
                meta={"requisite": requisite.kind, "render": False, "depth_reset": True,
                      "download_maxsize": self.requisite_max_bytes})
        self.count("requisites/requested", len(taken))
        return list(taken.values())

    async def parse_requisite(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        """A requisite fetched: archived as it came (:class:`RequisiteItem`), never read as a page.
        A stylesheet is read for its own imports, fonts and images, an iframe's document for its
        own requisites."""
        kind = response.meta.get("requisite", "image")
        requested = (response.meta.get("redirect_urls") or [response.request.url])[0]
        self.count(f"requisites/fetched/{kind}")
        yield RequisiteItem(url=response.url, requested_url=requested, kind=kind, status=response.status,
                            body=response.body, response_headers=header_pairs(response.headers),
                            request_headers=header_pairs(response.request.headers))
        if not 200 <= response.status < 300 or not isinstance(response, TextResponse):
            return
        family = content_family(response.headers.get(b"Content-Type"), response.body)
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
        if "css" in content_type or (kind == "stylesheet" and family != "html"):
            found = stylesheet_requisites(response.text)
        elif kind == "iframe" and family == "html":
            found = page_requisites(parsed_page(response, self.reader.page_budget).tree.css(REQUISITE_SELECTOR))
        else:
            return
        for request in self.requisite_requests(found, response.url, response.url):
            yield request

    async def on_requisite_error(self, failure: Failure) -> AsyncIterator[Any]:
        """A requisite that could not be fetched: counted by kind of failure, and completed
        (a resumed crawl does not ask for it again)."""
        request = failure.request  # type: ignore[attr-defined]
        if failure.check(HttpError):  # only when HTTPERROR_ALLOW_ALL is off: archived as it came
            async for out in self.parse_requisite(failure.value.response):
                yield out
            return
        kind = error_kind(failure)
        if kind == "ignored" and "robots.txt" in str(failure.value):
            kind = "robots"
        self.count(f"requisites/failed/{kind}")
        yield Skipped((request.meta.get("redirect_urls") or [request.url])[0], "requisite")
