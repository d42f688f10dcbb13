"""Main-text extractors compared on speed and quality: resiliparse, trafilatura, selectolax.

Every page of a sandbox web with content families is rendered once (template
hosts: about 20 KB of shared layout around each article, HTML5 landmarks in
English and ``<div>`` soup in Japanese). Each extractor then runs over the
same bodies in this process. Quality is the Jaccard similarity between the
shingles of what it extracted and of the page's true main text (title and
article, known to the sandbox): 1.0 means exactly the article, no layout.
``template_quality`` is the mean over template pages only, where leaving the
layout in would make unrelated pages near-duplicates. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.harness import with_peak_rss  # noqa: E402

from crawlproj.content.main_text import decode, main_text  # noqa: E402
from crawlproj.content.near_duplicates import jaccard, shingles  # noqa: E402
from sandbox.graph import SandboxConfig, SandboxWeb  # noqa: E402


def trafilatura_text(body: bytes, charset: str) -> str:
    import trafilatura

    return trafilatura.extract(decode(body, charset), include_comments=False, include_tables=True) or ""


def selectolax_text(body: bytes, charset: str) -> str:
    """A tag-only rule: drop script, style and the HTML5 layout landmarks; keep <main> or <body>."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(decode(body, charset))
    for node in tree.css("script, style, noscript, nav, header, footer, aside, form"):
        node.decompose()
    root = tree.css_first("main") or tree.css_first("article") or tree.body
    return root.text(separator=" ") if root is not None else ""


EXTRACTORS = {"resiliparse": main_text, "trafilatura": trafilatura_text, "selectolax": selectolax_text}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--pages", type=int, default=25)
    parser.add_argument("--page-bytes", type=int, default=6000, help="article size (template pages add ~20 KB)")
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    opts = parser.parse_args()
    if opts.smoke:
        opts.hosts, opts.pages = 8, 10
    web = SandboxWeb(SandboxConfig(hosts=opts.hosts, pages=opts.pages, page_bytes=opts.page_bytes,
                                   content_mix=True, robots_mix=False, special_pages=False))
    pages = [(h, k) for h in web.hosts for k in range(web.size(h))]
    bodies = [(web.render(h, k)[0], web.specs[h].charset) for h, k in pages]
    truth = [shingles(web.main_text(h, k)) for h, k in pages]
    template = [web.specs[h].content == "template" for h, _ in pages]
    out: dict[str, object] = {"bench": "extractors", "pages": len(pages),
                              "mean_body_bytes": round(statistics.mean(len(b) for b, _ in bodies))}
    for name, extract in EXTRACTORS.items():
        started = time.perf_counter()
        texts = [extract(body, charset) for body, charset in bodies]
        elapsed = time.perf_counter() - started
        quality = [jaccard(shingles(t), s) for t, s in zip(texts, truth)]
        out[name] = {
            "pages_per_s": round(len(pages) / elapsed),
            "quality": round(statistics.mean(quality), 4),
            "template_quality": round(statistics.mean(q for q, t in zip(quality, template) if t), 4),
            "worst": round(min(quality), 4),
        }
    out["speedup_vs_trafilatura"] = round(out["resiliparse"]["pages_per_s"] / out["trafilatura"]["pages_per_s"], 1)
    print(json.dumps(with_peak_rss(out)))


if __name__ == "__main__":
    main()
