"""The frontier in real crawls, judged from the sandbox server's record."""

import pytest

from sandbox.harness import crawl_sandbox as crawl

pytestmark = pytest.mark.slow


@pytest.mark.serial  # wake-ups within 2.5 s of their due time
def test_zero_violations_and_prompt_wakeups(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "6", "--pages", "12", "--no-robots-mix")
    _, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.3)
    report = sandbox.report(0.3)
    assert report["violations"] == 0 and report["max_concurrency"] == 1
    # Woken at the due time, not at Scrapy's 5 s heartbeat: each host is revisited
    # soon after its interval (processing the response adds a little; a loaded 2-core
    # machine now and then adds a second, still far from the heartbeat's 5 s).
    records = sorted(sandbox.records(), key=lambda r: r.arrival)
    for host in {r.host for r in records}:
        mine = [r for r in records if r.host == host]
        gaps = [b.arrival - a.finish for a, b in zip(mine, mine[1:])]
        assert len(gaps) >= 8 and max(gaps) < 2.5 and sorted(gaps)[len(gaps) // 2] < 0.6, (host, gaps)
    assert result.stats["frontier/interval_rule/min_interval"] > 0


@pytest.mark.serial  # the measured fetch duration is net of the crawler's own stalls
def test_slow_host_rests_ten_times_its_fetch_duration(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "3", "--pages", "6", "--no-robots-mix", "--host", "1:latency=0.04")
    _, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.05)
    per_host = sandbox.report(0.05)["per_host"]
    assert per_host["h1.sandbox.test"]["min_gap"] >= 0.4  # 10 x (>= 0.04 s)
    assert per_host["h0.sandbox.test"]["min_gap"] < 0.3  # fast hosts are not held back
    assert sandbox.report(0.05)["violations"] == 0
    assert result.stats["frontier/interval_rule/duration"] > 0


@pytest.mark.serial  # a page parsed late can be overtaken by a deeper one
def test_breadth_first_order_within_a_host(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "1", "--pages", "60", "--no-robots-mix", "--out-links", "3")
    conn, _ = crawl(sandbox, tmp_path, MIN_INTERVAL=0.05)
    depth = {url: d for url, d in conn.execute("SELECT url, depth FROM pages")}
    origin = sandbox.web.origin(0)
    order = [depth[origin + r.path] for r in sorted(sandbox.records(), key=lambda r: r.arrival)
             if origin + r.path in depth]
    assert len(order) > 30 and max(order) >= 3
    assert order == sorted(order), order


def test_robots_fetch_counts_against_the_interval(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "12", "--pages", "4")
    crawl(sandbox, tmp_path, MIN_INTERVAL=0.2)
    report = sandbox.report(0.2)
    assert report["violations"] == 0
    # 5xx robots.txt: asked once, not retried on the spot, and nothing else is fetched.
    web = sandbox.web
    for h in web.hosts:
        if web.specs[h].robots == "error":
            assert report["per_host"][web.host_name(h)]["requests"] == 1


def test_ip_key_makes_hosts_on_one_server_share_its_politeness(sandbox_factory, tmp_path):
    # Every sandbox host resolves to 127.0.0.1: keyed by IP they are one politeness unit.
    from dataclasses import replace

    from sandbox.audit import politeness_report

    sandbox = sandbox_factory("--hosts", "4", "--pages", "8", "--no-robots-mix", "--latency", "0.03")
    conn, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.05, INTERVAL_DURATION_FACTOR=1, FRONTIER_KEY="ip")
    assert conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0] == len(sandbox.web.expected_pages())
    as_one = [replace(r, host="127.0.0.1") for r in sandbox.records()]
    report = politeness_report(as_one, 0.05)
    assert report["max_concurrency"] == 1 and report["violations"] == 0, report
    # Keyed by host (the default) the same web is fetched from several hosts at once.
    sandbox.reset()
    crawl(sandbox, tmp_path / "by-host", MIN_INTERVAL=0.05, INTERVAL_DURATION_FACTOR=1)
    assert politeness_report([replace(r, host="127.0.0.1") for r in sandbox.records()], 0.05)["max_concurrency"] > 1


@pytest.mark.serial  # requests to one address a second, against the wall clock
def test_requests_refused_before_connecting_spend_no_per_ip_rate(sandbox_factory, tmp_path):
    """Every sandbox host is one address: PER_IP_RATE spaces what reaches it. URLs robots.txt
    forbids (the `private` and `wildcard` variants) are refused before connecting: they give
    their rate slot back, and what does reach the server is still spaced by the rate."""
    sandbox = sandbox_factory("--hosts", "6", "--pages", "15")
    rate = 10.0
    _, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.05, PER_IP_RATE=rate, PER_IP_CONCURRENCY=0,
                      DOMAIN_CONCURRENCY=0)
    refused = result.stats.get("crawlproj/robots_forbidden", 0)
    refunded = result.stats.get("frontier/refused_before_connecting", 0)
    # (A host's robots.txt fetched for the visit of a URL it forbids: that fetch reached the server.)
    assert refused > 0 and refused - 6 <= refunded <= refused, (refused, refunded)
    # What reached the server kept to the rate, by its record (+1: a window's two ends).
    row = sandbox.report(0.05)["per_address"]["127.0.0.1"]
    assert row["max_per_window"] <= rate + 1, row
