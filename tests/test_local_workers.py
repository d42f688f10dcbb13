"""What makes a crawl process one of WORKERS' workers (no process started here)."""

from scrapy.settings import Settings

from crawlproj import defaults
from crawlproj.distributed.local_workers import WORKER_PAGE_STAGE_BACKLOG, worker_overrides


def settings(**given):
    s = Settings({k: getattr(defaults, k) for k in defaults.__annotations__}, priority="default")
    for name, value in given.items():
        s.set(name, value, priority="cmdline")
    return s


def test_a_worker_with_a_page_to_parse_asks_for_no_other_unless_told_otherwise():
    assert defaults.PAGE_STAGE_BACKLOG > WORKER_PAGE_STAGE_BACKLOG == 1
    assert worker_overrides(settings(), "redis://127.0.0.1:1/0", 1)["PAGE_STAGE_BACKLOG"] == "1"
    assert worker_overrides(settings(PAGE_STAGE_BACKLOG=4), "redis://127.0.0.1:1/0", 2)["PAGE_STAGE_BACKLOG"] == "4"
