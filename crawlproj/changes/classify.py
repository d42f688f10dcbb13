"""What changed between two captures of a page, and whether it matters (pure logic).

A page's change is decided on its main text (the article without the layout: a rotating ad
or a "last built" line in the footer never reaches it), plus its title and the links in its
main content. Noise is normalised away before the two versions are compared:

* dates and times in any common form ("2026-11-27T17:45Z", "Nov 27, 2026", "27/11/2026",
  "17:45:16", "5 minutes ago", week days, time zones);
* tokens: UUIDs, hex strings, long mixes of letters and digits (session ids, cache busters);
* counters: an integer next to a counter word ("viewed 1,234 times", "Visitors: 812") or
  alone on a short line; an integer in prose stays ("needs 4 GB"), and so do numbers with a
  version or price cue ("version 16", "$19.99", "15.4", "v2.1");
* whitespace; and the order of blocks and links (a shuffled "related pages" list is the
  same list).

What is left differing is a meaningful change. A watch's ``ignore`` regexes are cut from both
texts first. :func:`compare` gives the record: similarity of the raw main texts, a unified
diff, links added and removed, the title before and after, and the verdict with its reason.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DAY = r"(?:mon|tue|wed|thu|fri|sat|sun)(?:day|sday|nesday|rsday|urday)?\.?"
_TIME = r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s?[ap]\.?m\.?)?"
_ZONE = r"(?:z|utc|gmt|[ecmp][sd]t|cet|cest|[+-]\d{2}:?\d{2})"
#: Dates and times, most specific first (each match becomes one placeholder).
DATE_PATTERNS = [
    rf"\d{{4}}-\d{{2}}-\d{{2}}(?:[t ]{_TIME})?(?:\s?{_ZONE})?",  # ISO 8601
    rf"\d{{4}}/\d{{1,2}}/\d{{1,2}}(?:,?\s{_TIME})?",  # 2026/11/27
    rf"(?:{_DAY}\s)?{_MONTH}\s+\d{{1,2}}\s+{_TIME}(?:\s{_ZONE})?\s+\d{{4}}",  # ctime: Fri Nov 27 17:45:16 2026
    rf"\d{{1,2}}[./-]\d{{1,2}}[./-]\d{{2,4}}(?:,?\s{_TIME})?",  # 27/11/2026, 27.11.26
    rf"(?:{_DAY},?\s)?{_MONTH}\s\d{{1,2}}(?:st|nd|rd|th)?,?\s\d{{4}}(?:,?\s(?:at\s)?{_TIME})?(?:\s?{_ZONE})?",
    rf"(?:{_DAY},?\s)?\d{{1,2}}(?:st|nd|rd|th)?\s(?:of\s)?{_MONTH},?\s\d{{4}}(?:,?\s(?:at\s)?{_TIME})?(?:\s?{_ZONE})?",
    rf"{_MONTH}\s\d{{4}}",  # November 2026
    rf"{_TIME}(?:\s?{_ZONE})?",
    r"(?:\d+|an?|one|few)\s(?:second|sec|minute|min|hour|hr|day|week|month|year)s?\sago",
    r"\b(?:just now|yesterday|today)\b",
    rf"\b{_DAY}(?=[\s,])",
]
#: Tokens: UUIDs, hex strings of 8+ characters with a digit, long mixes of letters and digits.
TOKEN_PATTERNS = [
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
    r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b",
    r"(?<![\w/.+=-])(?=[\w+=-]*\d)(?=[\w+=-]*[a-z])[\w+=-]{16,}(?![\w/.])",
    r"(?<![\w.])\d{9,}(?![\w.])",  # unix times, request and cache ids
]
#: Words that make the integer beside them a counter.
COUNTER_WORDS = (r"views?|viewed|visits?|visitors?|visited|hits?|times|downloads?|downloaded|comments?|likes?|"
                 r"shares?|reads?|readers|followers?|members?|users? online|online|people|votes?|page ?views|"
                 r"counter|count|requests?|served|impressions?|clicks?|stars?|watchers?|subscribers?|replies|posts")
#: Words (and signs) that make the number beside them content: versions, prices, sizes.
CUE = (r"(?:version|release|v|ver|rev|revision|build|price|cost|costs|fee|total|usd|eur|gbp|chf|jpy|\$|€|£|¥|"
       r"gb|mb|kb|tb|ghz|mhz|%|percent)")
_INT = r"\d{1,3}(?:[,\u202f\u00a0 ]\d{3})+|\d+"
#: The most words (besides numbers) a line may have for an integer on it to be taken as a counter.
SHORT_LINE_WORDS = 4

_flags = re.IGNORECASE
_dates = re.compile("|".join(f"(?:{p})" for p in DATE_PATTERNS), _flags)
_tokens = re.compile("|".join(f"(?:{p})" for p in TOKEN_PATTERNS), _flags)
_int = re.compile(rf"(?<![\w.,$€£¥#/-])(?:{_INT})(?![.,]?\d|[\w%/])")
_cue_before = re.compile(rf"(?:^|\W)(?:{CUE})\s*[:=]?\s*$", _flags)
_cue_after = re.compile(rf"^\s*(?:{CUE})(?!\w)", _flags)
_counter_before = re.compile(rf"\b(?:{COUNTER_WORDS})\s*[:=]?\s*$", _flags)
_counter_after = re.compile(rf"^\s*(?:{COUNTER_WORDS})\b", _flags)
_words = re.compile(r"[^\W\d_]+")
_space = re.compile(r"\s+")
_word = re.compile(r"\w+")
_markdown_link = re.compile(r"\]\((https?://[^)\s]+)")


def _short(line: str) -> bool:
    return len(_words.findall(line)) <= SHORT_LINE_WORDS


def _numbers(line: str) -> str:
    """Counters replaced: integers beside a counter word, or on a short line, without a cue."""
    short = _short(line.replace("<date>", "").replace("<token>", ""))

    def replace(m: re.Match) -> str:
        before, after = line[max(0, m.start() - 30):m.start()], line[m.end():m.end() + 30]
        if _cue_before.search(before) or _cue_after.match(after):
            return m.group()
        if short or _counter_before.search(before) or _counter_after.match(after):
            return "<n>"
        return m.group()

    return _int.sub(replace, line)


def normalise_line(line: str) -> str:
    """``line`` with dates, tokens and counters replaced by placeholders, whitespace collapsed."""
    line = _dates.sub(" <date> ", line)
    line = _tokens.sub(" <token> ", line)
    line = _numbers(line)
    return _space.sub(" ", line).strip()


def normalise(text: str, ignore: Sequence[re.Pattern] = ()) -> list[str]:
    """The text's lines as compared: ``ignore`` matches cut, each line normalised, empty lines dropped."""
    for pattern in ignore:
        text = pattern.sub("", text)
    return [n for n in (normalise_line(line) for line in text.splitlines()) if n]


