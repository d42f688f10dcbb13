"""AI-use signals (crawlproj.politeness.ai_signal_rules): pure, from contentsignals.org and W3C TDMRep."""

from __future__ import annotations

import pytest

from crawlproj.politeness.ai_signal_rules import TdmRep, header_signals, parse_content_signal, reserved_uses
from crawlproj.politeness.robots_rules import RobotsRules


def test_content_signal_values():
    assert parse_content_signal("search=yes, ai-train=no,AI-Input = No") == {
        "search": "yes", "ai-train": "no", "ai-input": "no"}
    assert parse_content_signal("ai-train, search=maybe, =no") == {}


def test_content_signal_is_read_from_the_group_that_applies():
    rules = RobotsRules("User-Agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n\n"
                        "User-agent: otherbot\nContent-Signal: ai-input=no\nDisallow: /\n")
    assert rules.content_signals("crawlproj/0.1 (+https://example.test)") == {"search": "yes", "ai-train": "no"}
    assert rules.content_signals("otherbot") == {"ai-input": "no"}
    assert rules.allowed("http://a.test/page", "crawlproj")  # not a rule: nothing disallowed
    assert RobotsRules("User-agent: *\nDisallow: /x\n").content_signals("crawlproj") == {}


def test_tdmrep_headers():
    assert header_signals([("TDM-Reservation", " 1 "), ("tdm-policy", "https://a.test/policy.json"),
                           ("Content-Type", "text/html")]) == {"tdm-reservation": "1",
                                                              "tdm-policy": "https://a.test/policy.json"}
    assert header_signals([("tdm-reservation", "yes")]) == {}


def test_tdmrep_json_rules_first_match_wins_with_robots_txt_patterns():
    rep = TdmRep(b'[{"location": "/p/*.cgi$", "tdm-reservation": 1, "tdm-policy": "https://a.test/p.json"},'
                 b' {"location": "/images/", "tdm-reservation": 1}, {"location": "/", "tdm-reservation": 0},'
                 b' {"location": "/never", "tdm-reservation": 1}, "junk", {"location": "/x", "tdm-reservation": 5}]')
    assert rep.match("/p/2.cgi") == {"tdm-reservation": "1", "tdm-policy": "https://a.test/p.json"}
    assert rep.match("/p/2.cgi?q=1") == {"tdm-reservation": "0"}  # $ ends the path
    assert rep.match("/images/cat.png") == {"tdm-reservation": "1"}
    assert rep.match("/never") == {"tdm-reservation": "0"}  # "/" matched first
    assert rep.reserves_any and len(rep.rules) == 4
    assert TdmRep(b"[]").match("/") == {}
    for bad in (b"{}", b"not json", b"[" + b" " * 70000 + b"]"):
        with pytest.raises(ValueError):
            TdmRep(bad)


def test_reserved_uses():
    assert reserved_uses({"robots.txt:ai-train": "no", "robots.txt:search": "yes"}) == {"ai-train"}
    assert reserved_uses({"header:tdm-reservation": "1"}) == {"tdm", "ai-train", "ai-input"}
    assert reserved_uses({"tdmrep.json:tdm-reservation": "0", "header:tdm-policy": "x"}) == set()
