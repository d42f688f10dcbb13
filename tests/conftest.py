from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.harness import SandboxProcess


@pytest.fixture
def sandbox_factory(tmp_path) -> Iterator:
    """Start real sandbox servers (free loopback ports); all are stopped afterwards."""
    started: list[SandboxProcess] = []

    def start(*args: str) -> SandboxProcess:
        # Short Crawl-delay so crawl_delay hosts do not dominate test time.
        proc = SandboxProcess("--crawl-delay", "0.1", *args, seeds_file=tmp_path / f"seeds{len(started)}.txt").start()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture
def redis_server() -> Iterator:
    """A real redis-server on a free loopback port (installed by `make test` when missing)."""
    from sandbox.servers import RedisServer

    with RedisServer() as server:
        yield server
