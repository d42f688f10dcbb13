"""Accents in older LaTeX PDFs: word recall of the crawler's PDF text against pdftotext's (poppler),
as PDFium gives it ("before": what crawls stored until the accents drawn apart were put back on
their letters, crawlproj.content.pdfaccents, and hyphenated words joined) and as it is stored now.

Recall is the share of pdftotext's words (three letters or more, case folded, counted with
their repeats) that the crawler's text has too; pdftotext puts accents on their letters by
position too, so a word it has and the crawler lacks is, on these files, mostly a word with a
diacritic. Prints one JSON line. Needs pdftotext (poppler-utils); the default files are
sandbox.pdfs.ACCENT_PDFS, taken out of their Debian packages.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_WORD = re.compile(r"\w{3,}")


def words(text: str) -> Counter[str]:
    """Words of three letters or more; NFC first (pdftotext writes an accent it places as a
    combining mark after its letter, which ``\\w`` does not match)."""
    return Counter(word.casefold() for word in _WORD.findall(unicodedata.normalize("NFC", text)))


def recall(reference: Counter[str], text: Counter[str]) -> float:
    """The share of ``reference``'s words (with repeats) that ``text`` has."""
    total = sum(reference.values())
    return sum(min(count, text[word]) for word, count in reference.items()) / total if total else 1.0


def measure(path: Path, body: bytes) -> dict:
    from crawlproj.content.pdf import read_pdf

    reference = words(subprocess.run(["pdftotext", "-enc", "UTF-8", "-", "-"], input=body, capture_output=True,
                                     check=True).stdout.decode("utf-8", "replace"))
    before = words(read_pdf(body, max_chars=10**9, as_read=True).text)
    after = words(read_pdf(body, max_chars=10**9).text)
    return {"file": path.name, "words": sum(reference.values()),
            "recall_before": round(recall(reference, before), 3), "recall_after": round(recall(reference, after), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pdfs", nargs="*", type=Path, help="PDF files (default: sandbox.pdfs.ACCENT_PDFS)")
    parser.add_argument("--smoke", action="store_true", help="the default files (they take seconds)")
    args = parser.parse_args()
    from sandbox import pdfs

    if args.pdfs:
        files = [(path, path.read_bytes()) for path in args.pdfs]
    else:
        files = [(Path(path), pdfs.accent_pdf(name)) for name, (_, path) in pdfs.ACCENT_PDFS.items()]
    measured = [measure(path, body) for path, body in files]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"bench": "pdf_accents", "files": measured, "peak_rss_mb": round(peak_mb, 1)}))


if __name__ == "__main__":
    main()
