"""A worker's name, without Redis: every crawl has one (the dashboard shows it)."""

from __future__ import annotations

import os
import socket
import uuid


def new_worker_id() -> str:
    """host-pid-random: unique per process, so a restarted worker is a new worker."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def worker_id(settings) -> str:
    """``WORKER_ID`` (the profile add-on fills it in once per process when it is empty)."""
    return settings.get("WORKER_ID") or new_worker_id()
