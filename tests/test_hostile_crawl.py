"""A crawl of the hostile host family beside ordinary hosts (issue 20), checked at the server."""

import os
import socket
import threading
from collections import Counter

import pytest

from sandbox import harness, hostile

pytestmark = [pytest.mark.slow, pytest.mark.serial]

INTERVAL = 0.05
#: The crawl's peak RSS with a 10 MB page of distinct words, a 20,000-deep page, a gzip bomb and
#: an endless body among its pages (360-400 MB measured alone, 190 MB of it before the first
#: page; 527 MB in the full suite, where the bodies' downloads overlap more; a page once cost
#: 60-90 times its size to sign). The budget the hostile-structures test keeps too (issue 39).
MAX_RSS = 600 * 1024 * 1024


class Listener:
    """Counts the TCP connections accepted on one address (where nothing may connect); a
    subclass answers them (:meth:`handle`)."""

    def __init__(self, address: str, port: int) -> None:
        self.sock = socket.create_server((address, port))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.handle(conn)

    def handle(self, conn: socket.socket) -> None:
        conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.mark.xdist_group("chromium")  # it renders: timed beside no other browser (tests/test_render_crawl.py)
def test_hostile_pages_end_named_while_ordinary_hosts_are_crawled_fully_and_politely(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "4", "--pages", "15", "--cross-host", "0", "--host", "3:hostile=true,robots=allow")
    web = sandbox.web
    listener = Listener(hostile.REFUSED_ADDRESS, sandbox.port)
    try:
        conn, result = harness.crawl_sandbox(
            # Slow and huge answers stretch a host's interval (the duration rule, Waseda's
            # bytes-per-second target): kept short here, so the test takes seconds, not minutes.
            sandbox, tmp_path, MIN_INTERVAL=INTERVAL, DOWNLOAD_TIMEOUT=2, RETRY_TIMES=0,
            INTERVAL_DURATION_FACTOR=1, WASEDA_INTERVAL_ENABLED=False,
            HOST_RESOLVE=f"*.sandbox.test=127.0.0.1,{hostile.REFUSED_HOST}=127.0.0.2",
            ADDRESS_ALLOWLIST="127.0.0.1/32")
    finally:
        listener.close()
    stats = result.stats
    # The ordinary hosts: every page a correct crawler reaches is stored, at the politeness interval.
    ordinary = {web.host_name(h) for h in range(3)}
    stored = {url for (url,) in conn.execute("SELECT url FROM pages")}
    expected = {url for url in web.expected_pages() if url.split("/")[2].split(":")[0] in ordinary}
    assert len(expected) > 20 and expected <= stored
    report = sandbox.report(INTERVAL)
    # On failure, each short gap with the answer it followed (pytest shortens the report itself).
    short = {host: row["short_gaps"] for host, row in report["per_host"].items() if row["short_gaps"]}
    assert report["violations"] == 0 and report["max_concurrency"] == 1, f"short gaps: {short}"
    # Every hostile page ends with its named outcome, stored under the URL that was linked.
    origin = web.origin(3)
    errors = dict(conn.execute("SELECT url, kind FROM fetch_errors WHERE host = ?", (web.host_name(3),)))
    for path, outcome in hostile.OUTCOMES.items():
        url = origin + path
        if outcome == "page":
            assert url in stored, (path, errors.get(url))
        else:
            assert errors.get(url) == outcome, (path, errors.get(url))
    refused = conn.execute("SELECT kind, message FROM fetch_errors WHERE host = ?", (hostile.REFUSED_HOST,)).fetchall()
    assert [kind for kind, _ in refused] == ["address_refused"] and refused[0][1].startswith("loopback")
    # The browser rendered the script-built page and reached nothing: its WebSocket was closed
    # before connecting, everything else it tried failed to resolve or was refused by the route.
    rendered = conn.execute("SELECT rendered FROM pages WHERE url = ?", (origin + "/app.html",)).fetchone()
    assert rendered == (1,) and stats["render/rendered"] >= 1
    assert stats["render/blocked/websocket"] >= 1
    assert listener.accepted == 0
    # Budgets: the deep page was cut and counted, the big ones parsed off the reactor.
    assert stats["crawlproj/over_budget/depth"] == 1 and stats["budget/main_text/depth"] == 1
    assert stats["budget/parsed_in_thread"] >= 2
    # ... so no page held the reactor for long (0.24 s measured; the bound is about 1 s).
    assert stats["reactor/max_stall_seconds"] < 1.0 and "reactor/stalls" not in stats
    title = conn.execute("SELECT title FROM pages WHERE url = ?", (origin + "/charset.html",)).fetchone()[0]
    assert title == hostile.CHARSET_TITLE
    assert stats["charset/body_over_header"] >= 1
    rejected = {k.rsplit("/", 1)[1] for k in stats if k.startswith("crawlproj/url_rejected/")}
    assert {"scheme", "bad_host", "credentials", "malformed"} <= rejected
    assert stats["process/max_rss_bytes"] < MAX_RSS, stats["process/max_rss_bytes"]


