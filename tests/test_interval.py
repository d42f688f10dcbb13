import pytest

from crawlproj.politeness.interval import HostWindow, IntervalPolicy, waseda_interval


def test_mercator_policy_takes_the_largest_rule():
    p = IntervalPolicy(min_interval=1.0, duration_factor=10, max_crawl_delay=30)
    assert (p.interval(0.05).seconds, p.interval(0.05).rule) == (1.0, "min_interval")
    assert (p.interval(0.3).seconds, p.interval(0.3).rule) == (3.0, "duration")
    assert (p.interval(0.3, crawl_delay=5).seconds, p.interval(0.3, 5).rule) == (5, "crawl_delay")
    assert p.interval(None, crawl_delay=3600).seconds == 30  # capped
    assert p.interval(None).seconds == 1.0


def test_waseda_formula_by_hand():
    # min 1 + 10 x (1 - 4096/16384) + 30 x 2/10 = 1 + 7.5 + 6 = 14.5
    assert waseda_interval(1.0, 10.0, 30.0, 16384, speed=4096, errors=2) == 14.5
    # Faster than the target adds nothing for speed; no errors add nothing.
    assert waseda_interval(1.0, 10.0, 30.0, 16384, speed=50_000, errors=0) == 1.0
    # Unknown speed (only errors so far) adds nothing for speed.
    assert waseda_interval(0.5, 10.0, 30.0, 16384, speed=None, errors=10) == 30.5
    assert waseda_interval(2.0, 4.0, 0.0, 1000, speed=250, errors=0) == 5.0  # 2 + 4 x 0.75


def test_host_window_keeps_the_last_ten_fetches():
    w = HostWindow(10)
    w.record(1000, 0.5)  # 2000 B/s, then pushed out of the window
    for _ in range(7):
        w.record(8000, 1.0)  # 8000 B/s
    for _ in range(3):
        w.record(0, 2.0, error=True)
    assert w.errors == 3
    assert w.speed == 8000  # the mean over successful fetches in the window
    w.record(4000, 0.25)  # 16000 B/s; pushes out one 8000
    assert w.speed == (6 * 8000 + 16000) / 7


def test_policy_takes_the_largest_rule_and_names_it():
    p = IntervalPolicy(min_interval=1.0, duration_factor=10, max_crawl_delay=30,
                       waseda=True, max_delay_1=10, max_delay_2=30, target_speed=16384)
    fast = HostWindow()
    fast.record(20000, 0.01)
    assert p.interval(0.01, window=fast) == p.interval(0.01)  # the fast clean host: min_interval
    assert p.interval(0.01, window=fast).rule == "min_interval"
    slow = HostWindow()
    slow.record(4096, 0.5)  # 8192 B/s: half the target -> 1 + 5
    assert (p.interval(0.5, window=slow).seconds, p.interval(0.5, window=slow).rule) == (6.0, "waseda")
    assert p.interval(0.8, window=slow).rule == "duration"  # 10 x 0.8 = 8 > 6
    assert p.interval(0.5, crawl_delay=7, window=slow).rule == "crawl_delay"
    assert (p.interval(0.5, window=slow, backoff=120).seconds, p.interval(0.5, window=slow, backoff=120).rule) == (
        120, "backoff")
    off = IntervalPolicy(min_interval=1.0, waseda=False)
    assert off.interval(0.01, window=slow).seconds == 1.0


def test_interval_lists_every_rule_that_took_part():
    p = IntervalPolicy(min_interval=1.0, duration_factor=10, waseda=True, max_delay_1=10, max_delay_2=30,
                       target_speed=16384)
    slow = HostWindow()
    slow.record(4096, 1.0)  # 4 kB/s: a quarter of the target speed
    slow.record(0, 1.0, error=True)
    got = p.interval(0.2, crawl_delay=2.5, window=slow, backoff=None)
    parts = dict(got.components)
    assert set(parts) == {"min_interval", "waseda", "duration", "crawl_delay"}
    assert parts["duration"] == pytest.approx(2.0) and parts["crawl_delay"] == 2.5
    assert parts["waseda"] == pytest.approx(1.0 + 10 * 0.75 + 30 * 1 / 10)
    assert (got.rule, got.seconds) == ("waseda", parts["waseda"])


def test_the_duration_rule_reads_a_hosts_typical_fetch_not_a_lone_slow_one():
    from scrapy.http import Response

    from crawlproj.politeness.hosts import HostPoliteness, typical_duration
    from crawlproj.politeness.interval import IntervalPolicy

    assert typical_duration((0.05,)) == 0.05 and typical_duration((0.001, 0.05)) == 0.05  # the last, until three
    assert typical_duration((0.001, 0.05, 0.002)) == 0.002  # one slow of three: the crawler's hiccup
    assert typical_duration((0.04, 0.001, 0.05)) == 0.04  # two slow of three: a slow server
    hosts = HostPoliteness(IntervalPolicy(min_interval=0.2, duration_factor=10, waseda=False))
    ok = Response("http://a.test/", body=b"x")
    rests = [hosts.fetched("a.test", ok, d, 0.0, 0.0, 0.0).interval for d in (0.001, 0.002, 0.05, 0.001, 0.06, 0.07)]
    assert [round(r.seconds, 3) for r in rests] == [0.2, 0.2, 0.2, 0.2, 0.5, 0.6]
    assert [r.rule for r in rests][-2:] == ["duration", "duration"]
