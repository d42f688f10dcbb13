"""PDF documents: their text, metadata and links (pure: bytes in, a :class:`PdfDocument` out).

Read with pypdfium2 (Google's PDFium, the PDF engine of Chromium, as a wheel), chosen over
pdfminer.six by ``bench/documents.py``: on real PDFs from Debian's packages it reads pages
tens of times faster for the same text, it is C++ fuzzed by Chromium's security team, and
its calls release the GIL. A PDF's links are its link annotations' URI actions (what a
reader clicks) and the URLs written in its text (PDFium's web-link finder), in page order.

The caller bounds the work: this reads at most ``max_pages`` pages and ``max_chars``
characters, and runs in the page helper process under a time and memory cap
(:meth:`crawlproj.content.offload.PageWorkers.run_document`).
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field

from .language import detect
from .pdfaccents import ACCENT_CHARS, Char, compose_accents
from .pdftitle import pick_title, running_heads, usable_metadata_title

PDF_TYPES = ("application/pdf", "application/x-pdf", "application/acrobat", "applications/vnd.pdf")

#: Characters of a document's text its language is detected from.
LANGUAGE_SAMPLE = 20_000

#: Pages whose tops and bottoms tell a running head from a title.
HEAD_PAGES = 20

#: A PDF's header may follow up to 1,024 bytes of junk (PDF 32000-1, annex H): readers accept it.
MAGIC_WINDOW = 1024


def is_pdf(content_type: str | bytes | None, body: bytes) -> bool:
    """Whether a response is a PDF: by its Content-Type, or by its magic bytes whatever its
    Content-Type says (servers label PDFs ``application/octet-stream`` or ``text/plain``)."""
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind in PDF_TYPES:
        return True
    if "html" in kind:  # an HTML page may mention the magic in its first lines: only one that starts with it
        return body[:MAGIC_WINDOW].lstrip()[:5] == b"%PDF-"  # not body.lstrip(): a copy of a 16 MB page
    return b"%PDF-" in body[:MAGIC_WINDOW]


@dataclass
class PdfDocument:
    """What a PDF gave. ``outcome`` is None when it was read whole, else why not: a bound
    (``over_budget/pdf_pages``, ``over_budget/pdf_text``: what was read before it is kept) or
    a refusal (``pdf_encrypted``, ``pdf_malformed``: nothing was read)."""

    kind: str = "pdf"
    pages: int = 0  # pages in the file
    pages_read: int = 0
    text: str = ""  # the pages' text, a form feed between pages
    title: str | None = None
    author: str | None = None
    links: list[str] = field(default_factory=list)
    language: str | None = None  # detected from the text (langid), when it can be trusted
    outcome: str | None = None


def _clean(value: str | None) -> str | None:
    value = " ".join((value or "").split())
    return value or None


def _uri_actions(pdfium, raw, pdf, page) -> list[str]:  # noqa: ANN001 - pypdfium2 objects
    found, pos, link = [], ctypes.c_int(0), raw.FPDF_LINK()
    while raw.FPDFLink_Enumerate(page, ctypes.byref(pos), ctypes.byref(link)):
        action = raw.FPDFLink_GetAction(link)
        if action and raw.FPDFAction_GetType(action) == raw.PDFACTION_URI:
            size = raw.FPDFAction_GetURIPath(pdf, action, None, 0)
            if 0 < size <= 8192:
                buf = ctypes.create_string_buffer(size)
                raw.FPDFAction_GetURIPath(pdf, action, buf, size)
                found.append(buf.value.decode("latin-1"))  # 7-bit ASCII by the standard
    return found


def _text_urls(raw, textpage) -> list[str]:  # noqa: ANN001
    found, links = [], raw.FPDFLink_LoadWebLinks(textpage)
    try:
        for i in range(raw.FPDFLink_CountWebLinks(links)):
            size = raw.FPDFLink_GetURL(links, i, None, 0)
            if 0 < size <= 8192:
                buf = (ctypes.c_ushort * size)()
                raw.FPDFLink_GetURL(links, i, buf, size)
                found.append(bytes(buf)[:-2].decode("utf-16-le", "replace"))
    finally:
        raw.FPDFLink_CloseWebLinks(links)
    return found


def _sized_lines(raw, textpage) -> list[tuple[str, float]]:  # noqa: ANN001
    """The page's lines as PDFium orders its characters, each with its largest font size in points
    (small capitals and logos mix sizes in one title) and without a smaller footnote mark at its
    end (``Manual¹``, ``Octave∗``): what a title is chosen from."""
    lines, chars, count = [], [], raw.FPDFText_CountChars(textpage)
    for i in range(count + 1):
        char = chr(raw.FPDFText_GetUnicode(textpage, i)) if i < count else "\n"
        if char not in "\r\n":
            chars.append((char, 0.0 if char.isspace() else raw.FPDFText_GetFontSize(textpage, i)))
            continue
        if chars:
            size = max(s for _, s in chars)
            while chars and (chars[-1][0].isspace() or (not chars[-1][0].isalpha() and chars[-1][1] < 0.8 * size)):
                chars.pop()
            lines.append(("".join(c for c, _ in chars), round(size, 1)))
        chars = []
    return [(text, size) for text, size in lines if text.strip()]


def _page_chars(raw, textpage) -> list[Char]:  # noqa: ANN001
    """Every character of the page with its box, as :func:`compose_accents` takes them."""
    chars, box = [], [ctypes.c_double() for _ in range(4)]
    left, right, bottom, top = box
    refs = [ctypes.byref(value) for value in box]
    for i in range(raw.FPDFText_CountChars(textpage)):
        char = chr(raw.FPDFText_GetUnicode(textpage, i))
        if char in "\r\n":  # a line break has no box worth asking for
            chars.append(Char(char, None, True))
            continue
        found = raw.FPDFText_GetCharBox(textpage, i, *refs)
        chars.append(Char(char, (left.value, bottom.value, right.value, top.value) if found else None,
                          char == " " and bool(raw.FPDFText_IsGenerated(textpage, i))))
    return chars


_SOFT_HYPHEN = re.compile(r"\x02(?:\r?\n)?(?=(\w?))")


def join_hyphenated(text: str) -> str:
    """``text`` with the words PDFium found hyphenated at a line's end made whole again: it writes
    such a hyphen as U+0002 (``manip\\x02ulation``), which split every one of them in two for a
    search. Before a capital the hyphen was part of the word (``Quasi-Standard``) and stays."""
    return _SOFT_HYPHEN.sub(lambda m: "-" if m.group(1).isupper() else "", text)


def _page_text(raw, textpage, as_read: bool = False) -> str:  # noqa: ANN001
    """The page's text, with the accents older LaTeX draws apart put back on their letters
    (read from the characters' boxes, only on a page that has a spacing accent) and its
    hyphenated words whole; with ``as_read``, as PDFium gives it."""
    text = textpage.get_text_bounded()
    if as_read:
        return text.replace("\r\n", "\n")
    if not ACCENT_CHARS.isdisjoint(text):
        text = compose_accents(_page_chars(raw, textpage))
    return join_hyphenated(text.replace("\r\n", "\n"))


def prepare() -> None:
    """Load PDFium and the language model (a helper does, before its memory cap)."""
    import pypdfium2  # noqa: F401

    detect("a few words of English text to load the model")


def read_pdf(body: bytes, max_pages: int = 500, max_chars: int = 2_000_000, max_links: int = 10_000,
             as_read: bool = False) -> PdfDocument:
    """The text, title, author and links of the PDF in ``body`` (see the module docstring).
    ``as_read``: the text as PDFium gives it, accents apart, hyphenated words in two (what
    crawls stored before; bench/pdf_accents.py's "before")."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    try:
        pdf = pdfium.PdfDocument(body)
    except pdfium.PdfiumError as exc:
        return PdfDocument(outcome="pdf_encrypted" if getattr(exc, "err_code", None) == raw.FPDF_ERR_PASSWORD
                           else "pdf_malformed")
    try:
        doc = PdfDocument(pages=len(pdf))
        meta = pdf.get_metadata_dict(skip_empty=True)
        doc.title, doc.author = usable_metadata_title(meta.get("Title")), _clean(meta.get("Author"))
        texts, chars, links = [], 0, {}
        first_lines: list[tuple[str, float]] | None = None  # of the first page with text, for the title
        for number in range(min(doc.pages, max_pages)):
            page = pdf[number]
            try:
                textpage = page.get_textpage()
                try:
                    text = _page_text(raw, textpage, as_read)
                    if doc.title is None and first_lines is None and any(c.isalpha() for c in text):
                        first_lines = _sized_lines(raw, textpage)
                    for url in _uri_actions(pdfium, raw, pdf, page) + _text_urls(raw, textpage):
                        if len(links) < max_links:
                            links.setdefault(url.strip(), None)
                finally:
                    textpage.close()
            finally:
                page.close()
            doc.pages_read += 1
            chars += bool(texts)  # the form feed before it
            if chars + len(text) > max_chars:
                texts.append(text[:max_chars - chars])
                doc.outcome = "over_budget/pdf_text"
                break
            texts.append(text)
            chars += len(text)
        if doc.outcome is None and doc.pages_read < doc.pages:
            doc.outcome = "over_budget/pdf_pages"
        doc.text = "\f".join(texts)
        doc.links = [url for url in links if url]
        if doc.title is None and first_lines:  # most PDFs have no Title entry: the first page shows it
            doc.title = pick_title(first_lines, running_heads(texts[:HEAD_PAGES]))
        found = detect(doc.text[:LANGUAGE_SAMPLE])
        doc.language = found.code if found.how == "detected" else None
        return doc
    except pdfium.PdfiumError:
        return PdfDocument(outcome="pdf_malformed")
    finally:
        pdf.close()
