"""The shingle measure of bench/content.py (sandbox/content_metric.py) on cases worked out by
hand, and the article truth's HTML-to-text conversion (sandbox/articles.py). No network."""

from __future__ import annotations

import pytest
from selectolax.lexbor import LexborHTMLParser

from sandbox.articles import RecipeError, apply_recipe, block_text
from sandbox.content_metric import Match, bag, corpus_scores, kept, match, shingle_counts


def test_shingles_are_word_4grams_with_their_counts():
    # 8 tokens, 5 shingles: (x y z w) twice.
    assert shingle_counts("x y z w x y z w")[("x", "y", "z", "w")] == 2
    assert sum(shingle_counts("x y z w x y z w").values()) == 5
    assert shingle_counts("Hello, world!") == {("Hello", "world"): 1}  # under 4 tokens: one shingle
    assert shingle_counts(" .. ") == {}
    assert shingle_counts("Ein Straßen-Café") == {("Ein", "Straßen", "Café"): 1}  # \w is Unicode


def test_page_match_by_hand():
    # truth (a b c d), (b c d e); predicted (a b c d): tp 1, fn 1 of 2.
    m = match("a b c d e", "a b c d")
    assert (m.tp, m.fp, m.fn) == (0.5, 0.0, 0.5)
    assert (m.precision, m.recall) == (1.0, 0.5)
    # Multiplicity: the truth has (x y z w) twice and 3 others; the prediction one (x y z w).
    m = match("x y z w x y z w", "x y z w")
    assert (m.tp, m.fp, m.fn) == (0.2, 0.0, 0.8)
    # Punctuation and whitespace do not count; case does.
    assert match("Hello world", "Hello,\n\nworld!").precision == 1.0
    assert match("Hello world", "hello world").recall == 0.0
    # Nothing extracted: precision 0 (and no part of the corpus's precision), recall 0.
    empty = match("a b c d", "")
    assert (empty.tp, empty.fp, empty.fn) == (0.0, 0.0, 1.0)
    assert (empty.precision, empty.recall) == (0.0, 0.0)
    assert match("", "") == Match(0.0, 0.0, 0.0) and match("", "").precision == 1.0


def test_corpus_scores_are_f1_of_the_mean_precision_and_recall():
    pages = [match("a b c d e", "a b c d"), match("x y z w x y z w", "x y z w"), match("a b c d", "")]
    scores = corpus_scores(pages)
    assert scores["precision"] == 1.0  # the empty extraction has no precision to average
    assert scores["recall"] == pytest.approx((0.5 + 0.2 + 0.0) / 3)
    assert scores["f1"] == pytest.approx(2 * 1.0 * 0.7 / 3 / (1.0 + 0.7 / 3))


def test_an_element_is_kept_when_nine_tenths_of_its_shingles_are_there():
    code = "for i in range ( 10 ) : print ( i , i * i )"  # 9 tokens, 6 shingles
    assert kept(code, bag("Text before. " + code + " and after."))
    assert not kept(code, bag(code.replace("print", "log")))  # 4 of 6 shingles lost
    assert kept("SELECT 1;", bag("run SELECT 1 first"))  # under 4 tokens: every token
    assert not kept("SELECT 1;", bag("run SELECT first"))


def test_block_text_keeps_blocks_rows_and_code_and_drops_what_is_hidden():
    html = ("<div id=a><h2>Title</h2><p>One <b>bold</b>\n word<br>next line</p><script>x()</script>"
            "<ul><li>first</li><li>second</li></ul><table><tr><td>1</td><td>2</td></tr></table>"
            "<pre>  indented\n    code</pre><p style='display: none'>hidden</p><p hidden>gone</p>"
            "<div>Loose text<br> <br>in two paragraphs</div></div>")
    root = LexborHTMLParser(html).css_first("#a")
    assert block_text(root) == ["Title", "One bold word\nnext line", "first", "second", "1 2", "  indented\n    code",
                                  "Loose text", "in two paragraphs"]


def test_recipe_cuts_drops_and_fails_loudly_when_it_no_longer_fits():
    html = ("<h1>Head</h1><article><p>By someone</p><p>Body one.</p><aside>Ad</aside><p>Body two.</p>"
            "<p>Share</p></article>")
    recipe = {"container": "article", "exclude": ["aside"], "start": "Body one", "end": "Body two"}
    assert apply_recipe(html, recipe) == "Body one.\n\nBody two."
    assert apply_recipe(html, {"container": "article", "drop": ["By ", "Share"]}) == "Body one.\n\nAd\n\nBody two."
    with pytest.raises(RecipeError):
        apply_recipe(html, {"container": "main"})
    with pytest.raises(RecipeError):
        apply_recipe(html, {"container": "article", "drop": ["not there"]})
