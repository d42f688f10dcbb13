"""Exact and near duplicates, English and Japanese (pure)."""

import random
from pathlib import Path

import pytest

from crawlproj.content.near_duplicates import (
    NearDuplicateIndex, is_cjk, jaccard, shingle_hashes, shingles, signature,
)

WORDS = ("crawler frontier politeness archive index search harvest server host page link anchor robots interval "
         "queue fetch revisit change estimate freshness mirror shingle signature bloom filter").split()
KANA = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをん日本語検索収集"


def english(rng, n=400):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def japanese(rng, n=1200):
    return "".join(rng.choice(KANA) for _ in range(n))


def edit_words(text, fraction, rng):
    words = text.split()
    for i in rng.sample(range(len(words)), int(len(words) * fraction)):
        words[i] = "edited"
    return " ".join(words)


def edit_chars(text, fraction, rng):
    chars = list(text)
    for i in rng.sample(range(len(chars)), int(len(chars) * fraction)):
        chars[i] = "変"
    return "".join(chars)


def test_script_decides_the_shingles():
    assert is_cjk("日本語の文書を検索する") and not is_cjk("a page about crawlers")
    assert shingles("one two three four five six") == {"one two three four five", "two three four five six"}
    assert shingles("日本語の文書") == {"日本語の文", "本語の文書"}  # character 5-grams
    assert shingles("ＣＲＡＷＬＥＲ  Ｓｉｔｅ") == {"crawler site"}  # NFKC, case, spaces


def test_signature_estimates_jaccard():
    rng = random.Random(3)
    a = english(rng)
    b = edit_words(a, 0.05, rng)
    estimate = (signature(a).hashvalues == signature(b).hashvalues).mean()
    assert abs(estimate - jaccard(shingles(a), shingles(b))) < 0.12
    assert len(set(shingle_hashes(a).tolist())) == len(shingles(a))  # one hash per distinct shingle (no collisions here)


def _index(kind, tmp_path, request=None, **shape):
    """The in-memory index, the on-disk one the pipeline uses, or the distributed one in a
    real redis-server: one contract."""
    if kind == "memory":
        return NearDuplicateIndex(**shape)
    if kind == "redis":
        import redis

        from crawlproj.distributed.near_duplicates import RedisNearDuplicateIndex

        server = request.getfixturevalue("redis_server")
        return RedisNearDuplicateIndex(redis.Redis.from_url(server.url), f"t{tmp_path.name}", **shape)
    from crawlproj.content.sqlite_near_duplicates import SqliteNearDuplicateIndex

    return SqliteNearDuplicateIndex(str(tmp_path / "index.db"), **shape)


@pytest.mark.parametrize("kind", ["memory", "sqlite", pytest.param("redis", marks=pytest.mark.slow)])
def test_exact_near_and_distinct_pages_english_and_japanese(kind, tmp_path, request):
    rng = random.Random(7)
    index = _index(kind, tmp_path, request, threshold=0.8)
    for lang, make, edit in (("en", english, edit_words), ("ja", japanese, edit_chars)):
        base = make(rng)
        assert index.check_and_add(f"{lang}/base", base) is None
        exact = index.check_and_add(f"{lang}/copy", "  " + base.upper() + " ")  # same text once normalised
        assert exact is not None and exact.kind == "exact" and exact.canonical == f"{lang}/base"
        near_text = edit(base, 0.01, rng)
        near = index.check_and_add(f"{lang}/near", near_text)
        assert near is not None and near.kind == "near" and near.canonical == f"{lang}/base", near
        assert near.jaccard >= 0.8
        again = index.check_and_add(f"{lang}/near-again", near_text)  # a copy of a copy: of the archived page
        assert again is not None and again.canonical == f"{lang}/base", again
        assert index.check_and_add(f"{lang}/other", make(rng)) is None  # different content
        assert index.check_and_add(f"{lang}/heavily-edited", edit(base, 0.3, rng)) is None


