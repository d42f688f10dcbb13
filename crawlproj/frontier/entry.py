"""Requests as the frontier's queue entries (plain dicts, as Scrapy's disk queues keep them)."""

from __future__ import annotations

from typing import Any

from scrapy import Request, Spider


def _method_name(spider: Spider | None, func: Any) -> Any:
    """The name of ``func`` when it is ``spider``'s own method of that name, else ``func``."""
    name = getattr(func, "__name__", None)
    if (spider is not None and name and getattr(func, "__self__", None) is spider
            and getattr(getattr(spider, name, None), "__func__", None) is getattr(func, "__func__", None)):
        return name
    return func


def request_entry(request: Request, spider: Spider | None) -> dict[str, Any]:
    """``request.to_dict(spider=spider)``, naming a callback that is the spider's own method
    directly. Scrapy finds the name by listing every member of the spider
    (``inspect.getmembers``), which profiled at 1-5 ms a request on the reactor's thread;
    any other callback still goes that way, and raises ValueError as it does."""
    callback, errback = _method_name(spider, request.callback), _method_name(spider, request.errback)
    if callable(callback) or callable(errback):
        return request.to_dict(spider=spider)
    # What Request.to_dict builds (scrapy/http/request/__init__.py), the names already known.
    entry = {"url": request.url, "callback": callback, "errback": errback, "headers": dict(request.headers)}
    for attr in request.attributes:
        entry.setdefault(attr, getattr(request, attr))
    if type(request) is not Request:
        entry["_class"] = type(request).__module__ + "." + type(request).__name__
    return entry
