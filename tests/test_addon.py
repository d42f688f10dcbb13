"""The add-on (crawlproj.addon.Crawlproj) in a project that is not crawlproj's: its defaults,
the project's values kept, and components without their partners refused in one line."""

from __future__ import annotations

import pytest
from scrapy.utils.test import get_crawler

from crawlproj import defaults
from crawlproj.errors import SettingsError

CONTACT = "mybot/1.0 (+https://my.example/bot)"
ADDON = {"crawlproj.addon.Crawlproj": 0}


def foreign(**values):
    """A crawler of a project of its own (no crawlproj settings), the add-on enabled."""
    return get_crawler(settings_dict={"ADDONS": ADDON, "USER_AGENT": CONTACT, **values})


def test_the_addon_installs_every_component_with_its_default():
    s = foreign().settings
    assert s["SCHEDULER"] == defaults.SCHEDULER and s["DOWNLOADER"] == defaults.DOWNLOADER
    assert s["DUPEFILTER_CLASS"] == defaults.DUPEFILTER_CLASS
    assert s.getfloat("MIN_INTERVAL") == defaults.MIN_INTERVAL and s.getint("FRONTIER_LEVELS") == 8
    for name in ("SPIDER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES", "ITEM_PIPELINES", "EXTENSIONS"):
        assert s.getdict(name) == getattr(defaults, name), name
    assert s.getpriority("MIN_INTERVAL") == 15  # Scrapy's "addon" priority: the project's beats it
    # crawlproj's own project's settings are not the add-on's: the project keeps its own.
    assert "COMMANDS_MODULE" not in s or s["COMMANDS_MODULE"] != "crawlproj.commands"
    assert s.get("PROFILE") is None and s["SPIDER_MODULES"] != ["crawlproj.spiders"]


def test_the_addon_never_overrides_what_the_project_set():
    mine = "myproject.middlewares.Mine"
    s = foreign(CONCURRENT_REQUESTS=8, STORE_URI="sqlite:///mine.db", WARC_ENABLED=False,
                DOWNLOADER_MIDDLEWARES={mine: 543,
                                        "crawlproj.downloadermiddlewares.robots_txt.RobotsTxtMiddleware": 120},
                DOWNLOAD_HANDLERS={"https": "myproject.handlers.Https"}).settings
    assert s.getint("CONCURRENT_REQUESTS") == 8 and s["STORE_URI"] == "sqlite:///mine.db"
    assert s.getbool("WARC_ENABLED") is False
    middlewares = s.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares[mine] == 543  # the project's own stays
    assert middlewares["crawlproj.downloadermiddlewares.robots_txt.RobotsTxtMiddleware"] == 120  # at its order
    assert middlewares["crawlproj.downloadermiddlewares.address_safety.AddressSafetyMiddleware"] == 50
    handlers = s.getdict("DOWNLOAD_HANDLERS")
    assert handlers["https"] == "myproject.handlers.Https" and handlers["http"] == defaults.DOWNLOAD_HANDLERS["http"]


def test_a_responses_outputs_take_a_few_tasks_not_a_hundred():
    """Scrapy starts CONCURRENT_ITEMS tasks for every response, whatever it yields (a page yields
    its item and a few new links): at Scrapy's 100, 300 reactor callbacks a page, three in four of
    a polite crawl's, and every turn of the loop, each host's due request waiting on it, longer."""
    import asyncio

    from scrapy.utils.asyncio import _parallel_asyncio

    s = foreign().settings
    count = s.getint("CONCURRENT_ITEMS")
    assert count == defaults.CONCURRENT_ITEMS <= 8 and s.getpriority("CONCURRENT_ITEMS") == 15
    assert foreign(CONCURRENT_ITEMS=100).settings.getint("CONCURRENT_ITEMS") == 100  # the project's own stays
    created, handled = [], []

    async def handle(output):
        handled.append(output)

    async def one_response():
        loop = asyncio.get_running_loop()
        loop.set_task_factory(lambda loop, coro, **kw: created.append(coro) or asyncio.Task(coro, loop=loop, **kw))
        await _parallel_asyncio(iter(["item", "link", "link"]), count, handle)

    asyncio.run(one_response())
    workers = [c for c in created if c.__qualname__ == "_parallel_asyncio.<locals>.worker"]
    assert sorted(handled) == ["item", "link", "link"] and len(workers) == count  # Scrapy's way: a task a slot


