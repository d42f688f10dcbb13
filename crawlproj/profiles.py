"""Settings profiles: ``-s PROFILE=<name>`` picks ``crawlproj.settings.<name>``."""

from __future__ import annotations

import importlib
import logging
import pkgutil

from scrapy.settings import BaseSettings

import crawlproj.settings

from .config import SettingsError, validate

logger = logging.getLogger(__name__)


def available_profiles() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(crawlproj.settings.__path__))


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
        module = importlib.import_module(f"crawlproj.settings.{name}")
        for key in dir(module):
            if key.isupper():
                settings.set(key, getattr(module, key), priority="project")
        validate(settings)
        logger.info("crawlproj profile %r applied", name)
