"""Exact and near duplicates, English and Japanese (pure)."""

import random

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
    assert len(shingle_hashes(a)) == len(shingles(a))  # one hash per distinct shingle (no collisions here)


def test_exact_near_and_distinct_pages_english_and_japanese():
    rng = random.Random(7)
    index = NearDuplicateIndex(threshold=0.8)
    for lang, make, edit in (("en", english, edit_words), ("ja", japanese, edit_chars)):
        base = make(rng)
        assert index.check_and_add(f"{lang}/base", base) is None
        exact = index.check_and_add(f"{lang}/copy", "  " + base.upper() + " ")  # same text once normalised
        assert exact is not None and exact.kind == "exact" and exact.canonical == f"{lang}/base"
        near = index.check_and_add(f"{lang}/near", edit(base, 0.01, rng))
        assert near is not None and near.kind == "near" and near.canonical == f"{lang}/base", near
        assert near.jaccard >= 0.8
        assert index.check_and_add(f"{lang}/other", make(rng)) is None  # different content
        assert index.check_and_add(f"{lang}/heavily-edited", edit(base, 0.3, rng)) is None
