"""The two-tier frontier's bookkeeping, without Twisted or a clock."""

import random

import pytest

from crawlproj.frontier.tiers import LeveledQueue, TwoTierFrontier
from collections import deque


def drain(frontier, now):
    out = []
    while (item := frontier.pop(now)) is not None:
        out.append(item)
    return out


def test_only_due_keys_are_handed_out_and_one_per_key():
    f = TwoTierFrontier()
    for i in range(3):
        f.push("a", f"a{i}")
    f.push("b", "b0")
    first = drain(f, now=0.0)
    assert sorted(first) == [("a", "a0"), ("b", "b0")]  # one entry per key, never two in flight
    assert f.pop(0.0) is None and set(f.in_flight) == {"a", "b"}
    f.release("a", next_allowed=5.0)
    assert f.pop(4.99) is None and f.next_due() == 5.0
    assert f.pop(5.0) == ("a", "a1")


def test_release_of_empty_key_deactivates_but_remembers_its_time():
    f = TwoTierFrontier()
    f.push("a", 1)
    assert f.pop(0) == ("a", 1)
    f.release("a", 10.0)
    assert "a" not in f.back and f.next_due() is None
    f.push("a", 2)  # the host comes back: it still waits for its time
    assert f.pop(9.0) is None and f.next_due() == 10.0
    assert f.pop(10.0) == ("a", 2)


def test_release_unknown_key_is_an_error():
    with pytest.raises(KeyError):
        TwoTierFrontier().release("x", 1.0)


def test_more_keys_are_activated_when_nothing_is_due():
    f = TwoTierFrontier(active_target=2, max_active=100)
    for host in "abcdef":
        f.push(host, host + "0")
        f.push(host, host + "1")
    got = drain(f, 0.0)
    # Nothing else is due once the first two keys are in flight, so every host gets activated.
    assert sorted(k for k, _ in got) == list("abcdef")
    f2 = TwoTierFrontier(active_target=2, max_active=2)
    for host in "abcdef":
        f2.push(host, host)
    assert len(drain(f2, 0.0)) == 2 and len(f2.back) == 2


def test_front_tier_prefers_high_priority():
    f = TwoTierFrontier(levels=4, active_target=1, max_active=1, bias=2.0, rng=random.Random(1))
    for i in range(400):
        f.push(f"h{i}", ("low", i), level=3)
        f.push(f"g{i}", ("high", i), level=0)
    firsts = []
    for _ in range(100):
        key, (kind, _) = f.pop(0.0)
        f.release(key, 0.0)
        firsts.append(kind)
    assert firsts.count("high") > 80  # weight 1 against 1/8
    assert "low" in firsts  # biased, not starved


def test_priority_holds_within_one_host():
    f = TwoTierFrontier(levels=3)
    for i, level in enumerate([2, 2, 0, 1, 0]):
        f.push("h", (level, i), level=level)
    order = []
    for t in range(5):
        key, entry = f.pop(float(t))
        order.append(entry)
        f.release(key, t + 1.0)
    assert order == [(0, 2), (0, 4), (1, 3), (2, 0), (2, 1)]


def test_sizes_are_tracked():
    f = TwoTierFrontier(active_target=1, max_active=1)
    for i in range(10):
        f.push(f"k{i % 3}", i)
    assert len(f) == 10 and f.front_len == 10
    f.pop(0.0)
    assert len(f) == 9 and f.back_len + f.front_len == 9


def test_leveled_queue():
    q = LeveledQueue(lambda name: deque(), "x")
    for item in [(1, "a"), (0, "b"), (1, "c")]:
        q.append(item)
    assert [q.popleft() for _ in range(3)] == ["b", "a", "c"] and len(q) == 0 and not q.levels


def test_defer_holds_a_key_whether_waiting_in_flight_or_inactive():
    f = TwoTierFrontier(levels=1, active_target=10)
    for key in "abc":
        f.push(key, f"{key}1")
        f.push(key, f"{key}2")
    f.push("d", "d1")
    got = {f.pop(0.0)[0] for _ in range(4)}
    assert got == {"a", "b", "c", "d"}
    f.defer("a", 50.0)  # in flight: applies on release, even if the release says sooner
    f.release("a", 1.0)
    f.release("b", 1.0)
    f.defer("b", 20.0)  # waiting in the heap: its entry is stale and gets moved
    f.release("d", 1.0)  # d's queue is empty: inactive
    f.defer("d", 30.0)
    f.push("d", "d2")
    assert f.pop(10.0) is None  # c is in flight; a, b, d are deferred
    assert f.next_due() is not None
    assert f.pop(20.0) == ("b", "b2")
    assert f.pop(29.0) is None
    assert f.pop(30.0) == ("d", "d2")
    assert f.pop(49.0) is None
    assert f.pop(50.0) == ("a", "a2")
    f.defer("x", 5.0)  # a key never seen: remembered for when it arrives
    f.push("x", "x1")
    assert f.pop(4.0) is None and f.pop(5.0) == ("x", "x1")


