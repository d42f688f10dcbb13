"""The reactor's held time: the idle-timing event loop, turns for long work, the lag tick."""

import asyncio
import os
import time

import pytest

from crawlproj.extensions.stalls import LOOP_IDLE, IdleTimingEventLoop, ReactorLag, TurnTaker, loop_busy_seconds

pytestmark = pytest.mark.slow


def run(coro):
    loop = IdleTimingEventLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


@pytest.mark.serial  # upper bounds on wall-clock time: the timed tier
def test_idle_timing_loop_counts_waiting_as_idle_and_work_as_busy():
    async def wait_then_work():
        before = loop_busy_seconds()
        await asyncio.sleep(0.2)  # waiting for I/O: idle
        waited = loop_busy_seconds() - before
        time.sleep(0.2)  # the loop's thread held: busy
        worked = loop_busy_seconds() - before - waited
        return waited, worked, LOOP_IDLE.active

    waited, worked, active = run(wait_then_work())
    assert active and not LOOP_IDLE.active  # read while the loop runs, not after it closed
    assert waited < 0.05
    assert 0.19 <= worked < 0.3


@pytest.mark.serial  # a timer run within 60 ms of its due time: the timed tier
def test_turns_let_a_due_timer_run_in_the_middle_of_long_work():
    ran_at: list[float] = []

    async def long_work(turns):
        asyncio.get_running_loop().call_later(0.02, lambda: ran_at.append(time.monotonic()))
        start = time.monotonic()
        while time.monotonic() - start < 0.3:  # 300 ms of work on the loop's thread
            time.sleep(0.001)
            if turns is not None:
                await turns.maybe()
        return start, time.monotonic()

    start, end = run(long_work(TurnTaker(0.01)))
    assert ran_at and ran_at[0] - start < 0.06  # due at 20 ms, ran within a turn of it
    ran_at.clear()
    start, end = run(long_work(None))
    assert all(t >= end for t in ran_at)  # without turns the timer waits for the whole job


class _Server:
    """A server in another process: told to go, it answers one byte ``delay`` seconds later
    (the answer's arrival, out of reach of this process's GIL)."""

    def __init__(self, delay: float) -> None:
        import subprocess
        import sys

        code = ("import sys, time\nwhile sys.stdin.read(1):\n"
                f"    time.sleep({delay}); sys.stdout.write('x'); sys.stdout.flush()\n")
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def go(self) -> None:
        self.proc.stdin.write(b"g")
        self.proc.stdin.flush()

    async def answer(self) -> tuple[float, float]:
        """Wait for the answer; when the loop's reader read it, and how long since the loop had
        last found nothing ready then (as the Waseda middleware reads them, at bytes_received)."""
        from crawlproj.extensions.stalls import quiet_at

        loop, fd = asyncio.get_running_loop(), self.proc.stdout.fileno()
        read = loop.create_future()

        def reader():
            if not read.done():
                os.read(fd, 1)
                now = time.monotonic()
                read.set_result((now, now - quiet_at()))

        loop.add_reader(fd, reader)
        try:
            return await read
        finally:
            loop.remove_reader(fd)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(5)


async def _ticking(ticks: ReactorLag):
    while True:  # the stall tick, as in a crawl (STALL_TICK)
        ticks.ticked(time.monotonic())
        await asyncio.sleep(0.01)


