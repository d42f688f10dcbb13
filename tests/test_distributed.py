"""The Redis frontier, its partitions and leases, and the shared URL-seen filter, on a real redis-server."""

import time

import pytest
import redis
from scrapy import Request

from crawlproj.distributed.dupefilter import RedisBloomDupeFilter, bloom_shape
from crawlproj.distributed.frontier import RedisFrontier, partition_of
from crawlproj.distributed.keyspace import sharded


def entry(url):
    return {"url": url, "method": "GET", "body": b"", "headers": {}, "meta": {}}


def connect(server):
    """A client for the server or cluster at ``server.url``, found as a worker finds it."""
    from scrapy.settings import Settings

    from crawlproj.distributed.connection import from_settings

    return from_settings(Settings({"REDIS_URL": server.url}))


def frontier(server, worker, **kw):
    client = connect(server)
    f = RedisFrontier(client, "t", worker, partitions=kw.pop("partitions", 4), batch=kw.pop("batch", 8),
                      lease_seconds=kw.pop("lease", 60), worker_ttl=kw.pop("ttl", 5), **kw)
    f.heartbeat(partition_ttl=30)
    return f


def test_one_request_per_host_across_workers_and_the_interval_is_shared(any_redis):
    a = frontier(any_redis, "a", partitions=1)
    b = frontier(any_redis, "b", partitions=1)
    a.heartbeat(30)  # two workers: one partition, held by one of them
    owner, other = (a, b) if a.owned else (b, a)
    assert owner.owned == [0] and other.owned == []
    for i in range(3):
        other.push("h1", entry(f"http://h1/{i}"))  # any worker pushes to the host's partition
    other.flush()
    key, got = owner.pop(time.monotonic())
    assert key == "h1" and got["url"] == "http://h1/0"
    assert owner.pop(time.monotonic()) is None  # h1 is leased: never two in flight
    owner.release("h1", time.monotonic() + 0.3)
    assert owner.pop(time.monotonic()) is None  # not due before its interval
    time.sleep(0.35)
    assert owner.pop(time.monotonic())[1]["url"] == "http://h1/1"
    assert owner.counts(max_age=0) == (1, 2)  # one queued, two handed out and not stored
    assert owner.complete(["http://h1/0", "http://h1/1"]) == 2
    assert owner.counts(max_age=0) == (1, 0)


def test_shared_partitions_any_worker_takes_any_host_one_at_a_time(any_redis):
    a = frontier(any_redis, "a", partitions=4, shared=True, batch=1)
    b = frontier(any_redis, "b", partitions=4, shared=True, batch=1)
    for host in ("h1", "h2"):
        a.push(host, entry(f"http://{host}/0"))
    a.flush()
    now = time.monotonic()
    first, second = a.pop(now), b.pop(now)  # both workers take a host, whatever its partition
    assert {first[0], second[0]} == {"h1", "h2"}
    assert a.pop(now) is None and b.pop(now) is None  # each host leased: never two in flight
    # a sends its entry back (a retry, a render): b takes it and stores it; nothing stays pending.
    a.release(first[0], now)
    a.push(first[0], {**first[1], "dont_filter": True})
    a.flush()
    b.wake()  # else b asks Redis again only after its poll interval
    again = b.pop(time.monotonic())
    assert again is not None and again[1]["url"] == first[1]["url"]
    assert b.complete([again[1]["url"]]) == 1
    assert a.counts(max_age=0)[1] == 1  # only b's other host is still handed out
    assert a.complete([first[1]["url"]]) == 0  # a holds nothing of it any more


def test_a_host_handed_out_knows_when_the_last_worker_to_release_it_let_it_go(any_redis):
    a = frontier(any_redis, "a", partitions=1, shared=True, batch=1)
    b = frontier(any_redis, "b", partitions=1, shared=True, batch=1)
    for i in range(3):
        a.push("h", entry(f"http://h/{i}"))
    a.flush()
    key, _ = b.pop(time.monotonic())
    assert "h" not in b.next_allowed  # its first request: no due time to be late against
    b.release(key, time.monotonic() - 30)  # b's own release, long ago
    key, _ = a.pop(time.monotonic())
    released = time.monotonic() + 0.05
    a.release(key, released)  # a's, the last
    a.send()
    b.wake()
    while (popped := b.pop(time.monotonic())) is None:
        time.sleep(0.01)
    # b counts its lateness from a's release, not its own of 30 s before (wall-clock ms in Redis)
    assert abs(b.next_allowed["h"] - released) < 0.01


