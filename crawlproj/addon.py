"""crawlproj in any Scrapy project: one line, ``ADDONS = {"crawlproj.addon.Crawlproj": 0}``.

The add-on installs the crawler's components (the frontier scheduler with its downloader, the
politeness, robots.txt and address-safety middlewares, near-duplicates, the WARC archive, the
store, the console's summary...) and every setting of :mod:`crawlproj.defaults` with its
documented default (docs/settings.md), at Scrapy's ``addon`` priority: a value the project,
its spider or the command line set always wins. A component dictionary the project set
(``DOWNLOADER_MIDDLEWARES``, ...) keeps its entries, crawlproj's are added beside them; a
component the project lists keeps the order it gave. The project's ``DOWNLOAD_DELAY`` becomes the
frontier's ``MIN_INTERVAL`` (politeness lives in one place). Features are switched off by their
settings (``WARC_ENABLED``, ``NEAR_DUPLICATES_ENABLED``, ``ROBOTSTXT_OBEY``, ``RENDER_MODE``...).

Every crawlproj setting is then checked, and a scheduler without the partner it needs is
refused, each with one line naming the setting (:class:`~crawlproj.errors.SettingsError`).
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.misc import load_object

from . import defaults
from .config import declared, validate

logger = logging.getLogger(__name__)

#: Component priority dictionaries: crawlproj's entries join the project's.
COMPONENTS = ("SPIDER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES", "ITEM_PIPELINES", "EXTENSIONS", "FEED_EXPORTERS")
#: Dictionaries keyed by a scheme: the project's handler for a scheme wins.
KEYED = ("DOWNLOAD_HANDLERS",)
#: Read once per process, before the reactor starts: set before any crawler exists.
PROCESS = ("ASYNCIO_EVENT_LOOP", "TWISTED_DNS_RESOLVER")


def _same(a: Any, b: Any) -> bool:
    try:
        return load_object(a) is load_object(b)
    except (ImportError, NameError, ValueError, AttributeError):
        return a == b


def _merge_components(settings: BaseSettings, name: str, ours: dict) -> None:
    """Add each of ``ours`` that the project's dictionary does not list, whatever its priority."""
    theirs = dict(settings.getdict(name))
    for component, order in ours.items():
        if not any(_same(component, listed) for listed in theirs):
            theirs[component] = order
    settings.set(name, theirs, priority=settings.getpriority(name) or 0)


def apply_defaults(settings: BaseSettings) -> None:
    """Every setting of :mod:`crawlproj.defaults` at the ``addon`` priority, components merged."""
    for name in declared((defaults,)):
        value = getattr(defaults, name)
        if name in COMPONENTS:
            _merge_components(settings, name, value)
        elif name in KEYED:
            theirs = dict(settings.getdict(name))
            settings.set(name, {**value, **theirs}, priority=settings.getpriority(name) or 0)
        elif name not in PROCESS:
            settings.set(name, value, priority="addon")


def effective_settings(settings: BaseSettings) -> BaseSettings:
    """The settings as the crawl will have them. Scrapy builds the spider before it applies the
    add-ons: a spider reading crawlproj's settings in ``from_crawler`` reads them here."""
    if settings.frozen or settings.get("URL_MAX_LENGTH") is not None:
        return settings
    copy = settings.copy()
    apply_defaults(copy)
    return copy


def _delay_as_interval(settings: BaseSettings) -> None:
    """The project's ``DOWNLOAD_DELAY`` (``scrapy startproject`` writes 1) becomes the frontier's
    ``MIN_INTERVAL``, unless the project set that too, and Scrapy's slot delay goes off: politeness
    lives in the frontier, in one place. Both at once made a crawl of one host 10 times slower
    (0.3 pages/s against 2.8 with a 0.3 s interval: the slot's delay and the frontier's rest in turn)."""
    priority = settings.getpriority("DOWNLOAD_DELAY") or 0
    delay = settings.getfloat("DOWNLOAD_DELAY")
    if delay <= 0 or priority <= SETTINGS_PRIORITIES["addon"]:
        return
    if (settings.getpriority("MIN_INTERVAL") or 0) < priority:
        settings.set("MIN_INTERVAL", delay, priority=priority)
    settings.set("DOWNLOAD_DELAY", 0, priority=priority)
    logger.info("DOWNLOAD_DELAY=%s is the frontier's interval: MIN_INTERVAL=%s, Scrapy's slot delay off",
                delay, settings.get("MIN_INTERVAL"))


class Crawlproj:
    """The add-on (see the module docstring)."""

    @classmethod
    def update_pre_crawler_settings(cls, settings: BaseSettings) -> None:
        # The event loop (its idle timing measures fetches) and the resolver (HOST_RESOLVE) are
        # the process's: Scrapy installs them before any add-on's update_settings runs.
        for name in PROCESS:
            settings.set(name, getattr(defaults, name), priority="addon")

    def update_settings(self, settings: BaseSettings) -> None:
        _delay_as_interval(settings)
        apply_defaults(settings)
        from .exports.feeds import PageFeeds
        from .extras import adapt as adapt_to_extras
        from .frontier.scheduler import require_partners
        from .log_levels import install_log_filters
        from .profiles import name_worker

        PageFeeds().update_settings(settings)
        name_worker(settings)
        adapt_to_extras(settings)
        # The project's own -s names are its business: only crawlproj's settings are checked.
        validate(settings, (defaults,), unknown=False)
        require_partners(settings)
        install_log_filters()
