"""The dead-letter queue in Redis, shared by every worker of a distributed crawl
(``DEADLETTERS_CLASS`` in the distributed profile; the queue itself is
:class:`crawlproj.store.deadletters.DeadLetterQueue`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from ..store.deadletters import DeadLetter, matches
from . import connection


class RedisDeadLetters:
    """Dead letters in one Redis hash (``<REDIS_PREFIX>:deadletters``: URL -> JSON), shared by
    every worker of a distributed crawl."""

    def __init__(self, client: Any, key: str) -> None:
        self.client, self.key = client, key

    @classmethod
    def from_settings(cls, settings: Any) -> RedisDeadLetters:
        return cls(connection.from_settings(settings), f"{settings.get('REDIS_PREFIX')}:deadletters")

    def _all(self) -> list[DeadLetter]:
        return sorted((DeadLetter(**json.loads(v)) for v in self.client.hvals(self.key)), key=lambda d: (d.host, d.url))

    def _put(self, letter: DeadLetter) -> None:
        self.client.hset(self.key, letter.url, json.dumps(asdict(letter)))

    def add(self, url: str, host: str, kind: str, attempts: int, error: str, depth: int, at: float) -> None:
        old = self.client.hget(self.key, url)
        before = DeadLetter(**json.loads(old)) if old else None
        self._put(DeadLetter(url, host, kind, attempts + (before.attempts if before else 0), error, depth,
                             before.first_at if before else at, at))

    def list(self, host: str | None = None, kind: str | None = None) -> list[DeadLetter]:
        return [letter for letter in self._all() if matches(letter, host, kind)]

    def mark_retry(self, host: str | None = None, kind: str | None = None) -> int:
        letters = self.list(host, kind)
        for letter in letters:
            self._put(DeadLetter(**{**asdict(letter), "retry": True}))
        return len(letters)

    def take_marked(self, limit: int) -> list[DeadLetter]:
        taken = []
        for letter in self._all():
            if letter.retry and len(taken) < limit and self.client.hdel(self.key, letter.url):
                taken.append(letter)  # hdel's answer: one worker takes each entry
        return taken

    def purge(self, host: str | None = None, kind: str | None = None) -> int:
        letters = self.list(host, kind)
        if letters:
            self.client.hdel(self.key, *[letter.url for letter in letters])
        return len(letters)

    def close(self) -> None:
        pass
