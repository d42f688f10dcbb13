"""Japanese pages in Shift_JIS and EUC-JP must come out as the right text."""

import pytest
from scrapy.http import HtmlResponse, Request

from crawlproj.content.extract import parsed_page, title_and_text

TITLE = "日本語の検索エンジン"
BODY = "東京大学のウェブ巡回ロボットです。表示・ソフト・能力・予定"  # includes 5C-trail-byte kanji in Shift_JIS


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