class HeaderServer(Listener):
    """A raw HTTP server on loopback: ``/endless`` sends header lines without end, ``/many``
    600 header lines and then a body; ``/loop-a`` and ``/loop-b`` redirect to each other,
    ``/refresh-a`` and ``/refresh-b`` refresh to each other; ``/`` links to all of them."""

    PAGE = (b'<html><head><title>ok</title></head><body><a href="/endless">e</a> <a href="/many">m</a> '
            b'<a href="/loop-a">a</a> <a href="/refresh-a">r</a> <a href="/cal/(S(first))/d/1/">c</a> '
            b'<a href="/copies">copies</a></body></html>')
    #: /copies links to 80 URLs that all read the same (/c/<n>): a host whose new pages are copies.
    COPIES = b"<html><head><title>list</title></head><body>" + b"".join(
        b'<a href="/c/%d">%d</a> ' % (n, n) for n in range(80)) + b"</body></html>"
    COPY = b"<html><head><title>Item</title></head><body><p>The same item, whatever its number.</p></body></html>"
    copies_served = 0
    #: A calendar with a session segment: the same text on every page, a new random session in every link.
    CALENDAR = b'<html><head><title>Calendar</title></head><body><p>Events this day: none.</p><a href="%s">next day</a></body></html>'
    calendar_served = 0
    REFRESH = b'<html><head><meta http-equiv="refresh" content="0; url=/refresh-%s"></head><body>wait</body></html>'
    sent_header_bytes = 0

    def handle(self, conn: socket.socket) -> None:
        threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            path = conn.recv(65536).split(b" ", 2)[1]
            if path == b"/robots.txt":
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            elif path == b"/endless":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
                for n in range(2_000_000):  # about 100 MB unless the crawler hangs up
                    line = b"X-Filler-%d: %s\r\n" % (n, b"y" * 40)
                    conn.sendall(line)
                    self.sent_header_bytes += len(line)
            elif path in (b"/loop-a", b"/loop-b"):
                other = b"/loop-b" if path == b"/loop-a" else b"/loop-a"
                conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                             % other)
            elif path in (b"/refresh-a", b"/refresh-b"):
                body = self.REFRESH % (b"b" if path == b"/refresh-a" else b"a")
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n" % len(body) + body)
            elif path.startswith(b"/cal/"):
                self.calendar_served += 1
                day = int(path.rstrip(b"/").rsplit(b"/", 1)[1]) + 1
                body = self.CALENDAR % b"/cal/(S(%s))/d/%d/" % (os.urandom(6).hex().encode(), day)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n" % len(body) + body)
            elif path == b"/copies" or path.startswith(b"/c/"):
                body = self.COPIES if path == b"/copies" else self.COPY
                self.copies_served += path != b"/copies"
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n" % len(body) + body)
            elif path == b"/many":
                head = b"".join(b"X-H%d: v\r\n" % n for n in range(600))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + head +
                             b"Content-Length: 5\r\nConnection: close\r\n\r\nhello")
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n" % len(self.PAGE) + self.PAGE)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()


