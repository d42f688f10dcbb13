"""Run the sandbox server and crawls as real processes (for the demo, tests and benchmarks)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .audit import Record
from .graph import SandboxWeb
from .server import config_from_dict

PROJECT_DIR = Path(__file__).resolve().parents[1]


class SandboxProcess:
    """``python -m sandbox.server`` on a free loopback port, as a context manager."""

    def __init__(self, *args: str, seeds_file: str | os.PathLike | None = None, startup_timeout: float = 20) -> None:
        self.args = list(args)
        self.seeds_file = str(seeds_file) if seeds_file else None
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.web: SandboxWeb | None = None

    def start(self) -> SandboxProcess:
        cmd = python_module("sandbox.server", "--port", "0", *self.args)
        if self.seeds_file:
            cmd += ["--seeds-file", self.seeds_file]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=PROJECT_DIR)
        assert self.proc.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        line = self.proc.stdout.readline()
        if not line or time.monotonic() > deadline:
            self.stop()
            raise RuntimeError(f"sandbox server did not start: {' '.join(cmd)}")
        self.port = json.loads(line)["port"]
        config = self.get_json("config")
        self.web = SandboxWeb(config_from_dict(config["config"]), self.port)
        return self

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/__sandbox__/"

    @property
    def host_resolve(self) -> str:
        return "*.sandbox.test=127.0.0.1"

    def get_json(self, what: str) -> dict:
        with urllib.request.urlopen(self.base + what, timeout=30) as resp:
            return json.load(resp)

    def report(self, interval: float | None = None, basis: str = "idle") -> dict:
        query = f"report?basis={basis}" + (f"&interval={interval}" if interval is not None else "")
        return self.get_json(query)

    def records(self) -> list[Record]:
        with urllib.request.urlopen(self.base + "log", timeout=30) as resp:
            return [Record(**json.loads(line)) for line in resp.read().decode().splitlines() if line]

    def set_robots(self, host: int, text: str) -> float:
        """Serve ``text`` as host ``host``'s robots.txt from now on; returns when, on the record's clock."""
        query = urllib.parse.urlencode({"host": host, "text": text})
        request = urllib.request.Request(self.base + "robots?" + query, method="POST")
        with urllib.request.urlopen(request, timeout=30) as resp:
            return json.load(resp)["at"]

    def set_down(self, host: int, down: bool = True) -> None:
        """Take host ``host``'s pages down (each answers 503; robots.txt is still served) or bring them up."""
        request = urllib.request.Request(self.base + f"down?host={host}&down={int(down)}", method="POST")
        urllib.request.urlopen(request, timeout=30).close()

    def reset(self) -> None:
        urllib.request.urlopen(urllib.request.Request(self.base + "reset", method="POST"), timeout=30).close()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> SandboxProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class CrawlResult:
    returncode: int
    elapsed: float
    log: str
    stats: dict = field(default_factory=dict)
    #: Seconds from the stop signal (``run_crawl``'s ``until``) to the crawl's exit; None unsignalled.
    stopped_after: float | None = None


def peak_rss_mb() -> int:
    """The peak resident set, in MB, of this process or of the largest child it waited for (a
    bench's crawls run as children): what every bench reports beside its speed."""
    import resource

    return round(max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
                 / 1024)  # KiB on Linux


def with_peak_rss(out: dict) -> dict:
    """A bench's JSON object with ``peak_rss_mb`` (:func:`peak_rss_mb`) unless it has its own."""
    return out if "peak_rss_mb" in out else {**out, "peak_rss_mb": peak_rss_mb()}


#: A running :class:`sandbox.zygote.Zygote` (the test session's), or None: with one, crawls
#: and sandbox servers are forked from it, already past their imports.
ZYGOTE = None


def python_module(module: str, *args: str) -> list[str]:
    """The command line of ``python -m module args...`` (forked from :data:`ZYGOTE` when there is one)."""
    return ZYGOTE.command(module, *args) if ZYGOTE is not None else [sys.executable, "-m", module, *args]


def crawl_command(spider: str, args: dict[str, str] | None = None, settings: dict[str, object] | None = None) -> list[str]:
    cmd = ["crawl", spider]
    for key, value in (args or {}).items():
        cmd += ["-a", f"{key}={value}"]
    # The sandbox profile unless told otherwise: it serves every host from one loopback address.
    # Not recorded as the user's last crawl (LAST_CRAWL_FILE), unless asked: a test's store goes.
    for key, value in {"PROFILE": "sandbox", "LAST_CRAWL_FILE": "", **(settings or {})}.items():
        cmd += ["-s", f"{key}={json.dumps(value) if isinstance(value, (dict, list)) else value}"]
    return python_module("scrapy", *cmd)