def test_the_index_reloads_from_sqlite_and_a_refetched_page_never_matches_itself(tmp_path):
    from crawlproj.content.index_storage import SqliteIndexStorage

    rng = random.Random(11)
    base, other = english(rng), english(rng)
    first = NearDuplicateIndex(storage=SqliteIndexStorage(str(tmp_path / "index.db")))
    assert first.check_and_add("a", base) is None and first.check_and_add("b", other) is None
    first.storage.close()
    second = NearDuplicateIndex(storage=SqliteIndexStorage(str(tmp_path / "index.db")))
    assert len(second) == 2
    assert second.check_and_add("copy", base) == first.check_and_add("copy", base)
    assert second.check_and_add("copy", base).canonical == "a"
    assert second.check_and_add("a", base) is None  # "a" fetched again: still canonical
    changed = edit_words(base, 0.5, rng)
    assert second.check_and_add("a", changed) is None  # its entry is replaced ...
    assert second.check_and_add("copy2", base) is None  # ... so the old text no longer matches
    second.storage.close()
    with pytest.raises(ValueError, match="permutations"):
        NearDuplicateIndex(num_perm=64, storage=SqliteIndexStorage(str(tmp_path / "index.db")))


@pytest.mark.parametrize("kind", ["memory", "sqlite", pytest.param("redis", marks=pytest.mark.slow)])
def test_short_pages_are_matched_exactly_and_empty_ones_never(kind, tmp_path, request):
    index = _index(kind, tmp_path, request, min_shingles=10)
    assert index.check_and_add("a", "Home") is None
    copy = index.check_and_add("b", " home ")  # identical once normalised: a copy, however short
    assert copy is not None and (copy.canonical, copy.kind) == ("a", "exact")
    assert index.check_and_add("c", "Home page") is None  # too short to sign, and other words: no match
    assert index.check_and_add("d", "") is None and index.check_and_add("e", "  ") is None  # nothing: no copy
    # The same words in the same order, punctuated otherwise: one shingle set (Jaccard 1.0), a near copy.
    assert index.check_and_add("f", "Release notes: version two, for everyone.") is None
    near = index.check_and_add("g", "Release notes - version two for everyone")
    assert near is not None and (near.canonical, near.kind, near.jaccard) == ("f", "near", 1.0)
    assert index.check_and_add("h", "Release notes: version three, for everyone.") is None


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_template_pages_are_not_near_duplicates_but_their_mirrors_and_variants_are(kind, tmp_path):
    from crawlproj.content.main_text import main_text
    from sandbox.graph import SandboxConfig, SandboxWeb

    web = SandboxWeb(SandboxConfig(hosts=20, pages=19, content_mix=True, robots_mix=False))
    index = _index(kind, tmp_path, min_shingles=10)
    matches = {}
    for h in web.hosts:
        for k in range(web.size(h)):
            body, _ = web.render(h, k)
            matches[(h, k)] = index.check_and_add(web.url(h, k), main_text(body, web.specs[h].charset))
    template = [key for key in matches if web.specs[key[0]].content == "template"]
    assert len(template) == 6 * 19 and not [key for key in template if matches[key]]
    assert all(matches[(h, k)] is not None for h in (3, 8, 13, 18) for k in range(19))  # mirrors, EN and JA
    for h in (2, 7):  # variants: members 1..4 (0-1% edited) copy member 0; 30% edited is new content
        for family in (0, 1):
            first = 1 + family * 9
            assert [matches[(h, first + m)] is not None for m in (0, 1, 2, 3, 8)] == [False, True, True, True, False]
            assert matches[(h, first + 1)].kind == "exact"


def test_the_ascii_fast_path_finds_the_same_words_and_hashes():
    import re

    from crawlproj.content.near_duplicates import _word_hashes, words

    text = "it's a_b c-d 3.14 (x) [y] {z} path/to?q=1&r=2 e-mail@host.test #tag ~ `code` \"q\" x\ty"
    assert [w.decode() for w in words(text)] == re.findall(r"\w+", text)
    ascii_words = words(text)
    assert (_word_hashes(ascii_words) == _word_hashes([w.decode() for w in ascii_words])).all()
    assert words("café crème") == ["café", "crème"]  # not ASCII: the regex