def test_a_thread_keeping_the_gil_is_held_time_though_the_loop_looks_idle(monkeypatch):
    """A page thread in one long C call (lexbor, resiliparse) keeps the GIL: the loop's
    thread, woken, waits for it, and the idle-timing loop counts that wait as idle. The
    stall tick runs late by it, so the held time a fetch is discounted by includes it."""
    import random
    import threading

    from crawlproj.extensions import stalls

    ticks = ReactorLag(0.01)
    monkeypatch.setattr(stalls, "_TICKS", ticks)
    values = [random.random() for _ in range(2_000_000)]
    took: list[tuple[float, float]] = []

    def sort_keeping_the_gil():
        time.sleep(0.03)  # starts while the loop waits in its selector, as a page thread's call does
        start = time.monotonic()
        sorted(values)  # list.sort on floats: one C call that never lets the GIL go
        took.append((start, time.monotonic()))

    async def scenario(server):
        ticker = asyncio.ensure_future(_ticking(ticks))
        await asyncio.sleep(0.05)
        before, started = stalls.held_mark(), time.monotonic()
        server.go()  # the answer comes at 60 ms, in the middle of the sort
        thread = threading.Thread(target=sort_keeping_the_gil)
        thread.start()
        read, waited = await server.answer()
        after, seconds = stalls.held_mark(), read - started
        thread.join()
        ticker.cancel()
        return before, after, seconds, read, waited

    server = _Server(0.06)
    missed = []
    try:
        for _ in range(3):  # the loop's thread may be mid-work when the sort starts (a tick's few µs in 10 ms)
            took.clear()
            before, after, seconds, read, waited = run(scenario(server))
            (sort_start, sort_end), = took
            assert sort_end - sort_start >= 0.15, "the sort is too quick on this machine to show a stall"
            if not sort_start < read - seconds + 0.06 < sort_end:
                continue  # the answer did not come in the middle of the sort (a loaded machine)
            kept_waiting = sort_end - (read - seconds + 0.06)  # the answer waited for the GIL this long
            busy, late = after[0] - before[0], after[1] - before[1]
            assert late >= 0.6 * kept_waiting  # the tick sees the stall...
            assert stalls.crawler_held(seconds, before, after, waited) >= 0.6 * kept_waiting - stalls.OWN_TIME_ALLOWANCE
            missed.append(busy < 0.5 * kept_waiting)
            if missed[-1]:
                break
    finally:
        server.close()
    assert any(missed)  # ...where the loop's busy clock alone misses most of it


def test_work_done_while_the_server_was_still_working_is_not_held_time(monkeypatch):
    """The loop busy 60 ms at the start of a 150 ms answer, then waiting: the answer was not
    there yet, so none of that work kept it waiting (both measures count it)."""
    from crawlproj.extensions import stalls

    ticks = ReactorLag(0.01)
    monkeypatch.setattr(stalls, "_TICKS", ticks)

    async def scenario(server):
        ticker = asyncio.ensure_future(_ticking(ticks))
        await asyncio.sleep(0.05)
        before, started = stalls.held_mark(), time.monotonic()
        server.go()
        time.sleep(0.06)  # the crawler's own work, on the loop's thread
        read, waited = await server.answer()
        ticker.cancel()
        return before, stalls.held_mark(), read - started, waited

    server = _Server(0.15)
    try:
        before, after, seconds, waited = run(scenario(server))
    finally:
        server.close()
    busy = after[0] - before[0]
    assert busy >= 0.06  # the work is seen...
    assert stalls.crawler_held(seconds, before, after) >= 0.05  # (by both measures alone)
    assert stalls.crawler_held(seconds, before, after, waited) < 0.03  # ...and known not to have held this answer


def test_held_time_is_at_most_the_time_the_answer_can_have_waited():
    from crawlproj.extensions.stalls import OWN_TIME_ALLOWANCE, LoopIdle, crawler_held

    assert crawler_held(0.2, (1.0, 0.0), (1.1, 0.05)) == pytest.approx(0.1 - OWN_TIME_ALLOWANCE)
    assert crawler_held(0.2, (1.0, 0.0), (1.1, 0.05), 0.02) == pytest.approx(0.02 - OWN_TIME_ALLOWANCE)
    assert crawler_held(0.2, (1.0, 0.0), (1.1, 0.05), 0.003) == 0.0
    assert crawler_held(0.05, (1.0, None), (1.5, None), 1.0) == 0.05  # never more than the fetch
    idle = LoopIdle()
    idle.found_nothing(10.0, 10.5, 0.01)  # the kernel checked at 10.01; the thread came back at 10.5
    assert idle.quiet_at == 10.01
    idle.found_nothing(11.0, 11.2, None)
    assert idle.quiet_at == 11.0


