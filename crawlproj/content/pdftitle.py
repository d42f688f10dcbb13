"""The title of a PDF that names none in its metadata, from its first page (pure: lines in, a title out).

Most PDFs have no ``Title`` entry, and the first line of their text is often not their title:
a page number (``1``, ``iii``, ``Page 3``, ``- 2 -``), a running head repeated on every page,
or a footnote marker glued to the title. A reader sees the title as the largest text near the
top of the first page; so does :func:`pick_title`, given each line's font size, and it skips
the lines that are page furniture (:func:`is_page_number`, :func:`running_heads`).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence

#: Characters of a title at most.
TITLE_MAX = 200
#: Lines of the first page looked at: a title is near the top.
TITLE_LINES = 15
#: A line this much larger than the page's usual text is a heading.
HEADING_RATIO = 1.15
#: A line at the top or bottom of this share of the pages read (and of 3 at least) is a running head.
RUNNING_SHARE = 0.5

#: A well-formed roman numeral, in one case ("xiv", "XIV"; not "Mix").
_ROMAN = r"(?-i:(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})|" \
         r"(?=[IVXLCDM])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))"
_PAGE_NUMBER = re.compile(
    rf"""[-–—(\[]?\s*(?:(?:page|p\.|pg\.?|seite|página|pagina|strona|s\.)\s*)?(?:\d{{1,5}}|{_ROMAN})\s*[-–—)\]]?
         (?:\s*(?:/|of|von|de|di|z)\s*\d{{1,5}})?""",
    re.IGNORECASE | re.VERBOSE,
)
#: Metadata titles that name the file or the tool, not the document.
_JUNK_TITLE = re.compile(r"(?i)^(?:untitled.*|.*\.(?:dvi|docx?|xlsx?|pptx?|odt|rtf|tex|ps|pdf|indd|qxd)|"
                         r"microsoft (?:word|powerpoint|excel) - .*|slide \d+|title)$")
#: Headings that open a part of a document and never name it.
_GENERIC = re.compile(r"(?i)^(?:[\dIVX]+\.?\s+)?(?:(?:table of )?contents|name|synopsis|abstract|introduction|preface|"
                      r"foreword|index|inhaltsverzeichnis|einleitung|table des matières|sommaire|spis treści|wstęp)$")
#: A manual page's running head (``GIT-DPM(1) GIT-DPM GIT-DPM(1)``) is the best title it has.
_MAN_HEAD = re.compile(r"(\S+\(\w+\))\s.*\s\1")
#: A line under a title that gives its version or release, not more of its name.
_VERSION = re.compile(r"(?i)^\(?(?:version|release|v\d|rev\.?\s*\d|edition)")
_GLUE = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")  # "DocumentationTable": two lines run together


def is_page_number(line: str) -> bool:
    """Whether ``line`` is a page number alone: ``7``, ``iii``, ``Page 3``, ``- 2 -``, ``3 / 10``, ``(4)``."""
    return bool(_PAGE_NUMBER.fullmatch(line.strip()))


def _shape(line: str) -> str:
    """A line with its numbers made alike: a running head reads the same on every page but its number."""
    return re.sub(r"\d+", "#", " ".join(line.split())).lower()


def running_heads(pages: Sequence[str]) -> set[str]:
    """The shapes (:func:`_shape`) of lines at the top or bottom of many of ``pages`` (page texts)."""
    edges: Counter[str] = Counter()
    for page in pages:
        lines = [line for line in page.splitlines() if line.strip()]
        edges.update({_shape(line) for line in lines[:2] + lines[-2:]})
    needed = max(3, RUNNING_SHARE * len(pages))
    return {shape for shape, count in edges.items() if count >= needed}


def usable_metadata_title(title: str | None) -> str | None:
    """The metadata ``Title``, unless it names a file or a tool (``manual.dvi``, ``Untitled``)."""
    title = " ".join((title or "").split())
    return title if title and not _JUNK_TITLE.match(title) else None


def _furniture(line: str) -> bool:
    """A line that is never a title: no letter, a page number, a generic heading."""
    return not any(c.isalpha() for c in line) or is_page_number(line) or bool(_GENERIC.match(line))


def _running_head(line: str, heads: set[str]) -> bool:
    return _shape(line) in heads and not _MAN_HEAD.fullmatch(line)


def _trim(title: str) -> str:
    """A line that runs on past a title's length is two lines glued together (a bad PDF's text):
    cut it where a word runs into the next capitalised one, after its first word."""
    if len(title) > TITLE_MAX // 2:
        first_space = title.find(" ")
        glued = next((m.start() for m in _GLUE.finditer(title) if 0 < first_space < m.start()), None)
        if glued:
            title = title[:glued]
    return title[:TITLE_MAX].strip()


def pick_title(lines: Iterable[tuple[str, float]], heads: set[str] = frozenset()) -> str | None:
    """The title among the first page's ``lines`` (text, font size in points; 0 when unknown).

    Page numbers, lines without a letter and generic headings (``Contents``, ``NAME``) are
    skipped. The first line of the largest size is the title when that size stands out from the
    page's text (a title page, a heading), with the lines of that size right after it (a title
    on two lines), even when the title is also the running head. Otherwise the first line that
    is not a running head (``heads``, from :func:`running_heads`) is. None when there is none.
    """
    lines = [(" ".join(text.split()), size) for text, size in lines]
    sizes = [size for text, size in lines for _ in text if size > 0]
    candidates = [i for i, (text, _) in enumerate(lines) if text and not _furniture(text)][:TITLE_LINES]
    largest = max((lines[i][1] for i in candidates), default=0.0)
    if sizes and largest >= HEADING_RATIO * statistics.median(sizes):
        start = next(i for i in candidates if lines[i][1] == largest)
        title = [lines[start][0]]
        for text, size in lines[start + 1:]:  # the title's next lines: right after it, as large
            if abs(size - largest) > 0.05 or _furniture(text) or _VERSION.match(text) \
                    or len(" ".join(title + [text])) > TITLE_MAX:
                break
            title.append(text)
        return _trim(" ".join(title))
    first = next((lines[i][0] for i in candidates if not _running_head(lines[i][0], heads)), None)
    return _trim(first) if first else None
