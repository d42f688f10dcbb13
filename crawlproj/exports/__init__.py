"""What users take away from a crawl: page records for Scrapy's feeds (``-O pages.jsonl``) and
``scrapy export`` (JSON lines, Parquet, WET), read back from the store or handed over by the crawl."""
