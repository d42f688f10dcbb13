from protego import Protego

from crawlproj.politeness.robots import DISALLOW_ALL, MAX_ROBOTS_BYTES, robots_body


def test_rfc9309_status_rules():
    body = b"User-agent: *\nDisallow: /x\n"
    assert robots_body(200, body) == body
    assert robots_body(404, body) == b"" and robots_body(401, body) == b""  # 4xx: no rules
    assert robots_body(503, body) == DISALLOW_ALL and robots_body(500, b"") == DISALLOW_ALL
    assert not Protego.parse(DISALLOW_ALL.decode()).can_fetch("http://h.test/", "crawlproj")


def test_oversized_robots_is_cut():
    huge = b"User-agent: *\n" + b"Disallow: /a\n" * 100_000
    assert len(robots_body(200, huge)) == MAX_ROBOTS_BYTES
