"""Validation of crawlproj's settings at start-up, and the settings reference.

:func:`validate` runs the check :mod:`crawlproj.defaults` declares for every setting (the
checks are :mod:`crawlproj.checks`), refuses unknown names, and checks the User-Agent last;
:func:`reference` writes ``docs/settings.md`` from the declarations
(``python -m crawlproj.config``). Above :mod:`crawlproj.defaults`, which imports only
:mod:`crawlproj.checks`: the settings core has no import circle.
"""

from __future__ import annotations

import re

from scrapy.settings import BaseSettings

from . import defaults, project_defaults
from .checks import Check, identity
from .errors import SettingsError


#: The modules declaring settings: this project's own, then the components'.
MODULES = (project_defaults, defaults)


def declared(modules: tuple = MODULES) -> dict[str, Check]:
    """Every setting ``modules`` declare, with its check, in declaration order."""
    return {name: check for module in modules for name, check in module.__annotations__.items()}


def validate(settings: BaseSettings, modules: tuple = MODULES, unknown: bool = True) -> None:
    """Raise :class:`SettingsError` for the first bad setting of ``modules`` (and, with ``unknown``,
    for a ``-s`` name no one declares: in another Scrapy project, its own settings are unknown to us)."""
    _renamed(settings)
    if unknown:
        _unknown(settings)
    for name, check in declared(modules).items():
        check(settings, name)
    identity(settings)


#: Settings renamed, old name -> new: an old name given still works, with a warning.
RENAMED = {"WASEDA_MAX_DELAY_1": "WASEDA_SLOW_DELAY", "WASEDA_MAX_DELAY_2": "WASEDA_ERROR_DELAY"}


def _renamed(settings: BaseSettings) -> None:
    """Carry a renamed setting's value, given under its old name, to its new one (once)."""
    import logging

    from scrapy.settings import SETTINGS_PRIORITIES

    for old, new in RENAMED.items():
        priority = settings.getpriority(old)
        if priority is None or priority <= SETTINGS_PRIORITIES["default"]:
            continue
        if (settings.getpriority(new) or 0) < priority:
            settings.set(new, settings.get(old), priority=priority)
        del settings[old]  # read once: said once
        logging.getLogger(__name__).warning("setting %s is now called %s; read as that", old, new)


#: Setting names of the extensions crawlproj runs with, which declare no list of them. A name
#: under one of these prefixes that no one declares passes, unless it is close to one someone
#: does (``REDIS_POP_BACH``: ``REDIS_POP_BATCH`` misspelt).
KNOWN_PREFIXES = ("PLAYWRIGHT_", "SCHEDULER_", "DUPEFILTER_", "REDIS_", "SCRAPY_POET_", "ZYTE_")
#: scrapy-redis's settings (read in its modules: it declares only some in scrapy_redis.defaults).
SCRAPY_REDIS = {
    "DUPEFILTER_DEBUG", "DUPEFILTER_KEY", "REDIS_CLS", "REDIS_CONCURRENT_REQUESTS", "REDIS_DB",
    "REDIS_DECODE_RESPONSES", "REDIS_ENCODING", "REDIS_HOST", "REDIS_ITEMS_KEY", "REDIS_ITEMS_SERIALIZER",
    "REDIS_PARAMS", "REDIS_PORT", "REDIS_START_URLS_AS_SET", "REDIS_START_URLS_AS_ZSET",
    "REDIS_START_URLS_BATCH_SIZE", "REDIS_START_URLS_KEY", "SCHEDULER_DUPEFILTER_CLASS",
    "SCHEDULER_DUPEFILTER_KEY", "SCHEDULER_FLUSH_ON_START", "SCHEDULER_IDLE_BEFORE_CLOSE", "SCHEDULER_PERSIST",
    "SCHEDULER_QUEUE_CLASS", "SCHEDULER_QUEUE_KEY", "SCHEDULER_SERIALIZER"}


def known_settings() -> set[str]:
    """Every setting name crawlproj, Scrapy or scrapy-redis declares."""
    from scrapy.settings import default_settings

    return set(declared()) | SCRAPY_REDIS | {name for name in dir(default_settings) if name.isupper()}


def _unknown(settings: BaseSettings) -> None:
    """A name given on the command line (``-s``) that no one reads is most likely misspelt:
    refuse it, naming the closest known one, rather than crawl without it."""
    import difflib

    from scrapy.settings import SETTINGS_PRIORITIES

    given = [name for name in settings.attributes if settings.getpriority(name) == SETTINGS_PRIORITIES["cmdline"]]
    if not given:
        return
    known = known_settings()
    for name in given:
        if name in known:
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        if name.startswith(KNOWN_PREFIXES) and not close:
            continue  # another extension's setting: not ours to judge
        hint = f"did you mean {close[0]}?" if close else "see docs/settings.md for every setting"
        raise SettingsError(name, settings.get(name), f"unknown setting; {hint}")


def _declarations(source: str) -> list[tuple[str, str, int]]:
    """(name, reason, index of the line above its comment) of each setting declared in
    ``source``. The reason is the ``#:`` block right above it, or the one above the run of
    settings it closes up to (no blank line between): one comment may cover a group."""
    import ast

    lines, found, reason, last_end = source.splitlines(), [], "", -1
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above, i = [], node.lineno - 2
        while i >= 0 and lines[i].startswith("#:"):
            above.insert(0, lines[i][2:].strip())
            i -= 1
        if above:
            reason = " ".join(above)
        elif last_end != node.lineno - 1:  # not right under the previous setting
            reason = ""
        found.append((node.target.id, reason, i))
        last_end = node.end_lineno
    return found


def reference() -> str:
    """``docs/settings.md``: every declared setting, by section, with its default, what it
    accepts and what it is for (the ``#:`` lines above it in :mod:`crawlproj.defaults`)."""
    import inspect

    checks = declared()
    out = ["# Settings", "",
           "Generated from `crawlproj/project_defaults.py` and `crawlproj/defaults.py` by `python -m crawlproj.config > docs/settings.md`;",
           "a test fails when the two disagree. Give any of them with `-s NAME=VALUE`, in a profile",
           "(`settings/<profile>.py`) or in a spider's `custom_settings`. A bad value stops the crawl",
           "at start-up with one line naming the setting.",
           "The add-on (`crawlproj.addon.Crawlproj`, docs/using-in-your-project.md) applies every",
           "setting below but those of crawlproj's own project, each only where the project set none.", ""]
    section = None
    for module in MODULES:
        source = inspect.getsource(module)
        lines = source.splitlines()
        first = "Crawlproj's own project (not applied by the add-on)" if module is project_defaults \
            else "Scrapy and the components"
        for name, reason, i in _declarations(source):
            heading = next((m.group(1) for line in reversed(lines[:i + 1])
                            if (m := re.match(r"# -- (.+?) -*$", line))), first)
            if heading != section:
                section = heading
                out += ["", f"## {section[0].upper()}{section[1:]}", "",
                        "| Setting | Default | Accepts | What it is for |", "|---|---|---|---|"]
            out.append(_row(module, name, reason, checks))
    return "\n".join(out) + "\n"


def _row(module: object, name: str, reason: str, checks: dict[str, Check]) -> str:
    """One setting's line of the reference."""
    default = repr(getattr(module, name))
    default = "see `crawlproj/defaults.py`" if len(default) > 60 else f"`{default}`".replace("|", "\\|")
    accepts = getattr(checks[name], "accepts", "")
    return f"| `{name}` | {default} | {accepts} | {reason.replace('|', chr(92) + '|')} |"


if __name__ == "__main__":
    print(reference(), end="")
