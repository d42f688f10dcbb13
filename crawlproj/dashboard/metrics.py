"""The crawl's figures in Prometheus's text format, for the dashboard server's ``/metrics``.

Built with prometheus_client from a dashboard snapshot (:func:`crawlproj.dashboard.board.snapshot`,
or :func:`crawlproj.dashboard.cluster.aggregate` for a whole distributed crawl), so the
page and the metrics always say the same. Names follow Prometheus's conventions
(``crawlproj_`` prefix, base units, ``_total`` for counters) and labels are bounded:
status class, error kind, interval rule, frontier tier, estimate bound; never a URL or host.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder


def _counter(name: str, doc: str, value: float | None) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value or 0)


def _gauge(name: str, doc: str, value: float | None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value or 0)


def _labelled(family: CounterMetricFamily | GaugeMetricFamily, values: dict) -> Metric:
    for key, value in sorted((values or {}).items()):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            family.add_metric([str(key)], value)
    return family


def families(view: dict) -> Iterator[Metric]:
    """Every metric of one snapshot."""
    frontier = view.get("frontier") or {}
    dup = view.get("near_duplicates") or {}
    revisit = view.get("revisit") or {}
    renders = view.get("renders") or {}
    store = view.get("store") or {}
    yield _counter("crawlproj_pages", "Pages stored (any status), as the console counts them.", view.get("pages"))
    yield _counter("crawlproj_items", "Items handed to the pipelines (pages stored, errors, skips).", view.get("items"))
    yield _counter("crawlproj_response_bytes", "Bytes of response bodies received.", view.get("bytes"))
    yield _gauge("crawlproj_pages_per_second", "Pages stored per second, recently.", view.get("pages_per_s"))
    yield _labelled(CounterMetricFamily("crawlproj_responses", "Responses by HTTP status class.",
                                        labels=["status_class"]), view.get("statuses"))
    yield _labelled(CounterMetricFamily("crawlproj_errors", "Errors by kind (exceptions, HTTP 4xx/5xx, host failures).",
                                        labels=["kind"]), view.get("errors"))
    yield _labelled(GaugeMetricFamily("crawlproj_frontier_urls", "URLs queued in the frontier, by where they wait.",
                                      labels=["where"]),
                    {"memory": frontier.get("memory"), "disk": frontier.get("disk")})
    yield _labelled(GaugeMetricFamily("crawlproj_frontier_tier_urls", "URLs queued, by frontier tier.",
                                      labels=["tier"]), {"front": frontier.get("front"), "back": frontier.get("back")})
    yield _gauge("crawlproj_frontier_spill_bytes", "Bytes of frontier queues spilled to disk.", frontier.get("spill_bytes"))
    yield _gauge("crawlproj_hosts_active", "Politeness keys with a back queue.", frontier.get("active_hosts"))
    yield _gauge("crawlproj_hosts_due", "Politeness keys due now.", frontier.get("due_hosts"))
    yield _gauge("crawlproj_requests_in_flight", "Requests being fetched.", frontier.get("in_flight"))
    yield _labelled(GaugeMetricFamily("crawlproj_hosts_by_interval_rule", "Hosts by the rule that set their rest.",
                                      labels=["rule"]), view.get("hosts_by_rule"))
    yield _counter("crawlproj_near_duplicates_checked", "Pages checked for near-duplicates.", dup.get("checked"))
    yield _counter("crawlproj_near_duplicates", "Pages found to be exact or near duplicates.", dup.get("duplicates"))
    yield _counter("crawlproj_revisits", "Revisit requests sent.", revisit.get("requests"))
    yield _counter("crawlproj_revisits_changed", "Revisits that found the page changed.", revisit.get("changed"))
    yield _counter("crawlproj_revisits_not_modified", "Revisits answered 304 Not Modified.", revisit.get("not_modified"))
    yield _counter("crawlproj_renders", "Pages rendered in the browser.", renders.get("rendered"))
    yield _counter("crawlproj_render_timeouts", "Renders that ran out of time.", renders.get("timeouts"))
    yield _counter("crawlproj_store_commits", "Store commits.", store.get("commits"))
    yield _gauge("crawlproj_store_pending_rows", "Rows waiting for the store's next commit.", store.get("pending"))
    yield _gauge("crawlproj_store_commit_lag_seconds", "How long rows have waited for a commit.", store.get("commit_lag_s"))
    yield _gauge("crawlproj_deadletters", "Requests in the dead-letter queue.", view.get("deadletters"))
    memory = view.get("memory") or {}
    yield _gauge("crawlproj_resident_memory_bytes", "Resident set of the crawl process(es).", memory.get("rss_bytes"))
    yield _gauge("crawlproj_resident_memory_growth_bytes_per_1000_pages",
                 "Resident bytes gained per 1,000 pages stored after warm-up (should stay near 0).",
                 memory.get("growth_per_1000_pages"))
    yield _gauge("crawlproj_browser_resident_memory_bytes", "Resident set of the rendering browser.",
                 memory.get("browser_rss_bytes"))
    estimate = view.get("estimate")
    if estimate:
        family = GaugeMetricFamily("crawlproj_completion_estimate_seconds",
                                   "Seconds until the crawl finishes: expected, and the low and high ends of its range.",
                                   labels=["bound"])
        for bound in ("seconds", "low", "high"):
            family.add_metric(["expected" if bound == "seconds" else bound], float(estimate[bound]))
        yield family
        yield _gauge("crawlproj_discovery_ratio", "New URLs per page fetched, recently.", estimate.get("discovery"))
    yield _gauge("crawlproj_workers", "Crawl processes in this view.", len(view.get("workers") or []) or 1)
    yield _gauge("crawlproj_finished", "1 once the crawl has finished.", 1 if view.get("finished") else 0)


class _SnapshotCollector:
    def __init__(self, view: dict) -> None:
        self.view = view

    def collect(self) -> Iterator[Metric]:
        return families(self.view)


def metrics_text(view: dict, accept: str | None = None) -> tuple[bytes, str]:
    """The snapshot as a Prometheus exposition, and its content type: the format the scraper's
    ``Accept`` header asks for (OpenMetrics or the text format), chosen by prometheus_client."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(view))
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type
