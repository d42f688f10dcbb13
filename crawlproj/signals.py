"""crawlproj's own signals (sent with ``crawler.signals``)."""

#: The store committed a batch. Arguments: ``urls`` (list of canonical page URLs).
#: A page counts as completed only from this moment (the frontier listens to it).
pages_committed = object()

#: A robots.txt answer arrived. Arguments: ``host``, ``status`` (int, or None when unreachable),
#: ``crawl_delay`` (seconds, or None), ``duration`` (seconds the fetch took, or None).
robots_fetched = object()

#: The downloader is done with a request (response, failure, or a new request).
#: Arguments: ``request``, ``result``.
fetch_finished = object()
