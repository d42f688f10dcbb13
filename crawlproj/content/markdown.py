"""The main content rendered twice in one walk: plain text and Markdown (pure logic).

Plain text is the content's blocks (paragraphs, headings, list items, table rows, code)
separated by a blank line, whitespace folded as a browser folds it, ``<pre>`` as written.
Markdown (CommonMark, with GitHub's tables and fenced code, and Pandoc's definition lists)
keeps headings, paragraphs, lists, tables, code blocks with their language, emphasis, links
made absolute and images with their alt text. Both leave out what
:func:`~crawlproj.content.main_content.is_boilerplate` names, and the text leaves out the
headline (the page's title is a field of its own).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urljoin

from selectolax.lexbor import LexborNode

from .main_content import INLINE

_LINE_START = re.compile(r"^([#>+-]|\d+[.)])(?=\s)", re.M)
_LANGUAGE = re.compile(r"(?:language|lang|highlight|brush:?)-?\s*([A-Za-z0-9_+#-]+)")
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
#: How deep lists nest in the Markdown before they are flattened.
MAX_LIST_DEPTH = 8


#: Characters no reader sees: soft hyphens, zero-width spaces, word joiners, byte-order marks.
_INVISIBLE_CHARS = str.maketrans("", "", "\u00ad\u200b\u2060\ufeff")


def _fold(text: str) -> str:
    """Whitespace runs folded to one space, as a browser shows them (ends kept as one space),
    and the characters no reader sees left out."""
    if "\u00ad" in text or "\u200b" in text or "\u2060" in text or "\ufeff" in text:
        text = text.translate(_INVISIBLE_CHARS)
    folded = " ".join(text.split())
    if not folded:
        return " " if text else ""
    if text[0].isspace():
        folded = " " + folded
    if text[-1].isspace():
        folded += " "
    return folded


#: What urljoin takes out of a URL (urllib.parse._UNSAFE_URL_BYTES_TO_REMOVE).
_URL_CONTROLS = frozenset("\t\r\n")
_ESCAPES = str.maketrans({c: "\\" + c for c in "\\`*_[]<>"})


def _escape(text: str) -> str:
    return text.translate(_ESCAPES)


class Block:
    """One block of output: its Markdown and its plain text."""

    __slots__ = ("md", "text")

    def __init__(self, md: str, text: str) -> None:
        self.md, self.text = md, text


class Renderer:
    """Renders elements to blocks. ``skip(node)`` says which elements to leave out, with
    everything in them; ``headline`` is the page's title (its heading is left out of the text)."""

    def __init__(self, base_url: str | None, skip: Callable[[LexborNode], bool], headline: str | None = None,
                 markdown: bool = True) -> None:
        self.base_url = base_url or ""
        self._base_dir: str | None = None  # what a plain relative path is joined to (_url)
        self.skip = skip
        self.markdown = markdown
        self.headline = comparable(headline) if headline else None
        self.headline_seen = False
        self.blocks: list[Block] = []
        self.definitions = 0  # how deep in definition lists: a definition's "1.2" is no page counter

    # -- output ------------------------------------------------------------
    def text(self) -> str:
        return "\n\n".join(b.text for b in self.blocks if b.text)

    def md(self) -> str:
        return "\n\n".join(b.md for b in self.blocks if b.md) if self.markdown else ""

    def _url(self, href: str | None) -> str:
        href = (href or "").strip()
        if not href or href.startswith(("javascript:", "data:")):
            return ""
        if href.startswith(("http://", "https://")) and "/." not in href and "?#" not in href and href[-1] not in "?#":
            return href  # what urljoin gives it back, at a fifth of its cost (a farm page's 50,000 links)
        if (href[0] not in "/.#?" and ":" not in href and "/." not in href and "//" not in href and "?#" not in href
                and href[-1] not in "?#" and not _URL_CONTROLS.intersection(href)):
            # A plain relative path (most of a documentation page's links): the base's directory
            # and the path, as urljoin makes them, at a tenth of its cost.
            if self._base_dir is None:
                self._base_dir = self._join("x")[:-1]
            return self._base_dir + href
        return self._join(href)

    def _join(self, href: str) -> str:
        try:
            return urljoin(self.base_url, href)
        except ValueError:
            return ""

    # -- inline flow -------------------------------------------------------
    def inline(self, node: LexborNode) -> tuple[str, str]:
        """(Markdown, text) of ``node``'s children as one flow of inline content."""
        md: list[str] = []
        text: list[str] = []
        self._flow(node, md, text)
        return "".join(md), "".join(text)

    def _flow(self, node: LexborNode, md: list[str], text: list[str]) -> None:
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                value = _fold(child.text_content)
                text.append(value)
                if self.markdown:
                    md.append(_escape(value))
                continue
            if tag == "-comment" or self.skip(child):
                continue
            if tag == "br":
                text.append("\n")
                md.append("  \n")
                continue
            if tag == "img":
                alt = _fold(child.attributes.get("alt") or "").strip()
                src = self._url(child.attributes.get("src"))
                if self.markdown and (alt or src):
                    md.append(f"![{_escape(alt)}]({src})")
                continue
            inner_md: list[str] = []
            inner_text: list[str] = []
            self._flow(child, inner_md, inner_text)
            inner = "".join(inner_text)
            if tag not in INLINE and inner and not inner[-1].isspace():
                inner += " "  # blocks read in a line (a table cell's list items) stay apart
                inner_md.append(" ")
            text.append(inner)
            if not self.markdown:
                continue
            content = "".join(inner_md)
            stripped = content.strip()
            if not stripped:
                md.append(content)
            elif tag == "a":
                href = self._url(child.attributes.get("href"))
                md.append(f"[{stripped}]({href})" if href and not href.startswith("#") else content)
            elif tag in ("em", "i", "cite", "dfn"):
                md.append(_pad(content, f"*{stripped}*"))
            elif tag in ("strong", "b"):
                md.append(_pad(content, f"**{stripped}**"))
            elif tag in ("code", "kbd", "samp", "tt", "var"):
                raw = inner.strip()
                fence = "``" if "`" in raw else "`"
                md.append(_pad(content, f"{fence}{raw}{fence}"))
            elif tag in ("del", "s", "strike"):
                md.append(_pad(content, f"~~{stripped}~~"))
            else:
                md.append(content)

    # -- blocks ------------------------------------------------------------
    def render(self, node: LexborNode, list_depth: int = 0) -> None:
        """Render ``node``'s children as blocks (``node`` itself is a container)."""
        flow: list[LexborNode] = []
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-comment":
                continue
            if tag == "-text" or tag in INLINE:
                flow.append(child)
                continue
            if self.skip(child):
                continue
            self._paragraph(flow)
            flow = []
            self.block(child, list_depth)
        self._paragraph(flow)

    def _paragraph(self, flow: list[LexborNode]) -> None:
        if not flow:
            return
        md: list[str] = []
        text: list[str] = []
        for node in flow:
            if node.tag == "-text":
                value = _fold(node.text_content)
                text.append(value)
                if self.markdown:
                    md.append(_escape(value))
            elif not self.skip(node):
                holder = _Holder(node)
                self._flow(holder, md, text)  # type: ignore[arg-type]
        self._add("".join(md), "".join(text))

    def _add(self, md: str, text: str, prefix: str = "") -> None:
        text = _trim_lines(text)
        if not text and not md.strip():
            return
        if not self.definitions and is_noise_block(text):
            return
        md = _trim_lines(md) if self.markdown else ""
        if md:
            md = _LINE_START.sub(r"\\\1", md) if not prefix else md
        self.blocks.append(Block(prefix + md if md else "", text))

    def block(self, node: LexborNode, list_depth: int = 0) -> None:
        tag = node.tag
        level = HEADINGS.get(tag)
        if level:
            md, text = self.inline(node)
            text = _trim_lines(text).replace("\n", " ")
            if not text:
                return
            if self.headline is not None and not self.headline_seen and comparable(text) == self.headline:
                self.headline_seen = True
                self.blocks.append(Block("#" * level + " " + _trim_lines(md).replace("\n", " "), ""))
                return
            self.blocks.append(Block("#" * level + " " + _trim_lines(md).replace("\n", " "), text))
        elif tag == "p":
            md, text = self.inline(node) if _flat(node) else (None, None)
            if md is None:
                self.render(node, list_depth)
            else:
                self._add(md, text)
        elif tag == "pre":
            self._code(node)
        elif tag == "div" and _is_listing(node):
            self._listing(node)
        elif tag in ("ul", "ol"):
            self._list(node, tag == "ol", list_depth)
        elif tag == "blockquote":
            inner = self._nested(node, list_depth)
            for b in inner:
                b.md = "\n".join("> " + line if line else ">" for line in b.md.split("\n"))
            self.blocks.extend(inner)
        elif tag == "table":
            self._table(node, list_depth)
        elif tag == "dl":
            self._definitions(node, list_depth)
        elif tag == "hr":
            self.blocks.append(Block("---", ""))
        elif tag == "img":
            alt = _fold(node.attributes.get("alt") or "").strip()
            src = self._url(node.attributes.get("src"))
            if self.markdown and src:
                self.blocks.append(Block(f"![{_escape(alt)}]({src})", ""))
        else:
            self.render(node, list_depth)

    def _nested(self, node: LexborNode, list_depth: int) -> list[Block]:
        """The blocks ``node``'s content renders to, taken out of the output."""
        start = len(self.blocks)
        self.render(node, list_depth)
        inner = self.blocks[start:]
        del self.blocks[start:]
        return inner

    def _code(self, node: LexborNode) -> None:
        raw = node.text(deep=True).strip("\n")
        if not raw.strip():
            return
        names, up = [], node
        for _ in range(3):  # Sphinx names the language two levels up: div.highlight-python3 > div > pre
            names.append(up.attributes.get("class") or "")
            up = up.parent
            if up is None:
                break
        code = node.css_first("code")
        if code is not None:
            names.append(code.attributes.get("class") or "")
        names = " ".join(names)
        found = _LANGUAGE.search(names)
        language = found.group(1) if found else ""
        fence = "````" if "```" in raw else "```"
        self.blocks.append(Block(f"{fence}{language}\n{raw}\n{fence}", raw))

    def _listing(self, node: LexborNode) -> None:
        """Code drawn a ``<div class="line">`` a line (Doxygen's), its line numbers left out."""
        lines = []
        for line in node.iter():
            lines.append("".join(part.text(deep=True) for part in line.iter(include_text=True)
                                 if part.tag == "-text" or (part.attributes.get("class") or "") != "lineno").rstrip())
        raw = "\n".join(lines).strip("\n")
        if raw.strip():
            fence = "````" if "```" in raw else "```"
            self.blocks.append(Block(f"{fence}\n{raw}\n{fence}", raw))

    def _list(self, node: LexborNode, ordered: bool, list_depth: int) -> None:
        """One block for the whole list: an item a line (its further blocks indented under it)."""
        number = 0
        start = node.attributes.get("start") if ordered else None
        if start and start.strip().lstrip("-").isdigit():
            number = int(start) - 1
        items_md: list[str] = []
        items_text: list[str] = []
        for item in node.iter():
            if self.skip(item):
                continue
            inner = self._nested(item, list_depth + 1) if item.tag == "li" or list_depth < MAX_LIST_DEPTH else []
            if not inner:
                continue
            number += 1
            marker = f"{number}." if ordered else "-"
            pad = " " * (len(marker) + 1)
            lines: list[str] = []
            for b in inner:
                for line in b.md.split("\n") if b.md else ():
                    lines.append(f"{marker} {line}" if not lines else (pad + line if line else ""))
            if lines:
                items_md.append("\n".join(lines))
            items_text.append("\n".join(b.text for b in inner if b.text))
        if items_md or any(items_text):
            self.blocks.append(Block("\n".join(items_md), "\n".join(t for t in items_text if t)))

    def _definitions(self, node: LexborNode, list_depth: int) -> None:
        self.definitions += 1
        try:
            self._terms(node, list_depth)
        finally:
            self.definitions -= 1

    def _terms(self, node: LexborNode, list_depth: int) -> None:
        for child in node.iter():
            if self.skip(child):
                continue
            if child.tag == "dt":
                md, text = self.inline(child)
                self._add(md, text)
            elif child.tag == "dd":
                inner = self._nested(child, list_depth)
                for i, b in enumerate(inner):
                    lines = b.md.split("\n")
                    b.md = ((":   " if i == 0 else "    ") + lines[0] +
                            "".join("\n    " + line if line else "\n" for line in lines[1:])) if b.md else ""
                self.blocks.extend(inner)
            else:
                self.block(child, list_depth)

    def _table(self, node: LexborNode, list_depth: int) -> None:
        rows = [row for row in node.css("tr") if _owner_table(row) == node.mem_id]
        if not rows or len(node.css("table")) > 1 or _has_blocks(rows):  # (css() counts the node itself)
            # A table for layout (tables inside it, paragraphs in its cells): its cells are read in turn.
            for row in rows or [node]:
                for cell in (row.iter() if rows else [node]):
                    if not self.skip(cell):
                        self.render(cell, list_depth)
            return
        grid: list[list[tuple[str, str]]] = []
        for row in rows:
            cells = []
            for cell in row.iter():
                if cell.tag not in ("td", "th"):
                    continue
                md, text = self.inline(cell)
                cells.append((_trim_lines(md).replace("\n", " ").replace("|", "\\|"),
                              _trim_lines(text).replace("\n", " ")))
            if any(c[1] or c[0] for c in cells):
                grid.append(cells)
        if not grid:
            return
        width = max(len(r) for r in grid)
        text = "\n".join(" | ".join(c[1] for c in r) for r in grid)
        md_rows = ["| " + " | ".join([c[0] for c in r] + [""] * (width - len(r))) + " |" for r in grid]
        md_rows.insert(1, "|" + " --- |" * width)
        self.blocks.append(Block("\n".join(md_rows), text))