_path_token = re.compile(r"(?<=[/=;])(?=[\w-]*\d)(?=[\w-]*[a-z])[\w-]{16,}", re.IGNORECASE)


def _link_key(url: str) -> str:
    """A link as compared: its fragment dropped, tokens in its path and tokens and numbers of its
    query normalised."""
    url = _path_token.sub("<token>", url.split("#", 1)[0])
    if "?" in url:
        path, query = url.split("?", 1)
        url = path + "?" + re.sub(r"\d+", "<n>", _tokens.sub("<token>", query))
    return url


def markdown_links(markdown: str) -> list[str]:
    """The absolute links of a main content's Markdown, in order."""
    return _markdown_link.findall(markdown or "")


@dataclass(frozen=True)
class Snapshot:
    """One capture of a page as compared: its title, main text and main-content links."""

    title: str | None
    text: str
    links: tuple[str, ...] = ()


@dataclass(frozen=True)
class Change:
    """What changed from one capture to the next, and whether it is meaningful."""

    meaningful: bool
    reason: str  # why: "text", "title", "links" (meaningful); "noise", "reordered", "identical" (not)
    similarity: float  # of the raw main texts, 0..1
    diff: str  # unified diff of the main text
    links_added: tuple[str, ...] = field(default_factory=tuple)
    links_removed: tuple[str, ...] = field(default_factory=tuple)
    title_before: str | None = None
    title_after: str | None = None
    lines_added: int = 0
    lines_removed: int = 0


def similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """How much of two texts' lines match, weighted by length (1.0: the same), in linear-ish time
    on long pages (lines, not characters, are matched)."""
    total = sum(map(len, a)) + sum(map(len, b))
    if not total:
        return 1.0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    same = sum(sum(len(line) for line in a[block.a:block.a + block.size]) for block in matcher.get_matching_blocks())
    return round(2 * same / total, 4)


def unified_diff(before: str, after: str, label: str = "", context: int = 1) -> tuple[str, int, int]:
    """A unified diff of two texts by line (blank lines dropped), and the lines added and removed."""
    a = [line for line in before.splitlines() if line.strip()]
    b = [line for line in after.splitlines() if line.strip()]
    lines = list(difflib.unified_diff(a, b, f"{label} (before)", f"{label} (after)", n=context, lineterm=""))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return "\n".join(lines), added, removed


def compare(before: Snapshot, after: Snapshot, ignore: Iterable[re.Pattern] = (), label: str = "") -> Change:
    """The change from ``before`` to ``after`` (see the module docstring)."""
    ignore = list(ignore)
    a_lines = [line for line in before.text.splitlines() if line.strip()]
    b_lines = [line for line in after.text.splitlines() if line.strip()]
    diff, added, removed = unified_diff(before.text, after.text, label)
    old_links, new_links = {_link_key(u): u for u in before.links}, {_link_key(u): u for u in after.links}
    links_added = tuple(sorted(new_links[k] for k in new_links.keys() - old_links.keys()))
    links_removed = tuple(sorted(old_links[k] for k in old_links.keys() - new_links.keys()))
    title_a, title_b = (_space.sub(" ", t or "").strip() for t in (before.title, after.title))
    norm_a, norm_b = normalise(before.text, ignore), normalise(after.text, ignore)
    title_changed = normalise_line(_cut(title_a, ignore)) != normalise_line(_cut(title_b, ignore))
    if norm_a != norm_b and sorted(_word.findall(" ".join(norm_a))) != sorted(_word.findall(" ".join(norm_b))):
        reason = "text"  # (the same words in another order, as a shuffled inline list, are not)
    elif title_changed:
        reason = "title"
    elif links_added or links_removed:
        reason = "links"
    elif before.text == after.text and title_a == title_b:
        reason = "identical"
    elif norm_a == norm_b:
        reason = "noise"
    else:
        reason = "reordered"
    return Change(reason in ("text", "title", "links"), reason, similarity(a_lines, b_lines), diff, links_added,
                  links_removed, before.title, after.title, added, removed)


def _cut(text: str, ignore: Iterable[re.Pattern]) -> str:
    for pattern in ignore:
        text = pattern.sub("", text)
    return text
