"""Budgets per registered domain (crawlproj.frontier.domains), without Twisted or Scrapy."""

from crawlproj.frontier.domains import DRAIN_BATCH, DomainBudget
from crawlproj.politeness.keys import registered_domain


def test_registered_domains_follow_the_public_suffix_list_offline():
    assert registered_domain("a.b.example.co.uk") == "example.co.uk"
    assert registered_domain("WWW.Example.com.") == "example.com"
    assert registered_domain("me.blogspot.com") == "me.blogspot.com"  # a private suffix: its own registrant
    assert registered_domain("s17.farm.test") == "farm.test"  # no listed suffix: the last two labels
    assert registered_domain("127.0.0.1") == "127.0.0.1"


def test_hosts_past_the_domain_budget_are_not_admissible_and_pages_are_counted():
    budget = DomainBudget(max_hosts=3, max_pages=5)
    for i in range(3):
        assert budget.admissible(f"s{i}.farm.test") and budget.admit(f"s{i}.farm.test")
    assert not budget.admissible("s3.farm.test")  # a fourth host of farm.test
    assert budget.admissible("s0.farm.test") and budget.admissible("other.test")
    assert budget.admit("s0.farm.test") and budget.admit("s1.farm.test")
    assert not budget.admit("s2.farm.test")  # five URLs of farm.test admitted already
    assert budget.admit("other.test")


def test_hosts_past_the_active_limit_wait_in_the_overflow_and_come_in_as_hosts_run_dry():
    budget = DomainBudget(active_hosts=2)
    assert budget.queue("a.farm.test", "a1") == ["a1"]
    assert budget.queue("b.farm.test", "b1") == ["b1"]
    assert budget.queue("a.farm.test", "a2") == ["a2"]  # an open host takes more
    assert budget.queue("c.farm.test", "c1") == [] and budget.queue("d.farm.test", "d1") == []
    assert budget.queue("a.farm.test", "a3") == ["a3"]
    assert budget.queue("x.other.test", "x1") == ["x1"]  # another domain is not held up
    assert budget.overflowed == 2
    assert budget.queue("e.farm.test", "e1", force=True) == ["e1"]  # a retry opens its host regardless
    assert budget.taken("e.farm.test") == []  # a and b still open: two, not fewer
    assert budget.taken("b.farm.test") == ["c1"]  # b ran dry: c comes in; d waits for one more
    assert budget.taken("a.farm.test") == [] and budget.taken("a.farm.test") == []  # a has a3 left
    assert budget.taken("a.farm.test") == ["d1"] and budget.overflowed == 0
    assert budget.taken("c.farm.test") == []
    assert budget.open == {"d.farm.test": 1, "x.other.test": 1}


def test_a_drain_is_bounded_however_long_the_overflow():
    budget = DomainBudget(active_hosts=1)
    budget.queue("a.farm.test", "a")
    for i in range(10 * DRAIN_BATCH):
        budget.queue("b.farm.test", f"b{i}")
    came = budget.taken("a.farm.test")
    assert len(came) == DRAIN_BATCH and budget.overflowed == 9 * DRAIN_BATCH
    assert len(budget.taken("b.farm.test")) == DRAIN_BATCH  # b is open: the next batch follows
