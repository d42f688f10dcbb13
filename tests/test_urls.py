import pytest

from crawlproj.urls import InvalidURL, canonicalize, host_of, is_session_token


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("HTTP://Example.COM:80/a/../b/%7euser?b=2&a=1#frag", "http://example.com/b/~user?a=1&b=2"),
        ("https://EXAMPLE.com:443", "https://example.com/"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
        ("http://example.com/p?PHPSESSID=h0sl3ue1a7v2o8r5qf9kp4ctm6&q=1&sid=9", "http://example.com/p?q=1&sid=9"),
        ("http://example.com/p;jsessionid=6725F461EB18FCE30107706921C61012?x=1", "http://example.com/p?x=1"),
        ("http://例え.jp/パス?q=日本", "http://xn--r8jz45g.jp/%E3%83%91%E3%82%B9?q=%E6%97%A5%E6%9C%AC"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("  http://example.com  ", "http://example.com/"),
        ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
        ("http://Dot.Test./a", "http://dot.test/a"),  # a trailing dot and letter case name one host
        ("http://dot.test.:8080/x", "http://dot.test:8080/x"),
    ],
)
def test_canonical_forms(raw, expected):
    assert canonicalize(raw) == expected


def test_relative_urls_resolve_against_base():
    assert canonicalize("../x.html?b=1&a=2", "http://h.test/d/e/page.html") == "http://h.test/d/x.html?a=2&b=1"
    assert canonicalize("//other.test/p", "https://h.test/") == "https://other.test/p"


def test_custom_session_params():
    token = "9682993c8daa2c5497996114facdc805"
    assert canonicalize(f"http://h.test/?token={token}&a=2", session_params=("token",)) == "http://h.test/?a=2"
    assert canonicalize(f"http://h.test/?sid={token}", session_params=("token",)) == f"http://h.test/?sid={token}"


@pytest.mark.parametrize(
    "value",
    [
        "9682993c8daa2c5497996114facdc805",  # PHP before 7.1, phpBB, osCommerce: 32 hex
        "h0sl3ue1a7v2o8r5qf9kp4ctm6",  # PHP 7.1+: 26 of [0-9a-v]
        "6725F461EB18FCE30107706921C61012",  # Tomcat
        "DED54A598193DDE1DF59E0AE16BDE87D.tplgfr21s_3",  # Tomcat behind a balancer (.jvmRoute)
        "node0a7x2kq9d4m1z8w3n5.node0",  # Jetty 9
        "66fbf1fc-1ab2-4504-97b9-9cac2fb634e1",  # a UUID
        "0000A1b2C3d4E5f6G7h8I9j0K:14abc9v9d",  # WebSphere (:clone id)
    ],
)
def test_session_tokens(value):
    assert is_session_token(value)


@pytest.mark.parametrize(
    "value",
    [
        "00/01/25/1430236",  # a Slash story
        "2001/1/25/164540/759",  # a Scoop story (kuro5hin)
        "7041", "123", "989272",  # a PHP-Nuke article, a small number, a LimeSurvey survey
        "1234567890123456789",  # a long number: an id, not a token
        "2001-01-25T14:30:00Z", "2001-01-25",  # dates
        "Main.WebHome", "HelpOnEditingPages", "WikiSandboxPages2",  # a wiki's page names
        "ISBN9780131103627",  # a word and a number
        "e4xr60mlvsol",  # too short to be sure (12 characters)
        "deadbeefcafebabe",  # hex without a digit: a word, or just a word-like value
        "00%2F01%2F25", "a b c d e f 1 2 3 4 5 6 7 8 9 0", "",
    ],
)
def test_values_that_are_not_session_tokens(value):
    assert not is_session_token(value)


def test_a_session_parameter_is_removed_only_with_a_token_s_value():
    stories = [canonicalize(f"http://slash.test/article.pl?sid=00/01/25/{n}") for n in (1430236, 1236215)]
    assert len(set(stories)) == 2  # two stories stay two URLs
    phpbb = "http://forum.test/viewtopic.php?t=56187&sid=61e6c66d37d5a36397f44efb721c0a25"
    assert canonicalize(phpbb) == "http://forum.test/viewtopic.php?t=56187"
    assert canonicalize("http://h.test/a;jsessionid=123;v=2") == "http://h.test/a;jsessionid=123;v=2"
    tomcat = "http://h.test/a;jsessionid=DED54A598193DDE1DF59E0AE16BDE87D.tplgfr21s_3;v=2?b=1"
    assert canonicalize(tomcat) == "http://h.test/a;v=2?b=1"


