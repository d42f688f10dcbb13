"""The report's page languages measured on real documentation pages (crawlproj.content.language).

The corpus is Debian's documentation packages, read from disk as the report reads pages
from the archive (main text, first 3,000 characters):

* declared: pages whose ``<html lang>`` names their language: Python 3.11, Django and
  Node.js (English) and developers-reference in German, French, Italian, Japanese and Russian;
* undeclared: PostgreSQL's (English), Debian Reference's in ten languages (the file
  name says which: ``ch01.de.html``) and maint-guide in Catalan, which a full run installs
  (``--smoke`` reads what is there); and Debian Reference's Japanese chapters re-encoded as
  Shift_JIS and EUC-JP.

A site is the package (the report groups by host, and each package is a host when
served). Each method's share of pages labelled with the truth (the declared language, or
the file name's) is printed, per part, as one JSON line:

* ``crawlproj``: declared when the text agrees, else langid when sure, else the site's;
* ``langid``: langid alone on the main text, kana meaning Japanese (the report before);
* ``crawlproj_undeclared``: crawlproj's with every declaration removed (the detector and
  the site's language alone).

Debian Reference's French and Portuguese chapters 7 and 8 are untranslated English under
a French or Portuguese file name: every method reads them as English, and the file name
counts that as wrong.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.docsites import DocSite, ensure_installed  # noqa: E402
from sandbox.harness import with_peak_rss  # noqa: E402

from crawlproj.content.language import Language, page_language, settle  # noqa: E402
from crawlproj.content.main_text import main_text  # noqa: E402
from crawlproj.content.page import ParsedPage  # noqa: E402

DECLARED_SITES = {
    "python3.11-doc": "/usr/share/doc/python3.11/html",
    "python-django-doc": "/usr/share/doc/python-django-doc/html",
    "nodejs-doc": "/usr/share/doc/nodejs/api",
    **{f"developers-reference-{lang}": f"/usr/share/doc/developers-reference-{lang}/docs"
       for lang in ("de", "fr", "it", "ja", "ru")},
}
#: The undeclared pages' packages beyond what make test installs: a full run installs them
#: (as bench/memory.py does its sites), so its figures do not depend on what a machine has.
UNDECLARED_PACKAGES = tuple(
    DocSite(f"debref-{lang}", f"debian-reference-{lang}", "/usr/share/debian-reference", f"/index.{lang}.html")
    for lang in ("de", "en", "es", "fr", "id", "it", "ja", "pt", "zh-cn", "zh-tw")
) + (DocSite("maint-guide-ca", "maint-guide-ca", "/usr/share/doc/maint-guide-ca/html", "/index.ca.html"),)
_SUFFIX = re.compile(r"\.([a-z]{2})(?:-[a-z]{2})?\.html$")


def corpus(limit: int) -> list[tuple[str, str, str, str, str | None]]:
    """(site, path, truth, text, declared) of every page of the corpus."""
    pages = []

    def add(site: str, path: Path, truth: str | None, body: bytes, charset: str = "utf-8") -> None:
        declared = ParsedPage(body[:65536].decode(charset, "replace")).declared_language
        if truth is None:
            truth = declared
        if truth:
            pages.append((site, str(path), truth, main_text(body, charset)[:3000], declared))

    for site, root in DECLARED_SITES.items():
        for path in sorted(Path(root).rglob("*.html"))[:limit]:
            add(site, path, None, path.read_bytes())
    for path in sorted(Path("/usr/share/doc/postgresql-doc-15/html").glob("*.html"))[:limit]:
        add("postgresql-doc-15", path, "en", path.read_bytes())
    for path in sorted(Path("/usr/share/debian-reference").glob("*.html")) + sorted(
            Path("/usr/share/doc/maint-guide-ca/html").glob("*.html")):
        match = _SUFFIX.search(path.name)
        if match:
            add(f"{path.parent.name}.{match.group(1)}", path, match.group(1), path.read_bytes())
    for path in sorted(Path("/usr/share/debian-reference").glob("*.ja.html")):
        source = path.read_text(encoding="utf-8")
        for charset in ("Shift_JIS", "EUC-JP"):
            page = source.replace("charset=UTF-8", f"charset={charset}").replace('encoding="UTF-8"', f'encoding="{charset}"')
            add(f"legacy.{charset}", path, "ja", page.encode(charset, errors="xmlcharrefreplace"), charset)
    return pages


def score(pages, labels: dict[int, Language]) -> dict:
    def share(selected):
        right = sum(labels[i].code == pages[i][2] for i in selected)
        return {"pages": len(selected), "correct": round(right / len(selected), 4) if selected else None,
                "wrong": len(selected) - right}

    declared = [i for i, p in enumerate(pages) if p[4]]
    undeclared = [i for i, p in enumerate(pages) if not p[4]]
    japanese = [i for i, p in enumerate(pages) if p[2] == "ja"]
    return {"declared": share(declared), "undeclared": share(undeclared), "japanese": share(japanese),
            "all": share(range(len(pages)))}


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=400, help="pages per site at most (default 400)")
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.limit = 15
    else:
        ensure_installed(UNDECLARED_PACKAGES)
    pages = corpus(args.limit)
    from crawlproj.content.language import detect

    def crawlproj(use_declared: bool) -> dict[int, Language]:
        return settle({i: (site, page_language(text, declared if use_declared else None))
                       for i, (site, _, _, text, declared) in enumerate(pages)})

    langid_only = {i: Language(detect(text).code, "detected") for i, (_, _, _, text, _) in enumerate(pages)}
    result = {
        "bench": "languages",
        "pages": len(pages),
        "languages": dict(Counter(p[2] for p in pages).most_common()),
        "crawlproj": score(pages, crawlproj(True)),
        "langid": score(pages, langid_only),
        "crawlproj_undeclared": score(pages, crawlproj(False)),
    }
    print(json.dumps(with_peak_rss(result)))


if __name__ == "__main__":
    main()
