"""The crawl analysis (the Waseda crawler): figures computed from a crawl store (pure; SQLite in, dicts out).

* host-level PageRank (damping 0.85) over the host link graph, by power iteration on a
  sparse matrix; dangling hosts spread their rank evenly;
* pages by TLD, by language (:mod:`.language`: declared when the text agrees, else langid on
  the archived main text, else the site's) and by
  server location (:func:`crawlproj.geo.locate`: the country of a public address from an
  offline table; loopback and private addresses are "local");
* statuses and fetch errors by kind; internal against external links per site; static
  against dynamic pages; near-duplicate clusters and mirror pairs;
* with revisit data, what the paper's Figs. 3-5 plot;
* JavaScript rendering: pages stored as rendered, and each host's rendering mode with the
  evidence it was decided on (:mod:`crawlproj.rendering.hosts`);
* sitemaps: per host, the URLs its sitemaps listed, how many with a ``<lastmod>``, how many stored;
* AI use: per host, what robots.txt's Content-Signal and tdmrep.json say, and the pages a
  TDMRep header or rule reserves (:mod:`crawlproj.politeness.ai_signal_rules`).
"""

from __future__ import annotations

import os
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable

import numpy as np
from scipy import sparse

from ..geo import locate
from ..content.language import Language, declared_language, page_language, settle
from ..content.types import content_family
from ..store.sqlite import SqliteStore
from .. import defaults as settings_defaults
from ..store import beside_store
from ..traps import compile_patterns, is_dynamic


def host_pagerank(edges: list[tuple[str, str, int]], damping: float = 0.85, tol: float = 1e-10,
                  max_iter: int = 200) -> dict[str, float]:
    """PageRank of hosts from (source host, target host, links) edges, self-links left out.

    Edges are weighted by their link counts. The ranks sum to 1.
    """
    hosts = sorted({h for s, t, _ in edges for h in (s, t)})
    if not hosts:
        return {}
    index = {h: i for i, h in enumerate(hosts)}
    n = len(hosts)
    rows, cols, weights = [], [], []
    for source, target, links in edges:
        if source != target:
            rows.append(index[target])
            cols.append(index[source])
            weights.append(float(links))
    matrix = sparse.csc_matrix((weights, (rows, cols)), shape=(n, n))
    out = np.asarray(matrix.sum(axis=0)).ravel()
    dangling = out == 0
    matrix = matrix @ sparse.diags(np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out)))
    rank = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        new = damping * (matrix @ rank + rank[dangling].sum() / n) + (1 - damping) / n
        if np.abs(new - rank).sum() < tol:
            rank = new
            break
        rank = new
    rank /= rank.sum()
    return {h: float(rank[i]) for h, i in index.items()}


def ranked(scores: list[tuple[str, float]], top: int) -> list[tuple[str, float]]:
    """The ``top`` highest, ties by name."""
    return sorted(scores, key=lambda kv: (-kv[1], kv[0]))[:top]


def tld_of(host: str) -> str:
    labels = host.rsplit(".", 1)
    return labels[-1] if len(labels) > 1 and not host.replace(".", "").isdigit() else "(address)"


def page_capture(warc_file: str | None, warc_offset: int | None, charset: str | None,
                 declared: bool = False) -> tuple[str, str | None] | None:
    """(main text, declared language) of the page's WARC capture: None when it was not
    archived, or is a revisit record (a duplicate, whose language is its original's). The
    declared language is read only when asked (``declared``): for stores from before the
    pages table's ``language``; else None."""
    if not warc_file or warc_offset is None or not os.path.exists(warc_file):
        return None
    from ..content.main_text import main_text
    from ..content.page import ParsedPage
    from ..store.warc import WarcLocation, read_capture

    kind, _, http, body = read_capture(WarcLocation(warc_file, warc_offset))
    if kind != "response" or not body:
        return None
    language = None
    if declared:
        header = http.get_header("Content-Language") if http else None
        language = ParsedPage(body[:65536].decode(charset or "utf-8", "replace")).declared_language or \
            declared_language(None, None, header)  # the markup is at the start
    return main_text(body, charset)[:3000], language