def test_response_headers_are_bounded_redirect_loops_named_and_copies_links_not_followed(tmp_path):
    """Headers past DOWNLOAD_MAX_HEADERS or DOWNLOAD_MAX_HEADER_BYTES end the fetch as too_large;
    a redirect or refresh loop is a redirect_loop error (the URL-seen filter dropped it silently);
    a calendar whose pages all read the same (a new session id in every link) stops at its
    second page, whose links are not followed; a host whose new pages are mostly copies of one
    another is rested after each copy, then capped: its queued copies are dropped."""
    import sqlite3

    server = HeaderServer("127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{server.port}/"
        result = harness.run_crawl("site", tmp_path, {"url": url}, {
            "STORE_URI": f"sqlite:///{tmp_path}/crawl.db", "MIN_INTERVAL": 0, "RENDER_MODE": "never",
            "RETRY_ENABLED": False, "DOWNLOAD_MAX_HEADER_BYTES": 64 * 1024, "DOWNLOAD_MAX_HEADERS": 500,
            "COPY_HOST_REST": 0.2, "KEEPALIVE_CLOSE_PAUSE": 0, "WASEDA_INTERVAL_ENABLED": False,
            "CLOSESPIDER_TIMEOUT": 60}, timeout=120)
    finally:
        server.close()
    assert result.returncode == 0, result.log[-3000:]
    db = sqlite3.connect(tmp_path / "crawl.db")
    assert db.execute("SELECT count(*) FROM pages WHERE url = ?", (url,)).fetchone() == (1,)
    errors = dict(db.execute("SELECT url, kind FROM fetch_errors").fetchall())
    assert errors == {url + "endless": "too_large", url + "many": "too_large", url + "loop-a": "redirect_loop",
                      url + "refresh-a": "redirect_loop"}, errors
    assert server.sent_header_bytes < 16 * 2**20  # hung up on, not read to the end
    assert server.calendar_served == 2 and result.stats["crawlproj/duplicate_page_links_skipped"] == 1
    stats = result.stats
    assert stats["crawlproj/copy_host/cap"] == 1 and stats["frontier/copy_host_rests"] >= 10
    assert 30 <= server.copies_served < 60 and stats["traps/copy_host_dropped"] >= 80 - server.copies_served
    assert result.stats["process/max_rss_bytes"] < 600 * 2**20


def test_hostile_structures_beside_ordinary_hosts_keep_every_budget_and_close_on_time(sandbox_factory, tmp_path):
    """A subdomain link farm (50,000 new hosts a page), one server behind 3,000 names and its IP
    literal, a calendar with session segments and a header flood, crawled beside three ordinary
    hosts with the real-web defaults for per-IP and per-domain budgets: the ordinary hosts are
    crawled fully and politely, no server gets more than PER_IP_RATE requests a second (robots.txt
    included, by the server's record), the farm stops at its domain's host budget, memory stays
    under 600 MB and the crawl closes at its timeout by itself."""
    from sandbox import structures

    kinds = {3: "farm", 4: "shared_ip", 5: "calendar", 6: "headers"}
    sandbox = sandbox_factory("--hosts", "7", "--pages", "15", "--cross-host", "0", "--no-robots-mix",
                              "--host", "4:structure_links=3000",
                              *(a for i, kind in kinds.items() for a in ("--host", f"{i}:structure={kind}")),
                              "--also-bind", f"{structures.SHARED_ADDRESS},{structures.FARM_ADDRESS}")
    rate, timeout = 10.0, 20
    conn, result = harness.crawl_sandbox(
        sandbox, tmp_path, MIN_INTERVAL=INTERVAL, INTERVAL_DURATION_FACTOR=1, WASEDA_INTERVAL_ENABLED=False,
        RETRY_TIMES=0, RENDER_MODE="never", CLOSESPIDER_TIMEOUT=timeout,
        # the real web's defaults, which the sandbox profile turns off (its hosts share one address)
        PER_IP_RATE=rate, PER_IP_CONCURRENCY=1, DOMAIN_MAX_HOSTS=1000, DOMAIN_ACTIVE_HOSTS=100, DOMAIN_CONCURRENCY=8,
        DOWNLOAD_MAX_HEADERS=500, HOST_RESOLVE=",".join(structures.host_resolve(kinds) + ["*.sandbox.test=127.0.0.1"]))
    stats, web = result.stats, sandbox.web
    assert stats["finish_reason"] == "closespider_timeout"
    assert stats["elapsed_time_seconds"] < timeout + 15  # closed at its timeout, whatever the frontier held
    ordinary = {web.host_name(h) for h in range(3)}
    stored = {url for (url,) in conn.execute("SELECT url FROM pages")}
    expected = {url for url in web.expected_pages() if url.split("/")[2].split(":")[0] in ordinary}
    assert len(expected) >= 30 and expected <= stored
    report = sandbox.report(INTERVAL)
    per_host = {h: row for h, row in report["per_host"].items()}
    assert all(row["gap_violations"] == 0 and row["max_concurrency"] == 1 for row in per_host.values()), report
    # Per IP, by the server's record: the farm's and the shared server's addresses, and 127.0.0.1.
    per_address = report["per_address"]
    assert set(per_address) == {"127.0.0.1", structures.SHARED_ADDRESS, structures.FARM_ADDRESS}, per_address
    for address, row in per_address.items():
        assert row["max_per_window"] <= rate + 1, (address, row)  # +1: a window's two ends
    # It was crawled, not starved: at the rate, 20 s allow 200; a machine loaded by a bench
    # beside the test gave 96 (the rate, judged above, is what this test holds the crawler to).
    assert per_address[structures.SHARED_ADDRESS]["requests"] >= 50
    # The farm: one registered domain, its host budget spent and the rest dropped unasked.
    farm_hosts = {h for h in per_host if h.endswith(structures.farm_domain(3))}
    assert 10 <= len(farm_hosts) <= 1000
    assert stats["crawlproj/over_budget/links"] >= 1
    # The IP literal shares its server's rate with the names (one address in the record above),
    # and the alias 'NAME.' was fetched as the name itself: no host in the record ends in a dot.
    assert any(h == structures.SHARED_ADDRESS for h in per_host)
    assert not [h for h in per_host if h.endswith(".") or h != h.lower()], sorted(per_host)[:20]
    shared = Counter((r.host, r.path) for r in sandbox.records() if r.address == structures.SHARED_ADDRESS)
    assert max(shared.values()) == 1, shared.most_common(3)  # no page of the server fetched twice
    # The calendar: two pages, the second a copy whose links are not followed.
    calendar = [h for h in per_host if h == web.host_name(5)]
    assert per_host[calendar[0]]["requests"] <= 4  # robots.txt, /, one day, and its copy's day at most
    errors = dict(conn.execute("SELECT url, kind FROM fetch_errors WHERE host = ?", (web.host_name(6),)).fetchall())
    assert errors == {web.origin(6) + "/endless": "too_large", web.origin(6) + "/many": "too_large"}, errors
    assert stats["process/max_rss_bytes"] < 600 * 2**20, stats["process/max_rss_bytes"]
    # No work of its own held the reactor half a second; on the wall clock, beside other tests
    # (a process waiting for a core is late too), under a second: 0.502 s was seen there once.
    assert stats.get("reactor/max_stall_own_seconds", 0) < 0.5, stats.get("reactor/max_stall_own_seconds")
    assert stats["reactor/max_stall_seconds"] < 1.0 and "reactor/stalls" not in stats, stats["reactor/max_stall_seconds"]


def test_a_link_farm_at_full_speed_keeps_the_reactor_free_and_sigterm_closes_the_crawl(sandbox_factory, tmp_path):
    """The issue's harshest case: a subdomain link farm with no per-IP limits at all (as on a farm
    spread over many addresses). The domain budget bounds it, no page holds the reactor over
    0.5 s, the ordinary host is crawled, and SIGTERM closes the crawl within seconds, stats written."""
    import signal
    import sqlite3
    from contextlib import closing

    from sandbox import structures

    sandbox = sandbox_factory("--hosts", "2", "--pages", "15", "--cross-host", "0", "--no-robots-mix",
                              "--host", "1:structure=farm", "--also-bind", structures.FARM_ADDRESS)
    ordinary_host, farm_domain = sandbox.web.host_name(0), structures.farm_domain(1)
    ordinary_pages = {u for u in sandbox.web.expected_pages() if "//h0." in u}

    # SIGTERM once the store holds the ordinary host whole and the server has served 20 farm hosts:
    # a wait on records, not on the clock (beside other tests, 12 s once left the ordinary host
    # short). The store, not the server: a page served just before the signal may not be stored.
    def stored_ordinary_pages() -> set[str]:
        if not (tmp_path / "crawl.db").exists():
            return set()
        try:
            with closing(sqlite3.connect(tmp_path / "crawl.db")) as db:
                return {u for (u,) in db.execute("SELECT url FROM pages WHERE host = ?", (ordinary_host,))}
        except sqlite3.OperationalError:  # its tables not created yet
            return set()

    def ordinary_host_whole_and_farm_under_way() -> bool:
        records = sandbox.records()
        return (len({r.host for r in records if r.host.endswith(farm_domain)}) >= 20
                and stored_ordinary_pages() >= ordinary_pages)

    result = harness.run_crawl("web", tmp_path, args={"seeds": str(sandbox.seeds_file)}, settings={
        "STORE_URI": f"sqlite:///{tmp_path}/crawl.db", "RENDER_MODE": "never",
        "MIN_INTERVAL": INTERVAL, "INTERVAL_DURATION_FACTOR": 1, "WASEDA_INTERVAL_ENABLED": False,
        "PER_IP_RATE": 0, "PER_IP_CONCURRENCY": 0, "DOMAIN_MAX_HOSTS": 1000, "DOMAIN_ACTIVE_HOSTS": 100, "DOMAIN_CONCURRENCY": 8,
        "HOST_RESOLVE": ",".join(structures.host_resolve({1: "farm"}) + ["*.sandbox.test=127.0.0.1"])},
        timeout=180, until=ordinary_host_whole_and_farm_under_way, stop_signal=signal.SIGTERM)
    took = result.stopped_after
    assert took < 15, (took, result.log[-2000:])
    stats = result.stats
    assert stats["finish_reason"] == "shutdown"
    assert stats.get("reactor/max_stall_own_seconds", 0) < 0.5, stats.get("reactor/max_stall_own_seconds")
    assert stats["reactor/max_stall_seconds"] < 1.0, stats["reactor/max_stall_seconds"]  # the wall clock: see above
    assert stats["process/max_rss_bytes"] < 600 * 2**20, stats["process/max_rss_bytes"]
    farm = {r.host for r in sandbox.records() if r.host.endswith(farm_domain)}
    assert 20 <= len(farm) <= 1000, len(farm)  # crawled, within its domain's host budget
    assert stored_ordinary_pages() == ordinary_pages