def test_partitions_rebalance_and_urls_route_by_host_hash(any_redis):
    a = frontier(any_redis, "a", partitions=8)
    assert a.owned == list(range(8))
    b = frontier(any_redis, "b", partitions=8)
    assert b.owned == []  # all leased to a
    a.heartbeat(30)  # a sees two live workers and gives half back
    b.heartbeat(30)
    assert len(a.owned) == 4 and len(b.owned) == 4 and not set(a.owned) & set(b.owned)
    hosts = [f"h{i}" for i in range(40)]
    for h in hosts:
        a.push(h, entry(f"http://{h}/"))
    a.flush()
    got_a, got_b = set(), set()
    for f, got in ((a, got_a), (b, got_b)):
        while (popped := f.pop(time.monotonic())) is not None:
            got.add(popped[0])
    assert got_a | got_b == set(hosts) and not got_a & got_b
    assert all(partition_of(h, 8) in a.owned for h in got_a)


def test_a_dead_workers_hosts_and_unstored_requests_return(any_redis):
    a = frontier(any_redis, "a", partitions=1, ttl=0.5)
    for i in range(3):
        a.push(f"h{i}", entry(f"http://h{i}/"))
    a.flush()
    handed = [a.pop(time.monotonic()) for _ in range(3)]
    a.complete([handed[0][1]["url"]])  # one stored; two fetched or in flight when "killed"
    # a stops heartbeating (kill -9); b joins after a's TTL
    time.sleep(0.6)
    b = frontier(any_redis, "b", partitions=1)
    b.heartbeat(30)
    assert b.owned == [0]
    back = set()
    while (popped := b.pop(time.monotonic())) is not None:
        back.add(popped[1]["url"])
    assert back == {handed[1][1]["url"], handed[2][1]["url"]}  # nothing lost, the stored one not repeated


def test_expired_host_lease_is_released(any_redis):
    a = frontier(any_redis, "a", partitions=1, lease=0.2)
    a.push("h", entry("http://h/1"))
    a.push("h", entry("http://h/2"))
    a.flush()
    assert a.pop(time.monotonic())[0] == "h"
    assert a.pop(time.monotonic()) is None
    time.sleep(0.25)
    assert a.reap() == (0, 1)
    assert a.pop(time.monotonic())[1]["url"] == "http://h/2"


def test_shared_bloom_filter_grows_per_partition(any_redis):
    """Each partition keeps a chain of filters that grows with its URLs: 5,000 URLs of one host
    against a first filter of 1,000 leave none unseen, and new URLs pass at about the rate set."""
    client = connect(any_redis)
    a = frontier(any_redis, "a", partitions=4)
    a.seen = one = RedisBloomDupeFilter(client, "t", capacity=4_000, error_rate=0.001, partitions=4)
    two = RedisBloomDupeFilter(connect(any_redis), "t", 4_000, 0.001, partitions=4)
    for i in range(5000):
        a.push("big.test", entry(f"http://big.test/{i}"))
    a.flush()
    assert 4985 <= a.counts(max_age=0)[0] <= 5000  # a false positive drops a URL (0.1%, 0.3% allowed)
    assert all(two.request_seen(Request(f"http://big.test/{i}")) for i in range(0, 5000, 7))  # seen by the other worker
    tag = one.locate("http://big.test/0", "http://big.test/0")[0]
    assert int(client.hget(f"{tag}:seen", "filters")) >= 3  # 1,000 + 2,000 + 4,000...
    false = sum(two.request_seen(Request(f"http://big.test/new/{i}")) for i in range(5000))
    assert false <= 10  # the chain stays under 0.1% (0.2% allowed for chance)
    bits, hashes = bloom_shape(100_000_000, 0.001)
    assert 1.7 < bits / 8 / 100_000_000 < 1.9 and hashes == 10  # ~180 MB per 100 M URLs in one filter


