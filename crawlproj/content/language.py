"""A page's language: what the page declares when its text agrees, else a detector, else its site's (pure).

Measured on real documentation (Debian's python3.11-doc, Django, Node.js, PostgreSQL,
debian-reference in ten languages, developers-reference in five, maint-guide in Catalan;
bench/languages.py), langid alone labels 3% of pages wrongly, nearly all of them pages
with little prose: an index page ("Index – A") reads as Maltese, a page of code as Polish
or Basque. So:

1. **Declared.** ``<html lang>`` (or ``xml:lang``), else ``<meta http-equiv=Content-Language>``,
   else the ``Content-Language`` header (one language only), is taken when the text's
   script agrees with it (:func:`agrees`): a page declared ``en`` whose letters are nearly
   all kana is not English (templates declare a language whatever the content).
2. **Detected**, when nothing usable is declared: langid, trusted when the text has at
   least :data:`MIN_LETTERS` letters and langid's normalised probability is at least
   :data:`MIN_PROBABILITY`. Any kana means Japanese (kanji alone reads as Chinese to langid,
   and Chinese is never written with kana).
3. **The site's**, for a page too short or too mixed to tell: the language most of the
   host's declared or confidently detected pages have (:func:`settle`); with none, the
   detector's best guess.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache

MIN_LETTERS = 100
MIN_PROBABILITY = 0.9
MIN_SCRIPT_SHARE = 0.2

_KANA = re.compile(r"[\u3040-\u30ff]")
_LETTER = re.compile(r"[^\W\d_]")
_LANG_TAG = re.compile(r"^([a-z]{2,3})(?:[-_]|$)")

#: Scripts by first code point of each range, for :func:`script_shares`.
_SCRIPT_RANGES = (
    (0x0000, "latin"), (0x0370, "greek"), (0x0400, "cyrillic"), (0x0530, "armenian"), (0x0590, "hebrew"),
    (0x0600, "arabic"), (0x0780, "other"), (0x0900, "devanagari"), (0x0980, "bengali"), (0x0A00, "other"),
    (0x0E00, "thai"), (0x0E80, "other"), (0x10A0, "georgian"), (0x1100, "hangul"), (0x1200, "other"),
    (0x1E00, "latin"), (0x1F00, "greek"), (0x2000, "other"), (0x3040, "kana"), (0x3100, "other"),
    (0x3400, "han"), (0xA000, "other"), (0xAC00, "hangul"), (0xD7B0, "other"), (0xF900, "han"),
    (0xFB00, "other"), (0xFF66, "kana"), (0xFFA0, "other"),
)
_RANGE_STARTS = [start for start, _ in _SCRIPT_RANGES]

#: The scripts a language is written in; a language not listed is written in Latin letters.
_LANGUAGE_SCRIPTS = {
    "ja": {"kana", "han"}, "zh": {"han"}, "ko": {"hangul", "han"}, "el": {"greek"}, "hy": {"armenian"},
    "he": {"hebrew"}, "yi": {"hebrew"}, "ar": {"arabic"}, "fa": {"arabic"}, "ur": {"arabic"}, "ps": {"arabic"},
    "hi": {"devanagari"}, "mr": {"devanagari"}, "ne": {"devanagari"}, "sa": {"devanagari"}, "bn": {"bengali"},
    "th": {"thai"}, "ka": {"georgian"}, "sr": {"cyrillic", "latin"}, "kk": {"cyrillic", "latin"},
    **{lang: {"cyrillic"} for lang in ("ru", "uk", "be", "bg", "mk", "ky", "mn", "tg", "tt", "ba", "cv")},
}


@dataclass(frozen=True)
class Language:
    """A page's language and how it was decided: ``declared``, ``detected``, ``guessed`` (too
    little text to be sure), or ``site`` (a guess :func:`settle` replaced by its site's language)."""

    code: str
    how: str


def declared_language(html_lang: str | None, meta_lang: str | None, header: str | None) -> str | None:
    """The primary language subtag a page declares, lower-cased (``en-US`` -> ``en``), or None."""
    for value in (html_lang, meta_lang, header):
        if not value:
            continue
        tags = [t.strip().lower() for t in value.split(",") if t.strip()]
        if len(tags) != 1:
            continue  # "en, de" says the page is for both: no single language
        match = _LANG_TAG.match(tags[0])
        if match:
            return match.group(1)
    return None


def _script(char: str) -> str:
    from bisect import bisect_right

    return _SCRIPT_RANGES[bisect_right(_RANGE_STARTS, ord(char)) - 1][1]


def script_shares(text: str) -> tuple[dict[str, float], int]:
    """Each script's share of the text's letters, and how many letters there are."""
    counts = Counter(_script(c) for c in _LETTER.findall(text))
    total = sum(counts.values())
    return {script: n / total for script, n in counts.items()}, total


def agrees(language: str, text: str, own_text: bool = True) -> bool:
    """Whether the text can be in the declared language: at least :data:`MIN_SCRIPT_SHARE` of
    its letters in the language's script, and no other script but Latin as much. Pages mix
    scripts: a Russian page quotes English UI strings, and Japanese technical writing is
    26-66% Latin letters (commands, names), so Latin letters say little. Kana or Cyrillic in
    that share do: a template that declares ``en`` over Japanese text is overruled. Little
    text contradicts nothing. Not ``own_text`` (the text of a page nearly the same, as a near
    duplicate's canonical page), only another script contradicts: the two may differ just in
    the translated part."""
    shares, letters = script_shares(text)
    if letters < 20:
        return True
    expected = _LANGUAGE_SCRIPTS.get(language, {"latin"})
    if own_text and sum(shares.get(script, 0.0) for script in expected) < MIN_SCRIPT_SHARE:
        return False
    return not any(share >= MIN_SCRIPT_SHARE for script, share in shares.items()
                   if script not in expected and script not in ("latin", "other"))


@lru_cache(maxsize=1)
def _identifier():
    from langid.langid import LanguageIdentifier, model

    return LanguageIdentifier.from_modelstring(model, norm_probs=True)


def detect(text: str) -> Language:
    """langid's answer on the text, ``detected`` when it can be trusted, else ``guessed``."""
    if not text or not text.strip():
        return Language("unknown", "guessed")
    if _KANA.search(text):
        return Language("ja", "detected")
    code, probability = _identifier().classify(text)
    letters = len(_LETTER.findall(text))
    return Language(code, "detected" if letters >= MIN_LETTERS and probability >= MIN_PROBABILITY else "guessed")


def page_language(text: str, declared: str | None, own_text: bool = True) -> Language:
    """Steps 1 and 2 of the module docstring for one page (``own_text``: see :func:`agrees`)."""
    if declared and agrees(declared, text, own_text):
        return Language(declared, "declared")
    return detect(text)


def settle(pages: dict[str, tuple[str, Language]]) -> dict[str, Language]:
    """Step 3: url -> language, from url -> (host, language) of steps 1-2; a guessed page
    takes the language most of its host's sure pages have."""
    sure: dict[str, Counter] = defaultdict(Counter)
    for host, language in pages.values():
        if language.how != "guessed":
            sure[host][language.code] += 1
    settled = {}
    for url, (host, language) in pages.items():
        if language.how == "guessed" and sure.get(host):
            language = Language(sure[host].most_common(1)[0][0], "site")
        settled[url] = language
    return settled
