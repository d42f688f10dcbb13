"""Crawl ordering without Twisted: each prioritizer's arithmetic, the frontier's use of levels,
topical relevance, and the opt-out list."""

from __future__ import annotations

import os
import time

import pytest

from crawlproj.frontier.tiers import TwoTierFrontier
from crawlproj.ordering.importance import Backlinks, LargerSites, Opic, StaticScores
from crawlproj.ordering.prioritizer import Prioritizer, freshness_level, parse_spec
from crawlproj.ordering.topical import RelevanceModel, irrelevant_hops, link_score, terms
from crawlproj.politeness.opt_out import OptOutList, OptOutSource


def test_opic_moves_all_cash_along_links_and_conserves_it():
    opic = Opic()
    for seed in (1, 2):
        opic.admit(seed, "a", {}, new=True)  # seeds start with 1
    meta: dict = {}
    opic.take(1, "a", meta)  # page 1 is fetched with its cash
    assert meta["opic_cash"] == 1.0 and 1 not in opic.cash
    share = Opic.shares(meta["opic_cash"], 4)
    for target in (3, 4, 5, 2):
        opic.admit(target, "a", {"opic_share": share}, new=target != 2)
    assert opic.cash == {2: 1.25, 3: 0.25, 4: 0.25, 5: 0.25}
    assert sum(opic.cash.values()) == pytest.approx(2.0)  # nothing created, nothing lost
    opic.admit(1, "a", {"opic_share": 0.5}, new=False)  # a fetched URL gathers nothing any more
    assert 1 not in opic.cash
    retry = {"opic_cash": 0.25}
    opic.take(3, "a", retry)  # a retried request keeps the cash it already carries
    assert retry["opic_cash"] == 0.5 and Opic.shares(1.0, 0) == 0.0


def test_backlinks_and_larger_sites_count_online():
    links, sites = Backlinks(), LargerSites()
    links.admit(7, "x", {"depth": 0}, new=True)  # a seed: no in-link
    links.admit(8, "x", {"depth": 1}, new=True)
    links.admit(8, "x", {"depth": 2}, new=False)
    assert links.score(7, "", "x", {}) == 1.0 and links.score(8, "", "x", {}) == 3.0
    meta: dict = {}
    links.take(8, "x", meta)
    links.admit(8, "x", {"depth": 1}, new=False)  # fetched: no longer counted
    assert 8 not in links.inlinks and meta["backlinks"] == 2
    for key, host in ((1, "big"), (2, "big"), (3, "big"), (4, "small")):
        sites.admit(key, host, {}, new=True)
    assert sites.score(0, "", "big", {}) == 4.0 and sites.score(0, "", "small", {}) == 2.0
    sites.take(1, "big", {})
    sites.take(4, "small", {})
    assert sites.waiting == {"big": 2}
    links.admit(9, "x", {"depth": 1, "backlink_weight": 10}, new=True)  # from another host
    links.admit(9, "x", {"depth": 1}, new=False)  # from its own host
    assert links.score(9, "", "x", {}) == 12.0


def test_links_leaving_their_host_weigh_more_for_backlinks():
    """The ordering middleware marks a link to another host with BACKLINKS_OTHER_HOST_WEIGHT,
    a link within the host not at all; only the backlinks ordering asks for it."""
    import asyncio

    from scrapy import Request, Spider
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from crawlproj.spidermiddlewares.ordering import OrderingMiddleware

    def run(prioritizer: str) -> dict[str, dict]:
        crawler = get_crawler(Spider, {"PRIORITIZER": prioritizer, "BACKLINKS_OTHER_HOST_WEIGHT": 7,
                                       "TOPICAL_MODEL": "tfidf"})
        crawler.spider = Spider("t")
        crawler._apply_settings()
        middleware = OrderingMiddleware.from_crawler(crawler)
        response = HtmlResponse("http://a.test/p", body=b"<html></html>", request=Request("http://a.test/p"))

        async def outputs():
            for url in ("http://a.test/q", "http://b.test/", "https://a.test:8443/r"):
                yield Request(url)

        async def collect():
            return {o.url: o.meta for o in [o async for o in middleware.process_spider_output(response, outputs())]}

        return asyncio.run(collect())

    metas = run("backlinks")
    assert "backlink_weight" not in metas["http://a.test/q"]
    assert metas["http://b.test/"]["backlink_weight"] == 7
    assert "backlink_weight" not in metas["https://a.test:8443/r"]  # the same host name
    assert all("backlink_weight" not in m for m in run("opic").values())


