"""The live dashboard: served by the crawl process (:mod:`.extension`), its page, its figures and /metrics."""
