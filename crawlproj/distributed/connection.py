"""The Redis connection of a distributed crawl, from ``REDIS_URL``."""

from __future__ import annotations

import os
import socket
import uuid

import redis


def from_settings(settings) -> redis.Redis:
    """A client for ``REDIS_URL``; fails at once, naming the setting, if Redis cannot be reached."""
    url = settings.get("REDIS_URL")
    client = redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=10, health_check_interval=30)
    try:
        client.ping()
    except redis.RedisError as exc:
        from ..errors import SettingsError

        raise SettingsError("REDIS_URL", url, f"cannot reach Redis: {exc}") from None
    return client


def new_worker_id() -> str:
    """host-pid-random: unique per process, so a restarted worker is a new worker."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def worker_id(settings) -> str:
    """``WORKER_ID`` (the profile add-on fills it in once per process when it is empty)."""
    return settings.get("WORKER_ID") or new_worker_id()