def test_levels_from_mixed_scores():
    with pytest.raises(ValueError):
        parse_spec("opic,bogus")
    with pytest.raises(ValueError):
        parse_spec("bfs,opic")
    with pytest.raises(ValueError):
        parse_spec("opic:-1")
    assert parse_spec("opic:0.7, depth:0.3") == [("opic", 0.7), ("depth", 0.3)]
    bfs = Prioritizer(8, "bfs")
    assert [bfs.level(0, "", "", {"depth": d}) for d in (0, 3, 20)] == [0, 3, 7]
    assert bfs.level(0, "", "", {"depth": 5}, priority=1) == 0  # robots.txt, sitemaps
    # Known scores: the reference is their geometric mean (4 here), whatever the order of arrival.
    scores = Prioritizer(8, "scores", StaticScores({"u1": 1.0, "u4": 4.0, "u16": 16.0, "u0": 0.0}))
    levels = {u: scores.level(0, u, "h", {}) for u in ("u16", "u4", "u1", "u0")}
    assert scores.mid == 3 and levels == {"u1": 5, "u4": 3, "u16": 1, "u0": 7}  # a level a doubling; unknown: last
    # Online scores: the reference is learnt, starting at the first new URL's score.
    opic = Prioritizer(8, "opic")
    opic.admit(1, "s", "h", {}, new=True)
    assert opic.level(1, "s", "h", {}) == 3
    opic.admit(2, "t", "h", {"opic_share": 4.0}, new=True)
    assert opic.level(2, "t", "h", {}, learn=False) == 1
    mixed = Prioritizer(8, "opic:3,depth:1")
    mixed.admit(1, "u", "h", {}, new=True)
    assert mixed.level(1, "u", "h", {"depth": 0}) == 3  # both at their mean
    # Revisits: by how overdue, in the upper half, ahead of discovery.
    assert [freshness_level(x, 8) for x in (0.0, 0.125, 0.375, 0.875, 5.0)] == [3, 2, 1, 0, 0]
    assert bfs.level(0, "", "", {"revisit": True, "revisit_overdue": 1.0, "depth": 9}) == 0


def test_promotion_on_link_queues_a_copy_and_fetches_the_first():
    p = Prioritizer(8, "backlinks")
    for key in range(1, 5):  # four pages linked once each set the mean
        p.admit(key, f"u{key}", "h", {"depth": 1}, new=True)
        p.queued(key, p.level(key, f"u{key}", "h", {"depth": 1}))
    assert p.waiting[1][0] == 3
    assert p.promote(1, "u1", "h", {"depth": 1}) is None  # no new link yet: no better level
    for _ in range(6):
        p.admit(1, "u1", "h", {"depth": 2}, new=False)
    better = p.promote(1, "u1", "h", {"depth": 2})
    assert better is not None and better < 3 and p.waiting[1][:2] == [better, 2]
    assert p.dequeued(1) is True  # the first copy up is fetched
    p.take(1, "h", {})
    assert p.dequeued(1) is False and 1 not in p.waiting  # the other is skipped, and forgotten
    assert p.dequeued(99) is True  # unknown (say, queued before a restart): fetched
    state = p.state()
    fresh = Prioritizer(8, "backlinks")
    assert fresh.restore(state) == p.tracked() == 3
    assert Prioritizer(8, "opic").restore(state) == 0  # another ordering's state is not taken up


def test_frontier_hands_out_the_best_due_head_and_promotes_on_refill():
    f = TwoTierFrontier(levels=4, active_target=10)
    f.push("slow", "s3", 3)
    f.push("fast", "f1", 1)
    f.push("mid", "m2", 2)
    got = [f.pop(0.0) for _ in range(3)]
    assert [k for k, _ in got] == ["fast", "mid", "slow"]  # all due at once: best head first
    for key in ("slow", "fast", "mid"):
        f.release(key, 0.0)
    # Politeness first: a better key that is not due never overtakes.
    f.push("fast", "f0", 0)
    f.push("slow", "s2", 2)
    f.next_allowed["fast"] = 5.0
    assert f.pop(1.0) == ("slow", "s2") and f.pop(1.0) is None and f.pop(5.0) == ("fast", "f0")
    # Promote on refill: an entry whose level improved while it waited moves up when pulled.
    g = TwoTierFrontier(levels=4, active_target=1, bias=1000.0)
    calls = []
    g.relevel = lambda key, level, entry: calls.append((entry, level)) or (0 if entry == "b" else level)
    g.push("y", "b", 3)
    g.push("x", "a", 2)
    assert g._pull_front() == ("x", 2, "a")  # the better level first
    assert g._pull_front() == ("y", 0, "b") and calls == [("a", 2), ("b", 3), ("b", 0)]