def languages(q, tick: Callable[[int], object] | None = None) -> dict[str, Language]:
    """url -> :class:`~crawlproj.content.language.Language` (:func:`~crawlproj.content.language.page_language`
    on the archived page, then :func:`~crawlproj.content.language.settle`). A duplicate, not
    archived, takes the language it declares (checked against the text it shares with its
    canonical page), else its canonical page's. Reading every page
    back from the archive is the report's long step: ``tick(1)`` per page."""
    duplicates = {url: (canonical, kind) for url, canonical, kind in q("SELECT url, canonical, kind FROM duplicates")}
    canonicals = {canonical for canonical, _ in duplicates.values()}
    pages, declared, texts = {}, {}, {}
    for url, host, title, f, o, c, language in q(
            "SELECT url, host, title, warc_file, warc_offset, charset, language FROM pages"):
        # language: the code the page declared, "" for none; NULL only in stores from before it was recorded.
        capture = page_capture(f, o, c, declared=language is None)
        text, markup = capture if capture else (title or "", None)
        declared[url] = language or markup
        pages[url] = (host, page_language(text, declared[url]))
        if url in canonicals:  # a duplicate's declaration is checked against this text
            texts[url] = text
        if tick is not None:
            tick(1)
    lang = settle(pages)
    for url, (canonical, kind) in duplicates.items():
        if canonical not in lang:
            continue
        # A duplicate's declaration is checked against its canonical page's main text: fully
        # for an exact duplicate, which has that text; a near duplicate's differs, perhaps
        # in just the translated part, so there only another script overrules it.
        own = page_language(texts.get(canonical, ""), declared.get(url), own_text=kind == "exact")
        lang[url] = own if own.how == "declared" else lang[canonical]
    return lang


def _language_figures(lang: dict[str, Language]) -> dict:
    return {"by_language": dict(Counter(x.code for x in lang.values()).most_common()),
            "language_by": dict(Counter(x.how for x in lang.values()).most_common())}


def analyse(store_path: str, dynamic_patterns: list[str] | None = None, top: int = 20,
            tick: Callable[[int], object] | None = None) -> dict:
    """Every figure of the report from the store at ``store_path`` (see the module docstring);
    ``tick(1)`` once per page (see :func:`languages`)."""
    store = SqliteStore(store_path)
    q = store.query
    patterns = compile_patterns(dynamic_patterns or settings_defaults.DYNAMIC_URL_PATTERNS)
    pages = q("SELECT url, host, status, title FROM pages")
    hosts = dict(q("SELECT name, ip FROM hosts"))
    # A page linking a page counts once, whatever the anchors (the links table keeps each anchor).
    edges = q("""SELECT source_host, target_host, COUNT(*) FROM
                 (SELECT DISTINCT source, target, source_host, target_host FROM links) GROUP BY 1, 2""")
    rank = host_pagerank(edges)
    page_hosts = {h for _, h, _, _ in pages}
    where = {h: locate(hosts.get(h)).label for h in page_hosts}  # one lookup per server, not per page
    per_site: dict[str, Counter] = defaultdict(Counter)
    for source_host, target_host, links in edges:
        per_site[source_host]["internal" if source_host == target_host else "external"] += links
    statuses = Counter(str(status) for _, _, status, _ in pages)
    errors = Counter(dict(q("SELECT kind, COUNT(*) FROM fetch_errors GROUP BY kind")))
    # Every failed attempt, retries and robots.txt fetches included: a crawl whose hosts never
    # answered has no failed page (nothing was asked past robots.txt) but many failed attempts.
    attempts = Counter(dict(q("SELECT kind, SUM(count) FROM host_errors GROUP BY kind")))
    clusters = q("SELECT canonical, COUNT(*) FROM duplicates GROUP BY canonical ORDER BY 2 DESC, 1")
    result = {
        "store": os.path.abspath(store_path),
        "pages": len(pages),
        "hosts": len(page_hosts),
        # The hosts crawled, ranked apart from those only linked to (never fetched, or nothing stored).
        "pagerank_top": ranked([(h, r) for h, r in rank.items() if h in page_hosts], top),
        "pagerank_linked_top": ranked([(h, r) for h, r in rank.items() if h not in page_hosts], top),
        "pagerank": rank,
        "by_tld": dict(Counter(tld_of(h) for _, h, _, _ in pages).most_common()),
        **_language_figures(languages(q, tick)),
        "by_location": dict(Counter(where[h] for _, h, _, _ in pages).most_common()),
        "servers_by_location": dict(Counter(where[h] for h in page_hosts if h in hosts)),
        "by_status": dict(statuses.most_common()),
        "errors_by_kind": dict(errors.most_common()),
        "failed_attempts_by_kind": dict(attempts.most_common()),
        "links_per_site": {site: dict(c) for site, c in sorted(per_site.items())},
        "static_dynamic": dict(Counter("dynamic" if is_dynamic(u, patterns) else "static" for u, *_ in pages)),
        "duplicate_clusters": [{"canonical": c, "copies": n} for c, n in clusters],
        "duplicates": sum(n for _, n in clusters),
        "mirror_pairs": [list(p) for p in store.mirror_pairs()],
        "revisit": revisit_figures(beside_store(store_path, "revisit")),
        "rendered_pages": q("SELECT COUNT(*) FROM pages WHERE rendered = 1")[0][0],
        "render_hosts": [dict(zip(("host", "mode", "comparisons", "gains", "missed", "overreached", "reason"), row))
                         for row in q("""SELECT host, mode, comparisons, gains, missed, overreached, reason
                                         FROM render_hosts ORDER BY mode != 'rule' DESC, comparisons DESC, host""")],
        "sitemap_hosts": [dict(zip(("host", "listed", "with_lastmod", "stored"), row)) for row in q("""
            SELECT s.host, COUNT(*), COUNT(s.lastmod), COUNT(p.url) FROM sitemap_urls s
            LEFT JOIN pages p ON p.url = s.url GROUP BY s.host ORDER BY 2 DESC, 1""")],
        "ai_use": ai_use_rows(q),
        "by_content_type": content_type_counts(q),
        "documents": [dict(zip(("kind", "outcome", "documents", "pages_read"), row)) for row in q(
            """SELECT kind, COALESCE(outcome, 'read'), COUNT(*), SUM(pages_read) FROM documents
               GROUP BY 1, 2 ORDER BY 1, 3 DESC""")],
    }
    store.conn.close()
    return result


