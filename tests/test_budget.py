"""The page budget: nesting and element bounds before the parse, main text's linear fallback."""

import pytest

from crawlproj.content.budget import PageBudget, nesting
from crawlproj.content.main_text import extract_main_text
from crawlproj.content.page import ParsedPage
from sandbox.docsites import TEST_SITES, ensure_installed, html_files

DEEP = "<html><body>" + "<div><p>word <a href='/x{0}'>l</a> here " * 48_000 + "</body></html>"


def test_nesting_follows_the_tree_a_parser_builds():
    assert nesting("<div><div><p>a</div></div>").depth == 3
    # left-out end tags that HTML implies do not nest: long lists, paragraphs, tables
    page = "<ul>" + "<li>item <a href=/x>x</a>" * 5000 + "</ul>" + "<p>a" * 3000 + "<table>" + "<tr><td>1<td>2" * 3000
    assert nesting(page).depth <= 5
    # comments, scripts and void elements hold no elements
    assert nesting("<!-- <div><div> --><script>if (a<b) '<div>'</script><br><img src=x><span>x</span>").depth == 1
    assert nesting("<div>" * 300).depth == 300


def test_a_deep_page_is_parsed_up_to_the_bound_and_says_why():
    budget = PageBudget(max_depth=1024)
    page = ParsedPage(DEEP, budget)
    assert page.over_budget == "depth"
    assert len(page.html) < len(DEEP) // 40
    assert 500 < len(page.links) <= 1024  # the links before the cut are kept
    assert ParsedPage("<a href=/a>a</a>" * 5000, budget).over_budget is None


def test_end_tags_hidden_in_a_comment_do_not_hide_depth():
    page = "<!--" + "</div>" * 5000 + "-->" + "<div>" * 3000
    assert PageBudget(max_depth=1024).measure(page).cut_reason == "depth"


def test_element_bound():
    page = "<p>x</p>" * 2000
    found = PageBudget(max_depth=64, max_elements=1000).measure(page)
    assert found.cut_reason == "elements" and found.elements == 1000
    assert page[: found.cut_at].count("<p>") == 1000


def test_main_text_falls_back_to_visible_text_when_too_deep_for_scoring():
    deep = ("<html><body><nav>menu</nav>" + "<div>" * 400 + "<p>" + "deep words " * 50 + "</p></body></html>").encode()
    found = extract_main_text(deep, "utf-8", PageBudget(main_text_max_depth=256))
    assert found.limited == "main_content_depth" and "deep words" in found.text and "menu" in found.text
    cut = extract_main_text(DEEP.encode(), "utf-8", PageBudget())
    assert cut.limited == "depth" and cut.text.startswith("word")
    shallow = extract_main_text(b"<html><body><p>" + b"plain words " * 40 + b"</p></body></html>", "utf-8")
    assert shallow.limited is None and "plain words" in shallow.text


@pytest.mark.parametrize("site", TEST_SITES, ids=lambda s: s.name)
def test_real_pages_are_within_every_default_bound(site):
    ensure_installed((site,))
    budget = PageBudget()
    for path in html_files(site):
        html = path.read_bytes().decode("utf-8", "replace")
        found = budget.measure(html)
        assert found.cut_reason is None, path
        assert budget.main_content_ok(found), (path, found.depth)
