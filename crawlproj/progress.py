"""Progress bars with an ETA for the offline commands (report, merge, the revisit simulation).

Bars go to stderr, so stdout stays one JSON line. They show when stderr is a terminal,
or when ``CRAWLPROJ_PROGRESS=1`` (``0`` hides them). Crawls report progress through
Scrapy's periodic log stats (``LOGSTATS_INTERVAL``) and the live dashboard instead.
The computations themselves take a plain ``tick(n)`` callback, so they know nothing of bars.
"""

from __future__ import annotations

import os
import sys

from tqdm import tqdm

FORMAT = "{desc}: {percentage:3.0f}%|{bar:24}| {n_fmt}/{total_fmt} [{elapsed} elapsed, ETA {remaining}, {rate_fmt}]"


def enabled() -> bool:
    forced = os.environ.get("CRAWLPROJ_PROGRESS", "")
    return forced == "1" if forced in ("0", "1") else sys.stderr.isatty()


def progress_bar(total: int, desc: str, unit: str = "it") -> tqdm:
    """A bar of ``total`` steps on stderr (a silent one when bars are off); use ``.update(n)``."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not enabled(), mininterval=0.5,
                bar_format=FORMAT, dynamic_ncols=True)
