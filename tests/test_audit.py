"""The server-side politeness report catches impolite clients and clears polite ones."""

import asyncio
import http.client
import threading
import time

import pytest
from aiohttp import web

from sandbox.audit import Record, first_arrival, max_overlap, pages_in_window, politeness_report
from sandbox.graph import SandboxConfig
from sandbox.server import SandboxServer


def test_max_overlap():
    assert max_overlap([]) == 0
    assert max_overlap([(0, 1), (1, 2)]) == 1  # back to back is not concurrent
    assert max_overlap([(0, 2), (1, 3), (1.5, 1.6)]) == 3


def test_pages_in_a_window_count_from_the_first_request_on_the_servers_clock():
    recs = [Record("a", "/robots.txt", 10.0, 10.1), Record("a", "/", 10.2, 10.3), Record("a", "/gone", 10.5, 10.6, status=404),
            Record("b", "/", 11.0, 11.2), Record("b", "/late", 12.0, 12.1)]
    assert first_arrival(recs) == 10.0 and first_arrival([]) == 0.0
    assert pages_in_window(recs, 2.0) == 2  # robots.txt, the 404 and the page past the window are left out
    assert pages_in_window(recs, 2.5) == 3 and pages_in_window([], 1.0) == 0


def test_report_counts_gaps_on_both_bases():
    recs = [Record("a", "/", 0.0, 0.1), Record("a", "/", 0.3, 0.4), Record("a", "/", 0.45, 0.5), Record("b", "/", 0, 1)]
    idle = politeness_report(recs, interval=0.2, basis="idle")
    assert idle["per_host"]["a"]["min_gap"] == 0.05
    assert idle["interval_violations"] == 1 and idle["concurrency_violations"] == 0
    start = politeness_report(recs, interval=0.2, basis="start")
    assert start["per_host"]["a"]["min_start_gap"] == 0.15 and start["interval_violations"] == 1
    per_host = politeness_report(recs, interval={"a": 0.01, "b": 5}, basis="idle")
    assert per_host["violations"] == 0


def test_report_counts_concurrency_per_host():
    recs = [Record("a", "/1", 0, 1), Record("a", "/2", 0.5, 1.5), Record("b", "/", 0.5, 1.5)]
    report = politeness_report(recs)
    assert report["per_host"]["a"]["max_concurrency"] == 2
    assert report["per_host"]["b"]["max_concurrency"] == 1
    assert report["concurrency_violations"] == 1


def _get(port: int, host: str, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers={"Host": f"{host}:{port}"})
    status = conn.getresponse().status
    conn.close()
    return status


def test_impolite_client_is_caught_at_the_server(sandbox_factory):
    sandbox = sandbox_factory("--hosts", "3", "--pages", "8", "--latency", "0.05")
    port = sandbox.port
    # Impolite: four parallel requests to h0, then back-to-back requests to h1.
    threads = [threading.Thread(target=_get, args=(port, "h0.sandbox.test", f"/p/{i}.html")) for i in (1, 4, 5, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for path in ("/", "/p/1.html", "/p/4.html"):
        assert _get(port, "h1.sandbox.test", path) == 200
    # Polite: h2 with a pause longer than the interval between requests.
    for path in ("/", "/p/1.html", "/p/4.html"):
        assert _get(port, "h2.sandbox.test", path) == 200
        time.sleep(0.25)
    report = sandbox.report(interval=0.2)
    hosts = report["per_host"]
    assert hosts["h0.sandbox.test"]["max_concurrency"] >= 2
    assert hosts["h1.sandbox.test"]["gap_violations"] == 2 and hosts["h1.sandbox.test"]["max_concurrency"] == 1
    assert hosts["h2.sandbox.test"]["gap_violations"] == 0 and hosts["h2.sandbox.test"]["max_concurrency"] == 1
    assert hosts["h2.sandbox.test"]["min_gap"] >= 0.2
    assert report["concurrency_violations"] == 1 and report["violations"] >= 3
    assert report["requests"] == 10 == len(sandbox.records())


@pytest.mark.parametrize("hostile, method, path, status", [(False, "HEAD", "/", 200),
                                                         (True, "GET", "/redirect/0", 302)])
def test_the_server_stamps_an_empty_response_finished_no_later_than_the_client_holds_it(
        monkeypatch, hostile, method, path, status):
    """A StreamResponse sends its headers in prepare(); for a HEAD, a 304 or a redirect they are
    the whole response. Event-loop lag after them must not move the recorded finish past the
    moment the client holds the response, or a polite client's next request looks too close
    (the hostile crawl's redirect chain: 0.0486 s for 0.05 in a loaded make test)."""
    from sandbox.graph import HostSpec

    prepare = web.StreamResponse.prepare

    async def lagging_prepare(self, request):
        writer = await prepare(self, request)
        await asyncio.sleep(0.2)  # the loop busy elsewhere once the headers are out
        return writer

    monkeypatch.setattr(web.StreamResponse, "prepare", lagging_prepare)

    async def exchange() -> tuple[float, list[Record]]:
        config = SandboxConfig(hosts=1, pages=3, robots_mix=False)
        if hostile:
            config = config.with_overrides(**{"0": HostSpec(hostile=True)})
        server = SandboxServer(config, 0)
        runner = web.ServerRunner(web.Server(server.handle, access_log=None), handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"{method} {path} HTTP/1.1\r\nHost: {server.web.host_name(0)}\r\n\r\n".encode())
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            held = time.perf_counter()
            assert head.startswith(f"HTTP/1.1 {status}".encode())
            while not server.records:
                await asyncio.sleep(0.01)
            writer.close()
            return held, server.records
        finally:
            await runner.cleanup()

    held, records = asyncio.run(exchange())
    assert len(records) == 1 and records[0].path == path
    assert records[0].arrival <= records[0].finish <= held


def test_a_body_the_client_cuts_off_is_finished_when_the_client_stops_not_when_the_server_notices():
    """The hostile crawl's endless body: the client hangs up after what it wants. A server stamp
    taken when it notices (after the event loop's lag) came after the client's own end, and on a
    loaded machine made a polite client's next request look early (0.0487 s for a 0.05 s interval):
    the record's finish is the last write the kernel took, before the client's hang-up."""
    import socket
    import struct

    from sandbox.graph import HostSpec

    def client(port: int, name: str, loop: asyncio.AbstractEventLoop, out: list) -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(f"GET /endless.html HTTP/1.1\r\nHost: {name}\r\n\r\n".encode())
            got = 0
            while got < 300_000:
                got += len(sock.recv(65536))
            loop.call_soon_threadsafe(time.sleep, 0.3)  # the server's loop busy elsewhere...
            time.sleep(0.1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset
        out.append(time.perf_counter())  # ... when the client hangs up, as one at its size limit

    async def exchange() -> tuple[float, list[Record]]:
        config = SandboxConfig(hosts=1, pages=3, robots_mix=False).with_overrides(**{"0": HostSpec(hostile=True)})
        server = SandboxServer(config, 0)
        runner = web.ServerRunner(web.Server(server.handle, access_log=None), handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        hung_up: list[float] = []
        thread = threading.Thread(target=client, args=(runner.addresses[0][1], server.web.host_name(0),
                                                       asyncio.get_running_loop(), hung_up))
        thread.start()
        try:
            while not server.records:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(thread.join)
            return hung_up[0], server.records
        finally:
            await runner.cleanup()

    hung_up, records = asyncio.run(exchange())
    assert len(records) == 1 and records[0].path == "/endless.html" and records[0].bytes >= 300_000
    assert records[0].arrival < records[0].finish <= hung_up