class _Holder:
    """One inline node seen as a container of itself (a paragraph's flow starts at a child)."""

    def __init__(self, node: LexborNode) -> None:
        self.node = node

    def iter(self, include_text: bool = True):  # noqa: ANN201 - as LexborNode.iter
        yield self.node


NOISE = frozenset({"advertisement", "advertising", "anzeige", "werbung", "publicité", "publicidad", "pubblicità",
                   "реклама", "广告", "広告", "sponsored", "skip advertisement", "continue reading",
                   "story continues below advertisement", "article continues below advertisement",
                   "scroll to continue with content", "loading", "loading...", "play video", "watch video",
                   "watch now", "listen", "listen now", "click to enlarge", "enlarge this image", "hide caption",
                   "toggle caption", "view gallery", "view slideshow", "close", "menu", "share", "share this",
                   "share this article", "tweet", "email", "print", "show comments", "comments", "reply",
                   "back to top", "top", "weiterlesen", "mehr lesen", "lire la suite", "leer más",
                   "continuer la lecture", "続きを読む"})


def comparable(text: str) -> str:
    """Text as compared for sameness: its words, lower case, one space apart."""
    return " ".join(re.findall(r"\w+", text.lower()))


def _pad(content: str, marked: str) -> str:
    """``marked`` with the spaces ``content`` had at its ends (emphasis markers hug the text)."""
    left = content[: len(content) - len(content.lstrip())]
    right = content[len(content.rstrip()):]
    return left + marked + right


