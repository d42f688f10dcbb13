"""Sitemap reading (crawlproj.content.sitemaps): pure, from the sitemaps.org protocol's text."""

from __future__ import annotations

import calendar
import gzip

import pytest

from crawlproj.content.sitemaps import (MAX_BYTES, MAX_URLS, SitemapEntry, parse_sitemap, read_sitemap, unpack,
                                        w3c_datetime)

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


@pytest.mark.parametrize("text, expected", [
    ("1997", (1997, 1, 1, 0, 0, 0)),
    ("1997-07", (1997, 7, 1, 0, 0, 0)),
    ("1997-07-16", (1997, 7, 16, 0, 0, 0)),
    ("1997-07-16T19:20+01:00", (1997, 7, 16, 18, 20, 0)),
    ("1997-07-16T19:20:30+01:00", (1997, 7, 16, 18, 20, 30)),
    ("1997-07-16T19:20:30Z", (1997, 7, 16, 19, 20, 30)),
    ("1997-07-16T19:20:30", (1997, 7, 16, 19, 20, 30)),  # no zone: UTC
])
def test_every_w3c_datetime_form_is_read_as_unix_seconds(text, expected):
    assert w3c_datetime(text) == calendar.timegm(expected)


def test_fractions_of_a_second_and_bad_dates():
    assert w3c_datetime("1997-07-16T19:20:30.45+01:00") == calendar.timegm((1997, 7, 16, 18, 20, 30)) + 0.45
    for bad in ("", "yesterday", "1997-13", "1997-02-30", None):
        assert w3c_datetime(bad) is None


def test_a_urlset_gives_loc_lastmod_changefreq_and_priority_as_written():
    body = (f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}><url><loc> http://a.test/1 </loc>'
            "<lastmod>2024-05-17</lastmod><changefreq>Daily</changefreq><priority>0.8</priority></url>"
            "<url><loc>http://a.test/2</loc><changefreq>sometimes</changefreq><priority>7</priority></url>"
            "<url><lastmod>2024</lastmod></url></urlset>").encode()
    sitemap = parse_sitemap(body)
    assert sitemap.kind == "urlset"
    assert sitemap.entries == [SitemapEntry("http://a.test/1", calendar.timegm((2024, 5, 17, 0, 0, 0)), "daily", 0.8),
                               SitemapEntry("http://a.test/2")]  # unknown changefreq, priority out of range: None


def test_an_index_lists_sitemaps_and_namespaces_are_optional():
    sitemap = parse_sitemap(b"<sitemapindex><sitemap><loc>http://a.test/s1.xml.gz</loc>"
                            b"<lastmod>2024-05-17T10:00:00Z</lastmod></sitemap></sitemapindex>")
    assert sitemap.kind == "sitemapindex" and sitemap.entries[0].loc == "http://a.test/s1.xml.gz"


def test_text_sitemaps_and_things_that_are_not_sitemaps():
    text = b"\xef\xbb\xbfhttp://a.test/x\n\nhttps://a.test/y\r\nnot a url\n"
    assert [e.loc for e in parse_sitemap(text).entries] == ["http://a.test/x", "https://a.test/y"]
    for bad in (b"<html><body>hi</body></html>", b"", b"hello"):
        with pytest.raises(ValueError):
            parse_sitemap(bad)


def test_a_broken_tail_costs_only_its_own_entries_and_entities_are_not_expanded():
    body = (f"<urlset {NS}><url><loc>http://a.test/1</loc></url><url><loc>http://a.test/2</loc></url><url><lo").encode()
    assert [e.loc for e in parse_sitemap(body).entries][:2] == ["http://a.test/1", "http://a.test/2"]
    bomb = (b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><urlset><url><loc>http://a.test/&c;</loc></url></urlset>')
    entries = parse_sitemap(bomb).entries
    assert all(len(e.loc) < 200 for e in entries)


def test_the_50000_url_limit():
    body = (f"<urlset {NS}>" + "".join(f"<url><loc>http://a.test/{i}</loc></url>" for i in range(MAX_URLS + 7))
            + "</urlset>").encode()
    sitemap = parse_sitemap(body)
    assert len(sitemap.entries) == MAX_URLS and sitemap.dropped == 7
    assert sitemap.entries[-1].loc == f"http://a.test/{MAX_URLS - 1}"


def test_gzip_is_unpacked_and_cut_at_50_mb_and_a_bomb_stops_there():
    small = f"<urlset {NS}><url><loc>http://a.test/1</loc></url></urlset>".encode()
    assert read_sitemap(gzip.compress(small)).entries == [SitemapEntry("http://a.test/1")]
    bomb = gzip.compress(small[:-len(b"</urlset>")] + b" " * (MAX_BYTES + 1024))
    body, cut = unpack(bomb)
    assert cut and len(body) == MAX_BYTES
    sitemap = read_sitemap(bomb)
    assert sitemap.cut and [e.loc for e in sitemap.entries] == ["http://a.test/1"]
    assert unpack(b"\x1f\x8bnot gzip at all") == (b"", False)
