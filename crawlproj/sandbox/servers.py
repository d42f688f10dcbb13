"""Real system servers for tests and benchmarks, started on free loopback ports.

Each helper runs the binary from PATH as a child process, waits until it
answers, and stops it (and removes its files) on exit. A missing binary is an
error that names the exact command to install it: tests never skip quietly.
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


class RedisServer(ServerProcess):
    """``redis-server`` on a free loopback port, as a context manager. It persists nothing,
    or with ``appendonly`` keeps an AOF fsynced on every write (the crawl's recommended
    setting; ``"everysec"``: fsynced once a second), which :meth:`crash_and_restart` proves.
    ``data_dir``: keep its files there, and leave them on stop (a later server on the same
    directory starts where this one stopped); by default a temporary directory, removed."""

    def __init__(self, startup_timeout: float = 10.0, appendonly: bool | str = False, data_dir: str = "") -> None:
        super().__init__(find_binary("redis-server", "redis-server"), startup_timeout)
        self.appendonly = appendonly
        self.data_dir = data_dir
        self.keep_dir = bool(data_dir)

    def _command(self) -> list[str]:
        fsync = self.appendonly if isinstance(self.appendonly, str) else "always"
        persistence = (["--appendonly", "yes", "--appendfsync", fsync] if self.appendonly
                       else ["--appendonly", "no"])
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *persistence,
                "--dir", self.dir, "--protected-mode", "yes", "--maxmemory-policy", "noeviction"]

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


class ScrapydServer(ServerProcess):
    """``scrapyd`` on a free loopback port, its eggs, logs and job database in a temporary
    directory, as a context manager."""

    def __init__(self, binary: str, startup_timeout: float = 30.0) -> None:
        super().__init__(binary, startup_timeout)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> ScrapydServer:
        self.dir = tempfile.mkdtemp(prefix="crawlproj-scrapyd-")
        self.port = free_port()
        d = Path(self.dir)
        (d / "scrapyd.conf").write_text(
            "[scrapyd]\n"
            f"bind_address = 127.0.0.1\nhttp_port = {self.port}\n"
            f"eggs_dir = {d / 'eggs'}\nlogs_dir = {d / 'logs'}\ndbs_dir = {d / 'dbs'}\nitems_dir =\n"
            "max_proc = 4\npoll_interval = 0.5\n")
        self.proc = subprocess.Popen([self.binary], cwd=self.dir, stdout=subprocess.DEVNULL,
                                     stderr=open(d / "scrapyd.log", "wb"))
        if self._await_http(self.url + "daemonstatus.json", lambda body: b'"ok"' in body):
            return self
        raise self._failed("scrapyd", d / "scrapyd.log")


#: The access log nginx writes for :class:`NginxServer`: tab-separated, times in seconds.
#: ``$msec`` is when the response was finished and logged, ``$request_time`` how long the
#: request took from its first byte: their difference is the arrival.
NGINX_LOG_FORMAT = "$host\\t$msec\\t$request_time\\t$status\\t$body_bytes_sent\\t$connection\\t$request_uri"


class NginxServer(ServerProcess):
    """``nginx`` on a free loopback port serving directories as name-based virtual hosts.

    ``sites`` maps a host name to the directory it serves. Every request is written to
    an access log that :meth:`records` reads back as :class:`~.audit.Record` rows, so
    politeness can be judged from the server's own record. A context manager.
    """

    def __init__(self, sites: dict[str, str], startup_timeout: float = 10.0) -> None:
        super().__init__(find_binary("nginx", "nginx-light"), startup_timeout)
        self.sites = dict(sites)

    @property
    def access_log(self) -> Path:
        return Path(self.dir) / "access.log"

    def _config(self) -> str:
        servers = "".join(
            f"  server {{ listen 127.0.0.1:{self.port}; server_name {name}; root {root};"
            " index index.html; access_log " + str(self.access_log) + " audit; }\n"
            for name, root in self.sites.items())
        tmp = Path(self.dir)
        return (
            "daemon off; worker_processes 1; user root;\n"
            f"pid {tmp / 'nginx.pid'}; error_log {tmp / 'error.log'} error;\n"
            "events { worker_connections 1024; }\n"
            "http {\n"
            f"  log_format audit '{NGINX_LOG_FORMAT}';\n"
            "  types { text/html html htm; text/css css; application/javascript js; image/png png;"
            " image/svg+xml svg; image/gif gif; image/jpeg jpg; application/json json; text/plain txt; }\n"
            "  default_type application/octet-stream; sendfile on; keepalive_timeout 65;"
            " keepalive_requests 100000; charset_types text/html;\n"
            f"  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;"
            f" fastcgi_temp_path {tmp}/fastcgi; uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;\n"
            f"  server {{ listen 127.0.0.1:{self.port} default_server; return 404; access_log {self.access_log} audit; }}\n"
            f"{servers}}}\n")

    def start(self) -> NginxServer:
        self.dir = tempfile.mkdtemp(prefix="crawlproj-nginx-")
        for _ in range(5):  # a free port can be taken between the check and the bind
            self.port = free_port()
            conf = Path(self.dir) / "nginx.conf"
            conf.write_text(self._config())
            self.proc = subprocess.Popen([self.binary, "-c", str(conf), "-p", self.dir],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + self.startup_timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return self
                except OSError:
                    time.sleep(0.02)
            self.stop_process()
        log = (Path(self.dir) / "error.log")
        raise RuntimeError(f"nginx did not start on 127.0.0.1: {log.read_text()[-2000:] if log.exists() else ''}")

    def stop_process(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def reset(self) -> None:
        """Start a fresh access log (nginx reopens its logs on SIGUSR1)."""
        import signal

        assert self.proc is not None
        self.access_log.unlink(missing_ok=True)
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while not self.access_log.exists() and time.monotonic() < deadline:
            time.sleep(0.01)

    def records(self) -> list:
        """Every logged request as an audit :class:`~.audit.Record` (host without the port)."""
        from .audit import Record

        out = []
        if not self.access_log.exists():
            return out
        for line in self.access_log.read_text(errors="replace").splitlines():
            host, msec, took, status, size, conn, uri = line.split("\t", 6)
            finish = float(msec)
            out.append(Record(host=host, path=uri, arrival=finish - float(took), finish=finish,
                              status=int(status), connection=int(conn), bytes=int(size)))
        return out


#: pywb lives in a venv of its own: it pins redis<3 and fakeredis<1, which the crawler's
#: Redis client cannot live with. `make test` (make setup) builds it.
PYWB_VENV = Path(__file__).resolve().parents[2] / ".venv-pywb"
PYWB_INSTALL = "make .venv-pywb/.installed  (python3 -m venv .venv-pywb && .venv-pywb/bin/pip install 'pywb>=2.10,<2.11')"


class PywbServer(ServerProcess):
    """pywb's ``wayback`` on a free loopback port over one collection (``crawl``) made from
    WACZ or WARC files, archive-only (no live web, no recording). A context manager."""

    collection = "crawl"

    def __init__(self, archives: list[str], startup_timeout: float = 60.0) -> None:
        wayback = PYWB_VENV / "bin" / "wayback"
        if not wayback.exists():
            raise RuntimeError(f"pywb is not installed. Run: {PYWB_INSTALL}")
        super().__init__(str(wayback), startup_timeout)
        self.archives = list(archives)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.collection}/"

    def start(self) -> PywbServer:
        self.dir = tempfile.mkdtemp(prefix="crawlproj-pywb-")
        manager = str(PYWB_VENV / "bin" / "wb-manager")
        d = Path(self.dir)
        log = open(d / "pywb.log", "wb")
        subprocess.run([manager, "init", self.collection], cwd=d, check=True, stdout=log, stderr=log)
        for archive in self.archives:
            unpack = ["--unpack-wacz"] if archive.endswith(".wacz") else []
            subprocess.run([manager, "add", *unpack, self.collection, archive], cwd=d, check=True, stdout=log,
                           stderr=log)
        self.port = free_port()
        self.proc = subprocess.Popen([self.binary, "-p", str(self.port), "-b", "127.0.0.1"], cwd=d,
                                     stdout=log, stderr=log)
        if self._await_http(f"http://127.0.0.1:{self.port}/"):
            return self
        raise self._failed("pywb", d / "pywb.log")