def content_type_counts(q) -> dict[str, int]:
    """Stored pages (2xx) by family (:func:`crawlproj.content.types.content_family`): by their
    Content-Type, or by what they were read as (a PDF or a feed under another label)."""
    counts = Counter(kind or content_family(content_type, b"") for content_type, kind in q(
        """SELECT p.content_type, d.kind FROM pages p LEFT JOIN documents d ON d.url = p.url
           WHERE p.status BETWEEN 200 AND 299"""))
    return dict(counts.most_common())


def ai_use_rows(q) -> list[dict]:
    """Per host: its robots.txt Content-Signal, whether its tdmrep.json reserves anything, and the
    stored pages a tdm-reservation header or a tdmrep.json rule reserves."""
    hosts: dict[str, dict] = defaultdict(lambda: {"content_signal": "", "tdmrep_json": "", "header_reserved": 0,
                                                  "tdmrep_reserved": 0})
    for host, name, value in q("SELECT subject, name, value FROM ai_signals WHERE source = 'robots.txt' "
                               "ORDER BY subject, name"):
        row = hosts[host]
        row["content_signal"] = " ".join(filter(None, (row["content_signal"], f"{name}={value}")))
    for host, value in q("SELECT subject, value FROM ai_signals WHERE source = 'tdmrep.json' "
                         "AND name = 'any-reservation'"):
        hosts[host]["tdmrep_json"] = "reserves some" if value == "1" else "reserves none"
    for host, source, n in q("""SELECT p.host, a.source, COUNT(*) FROM ai_signals a JOIN pages p ON p.url = a.subject
                                WHERE a.name = 'tdm-reservation' AND a.value = '1' GROUP BY 1, 2"""):
        hosts[host]["header_reserved" if source == "header" else "tdmrep_reserved"] += n
    return [{"host": h, **row} for h, row in sorted(hosts.items())]


def revisit_figures(path: str) -> dict | None:
    """Figs. 3-5 of Tamura and Kitsuregawa from a revisit queue: interval histogram, detection against interval,
    server intervals (1 / load index), each page with what its estimate rests on (dates, yes/no
    visits, or its neighbours' prior). None when there is no revisit data."""
    if not os.path.exists(path):
        return None
    conn = sqlite3.connect(path)
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(revisit)")}
        source = "source" if "source" in columns else "''"  # a queue from before sources
        rows = conn.execute(f"SELECT host, interval, visits, changes, {source} FROM revisit").fetchall()
    except sqlite3.OperationalError:
        return None
    finally:
        conn.close()
    if not rows:
        return None
    names = {"dates": "dates", "visits": "yes/no visits", "prior": "prior"}
    load: Counter[str] = Counter()
    for host, interval, *_ in rows:
        load[host] += 1.0 / interval
    return {
        "urls": len(rows),
        "interval_hours": [r[1] / 3600 for r in rows],
        "source": [names.get(r[4], "none yet") for r in rows],  # per URL, beside interval_hours
        "by_source": dict(Counter(names.get(r[4], "none yet") for r in rows).most_common()),
        # (interval hours, changes found per revisit, source)
        "detection": [(r[1] / 3600, r[3] / (r[2] - 1), names.get(r[4], "none yet")) for r in rows if r[2] > 1],
        "server_interval_seconds": sorted(1.0 / v for v in load.values()),
    }
