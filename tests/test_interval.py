from crawlproj.politeness.interval import MercatorPolicy


def test_mercator_policy_takes_the_largest_rule():
    p = MercatorPolicy(min_interval=1.0, duration_factor=10, max_crawl_delay=30)
    assert (p.interval(0.05).seconds, p.interval(0.05).rule) == (1.0, "min_interval")
    assert (p.interval(0.3).seconds, p.interval(0.3).rule) == (3.0, "duration")
    assert (p.interval(0.3, crawl_delay=5).seconds, p.interval(0.3, 5).rule) == (5, "crawl_delay")
    assert p.interval(None, crawl_delay=3600).seconds == 30  # capped
    assert p.interval(None).seconds == 1.0
