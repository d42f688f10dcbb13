"""Accents drawn apart from their letters, put back on them (pure: characters and boxes in, text out).

Older LaTeX (Type 1 fonts in the OT1 encoding) has no "ż" or "ü": it draws the letter, then an
accent glyph above or below it. PDFium reads that glyph as a spacing accent (``´``, ``˙``,
``¨``, ``˛``...) and puts it where its position sorts: before the letter (``˙z``), after a space
(``stosowan ˛a``), or at the end of the line (``Miskiewicz ´``, ``Anfuhrungszeichen`` with its
diaeresis at the line's end), so words with diacritics cannot be found. :func:`compose_accents`
puts each accent on the letter its box stands over (or under, for an ogonek or a cedilla) and
writes the precomposed character (NFC), whatever the order of the text.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

#: Spacing accents and modifier letters, and the combining mark each one draws.
ACCENTS = {
    "\u00b4": "\u0301", "\u02ca": "\u0301", "`": "\u0300", "\u02cb": "\u0300", "\u00a8": "\u0308",
    "\u02d9": "\u0307", "\u02db": "\u0328", "\u02c7": "\u030c", "\u02d8": "\u0306", "\u02da": "\u030a",
    "\u02dd": "\u030b", "\u02dc": "\u0303", "~": "\u0303", "^": "\u0302", "\u02c6": "\u0302",
    "\u00b8": "\u0327", "\u00af": "\u0304", "\u02c9": "\u0304",
}
#: Marks drawn under their letter.
BELOW = {"\u0328", "\u0327"}
#: TeX writes \'{\i}: an accent on a dotless i (or j) is an accented i.
DOTLESS = {"\u0131": "i", "\u0237": "j"}
#: Pages whose text has one of these go through :func:`compose_accents`.
ACCENT_CHARS = frozenset(ACCENTS)


class Char(NamedTuple):
    """One character of a page as PDFium reads it: its text, box (left, bottom, right, top, in
    points; None when it has none) and whether PDFium made it up (a space, a line break)."""

    text: str
    box: tuple[float, float, float, float] | None
    generated: bool = False


def _base_of(accent: Char, chars: Sequence[Char], columns: dict[int, list[int]]) -> int | None:
    """The index of the letter ``accent`` is drawn over (or under), if any."""
    left, bottom, right, top = accent.box
    centre = (left + right) / 2
    below = ACCENTS[accent.text] in BELOW
    best, best_distance = None, None
    for index in columns.get(int(centre // 10), ()):
        l, b, r, t = chars[index].box
        height, slack = t - b, 0.15 * (r - l)
        if not (l - slack <= centre <= r + slack) or height <= 0:
            continue
        if below:  # an ogonek or cedilla hangs from the letter's foot
            fits = b - 0.6 * height <= top <= b + 0.5 * height
        else:  # an accent sits on the letter's top half, or just above it
            fits = b + 0.5 * height <= bottom <= t + 0.6 * height
        distance = abs(centre - (l + r) / 2)
        if fits and (best_distance is None or distance < best_distance):
            best, best_distance = index, distance
    return best


def _touching(left: Char, right: Char) -> bool:
    """Whether two letters are one word's: on one line, with no gap a space would need."""
    l1, b1, r1, t1 = left.box
    l2, b2, _, _ = right.box
    height = max(t1 - b1, 1.0)
    return abs(b1 - b2) < 0.3 * height and -0.5 * height < l2 - r1 < 0.25 * height


def compose_accents(chars: Sequence[Char]) -> str:
    """The page's text with each spacing accent put on its letter as one precomposed character.

    An accent with no letter under it, or whose letter has no precomposed form with it, stays
    as it was. A space PDFium made up around an accent it took out of a word goes too, when
    the letters on either side touch (``zale˙zno ´ s´c`` is ``zależność``).
    """
    columns: dict[int, list[int]] = defaultdict(list)
    for index, char in enumerate(chars):
        if char.box and char.text.isalpha() and char.text not in ACCENTS:
            left, _, right, _ = char.box
            for column in range(int(left // 10), int(right // 10) + 1):
                columns[column].append(index)
    out = [char.text for char in chars]
    removed: set[int] = set()
    for index, char in enumerate(chars):
        if char.text not in ACCENTS or char.box is None or char.generated:
            continue
        base = _base_of(char, chars, columns)
        if base is None:
            continue
        letter = out[base]
        composed = unicodedata.normalize("NFC", DOTLESS.get(letter, letter) + ACCENTS[char.text])
        if len(composed) == 1:
            out[base] = composed
            removed.add(index)
    for index in sorted(removed):
        _drop_spaces_around(chars, out, removed, index)
    text = "".join(text for i, text in enumerate(out) if i not in removed)
    # PDFium gives a character past U+FFFF as its two UTF-16 halves: make them one again.
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return unicodedata.normalize("NFC", text)


def _drop_spaces_around(chars: Sequence[Char], out: list[str], removed: set[int], index: int) -> None:
    """Blank the made-up spaces next to a removed accent when the letters around it touch."""
    spaces, left, right = [], index - 1, index + 1
    while left >= 0 and (left in removed or (chars[left].generated and chars[left].text == " ")):
        spaces.append(left)
        left -= 1
    while right < len(chars) and (right in removed or (chars[right].generated and chars[right].text == " ")):
        spaces.append(right)
        right += 1
    if left < 0 or right >= len(chars) or not chars[left].box or not chars[right].box:
        return
    if out[left].isalpha() and out[right].isalpha() and _touching(chars[left], chars[right]):
        for space in spaces:
            out[space] = ""