def test_reactor_lag_sums_how_late_each_tick_ran():
    lag = ReactorLag(0.05)
    assert lag.ticked(10.0) == 0.0
    assert lag.ticked(10.05) == 0.0
    assert abs(lag.ticked(10.40) - 0.30) < 1e-9  # due at 10.10
    assert abs(lag.total - 0.30) < 1e-9 and abs(lag.longest - 0.30) < 1e-9


def test_the_part_of_a_stall_the_process_own_cpu_accounts_for():
    lag = ReactorLag(0.05)
    lag.ticked(10.0, cpu=1.0)
    lag.ticked(10.40, cpu=1.02)  # 0.35 s late, 0.02 s of CPU: it waited for a core
    assert abs(lag.longest - 0.35) < 1e-9 and lag.longest_own == 0.0
    lag.ticked(10.70, cpu=1.27)  # 0.25 s late, 0.25 s of CPU: its own work, less the tick it was due after
    assert abs(lag.longest_own - 0.20) < 1e-9


def test_the_waseda_middleware_hands_each_rest_over_from_the_servers_share_of_the_time():
    from scrapy import Request
    from scrapy.http import Response
    from scrapy.utils.test import get_crawler

    import settings as defaults  # the project: its defaults and profiles
    from crawlproj.downloadermiddlewares.waseda_interval import WasedaIntervalMiddleware
    from crawlproj.signals import host_rest

    values = {k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}
    crawler = get_crawler(settings_dict={**values, "PROFILE": "sandbox", "MIN_INTERVAL": 0.2, "INTERVAL_DURATION_FACTOR": 10,
                                         "WASEDA_INTERVAL_ENABLED": False})
    crawler.stats.open_spider()
    middleware = WasedaIntervalMiddleware.from_crawler(crawler)
    verdicts = []
    crawler.signals.connect(lambda request, verdict: verdicts.append(verdict), signal=host_rest, weak=False)

    async def fetch(server_seconds, crawler_seconds):
        request = Request("http://h.test/", meta={"politeness_key": "h.test"})
        start = time.monotonic()
        middleware.process_request(request)
        await asyncio.sleep(server_seconds)  # waiting for the server
        time.sleep(crawler_seconds)  # the crawler's own thread busy
        middleware.process_response(request, Response("http://h.test/", body=b"x"))
        return time.monotonic() - start

    took = run(fetch(0.1, 0.0))  # a slow server: Mercator's rule rests the host 10x its time
    # (at most 10x the whole fetch: a loaded machine wakes the sleep late)
    assert verdicts[-1].interval.rule == "duration" and 0.9 <= verdicts[-1].interval.seconds <= 10 * took
    run(fetch(0.0, 0.1))  # a busy crawler is not a slow server (10 x OWN_TIME_ALLOWANCE < 0.2)
    assert verdicts[-1].interval.rule == "min_interval" and verdicts[-1].interval.seconds == 0.2


