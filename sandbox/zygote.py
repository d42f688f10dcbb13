"""Crawls and sandbox servers forked from one process that has loaded them (the test suite's).

A crawl process spends about a second of CPU before its first request, three quarters of
it importing Scrapy, Twisted, the crawler and its libraries, and the suite starts some 300
crawls and 150 sandbox servers. ``python -m sandbox.zygote SOCKET`` imports all of that
once, then forks a process for each client (:mod:`sandbox.zygote_client`) that connects:
the child takes the client's standard streams, working directory, environment and
arguments and runs ``python -m MODULE ARGS...`` as Python would (``scrapy crawl ...``,
``sandbox.server ...``). The client stands in for that process to whoever started it: it
passes on the signals it gets (Ctrl-C, SIGTERM), exits as the process exited, and when it
is killed (kill -9) the process is killed too. Measured: a 3-page crawl 0.28-0.30 CPU-s
forked, 1.16-1.26 started afresh.

Only the test session uses it (:data:`sandbox.harness.ZYGOTE`); benches, ``make crawl``
and Scrapyd start crawls as processes of their own, so what they measure is a real start.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import pkgutil
import re
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from sandbox.servers import ServerProcess

PROJECT_DIR = Path(__file__).resolve().parents[1]
CLIENT = Path(__file__).with_name("zygote_client.py")
_OBJECT_PATH = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*\.[A-Za-z_][A-Za-z0-9_]*")


def warm_up() -> None:
    """Import what a crawl imports before it installs its reactor: Scrapy's commands, the
    project's settings and profiles, its spiders and every object a setting names."""
    from scrapy.cmdline import _get_commands_dict
    from scrapy.spiderloader import SpiderLoader
    from scrapy.utils.misc import load_object
    from scrapy.utils.project import get_project_settings

    settings = get_project_settings()
    _get_commands_dict(settings, inproject=True)
    importlib.import_module("sandbox.server")  # the test web's server is forked from here too
    SpiderLoader.from_settings(settings)
    profiles = importlib.import_module(settings["SETTINGS_MODULE"])
    for profile in pkgutil.iter_modules(profiles.__path__):
        importlib.import_module(f"{profiles.__name__}.{profile.name}")
    for name in settings.attributes:
        value = settings[name]
        paths = [*value.keys(), *value.values()] if hasattr(value, "keys") else [value]
        for path in paths:
            if isinstance(path, str) and _OBJECT_PATH.fullmatch(path):
                try:
                    load_object(path)
                except Exception:  # not a path after all, or a broken one: the crawl says so itself
                    pass
    # Forking is safe only from one thread, with no reactor or event loop yet.
    if "twisted.internet.reactor" in sys.modules or threading.active_count() != 1:
        raise RuntimeError("the zygote must not install a reactor or start a thread while it loads")


def _die_with(liveness: socket.socket) -> None:
    """Kill this crawl once its client is gone (the client was killed): EOF on ``liveness``."""
    while liveness.recv(1):
        pass
    os.kill(os.getpid(), signal.SIGKILL)


def _run(header: dict, fds: list[int], liveness: socket.socket) -> None:
    """Become the client's process: its streams, directory, environment, and ``python -m`` with its arguments."""
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    for fd in fds:
        os.close(fd)
    os.chdir(header["cwd"])
    os.environ.clear()
    os.environ.update(header["env"])
    sys.argv = list(header["argv"])  # the module, then its arguments; runpy puts the module's path first
    threading.Thread(target=_die_with, args=(liveness,), daemon=True).start()
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)


def serve(path: str) -> None:
    os.chdir(PROJECT_DIR)
    warm_up()
    # What is loaded stays out of every child's collections (each would walk it, and copy the
    # pages it touches): as a crawl's own start does (crawlproj.extensions.gc_tuning), collect, then freeze.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(128)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)  # closed when whoever started it is gone
    clients: dict[int, socket.socket] = {}  # crawl pid -> its client, told how the crawl ended
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            if key.fileobj is listener:
                conn, _ = listener.accept()
                try:
                    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                    header = json.loads(data)
                except (OSError, ValueError):
                    conn.close()
                    continue
                ours, theirs = socket.socketpair()
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:  # the crawl: nothing of the zygote's stays open in it; it exits as Python does
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    for held in (selector, listener, conn, theirs, *clients.values()):
                        held.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    _run(header, fds, ours)
                    sys.exit(0)
                for fd in fds:
                    os.close(fd)
                ours.close()
                try:
                    socket.send_fds(conn, [json.dumps({"pid": pid}).encode()], [theirs.fileno()])
                except OSError:
                    pass
                theirs.close()
                clients[pid] = conn
            elif key.fileobj == sys.stdin.fileno():
                if not os.read(sys.stdin.fileno(), 4096):
                    return
            else:
                while True:
                    try:
                        if not os.read(wake_r, 4096):
                            break
                    except BlockingIOError:
                        break
            _reap(clients)


def _reap(clients: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = clients.pop(pid, None)
        if conn is not None:
            try:
                conn.send(json.dumps({"status": status}).encode())
            except OSError:
                pass
            conn.close()


class Zygote(ServerProcess):
    """``python -m sandbox.zygote`` on a socket in a directory of its own, as a context manager."""

    def __init__(self, startup_timeout: float = 60.0) -> None:
        super().__init__(sys.executable, startup_timeout)
        self.dir = tempfile.mkdtemp(prefix="crawlproj-zygote-")  # short: a socket's path has 107 bytes at most
        self.path = str(Path(self.dir) / "zygote.sock")

    def start(self) -> Zygote:
        log = Path(self.dir) / "zygote.log"
        with open(log, "wb") as err:
            # Its stdin is a pipe from here: when this process dies, the zygote sees it close, and ends.
            self.proc = subprocess.Popen([self.binary, "-m", "sandbox.zygote", self.path], cwd=PROJECT_DIR,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != b"ready":
            raise self._failed("the zygote", log)
        return self

    def command(self, module: str, *args: str) -> list[str]:
        """The command line that runs ``python -m module args...`` forked from this zygote."""
        return [sys.executable, "-I", "-S", str(CLIENT), self.path, module, *args]


if __name__ == "__main__":
    serve(sys.argv[1])
