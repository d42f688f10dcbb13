"""Settings profiles: ``-s PROFILE=<name>`` applies the module ``<name>`` of the project's
settings package (``settings/`` beside ``scrapy.cfg``: Scrapy's ``SETTINGS_MODULE``)."""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil

from scrapy.settings import BaseSettings

from .config import validate
from .errors import SettingsError
from .extras import adapt as adapt_to_extras
from .log_levels import install_log_filters

logger = logging.getLogger(__name__)


def profiles_package() -> str:
    """The project's settings package: Scrapy's settings module (from ``scrapy.cfg``, or
    the egg's entry point under Scrapyd), ``settings`` when none is set."""
    return os.environ.get("SCRAPY_SETTINGS_MODULE") or "settings"


def available_profiles() -> list[str]:
    package = importlib.import_module(profiles_package())
    return sorted(m.name for m in pkgutil.iter_modules(getattr(package, "__path__", [])))


def name_worker(settings: BaseSettings) -> None:
    """Fill in ``WORKER_ID`` once per process and put it where ``{worker}`` appears (a
    distributed worker's store and WARC shard are named after it)."""
    from .distributed.workers import new_worker_id

    worker = settings.get("WORKER_ID") or new_worker_id()
    settings.set("WORKER_ID", worker, priority=max(settings.getpriority("WORKER_ID") or 0, 20))
    for name in ("STORE_URI", "WARC_PREFIX", "NEAR_DUPLICATES_INDEX", "REVISIT_DB", "WARC_DIR", "WARC_DIGEST_INDEX"):
        value = settings.get(name)
        if isinstance(value, str) and "{worker}" in value:
            settings.set(name, value.replace("{worker}", worker), priority=settings.getpriority(name))


_applied: dict[str, bool] = {}  # profiles applied in this process


class ProfileAddon:
    """Applies the profile named by ``PROFILE``, then validates every crawlproj setting.

    Profile values take "project" priority: they replace the base settings, and
    ``-s`` options and spiders' ``custom_settings`` still replace them. Any bad
    value raises :class:`SettingsError` before the crawl starts.
    """

    def update_settings(self, settings: BaseSettings) -> None:
        name = settings.get("PROFILE") or "local"
        profiles = available_profiles()
        if name not in profiles:
            raise SettingsError("PROFILE", name, f"unknown profile; choose one of: {', '.join(profiles)}")
        module = importlib.import_module(f"{profiles_package()}.{name}")
        for key in dir(module):
            if key.isupper():
                settings.set(key, getattr(module, key), priority="project")
        name_worker(settings)
        adapt_to_extras(settings)
        validate(settings)
        install_log_filters()
        if _applied.get(name) is None:  # the crawl command checks the settings first: say it once
            _applied[name] = True
            logger.info("crawlproj profile %r applied", name)
