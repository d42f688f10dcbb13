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


class PageOutcomeFilter(logging.Filter):
    """Lowers a page outcome's record from ERROR to WARNING."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and str(record.msg).startswith(self.prefixes):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def lower_page_outcomes() -> None:
    """Install the filters (once per process)."""
    for name, prefixes in PAGE_OUTCOMES.items():
        log = logging.getLogger(name)
        if not any(isinstance(f, PageOutcomeFilter) for f in log.filters):
            log.addFilter(PageOutcomeFilter(prefixes))
