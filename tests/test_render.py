"""Rendering logic without a browser: the detector, host switching, the sub-request pacer,
and the decision middleware's bookkeeping."""

import asyncio
import time

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from crawlproj.content.extract import adopt_parsed_page
from crawlproj.content.page import ParsedPage
from crawlproj.rendering.detect import needs_rendering
from crawlproj.rendering.hosts import HostRenderMemory
from crawlproj.rendering.middleware import RenderDecisionMiddleware
from crawlproj.rendering.pacing import SubrequestPacer
from crawlproj.sandbox.graph import SandboxConfig, SandboxWeb

ARTICLE = "<p>" + "A plain article with a good deal of text about crawling the web politely. " * 10 + "</p>"
NAV = "".join(f'<a href="/p/{i}.html">page {i}</a>' for i in range(5))

CASES = {
    # (html, needs, reasons)
    "create-react-app shell": (
        '<html><head><script src="/static/js/main.3f2a.js"></script></head><body>'
        "<noscript>You need to enable JavaScript to run this app.</noscript><div id=\"root\"></div></body></html>",
        True, ("empty_mount", "noscript")),
    "angular shell": ('<html><body><app-root></app-root><script src="main.js"></script></body></html>',
                      True, ("empty_mount", "framework")),
    "nuxt shell": ('<html><body><div id="__nuxt"></div><script>window.__NUXT__={}</script></body></html>',
                   True, ("empty_mount", "framework")),
    "japanese noscript": ("<html><body><noscript>このサイトを表示するにはJavaScriptを有効にしてください。</noscript>"
                          "<div class=x></div></body></html>", True, ("noscript",)),
    "bare script, no mount": ("<html><body><main></main><script>" + "var data = 'x';" * 200 + "</script></body></html>",
                              True, ("script_heavy",)),
    "next.js rendered on the server": (
        f'<html><body><div id="__next">{ARTICLE}{NAV}</div><script id="__NEXT_DATA__">{{}}</script></body></html>',
        False, ()),
    "static article": (f"<html><body><h1>Title</h1>{ARTICLE}{NAV}<script>ga('send')</script></body></html>", False, ()),
    "short static page": ('<html><body><p>Contact us.</p><a href="/">home</a></body></html>', False, ()),
    "empty mount beside real content": (f'<html><body>{ARTICLE}<div id="root"></div></body></html>', False, ()),
    "widget noscript on a content page": (f"<html><body>{ARTICLE}<noscript>enable JavaScript for comments</noscript>"
                                          "</body></html>", False, ()),
    "empty document": ("", False, ()),
    "garbage": ("\x00\x01<<<>>>", False, ()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_detector_on_hand_written_pages(name):
    html, needs, reasons = CASES[name]
    verdict = needs_rendering(html)
    assert verdict.needs is needs and verdict.reasons == reasons, verdict


def test_detector_on_the_sandbox_pages():
    web = SandboxWeb(SandboxConfig(hosts=10, pages=12, js_mix=True))
    for host in web.hosts:
        for k in range(web.size(host)):
            body, headers = web.render(host, k)
            verdict = needs_rendering(body.decode(web.specs[host].charset))
            assert verdict.needs is bool(web.specs[host].js), (host, k, verdict)


def test_host_memory_switches_after_a_streak_and_back():
    memory = HostRenderMemory(switch_after=3)
    assert [memory.record("a", True) for _ in range(3)] == [None, None, "direct"]
    assert memory.direct("a") and not memory.direct("b")
    # A page that did not need it breaks the streak back, which starts over.
    assert [memory.record("a", v) for v in (False, False, True, False, False)] == [None] * 5
    assert memory.direct("a")
    assert memory.record("a", False) == "static" and not memory.direct("a")
    assert memory.record("a", True) is None and memory.record("a", False) is None  # streak reset
    assert memory.direct_hosts == 0


def test_pacer_serialises_a_host_and_rests_between_requests():
    async def run():
        pacer = SubrequestPacer(rest=lambda key, duration: 0.05)
        spans: dict[str, list[tuple[float, float]]] = {"a": [], "b": []}

        async def fetch(key):
            start = time.monotonic()
            await asyncio.sleep(0.01)
            spans[key].append((start, time.monotonic()))
            return key

        results = await asyncio.gather(*(pacer.run(k, lambda k=k: fetch(k)) for k in "aaab"))
        return results, spans

    results, spans = asyncio.run(run())
    assert results == ["a", "a", "a", "b"]
    a = sorted(spans["a"])
    assert all(nxt[0] - prev[1] >= 0.049 for prev, nxt in zip(a, a[1:])), a
    assert spans["b"][0][0] < a[1][0]  # another host is not held up


def test_pacer_rest_follows_the_fetch_duration():
    async def run():
        pacer = SubrequestPacer(rest=lambda key, duration: 3 * duration)
        marks = []

        async def fetch():
            marks.append(time.monotonic())
            await asyncio.sleep(0.03)
            marks.append(time.monotonic())

        await pacer.run("a", fetch)
        await pacer.run("a", fetch)
        return marks

    m = asyncio.run(run())
    assert m[2] - m[1] >= 3 * (m[1] - m[0]) - 0.005


def _middleware(**settings):
    crawler = get_crawler(settings_dict={"RENDER_MODE": "auto", "RENDER_HOST_SWITCH": 2, "RENDER_MIN_TEXT": 200,
                                         "RENDER_MIN_LINKS": 3, "RENDER_SCRIPT_RATIO": 4.0, **settings})
    crawler.stats.open_spider()
    return RenderDecisionMiddleware(crawler), crawler.stats


SHELL = CASES["create-react-app shell"][0].encode()
STATIC = f"<html><body>{ARTICLE}{NAV}</body></html>".encode()


def _respond(request, body, flags=()):
    return HtmlResponse(request.url, body=body, headers={"Content-Type": "text/html"}, request=request, flags=list(flags))


def test_middleware_sends_shells_back_to_render_and_learns_the_host():
    mw, stats = _middleware()
    # A static page passes; a shell comes back as a rendering request that keeps the page's meta.
    r = Request("http://a.test/1", meta={"depth": 2, "download_latency": 0.1, "retry_times": 1})
    assert mw.process_request(r) is None and not r.meta.get("playwright")
    assert mw.process_response(r, _respond(r, STATIC)).body == STATIC
    again = mw.process_response(r, _respond(r, SHELL))
    assert isinstance(again, Request) and again.dont_filter and again.meta["playwright"]
    assert again.meta["depth"] == 2 and "download_latency" not in again.meta and "retry_times" not in again.meta
    assert again.meta["render_reason"] == "empty_mount"
    # The second shell in a row: the host is rendered directly from now on.
    mw.process_response(r, _respond(r, SHELL))
    direct = Request("http://a.test/9")
    mw.process_request(direct)
    assert direct.meta["playwright"] and direct.meta["render_reason"] == "host"
    # Rendered pages whose raw HTML turns out static switch it back.
    for _ in range(2):
        direct.meta["render_document"] = (STATIC, "text/html")
        mw.process_response(direct, _respond(direct, STATIC, ["playwright"]))
    back = Request("http://a.test/10")
    mw.process_request(back)
    assert not back.meta.get("playwright")
    assert stats.get_value("render/hosts_to_direct") == 1 and stats.get_value("render/hosts_to_static") == 1
    assert stats.get_value("render/static_pages") == 1 and stats.get_value("render/rendered") == 2


def test_middleware_does_not_render_a_page_whose_parse_was_given_up():
    mw, stats = _middleware()
    r = Request("http://a.test/slow")
    response = _respond(r, SHELL)
    adopt_parsed_page(response, ParsedPage.unparsed("timeout"))
    assert mw.process_response(r, response) is response
    assert stats.get_value("render/static_pages") is None and stats.get_value("render/needed/empty_mount") is None


def test_middleware_leaves_robots_sitemaps_and_subrequests_alone():
    mw, stats = _middleware(RENDER_MODE="always")
    for request in (Request("http://a.test/robots.txt"), Request("http://a.test/sitemap.xml", meta={"render": False}),
                    Request("http://a.test/app.js", meta={"render_subrequest": True})):
        mw.process_request(request)
        assert not request.meta.get("playwright")
    page = Request("http://a.test/")
    mw.process_request(page)
    assert page.meta["playwright"] and page.meta["render_reason"] == "always"
