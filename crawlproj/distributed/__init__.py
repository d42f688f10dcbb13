"""Distributed crawling on Redis (the ``distributed`` profile): the two-tier frontier's shared
state, host-hash partitions leased by workers, the URL-seen Bloom filter (:mod:`.dupefilter`),
and the scheduler that puts them behind Scrapy (:mod:`.scheduler`)."""
