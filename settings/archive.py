"""The ``archive`` profile: ``local`` plus what a web archive needs to replay pages as they looked.

Each page's requisites (stylesheets, scripts, images, fonts, icons, iframes) are fetched and
archived beside it, each URL once per crawl and each payload once per store (revisit records);
each page's outlinks go in a metadata record, as Heritrix writes them; the crawl is packaged as a
WACZ when it ends (docs/archiving.md).
"""

STORE_URI = "sqlite:///data/crawl.db"
REQUISITES_ENABLED = True
WARC_OUTLINKS = True
WACZ_ON_CLOSE = True