def test_frontier_hold_level_waits_for_better_entries():
    f = TwoTierFrontier(levels=4, active_target=10)
    f.hold_level = 3
    f.push("on", "on1", 1)
    f.push("on", "on2", 1)
    f.push("off", "off1", 3)
    assert f.pop(0.0) == ("on", "on1")
    f.release("on", 10.0)  # the on-topic host must rest
    assert f.pop(1.0) is None  # off-topic waits although due: an on-topic entry is queued
    assert f.next_due() == 10.0  # the wake-up is the on-topic host's, not a busy loop
    assert f.pop(10.0) == ("on", "on2")
    f.release("on", 20.0)
    assert f.pop(11.0) == ("off", "off1")  # nothing on topic left: off-topic goes


def test_a_due_key_given_a_better_entry_is_filed_again_and_not_held_behind_worse_keys():
    """A due key whose queue gets a better head goes ahead of the keys due with its old head:
    left behind an off-topic key, the hold would keep both back for good."""
    f = TwoTierFrontier(levels=4, active_target=10)
    f.hold_level = 3
    f.push("x", "x-on", 1)
    f.push("a", "a-off", 3)
    f.push("b", "b-off", 3)
    assert f.pop(0.0) == ("x", "x-on")  # a and b are due, off topic, a first
    f.release("x", 100.0)
    f.push("b", "b-on", 1)  # b, already due, is linked on topic
    assert f.pop(0.1) == ("b", "b-on")
    f.release("b", 0.2)
    assert f.pop(0.2) == ("a", "a-off") and f.pop(0.2) == ("b", "b-off")
    f.release("a", 1.0)
    f.release("b", 1.0)
    assert f.pop(1.0) is None and f.next_due() is None and not f.has_pending()


def test_frontier_hold_waits_at_most_hold_wait_for_a_parked_host():
    """A better entry whose host is parked for long holds the rest back for hold_wait seconds
    in a row at most: the crawl goes on, and the wait starts afresh once a better entry went."""
    f = TwoTierFrontier(levels=4, active_target=10)
    f.hold_level, f.hold_wait = 3, 5.0
    f.push("on", "on1", 1)
    f.push("on", "on2", 1)
    for i in range(3):
        f.push("off", f"off{i}", 3)
    assert f.pop(0.0) == ("on", "on1")
    f.release("on", 1800.0)  # parked for half an hour
    assert f.pop(0.5) is None
    assert f.next_due() == 5.5  # woken when the wait runs out, not at the parked host's time
    assert f.pop(5.4) is None
    assert f.pop(5.5) == ("off", "off0") and f.hold_expired == 1
    f.release("off", 5.6)
    assert f.pop(5.6) == ("off", "off1")  # still waited out: no new 5 s for each entry
    f.release("off", 5.7)
    assert f.pop(1800.0) == ("on", "on2")  # a better entry went: the next wait starts afresh
    f.release("on", 1900.0)
    f.push("on", "on3", 1)
    assert f.pop(1800.1) is None and f.next_due() == 1805.1
    assert f.pop(1805.1) == ("off", "off2") and f.hold_expired == 2


def test_topical_relevance_and_tunnelling():
    assert list(terms("The Telescope, and 天文学")) == ["telescope", "天文", "文学"]
    model = RelevanceModel.from_query("astronomy telescope 天文")
    on = model.score("a new telescope for astronomy: the comet and the planet", learn=True)
    off = model.score("butter flour garlic simmer the sauce", learn=True)
    japanese = model.score("天文の観測", learn=True)
    assert on > 0.2 and off == 0.0 and japanese > 0.1
    examples = RelevanceModel.from_examples(["stock bond market", "market dividend stock"])
    assert examples.profile["stock"] == 2 and examples.score("stock market news") > examples.score("cooking")
    with pytest.raises(ValueError):
        RelevanceModel.from_query("the and of")
    assert link_score(0.8, 0.2, 0.5) == pytest.approx(0.5) and link_score(0.0, 0.6, 0.25) == pytest.approx(0.45)
    assert irrelevant_hops(3, True) == 0 and irrelevant_hops(0, False) == 1 and irrelevant_hops(1, False) == 2


