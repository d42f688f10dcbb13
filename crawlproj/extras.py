"""The package's optional features, each an extra of its own (pyproject.toml): asked for without
its extra, a feature stops the crawl or the command with one line naming the extra to install.

The core install crawls static sites. ``RENDER_MODE=auto`` (the default) without the render
extra crawls statically and says once how to render; ``always`` is refused.
"""

from __future__ import annotations

import importlib.util
import logging
from typing import Any

from .errors import BadInput, SettingsError

logger = logging.getLogger(__name__)

#: The modules each extra installs (the first missing one tells the extra is not there).
EXTRAS = {
    "render": ("scrapy_playwright", "playwright"),
    "report": ("scipy", "matplotlib"),
    "distributed": ("redis",),
    "ordering": ("wordllama",),
    "parquet": ("pyarrow",),
    "wacz": ("wacz",),
}
#: The handler for static fetches alone (keep-alive aware), for a core install.
STATIC_HANDLER = "crawlproj.politeness.keepalive.KeepAliveAwareDownloadHandler"
RENDERING_HANDLER = "crawlproj.rendering.handler.RenderingDownloadHandler"


def installed(extra: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in EXTRAS[extra])


def hint(extra: str) -> str:
    return f"needs crawlproj's {extra} extra: pip install 'crawlproj[{extra}]'"


def require(extra: str, feature: str) -> None:
    """Raise :class:`BadInput` (``feature`` needs the extra) when ``extra`` is not installed."""
    if not installed(extra):
        raise BadInput(f"{feature} {hint(extra)}")


def _asked(settings: Any) -> list[tuple[str, str]]:
    """(setting, extra) for each feature the settings ask for."""
    asked = []
    if settings.get("RENDER_MODE") == "always":
        asked.append(("RENDER_MODE", "render"))
    for name in ("SCHEDULER", "DUPEFILTER_CLASS", "NEAR_DUPLICATES_INDEX_CLASS", "REVISIT_QUEUE_CLASS",
                 "DEADLETTERS_CLASS"):
        if "crawlproj.distributed." in str(settings.get(name) or ""):
            asked.append((name, "distributed"))
    if settings.getbool("DASHBOARD_REDIS"):
        asked.append(("DASHBOARD_REDIS", "distributed"))
    if (settings.getint("WORKERS") or 1) > 1:
        asked.append(("WORKERS", "distributed"))
    if settings.get("TOPICAL_MODEL") == "embedding":
        asked.append(("TOPICAL_MODEL", "ordering"))
    if settings.getbool("WACZ_ON_CLOSE"):
        asked.append(("WACZ_ON_CLOSE", "wacz"))
    for uri, options in (settings.getdict("FEEDS") or {}).items():
        if str((options or {}).get("format") or "") == "parquet" or str(uri).endswith(".parquet"):
            asked.append(("FEEDS", "parquet"))
    return asked


def adapt(settings: Any) -> None:
    """Refuse, with :class:`SettingsError`, a feature asked for without its extra; without the
    render extra, ``RENDER_MODE=auto`` crawls statically (the handler that needs no browser)."""
    for name, extra in _asked(settings):
        if not installed(extra):
            raise SettingsError(name, settings.get(name), hint(extra))
    if installed("render"):
        return
    handlers = dict(settings.getdict("DOWNLOAD_HANDLERS"))
    if any(str(path) == RENDERING_HANDLER for path in handlers.values()):
        settings.set("DOWNLOAD_HANDLERS", {scheme: STATIC_HANDLER if str(path) == RENDERING_HANDLER else path
                                           for scheme, path in handlers.items()},
                     priority=settings.getpriority("DOWNLOAD_HANDLERS") or 0)
    if settings.get("RENDER_MODE") == "auto":
        settings.set("RENDER_MODE", "never", priority=settings.getpriority("RENDER_MODE") or 0)
        logger.info("pages are fetched statically, none rendered: RENDER_MODE=auto %s", hint("render"))
