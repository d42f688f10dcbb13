"""PDF reading: pypdfium2 (what the crawler uses, crawlproj.content.pdf) against pdfminer.six,
on real PDFs from Debian's packages (every *.pdf and *.pdf.gz under /usr/share/doc).

Each library reads every file in a process of its own: pages per second, CPU milliseconds
per page, peak RSS, and how much of the other's text it found (the share of pdfminer.six's
words that pypdfium2's text has too, and the reverse). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_WORD = re.compile(r"\w{3,}")


def real_pdfs(smoke: bool) -> list[Path]:
    """The Debian PDFs on this machine (in smoke mode, the test suite's few)."""
    if smoke:
        from sandbox import pdfs

        pdfs.ensure_installed()
        return [Path(path) for _, path in pdfs.REAL_PDFS.values()]
    return sorted(p for p in Path("/usr/share/doc").rglob("*") if p.name.endswith((".pdf", ".pdf.gz")))


def load(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def read_with(library: str, body: bytes, max_pages: int) -> tuple[int, str]:
    """(pages read, text) of one PDF."""
    if library == "pypdfium2":
        from crawlproj.content.pdf import read_pdf

        doc = read_pdf(body, max_pages=max_pages, max_chars=10**9)
        return doc.pages_read, doc.text
    from pdfminer.high_level import extract_text
    from pdfminer.pdfpage import PDFPage

    pages = sum(1 for _ in PDFPage.get_pages(io.BytesIO(body), maxpages=max_pages))
    return pages, extract_text(io.BytesIO(body), maxpages=max_pages)


def child(library: str, files: list[str], max_pages: int) -> None:
    """Read ``files`` with ``library``; print its figures and each file's words."""
    pages, cpu, words, failed = 0, 0.0, {}, []
    read_with(library, load(Path(files[0])), 1)  # imports and models, not the files' cost
    for name in files:
        body = load(Path(name))
        started = time.process_time()
        try:
            n, text = read_with(library, body, max_pages)
        except Exception as exc:  # noqa: BLE001 - a library's failure on a real file is a figure
            failed.append(f"{Path(name).name}: {type(exc).__name__}")
            continue
        cpu += time.process_time() - started
        pages += n
        words[name] = sorted(set(_WORD.findall(text.lower())))
    print(json.dumps({"pages": pages, "cpu_s": cpu, "failed": failed, "words": words,
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))


def run(library: str, files: list[Path], max_pages: int) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", library, "--max-pages", str(max_pages),
                           *map(str, files)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the test suite's few PDFs (make test)")
    parser.add_argument("--max-pages", type=int, default=500, help="pages read of each file (PDF_MAX_PAGES)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("files", nargs="*", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts.child, opts.files, opts.max_pages)
        return
    files = real_pdfs(opts.smoke)
    ours, peer = run("pypdfium2", files, opts.max_pages), run("pdfminer.six", files, opts.max_pages)

    def found(a: dict, b: dict) -> float:
        """The share of b's words that a's text has too, over the files both read."""
        both = set(a["words"]) & set(b["words"])
        have = sum(len(set(a["words"][f]) & set(b["words"][f])) for f in both)
        return round(have / max(1, sum(len(b["words"][f]) for f in both)), 3)

    figures = {}
    for name, r in (("pypdfium2", ours), ("pdfminer.six", peer)):
        figures[name] = {"pages": r["pages"], "pages_per_s": round(r["pages"] / max(r["cpu_s"], 1e-9), 1),
                         "cpu_ms_per_page": round(1000 * r["cpu_s"] / max(1, r["pages"]), 2),
                         "peak_rss_mb": r["peak_rss_mb"], "failed": r["failed"]}
    print(json.dumps({
        "bench": "documents", "files": len(files), "max_pages": opts.max_pages,
        "bytes": sum(len(load(f)) for f in files), **figures,
        "speed_ratio": round(figures["pypdfium2"]["pages_per_s"] / max(figures["pdfminer.six"]["pages_per_s"], 1e-9), 1),
        "pypdfium2_has_pdfminer_words": found(ours, peer), "pdfminer_has_pypdfium2_words": found(peer, ours),
        "peak_rss_mb": max(figures["pypdfium2"]["peak_rss_mb"], figures["pdfminer.six"]["peak_rss_mb"]),
    }))


if __name__ == "__main__":
    main()
