"""crawlproj's exceptions (as ``scrapy/exceptions.py``): imported by every layer, importing none."""

from __future__ import annotations


class BadInput(ValueError):
    """Input the crawl cannot start with (a setting, a spider argument, a seeds file): the
    ``crawl`` command prints its message as one line and exits 2."""


class SettingsError(BadInput):
    """A setting with a value the crawler cannot use. The message names it."""

    def __init__(self, name: str, value: object, problem: str) -> None:
        super().__init__(f"setting {name}={value!r} is invalid: {problem}")
        self.name = name
