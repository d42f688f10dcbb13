"""Each key's politeness state after a fetch (crawlproj.politeness.hosts, pure: no reactor)."""

import resource
from types import SimpleNamespace

from scrapy.exceptions import DownloadConnectionRefusedError
from scrapy.http import Response

from crawlproj.politeness.hosts import HostPoliteness
from crawlproj.politeness.interval import IntervalPolicy


def ok(body=b"x" * 100, status=200, headers=None):
    return Response("http://h.test/", status=status, body=body, headers=headers or {})


def hosts(**kwargs):
    return HostPoliteness(IntervalPolicy(min_interval=1.0, duration_factor=10.0, waseda=False), **kwargs)


def test_the_rest_runs_from_the_end_of_the_download_by_the_largest_rule():
    h = hosts()
    v = h.fetched("a", ok(), duration=0.01, ended=100.0, now=100.2, wall_now=0)
    assert (v.interval.rule, v.release_at, v.holds, v.failure) == ("min_interval", 101.0, (), None)
    v = h.fetched("a", ok(), duration=0.5, ended=200.0, now=200.0, wall_now=0)
    assert v.interval.rule == "duration" and v.release_at == 205.0 and h.rules["a"] == "duration"
    assert h.describe("a")["interval"] == 5.0


def test_retry_after_sets_a_back_off_within_its_maximum():
    h = hosts(backoff_max=100.0)
    v = h.fetched("a", ok(status=503, headers={"Retry-After": "30"}), 0.01, 10.0, 10.0, wall_now=0)
    assert v.backoff and v.interval.rule == "backoff" and v.release_at == 40.0 and v.failure == "http_5xx"
    v = h.fetched("a", ok(status=429, headers={"Retry-After": "9999"}), 0.01, 10.0, 10.0, wall_now=0)
    assert v.release_at == 110.0


def test_a_key_is_parked_after_failures_in_a_row_and_a_success_resets_the_count():
    h = hosts(park_after=3, park_for=600.0)
    refused = DownloadConnectionRefusedError()
    assert h.fetched("a", refused, 0.0, 1.0, 1.0, 0).holds == ()
    assert h.fetched("a", ok(), 0.0, 2.0, 2.0, 0).holds == ()  # resets
    assert h.fetched("a", refused, 0.0, 3.0, 3.0, 0).holds == ()
    assert h.fetched("a", refused, 0.0, 4.0, 4.0, 0).holds == ()
    v = h.fetched("a", refused, 0.0, 5.0, 5.0, 0)
    assert v.failure == "connection" and [(x.rule, x.until) for x in v.holds] == [("parked", 605.0)]
    assert h.rules["a"] == "parked"


def test_continuous_crawling_is_suspended_and_a_long_rest_starts_a_new_session():
    h = hosts(suspend_after=(0.0, 3), suspend_for=300.0)
    assert [h.fetched("a", ok(), 0.0, t, t, 0).holds for t in (1.0, 2.0)] == [(), ()]
    v = h.fetched("a", ok(), 0.0, 3.0, 3.0, 0)
    assert [(x.rule, x.until, x.stat) for x in v.holds] == [("suspended", 303.0, "frontier/suspensions")]
    assert h.fetched("a", ok(), 0.0, 400.0, 400.0, 0).holds == ()  # counting again from one


def test_a_closed_keep_alive_pauses_the_key_when_the_pause_is_on():
    v = hosts(keepalive_pause=2.0).fetched("a", ok(headers={"Connection": "close"}), 0.0, 1.0, 1.5, 0)
    assert [(x.rule, x.until) for x in v.holds] == [("keepalive", 3.5)]
    assert hosts().fetched("a", ok(headers={"Connection": "close"}), 0.0, 1.0, 1.5, 0).holds == ()


def test_robots_txt_sets_the_crawl_delay_and_owes_its_own_rest():
    h = hosts()
    h.robots_fetched("a", crawl_delay=4.0, duration=0.01, now=50.0)
    assert h.unfetched("a", next_allowed=0.0) == 54.0  # a request robots.txt sent back waits for it
    assert h.unfetched("a", next_allowed=0.0) == 0.0  # owed once
    v = h.fetched("a", ok(), 0.01, 60.0, 60.0, 0)
    assert v.interval.rule == "crawl_delay" and v.release_at == 64.0
    assert h.rest_after("a", 0.0) == 4.0 and h.describe("a")["crawl_delay"] == 4.0