def test_urls_are_marked_seen_with_their_push(any_redis):
    a = frontier(any_redis, "a", partitions=1)
    seen = RedisBloomDupeFilter(connect(any_redis), "t", 10_000, 0.001, partitions=1)
    other = RedisBloomDupeFilter(connect(any_redis), "t", 10_000, 0.001, partitions=1)
    a.seen = seen
    a.push("h", entry("http://h/1"))
    assert not other.request_seen(Request("http://h/1"))  # buffered: not yet in the bitmap
    # ... but a second link to it is not new: the scheduler must not count (or admit) it twice
    assert seen.request_seen(Request("http://h/1")) and not seen.request_seen(Request("http://h/3"))
    a.push("h", entry("http://h/1"))  # found twice before the flush
    a.flush()
    assert not seen.pending and seen.request_seen(Request("http://h/1"))
    assert other.request_seen(Request("http://h/1"))
    assert a.counts(max_age=0) == (1, 0)  # queued once
    a._pushes.clear()  # a worker killed before its flush: nothing was marked, nothing is lost
    a.push("h", entry("http://h/2"))
    a._pushes.clear()
    assert not other.request_seen(Request("http://h/2"))


def test_a_page_s_links_are_tested_in_one_round_trip(any_redis):
    a = frontier(any_redis, "a", partitions=2)
    a.seen = RedisBloomDupeFilter(connect(any_redis), "t", 10_000, 0.001, partitions=2)
    a.push("h", entry("http://h/1"))
    a.flush()
    mine = RedisBloomDupeFilter(connect(any_redis), "t", 10_000, 0.001, partitions=2)
    assert mine.seen_many(["http://h/1", "http://h/2", "http://g/3"]) == {"http://h/1"}
    mine.r = None  # answered from what seen_many learnt: no Redis call
    assert mine.request_seen(Request("http://h/1")) and not mine.request_seen(Request("http://h/2"))
    assert mine.seen_many(["http://h/1"]) == {"http://h/1"}


def test_a_lazy_release_rides_with_the_next_pop(any_redis):
    a = frontier(any_redis, "a", partitions=1, lazy_release=True)
    b = frontier(any_redis, "b", partitions=1, shared=True)
    for i in range(2):
        a.push("h", entry(f"http://h/{i}"))
    key, _ = a.pop(time.monotonic())
    a.release(key, time.monotonic())
    b.wake()
    assert b.pop(time.monotonic()) is None  # not sent yet: the host is still leased
    time.sleep(0.01)  # due times are whole milliseconds
    assert a.pop(time.monotonic())[1]["url"] == "http://h/1"  # the release and the pop: one round trip
    a.release(key, time.monotonic())
    a.send()
    a.push("h", entry("http://h/2"))
    a.send()
    b.wake()
    assert b.pop(time.monotonic())[1]["url"] == "http://h/2"


@pytest.mark.slow  # a redis-server of its own, killed
def test_redis_crash_with_aof_loses_nothing_acknowledged():
    from sandbox.servers import RedisServer

    with RedisServer(appendonly=True) as server:
        a = frontier(server, "a", partitions=2)
        for i in range(50):
            a.push(f"h{i}", entry(f"http://h{i}/"))
        a.flush()  # acknowledged
        handed = [a.pop(time.monotonic()) for _ in range(5)]
        a.complete([h[1]["url"] for h in handed[:2]])
        before = a.counts(max_age=0)
        server.crash_and_restart()  # kill -9 of redis-server itself
        b = frontier(server, "b", partitions=2)
        assert b.counts(max_age=0) == before == (42, 6)  # a popped a batch of 8; 2 were stored
        time.sleep(5.1)  # a stopped heartbeating: its 6 unstored requests come back
        b.heartbeat(30)
        got = set()
        while (popped := b.pop(time.monotonic())) is not None:
            got.add(popped[1]["url"])
        assert len(got) == 48 and not {h[1]["url"] for h in handed[:2]} & got


def test_per_ip_cap_holds_across_workers(any_redis):
    a = frontier(any_redis, "a", partitions=2)
    b = frontier(any_redis, "b", partitions=2)
    a.heartbeat(30)
    b.heartbeat(30)
    for f in (a, b):
        f.group_cap = 1
    # four hosts on one server address, spread over both workers' partitions
    hosts = [f"site{i}.example" for i in range(4)]
    for h in hosts:
        a.set_group(h, "10.0.0.1")
        a.push(h, entry(f"http://{h}/"))
    a.flush()
    popped = [p for f in (a, b) for p in [f.pop(time.monotonic())] if p is not None]
    assert len(popped) == 1  # one request at a time to 10.0.0.1, whichever worker holds the host
    owner = a if popped[0][0] in a.in_flight else b
    owner.release(popped[0][0], time.monotonic())
    time.sleep(0.3)  # the held-back hosts are looked at again after the poll interval
    again = [p for f in (a, b) for p in [f.pop(time.monotonic())] if p is not None]
    assert len(again) == 1 and again[0][0] != popped[0][0]


