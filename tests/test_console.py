"""What the console says a crawl did, from its stats (crawlproj.extensions.console's pure functions)."""

import pytest

from crawlproj.extensions.console import empty_crawl_reason, progress_line, summary_lines

SEEDED = {"crawlproj/seeds": 1, "frontier/enqueued": 1}


@pytest.mark.parametrize("stats, says", [
    # robots.txt could not be fetched: the host's real cause, not "robots.txt disallowed"
    ({"robotstxt/unreachable/dns": 1, "crawlproj/robots_forbidden": 1}, ("robots.txt dns 1", "HOST_RESOLVE")),
    ({"robotstxt/unreachable/connection_refused": 1, "crawlproj/robots_forbidden": 1},
     ("robots.txt connection_refused 1", "nothing accepted the connection")),
    ({"robotstxt/unreachable/timeout": 1, "crawlproj/robots_forbidden": 1}, ("timeout 1", "DOWNLOAD_TIMEOUT")),
    ({"crawlproj/fetch_errors/dns": 3}, ("dns 3", "HOST_RESOLVE")),
    ({"crawlproj/robots_forbidden": 1}, ("robots.txt disallowed all 1 URL(s)", "ROBOTSTXT_OBEY")),
    ({"crawlproj/out_of_scope/site": 4}, ("4 URL(s) were out of scope", "ALLOWED_DOMAINS")),
    ({"address_safety/refused/loopback": 1}, ("address safety refused 1 loopback", "ADDRESS_ALLOWLIST")),
])
def test_a_crawl_that_stored_nothing_names_its_real_cause_and_the_setting(stats, says):
    reason = empty_crawl_reason({**SEEDED, **stats})
    assert reason.startswith("no page was stored: ") and all(part in reason for part in says), reason


def test_the_summary_counts_robots_txt_failures_as_errors():
    stats = {**SEEDED, "robotstxt/unreachable/dns": 1090, "crawlproj/fetch_errors/http_404": 2}
    lines = summary_lines(stats, 10.0, "sqlite:///data/crawl.db", None)
    assert "  errors: 1,092 (robots.txt dns 1,090, http_404 2)" in lines
    assert ", 1,092 errors" in progress_line(stats, 10.0, 0.0)


def test_a_misspelt_spider_argument_is_refused_naming_the_one_meant():
    from crawlproj.errors import BadInput
    from crawlproj.spiders.site import SiteSpider
    from crawlproj.spiders.web import WebSpider

    with pytest.raises(BadInput, match=r"^-a seed= is not an argument of the web spider; did you mean -a seeds=\?$"):
        WebSpider(seed="my-seeds.txt")
    with pytest.raises(BadInput, match=r"-a max_page= is not an argument of the site spider; did you mean -a max_pages="):
        SiteSpider(url="https://example.org/", max_page="3")
    WebSpider(seeds="my-seeds.txt", _job="a-scrapyd-job", mode="incremental")  # Scrapyd's, the revisit mode's

    class Mine(SiteSpider):  # a project's own spider takes what arguments it likes
        name = "mine"

    Mine.__module__ = "myproject.spiders"
    assert Mine(url="https://example.org/", category="docs").category == "docs"


def test_redirect_middlewares_do_not_warn_about_a_referer_the_crawl_chose_not_to_send(caplog):
    import logging

    from scrapy.utils.test import get_crawler

    from crawlproj.downloadermiddlewares.redirects import LoopAwareMetaRefreshMiddleware, LoopAwareRedirectMiddleware

    crawler = get_crawler(settings_dict={"REFERER_ENABLED": False})  # as the distributed profile sets it
    with caplog.at_level(logging.WARNING):
        for cls in (LoopAwareRedirectMiddleware, LoopAwareMetaRefreshMiddleware):
            cls.from_crawler(crawler)._engine_started()
    assert not caplog.records
