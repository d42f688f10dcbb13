"""Two real releases of one reference through near-duplicate detection (for a test and the bench).

Every page of each release, in release order, goes through the pipeline's own path (main
text, :func:`~crawlproj.content.near_duplicates_pipeline.sign_page`, the index's ``add``); the ground truth
is each page's normalised main text and its shingle set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crawlproj.content.budget import PageBudget
from crawlproj.content.main_text import extract_main_text
from crawlproj.content.near_duplicates import Match, jaccard, normalise, shingles
from crawlproj.content.near_duplicates_pipeline import sign_page
from .docsites import DocSite, html_files


@dataclass
class ReleaseRun:
    """Each page's normalised main text and what the index said of it, by URL, in crawl order."""

    texts: dict[str, str] = field(default_factory=dict)
    matches: dict[str, Match | None] = field(default_factory=dict)

    def copies(self) -> tuple[list[str], list[str]]:
        """Pages whose main text equals an earlier page's, and (beside those) pages whose shingle
        set does: the pairs no detector may miss."""
        first_text: dict[str, str] = {}
        first_set: dict[frozenset, str] = {}
        same_text, same_set = [], []
        for url, text in self.texts.items():
            if not text:
                continue
            if text in first_text:
                same_text.append(url)
            else:
                first_text[text] = url
                key = frozenset(shingles(text))
                if key in first_set:
                    same_set.append(url)
                first_set.setdefault(key, url)
        return same_text, same_set

    def same_path_pairs(self, old: DocSite, new: DocSite, at_least: float, versions_only: bool = False) -> list[str]:
        """The newer release's pages whose same-path page in the older one has a Jaccard of
        at least ``at_least`` with it (exact, from the shingle sets); ``versions_only``: of
        those, the pages that differ from their twin by version numbers only."""
        out = []
        for url, text in self.texts.items():
            twin = url.replace(new.name, old.name, 1)
            if url.startswith(f"http://{new.name}/") and text and self.texts.get(twin) and \
                    jaccard(shingles(text), shingles(self.texts[twin])) >= at_least and \
                    (not versions_only or version_only(text, self.texts[twin])):
                out.append(url)
        return out


_VERSION = re.compile(r"\d+(?:\.\d+)+")


def version_only(text: str, twin: str) -> bool:
    """Whether two texts differ only by version numbers (1.14.2 for 1.16.0, and the like)."""
    return _VERSION.sub("V", text) == _VERSION.sub("V", twin)


def run_releases(index, sites: tuple[DocSite, ...], budget: PageBudget | None = None) -> ReleaseRun:  # noqa: ANN001
    """Every page of ``sites`` through ``index`` (an index of the pipeline's, empty)."""
    budget = budget or PageBudget()
    run = ReleaseRun()
    for site in sites:
        for path in html_files(site):
            body, url = path.read_bytes(), f"http://{site.name}/{path.relative_to(site.root)}"
            run.texts[url] = normalise(extract_main_text(body, None, budget).text)
            _, print_ = sign_page(body, None, budget, index.fingerprint_of)
            run.matches[url] = index.add(url, print_)
    return run