def test_a_request_refused_before_connecting_gives_its_servers_shared_rate_slot_back(any_redis):
    """PER_IP_RATE limits what reaches a server: in a distributed crawl too, a key whose request
    never did (robots.txt, address safety) gives the shared slot back, and the host's next URL
    goes at once. A slot whose request reached the server stands (a crawl of mostly disallowed
    links spent 0.1 s of the rate on each refusal)."""
    a = frontier(any_redis, "a", partitions=2)
    a.heartbeat(30)
    a.group_gap_ms = 1000  # one request a second to the server
    a.set_group("site.example", "10.0.0.9")
    for i in range(3):
        a.push("site.example", entry(f"http://site.example/{i}"))
    a.flush()
    first = a.pop(time.monotonic())
    assert first is not None
    a.release("site.example", time.monotonic(), refund=True)  # robots.txt refused it
    second = a.pop(time.monotonic())
    assert second is not None and second[1]["url"] != first[1]["url"]
    a.release("site.example", time.monotonic())  # fetched: the server's slot stands
    assert a.pop(time.monotonic()) is None
    time.sleep(1.05)
    assert a.pop(time.monotonic()) is not None


def test_shared_near_duplicate_index_matches_the_local_one(any_redis):
    from crawlproj.content.near_duplicates import NearDuplicateIndex
    from crawlproj.distributed.near_duplicates import RedisNearDuplicateIndex
    from sandbox.graph import SandboxConfig, SandboxWeb

    web = SandboxWeb(SandboxConfig(hosts=10, pages=30, content_mix=True))
    texts = [(web.url(h, k), web.main_text(h, k)) for h in (2, 3, 7, 8) for k in range(web.size(h))]
    local = NearDuplicateIndex(threshold=0.8, num_perm=128, min_shingles=10)
    workers = [RedisNearDuplicateIndex(connect(any_redis), "t", 0.8, 128, 10) for _ in range(2)]
    matches = 0
    for i, (url, text) in enumerate(texts):
        want = local.add(url, local.fingerprint(text))
        shared = workers[i % 2]  # pages alternate between two workers
        got = shared.add(url, shared.fingerprint(text))
        # the same canonical page and kind; the Jaccard from 8 bits a value, within 0.02 of 32 bits'
        same = (got is None) == (want is None) and (got is None or (
            (got.canonical, got.kind) == (want.canonical, want.kind) and abs(got.jaccard - want.jaccard) < 0.02))
        assert same, (url, got, want)
        matches += got is not None
    assert matches > 20 and len(workers[0]) == len(local)
    # a canonical page fetched again with new text leaves its old bands and digest
    url, text = texts[0]
    workers[1].add(url, workers[1].fingerprint("completely different words " * 40))
    assert workers[0].add("http://other/", workers[0].fingerprint(text)) is None


def test_pages_sharing_a_band_both_stay_canonical_and_a_page_fetched_again_is_kept_once(any_redis):
    import numpy as np

    from crawlproj.content.near_duplicates import Fingerprint
    from crawlproj.distributed.near_duplicates import ID_BYTES, RedisNearDuplicateIndex
    from crawlproj.distributed.keyspace import page_id

    index = RedisNearDuplicateIndex(connect(any_redis), "band", 0.8, 128, 10)
    rng = np.random.default_rng(3)
    one = rng.integers(0, 2**32, 128, dtype=np.uint64).astype(np.uint32)
    two = rng.integers(0, 2**32, 128, dtype=np.uint64).astype(np.uint32)
    a, b = index.ranges[0]
    two[a:b] = one[a:b]  # the first band alike, the rest not: a candidate, not a near-duplicate
    assert index.add("http://h.test/1", Fingerprint("aa" * 16, one, 1000)) is None
    assert index.add("http://h.test/2", Fingerprint("bb" * 16, two, 1000)) is None
    assert index.add("http://h.test/1", Fingerprint("aa" * 16, one, 1000)) is None  # fetched again: itself
    assert len(index) == 2
    key, field = index._bands(one)[0]
    ids = index.r.hget(key, field)
    assert sorted(ids[i:i + ID_BYTES] for i in range(0, len(ids), ID_BYTES)) == sorted(
        [page_id("http://h.test/1"), page_id("http://h.test/2")])
    copy = index.add("http://h.test/3", Fingerprint("cc" * 16, two, 1000))  # its signature, other text
    assert copy is not None and copy.canonical == "http://h.test/2" and copy.kind == "near" and len(index) == 2