def test_keys_by_host_domain_or_address_and_entries_wait_for_the_address():
    from crawlproj.politeness.keys import PolitenessKeys, host_key

    assert host_key("a.b.example.co.jp", "domain") == "example.co.jp"
    assert host_key("www.example.org", "domain") == "example.org" and host_key("x.test") == "x.test"
    plain = PolitenessKeys("host")
    assert plain.admit("a.test", 2, {"u": 1}) == ([("a.test", None, 2, {"u": 1})], False)
    by_ip = PolitenessKeys("ip")
    assert by_ip.admit("a.test", 0, {"u": 1}) == ([], True)  # the first waits and asks for the address
    assert by_ip.admit("a.test", 1, {"u": 2}) == ([], False) and by_ip.waiting == 2
    assert by_ip.resolved("a.test", "192.0.2.7") == [("192.0.2.7", None, 0, {"u": 1}), ("192.0.2.7", None, 1, {"u": 2})]
    assert by_ip.waiting == 0 and by_ip.key_of("a.test") == "192.0.2.7"
    capped = PolitenessKeys("host", per_ip=1)
    capped.admit("b.test", 0, {"u": 3})
    assert capped.resolved("b.test", "192.0.2.8") == [("b.test", "192.0.2.8", 0, {"u": 3})]  # grouped by address


def test_a_retry_waits_a_jittered_exponential_back_off_up_to_its_maximum():
    h = hosts(retry_backoff=(2.0, 10.0))
    for retries, base in ((1, 2.0), (2, 4.0), (3, 8.0), (4, 10.0), (9, 10.0)):
        waits = [h.retry_hold(retries, now=50.0).until - 50.0 for _ in range(200)]
        assert 0.5 * base <= min(waits) and max(waits) <= 1.5 * base
        assert max(waits) - min(waits) > 0.2 * base  # jittered, not in step
    hold = h.retry_hold(1, now=0.0)
    assert (hold.rule, hold.stat) == ("retry", "frontier/retries_deferred") and "a" not in h.rules


def test_idle_hosts_state_is_spilled_and_read_back_whole_so_rests_and_robots_rules_hold(tmp_path):
    """HOST_STATE_MEMORY: two hosts in memory, a thousand seen. A host sent out (its Crawl-delay,
    its Waseda window, its failures) comes back with all of it: the same rests as a host never
    sent out, so no fetch after a reload comes sooner than the interval allows."""
    from crawlproj.frontier.tiers import TwoTierFrontier

    waseda = IntervalPolicy(min_interval=1.0, duration_factor=10.0, waseda=True, max_crawl_delay=60.0)
    spilled = HostPoliteness(waseda, park_after=3, park_for=600.0, memory_keys=2, spill_dir=str(tmp_path))
    kept = HostPoliteness(waseda, park_after=3, park_for=600.0)
    refused = DownloadConnectionRefusedError()
    for h in (spilled, kept):
        h.robots_fetched("a", crawl_delay=7.0, duration=0.1, now=0.0)
        h.fetched("a", ok(body=b"x" * 50), duration=0.3, ended=1.0, now=1.0, wall_now=0)
        h.fetched("a", refused, 0.0, 9.0, 9.0, 0)
        h.fetched("a", refused, 0.0, 17.0, 17.0, 0)  # two failures in a row of three
        for i in range(1000):  # a thousand other hosts pass through
            h.fetched(f"h{i}", ok(), 0.01, 20.0, 20.0, 0)
    assert "a" not in spilled.crawl_delay and "a" not in spilled._windows  # out of memory ...
    assert spilled.spill.spilled >= 999 and len(spilled._windows) <= 2
    assert spilled.rest_after("a", 0.01) == kept.rest_after("a", 0.01) == 7.0  # ... Crawl-delay back
    assert spilled.crawl_delay["a"] == 7.0
    one, two = (h.fetched("a", refused, 0.0, 30.0, 30.0, 0) for h in (spilled, kept))
    assert one == two and [x.rule for x in one.holds] == ["parked"]  # the failures in a row came back
    one, two = (h.fetched("a", ok(body=b"x" * 50), 0.3, 40.0, 40.0, 0) for h in (spilled, kept))
    assert one == two and one.release_at >= 40.0 + 7.0  # the same window, the same rest
    assert spilled.describe("a") == kept.describe("a")

    # The frontier forgets only times already past: a host sent out is never due sooner.
    f = TwoTierFrontier(levels=1, active_target=4, idle_keys=10)
    for i in range(100):
        f.push(f"k{i}", i)
    allowed, now, most = {}, 0.0, 0
    while f.has_pending():
        now += 0.1
        popped = f.pop(now)
        if popped is None:
            continue
        key, _ = popped
        assert now >= allowed.get(key, 0.0)  # never before its time, forgotten or not
        allowed[key] = now + 0.5
        f.release(key, now + 0.5)
        if len(allowed) % 7 == 0 and len(allowed) < 90:
            f.push(f"k{len(allowed) // 2}", "again")  # hosts seen before come back
        most = max(most, len(f.next_allowed))
    assert most <= 10 + 10 // 2 + 1 + 5  # the limit, its slack and the hosts still resting: not a hundred


