"""The scheduler adapter's own bookkeeping, on a crawler that never crawls."""

from scrapy.utils.test import get_crawler

from crawlproj import settings as base
from crawlproj.frontier.scheduler import FrontierScheduler


def test_hosts_by_rule_stat_drops_to_zero_when_no_host_follows_the_rule(tmp_path):
    values = {k: getattr(base, k) for k in dir(base) if k.isupper()}
    crawler = get_crawler(settings_dict={**values, "PROFILE": "sandbox", "FRONTIER_SPILL_DIR": str(tmp_path / "spill")})
    crawler.stats.open_spider()
    scheduler = FrontierScheduler.from_crawler(crawler)
    scheduler.rules.update({"a": "suspended", "b": "min_interval"})
    scheduler._update_stats()
    assert crawler.stats.get_value("frontier/hosts_by_rule/suspended") == 1
    scheduler.rules["a"] = "min_interval"
    scheduler._update_stats()
    assert crawler.stats.get_value("frontier/hosts_by_rule/suspended") == 0
    assert crawler.stats.get_value("frontier/hosts_by_rule/min_interval") == 2
    scheduler.spill.close()
