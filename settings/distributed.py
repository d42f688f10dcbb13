"""The ``distributed`` profile: many workers, on many machines, sharing one frontier in Redis.

Set ``REDIS_URL`` (``-s REDIS_URL=redis://host:6379/0``). Each worker process writes its
own SQLite and WARC shard, named after its ``WORKER_ID``; ``scrapy merge`` reads them
together. Redis must persist (``appendonly yes``) and must not evict
(``maxmemory-policy noeviction``): see docs/distributed.md.
"""

SCHEDULER = "crawlproj.distributed.scheduler.DistributedScheduler"
DUPEFILTER_CLASS = "crawlproj.distributed.dupefilter.RedisBloomDupeFilter"
STORE_URI = "sqlite:///data/distributed/{worker}/crawl.db"
WARC_PREFIX = "crawlproj-{worker}"
NEAR_DUPLICATES_INDEX_CLASS = "crawlproj.distributed.near_duplicates.RedisNearDuplicateIndex"
REVISIT_QUEUE_CLASS = "crawlproj.distributed.revisit_queue.RedisRevisitQueue"
DEADLETTERS_CLASS = "crawlproj.distributed.deadletters.RedisDeadLetters"
DASHBOARD_REDIS = True
# The workers keep every CPU busy: the browser is not kept off one (two CPU-bound workers read
# 21% fewer pages in their first 30 s with it kept off one of two).
RENDER_BROWSER_SPARE_CPUS = 0
# A queued URL is kept lean in Redis (crawlproj/distributed/entries.py: its path and a few
# numbers, ~90 bytes); a Referer header on every link would double it. Like Googlebot, the
# distributed crawl sends none.
REFERER_ENABLED = False
