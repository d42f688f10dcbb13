"""Hand-made PDFs for the tests: an ordinary one with links, and hostile ones (encrypted,
truncated, malformed, a compression bomb, a page tree that contains itself, very many pages).

Real PDFs come from Debian's packages (:data:`REAL_PDFS`); these fill what no package
ships: links to the sandbox's own hosts, and files built to hurt a reader.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from pathlib import Path

#: Real PDFs from Debian packages (``scripts/system-deps.sh`` installs them): package, path.
REAL_PDFS = {
    "libtasn1.pdf": ("libtasn1-doc", "/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    "bzip2-manual.pdf": ("bzip2-doc", "/usr/share/doc/bzip2/manual.pdf.gz"),
    "shared-mime-info-spec.pdf": ("shared-mime-info", "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
}

#: Real PDFs whose Title is missing or names a file, and whose first line is not their title:
#: a page number ("1"), a running head, a file name (``scripts/system-deps.sh`` installs them).
TITLE_PDFS = {
    # dblatex's run-on text: "1", then the title glued to the table of contents.
    "docbook-xsl-reference.pdf": ("docbook-xsl-doc-pdf", "/usr/share/doc/docbook-xsl-doc-pdf/doc/reference.pdf.gz"),
    # Texinfo: "1" at the top of the title page.
    "dmalloc.pdf": ("libdmalloc-dev", "/usr/share/doc/libdmalloc-dev/dmalloc.pdf.gz"),
    # LaTeX with a running head (version and date) above the title on every page.
    "fasta_guide.pdf": ("fasta3-doc", "/usr/share/doc/fasta3/fasta_guide.pdf"),
    # Title "eci_doc.dvi": the file it was made from.
    "ecasound_eci_doc.pdf": ("ecasound-doc", "/usr/share/doc/ecasound/ecasound_eci_doc.pdf.gz"),
}


#: Real PDFs of older LaTeX (Type 1 fonts, OT1), whose accents are glyphs of their own: Polish
#: and German. Taken out of their packages, not installed (:func:`sandbox.docsites.extracted`).
ACCENT_PDFS = {
    # A Polish thesis template: "zale˙zno ´ s´c", "najcz˛esciej", "Miskiewicz ´" as PDFium reads it.
    "wkmgr1.pdf": ("texlive-lang-polish", "/usr/share/doc/texlive-doc/latex/przechlewski-book/wkmgr1.pdf"),
    # german.sty's manual: each umlaut's diaeresis at its line's end ("Anfuhrungszeichen").
    "gerdoc.pdf": ("texlive-lang-german", "/usr/share/doc/texlive-doc/generic/german/gerdoc.pdf"),
}


def accent_pdf(name: str) -> bytes:
    """The bytes of one of :data:`ACCENT_PDFS`."""
    from .docsites import extracted

    return extracted(*ACCENT_PDFS[name]).read_bytes()


def ensure_installed(files: dict[str, tuple[str, str]] = REAL_PDFS) -> None:
    """Install the packages of ``files`` (:data:`REAL_PDFS`, :data:`TITLE_PDFS`...) when root;
    otherwise fail naming the command."""
    from .docsites import ensure_files

    ensure_files(files)


def real_pdf(name: str) -> bytes:
    """The bytes of one of the real PDFs (unpacked when the package ships it gzipped)."""
    data = Path({**TITLE_PDFS, **REAL_PDFS}[name][1]).read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def assemble(objects: list[bytes], root: int = 1, trailer_extra: bytes = b"") -> bytes:
    """A PDF file of ``objects`` (object i + 1 is ``objects[i]``), with a correct xref table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, root, trailer_extra, xref)
    return bytes(out)


