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


def _png(draw) -> str:
    fig, ax = plt.subplots(figsize=(7, 3.6))
    draw(ax)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _bar(counts: dict, title: str) -> str:
    items = list(counts.items())[:25]

    def draw(ax):
        ax.bar([str(k) for k, _ in items], [v for _, v in items], color="#4878a8")
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=45, labelsize=8)

    return _png(draw)


def _figures(result: dict) -> list[tuple[str, str]]:
    figures = [
        ("Host PageRank (top)", _bar(dict(result["pagerank_top"]), "Host PageRank, damping 0.85")),
        ("Pages by TLD", _bar(result["by_tld"], "Pages by TLD")),
        ("Pages by language", _bar(result["by_language"], "Pages by language: " + ", ".join(
            f"{n} {how}" for how, n in result.get("language_by", {}).items()))),
        ("Pages by server location", _bar(result["by_location"], "Pages by server location")),
        ("Statuses", _bar(result["by_status"], "Pages by HTTP status")),
    ]
    revisit = result.get("revisit")
    if revisit:
        sources = sorted(set(revisit.get("source", [])))  # what each estimate rests on
        by_source = [[h for h, s in zip(revisit["interval_hours"], revisit["source"]) if s == name]
                     for name in sources]
        figures.append(("Fig. 3: revisit intervals, by the estimate's source", _png(lambda ax: (
            ax.hist(by_source, bins=40, stacked=True, label=sources), ax.legend(), ax.set_xlabel("interval (hours)"),
            ax.set_ylabel("URLs"), ax.set_title("Revisit-interval histogram")))))
        if revisit["detection"]:
            def detection(ax):
                for name in sources:
                    points = [(x, y) for x, y, s in revisit["detection"] if s == name]
                    if points:
                        ax.scatter(*zip(*points), s=6, label=name)
                ax.set_xscale("log"), ax.legend(), ax.set_xlabel("interval (hours)")
                ax.set_ylabel("changes found per revisit"), ax.set_title("Change detection against interval")
            figures.append(("Fig. 4: change detection against interval, by the estimate's source", _png(detection)))
        figures.append(("Fig. 5: server intervals", _png(lambda ax: (
            ax.hist(revisit["server_interval_seconds"], bins=30, color="#4878a8"),
            ax.set_xlabel("1 / load index (seconds)"), ax.set_ylabel("servers"),
            ax.set_title("Server interval distribution")))))
    return figures


def _table(rows: list[tuple], header: tuple) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
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
        "errors_by_kind": (list(result["errors_by_kind"].items()), ("kind", "errors")),
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
    sections = [f"<h1>Crawl report</h1><p>{html.escape(result['store'])}: {result['pages']} pages on "
                f"{result['hosts']} hosts, {result['duplicates']} duplicates.</p>"]
    for title, png in _figures(result):
        sections.append(f'<h2>{html.escape(title)}</h2><img alt="{html.escape(title)}" src="data:image/png;base64,{png}">')
    sections.append("<h2>Servers by location</h2>" + world_map_svg(result["servers_by_location"]))
    sections.append(f"<h2>JavaScript rendering</h2><p>{result['rendered_pages']} pages stored as rendered. "
                    "Each host's mode, and the pages seen both ways (static and rendered) it was decided on:</p>")
    headings = {"render_hosts": "", "sitemap_hosts": "<h2>Sitemaps</h2>",
                "ai_use": "<h2>AI use</h2><p>What publishers say of AI use: robots.txt Content-Signal, "
                          "tdmrep.json, and the stored pages a TDMRep header or rule reserves.</p>"}
    for name in ("render_hosts", "sitemap_hosts", "ai_use", "links_per_site", "static_dynamic", "errors_by_kind",
                 "duplicate_clusters", "mirror_pairs"):
        rows, header = tables[name]
        heading = headings.get(name, f"<h2>{name.replace('_', ' ')}</h2>")
        sections.append(heading + _table(rows[:50], header))
    style = "body{font-family:sans-serif;max-width:60em;margin:auto}table{border-collapse:collapse}" \
            "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}"
    page = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Crawl report</title><style>{style}</style>" \
           f"</head><body>{''.join(sections)}</body></html>"
    (out / "report.html").write_text(page, encoding="utf-8")
    files["html"] = str(out / "report.html")
    return files
