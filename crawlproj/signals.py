"""crawlproj's own signals (sent with ``crawler.signals``)."""

#: The store committed a batch. Arguments: ``urls``: the URLs it completed (each page's
#: requested and final URL, and URLs recorded as fetch errors). A URL counts as completed
#: only from this moment (the frontier's journal listens to it).
pages_committed = object()

#: A request the frontier handed out ended with no page to store, and never will have one
#: (a render sample that showed nothing more, a prefetch for one). Arguments: ``request``.
#: It counts as completed at once: the distributed frontier stops holding it pending, and a
#: resumed crawl does not queue it again.
request_settled = object()

#: A robots.txt answer arrived. Arguments: ``host``, ``status`` (int, or None when unreachable),
#: ``crawl_delay`` (seconds, or None), ``duration`` (seconds the fetch took, or None).
robots_fetched = object()

#: The downloader is done with a request (response, failure, or a new request).
#: Arguments: ``request``, ``result``.
fetch_finished = object()

#: A download the frontier did not hand out (robots.txt, fetched from inside a middleware)
#: produced a raw outcome. Arguments: ``request``, ``result`` (a Response or an exception).
fetch_observed = object()

#: A fetch the frontier handed out ended: the Waseda middleware hands over its key's rest.
#: Arguments: ``request``, ``verdict`` (a :class:`crawlproj.politeness.hosts.FetchVerdict`).
host_rest = object()

#: A fetch attempt failed at the host (retries included). Arguments: ``host``,
#: ``kind`` (dns | timeout | connection | http_5xx). The store counts them per host.
host_error = object()

#: How long must a host rest after a fetch of ``duration`` seconds? Arguments: ``host``,
#: ``duration``. The frontier answers with seconds (its minimum interval, the host's
#: Crawl-delay, the duration rule). The renderer asks it between a page's sub-requests,
#: so politeness keeps one source.
rest_after = object()

#: A host's new pages are mostly copies of its other pages (a session id in every path, a
#: calendar). Arguments: ``host``, ``verdict``: "slow" (one more copy: rest the host
#: ``COPY_HOST_REST`` seconds) or "cap" (fetch nothing more of it).
copy_host = object()

#: The store is about to commit a batch. No arguments. Components that keep state the
#: stored pages refer to (the near-duplicate index) commit theirs first, so a kill -9
#: can never leave a stored page pointing at a canonical page the index forgot.
store_committing = object()

#: The dashboard asks what components know of some hosts. Arguments: ``hosts`` (host names).
#: Each component answers with ``{host: {field: value}}`` for the hosts it knows (the frontier:
#: interval, rule and queue; the revisit pipeline: the server load index); the dashboard merges them.
describe_hosts = object()

#: A host's rendering evidence changed (:mod:`crawlproj.rendering.hosts`). Arguments: ``host``
#: and ``row`` (its mode, comparisons, gains, missed, overreached and the reason for the mode).
#: The store keeps the last row of each host (``render_hosts``), for the report.
render_evidence = object()

#: A page was queued to be rendered (:mod:`crawlproj.downloadermiddlewares.render_decision`). No arguments.
#: The rendering download handler starts the browser now, if it has not, so that its launch
#: (a second or two) does not hold the page's host when the render's turn comes.
render_queued = object()

#: The spider asks, once, how to tell a URL the URL-seen filter already holds. No arguments.
#: The frontier answers with a cheap ``seen(url) -> bool`` that never adds (a True answer
#: means the frontier would drop the link), or None when every link must reach it (an
#: ordering that counts repeated links, such as backlinks or OPIC). The spider then skips
#: links to seen URLs before it builds a Request for them: most links on a page are.
url_seen_test = object()

#: The spider asks, once, how to test many URLs at once (the same conditions as url_seen_test).
#: No arguments. A frontier whose URL-seen filter is remote (Redis) answers with
#: ``seen_many(urls) -> set`` (the URLs it holds), one round trip for a page's links instead of
#: one for each new link; it then takes the others as new without asking again. The spider
#: calls it on a thread of its own, one call at a time.
urls_seen_test = object()

#: The frontier asks, once, whether fetched pages are piling up. No arguments. A component
#: that queues fetched pages for work (the page threads) answers with ``busy() -> bool``; while
#: one says True the frontier hands out nothing (the engine asks again as each page leaves), so
#: pages that cost more to parse than to fetch (a link farm's) wait on the server, not in memory.
fetch_backlog_test = object()

#: The spider asks, once, how to tell a host the frontier admits no new URL of. No arguments.
#: The frontier answers with a cheap ``admissible(host) -> bool`` (False: the host is new and
#: its registered domain has ``DOMAIN_MAX_HOSTS`` hosts already), so the links of a link farm's
#: page cost no Request each.
host_admission_test = object()

#: A publisher said something of AI use for a whole host (:mod:`crawlproj.politeness.ai_signal_rules`).
#: Arguments: ``host``, ``source`` (``robots.txt``: its Content-Signal values; ``tdmrep.json``:
#: the file's rules) and ``values`` (``{name: value}``). The store records them, the AI-use
#: middleware decides with them.
ai_signals = object()

#: A file was fetched from inside a middleware in a visit of its own (tdmrep.json; robots.txt has
#: :data:`robots_fetched`). Arguments: ``host``, ``duration`` (seconds, or None). The frontier rests
#: the host after it as after robots.txt.
side_fetched = object()

#: A request ran out of retries (a transient failure every time: a timeout, a refused
#: connection, a 503 after RETRY_TIMES retries). Arguments: ``url`` (canonical), ``host``,
#: ``kind`` (the error kind, or ``http_<status>``), ``attempts``, ``error`` (the last one) and
#: ``depth``. The dead-letter queue keeps it (:mod:`crawlproj.store.deadletters`).
retries_exhausted = object()