def test_opt_out_list_matching_and_hot_reload(tmp_path):
    rules = OptOutList(["example.org", "*.Shop.test  # a complaint", "", "http://h.test/private/", "# note"])
    assert rules.rule_for("http://example.org/", "example.org") == "example.org"
    assert rules.rule_for("http://a.b.example.org/x", "a.b.example.org") == "example.org"
    assert rules.rule_for("http://notexample.org/", "notexample.org") is None
    assert rules.rule_for("http://cdn.shop.test/", "cdn.shop.test") == "shop.test"
    assert rules.rule_for("http://h.test/private/1", "h.test") == "http://h.test/private/"
    assert rules.rule_for("http://h.test/public/1", "h.test") is None and len(rules) == 3
    path = tmp_path / "opt-out.txt"
    source = OptOutSource(str(path))
    assert source.reload() is not None and len(source.current) == 0  # no file yet: empty, no error
    assert source.reload() is None  # unchanged
    path.write_text("h1.sandbox.test\n")
    changed = source.reload()
    assert changed is not None and changed.rule_for("http://h1.sandbox.test/", "h1.sandbox.test")
    assert source.reload() is None
    time.sleep(0.01)
    path.write_text("h2.sandbox.test\nh3.sandbox.test\n")
    os.utime(path, None)
    assert len(source.reload()) == 2


def test_the_opt_out_gate_refuses_counts_logs_each_host_once_and_keeps_the_last_good_list(tmp_path, caplog):
    from scrapy.statscollectors import MemoryStatsCollector
    from scrapy.utils.test import get_crawler

    from crawlproj.politeness.opt_out import OptOutGate

    path = tmp_path / "opt_out.txt"
    path.write_text("h1.sandbox.test\n")
    stats, now = MemoryStatsCollector(get_crawler()), [0.0]
    gate = OptOutGate(OptOutSource(str(path)), every=60.0, stats=stats, clock=lambda: now[0])
    gate.reload()
    with caplog.at_level("WARNING"):
        refused = [gate.refuses(f"http://h1.sandbox.test/{i}", "h1.sandbox.test", "t/refused") for i in range(3)]
    assert refused == [True] * 3 and not gate.refuses("http://h2.sandbox.test/", "h2.sandbox.test", "t/refused")
    assert stats.get_value("t/refused") == 3 and caplog.text.count("h1.sandbox.test is excluded") == 1
    path.write_text("h2.sandbox.test\n")
    os.utime(path, (1, 1))
    gate.reload_if_due()  # not due yet: the old list holds
    assert gate.refuses("http://h1.sandbox.test/", "h1.sandbox.test", "t/refused")
    now[0] = 61.0
    gate.reload_if_due()
    assert not gate.refuses("http://h1.sandbox.test/", "h1.sandbox.test", "t/refused")
    assert gate.refuses("http://h2.sandbox.test/", "h2.sandbox.test", "t/refused")
    path.unlink()
    path.mkdir()  # unreadable as a file: the last good list stays
    with caplog.at_level("ERROR"):
        gate.reload()
    assert "opt-out list unreadable" in caplog.text
    assert gate.refuses("http://h2.sandbox.test/", "h2.sandbox.test", "t/refused")


def test_opt_out_list_from_a_redis_set(redis_server, tmp_path):
    import redis

    client = redis.Redis.from_url(redis_server.url)
    source = OptOutSource("", client, "t:opt_out")
    assert len(source.reload()) == 0
    client.sadd("t:opt_out", "h5.sandbox.test", "http://h6.sandbox.test/p/")
    rules = source.reload()
    assert rules.rule_for("http://h5.sandbox.test/", "h5.sandbox.test") == "h5.sandbox.test"
    assert rules.rule_for("http://h6.sandbox.test/p/1.html", "h6.sandbox.test") and source.reload() is None


def test_embedding_relevance_loads_offline_and_generalises(monkeypatch):
    import socket

    from crawlproj.ordering.embedding import EmbeddingRelevance
    from crawlproj.ordering.topical import DEFAULT_THRESHOLDS

    def no_network(*args, **kwargs):
        raise AssertionError(f"the embedding model tried the network: {args!r}")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    model = EmbeddingRelevance(["astronomy telescope planet galaxy"])
    threshold = DEFAULT_THRESHOLDS["embedding"]
    on = model.score("a new telescope for astronomy: the comet and the planet orbit")
    related = model.score("nebula supernova observatory eclipse")  # no word in common with the topic
    off = [model.score(t) for t in ("butter flour garlic simmer the sauce", "stock market dividend bond")]
    assert on > related > threshold > max(off) and model.score("   ") == 0.0
    assert model.score("天文 望遠鏡 惑星 の 観測") > model.score("料理 台所 小麦粉")