def test_revisit_queue_in_redis_is_partitioned_by_host(any_redis):
    import random

    from crawlproj.distributed.revisit_queue import RedisRevisitQueue
    from crawlproj.revisit.schedule import RevisitPolicy
    from crawlproj.revisit.state import Planner

    planner = Planner(RevisitPolicy(min_interval=60, first_interval=(100, 100)), "estimate", random.Random(1))
    one = RedisRevisitQueue(connect(any_redis), "t", partitions=4)
    for i in range(20):
        one.put(planner.first(f"http://h{i % 5}.test/{i}", f"h{i % 5}.test", float(i)))
    assert one.get("http://h1.test/1").next_due == 101.0  # buffered writes read back
    one.commit()
    two = RedisRevisitQueue(connect(any_redis), "t", partitions=4)  # another worker
    assert two.count() == 20 and two.committed_seq() == 1
    assert two.get("http://h1.test/1") == one.get("http://h1.test/1")
    assert len(two.host_states("h2.test")) == 4
    # a table far below its capacity: random buckets would find almost nothing, so all of it
    assert sorted(s.url for s in two.state_sample(100)) == sorted(f"http://h{i % 5}.test/{i}" for i in range(20))
    two.owned = [partition_of("h0.test", 4)]
    mine = {url for _, url in two.due(float("-inf"), 1e9, 100)}
    assert mine and all(partition_of(url.split("/")[2], 4) in two.owned for url in mine)
    two.delete("http://h0.test/0")
    two.commit()
    assert one.get("http://h0.test/0") is None and one.count() == 19
    assert one.changed_since(1, 1e9) and not one.changed_since(2, 1e9)


def revisit_pipeline_on(redis_server):
    """A crawler and its revisit pipeline over a Redis revisit queue (a budget, so replans fit)."""
    from scrapy.utils.test import get_crawler

    import settings as defaults
    from crawlproj.revisit.pipeline import RevisitPipeline

    crawler = get_crawler(settings_dict={
        **{k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}, "PROFILE": "sandbox",
        "RENDER_MODE": "never", "REDIS_URL": redis_server.url, "REVISIT_BUDGET": 1000.0,
        "REVISIT_QUEUE_CLASS": "crawlproj.distributed.revisit_queue.RedisRevisitQueue"})
    crawler.stats.open_spider()
    return crawler, RevisitPipeline.from_crawler(crawler)


def test_a_page_reads_its_shared_revisit_state_off_the_reactor_thread(redis_server, monkeypatch):
    """A shared queue's read of a page's state (a round trip a page) held each worker's reactor
    a tenth of its time in a two-worker crawl: it waits on a thread of its own."""
    import asyncio
    import threading

    from tests.test_revisit import _page

    crawler, pipeline = revisit_pipeline_on(redis_server)
    threads = []
    stored = pipeline.queue.stored
    monkeypatch.setattr(pipeline.queue, "stored", lambda url: threads.append(threading.current_thread()) or stored(url))
    url = "http://a.test/p"
    asyncio.run(pipeline.process_item(_page(url)))
    pipeline.commit()
    asyncio.run(pipeline.process_item(_page(url, text="a new article " * 20)))  # read back from Redis: a revisit
    assert len(threads) == 2 and threading.main_thread() not in threads
    stats = crawler.stats
    assert stats.get_value("revisit/first_visits") == 1 and stats.get_value("revisit/visits") == 1
    assert stats.get_value("revisit/changed") == 1
    asyncio.run(pipeline.process_item(_page(url)))  # its write not yet committed: no round trip
    assert len(threads) == 2 and stats.get_value("revisit/visits") == 2
    pipeline.close_spider()


