"""Politeness policies in real crawls, judged from the sandbox server's record."""

import statistics

import pytest

from sandbox.harness import crawl_sandbox as crawl, run_crawl


def gaps_by_host(records):
    """Finish-to-next-arrival gaps of each host, in arrival order (robots.txt included)."""
    out = {}
    for host in {r.host for r in records}:
        mine = sorted((r for r in records if r.host == host), key=lambda r: r.arrival)
        out[host] = [b.arrival - a.finish for a, b in zip(mine, mine[1:])]
    return out


@pytest.mark.serial  # upper bounds on gaps: a fast host's rest < 0.15 s
def test_waseda_interval_rests_slow_and_erroring_hosts_longer(sandbox_factory, tmp_path):
    # 16 kB pages: h0 fast and clean, h1 on a 64 kB/s line, h2 dropping 40% of connections halfway.
    sandbox = sandbox_factory("--hosts", "3", "--pages", "10", "--no-robots-mix", "--cross-host", "0",
                              "--page-bytes", "16000", "--host", "1:bandwidth=64000", "--host", "2:drop_rate=0.4")
    _, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.05, INTERVAL_DURATION_FACTOR=0, RETRY_TIMES=6,
                      RETRY_BACKOFF_BASE=0.02, WASEDA_TARGET_SPEED=128000, WASEDA_SLOW_DELAY=0.4,
                      WASEDA_ERROR_DELAY=1.5, WASEDA_MIN_BYTES=8000)
    records = sandbox.records()
    gaps = gaps_by_host(records)
    fast, slow = statistics.median(gaps["h0.sandbox.test"]), statistics.median(gaps["h1.sandbox.test"])
    # Fast: about min_interval. Slow (about half the target speed): 0.05 + 0.4 x ~0.5.
    assert fast < 0.15, gaps
    assert 0.15 < slow < 0.45, gaps
    # Erroring: once a drop is in the window, every gap is >= 0.05 + 1.5 x 1/10, and more with more drops.
    h2 = sorted((r for r in records if r.host == "h2.sandbox.test"), key=lambda r: r.arrival)
    first_drop = next(i for i, r in enumerate(h2) if r.status == -1)
    after = [b.arrival - a.finish for a, b in zip(h2[first_drop:], h2[first_drop + 1:])]
    assert sum(r.status == -1 for r in h2) >= 3
    assert min(after) >= 0.2 - 0.005, after
    assert statistics.mean(after) > slow, (after, slow)
    report = sandbox.report(0.05)
    assert report["violations"] == 0 and report["max_concurrency"] == 1, report
    assert result.stats["frontier/interval_rule/waseda"] > 0
    assert result.stats["frontier/hosts_by_rule/waseda"] >= 1


def test_503_with_retry_after_backs_the_host_off(sandbox_factory, tmp_path):
    # Every first attempt at a page of h1 gets 503 with Retry-After: 1; the retry comes after it.
    sandbox = sandbox_factory("--hosts", "2", "--pages", "4", "--no-robots-mix", "--cross-host", "0",
                              "--host", "1:error_rate=0.5,retry_after=1")
    conn, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.05, RETRY_TIMES=8, RETRY_BACKOFF_BASE=0.01)
    assert result.stats["frontier/backoffs"] > 0
    records = sorted((r for r in sandbox.records() if r.host == "h1.sandbox.test"), key=lambda r: r.arrival)
    after_503 = [b.arrival - a.finish for a, b in zip(records, records[1:]) if a.status == 503]
    assert after_503 and min(after_503) >= 1.0, after_503
    fast = [b.arrival - a.finish for a, b in zip(records, records[1:]) if a.status == 200]
    assert not fast or min(fast) < 1.0  # the back-off ends: ordinary pages get the ordinary interval
    stored = {u for (u,) in conn.execute("SELECT url FROM pages WHERE status = 200")}
    assert stored == sandbox.web.expected_pages()  # retried until they answered
    assert conn.execute("SELECT count FROM host_errors WHERE host = 'h1.sandbox.test' AND kind = 'http_5xx'"
                        ).fetchone()[0] == sum(1 for r in records if r.status == 503)


def test_a_crawl_waiting_only_on_a_far_retry_after_says_so(sandbox_factory, tmp_path):
    # h1 answers every page with 503 and Retry-After: 3600; once h0 is done the crawl is open
    # only for that rest, and its console says so instead of nothing for an hour.
    sandbox = sandbox_factory("--hosts", "2", "--pages", "3", "--no-robots-mix", "--cross-host", "0",
                              "--host", "1:error_rate=1,retry_after=3600")
    _, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.05, RETRY_TIMES=3, CLOSESPIDER_TIMEOUT=10)
    said = [line for line in result.log.splitlines() if "waiting: nothing due for" in line]
    assert said and "backoff" in said[0] and result.stats["frontier/far_wait_seconds"] > 3000, said


