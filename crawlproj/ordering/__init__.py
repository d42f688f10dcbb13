"""Crawl ordering (the crawler-anatomy notes, "クロール順序付け"): which waiting URL is worth fetching first.

:mod:`.prioritizer` turns scores into the frontier's front-tier levels (breadth-first,
importance, freshness, topical relevance, or a weighted mix); :mod:`.importance` keeps
OPIC cash, in-link counts and site sizes online; :mod:`.topical` scores text against a
topic; :mod:`.middleware` hands them what each fetched page says.
"""
