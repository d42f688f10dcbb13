"""Incremental re-crawling (Tamura & Kitsuregawa, seed 001): per-page change-rate estimation
(:mod:`.estimator`), revisit intervals and the server load index (:mod:`.schedule`)."""