def test_the_signature_reads_a_bounded_prefix_and_the_hash_the_whole_text():
    from crawlproj.content.near_duplicates import NearDuplicateIndex

    words = [f"w{i}" for i in range(400_000)]  # 2.7 M characters of distinct words
    text = " ".join(words)
    capped = NearDuplicateIndex(max_chars=200_000)
    a = capped.fingerprint(text)
    b = capped.fingerprint(text[:1_000_000] + " changed " + text[1_000_000:])  # a change past the prefix
    assert a.digest != b.digest and a.length == len(text)  # the hash still sees it: not an exact copy
    assert (a.values == b.values).all()  # the signature: the same prefix, the same estimate
    uncapped = NearDuplicateIndex().fingerprint(" ".join(words[:30_000]))
    assert (uncapped.values == NearDuplicateIndex(max_chars=200_000).fingerprint(" ".join(words[:30_000])).values).all()


def test_the_disk_index_reopens_reads_an_old_file_and_replaces_a_refetched_page(tmp_path):
    from crawlproj.content.index_storage import SqliteIndexStorage
    from crawlproj.content.sqlite_near_duplicates import SqliteNearDuplicateIndex

    rng = random.Random(11)
    base, other, third = english(rng), english(rng), english(rng)
    path = str(tmp_path / "old.db")
    old = NearDuplicateIndex(storage=SqliteIndexStorage(path))  # a file written before the bands were on disk
    assert old.check_and_add("a", base) is None and old.check_and_add("b", other) is None
    old.storage.close()
    index = SqliteNearDuplicateIndex(path)
    assert len(index) == 2
    assert index.check_and_add("copy", edit_words(base, 0.01, rng)).canonical == "a"  # its bands were built
    assert index.check_and_add("a", base) is None  # "a" fetched again: still canonical, never its own copy
    assert index.check_and_add("a", edit_words(base, 0.5, rng)) is None  # its entry is replaced ...
    assert index.check_and_add("copy2", base) is None  # ... so the old text no longer matches
    assert index.check_and_add("c", third) is None
    index.storage.commit()
    index.storage.close()
    again = SqliteNearDuplicateIndex(path)
    assert len(again) == 4 and again.check_and_add("copy3", third).canonical == "c"
    assert again.check_and_add("copy4", "  " + other.upper()).kind == "exact"
    again.close()
    with pytest.raises(ValueError, match="permutations"):
        SqliteNearDuplicateIndex(path, num_perm=64)


def test_the_disk_index_keeps_nothing_per_page_in_memory(tmp_path):
    import tracemalloc

    from crawlproj.content.sqlite_near_duplicates import SqliteNearDuplicateIndex

    rng = random.Random(3)
    index = SqliteNearDuplicateIndex(str(tmp_path / "index.db"))
    memory = NearDuplicateIndex()
    prints = [index.fingerprint(english(rng, 60)) for _ in range(1500)]
    grown = {}
    for name, target in (("disk", index), ("memory", memory)):
        tracemalloc.start()
        for number, print_ in enumerate(prints):
            assert target.add(f"http://h.test/{number}", print_) is None
            if number % 200 == 0:
                index.commit()
        grown[name] = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    assert grown["memory"] > 1500 * 1500  # over 1.5 KB a page held in the process ...
    assert grown["disk"] < 200_000, grown  # ... and none on disk (SQLite's page cache is its own, bounded)


def test_two_real_releases_every_identical_text_and_shingle_set_is_found(tmp_path):
    """Two releases of one real reference (cairomm 1.14 and 1.16), every page through the
    pipeline's signing and the on-disk index, in release order: a page whose main text (or
    shingle set) equals an earlier page's is always recorded as a copy, exact and near detection
    agreeing; same-path pages that differ only by the release number are found as near-duplicates,
    and nearly all that are as close (Jaccard 0.9 or more) with a change of their own."""
    from crawlproj.content.near_duplicates_pipeline import LocalNearDuplicateIndex
    from sandbox.docsites import RELEASE_SITES, ensure_installed
    from sandbox.releases import run_releases

    ensure_installed(RELEASE_SITES)
    index = LocalNearDuplicateIndex(str(tmp_path / "nd.db"), threshold=0.8, num_perm=128, min_shingles=10)
    run = run_releases(index, RELEASE_SITES)
    same_text, same_set = run.copies()
    assert len(run.texts) > 250 and same_text  # the releases share pages that read the same
    assert [u for u in same_text + same_set if run.matches[u] is None] == []
    assert all(run.matches[u].kind == "exact" for u in same_text if run.texts[run.matches[u].canonical] == run.texts[u])
    versioned = run.same_path_pairs(*RELEASE_SITES, at_least=0.9, versions_only=True)
    assert len(versioned) >= 15 and [u for u in versioned if run.matches[u] is None] == []
    # Pages that changed a little more (a member added): MinHash LSH at the threshold's bands and
    # rows (9 x 13) retrieves a pair of Jaccard 0.9 with probability 0.93, 0.92 with 0.976.
    close = run.same_path_pairs(*RELEASE_SITES, at_least=0.9)
    assert len(close) > len(versioned) and sum(run.matches[u] is not None for u in close) >= 0.95 * len(close)


