"""Japanese pages in Shift_JIS and EUC-JP must come out as the right text."""

import pytest
from scrapy.http import HtmlResponse, Request

from crawlproj.content.charset import body_charset_over_header
from crawlproj.downloadermiddlewares.body_charset import BodyCharsetMiddleware
from crawlproj.content.extract import parsed_page, title_and_text

pytestmark = pytest.mark.slow

TITLE = "日本語の検索エンジン"
BODY = "東京大学のウェブ巡回ロボットです。表示・ソフト・能力・予定"  # includes 5C-trail-byte kanji in Shift_JIS


class _Stats(dict):
    def inc_value(self, key, n=1):
        self[key] = self.get(key, 0) + n


def _response(raw: bytes, content_type: str) -> HtmlResponse:
    return HtmlResponse("http://h.test/", body=raw, headers={"Content-Type": content_type}, request=Request("http://h.test/"))


@pytest.mark.parametrize("charset", ["shift_jis", "euc-jp", "utf-8"])
def test_charset_declared_in_header(charset):
    raw = f"<html><head><title>{TITLE}</title></head><body><p>{BODY}</p></body></html>".encode(charset)
    assert raw != raw.decode(charset).encode("utf-8") or charset == "utf-8"
    title, text = title_and_text(parsed_page(_response(raw, f"text/html; charset={charset}")))
    assert (title, text) == (TITLE, BODY)


@pytest.mark.parametrize("charset", ["shift_jis", "euc-jp"])
def test_charset_declared_only_in_meta(charset):
    raw = (
        f'<html><head><meta http-equiv="Content-Type" content="text/html; charset={charset}">'
        f"<title>{TITLE}</title></head><body><p>{BODY}</p></body></html>"
    ).encode(charset)
    title, text = title_and_text(parsed_page(_response(raw, "text/html")))
    assert (title, text) == (TITLE, BODY)


def test_wrong_header_charset_is_overridden_by_bom_not_crash():
    raw = "\ufeff<title>日本</title>".encode("utf-8")
    resp = _response(raw, "text/html; charset=iso-8859-1")
    assert title_and_text(parsed_page(resp))[0] == "日本"


def test_undecodable_bytes_do_not_raise():
    raw = b"<title>\x82\xa0\xff\xfe broken</title>"
    resp = _response(raw, "text/html; charset=shift_jis")
    title, _ = title_and_text(parsed_page(resp))
    assert title is not None and "broken" in title


@pytest.mark.parametrize("charset", ["shift_jis", "euc-jp"])
@pytest.mark.parametrize("header", ["utf-8", "iso-8859-1"])
def test_body_charset_wins_over_a_contradicting_header(charset, header):
    raw = (f'<html><head><meta charset="{charset}"><title>{TITLE}</title></head>'
           f"<body><p>{BODY}</p></body></html>").encode(charset)
    resp = _response(raw, f"text/html; charset={header}")
    assert body_charset_over_header(raw, header) is not None
    fixed = BodyCharsetMiddleware(_Stats()).process_response(resp.request, resp)
    assert title_and_text(parsed_page(fixed)) == (TITLE, BODY)


def test_header_stands_when_it_reads_the_body_and_the_meta_is_stale():
    raw = f'<html><head><meta charset="iso-8859-1"><title>{TITLE}</title></head></html>'.encode("utf-8")
    assert body_charset_over_header(raw, "utf-8") is None
    ascii_only = b'<html><head><meta charset="shift_jis"><title>plain</title></head></html>'
    assert body_charset_over_header(ascii_only, "utf-8") is None
    assert body_charset_over_header(raw, None) is None


@pytest.mark.parametrize("charset", ["base64", "hex", "rot13", "idna", "zlib", "x-no-such-charset"])
@pytest.mark.parametrize("where", ["header", "meta"])
def test_a_charset_that_is_no_text_encoding_falls_back_to_one_that_reads_the_page(charset, where):
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from crawlproj.downloadermiddlewares.body_charset import BodyCharsetMiddleware

    meta = f'<meta charset="{charset}">' if where == "meta" else ""
    body = f"<html><head>{meta}<title>日本語のページ</title></head><body>café</body></html>".encode()
    headers = {"Content-Type": f"text/html; charset={charset}" if where == "header" else "text/html"}
    crawler = get_crawler()
    crawler.stats.open_spider()
    mw = BodyCharsetMiddleware(crawler.stats)
    response = mw.process_response(None, HtmlResponse("http://a.test/", body=body, headers=headers))
    assert "日本語のページ" in response.text and "café" in response.text
    unusable = charset != "x-no-such-charset"  # an unknown name: Scrapy already sniffs instead
    assert crawler.stats.get_value("charset/unusable") == (1 if unusable else None)


def test_a_shift_jis_page_declaring_base64_is_read_in_its_own_meta_charset():
    from crawlproj.content.charset import readable_charset

    body = '<html><head><meta charset="shift_jis"><title>日本</title></head></html>'.encode("shift_jis")
    assert readable_charset(body, "base64") in ("shift_jis", "cp932")
    assert readable_charset(body, "utf-8") is None and readable_charset(body, None) is None