def interrupt(proc: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 60) -> tuple[str, float]:
    """Send ``sig`` to a running crawl (Ctrl-C by default) and wait for it to end: its stderr and
    the seconds it took to exit. Past ``timeout`` it is killed and ``TimeoutExpired`` raised."""
    proc.send_signal(sig)
    asked = time.monotonic()
    try:
        _, log = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    return log, time.monotonic() - asked


def dashboard_urls(url_file: str | os.PathLike, proc: subprocess.Popen, timeout: float = 60) -> dict:
    """The URLs a crawl's dashboard wrote to its ``DASHBOARD_URL_FILE`` (waiting for them); a crawl
    that exits first fails with its log."""
    path = Path(url_file)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size:
            return json.loads(path.read_text())
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read()[-3000:] if proc.stderr else f"the crawl exited ({proc.returncode})")
        time.sleep(0.1)
    raise AssertionError("the dashboard never said where it listens")


def run_crawl(
    spider: str,
    workdir: str | os.PathLike,
    args: dict[str, str] | None = None,
    settings: dict[str, object] | None = None,
    timeout: float = 600,
    extra: Sequence[str] = (),
    until: Callable[[], bool] | None = None,
    stop_signal: int = signal.SIGINT,
) -> CrawlResult:
    """Run ``scrapy crawl`` in a subprocess from the project directory; stats land in workdir, its
    log in ``workdir/crawl.log``. With ``until``, a condition polled twice a second, the crawl is
    sent ``stop_signal`` (Ctrl-C's by default) once the condition holds (a crawl judged by what it
    did, not by how long it ran: a loaded machine does less in the same seconds); ending before
    that fails."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    stats_file = workdir / "stats.json"
    settings = {"STATS_FILE": str(stats_file), **(settings or {})}
    cmd = crawl_command(spider, args, settings) + list(extra)
    log_file = workdir / "crawl.log"  # a file, not a pipe: a pipe nobody reads stalls a long crawl
    started = time.monotonic()
    with open(log_file, "w") as log:
        proc = subprocess.Popen(cmd, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=log)
        try:
            while until is not None and not until():
                if proc.poll() is not None:
                    raise RuntimeError(f"the crawl ended (exit {proc.returncode}) before its stop condition held:\n"
                                       + log_file.read_text()[-3000:])
                if time.monotonic() - started > timeout:
                    raise subprocess.TimeoutExpired(cmd, timeout)
                time.sleep(0.5)
            signalled = None
            if until is not None:
                proc.send_signal(stop_signal)
                signalled = time.monotonic()
            proc.wait(timeout=max(1.0, timeout - (time.monotonic() - started)))
        finally:
            if proc.poll() is None:  # a crawl that hangs is killed; its log says where
                proc.kill()
                proc.wait()
    ended = time.monotonic()
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    return CrawlResult(proc.returncode, ended - started, log_file.read_text(), stats,
                       ended - signalled if signalled is not None else None)


def crawl_sandbox(sandbox: SandboxProcess, workdir: str | os.PathLike, spider: str = "web",
                  args: dict[str, str] | None = None, until: Callable[[list[Record]], bool] | None = None,
                  timeout: float = 600, **settings: object) -> tuple[sqlite3.Connection, CrawlResult]:
    """Crawl ``sandbox`` from its seeds into ``workdir/crawl.db``; fail loudly if the crawl fails.
    With ``until``, the crawl is stopped as Ctrl-C stops it once ``until(sandbox.records())`` holds."""
    db = Path(workdir) / "crawl.db"
    result = run_crawl(spider, workdir, args=args if args is not None else {"seeds": sandbox.seeds_file},
                       settings={"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{db}", **settings},
                       timeout=timeout, until=(lambda: until(sandbox.records())) if until else None)
    if result.returncode != 0:
        raise RuntimeError(f"crawl failed ({result.returncode}):\n{result.log[-3000:]}")
    errors = error_lines(result.log)
    if errors:  # a finished crawl has nothing to say at ERROR: a traceback at close is a defect
        raise RuntimeError("the crawl logged errors:\n" + "\n".join(errors[:20]))
    return sqlite3.connect(db), result


def error_lines(log: str) -> list[str]:
    """The lines a crawl's log holds at ERROR or CRITICAL."""
    return [line for line in log.splitlines() if " ERROR: " in line or " CRITICAL: " in line]


def project_copy(dest: str | os.PathLike) -> Path:
    """The project's sources copied to ``dest`` (once): a build (an egg, a wheel, an sdist) runs
    there, not in the checkout, where other tests' processes write and delete files beside it
    (setup.py's ``clean -a`` deletes build/; an sdist lists the tree, then copies it)."""
    import shutil

    dest = Path(dest)
    if not dest.exists():
        shutil.copytree(PROJECT_DIR, dest, ignore=shutil.ignore_patterns(
            ".venv*", ".git", "data", "build", "dist", "*.egg-info", "__pycache__", "artifacts", ".pytest_cache"))
    return dest