def _trim_lines(text: str) -> str:
    lines = [line.strip() for line in text.split("\n")]
    return "\n".join(line for line in lines if line) if len(lines) > 1 else text.strip()


def _flat(node: LexborNode) -> bool:
    """Whether ``node`` holds inline content only."""
    return all(child.tag in INLINE for child in node.iter())


def _is_listing(node: LexborNode) -> bool:
    """Whether a ``<div>`` holds code a ``<div class="line">`` a line (Doxygen's fragments)."""
    if node.attributes.get("class") != "fragment":
        return False
    first = node.child
    while first is not None and first.tag in ("-text", "-comment"):
        first = first.next
    return first is not None and first.tag == "div" and first.attributes.get("class") == "line"


def _owner_table(row: LexborNode) -> int | None:
    parent = row.parent
    while parent is not None and parent.tag != "table":
        parent = parent.parent
    return parent.mem_id if parent is not None else None


def _has_blocks(rows: list[LexborNode]) -> bool:
    """Whether the table's cells hold several blocks each (a layout table, not data: a data
    table's cell may wrap its text in one paragraph, as Sphinx's do)."""
    for row in rows[:50]:
        for cell in row.iter():
            if len(cell.css("p, ul, ol, div, h1, h2, h3, h4, pre, blockquote")) > 1:
                return True
    return False


