"""The URL-seen filter's Bloom chain (pure logic, and its file)."""

from crawlproj.frontier.urlseen import GrowingBloom

URLS = [f"http://a.test/{n}" for n in range(300)]


def test_a_url_seen_filter_grown_past_its_capacity_is_read_back_whole(tmp_path):
    """A resumed crawl past URLSEEN_CAPACITY reads every filter of the chain (pybloom-live's
    reader took the rest of the file for the first one, and the crawl failed to start)."""
    bloom = GrowingBloom(100, 0.001)
    assert [bloom.add(u) for u in URLS].count(True) <= 1  # new URLs (a false positive at most)
    assert len(bloom.filters) >= 2 and all(u in bloom for u in URLS) and bloom.add(URLS[0])
    bloom.save(str(tmp_path / "seen.bloom"))
    loaded = GrowingBloom.load(str(tmp_path / "seen.bloom"), 100, 0.001)
    assert len(loaded.filters) == len(bloom.filters) and len(loaded) == len(bloom)
    assert all(u in loaded for u in URLS) and sum(f"http://b.test/{n}" in loaded for n in range(1000)) <= 2


def test_a_link_repeated_page_after_page_is_answered_without_hashing_it_again(monkeypatch):
    bloom = GrowingBloom(100, 0.001)
    for u in URLS:
        bloom.add(u)
    lookups = []
    original = type(bloom.filters[0]).__contains__
    monkeypatch.setattr(type(bloom.filters[0]), "__contains__", lambda f, k: lookups.append(k) or original(f, k))
    for _ in range(50):  # the site's navigation, on page after page
        assert URLS[0] in bloom and bloom.add(URLS[0])
    assert len(lookups) <= 2
    assert "http://b.test/x" not in bloom and "http://b.test/x" not in bloom._known
    assert len(bloom._known) <= GrowingBloom.KNOWN