def test_a_bad_crawlproj_setting_is_refused_in_one_line_but_the_projects_own_are_its_business():
    with pytest.raises(SettingsError, match=r"setting MIN_INTERVAL='nan' is invalid"):
        foreign(MIN_INTERVAL="nan")
    foreign(MY_OWN_SETTING=3)  # not ours to judge


def test_the_frontier_scheduler_without_its_downloader_refuses_to_start_naming_it():
    with pytest.raises(SettingsError, match=r"DOWNLOADER=.*needs its partner DOWNLOADER = "
                                            r"'crawlproj.frontier.downloader.FrontierDownloader'"):
        foreign(DOWNLOADER="scrapy.core.downloader.Downloader")


def test_an_ordering_without_the_frontier_refuses_to_start_naming_it():
    with pytest.raises(SettingsError, match=r"PRIORITIZER='backlinks' is invalid: orders the frontier's queues: it "
                                            r"needs SCHEDULER = 'crawlproj.frontier.scheduler.FrontierScheduler'"):
        foreign(SCHEDULER="scrapy.core.scheduler.Scheduler", PRIORITIZER="backlinks")
    foreign(SCHEDULER="scrapy.core.scheduler.Scheduler")  # breadth-first: any scheduler


def test_the_frontier_scheduler_alone_names_what_it_needs():
    from crawlproj.frontier.scheduler import FrontierScheduler

    crawler = get_crawler(settings_dict={"SCHEDULER": "crawlproj.frontier.scheduler.FrontierScheduler"})
    with pytest.raises(SettingsError, match=r"enable the add-on, ADDONS = \{'crawlproj.addon.Crawlproj': 0\}"):
        FrontierScheduler.from_crawler(crawler)
    values = {k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}
    crawler = get_crawler(settings_dict={**values, "DOWNLOADER": "scrapy.core.downloader.Downloader"})
    with pytest.raises(SettingsError, match="needs its partner DOWNLOADER"):
        FrontierScheduler.from_crawler(crawler)


def test_importing_the_defaults_brings_no_project_of_crawlprojs():
    names = {k for k in dir(defaults) if k.isupper()}
    assert not names & {"COMMANDS_MODULE", "PROFILE", "ADDONS", "BOT_NAME", "SPIDER_MODULES", "NEWSPIDER_MODULE"}


def test_the_projects_download_delay_becomes_the_frontiers_interval():
    s = foreign(DOWNLOAD_DELAY=1).settings  # as scrapy startproject writes it
    assert s.getfloat("MIN_INTERVAL") == 1.0 and s.getfloat("DOWNLOAD_DELAY") == 0
    s = foreign(DOWNLOAD_DELAY=1, MIN_INTERVAL=0.25).settings
    assert s.getfloat("MIN_INTERVAL") == 0.25 and s.getfloat("DOWNLOAD_DELAY") == 0
    assert foreign().settings.getfloat("MIN_INTERVAL") == defaults.MIN_INTERVAL


def test_a_test_never_writes_the_checkouts_data(tmp_path):
    """tests/conftest.py runs each test in its own folder: a crawler's files beside the default
    (relative) STORE_URI go there, not to the user's data/."""
    from sandbox.harness import PROJECT_DIR

    data = PROJECT_DIR / "data"
    before = sorted(data.iterdir()) if data.exists() else []
    foreign()  # the dead-letter queue opens data/crawl.deadletters.db beside the default store
    assert (tmp_path / "data" / "crawl.deadletters.db").exists()
    assert (sorted(data.iterdir()) if data.exists() else []) == before
