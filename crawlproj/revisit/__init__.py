"""Incremental re-crawling (Tamura and Kitsuregawa): per-page change-rate estimation
(:mod:`.estimator`), revisit intervals and the server load index (:mod:`.schedule`)."""
