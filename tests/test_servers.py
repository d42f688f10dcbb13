"""The helpers that start real system servers for tests and benchmarks."""

import socket

import pytest
import redis

from sandbox.servers import RedisServer

pytestmark = pytest.mark.slow


def test_redis_server_runs_on_a_free_loopback_port_and_is_gone_after():
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        client.set("k", "v")
        assert client.get("k") == b"v"
        port = server.port
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_a_missing_binary_names_the_install_command(monkeypatch):
    from crawlproj.distributed import redis_server as redis_process

    monkeypatch.setattr(redis_process.shutil, "which", lambda name: None)
    monkeypatch.setattr(redis_process.Path, "exists", lambda self: False)
    with pytest.raises(RuntimeError, match="apt-get install -y --no-install-recommends redis-server"):
        RedisServer()
