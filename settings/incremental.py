"""The ``incremental`` profile: a continuous crawl that revisits known pages as they change.

Like ``local`` (one machine, SQLite), plus the refresher: known URLs are revisited as
their schedule falls due while new ones are discovered; the crawl runs until SIGINT
and resumes where it stopped (the frontier's journal in JOBDIR, the revisit queue in
its SQLite table).
"""

STORE_URI = "sqlite:///data/crawl.db"
REVISIT_MODE = "incremental"
JOBDIR = "data/jobs/incremental"
# Sitemaps' <lastmod> is the cheapest change signal a site gives: read them, and again
# every ROBOTSTXT_TTL.
ROBOTSTXT_SITEMAPS = True
