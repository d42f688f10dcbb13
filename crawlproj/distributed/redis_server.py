"""A real ``redis-server`` on a free loopback port, started and stopped by the crawl itself.

``-s WORKERS=N`` (:mod:`crawlproj.distributed.local_workers`) runs its workers over one; the tests and the
sandbox start theirs the same way (:class:`ServerProcess` is the base of their other real
servers too).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

INSTALL_HINT = "sudo apt-get update && sudo apt-get install -y --no-install-recommends {package}  (or run `make test` as root)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_binary(name: str, package: str) -> str:
    path = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
    if path is None:
        raise RuntimeError(f"{name} is not installed. Run: {INSTALL_HINT.format(package=package)}")
    return path


class ServerProcess:
    """A child server process and its scratch directory; stopped and removed on exit."""

    def __init__(self, binary: str, startup_timeout: float) -> None:
        self.binary = binary
        self.startup_timeout = startup_timeout
        self.port = 0
        self.dir = ""
        self.keep_dir = False  # leave the directory's files on stop (a server's data kept for its next start)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ServerProcess:
        raise NotImplementedError

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.dir and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _await_http(self, url: str, ready: Callable[[bytes], bool] = lambda body: True) -> bool:
        """Whether the started process answers ``url`` (with a body ``ready`` accepts) within
        ``startup_timeout`` seconds; False as soon as it exits."""
        import urllib.request

        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline and self.proc is not None and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    if ready(answer.read()):
                        return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def _failed(self, name: str, log: Path) -> RuntimeError:
        """Stop the process and name it, with the end of its log, for the caller to raise."""
        said = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        self.stop()
        return RuntimeError(f"{name} did not start on 127.0.0.1:{self.port}:\n{said}")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


#: The shared near-duplicate records and revisit states are 100-250 bytes a field: Redis keeps a
#: hash of such fields compact (listpack) only when its limit on a value's length allows them
#: (64 bytes by default). docs/distributed.md lists it among the Redis settings the crawl needs.
COMPACT_HASHES = ("--hash-max-listpack-value", "512")


class RedisServer(ServerProcess):
    """``redis-server`` on a free loopback port, as a context manager. It persists nothing,
    or with ``appendonly`` keeps an AOF fsynced on every write (the crawl's recommended
    setting; ``"everysec"``: fsynced once a second), which :meth:`crash_and_restart` proves.
    ``data_dir``: keep its files there, and leave them on stop (a later server on the same
    directory starts where this one stopped); by default a temporary directory, removed."""

    def __init__(self, startup_timeout: float = 10.0, appendonly: bool | str = False, data_dir: str = "",
                 extra_args: tuple[str, ...] = ()) -> None:
        super().__init__(find_binary("redis-server", "redis-server"), startup_timeout)
        self.appendonly = appendonly
        self.data_dir = data_dir
        self.keep_dir = bool(data_dir)
        self.extra_args = extra_args

    def _command(self) -> list[str]:
        fsync = self.appendonly if isinstance(self.appendonly, str) else "always"
        persistence = (["--appendonly", "yes", "--appendfsync", fsync] if self.appendonly
                       else ["--appendonly", "no"])
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *persistence,
                "--dir", self.dir, "--protected-mode", "yes", "--maxmemory-policy", "noeviction", *COMPACT_HASHES, *self.extra_args]

    def crash_and_restart(self) -> None:
        """SIGKILL the server (no shutdown save) and start it again on the same port and files."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self.proc = subprocess.Popen(self._command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not self._wait_ready():
            raise RuntimeError(f"redis-server did not restart on 127.0.0.1:{self.port}")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        if self.data_dir:
            os.makedirs(self.data_dir, exist_ok=True)
        self.dir = self.data_dir or tempfile.mkdtemp(prefix="crawlproj-redis-")
        for _ in range(5):  # a free port can be taken between the check and the bind
            self.port = free_port()
            self.proc = subprocess.Popen(self._command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait_ready():
                return self
            self.proc.kill()
            self.proc.wait()
        raise RuntimeError(f"redis-server did not start on 127.0.0.1 (tried 5 ports; binary {self.binary})")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return True
            except OSError:
                pass
            time.sleep(0.02)
        return False
