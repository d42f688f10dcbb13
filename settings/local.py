"""The ``local`` profile: the embedded default.

One machine, SQLite storage, nothing to install beyond Python packages.
"""

STORE_URI = "sqlite:///data/crawl.db"