def test_retries_come_back_through_the_frontier_after_a_back_off(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "2", "--pages", "6", "--no-robots-mix", "--cross-host", "0",
                              "--host", "1:drop_rate=0.5")
    conn, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.05, WASEDA_INTERVAL_ENABLED=False, RETRY_TIMES=8,
                         RETRY_BACKOFF_BASE=0.3)
    records = sorted((r for r in sandbox.records() if r.host == "h1.sandbox.test"), key=lambda r: r.arrival)
    after_drop = [b.arrival - a.finish for a, b in zip(records, records[1:]) if a.status == -1]
    assert after_drop and min(after_drop) >= 0.3 * 0.5, after_drop  # base x 2^0, jitter >= 0.5
    assert result.stats["frontier/retries_deferred"] == sum(1 for r in records if r.status == -1)
    # Every failed attempt is counted against its host in the store, retries included.
    assert conn.execute("SELECT count FROM host_errors WHERE host = 'h1.sandbox.test' AND kind = 'connection'"
                        ).fetchone()[0] == sum(1 for r in records if r.status == -1)
    stored = {u for (u,) in conn.execute("SELECT url FROM pages")}
    assert stored == sandbox.web.expected_pages()  # every page arrived in the end


def test_a_host_failing_persistently_is_parked_then_tried_again(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "2", "--pages", "3", "--no-robots-mix", "--cross-host", "0",
                              "--host", "1:drop_rate=1.0")
    _, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.05, WASEDA_INTERVAL_ENABLED=False, RETRY_TIMES=4,
                      RETRY_BACKOFF_BASE=0.01, HOST_PARK_AFTER=3, HOST_PARK_FOR=1.0)
    assert result.stats["frontier/hosts_parked"] >= 1
    records = sorted((r for r in sandbox.records() if r.host == "h1.sandbox.test"), key=lambda r: r.arrival)
    pages = [r for r in records if r.path != "/robots.txt"]
    gaps = [b.arrival - a.finish for a, b in zip(pages, pages[1:])]
    assert len(pages) == 5  # the root, tried 1 + RETRY_TIMES times: its links never arrive
    assert gaps[2] >= 1.0 and max(gaps[:2]) < 1.0, gaps  # parked after the third failure in a row


def test_trap_sites_end_with_bounded_pages_counted_per_defence(sandbox_factory, tmp_path):
    # h0 an ordinary host, h1 an infinite calendar CGI, h2 endlessly deepening paths,
    # h3 a session id in every link.
    sandbox = sandbox_factory("--hosts", "4", "--pages", "15", "--no-robots-mix", "--cross-host", "0",
                              "--host", "1:trap=calendar", "--host", "2:trap=deep", "--host", "3:trap=session")
    # The calendar's months all read the same: the duplicate-page trap would stop it at its first
    # copy (tests/test_hostile_crawl.py); off here, so the CGI hop limit is what ends it.
    conn, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.02, CGI_HOP_LIMIT=4, DEPTH_LIMIT=6,
                         MAX_PAGES_PER_HOST=40, DUPLICATE_TEXTS_KEPT=0)
    assert result.stats["finish_reason"] == "finished"
    pages = {}
    for r in sandbox.records():
        if r.path != "/robots.txt":
            pages.setdefault(r.host, set()).add(r.path)
    # Calendar: the root links to months 1 and -1 (0 CGI hops: the root is static); each
    # month page is one more hop, so months -5..5 are reached with CGI_HOP_LIMIT 4, no more.
    assert pages["h1.sandbox.test"] == {"/"} | {f"/cal.cgi?m={m}" for m in range(-5, 6)}
    assert result.stats["traps/cgi_hop_limit"] > 0
    # Deep paths: no segment three times, and no deeper than DEPTH_LIMIT.
    deep = pages["h2.sandbox.test"]
    assert all(p.count("loop/") < 3 for p in deep) and max(p.count("/") for p in deep) <= 6 + 1
    assert result.stats["traps/repeated_segments"] > 0
    # Session ids are stripped: each page of the session host is fetched once.
    session = [r.path for r in sandbox.records() if r.host == "h3.sandbox.test" and r.path != "/robots.txt"]
    assert len(session) == len(set(session)) == 15
    # The ordinary host is crawled in full.
    stored = {u for (u,) in conn.execute("SELECT url FROM pages WHERE host = 'h0.sandbox.test'")}
    assert stored == {u for u in sandbox.web.expected_pages() if "//h0." in u}


def test_per_site_cap(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "2", "--pages", "30", "--no-robots-mix", "--cross-host", "0")
    _, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.02, MAX_PAGES_PER_HOST=10)
    fetched = {}
    for r in sandbox.records():
        if r.path != "/robots.txt":
            fetched[r.host] = fetched.get(r.host, 0) + 1
    assert fetched == {"h0.sandbox.test": 10, "h1.sandbox.test": 10}
    assert result.stats["traps/max_pages_per_host"] > 0


