import pytest

from crawlproj.urls import InvalidURL, canonicalize, host_of


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("HTTP://Example.COM:80/a/../b/%7euser?b=2&a=1#frag", "http://example.com/b/~user?a=1&b=2"),
        ("https://EXAMPLE.com:443", "https://example.com/"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
        ("http://example.com/p?PHPSESSID=abc&q=1&sid=9", "http://example.com/p?q=1"),
        ("http://example.com/p;jsessionid=ABC?x=1", "http://example.com/p?x=1"),
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
    assert canonicalize("http://h.test/?token=1&a=2", session_params=("token",)) == "http://h.test/?a=2"


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
