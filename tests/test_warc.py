"""WARC/1.1 archive: round trips through warcio, revisit records, rotation."""

import os
import random

from warcio.archiveiterator import ArchiveIterator

from crawlproj.store.warc import (PROFILE_IDENTICAL, WarcArchive, operator_of, payload_digest, read_response,
                                  warcinfo_fields)

HEADERS = [("Content-Type", "text/html; charset=shift_jis")]


def test_round_trip_revisit_and_random_access(tmp_path):
    archive = WarcArchive(str(tmp_path))
    body = "<html>日本語のページ</html>".encode("shift_jis")
    first = archive.write("http://a.test/", 200, "OK", HEADERS, body)
    other = archive.write("http://a.test/2", 200, "OK", HEADERS, b"<html>other</html>")
    again = archive.write("http://b.test/copy", 200, "OK", HEADERS, body)  # an exact duplicate
    archive.close()
    assert first.revisit_of is None and again.revisit_of is not None
    assert read_response(first) == ("response", "http://a.test/", body)
    assert read_response(other)[2] == b"<html>other</html>"
    assert read_response(again)[:2] == ("revisit", "http://b.test/copy")
    # The whole file reads back with warcio: WARC/1.1, a request for each response.
    with open(first.file, "rb") as fh:
        records = list(ArchiveIterator(fh))
    kinds = [r.rec_type for r in records]
    assert kinds == ["warcinfo", "response", "request", "response", "request", "revisit", "request"]
    assert all(r.rec_headers.protocol == "WARC/1.1" for r in records)
    revisit = records[5]
    assert revisit.rec_headers.get_header("WARC-Profile") == PROFILE_IDENTICAL
    assert revisit.rec_headers.get_header("WARC-Payload-Digest") == payload_digest(body)
    assert revisit.rec_headers.get_header("WARC-Refers-To-Target-URI") == "http://a.test/"
    assert records[1].rec_headers.get_header("WARC-Payload-Digest") == payload_digest(body)


def test_files_rotate_at_the_size_limit(tmp_path):
    bodies = [random.Random(i).randbytes(3000) for i in range(5)]  # incompressible: ~3 kB a record
    archive = WarcArchive(str(tmp_path), max_bytes=2000)
    locations = [archive.write(f"http://a.test/{i}", 200, "OK", HEADERS, body) for i, body in enumerate(bodies)]
    archive.close()
    assert len({loc.file for loc in locations}) == 5  # each file passed 2000 bytes after one capture
    for loc, body in zip(locations, bodies):
        assert read_response(loc)[2] == body
        with open(loc.file, "rb") as fh:  # every file opens with its own warcinfo record
            first = next(iter(ArchiveIterator(fh)))
        assert first.rec_type == "warcinfo"
        assert first.rec_headers.get_header("WARC-Filename") == os.path.basename(loc.file)


def test_warcinfo_names_the_software_the_operator_and_the_robots_policy(tmp_path):
    info = warcinfo_fields("crawlproj/0.1 (+https://crawl.example.org/about; ops@example.org)", "obey", isPartOf="x")
    archive = WarcArchive(str(tmp_path), info=info)
    loc = archive.write("http://a.test/", 200, "OK", HEADERS, b"<html>x</html>")
    archive.close()
    with open(loc.file, "rb") as fh:
        record = next(iter(ArchiveIterator(fh)))
    assert record.rec_headers.get_header("Content-Type") == "application/warc-fields"
    fields = dict(line.split(": ", 1) for line in record.content_stream().read().decode().splitlines() if line)
    assert fields["software"].startswith("crawlproj/") and "Scrapy/" in fields["software"]
    assert fields["format"] == "WARC File Format 1.1"
    assert fields["operator"] == "https://crawl.example.org/about"
    assert fields["http-header-user-agent"].startswith("crawlproj/0.1")
    assert fields["robots"] == "obey" and fields["hostname"] and fields["isPartOf"] == "x"
    assert operator_of("bot (mailto ops@example.org)") == "ops@example.org"


def test_the_standard_warcio_checker_verifies_every_digest(tmp_path):
    import os
    import subprocess
    import sys

    archive = WarcArchive(str(tmp_path))
    loc = archive.write("http://a.test/", 200, "OK", HEADERS, b"<html>x</html>")
    archive.write("http://b.test/", 200, "OK", HEADERS, b"<html>x</html>")
    archive.close()
    checker = os.path.join(os.path.dirname(sys.executable), "warcio")
    out = subprocess.run([checker, "check", "-v", loc.file], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("digest pass") == 4 and "fail" not in out.stdout  # warcinfo, response, two requests
    # cdxj-indexer (what WACZ packaging uses) reads it without a word on stderr.
    indexer = os.path.join(os.path.dirname(sys.executable), "cdxj-indexer")
    out = subprocess.run([indexer, loc.file], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and not out.stderr, out.stderr
    assert len(out.stdout.splitlines()) == 2  # the response and the revisit


def test_revisits_point_to_the_first_capture_across_restarts(tmp_path):
    first = WarcArchive(str(tmp_path))
    original = first.write("http://a.test/", 200, "OK", HEADERS, b"<html>same</html>")
    first.close()
    second = WarcArchive(str(tmp_path))
    revisit = second.write("http://b.test/", 200, "OK", HEADERS, b"<html>same</html>")
    second.close()
    assert revisit.file != original.file  # a restart starts a new file; the old one is never appended to
    assert read_response(revisit)[:2] == ("revisit", "http://b.test/")
    with open(revisit.file, "rb") as fh:
        fh.seek(revisit.offset)
        record = next(iter(ArchiveIterator(fh)))
        assert record.rec_headers.get_header("WARC-Refers-To-Target-URI") == "http://a.test/"
        assert record.rec_headers.get_header("WARC-Refers-To") == revisit.revisit_of


def test_digest_lines_of_older_archives_are_read_into_the_index_once_torn_line_skipped(tmp_path):
    date = "2026-11-01T00:00:00Z"
    with open(tmp_path / "crawlproj.digests", "w") as fh:
        fh.write(f"{payload_digest(b'old')}\t<urn:uuid:1>\thttp://old.test/\t{date}\n")
        fh.write("sha1:TORN\tpartial")  # a kill -9 in the middle of a line
    archive = WarcArchive(str(tmp_path))
    assert len(archive.digests) == 1
    revisit = archive.write("http://new.test/", 200, "OK", HEADERS, b"old")
    archive.close()
    assert revisit.revisit_of == "<urn:uuid:1>"
    assert not (tmp_path / "crawlproj.digests").exists() and (tmp_path / "crawlproj.digests.imported").exists()