#: A short block that only dates the article, signs it, or claims its copyright.
_DATE_WORDS = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|januar|februar|märz|mai|juni|juli|oktober|dezember|janvier|"
    r"février|mars|avril|juin|juillet|août|septembre|octobre|novembre|décembre|enero|febrero|marzo|abril|mayo|"
    r"junio|julio|agosto|septiembre|octubre|noviembre|diciembre|mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|"
    r"thu(?:rs(?:day)?)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?|today|yesterday|heute|gestern|am|pm|a\.m|p\.m|"
    r"gmt|utc|et|est|edt|pt|pst|pdt|ct|cst|cdt|bst|cet|cest|jst|updated?|published|posted|submitted|"
    r"last|on|at|um|le|el|de|à|and|by|aktualisiert|veröffentlicht|publié|publicado|modified|hours?|minutes?|"
    r"ago|read|min|mins|time|reading|uhr|h)\b|\d+|[:/.,|•·–—()+-]", re.I)
_BYLINE = re.compile(r"^(?:by|von|par|por|di|door|av|af|przez|от|автор|written by|posted by|text:?)\s+\S", re.I)
_COPYRIGHT = re.compile(r"©|\(c\)\s*\d{4}|copyright|all rights reserved|alle rechte vorbehalten|"
                        r"tous droits réservés|todos los derechos reservados|tutti i diritti riservati|無断転載", re.I)
_LETTER = re.compile(r"[^\W\d_]")


def is_noise_block(text: str) -> bool:
    """Whether a paragraph is a dateline, a byline, a copyright line or a counter, not prose."""
    size = len(text)
    if not text or size > 250 or "\n" in text:
        return False
    if size <= 40 and text.lower().strip(" .:") in NOISE:
        return True
    if _might_claim_copyright(text) and _COPYRIGHT.search(text):
        return True
    if size > 120:
        return False
    if not _LETTER.search(text):
        return True  # "1", "2/14", "-"
    if size < 80 and _BYLINE.match(text) and text.count(".") <= 2:
        return True
    if size > 80 or not any(c.isdigit() for c in text):
        return False
    return not _LETTER.search(_DATE_WORDS.sub(" ", text))


def _might_claim_copyright(text: str) -> bool:
    """A cheap test before the expression: the marks every copyright line :data:`_COPYRIGHT`
    knows has one of."""
    return ("©" in text or "(c)" in text or "(C)" in text or "opyright" in text or "OPYRIGHT" in text
            or "eserved" in text or "ESERVED" in text or "vorbehalten" in text or "réservés" in text
            or "reservados" in text or "riservati" in text or "無断転載" in text)