def test_lsh_bands_and_rows_are_datasketchs_choice_and_scipy_loads_only_if_called():
    import subprocess
    import sys

    from datasketch.lsh import _optimal_param

    from crawlproj.content.minhash_lsh import lsh_params

    for num_perm in (16, 64, 128, 256):
        for threshold in [t / 100 for t in range(5, 100, 5)] + [0.33, 0.87, 0.99]:
            assert lsh_params(threshold, num_perm) == _optimal_param(threshold, num_perm, 0.5, 0.5), (threshold,
                                                                                                      num_perm)
    # A fresh process: the index is built without scipy.integrate; datasketch's own quad still
    # works, loading it when called.
    code = ("import sys\n"
            "from crawlproj.content.near_duplicates import NearDuplicateIndex\n"
            "NearDuplicateIndex()\n"
            "loaded = 'scipy.integrate' in sys.modules\n"
            "import datasketch.lsh\n"
            "print(loaded, datasketch.lsh.integrate(lambda s: s, 0.0, 1.0)[0], 'scipy.integrate' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.stdout.split() == ["False", "0.5", "True"], proc.stderr[-2000:]


@pytest.mark.slow  # 2,390 real pages extracted (about 20 s): the full suite's, not the edit-test loop's
def test_the_same_article_in_two_releases_of_a_sphinx_reference_gives_the_same_main_text(tmp_path):
    """The Linux kernel's documentation in two releases (6.1 on Read the Docs' theme, 6.12 on
    alabaster): pages whose article (the text of the area the template marks as the content)
    reads the same in both must give the same main text, whatever the template around it, and
    their copies must be found. The extractor once took different parts of one article when
    the template changed (16,042 characters of one release's page, 11,387 of the other's)."""
    from selectolax.lexbor import LexborHTMLParser

    from crawlproj.content.main_text import extract_main_text
    from crawlproj.content.near_duplicates import normalise
    from crawlproj.content.near_duplicates_pipeline import LocalNearDuplicateIndex
    from sandbox.docsites import SPHINX_RELEASE_SITES, ensure_installed

    def article(html: bytes) -> str | None:
        tree = LexborHTMLParser(html.decode("utf-8", "replace"))
        area = tree.css_first('[role="main"]') or tree.css_first("div.body")
        return normalise(area.text(separator=" ")) if area is not None else None

    ensure_installed(SPHINX_RELEASE_SITES)
    old, new = (Path(site.root) for site in SPHINX_RELEASE_SITES)
    pairs = []
    for path in sorted(old.rglob("*.html")):
        twin = new / path.relative_to(old)
        if twin.exists():
            a, b = path.read_bytes(), twin.read_bytes()
            if article(a) and article(a) == article(b):
                pairs.append((path.relative_to(old), a, b))
    assert len(pairs) > 1000
    index = LocalNearDuplicateIndex(str(tmp_path / "nd.db"), threshold=0.8, num_perm=128, min_shingles=10)
    same = found = 0
    for name, a, b in pairs:
        ta, tb = extract_main_text(a).text, extract_main_text(b).text
        same += normalise(ta) == normalise(tb)
        index.add(f"6.1/{name}", index.fingerprint(ta))
        match = index.add(f"6.12/{name}", index.fingerprint(tb))
        found += match is not None and match.canonical == f"6.1/{name}"
        if normalise(ta) == normalise(tb):  # identical main text is always found, as such
            assert match is not None and match.kind == "exact", name
    assert same >= 0.98 * len(pairs), (same, len(pairs))
    assert found >= 0.99 * len(pairs), (found, len(pairs))