def _stream(data: bytes, compress: bool = False) -> bytes:
    if compress:
        data = zlib.compress(data, 9)
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def text_pdf(pages: list[str], links: list[str] = (), title: str | None = None,
             author: str | None = None) -> bytes:
    """A PDF of one text line per page; ``links`` are link annotations (URI actions) on page 1."""
    objects: list[bytes] = [b"", b""]  # 1: catalog, 2: pages (filled in below)
    font = len(objects) + 1
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for number, text in enumerate(pages):
        content = len(objects) + 1
        objects.append(_stream(b"BT /F1 12 Tf 72 720 Td (%s) Tj ET" % _escape(text).encode("latin-1")))
        annots = []
        for i, url in enumerate(links if number == 0 else ()):
            annots.append(len(objects) + 1)
            objects.append(b"<< /Type /Annot /Subtype /Link /Rect [72 %d 300 %d] /Border [0 0 0] "
                           b"/A << /S /URI /URI (%s) >> >>" % (600 - 20 * i, 612 - 20 * i, url.encode("ascii")))
        page = len(objects) + 1
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                       b"/Resources << /Font << /F1 %d 0 R >> >> /Annots [%s] >>"
                       % (content, font, b" ".join(b"%d 0 R" % a for a in annots)))
        kids.append(page)
    info = b""
    if title or author:
        objects.append(b"<< " + (b"/Title (%s) " % _escape(title).encode("latin-1") if title else b"")
                       + (b"/Author (%s) " % _escape(author).encode("latin-1") if author else b"") + b">>")
        info = b"/Info %d 0 R " % len(objects)
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    return assemble(objects, trailer_extra=info)


def _rc4(key: bytes, data: bytes) -> bytes:
    s, j = list(range(256)), 0
    for i in range(256):
        j = (j + s[i] + key[i % len(key)]) % 256
        s[i], s[j] = s[j], s[i]
    out, i, j = bytearray(), 0, 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + s[i]) % 256
        s[i], s[j] = s[j], s[i]
        out.append(byte ^ s[(s[i] + s[j]) % 256])
    return bytes(out)


_PAD = bytes.fromhex("28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a")


def encrypted_pdf(user_password: bytes = b"secret", owner_password: bytes = b"owner") -> bytes:
    """A PDF no one can read without its user password (standard security handler, RC4 40-bit,
    revision 2; PDF 32000-1, 7.6.3, algorithms 2-4)."""
    file_id = hashlib.md5(b"crawlproj").digest()
    owner = _rc4(hashlib.md5((owner_password + _PAD)[:32]).digest()[:5], (user_password + _PAD)[:32])
    permissions = -4
    key = hashlib.md5((user_password + _PAD)[:32] + owner + permissions.to_bytes(4, "little", signed=True)
                      + file_id).digest()[:5]
    user = _rc4(key, _PAD)
    hexed = lambda b: b"<" + b.hex().encode() + b">"  # noqa: E731
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
               b"<< /Filter /Standard /V 1 /R 2 /O %s /U %s /P %d >>" % (hexed(owner), hexed(user), permissions)]
    return assemble(objects, trailer_extra=b"/Encrypt 4 0 R /ID [%s %s] " % (hexed(file_id), hexed(file_id)))


def bomb_pdf(inflated: int = 1 << 31) -> bytes:
    """A one-page PDF whose content stream is ``inflated`` bytes of spaces, deflated to about a
    thousandth of that (a reader that inflates it whole needs that much memory)."""
    compressor, chunk, parts = zlib.compressobj(9), b" " * (1 << 20), []
    for _ in range(inflated // len(chunk)):
        parts.append(compressor.compress(chunk))
    data = b"".join(parts) + compressor.flush()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"]
    return assemble(objects)


def recursive_pdf() -> bytes:
    """A PDF whose page tree contains itself (a Pages node that is its own kid)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 1000000 >>",
               b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R 3 0 R] /Count 1000000 >>"]
    return assemble(objects)


def many_pages_pdf(pages: int) -> bytes:
    """An ordinary PDF of ``pages`` short pages."""
    return text_pdf([f"page {i + 1} of a long report" for i in range(pages)])


MALFORMED_PDF = b"%PDF-1.7\n" + bytes(range(256)) * 64  # the magic, then nothing a reader can use
