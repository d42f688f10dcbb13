"""Log levels that say whose fault it was: a page's failure is a WARNING, the crawler's an ERROR.

Scrapy's retry middleware logs a request that ran out of retries at ERROR. For a crawler
that is a page's outcome, not its own failure: it is recorded in the store's errors, the
stats (``errors/<kind>``) and the dead-letter queue, and a hostile or broken server makes
many. So those records are logged at WARNING, and ERROR stays for what needs the operator.
"""

from __future__ import annotations

import logging

#: Loggers and the start of the messages they log at ERROR for a page's outcome.
PAGE_OUTCOMES = {"scrapy.downloadermiddlewares.retry": ("Gave up retrying",)}
#: Loggers and the start of the messages they log at INFO that are start-up and close-down
#: dumps (a hundred lines before the first page): DEBUG, so the console shows the crawl.
DUMPS = {"scrapy.utils.log": ("Versions:",), "scrapy.middleware": ("Enabled ",), "scrapy.crawler": ("Overridden settings",),
         "scrapy.addons": ("Enabled addons",), "scrapy-playwright": ("Closing download handler",
                                                                     "Starting download handler")}


class LevelFilter(logging.Filter):
    """Moves records of one level whose message starts with one of ``prefixes`` to another level."""

    def __init__(self, prefixes: tuple[str, ...], source: int, target: int) -> None:
        super().__init__()
        self.prefixes, self.source, self.target = prefixes, source, target

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == self.source and str(record.msg).startswith(self.prefixes):
            record.levelno, record.levelname = self.target, logging.getLevelName(self.target)
        return True


def install_log_filters() -> None:
    """Install the filters (once per process): page outcomes at WARNING, dumps at DEBUG."""
    for table, source, target in ((PAGE_OUTCOMES, logging.ERROR, logging.WARNING), (DUMPS, logging.INFO, logging.DEBUG)):
        for name, prefixes in table.items():
            log = logging.getLogger(name)
            if not any(isinstance(f, LevelFilter) and f.source == source for f in log.filters):
                log.addFilter(LevelFilter(prefixes, source, target))