def test_an_idle_connection_is_kept_for_keepalive_idle_seconds():
    """Twisted keeps an idle persistent connection 240 s: a broad crawl held one (7 KB and a file
    descriptor) for every host it had left in the last four minutes."""
    from scrapy.settings import Settings

    from crawlproj import defaults
    from crawlproj.politeness.keepalive import expose_connection_header

    from twisted.internet.task import Clock
    from twisted.web.client import HTTPConnectionPool

    for settings, kept in (({}, 60.0), ({"KEEPALIVE_IDLE_SECONDS": 15}, 15.0)):
        handler = SimpleNamespace(_pool=HTTPConnectionPool(Clock()))
        expose_connection_header(handler, Settings({**{k: getattr(defaults, k) for k in dir(defaults) if k.isupper()},
                                                    **settings}))
        assert handler._pool.cachedConnectionTimeout == kept
        assert handler._pool.max_idle == min(1000, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 4)


class _Idle:
    """A connection as the pool sees it: quiescent, and its transport's close recorded."""

    state = "QUIESCENT"

    def __init__(self, name: str, closed: list[str]) -> None:
        self.transport = SimpleNamespace(loseConnection=lambda: closed.append(name))


def test_idle_connections_are_capped_over_all_hosts_the_longest_idle_closed_first():
    """Twisted's pool kept one idle connection a host for its timeout however many hosts: a broad
    crawl of two workers exhausted the server's 20,000 file descriptors in 15 minutes. It also kept
    an empty entry for every host it had met."""
    from twisted.internet.task import Clock

    from crawlproj.politeness.keepalive import BoundedConnectionPool

    clock, closed = Clock(), []
    pool = BoundedConnectionPool(clock)
    pool.max_idle, pool.cachedConnectionTimeout, pool.retryAutomatically = 2, 60.0, False
    conns = {h: _Idle(h, closed) for h in "abcd"}
    for h in "abc":
        pool._putConnection(("http", h, 80), conns[h])
        clock.advance(1)
    assert closed == ["a"] and set(pool._connections) == {("http", "b", 80), ("http", "c", 80)}
    got = []
    pool.getConnection(("http", "b", 80), None).addCallback(got.append)  # b's connection reused
    assert got == [conns["b"]] and set(pool._connections) == {("http", "c", 80)}
    pool._putConnection(("http", "b", 80), conns["b"])  # b idle again: now the newest
    pool._putConnection(("http", "d", 80), conns["d"])
    assert closed == ["a", "c"]
    clock.advance(60)  # the rest time out, and no host is left behind
    assert sorted(closed) == ["a", "b", "c", "d"] and pool._connections == {} and pool._timeouts == {}


def test_idle_connections_take_at_most_a_quarter_of_the_file_descriptors(monkeypatch):
    from crawlproj.politeness import keepalive

    monkeypatch.setattr(keepalive.resource, "getrlimit", lambda _: (1024, 4096))
    assert keepalive.max_idle_connections(1000) == 256 and keepalive.max_idle_connections(0) == 256
    assert keepalive.max_idle_connections(100) == 100
    monkeypatch.setattr(keepalive.resource, "getrlimit", lambda _: (keepalive.resource.RLIM_INFINITY,) * 2)
    assert keepalive.max_idle_connections(1000) == 1000