def test_a_page_is_checked_against_the_shared_near_duplicate_index_off_the_reactor_thread(redis_server, monkeypatch):
    """The shared index's round trips (four a page) held each worker's reactor a fifth of its time
    in a two-worker crawl: they wait on a thread of their own, one page at a time."""
    import asyncio
    import threading

    from scrapy.utils.test import get_crawler

    import settings as defaults
    from crawlproj.content.near_duplicates_pipeline import NearDuplicatePipeline
    from tests.test_revisit import _page

    crawler = get_crawler(settings_dict={
        **{k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}, "PROFILE": "sandbox", "RENDER_MODE": "never",
        "REDIS_URL": redis_server.url, "PAGE_THREAD_MIN_BYTES": 10**9, "PAGE_PROCESS_MIN_BYTES": 10**9,
        "NEAR_DUPLICATES_INDEX_CLASS": "crawlproj.distributed.near_duplicates.RedisNearDuplicateIndex"})
    crawler.stats.open_spider()
    pipeline = NearDuplicatePipeline.from_crawler(crawler)
    threads = []
    add = pipeline.index.add
    monkeypatch.setattr(pipeline.index, "add", lambda *a: threads.append(threading.current_thread()) or add(*a))
    first = asyncio.run(pipeline.process_item(_page("http://a.test/1", text="a page of its own words " * 30)))
    copy = asyncio.run(pipeline.process_item(_page("http://b.test/1", text="a page of its own words " * 30)))
    pipeline.close_spider()
    assert first.duplicate_of is None and copy.duplicate_of == "http://a.test/1" and copy.duplicate_kind == "exact"
    assert len(threads) == 2 and threading.main_thread() not in threads


def test_a_replan_draws_its_redis_sample_off_the_reactor_thread(redis_server, tmp_path, monkeypatch, threaded_replans):
    """A shared queue's replan sample (many round trips, up to 100,000 states decoded) once held
    the reactor 3-4 s a minute in each worker of a broad crawl."""
    import threading

    crawler, pipeline = revisit_pipeline_on(redis_server)
    for i in range(50):
        state = pipeline.planner.first(f"http://h{i % 5}.test/{i}", f"h{i % 5}.test", float(i))
        pipeline.queue.put(state.__class__(**{**state.__dict__, "rate": 1e-4 * (i + 1)}))
    pipeline.queue.commit()
    threads = []
    sample = pipeline.queue.state_sample
    monkeypatch.setattr(pipeline.queue, "state_sample", lambda n: threads.append(threading.current_thread()) or sample(n))
    pipeline.replan()
    assert threads and threads[0] is not threading.main_thread()
    assert crawler.stats.get_value("revisit/mu") is not None and crawler.stats.get_value("revisit/tracked") == 50
    assert pipeline._drawing is None


def test_a_crawl_closing_during_a_replan_draw_closes_the_revisit_queue_after_it(redis_server, monkeypatch):
    """The queue (and the Redis client under it) stays open until a replan's threaded draw ends:
    a queue closed under the draw left the thread reading through a client being shut down."""
    from twisted.internet import defer, reactor

    from crawlproj.revisit import pipeline as revisit_pipeline

    crawler, pipeline = revisit_pipeline_on(redis_server)
    state = pipeline.planner.first("http://h.test/", "h.test", 0.0)
    pipeline.queue.put(state.__class__(**{**state.__dict__, "rate": 1e-4}))
    pending: list[defer.Deferred] = []
    monkeypatch.setattr(revisit_pipeline, "deferToThread", lambda f: pending.append(defer.Deferred()) or pending[-1])
    monkeypatch.setattr(reactor, "running", True, raising=False)
    closed = []
    monkeypatch.setattr(pipeline.queue, "close", lambda: closed.append(True))
    pipeline.replan()
    pipeline.replan()  # a draw in progress is not started again
    assert len(pending) == 1
    done = pipeline.close_spider()
    assert done is not None and not closed  # the draw still reads the queue
    pending[0].callback(pipeline._draw())
    assert closed == [True] and pipeline._drawing is None
    assert crawler.stats.get_value("revisit/mu") is None  # a closed crawl's fit is dropped
    assert pipeline.close_spider() is None and closed == [True, True]


def test_distributed_scheduler_keeps_no_local_journal_even_with_a_jobdir(redis_server, tmp_path):
    from scrapy.utils.test import get_crawler

    import settings as defaults  # the project: its defaults and profiles
    from crawlproj.distributed.scheduler import DistributedScheduler

    values = {k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}
    values.update(REDIS_URL=redis_server.url, REDIS_PREFIX="jobdir", JOBDIR=str(tmp_path / "job"), PROFILE="sandbox",
                  DUPEFILTER_CLASS="crawlproj.distributed.dupefilter.RedisBloomDupeFilter")
    scheduler = DistributedScheduler.from_crawler(get_crawler(settings_dict=values))
    assert scheduler.journal is None and not (tmp_path / "job" / "frontier").exists()


