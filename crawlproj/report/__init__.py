"""The crawl analysis report (``scrapy report``): :mod:`.analysis` computes, :mod:`.output` writes."""