def test_group_cap_limits_keys_in_flight_per_group():
    f = TwoTierFrontier(levels=1, active_target=10)
    f.group_cap = 2
    for key in "abcd":
        f.set_group(key, "10.0.0.1")
        f.push(key, f"{key}1")
    f.push("e", "e1")  # another server
    first = drain(f, 0.0)
    assert len([k for k, _ in first if k != "e"]) == 2 and ("e", "e1") in first
    assert f.pop(100.0) is None  # the group is full whatever the time
    f.release(first[0][0], 0.0)
    assert f.pop(0.0) is not None  # a waiting key of the group goes
    assert f.pop(0.0) is None



def test_group_rate_spaces_the_keys_of_one_server_and_serves_them_in_turn():
    """PER_IP_RATE: 300 host names on one address, all due at once, go one per 1/rate seconds,
    in the order they became due; a key of another server is not held up by them."""
    f = TwoTierFrontier(levels=1, active_target=1000, group_rate=10.0)
    keys = [f"s{i}.farm.test" for i in range(300)]
    for key in keys:
        f.set_group(key, "10.0.0.1")
        f.push(key, key)
    f.push("ordinary.test", "page")
    first = drain(f, 0.0)
    assert sorted(k for k, _ in first) == ["ordinary.test", "s0.farm.test"]
    handed, order, now = [0.0], ["s0.farm.test"], 0.0
    while len(handed) < 30:
        due = f.next_due()
        assert due is not None and due >= now
        now = due
        popped = drain(f, now)
        assert len(popped) == 1
        handed.append(now)
        order.append(popped[0][0])
        f.release(popped[0][0], now)  # the fetch itself is instant: only the rate spaces them
    gaps = [b - a for a, b in zip(handed, handed[1:])]
    assert min(gaps) == pytest.approx(0.1) and order == keys[:30]
    # The keys waiting on their server stay out of the heap: one at a time is woken.
    assert len(f.heap) == 1 and sum(len(w) for w in f.group_waiting.values()) == 300 - 30 - 1


def test_group_rate_and_cap_together():
    f = TwoTierFrontier(levels=1, active_target=10, group_cap=1, group_rate=100.0)
    for key in "abc":
        f.set_group(key, "ip")
        f.push(key, key)
    (key, _), = drain(f, 0.0)
    assert f.pop(5.0) is None  # the cap: one in flight, however long it takes
    f.release(key, 5.0)
    assert [k for k, _ in drain(f, 5.0)] == ["b"]  # the rate's gap (0.01 s) had passed
    f.release("b", 5.0)
    assert drain(f, 5.001) == [] and f.next_due() == pytest.approx(5.01)
    assert [k for k, _ in drain(f, 5.01)] == ["c"]


def test_domain_cap_limits_keys_in_flight_per_registered_domain_across_addresses():
    """DOMAIN_CONCURRENCY: the hosts of one registered domain, on any addresses, have at most
    domain_cap requests in flight; another domain is not held up, and a release lets one more go."""
    f = TwoTierFrontier(levels=1, active_target=100, domain_cap=2, domain_of=lambda key: key.split(".", 1)[1])
    for i in range(6):
        f.set_group(f"s{i}.farm.test", f"10.0.0.{i}")  # each on its own address
        f.push(f"s{i}.farm.test", i)
    f.push("www.other.test", "x")
    first = sorted(k for k, _ in drain(f, 0.0))
    assert first == ["s0.farm.test", "s1.farm.test", "www.other.test"]
    assert drain(f, 1.0) == []
    f.release("s0.farm.test", 0.0)
    assert [k for k, _ in drain(f, 1.0)] == ["s2.farm.test"]
    f.release("s1.farm.test", 0.0)
    f.release("s2.farm.test", 0.0)
    assert sorted(k for k, _ in drain(f, 1.0)) == ["s3.farm.test", "s4.farm.test"]



def test_a_request_refused_before_connecting_gives_its_servers_rate_slot_back():
    """PER_IP_RATE is a limit on what reaches a server: a key whose request never did (robots.txt
    or address safety refused it) gives its slot back, and the next key of the server, woken
    for that slot, goes at once instead of a gap later. A slot another key took since stands."""
    f = TwoTierFrontier(levels=1, active_target=100, group_rate=10.0)
    for key in ("a", "b", "c"):
        f.set_group(key, "10.0.0.1")
        f.push(key, key)
    assert [k for k, _ in drain(f, 0.0)] == ["a"]
    assert f.next_due() == pytest.approx(0.1)  # b waits for the rate's next slot
    f.release("a", 0.0, refund=True)
    assert [k for k, _ in drain(f, 0.0)] == ["b"]  # the slot given back: b goes now
    assert f.next_due() == pytest.approx(0.1)
    f.release("b", 0.0)  # b reached its server: its slot stands
    assert drain(f, 0.05) == [] and [k for k, _ in drain(f, 0.1)] == ["c"]
    f.release("c", 0.1, refund=True)
    assert f.group_next[("ip", "10.0.0.1")] == pytest.approx(0.1)
    # A refund after another key took a newer slot changes nothing.
    for key in ("d", "e", "g"):
        f.set_group(key, "10.0.0.2")
        f.push(key, key)
    assert [k for k, _ in drain(f, 1.0)] == ["d"]
    assert [k for k, _ in drain(f, 1.1)] == ["e"]
    f.release("d", 1.1, refund=True)
    assert f.group_next[("ip", "10.0.0.2")] == pytest.approx(1.2) and drain(f, 1.15) == []