def test_opic_cash_is_shared_by_the_workers(any_redis):
    from crawlproj.distributed.ordering import RedisOpic

    client = connect(any_redis)
    a, b = RedisOpic(client, "t:opic", flush_every=60), RedisOpic(client, "t:opic", flush_every=60)
    a.admit(1, "h", {}, new=True)  # a seed, found by worker a
    assert a.score(1, "", "h", {}) == 1.0  # its level is known before the increment is sent
    a.flush()  # sent (every flush_every seconds, and before each of a's own takes)
    assert len(b) == 1  # counted in Redis (then at most every 10 s: the periodic stat)
    meta: dict = {}
    b.take(1, "h", meta)  # worker b fetches it and takes the cash a gave it
    assert meta["opic_cash"] == 1.0 and client.hget(sharded("t:opic", "1"), "1") is None
    assert len(b) == 1  # the count of 10 s ago
    b.recount()  # a crawl's closing figure counts again
    assert len(b) == 0
    a.admit(2, "h", {"opic_share": 0.25}, new=True)
    a.flush()
    b.admit(2, "h", {"opic_share": 0.5}, new=False)  # another link, found by b
    b.take(2, "h", meta := {})
    assert meta["opic_cash"] == 0.75 and len(a) == 0
    b.admit(2, "h", {"opic_share": 0.5}, new=False)  # fetched: no longer gathers cash
    b.flush()
    assert client.hget(sharded("t:opic", "2"), "2") is None


def test_backlinks_and_site_sizes_are_shared_by_the_workers(any_redis):
    """Backlinks and larger-sites state lives in Redis: what one worker counts, another reads
    (after a flush) and takes; a site's count goes when its last waiting URL does."""
    from crawlproj.distributed.ordering import RedisBacklinks, RedisLargerSites

    client = connect(any_redis)
    a, b = RedisBacklinks(client, "t:backlinks", flush_every=60), RedisBacklinks(client, "t:backlinks", flush_every=60)
    a.admit(7, "x", {"depth": 1}, new=True)
    assert a.score(7, "", "x", {}) == 2.0  # one in-link, not sent yet
    a.flush()
    b.admit(7, "x", {"depth": 2}, new=False)  # the same URL, linked from a page b fetched
    b.flush()
    assert b.score(7, "", "x", {}) == 3.0  # b saw the shared count when it sent its link
    a.take(7, "x", meta := {})
    assert meta["backlinks"] == 2 and client.hget(sharded("t:backlinks", "7"), "7") is None
    b.admit(7, "x", {"depth": 3}, new=False)  # fetched: counts no more
    b.flush()
    assert client.hlen(sharded("t:backlinks", "7")) == 0 and len(a) == 0

    sa, sb = RedisLargerSites(client, "t:sites", flush_every=60), RedisLargerSites(client, "t:sites", flush_every=60)
    for key in (1, 2, 3):
        sa.admit(key, "big.test", {}, new=True)
    sb.admit(4, "big.test", {}, new=True)
    sb.admit(5, "small.test", {}, new=True)
    sa.flush()
    sb.flush()
    assert sb.score(0, "", "big.test", {}) == 5.0 and sb.score(0, "", "small.test", {}) == 2.0
    sa.take(5, "small.test", {})
    sa.flush()
    assert client.hget(sharded("t:sites", "small.test"), "small.test") is None
    assert float(client.hget(sharded("t:sites", "big.test"), "big.test")) == 4.0
    sa.admit(6, "new.test", {}, new=True)
    sa.take(6, "new.test", {})  # found and taken before any flush: the site has nothing waiting
    sa.flush()
    assert client.hget(sharded("t:sites", "new.test"), "new.test") is None


def test_both_frontiers_declare_the_frontier_protocol(redis_server):
    from crawlproj.frontier.protocol import Frontier
    from crawlproj.frontier.tiers import TwoTierFrontier

    local, shared = TwoTierFrontier(), frontier(redis_server, "w-protocol")
    assert isinstance(local, Frontier) and isinstance(shared, Frontier)
    assert local.reprioritises and not shared.reprioritises  # Redis keeps a URL's level as pushed