@pytest.mark.parametrize(
    "raw, reason",
    [
        ("javascript:alert(1)", "scheme"),
        ("mailto:someone@example.com", "scheme"),
        ("ftp://example.com/file", "scheme"),
        ("data:text/html,<b>x</b>", "scheme"),
        ("http://a..b/", "bad_host"),
        ("http://-bad.com/", "bad_host"),
        ("http://exa mple.com/", "bad_host"),
        ("http:///path-only", "bad_host"),
        ("http://" + "a" * 300 + ".com/", "bad_host"),
        ("http://a.b:99999/", "malformed"),
        ("http://a.b:port/", "malformed"),
        ("http://user:pw@a.b/", "credentials"),
        ("http://a.b/\x00evil", "malformed"),
        ("http://a.b/" + "x" * 3000, "too_long"),
        ("", "empty"),
        ("   ", "empty"),
    ],
)
def test_hostile_urls_are_refused_with_a_reason(raw, reason):
    with pytest.raises(InvalidURL) as exc:
        canonicalize(raw)
    assert exc.value.reason == reason


def test_max_length_is_a_parameter():
    url = "http://h.test/" + "x" * 100
    assert canonicalize(url, max_length=200) == url
    with pytest.raises(InvalidURL):
        canonicalize(url, max_length=50)


def test_non_string_input_is_refused():
    with pytest.raises(InvalidURL):
        canonicalize(None)  # type: ignore[arg-type]


def test_host_of():
    assert host_of("http://h1.sandbox.test:8080/x") == "h1.sandbox.test"


def test_link_canonicalizer_answers_as_canonicalize_whatever_it_remembers():
    import itertools
    import random

    from crawlproj.urls import InvalidURL, LinkCanonicalizer, canonicalize

    bases = ["http://h.test/a/b.html", "http://h.test/a/c.html?x=1#f", "http://h.test", "http://h.test/a/",
             "https://h.test/a;p/b;q", "http://other.test:8080/a/b/c.html", "http://h.test/a/b.html?s=/x/y"]
    hrefs = ["c.html", "./c.html", "../c.html", "/c.html", "c.html#s1", "c.html#s2", "#top", "#", "", "  c.html",
             "?q=1", "?q=1#f", "//x.test/p", "http://x.test/p#f", "HTTPS://X.test/P", "http:c.html", ";p=1",
             "c.html?sid=9&b=2&a=1", "javascript:void(0)", "mailto:a@b", "c\x01.html", "c.html#f\x01",
             "c.html#f g", "..", ".", "a b.html", "http://[bad/", "http://u:p@h.test/"]

    def expected(href, base):
        try:
            return canonicalize(href, base)
        except InvalidURL as exc:
            return exc.reason

    pairs = list(itertools.product(bases, hrefs))
    for seed in range(3):  # several orders: what is remembered first must not matter
        random.Random(seed).shuffle(pairs)
        memo = LinkCanonicalizer(size=50)  # small: it also starts again while answering
        for base, href in pairs:
            try:
                got = memo(href, base)
            except InvalidURL as exc:
                got = exc.reason
            assert got == expected(href, base), (href, base)


def test_a_remembered_refusal_keeps_no_page_alive():
    """A refused href in a site's navigation is met on every page. Its memo entry must not
    hold the frames (and so the parse trees) of the pages it was raised for: it once held a
    traceback that grew by every page, about 1 MB a page on real documentation."""
    import gc
    import weakref

    from crawlproj.content.extract import iter_links
    from crawlproj.content.page import ParsedPage
    from crawlproj.urls import InvalidURL, LinkCanonicalizer

    memo = LinkCanonicalizer()
    pages = []
    for number in range(20):
        page = ParsedPage('<a href="mailto:webmaster@h.test">mail</a> <a href="next.html">next</a>')
        found = list(iter_links(page, f"http://h.test/doc/{number}.html", memo))
        assert [f.reason for f in found if isinstance(f, InvalidURL)] == ["scheme"]
        pages.append(weakref.ref(page))
        del page, found
    gc.collect()
    assert sum(ref() is not None for ref in pages) == 0