def test_a_hosts_rest_runs_from_the_answers_last_bytes_read_not_from_its_way_to_the_middleware():
    """The server was done when the answer's last bytes were read; the reactor's turns before the
    response reaches the middleware (a busy loop: 1 ms a fetch on average, 14 ms at the 99th
    percentile) are the crawler's, and a rest counted from them was a polite rate lost."""
    from scrapy import Request, signals
    from scrapy.http import Response
    from scrapy.utils.test import get_crawler

    import settings as defaults
    from crawlproj.downloadermiddlewares.waseda_interval import WasedaIntervalMiddleware
    from crawlproj.signals import host_rest

    values = {k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}
    crawler = get_crawler(settings_dict={**values, "PROFILE": "sandbox", "MIN_INTERVAL": 0.2})
    crawler.stats.open_spider()
    middleware = WasedaIntervalMiddleware.from_crawler(crawler)
    verdicts = []
    crawler.signals.connect(lambda request, verdict: verdicts.append(verdict), signal=host_rest, weak=False)
    request = Request("http://h.test/", meta={"politeness_key": "h.test"})
    middleware.process_request(request)
    crawler.signals.send_catch_log(signals.headers_received, request=request, headers={}, body_length=1, spider=None)
    crawler.signals.send_catch_log(signals.bytes_received, data=b"x", request=request, spider=None)
    read = time.monotonic()
    time.sleep(0.05)  # the response on its way through the reactor's turns
    middleware.process_response(request, Response("http://h.test/", body=b"x"))
    rest = verdicts[-1]
    assert read - 0.01 <= rest.release_at - rest.interval.seconds <= read
    # A failure's rest runs from when it is known: its partial bytes do not say the server is done.
    failing = Request("http://h.test/2", meta={"politeness_key": "h.test"})
    middleware.process_request(failing)
    crawler.signals.send_catch_log(signals.bytes_received, data=b"x", request=failing, spider=None)
    time.sleep(0.05)
    failed = time.monotonic()
    middleware.process_exception(failing, TimeoutError("cut off"))
    assert verdicts[-1].release_at - verdicts[-1].interval.seconds >= failed


def test_items_waiting_for_the_pipelines_hold_the_frontier_back():
    from types import SimpleNamespace

    from scrapy.utils.test import get_crawler

    from crawlproj import signals as crawl_signals
    from crawlproj.extensions.stalls import ItemBacklog

    crawler = get_crawler(settings_dict={"ITEM_BACKLOG": 3})
    ext = ItemBacklog.from_crawler(crawler)  # kept: signals hold weak references
    [busy] = [test for _, test in crawler.signals.send_catch_log(crawl_signals.fetch_backlog_test) if callable(test)]
    assert not busy()  # no engine yet
    slot = SimpleNamespace(itemproc_size=2)
    ext.scraper = SimpleNamespace(slot=slot)
    assert not busy()
    slot.itemproc_size = 3
    assert busy()


def test_a_stage_is_backlogged_by_its_pages_or_by_their_bytes():
    """A few pages of megabytes hold the frontier back as many small ones do: 32 small pages
    cost little, eight of 7 MB hundreds of MB once parsed."""
    import threading

    from crawlproj.content.offload import PageWorkers
    from crawlproj.extensions.stalls import WorkGate, backlogged

    assert not backlogged(31, 31 * 20_000, 32, 32 * 2**20)
    assert backlogged(32, 32 * 20_000, 32, 32 * 2**20)
    assert backlogged(5, 35 * 2**20, 32, 32 * 2**20)
    assert not backlogged(500, 2**40, 0, 0)  # 0: no bound

    async def gate_and_threads():
        gate, workers = WorkGate(1, 32, 10_000), PageWorkers(1, 30, 0, backlog=32, backlog_bytes=10_000)
        release = asyncio.Event()

        async def page(size):
            async with gate.turn(size):
                await release.wait()

        waiting = [asyncio.ensure_future(page(6_000)) for _ in range(2)]
        started = threading.Event()
        done = asyncio.ensure_future(workers.run(started.wait, 5, size=12_000))
        await asyncio.sleep(0.05)
        held = (gate.busy(), gate.pending_bytes, workers.busy(), workers.pending_bytes)
        release.set()
        started.set()
        await asyncio.gather(*waiting, done)
        workers.close()
        return held, (gate.busy(), gate.pending_bytes, workers.busy(), workers.pending_bytes)

    held, after = asyncio.run(gate_and_threads())
    assert held == (True, 12_000, True, 12_000) and after == (False, 0, False, 0)
