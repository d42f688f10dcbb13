"""Every ``Request.meta`` key crawlproj sets or reads, named once with what it carries.

Components pass per-request facts to each other through ``meta`` (as Scrapy's own do:
``depth``, ``redirect_urls``); a key no list names is one a reader cannot find the writer of.
tests/test_structure.py checks that each key the package uses is listed here. Keys that
name a fact about one download (latency, slot, retry count) are cleared when a render
decision replays a request (crawlproj.downloadermiddlewares.render_decision).
"""

from __future__ import annotations

#: crawlproj's own keys.
OURS: dict[str, str] = {
    # politeness and the frontier
    "frontier_handed": "the frontier handed this request out once (a retry or a redirect is not new)",
    "politeness_key": "the frontier key (host, or the IP group) the fetch's verdict goes back to",
    "cgi_hops": "query-string hops from the last page without one (the CGI hop limit)",
    "cgi_redirects_counted": "redirects already counted into cgi_hops",
    "deadletter_retry": "a request sent again from the dead-letter queue (`scrapy deadletters retry`)",
    # crawl ordering
    "opic_share": "the OPIC cash a link carries from its page",
    "opic_cash": "the OPIC cash a waiting URL holds when it is handed out",
    "backlinks": "backlinks counted for a waiting URL (distributed entries carry it)",
    "backlink_weight": "what a link counts as a backlink (more from another host)",
    "topic_score": "a focused crawl's relevance of the link",
    "irrelevant_hops": "links followed since the last relevant page (topical tunnelling)",
    # what a request is for
    "revisit": "an incremental-mode revisit of a stored page",
    "revisit_overdue": "how far past its due time a revisit is (its priority)",
    "sitemap_level": "a sitemap's depth in a sitemap index (0: a robots.txt's or a seed's)",
    "requisite": "a page requisite's kind (stylesheet, script, image, ...): archived, never a page",
    "depth_reset": "a request whose depth does not grow from its page's (requisites)",
    "ai_signals": "the AI-use signals (robots.txt Content-Signal, TDMRep) that apply to the page",
    # rendering
    "render": "False: never render (robots.txt, sitemaps, requisites); True: render",
    "render_reason": "why a page is rendered (rule, host mode, evidence sample, request)",
    "render_judged": "what the rule judged a sampled page to be, for the evidence",
    "render_static": "a sampled page's static links, text length and encoding, for comparison",
    "render_static_document": "the static fetch's document, handed to the render",
    "render_document": "a document the render should load instead of fetching it",
    "render_subrequest": "a request the browser made during a render",
    "render_offline": "an evidence render made after the static page was stored",
    "render_missed": "what an offline render could not load, fetched then",
    "render_prefetch": "URLs to fetch before an offline render is tried again",
    "render_prefetch_rounds": "how many times an offline render has been retried so",
    "render_prefetched": "the answers fetched for an offline render",
    "render_loaded": "the responses the browser loaded (archived with requisites)",
    "render_server_seconds": "the server's time in a render's sub-requests (the interval's duration rule)",
    "render_server_done": "when the server answered a render's last sub-request",
}

#: Scrapy's and scrapy-playwright's keys that crawlproj sets or reads (their meaning is theirs).
THEIRS = frozenset({
    "depth", "dont_obey_robotstxt", "dont_redirect", "dont_retry", "download_latency", "download_maxsize",
    "download_slot", "handle_httpstatus_all", "max_retry_times", "redirect_ttl", "redirect_urls", "retry_times",
    "playwright", "playwright_context", "playwright_include_page", "playwright_page", "playwright_page_methods",
})
