"""Page requisites read from real markup and stylesheets (pure logic): what a browser fetches to
show a page, the srcset candidate taken, and the budget that bounds them."""

from crawlproj.content.budget import PageBudget
from crawlproj.content.page import ParsedPage
from crawlproj.content.requisites import RequisiteBudget, css_urls, srcset_choice, stylesheet_requisites
from crawlproj.scope import Scope
from sandbox import docsites

PAGE = """<html><head><link rel=stylesheet href="a.css"><link rel="shortcut icon" href="/fav.ico">
<link rel=alternate href=feed.xml><link rel="alternate stylesheet" href="dark.css">
<link rel=preload as=font href="f.woff2"><link rel=next href="2.html">
<style>@import url("b.css"); body{background:url(bg.png)} /* url(commented.png) */</style>
<script src="s.js"></script><script>var x = "url(no.png)"</script></head>
<body style="background-image:url(data:image/png;base64,AAAA)">
<img src="i.png" srcset="i-1.png 1x, i-2.png 2x"><img src="data:image/gif;base64,R0lG">
<picture><source srcset="p-640.webp 640w, p-1600.webp 1600w, p-3200.webp 3200w"><img src="p.jpg"></picture>
<iframe src="frame.html"></iframe><video poster="poster.jpg"></video><div style="background:url('d.gif')"></div>
<input type=image src="go.png"><a href="page.html"><img src="i.png"></a></body></html>"""


def test_every_requisite_kind_is_found_once_in_document_order():
    page = ParsedPage(PAGE, PageBudget(requisites=True))
    page.release()  # read before the tree goes, as in a page thread
    assert [(r.url, r.kind) for r in page.requisites] == [
        ("a.css", "stylesheet"), ("/fav.ico", "icon"), ("f.woff2", "font"), ("b.css", "stylesheet"),
        ("bg.png", "image"), ("s.js", "script"), ("i.png", "image"), ("i-1.png", "image"),
        ("p-1600.webp", "image"), ("p.jpg", "image"), ("frame.html", "iframe"), ("poster.jpg", "media"),
        ("d.gif", "image"), ("go.png", "image")]


def test_the_srcset_candidate_is_the_one_a_browser_at_ratio_one_takes():
    assert srcset_choice("a.png 1x, b.png 2x") == "a.png"
    assert srcset_choice("b.png 2x, c.png 1.5x") == "c.png"  # the smallest over 1x
    assert srcset_choice("a.png") == "a.png"  # no descriptor: 1x
    assert srcset_choice("s.jpg 320w, m.jpg 1280w, l.jpg 2560w") == "m.jpg"  # at least the viewport
    assert srcset_choice("s.jpg 320w, m.jpg 800w") == "m.jpg"  # none as wide: the widest
    assert srcset_choice("https://cdn.test/x,y.png 1x") == "https://cdn.test/x,y.png"  # a comma in a URL
    assert srcset_choice("") is None


def test_a_stylesheet_names_its_imports_fonts_and_images():
    css = """@import "base.css"; @import url(print.css) print;
    @font-face { src: url("fonts/Lato.woff2?v=2") format("woff2"), url(fonts/Lato.ttf) }
    .a { background: url( 'img/a.svg' ) } .b { background: url(#grad) } .c { mask: url(data:x) }
    /* .d { background: url(gone.png) } */ .a2 { background: url('img/a.svg') }"""
    assert list(css_urls(css)) == [("base.css", "stylesheet"), ("print.css", "stylesheet"),
                                   ("fonts/Lato.woff2?v=2", "font"), ("fonts/Lato.ttf", "font"),
                                   ("img/a.svg", "image"), ("img/a.svg", "image")]
    assert [r.url for r in stylesheet_requisites(css)][-1] == "img/a.svg"  # each once
    assert len(stylesheet_requisites(css)) == 5


def test_the_budget_bounds_kinds_pages_and_hosts():
    budget = RequisiteBudget(per_page=2, per_host=3, kinds=["stylesheet", "image"])
    assert budget.admit("a.test", "script", 0) == "kind"
    assert budget.admit("a.test", "image", 2) == "page"
    assert [budget.admit("a.test", "image", 0) for _ in range(4)] == [None, None, None, "host"]
    assert budget.admit("b.test", "image", 0) is None


def test_requisites_are_bounded_by_domains_not_by_a_site_spider_prefix():
    scope = Scope(domains=("docs.test",), origin="http://a.docs.test", prefix="/manual/")
    assert scope.refuses("http://a.docs.test/static/style.css") == "prefix"
    assert scope.refuses_requisite("http://a.docs.test/static/style.css") is None
    assert scope.refuses_requisite("http://cdn.docs.test/font.woff2") is None
    assert scope.refuses_requisite("https://fonts.googleapis.com/css") == "domain"


def test_real_pages_of_three_generators_name_what_they_need():
    """Node.js's hand-made template, PostgreSQL's DocBook and Python's Sphinx, as installed."""
    from pathlib import Path

    docsites.ensure_installed((docsites.SITES[0], docsites.SITES[4]))
    node = ParsedPage(Path(docsites.SITES[4].root, "fs.html").read_text(), PageBudget(requisites=True))
    assert {r.url for r in node.requisites} >= {"assets/style.css", "assets/hljs.css", "assets/api.js"}
    pg = ParsedPage(Path(docsites.SITES[0].root, "index.html").read_text(), PageBudget(requisites=True))
    assert [(r.url, r.kind) for r in pg.requisites] == [("stylesheet.css", "stylesheet")]


def test_replay_requests_are_read_back_to_the_archived_urls():
    from sandbox.replay_check import normalise, original_url

    assert original_url("http://127.0.0.1:8080/crawl/20261127120000cs_/http://a.docs.test:81/s.css") \
        == "http://a.docs.test:81/s.css"
    assert original_url("http://127.0.0.1:8080/crawl/mp_/https://A.test/p?q=1#x") == "https://a.test/p?q=1"
    assert original_url("http://127.0.0.1:8080/crawl/20261127120000/http://a.test/") == "http://a.test/"
    assert original_url("http://127.0.0.1:8080/static/wombat.js") is None  # pywb's own
    assert normalise("http://a.test") == "http://a.test/"


def test_screenshot_and_text_measures():
    import numpy as np

    from sandbox.replay_check import ssim, text_match

    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (60, 80)).astype(np.uint8)
    assert ssim(image, image) == 1.0
    assert ssim(image, 255 - image) < 0
    shifted = np.roll(image, 1, axis=1)
    assert ssim(image, shifted) < 0.5  # noise moved a pixel is another image
    assert text_match("a b c d", "a b c d") == 1.0 and text_match("", "") == 1.0
    assert text_match("a b c d", "a b c") == 0.75 and text_match("a a b", "a b b") == 2 / 3
