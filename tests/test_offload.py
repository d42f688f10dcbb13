"""Per-page work off the reactor's thread: page threads, and the helper process for large pages."""

import asyncio
import os
import subprocess
import sys
import time

import numpy as np

import pytest

from crawlproj.content.budget import PageBudget
from crawlproj.content.near_duplicates import SigningShape
from crawlproj.content.offload import PageWorkers, StageTimeout
from crawlproj.content.near_duplicates_pipeline import sign_page

pytestmark = pytest.mark.slow

# A page of over 1 MB: articles of distinct words in a layout of navigation and footer.
ARTICLES = "".join(f"<article><h2>Part {i}</h2><p>" + " ".join(f"word{i}x{j}" for j in range(300)) + "</p></article>"
                   for i in range(400))
PAGE = (f"<html><head><title>Large</title></head><body><nav><a href=/a>a</a></nav><main>{ARTICLES}</main>"
        "<footer>footer</footer></body></html>").encode()


def _ended(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` is gone within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_large_page_is_signed_in_the_helper_process_as_it_would_be_in_a_thread():
    assert len(PAGE) > 1_000_000
    workers = PageWorkers(1, 120, 0, process_min_bytes=1_000_000)
    fingerprint_of = SigningShape(num_perm=128).fingerprint_of  # what the index hands the pipeline

    async def both():
        in_thread = await workers.run(sign_page, PAGE, "utf-8", PageBudget(), fingerprint_of, size=100)
        in_process = await workers.run(sign_page, PAGE, "utf-8", PageBudget(), fingerprint_of, size=len(PAGE))
        where = await workers.run(os.getpid, size=len(PAGE)), await workers.run(os.getpid, size=100)
        return in_thread, in_process, where

    try:
        (limited_t, print_t), (limited_p, print_p), (helper, thread) = asyncio.run(both())
    finally:
        workers.close()
    assert helper != os.getpid() and thread == os.getpid()  # a large page's work went to another process
    assert limited_t is None and limited_p is None
    assert print_p.digest == print_t.digest and print_p.length == print_t.length > 1_000_000 // 2
    assert np.array_equal(print_p.values, print_t.values)


def test_a_helper_process_past_the_timeout_is_replaced_and_the_next_large_page_does_not_wait():
    workers = PageWorkers(1, 2, 0, process_min_bytes=1)

    async def stuck_then_next():
        first = await workers.run(os.getpid, size=10)
        queued = asyncio.ensure_future(workers.run(os.getpid, size=10))  # behind the stuck one
        try:
            await workers.run(time.sleep, 600, size=10)
        except StageTimeout:
            pass
        else:
            raise AssertionError("no timeout")
        behind = await queued
        started = time.monotonic()
        after = await workers.run(os.getpid, size=10)
        return first, behind, after, time.monotonic() - started

    try:
        first, behind, after, waited = asyncio.run(stuck_then_next())
    finally:
        workers.close()
    # the page queued behind the killed work is sent again, to the new helper, not lost with it
    assert behind not in (first, os.getpid())
    assert after == behind and waited < 2  # the new helper, not the stuck one
    assert _ended(first, 5), "the stuck helper process lives on"  # the kill may take a moment to be reaped


def test_the_helper_process_ends_with_the_crawl_even_after_a_kill_9():
    script = (
        "import asyncio, os, time\n"
        "from crawlproj.content.offload import PageWorkers\n"
        "workers = PageWorkers(1, 60, 0, process_min_bytes=1)\n"
        "print(asyncio.run(workers.run(os.getpid, size=10)), flush=True)\n"
        "time.sleep(60)\n")
    crawl = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        helper = int(crawl.stdout.readline())
        os.kill(helper, 0)  # alive while the crawl is
        crawl.kill()
        crawl.wait()
        if not _ended(helper, 10):
            os.kill(helper, 9)
            raise AssertionError("the helper process outlived the crawl")
    finally:
        crawl.kill()


def test_closing_joins_the_helper_processes_manager_threads():
    """A manager thread still winding down when Python exits made concurrent.futures' exit hook
    write to its closed wake-up pipe: a traceback (EBADF) after a crawl's last line, seen in
    two crawls of a make test run."""
    workers = PageWorkers(1, 5, 0, process_min_bytes=1)

    async def use_both():
        await workers.run(os.getpid, size=10)
        await workers.run_document(os.getpid, timeout=5, memory=2**30)

    asyncio.run(use_both())
    managers = [pool._executor_manager_thread for pool in (workers.process, workers.documents)]
    helpers = [p.pid for pool in (workers.process, workers.documents) for p in pool._processes.values()]
    workers.close()
    assert not any(thread.is_alive() for thread in managers)
    assert all(_ended(pid, 5) for pid in helpers)


def test_a_large_page_is_parsed_in_the_helper_process_as_it_would_be_in_a_thread():
    """The page-parse middleware sends a page of PAGE_PROCESS_MIN_BYTES or more to the helper
    process (so that small pages do not wait behind it in the page thread): the same page, its
    links canonical or refused there as in the thread."""
    from crawlproj.content.extract import iter_links, page_links
    from crawlproj.downloadermiddlewares.page_parse import _parse
    from crawlproj.urls import canonicalizer_for

    from crawlproj.content.extraction import extract_content

    body = PAGE.replace(b"<footer>", b'<a href="../b#s1">b</a><a href="http://-bad-.test/">x</a><footer>')
    url, canonical = "http://a.test/docs/index.html", canonicalizer_for()
    workers = PageWorkers(1, 120, 0, process_min_bytes=1_000_000)

    async def both():
        return (await workers.run(_parse, body, "utf-8", PageBudget(), 3, url, canonical, (True, 0, False), size=100),
                await workers.run(_parse, body, "utf-8", PageBudget(), 3, url, canonical, (True, 0, False), size=len(PAGE)))

    try:
        in_thread, in_process = asyncio.run(both())
    finally:
        workers.close()
    assert in_process.links == in_thread.links and len(in_thread.links) >= 3
    assert in_process.title == in_thread.title == "Large" and in_process.over_budget == in_thread.over_budget
    # the content, extracted in the same trip, is what the content stage extracts on its own
    assert in_process.content == in_thread.content == extract_content(body, "utf-8", url, PageBudget())
    assert in_thread.content.text and in_thread.nesting is not None and in_thread.nesting.cut_at is None

    def shown(links):
        return [(type(found).__name__, getattr(found, "url", None), getattr(found, "reason", None)) for found in links]

    expected = shown(iter_links(in_thread, url, canonical))
    assert ("ExtractedLink", "http://a.test/b", None) in expected and ("InvalidURL", "http://-bad-.test/", "bad_host") in expected
    assert shown(page_links(in_process, url, canonical)) == shown(page_links(in_thread, url, canonical)) == expected
    assert in_process.resolved_links is not None and in_process.resolved_links[0] == url


def test_a_page_parsed_off_the_reactor_has_its_scripts_read_before_its_tree_goes(monkeypatch):
    """The render decision asks every static page for its scripts (whether to sample a render):
    read after the page thread dropped the tree, they parsed the whole page again on the reactor."""
    from crawlproj.content import page as page_module
    from crawlproj.downloadermiddlewares.page_parse import _parse
    from crawlproj.urls import canonicalizer_for

    links = "".join(f'<a href="/p{i}">p{i}</a>' for i in range(50))
    page = _parse(f"<html><head><script src=/app.js></script></head><body>{links}</body></html>".encode(), "utf-8",
                  PageBudget(), 3, "http://a.test/", canonicalizer_for())  # 50 links: more than the 3 that settle the render decision
    parses: list = []
    monkeypatch.setattr(page_module, "LexborHTMLParser", lambda html: parses.append(html))
    assert page.scripts.external == 1 and parses == []


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, 0)


def test_the_helper_processes_run_below_the_crawls_priority_and_its_threads_do_not():
    """The reactor decides when each host's next request goes: with the CPUs busy (two workers
    on two cores) it comes before a large page's parse."""
    mine = _nice()
    workers = PageWorkers(1, 60, 0, process_min_bytes=1_000, process_nice=5)

    async def where():
        return (await workers.run(_nice, size=10_000), await workers.run(_nice, size=10),
                await workers.run_document(_nice, timeout=60, memory=0))

    try:
        helper, thread, document = asyncio.run(where())
    finally:
        workers.close()
    assert helper == document == min(19, mine + 5) and thread == mine == _nice()


def _page_parse_middleware(**settings):
    """A crawler with content on and its page-parse middleware, its page threads awaited through
    asyncio (which Twisted's reactor runs in a crawl)."""
    from scrapy.utils.test import get_crawler

    from crawlproj.downloadermiddlewares import page_parse

    crawler = get_crawler(settings_dict={"CONTENT_ENABLED": True, **settings})
    middleware = page_parse.PageParseMiddleware.from_crawler(crawler)
    middleware.workers.enabled = True
    return crawler, middleware


def test_a_page_whose_content_runs_past_the_timeout_keeps_its_parse(monkeypatch):
    """A page's content is extracted in the same trip as its parse; when the two run past
    PAGE_STAGE_TIMEOUT, the page is parsed again alone, so that its links are not lost with
    its content (the content stage then tries the content on its own)."""
    import threading

    from scrapy.http import HtmlResponse, Request

    from crawlproj.content.extract import parsed_page
    from crawlproj.downloadermiddlewares import page_parse

    release = threading.Event()
    monkeypatch.setattr(page_parse, "extract_content", lambda *args: release.wait(30))
    monkeypatch.setattr(page_parse, "engine_closing", lambda crawler: False)  # a crawl under way
    crawler, middleware = _page_parse_middleware(PAGE_THREADS=2, PAGE_STAGE_TIMEOUT=0.5)
    body = b"<html><head><title>T</title></head><body>" + b"<a href=/p1>p1</a><a href=/p2>p2</a></body></html>"
    response = HtmlResponse("http://a.test/", body=body, encoding="utf-8", request=Request("http://a.test/"))
    try:
        asyncio.run(middleware.process_response(response.request, response))
    finally:
        release.set()
        PageWorkers.of(crawler).close()
    page = parsed_page(response)
    assert [link.url for link in page.links] == ["/p1", "/p2"] and page.title == "T" and page.content is None
    assert crawler.stats.get_value("budget/timeout/parse_and_content") == 1
    assert crawler.stats.get_value("budget/timeout/parse") is None
    assert crawler.stats.get_value("budget/parsed_in_thread") == 1


HELPER_RESTART_UNDER_LOAD = """
import asyncio, time
from crawlproj.content.offload import PageWorkers, StageTimeout

async def main():
    workers = PageWorkers(1, 5.0, 0, process_min_bytes=1)
    assert await workers.run(len, b"ab", size=1) == 2  # the helper started
    # One page runs past the timeout; one waits in the helper's call queue, larger than a pipe
    # holds (its feeder thread blocks writing it); one more fills the queue; those behind wait in
    # the pool and are given up on by their callers (the crawl closing) before the restart.
    running = asyncio.ensure_future(workers.run(time.sleep, 60, size=1))
    await asyncio.sleep(0.5)
    queued = [asyncio.ensure_future(workers.run(len, b"x" * 8_000_000, size=1)),
              asyncio.ensure_future(workers.run(len, b"y", size=1))]
    await asyncio.sleep(0.5)
    behind = [asyncio.ensure_future(workers.run(len, b"z", size=1)) for _ in range(3)]
    await asyncio.sleep(0.5)
    for task in behind:
        task.cancel()
    for task in (running, *queued, *behind):
        try:
            await task
        except (StageTimeout, asyncio.CancelledError):
            pass
    assert running.exception() is not None and all(task.cancelled() for task in behind)
    assert [task.result() for task in queued] == [8_000_000, 1]  # sent again, to the new helper
    assert await workers.run(len, b"abc", size=1) == 3
    workers.close()

asyncio.run(main())
print("exited")
"""


def test_a_helper_restarted_with_pages_queued_and_given_up_on_lets_the_crawl_exit():
    """A helper killed past PAGE_STAGE_TIMEOUT while one page's pickle was still being written to
    it and another, behind, had been given up on: Python 3.11's pool then failed to mark that
    one broken (its future was cancelled), so nothing closed the pipe and the process hung at
    exit, joining the thread still writing (two workers on a slow machine, after their crawl)."""
    done = subprocess.run([sys.executable, "-c", HELPER_RESTART_UNDER_LOAD], capture_output=True, text=True,
                          timeout=120, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0 and done.stdout.strip() == "exited", done.stderr[-2000:]
    assert "InvalidStateError" not in done.stderr, done.stderr[-2000:]


def test_a_page_in_the_helper_has_its_time_from_its_turn_not_from_when_it_was_queued():
    """A helper behind a crawl that keeps the CPUs busy is slow, not stuck: pages queued behind
    slow ones are given PAGE_STAGE_TIMEOUT each from their turn (they ran out of time waiting,
    and were stored without their links or content)."""
    workers = PageWorkers(1, 3.0, 0, process_min_bytes=1)

    async def three_slow_pages():
        assert await workers.run(len, b"ab", size=1) == 2  # the helper started
        return await asyncio.gather(*(workers.run(time.sleep, 2.0, size=1) for _ in range(3)))

    try:
        assert asyncio.run(three_slow_pages()) == [None, None, None]  # 6 s in all, 3 s each
    finally:
        workers.close()


def test_a_rendered_page_has_its_content_read_as_a_rendered_dom(monkeypatch):
    """A rendered page comes back through the page-parse stage: its content is extracted as a
    browser's DOM (an app's whole reader text when its main content falls short), not as a
    static page's (Swagger UI's and Redoc's text had been cut to their shells' 14%)."""
    from scrapy.http import HtmlResponse, Request

    from crawlproj.content.extract import parsed_page
    from crawlproj.downloadermiddlewares import page_parse

    seen = []
    monkeypatch.setattr(page_parse, "extract_content", lambda *args: seen.append(args[4]) or "content")
    closing = [False]
    monkeypatch.setattr(page_parse, "engine_closing", lambda crawler: closing[0])
    crawler, middleware = _page_parse_middleware(PAGE_THREADS=1, PAGE_STAGE_TIMEOUT=30)
    body = b"<html><body><div>app</div></body></html>"
    try:
        for flags in ([], ["playwright"]):
            response = HtmlResponse("http://a.test/", body=body, encoding="utf-8", flags=flags,
                                    request=Request("http://a.test/"))
            asyncio.run(middleware.process_response(response.request, response))
            assert parsed_page(response).content == "content"
        # while the crawl closes, pages are parsed without their content (most are dropped past
        # CLOSE_GRACE; the content stage extracts the content of those stored)
        closing[0] = True
        response = HtmlResponse("http://a.test/c", body=body, encoding="utf-8", request=Request("http://a.test/c"))
        asyncio.run(middleware.process_response(response.request, response))
        assert parsed_page(response).content is None and parsed_page(response).title is None
    finally:
        PageWorkers.of(crawler).close()
    assert seen == [False, True]
