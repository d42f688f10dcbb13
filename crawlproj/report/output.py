"""Writing the report: one self-contained HTML file (plots inlined as PNG), plus CSV and JSON."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
from pathlib import Path

from ..geo import world_map_svg

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def _png(draw, height: float = 3.6) -> str:
    fig, ax = plt.subplots(figsize=(11, height))
    draw(ax)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _number(value: float) -> str:
    """A figure for people: whole numbers with separators, others to three significant digits."""
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.3g}"


def _bars(counts: dict, unit: str, category: str) -> str:
    """Horizontal bars, the largest on top, each with its value; labelled axes."""
    items = list(counts.items())[:25][::-1]

    def draw(ax):
        bars = ax.barh([str(k) for k, _ in items], [v for _, v in items], color="#4878a8")
        ax.bar_label(bars, labels=[_number(v) for _, v in items], padding=3, fontsize=8)
        ax.set_xlabel(unit)
        ax.set_ylabel(category)
        ax.tick_params(axis="y", labelsize=8)
        ax.margins(x=0.12)

    return _png(draw, height=max(2.2, 0.28 * len(items) + 1.0))


class _Figures:
    """Numbered figures, each with a caption in plain words; a chart of one bar is said in words."""

    def __init__(self) -> None:
        self.number = 0
        self.html: list[str] = []

    def chart(self, heading: str, caption: str, png: str) -> None:
        self.number += 1
        self.html.append(f"<h2>{html.escape(heading)}</h2><figure><img alt='{html.escape(caption)}' "
                         f"src='data:image/png;base64,{png}'><figcaption>Figure {self.number}. "
                         f"{html.escape(caption)}</figcaption></figure>")

    def counts(self, heading: str, counts: dict, unit: str, category: str, caption: str, alone: str) -> None:
        """Bars of ``counts``; with one category or none, a sentence (``alone``: "{value} {key}")."""
        if len(counts) > 1:
            self.chart(heading, caption, _bars(counts, unit, category))
        elif counts:
            key, value = next(iter(counts.items()))
            self.html.append(f"<h2>{html.escape(heading)}</h2><p>{html.escape(alone.format(value=_number(value), key=key))}</p>")
        else:
            self.html.append(f"<h2>{html.escape(heading)}</h2><p>None.</p>")


def _figures(result: dict) -> _Figures:
    figures = _Figures()
    top = dict(result["pagerank_top"])
    figures.counts("Most important hosts crawled", top, "PageRank (share of the whole crawl's)", "host",
                   f"The {len(top)} crawled hosts (with stored pages) with the highest PageRank over the links "
                   "between hosts (damping 0.85).", "One host: {key}.")
    linked = dict(result.get("pagerank_linked_top", []))
    if linked:
        figures.counts("Most important hosts linked to, not crawled", linked, "PageRank (share of the whole crawl's)",
                       "host", f"The {len(linked)} hosts with the highest PageRank among those the crawl's pages "
                       "link to but that it stored no page of (out of scope, refused, or not reached).",
                       "One host: {key}.")
    figures.counts("Pages by top-level domain", result["by_tld"], "pages", "top-level domain",
                   "Stored pages by the top-level domain of their host.", "All {value} pages are under .{key}.")
    how = ", ".join(f"{_number(n)} {way}" for way, n in result.get("language_by", {}).items())
    figures.counts("Pages by language", result["by_language"], "pages", "language",
                   f"Stored pages by language (how it was decided: {how}).",
                   "All {value} pages are in {key}" + f" (how it was decided: {how}).")
    figures.counts("Pages by server location", result["by_location"], "pages", "location",
                   "Stored pages by the country of their server's address.",
                   "All {value} pages come from servers in one place: {key}.")
    figures.counts("HTTP statuses", result["by_status"], "pages", "status",
                   "Stored pages by the HTTP status their server answered.", "All {value} pages answered {key}.")
    revisit = result.get("revisit")
    if revisit:
        sources = sorted(set(revisit.get("source", [])))  # what each estimate rests on
        by_source = [[h for h, s in zip(revisit["interval_hours"], revisit["source"]) if s == name]
                     for name in sources]
        figures.chart("Revisit intervals", "How often each page will be fetched again, by what its estimate rests "
                      "on (its own changes seen, what the server said, or none yet).", _png(lambda ax: (
                          ax.hist(by_source, bins=40, stacked=True, label=sources), ax.legend(title="estimate from"),
                          ax.set_xlabel("revisit interval (hours)"), ax.set_ylabel("pages"))))
        if revisit["detection"]:
            def detection(ax):
                for name in sources:
                    points = [(x, y) for x, y, s in revisit["detection"] if s == name]
                    if points:
                        ax.scatter(*zip(*points), s=6, label=name)
                ax.set_xscale("log"), ax.legend(title="estimate from"), ax.set_xlabel("revisit interval (hours)")
                ax.set_ylabel("share of revisits that found a change")
            figures.chart("Changes found", "The share of each page's revisits that found it changed, against its "
                          "interval: a page revisited as often as it changes finds a change about every other time.",
                          _png(detection))
        figures.chart("Revisit budget per server", "The time between two revisits that each server's load index "
                      "allows (the revisits a server is given, spread over the day).", _png(lambda ax: (
                          ax.hist(revisit["server_interval_seconds"], bins=30, color="#4878a8"),
                          ax.set_xlabel("interval between revisits (seconds)"), ax.set_ylabel("servers"))))
    return figures


def _cell(value: object) -> str:
    return html.escape(_number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value))


def _table(rows: list[tuple], header: tuple) -> str:
    if not rows:
        return "<p>None.</p>"
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def write_report(result: dict, out: str | Path) -> dict[str, str]:
    """Write report.html, report.json and the CSVs into ``out``; return what went where."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    tables = {
        "pagerank": (sorted(result["pagerank"].items(), key=lambda kv: -kv[1]), ("host", "pagerank")),
        "by_tld": (list(result["by_tld"].items()), ("tld", "pages")),
        "by_language": (list(result["by_language"].items()), ("language", "pages")),
        "language_by": (list(result.get("language_by", {}).items()), ("decided by", "pages")),
        "by_location": (list(result["by_location"].items()), ("location", "pages")),
        "by_status": (list(result["by_status"].items()), ("status", "pages")),
        "errors_by_kind": (list(result["errors_by_kind"].items()), ("kind", "pages")),
        "failed_attempts_by_kind": (list(result["failed_attempts_by_kind"].items()), ("kind", "attempts")),
        "links_per_site": ([(s, c.get("internal", 0), c.get("external", 0))
                            for s, c in result["links_per_site"].items()], ("site", "internal", "external")),
        "static_dynamic": (list(result["static_dynamic"].items()), ("kind", "pages")),
        "duplicate_clusters": ([(c["canonical"], c["copies"]) for c in result["duplicate_clusters"]],
                               ("canonical", "copies")),
        "mirror_pairs": ([tuple(p) for p in result["mirror_pairs"]], ("host", "host", "shared", "share")),
        "render_hosts": ([tuple(r.values()) for r in result["render_hosts"]],
                         ("host", "mode", "comparisons", "gains", "missed", "overreached", "reason")),
        "sitemap_hosts": ([tuple(r.values()) for r in result["sitemap_hosts"]],
                          ("host", "listed", "with_lastmod", "stored")),
        "by_content_type": (list(result["by_content_type"].items()), ("content type", "pages")),
        "documents": ([tuple(r.values()) for r in result["documents"]], ("kind", "outcome", "documents", "pages read")),
        "ai_use": ([tuple(r.values()) for r in result["ai_use"]],
                   ("host", "content_signal", "tdmrep_json", "header_reserved", "tdmrep_reserved")),
    }
    for name, (rows, header) in tables.items():
        path = out / f"{name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(header)
            writer.writerows(rows)
        files[name] = str(path)
    summary = {k: v for k, v in result.items() if k != "pagerank"}
    (out / "report.json").write_text(json.dumps(summary, ensure_ascii=False, indent=1))
    files["json"] = str(out / "report.json")
    sections = [f"<h1>Crawl report</h1><p>{html.escape(result['store'])}: {_number(result['pages'])} pages "
                f"stored from {_number(result['hosts'])} hosts; {_number(result['duplicates'])} of the pages "
                f"are duplicates of others; {_number(sum(result['errors_by_kind'].values()))} pages failed, "
                f"{_number(sum(result['failed_attempts_by_kind'].values()))} attempts in all (retries and "
                "robots.txt included).</p>"]
    sections += _figures(result).html
    places = {k: v for k, v in result["servers_by_location"].items() if v}
    sections.append("<h2>Servers by location</h2>" + (
        world_map_svg(places) if len(places) > 1 else
        f"<p>All {_number(sum(places.values()))} servers are in one place: {html.escape(next(iter(places)))}.</p>"
        if places else "<p>None.</p>"))
    sections.append(f"<h2>JavaScript rendering</h2><p>{_number(result['rendered_pages'])} pages stored as rendered. "
                    "Each host's mode, and the pages seen both ways (static and rendered) it was decided on:</p>")
    headings = {"render_hosts": "", "sitemap_hosts": "<h2>Sitemaps</h2>",
                "by_content_type": "<h2>Pages by content type</h2><p>Stored pages by what they are (by their bytes "
                                   "where the label lies): pages parsed as HTML, PDFs and feeds read, and the "
                                   "rest kept as captures only.</p>",
                "documents": "<h2>Documents</h2><p>PDFs and feeds, by how their reading ended (pages read: "
                             "a feed's entries).</p>",
                "ai_use": "<h2>AI use</h2><p>What publishers say of AI use: robots.txt Content-Signal, "
                          "tdmrep.json, and the stored pages a TDMRep header or rule reserves.</p>",
                "links_per_site": "<h2>Links per site</h2><p>Links from each site's pages to its own pages "
                                  "(internal) and to other sites (external).</p>",
                "static_dynamic": "<h2>Static and dynamic pages</h2><p>Pages whose URL looks generated (a query, "
                                  "a script's extension) against the others.</p>",
                "errors_by_kind": "<h2>Errors</h2><p>Pages whose fetch failed for good, by kind.</p>",
                "failed_attempts_by_kind": "<h2>Failed attempts</h2><p>Every fetch that failed, by kind: "
                                           "retries and robots.txt fetches included (a host whose robots.txt "
                                           "cannot be fetched is not crawled).</p>",
                "duplicate_clusters": "<h2>Duplicate clusters</h2><p>Pages with copies, and how many copies.</p>",
                "mirror_pairs": "<h2>Mirrors</h2><p>Pairs of hosts that share pages, and the share they share.</p>"}
    for name in ("render_hosts", "by_content_type", "documents", "sitemap_hosts", "ai_use", "links_per_site", "static_dynamic", "errors_by_kind",
                 "failed_attempts_by_kind", "duplicate_clusters", "mirror_pairs"):
        rows, header = tables[name]
        sections.append(headings[name] + _table(rows[:50], header))
    style = ("body{font-family:sans-serif;margin:1.5em 3em;line-height:1.4}img{width:100%;max-width:72em}"
             "figure{margin:0 0 1.5em}figcaption{color:#333;font-size:95%}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 8px;font-size:90%;text-align:left}"
             "td:not(:first-child){font-variant-numeric:tabular-nums}svg{max-width:72em}")
    page = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Crawl report</title><style>{style}</style>" \
           f"</head><body>{''.join(sections)}</body></html>"
    (out / "report.html").write_text(page, encoding="utf-8")
    files["html"] = str(out / "report.html")
    return files