def test_opic_cash_goes_only_to_the_links_the_tunnel_budget_lets_through():
    """With OPIC mixed with topical ordering, a page beyond its tunnel budget keeps only its
    on-topic links, and its whole cash is split among them (none leaves the system)."""
    import asyncio

    from scrapy import Request, Spider
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from crawlproj.items import PageItem
    from crawlproj.spidermiddlewares.ordering import OrderingMiddleware

    crawler = get_crawler(Spider, {"PRIORITIZER": "opic:0.5,topical:0.5", "TOPIC": "astronomy telescope",
                                   "TOPICAL_TUNNEL": 0, "TOPICAL_MODEL": "tfidf"})
    crawler.spider = Spider("t")
    crawler._apply_settings()
    middleware = OrderingMiddleware.from_crawler(crawler)
    body = b"<html><head><title>Recipes</title></head><body><p>butter flour garlic simmer</p></body></html>"
    response = HtmlResponse("http://a.test/", body=body, request=Request(
        "http://a.test/", meta={"opic_cash": 0.9, "irrelevant_hops": 3}))
    anchors = {"http://a.test/1": "telescope astronomy", "http://a.test/2": "butter", "http://a.test/3": "flour",
               "http://a.test/4": "astronomy comet"}
    page = PageItem(url=response.url, final_url=response.url, host="a.test", status=200, content_type="text/html",
                    charset="utf-8", fetched_at=0.0, fetch_duration=0.0, bytes=len(body), content_hash="",
                    title="Recipes", depth=3, links=[(u, a, False) for u, a in anchors.items()], body=body)

    async def outputs():
        for url in list(anchors) + ["http://a.test/1"]:  # a repeated link counts once
            yield Request(url)
        yield page

    async def collect():
        return [o async for o in middleware.process_spider_output(response, outputs())]

    out = asyncio.run(collect())
    followed = [o for o in out if isinstance(o, Request)]
    assert sorted(r.url for r in followed) == ["http://a.test/1", "http://a.test/4"]
    assert [r.meta["opic_share"] for r in followed] == [pytest.approx(0.45)] * 2
    assert sum(r.meta["opic_share"] for r in followed) == pytest.approx(0.9)  # conserved
    assert crawler.stats.get_value("topical/tunnel_dropped") == 2 and page in out


def test_importance_orderings_beat_breadth_first_on_the_benchs_web():
    """bench/ordering.py's web (200 hosts, preferential links), crawled in simulation with the
    frontier's own parts, robots.txt first on every host: backlinks and OPIC put more of the
    web's PageRank into the first 20% of pages than breadth-first, and the oracle (the true
    PageRank as scores) more still; backlinks at least 1.05x breadth-first and 0.93 of the
    oracle. Deterministic: the real bench varies by about 0.01 a run.
    (Before a request sent back unfetched kept its importance and its host, backlinks and OPIC
    fell to breadth-first's share or below: 0.441 and 0.429 against 0.446 here.)"""
    import argparse

    from sandbox.graph import SandboxWeb
    from sandbox.order_sim import followed_links, ordering_web_options, simulate_order
    from sandbox.server import add_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    web = SandboxWeb(config_from_args(parser.parse_args(ordering_web_options())), 8000)
    rank = web.pagerank()
    links = followed_links(web, set(rank))
    seeds = [web.origin(h) + "/" for h in list(web.hosts)[::20][:10]]
    budget = len(rank) // 5
    share = {spec: sum(rank[u] for u in simulate_order(links, seeds, spec, budget, latency=0.05,
                                                       scores=rank if spec == "scores" else None))
             for spec in ("bfs", "backlinks", "opic", "scores")}
    assert share["backlinks"] >= 1.05 * share["bfs"], share
    assert share["backlinks"] >= 0.93 * share["scores"], share
    assert share["opic"] >= 1.02 * share["bfs"], share
    assert share["scores"] > max(share["backlinks"], share["opic"]), share
    # A link from another host is a vote, a site's own navigation hardly one: counted alike,
    # backlinks fall to 0.89 of the oracle here (0.475 against 0.505 weighted).
    alike = sum(rank[u] for u in simulate_order(links, seeds, "backlinks", budget, latency=0.05, other_host_weight=1))
    assert share["backlinks"] > 1.03 * alike, (share, alike)
