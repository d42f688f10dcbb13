"""Real system servers for tests and benchmarks, started on free loopback ports.

Each helper runs the binary from PATH as a child process, waits until it
answers, and stops it (and removes its files) on exit. A missing binary is an
error that names the exact command to install it: tests never skip quietly.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from pathlib import Path

from crawlproj.distributed.redis_server import INSTALL_HINT, RedisServer, ServerProcess, find_binary, free_port

__all__ = ["INSTALL_HINT", "NginxServer", "PywbServer", "RedisClusterServers", "RedisServer", "ScrapydServer",
           "ServerProcess",
           "find_binary", "free_port"]


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
            " image/svg+xml svg; image/gif gif; image/jpeg jpg; application/json json; text/plain txt;"
            " application/pdf pdf; application/rss+xml rss; application/atom+xml atom; }\n"
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
PYWB_VENV = Path(__file__).resolve().parents[1] / ".venv-pywb"
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


class RedisClusterServers:
    """A real Redis Cluster on loopback: ``masters`` redis-servers with a replica each, on free
    ports, joined by ``redis-cli --cluster create``; a context manager that stops them all.
    ``node_timeout`` (ms) is how soon a dead master's replica takes over."""

    def __init__(self, masters: int = 3, node_timeout: int = 1000, startup_timeout: float = 30.0) -> None:
        self.masters, self.node_timeout, self.startup_timeout = masters, node_timeout, startup_timeout
        self.servers: list[RedisServer] = []

    @property
    def url(self) -> str:
        """A node to start from (the crawl finds the cluster from it)."""
        return f"redis://127.0.0.1:{self.servers[0].port}/0"

    @property
    def nodes(self) -> str:
        """Every node, as ``REDIS_CLUSTER_NODES`` takes them."""
        return " ".join(f"127.0.0.1:{server.port}" for server in self.servers)

    def start(self) -> RedisClusterServers:
        cli = find_binary("redis-cli", "redis-tools")
        for _ in range(2 * self.masters):
            # The cluster bus needs a port of its own (by default port + 10000, which may be taken
            # or past 65535); replicas sync at once (Redis 7 waits 5 s for more replicas by default).
            self.servers.append(RedisServer(extra_args=(
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(self.node_timeout), "--cluster-port", str(free_port()),
                "--repl-diskless-sync-delay", "0")).start())
        done = subprocess.run([cli, "--cluster", "create", *(f"127.0.0.1:{s.port}" for s in self.servers),
                               "--cluster-replicas", "1", "--cluster-yes"], capture_output=True, text=True,
                              timeout=self.startup_timeout)
        if done.returncode != 0:
            self.stop()
            raise RuntimeError(f"redis-cli --cluster create failed: {done.stdout[-1500:]}{done.stderr[-500:]}")
        deadline = time.monotonic() + self.startup_timeout
        while not self.healthy():
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")
            time.sleep(0.1)
        return self

    def _ask(self, server: RedisServer, *command: str) -> str:
        cli = find_binary("redis-cli", "redis-tools")
        done = subprocess.run([cli, "-p", str(server.port), *command], capture_output=True, text=True, timeout=10)
        return done.stdout

    def healthy(self) -> bool:
        """Every live node says cluster_state:ok, and every replica has synced with its master."""
        live = [s for s in self.servers if s.proc is not None and s.proc.poll() is None]
        if not all("cluster_state:ok" in self._ask(s, "cluster", "info") for s in live):
            return False
        roles = [self._ask(s, "info", "replication") for s in live]
        return all("master_link_status:up" in r for r in roles if "role:slave" in r) and \
            sum("role:slave" in r for r in roles) >= self.masters

    def masters_by_port(self) -> dict[int, list[tuple[int, int]]]:
        """Each live master's port -> the slot ranges it serves."""
        live = next(s for s in self.servers if s.proc is not None and s.proc.poll() is None)
        out: dict[int, list[tuple[int, int]]] = {}
        for line in self._ask(live, "cluster", "nodes").splitlines():
            fields = line.split()
            if len(fields) > 8 and "master" in fields[2] and "fail" not in fields[2]:
                port = int(fields[1].split("@")[0].rsplit(":", 1)[1])
                out[port] = [tuple(int(x) for x in r.split("-")) if "-" in r else (int(r), int(r))
                             for r in fields[8:] if not r.startswith("[")]
        return out

    def kill_master(self, port: int) -> None:
        """kill -9 the master on ``port``: its replica should take over within the node timeout."""
        server = next(s for s in self.servers if s.port == port)
        assert server.proc is not None
        server.proc.kill()
        server.proc.wait()

    def stop(self) -> None:
        for server in self.servers:
            server.stop()
        self.servers = []

    def __enter__(self) -> RedisClusterServers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