def test_a_request_that_settles_with_no_page_to_store_is_pending_no_more(any_redis):
    from types import SimpleNamespace

    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    import settings as defaults  # the project: its defaults and profiles
    from crawlproj import signals as crawl_signals
    from crawlproj.distributed.scheduler import DistributedScheduler

    values = {k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}
    values.update(REDIS_URL=any_redis.url, REDIS_PREFIX="settled", PROFILE="sandbox",
                  DUPEFILTER_CLASS="crawlproj.distributed.dupefilter.RedisBloomDupeFilter")
    crawler = get_crawler(Spider, settings_dict=values)
    crawler.engine = SimpleNamespace(slot=None)  # nothing to wake: the test asks the scheduler itself
    scheduler = DistributedScheduler.from_crawler(crawler)
    scheduler.open(Spider("t"))
    try:
        # A render sample of a page already stored: the same URL, handed out again.
        sample = Request("http://h1.test/page", dont_filter=True, meta={"render_reason": "sample"})
        assert scheduler.enqueue_request(sample)
        deadline, handed = time.monotonic() + 10, None
        while handed is None and time.monotonic() < deadline:
            handed = scheduler.next_request()
        inflight = lambda: scheduler.frontier.counts(max_age=0)[1]  # noqa: E731
        assert handed is not None and inflight() == 1  # held pending until its page is stored...
        crawler.signals.send_catch_log(crawl_signals.request_settled, request=handed)
        assert inflight() == 0  # ...or until it settles with none
    finally:
        scheduler.close("finished")


def test_the_workers_dashboard_view_reads_the_workers_that_published_and_no_other_key(any_redis):
    """Each worker's summary is found through the index of workers that published, not a SCAN of
    the keyspace (seconds of a worker's reactor at every tick once a broad crawl held millions
    of keys); an expired summary leaves the index."""
    from crawlproj.dashboard import cluster

    client, prefix = connect(any_redis), cluster.key_prefix("t")
    now = time.time()
    for worker, ttl in (("w1", 30), ("w2", 1)):
        cluster.publish(client, prefix, {"worker": worker, "time": now, "pages": 5}, ttl=ttl)
    client.set(prefix + "stray", "{}")  # a key under the prefix that no worker published
    seen = cluster.read_workers(client, prefix, now + 2)
    assert sorted(w["worker"] for w in seen) == ["w1", "w2"] and all(w["age"] == 2.0 for w in seen)
    time.sleep(1.1)
    assert [w["worker"] for w in cluster.read_workers(client, prefix, now + 2)] == ["w1"]
    assert client.zrange(prefix.rstrip(":"), 0, -1) == [b"w1"]


def test_script_calls_go_in_one_round_trip_and_survive_a_flushed_script_cache(any_redis):
    """redis-py's script pipeline asks SCRIPT EXISTS before every execute (a round trip more on
    the reactor's thread); the calls go as EVALSHA once the scripts are loaded, and a server that
    lost them (a restart, SCRIPT FLUSH) has them loaded again."""
    from crawlproj.distributed.connection import is_cluster, run_scripts

    client = connect(any_redis)
    incr = client.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    keys = [f"t:counter:{i}" for i in range(6)]  # on a cluster, in several slots

    def exists_asked() -> int:
        nodes = client.get_primaries() if is_cluster(client) else [None]
        infos = [client.info("commandstats", target_nodes=n) if n else client.info("commandstats") for n in nodes]
        return sum(info.get("cmdstat_script|exists", {}).get("calls", 0) for info in infos)

    assert run_scripts(client, [(incr, [k], [2]) for k in keys]) == [2] * 6
    asked = exists_asked()
    assert run_scripts(client, [(incr, [k], [3]) for k in keys]) == [5] * 6
    assert exists_asked() == asked  # no question before the calls
    client.script_flush()
    assert run_scripts(client, [(incr, [k], [1]) for k in keys]) == [6] * 6  # in order, none lost or run twice


def test_a_script_loaded_again_during_a_cluster_failover_is_sent_again(redis_cluster):
    """A node that lost its scripts (a replica just promoted) may refuse the call that loads
    them again while the failover settles: that call waits and goes again, the others keep
    their answers."""
    from crawlproj.distributed import connection

    client = connect(redis_cluster)
    incr = client.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    keys = [f"t:counter:{i}" for i in range(6)]
    assert connection.run_scripts(client, [(incr, [k], [2]) for k in keys]) == [2] * 6

    class RefusedOnce:  # the script object, its first direct call refused as a dying master refuses
        sha, script, refused = incr.sha, incr.script, 0

        def __call__(self, keys, args):
            if not RefusedOnce.refused:
                RefusedOnce.refused += 1
                raise redis.ConnectionError("Connection refused")
            return incr(keys=keys, args=args)

    waits = connection.failover_waits
    client.script_flush()
    assert connection.run_scripts(client, [(RefusedOnce(), [k], [1]) for k in keys]) == [3] * 6
    assert RefusedOnce.refused == 1 and connection.failover_waits == waits + 1
