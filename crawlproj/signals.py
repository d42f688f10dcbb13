"""crawlproj's own signals (sent with ``crawler.signals``)."""

#: The store committed a batch. Arguments: ``urls`` (list of canonical page URLs).
#: A page counts as completed only from this moment (the frontier listens to it).
pages_committed = object()

#: A robots.txt answer arrived. Arguments: ``host``, ``status`` (int, or None when unreachable).
robots_fetched = object()
