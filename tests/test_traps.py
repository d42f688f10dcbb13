"""Trap rules (pure)."""

from crawlproj.traps import compile_patterns, is_dynamic, query_params, repeated_segments


def test_dynamic_pages_by_query_or_pattern():
    patterns = compile_patterns([r"\.cgi\b", r"\.php\b", r"\.aspx?\b", r"/cgi-bin/"])
    assert is_dynamic("http://h/cal?m=1", patterns)
    assert is_dynamic("http://h/x.CGI", patterns) and is_dynamic("http://h/a.aspx", patterns)
    assert is_dynamic("http://h/cgi-bin/x", patterns)
    assert not is_dynamic("http://h/p/1.html", patterns) and not is_dynamic("http://h/php-guide/", patterns)
    assert not is_dynamic("http://h/x.cgi", compile_patterns([]))  # no patterns: only a query counts


def test_repeated_segments_and_query_params():
    assert repeated_segments("/a/b/a/b/a/") == 3
    assert repeated_segments("/loop/loop/") == 2 and repeated_segments("/") == 0
    assert query_params("http://h/?a=1&b=2&&c") == 3 and query_params("http://h/") == 0
