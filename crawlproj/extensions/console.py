"""What a crawl says on its console: a progress line, each refusal once per host, and a summary.

A crawl that stores nothing, or skips a host, must say why where its user looks: Scrapy's
periodic line counts pages only, and the only trace of a refused crawl was a counter in a
stats dump of a hundred lines. So:

* every ``PROGRESS_INTERVAL`` seconds one line: new pages stored and their rate, hosts active,
  URLs queued, errors, and the frontier's completion estimate as a clock time with its range;
  an incremental crawl, which runs until stopped, says instead what its revisits did (304s,
  changes, meaningful changes) and when the next is due; each meaningful change gets a line of
  its own (:mod:`crawlproj.changes.pipeline`);
* a host refused by address safety, its robots.txt or the crawl's scope is logged once, at
  WARNING, with the reason and the setting that changes it (the first ``REFUSALS_LOGGED``
  hosts; the rest are counted in the stats);
* at the close, a summary: pages stored and where, errors by kind, what was not crawled and
  why, and what to run next. A crawl that stored no page gets one line saying why
  (``crawlproj/empty_crawl`` in the stats; ``scrapy crawl`` prints it and exits 1);
* the crawl's store and stats file are recorded in ``LAST_CRAWL_FILE``, where ``scrapy report``,
  ``scrapy wacz`` and ``scrapy deadletters`` find the crawl.

:func:`progress_line`, :func:`summary_lines` and :func:`empty_crawl_reason` are pure (stats in,
text out).
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.crawler import Crawler
from twisted.internet import task

from ..fetch_errors import REMEDIES

logger = logging.getLogger("crawlproj.progress")

#: Why a host was refused, and what changes it (``{detail}``: the refusal's own words).
REFUSALS = {
    "address_safety": ("not crawled: address safety refused it ({detail}), it is not a public address. To crawl "
                       "it anyway, allow its range, e.g. -s ADDRESS_ALLOWLIST=127.0.0.0/8 for this machine"),
    "robots": ("its robots.txt disallows some of its URLs (the first: {detail}), which are not crawled. The "
               "crawler obeys robots.txt; nothing is set to change that"),
    "scope": ("links to it are not followed: it is out of the crawl's scope ({detail}). Widen it with "
              "ALLOWED_DOMAINS (the web spider) or crawl it with -a url= (the site spider)"),
}


def _sum(stats: dict, prefix: str) -> int:
    return sum(v for k, v in stats.items() if k.startswith(prefix) and isinstance(v, (int, float)))


def _kinds(stats: dict, prefix: str) -> dict[str, int]:
    found = {k[len(prefix):]: v for k, v in stats.items() if k.startswith(prefix) and isinstance(v, int) and v}
    return dict(sorted(found.items(), key=lambda kv: -kv[1]))


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def refused(stats: dict) -> dict[str, int]:
    """What was not crawled, by why: robots.txt, address safety, scope, trap defences."""
    return {"robots.txt": int(stats.get("crawlproj/robots_forbidden", 0)),
            "address safety": _sum(stats, "address_safety/refused/"),
            "scope": _sum(stats, "crawlproj/out_of_scope/"),
            "trap defences": _sum(stats, "traps/")}


def fetch_errors(stats: dict) -> dict[str, int]:
    """Failed fetches by kind: pages', and robots.txt's (a host whose robots.txt could not be
    fetched is not crawled: its failure is an error like a page's)."""
    errors = _kinds(stats, "crawlproj/fetch_errors/")
    for kind, n in _kinds(stats, "robotstxt/unreachable/").items():
        errors[f"robots.txt {kind}"] = n
    return dict(sorted(errors.items(), key=lambda kv: -kv[1]))


def pages_stored(stats: dict) -> tuple[int, int]:
    """(new pages stored, revisits stored): a revisit's capture (or its 304) is not a new page."""
    revisits = int(stats.get("revisit/visits", 0))
    return max(0, int(stats.get("store/pages", 0)) - revisits), revisits


def revisit_part(stats: dict) -> str:
    """What an incremental crawl's revisits did, and when the next one is due (it has no end time)."""
    due, next_in = int(stats.get("revisit/short_term", 0)), stats.get("revisit/next_due_in")
    part = (f"; {int(stats.get('revisit/tracked', 0)):,} URLs tracked, {pages_stored(stats)[1]:,} revisits "
            f"({int(stats.get('revisit/not_modified', 0)):,} not modified, {int(stats.get('revisit/changed', 0)):,} "
            f"changed, {int(stats.get('changes/meaningful', 0)):,} meaningful changes); {due:,} due within "
            f"the horizon")
    if isinstance(next_in, (int, float)):
        part += ", the next " + ("now" if next_in <= 0 else f"in {_duration(next_in)}")
    return part + "; runs until Ctrl-C"


def progress_line(stats: dict, elapsed: float, now: float, incremental: bool = False) -> str:
    """One line of progress: pages, rate, hosts active, queued, errors, the completion estimate
    (an incremental crawl, endless: its revisits and what is due instead)."""
    pages = pages_stored(stats)[0]
    rate = pages / elapsed if elapsed > 0 else 0.0
    line = (f"{pages:,} pages ({rate:.1f}/s) in {_duration(elapsed)}, {int(stats.get('frontier/active_keys', 0)):,} "
            f"hosts active, {int(stats.get('frontier/queued', 0)):,} URLs queued, "
            f"{sum(fetch_errors(stats).values()):,} errors")
    if incremental:
        return line + revisit_part(stats)
    estimate = stats.get("frontier/estimate_seconds")
    if isinstance(estimate, (int, float)):
        low, high = stats.get("frontier/estimate_low_seconds", estimate), stats.get("frontier/estimate_high_seconds", estimate)
        line += (f"; done about {time.strftime('%H:%M', time.localtime(now + estimate))} "
                 f"(in {_duration(estimate)}; {_duration(low)} to {_duration(high)})")
    return line


def empty_crawl_reason(stats: dict) -> str | None:
    """Why a crawl stored no page, in one line (None when it stored some)."""
    if stats.get("store/pages", 0):
        return None
    if not stats.get("crawlproj/seeds", 1) and not stats.get("frontier/enqueued"):
        return "no page was stored: there was no URL to crawl (check the seeds file or -a url=)"
    kinds = _kinds(stats, "address_safety/refused/")
    if kinds:
        return ("no page was stored: address safety refused " + ", ".join(f"{n} {k}" for k, n in kinds.items())
                + " request(s); to crawl such addresses, allow their range, e.g. -s ADDRESS_ALLOWLIST=127.0.0.0/8")
    # A host whose robots.txt could not be fetched is not crawled: its cause is the crawl's.
    errors = fetch_errors(stats)
    if errors:
        remedy = REMEDIES.get(next(iter(errors)).removeprefix("robots.txt "))
        return ("no page was stored: every fetch failed (" + ", ".join(f"{k} {n}" for k, n in errors.items()) + ")"
                + (f"; {remedy}" if remedy else ""))
    if stats.get("crawlproj/robots_forbidden"):
        return (f"no page was stored: robots.txt disallowed all {stats['crawlproj/robots_forbidden']} URL(s) asked "
                "for (the crawler obeys robots.txt, as ROBOTSTXT_OBEY says)")
    scope = _sum(stats, "crawlproj/out_of_scope/")
    if scope:
        return (f"no page was stored: {scope} URL(s) were out of scope; widen it with ALLOWED_DOMAINS (the web "
                "spider) or -a url= (the site spider)")
    return "no page was stored (see the stats file for the crawl's counters)"


def summary_lines(stats: dict, elapsed: float, store: str, stats_file: str | None,
                  commands: bool = True) -> list[str]:
    """The closing summary: what was stored, what failed, what was not crawled, what next
    (``commands``: crawlproj's commands are the project's, else how to have them)."""
    pages, revisits = pages_stored(stats)
    reason = stats.get("finish_reason", "finished")
    lines = [f"crawl {reason} after {_duration(elapsed)}: {pages:,} pages stored in {store}"
             + (f" ({pages / elapsed:.1f} pages/s)" if elapsed > 0 and pages else "")
             + (f", {revisits:,} revisits ({int(stats.get('changes/meaningful', 0)):,} meaningful changes: "
                f"scrapy changes --store {store})" if revisits else "")]
    errors = fetch_errors(stats)
    lines.append("  errors: " + (f"{sum(errors.values()):,} (" + ", ".join(f"{k} {n:,}" for k, n in errors.items())
                                 + ")" if errors else "none"))
    skipped = {why: n for why, n in refused(stats).items() if n}
    lines.append("  not crawled: " + (", ".join(f"{n:,} refused by {why}" if why != "scope" else f"{n:,} out of scope"
                                                for why, n in skipped.items()) if skipped else "nothing refused"))
    what_next = (f"  next: scrapy report --store {store}; scrapy wacz --store {store}; "
                 f"scrapy export --store {store} --format jsonl|parquet|wet; scrapy search \"words\" --store {store}"
                 if commands else "  next: with COMMANDS_MODULE = 'crawlproj.commands' in your settings, scrapy report, "
                 f"export, search and wacz read this crawl ({store})")
    if stats_file:
        what_next += f"; every counter is in {stats_file}"
    lines.append(what_next)
    return lines


def default_stats_file(store_uri: str) -> str | None:
    """The stats file beside a store: ``sqlite:///data/crawl.db`` -> ``data/crawl.stats.json``."""
    from ..store import beside_store, parse_store_uri

    try:
        return beside_store(parse_store_uri(store_uri)[1], "stats", ".json")
    except ValueError:
        return None


_consoles: WeakKeyDictionary = WeakKeyDictionary()
#: The reasons of this process's crawls that stored no page (``scrapy crawl`` reads them).
EMPTY_CRAWLS: list[str] = []


def note_refusal(crawler: Any, host: str, why: str, detail: str) -> None:
    """Say once, at WARNING, that ``host`` was refused and why (:data:`REFUSALS`); no-op
    when the crawl has no :class:`Console`."""
    console = _consoles.get(crawler)
    if console is not None:
        console.refused(host, why, detail)


class Console:
    """The console's progress line, refusals and closing summary (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.crawler = crawler
        self.interval = s.getfloat("PROGRESS_INTERVAL")
        self.refusals_logged = s.getint("REFUSALS_LOGGED")
        self.last_crawl_file = s.get("LAST_CRAWL_FILE")
        self.store = s.get("STORE_URI")
        self.stats_file = s.get("STATS_FILE") or default_stats_file(self.store)
        self.incremental = s.get("REVISIT_MODE") == "incremental"
        self.commands = s.get("COMMANDS_MODULE") == "crawlproj.commands"  # another project's may not have them
        self._said: set[tuple[str, str]] = set()
        self._hosts_said = 0
        self._started = time.monotonic()
        self._loop = task.LoopingCall(self.progress)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Console:
        console = _consoles[crawler] = cls(crawler)
        crawler.signals.connect(console.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(console.spider_closed, signal=signals.spider_closed)
        return console

    def spider_opened(self, spider: Any = None) -> None:
        self._started = time.monotonic()
        self.incremental = self.incremental or getattr(spider, "mode", None) == "incremental"
        if self.interval > 0:
            self._loop.start(self.interval, now=False)
        if self.last_crawl_file:
            record_last_crawl(self.last_crawl_file, self.store, self.stats_file)

    def progress(self) -> None:
        logger.info(progress_line(self.crawler.stats.get_stats(), time.monotonic() - self._started, time.time(),
                                  self.incremental))

    def refused(self, host: str, why: str, detail: str) -> None:
        if (host, why) in self._said or self._hosts_said > self.refusals_logged:
            return
        self._said.add((host, why))
        self._hosts_said += 1
        if self._hosts_said > self.refusals_logged:
            logger.warning("more hosts were refused: counted in the stats (address_safety/refused/*, "
                           "crawlproj/robots_forbidden, crawlproj/out_of_scope/*), not logged")
            return
        logger.warning("%s: %s", host, REFUSALS[why].format(detail=detail))

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        if self._loop.running:
            self._loop.stop()
        stats = self.crawler.stats
        values = stats.get_stats()
        elapsed = time.monotonic() - self._started
        for line in summary_lines({**values, "finish_reason": reason or values.get("finish_reason")}, elapsed,
                                  self.store, self.stats_file, self.commands):
            logger.info(line)
        why = empty_crawl_reason(values)
        if why is not None and self.incremental:  # continuous: a spell with nothing due or new is normal
            logger.info("%s; nothing was due for a revisit, nor new", why)
        elif why is not None:
            stats.set_value("crawlproj/empty_crawl", why)
            EMPTY_CRAWLS.append(why)
            logger.warning(why)


def record_last_crawl(path: str, store: str, stats_file: str | None) -> None:
    """Write where this crawl keeps its store and stats (read by :func:`last_crawl`)."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({"store": store, "stats": stats_file, "started": time.time(), "cwd": os.getcwd()}, fh)
    except OSError as exc:  # a read-only folder: the commands fall back to STORE_URI
        logger.warning("could not record the crawl in %s: %s", path, exc)


def last_crawl(path: str) -> dict | None:
    """What :func:`record_last_crawl` wrote, or None."""
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("store") else None
