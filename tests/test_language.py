"""A page's language (crawlproj.content.language): declarations, the script check, the site's language."""

from crawlproj.content.language import Language, agrees, declared_language, detect, page_language, settle
from crawlproj.content.page import ParsedPage

ENGLISH = "The crawler keeps one queue per host and waits for the interval between two requests. " * 3
JAPANESE = "クローラはホストごとにキューを持ち、リクエストの間隔を守ります。apt-get install と dpkg -l を使う。" * 3
RUSSIAN_UI = "Поиск — документация developers-reference 12.18 Поиск Searching for multiple words only shows matches"


def test_declared_language_is_the_primary_subtag_of_one_language():
    assert declared_language("en-US", None, None) == "en"
    assert declared_language(None, "pt_BR", "de") == "pt"  # markup before the header
    assert declared_language(None, None, "fr") == "fr"
    assert declared_language("", None, "en, de") is None  # for both: no single language
    assert declared_language("x-klingon", None, None) is None


def test_the_parse_reads_html_lang_xml_lang_and_meta_content_language():
    assert ParsedPage('<html lang="ja-JP"><body>x</body></html>').declared_language == "ja"
    assert ParsedPage('<html xml:lang="de"><body>x</body></html>').declared_language == "de"
    meta = '<html><head><meta http-equiv="Content-Language" content="it"></head><body>x</body></html>'
    assert ParsedPage(meta).declared_language == "it"
    assert ParsedPage("<html><body>x</body></html>").declared_language is None


def test_the_text_overrules_a_declaration_only_with_another_script():
    assert agrees("en", ENGLISH) and agrees("ja", JAPANESE)
    assert not agrees("en", JAPANESE)  # a template's lang="en" over Japanese: kana overrule
    assert agrees("ru", RUSSIAN_UI)  # Latin letters (UI strings, commands) never overrule
    assert not agrees("ja", ENGLISH)  # no Japanese script at all in its own text
    assert agrees("ja", ENGLISH, own_text=False)  # a near duplicate's text may differ just there
    assert agrees("zh", "短")  # too little text contradicts nothing


def test_detection_is_trusted_only_with_enough_text_and_the_site_decides_the_rest():
    assert page_language(ENGLISH, "en") == Language("en", "declared")
    assert page_language(JAPANESE, "en") == Language("ja", "detected")
    assert detect("Index – A").how == "guessed"
    pages = {"a": ("h", detect(ENGLISH)), "b": ("h", detect("Index – A")), "c": ("other", detect("Index – B"))}
    settled = settle(pages)
    assert settled["a"] == Language("en", "detected") and settled["b"] == Language("en", "site")
    assert settled["c"].how == "guessed"  # its host has no sure page