@pytest.fixture(scope="module")
def real_urls():
    from sandbox import realurls

    realurls.ensure_installed()
    return realurls


def test_a_real_slash_feed_s_stories_stay_two_urls_and_real_session_ids_are_removed(real_urls):
    """Slash's ``sid`` names a story: a real Slash feed's two stories were once one URL, and both
    pages were lost. AWStats' FAQ links a PHP-Nuke article (``sid=7041``) and logs a request with
    Tomcat's session id: the article keeps its id, the session id goes."""
    import settings as defaults  # the project: its defaults and profiles
    from crawlproj.content.feeds import read_feed
    from crawlproj.urls import LinkCanonicalizer

    canonical = LinkCanonicalizer(tuple(defaults.SESSION_ID_PARAMS))  # the spiders' own, with the defaults
    feed = read_feed(real_urls.read("slash.rdf"), "http://yaz.pudge.net/slash.rdf")
    assert feed.links == ["http://yaz.pudge.net/article.pl?sid=00/01/25/1430236",
                          "http://yaz.pudge.net/article.pl?sid=00/01/25/1236215"]
    stories = {canonical(link, "http://yaz.pudge.net/slash.rdf") for link in feed.links}
    assert len(stories) == 2 and all("sid=00%2F01%2F25%2F1" in url for url in stories)

    faq = real_urls.urls_in("awstats_faq.html")
    nuke = [url for url in faq if "sid=" in url]
    assert nuke == ["http://phpnuke.org/modules.php?name=News&file=article&sid=7041"]
    assert canonical(nuke[0], "http://phpnuke.org/") == "http://phpnuke.org/modules.php?file=article&name=News&sid=7041"
    requests = real_urls.urls_in("awstats_faq.html", r"GET (\S+) HTTP/1\.[01]")
    tomcat = [path for path in requests if "jsessionid" in path]
    assert tomcat == ["/do/Show;jsessionid=6BEF030AB1677BEC333FFCC7BF4DF564?param=1477"]
    assert canonical(tomcat[0], "http://www.mydomain.com/") == "http://www.mydomain.com/do/Show?param=1477"
    # The AWStats tracker's own session id (a name, a time in ms and a random part) goes too.
    tracker = [path for path in requests if "awssession_id1073036758306r9417" in path]
    assert len(tracker) == 1 and "sid=" not in canonical(tracker[0], "http://www.mydomain.com/")


def test_the_web_spider_follows_both_stories_of_a_real_slash_feed(real_urls):
    """The path a feed's links take in a crawl: the web spider reads the feed and canonicalises its
    entries (its settings' SESSION_ID_PARAMS), and both stories are followed and dated."""
    import asyncio
    from types import SimpleNamespace

    from scrapy.http import Request, XmlResponse
    from scrapy.utils.test import get_crawler

    import settings as defaults  # the project: its defaults and profiles
    from crawlproj.spiders.web import WebSpider

    crawler = get_crawler(WebSpider, {**{k: getattr(defaults, k) for k in dir(defaults) if k.isupper()},
                                      "PROFILE": "sandbox", "PAGE_THREADS": 0})
    crawler.engine = SimpleNamespace(_slot=SimpleNamespace(closing=None), running=True)  # a crawl that runs
    spider = WebSpider.from_crawler(crawler)
    url = "http://yaz.pudge.net/slash.rdf"
    response = XmlResponse(url, body=real_urls.read("slash.rdf"), headers={"Content-Type": "application/rss+xml"},
                           request=Request(url))
    follow, _, extras = asyncio.run(spider._read_page(response))
    assert len(set(follow)) == 2 and all("/article.pl?sid=00%2F01%2F25%2F1" in u for u in follow)
    assert len({entry.loc for entry in extras[0].entries}) == 2