@pytest.mark.serial  # every gap but the two suspensions < 0.5 s
def test_suspend_rests_a_host_after_a_run_of_pages(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "1", "--pages", "12", "--no-robots-mix", "--cross-host", "0")
    _, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.02, SUSPEND_AFTER_PAGES=4, SUSPEND_FOR=0.5)
    pages = sorted((r for r in sandbox.records() if r.path != "/robots.txt"), key=lambda r: r.arrival)
    gaps = [b.arrival - a.finish for a, b in zip(pages, pages[1:])]
    assert len(pages) == 12
    long = [i for i, g in enumerate(gaps) if g >= 0.5]
    assert long == [3, 7], gaps  # after pages 4 and 8: the suspension, and only there
    assert result.stats["frontier/suspensions"] == 3


def test_a_server_closing_keep_alive_pauses_its_host(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "2", "--pages", "6", "--no-robots-mix", "--cross-host", "0",
                              "--host", "1:keepalive=false")
    _, result = crawl(sandbox, tmp_path, MIN_INTERVAL=0.02, KEEPALIVE_CLOSE_PAUSE=0.4)
    per_host = sandbox.report(0.02)["per_host"]
    assert per_host["h1.sandbox.test"]["min_gap"] >= 0.4  # robots.txt included
    assert per_host["h0.sandbox.test"]["min_gap"] < 0.2
    # The open host reused one connection; the closing one needed a new one per request.
    assert per_host["h0.sandbox.test"]["connections"] == 1
    assert per_host["h1.sandbox.test"]["connections"] == per_host["h1.sandbox.test"]["requests"] == 7
    assert result.stats["frontier/keepalive_pauses"] == 7


def test_per_ip_cap_counts_every_host_name_of_one_address(sandbox_factory, tmp_path):
    from dataclasses import replace

    from sandbox.audit import politeness_report

    sandbox = sandbox_factory("--hosts", "4", "--pages", "6", "--no-robots-mix", "--cross-host", "0",
                              "--latency", "0.03")
    crawl(sandbox, tmp_path, MIN_INTERVAL=0.05, INTERVAL_DURATION_FACTOR=1, PER_IP_CONCURRENCY=2)
    as_one = [replace(r, host="127.0.0.1") for r in sandbox.records()]
    assert politeness_report(as_one)["max_concurrency"] == 2


def test_address_safety_refuses_internal_addresses_before_connecting(sandbox_factory, tmp_path):
    # Outside the sandbox profile, loopback is off limits: the sandbox must see nothing at all.
    sandbox = sandbox_factory("--hosts", "2", "--pages", "3", "--no-robots-mix")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(open(sandbox.seeds_file).read() + "http://169.254.169.254/latest/meta-data/\n"
                     "http://10.1.2.3/admin\n")
    result = run_crawl("web", tmp_path, args={"seeds": str(seeds)},
                       settings={"PROFILE": "local", "USER_AGENT": "crawlproj-tests (+https://crawlproj.test/)",
                                 "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path}/c.db"})
    # Nothing stored: said in one line naming the setting, exit 1.
    assert result.returncode == 1, result.log[-3000:]
    assert "crawlproj: no page was stored: address safety refused" in result.log and "ADDRESS_ALLOWLIST" in result.log
    assert sandbox.records() == []
    assert result.stats["address_safety/refused/loopback"] >= 2
    assert result.stats["address_safety/refused/link_local"] >= 1
    assert result.stats["address_safety/refused/private"] >= 1
    # An allow-list opens a range again.
    _, allowed = crawl(sandbox, tmp_path / "allowed", PROFILE="local", ADDRESS_ALLOWLIST="127.0.0.0/8",
                       USER_AGENT="crawlproj-tests (+https://crawlproj.test/)", PER_IP_CONCURRENCY=0,
                       PER_IP_RATE=0, DOMAIN_CONCURRENCY=0)
    assert len([r for r in sandbox.records() if r.path != "/robots.txt"]) == len(sandbox.web.expected_crawl())


def test_address_safety_rules():
    import ipaddress

    from crawlproj.politeness.address_safety import parse_allowlist, unsafe_kind

    def kind(a, allow=()):
        return unsafe_kind(ipaddress.ip_address(a), parse_allowlist(list(allow)))

    assert kind("127.0.0.1") == "loopback" and kind("::1") == "loopback"
    assert kind("169.254.169.254") == "link_local"
    assert kind("10.0.0.1") == "private" and kind("192.168.1.1") == "private" and kind("fd00::1") == "private"
    assert kind("224.0.0.1") == "multicast" and kind("0.0.0.0") == "unspecified"
    assert kind("100.64.0.1") == "not_global"
    assert kind("::ffff:10.0.0.1") == "private"  # IPv4-mapped IPv6 is judged as IPv4
    assert kind("93.184.216.34") is None and kind("2606:4700::1111") is None
    assert kind("127.0.0.1", ["127.0.0.0/8"]) is None and kind("10.0.0.1", ["127.0.0.0/8"]) == "private"
