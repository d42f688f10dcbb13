from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox import harness
from sandbox.harness import SandboxProcess
from sandbox.zygote import Zygote


@pytest.fixture(scope="session", autouse=True)
def crawl_zygote() -> Iterator:
    """Crawls the tests start are forked from one process that has loaded the crawler (sandbox/zygote.py):
    each skips the second of imports a crawl process starts with, some 300 times a suite."""
    with Zygote() as zygote:
        harness.ZYGOTE = zygote
        yield zygote
        harness.ZYGOTE = None


@pytest.fixture(autouse=True)
def _work_in_tmp(tmp_path, monkeypatch) -> None:
    """Each test runs in its own temporary folder: what a crawler built in the test writes beside a
    relative STORE_URI (data/..., the dead-letter queue, the last crawl's record) never lands in
    the checkout's data/, which is the user's. (Crawls the tests start run from the checkout, each
    told its own store and LAST_CRAWL_FILE="" by sandbox.harness.)"""
    monkeypatch.chdir(tmp_path)


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


@pytest.fixture
def redis_cluster() -> Iterator:
    """A real Redis Cluster on loopback ports: 3 masters, a replica each (redis-cli --cluster create)."""
    from sandbox.servers import RedisClusterServers

    with RedisClusterServers() as cluster:
        yield cluster


@pytest.fixture(scope="module", params=["redis", "cluster"])
def _redis_of_module(request) -> Iterator:
    from sandbox.servers import RedisClusterServers, RedisServer

    with (RedisServer() if request.param == "redis" else RedisClusterServers()) as server:
        yield server


@pytest.fixture
def any_redis(_redis_of_module) -> Iterator:
    """One redis-server, then a Redis Cluster (each emptied for every test): the shared state
    must work on both."""
    from scrapy.settings import Settings

    from crawlproj.distributed.connection import from_settings

    from_settings(Settings({"REDIS_URL": _redis_of_module.url})).flushall()
    yield _redis_of_module


#: Tiers are marked on the tests themselves: `slow` (a real server or a crawl process of its own:
#: `make test-fast`, the edit-test loop, leaves these out) by a module's `pytestmark` or a test's
#: decorator, or by using one of these fixtures; `serial` (judged against the wall clock: gaps
#: between fetches, timeouts, workers joining in time) the same way. On a machine loaded by other
#: tests a serial test measures the load, so `make test` runs them after everything else, three
#: at a time (they mostly wait out intervals), and one that fails beside others again alone.
#: A test left unmarked that starts a process fails, naming the marker it needs (:func:`_tier_guard`).
SLOW_FIXTURES = {"sandbox_factory", "redis_server", "redis_cluster", "any_redis", "_redis_of_module", "apps"}
#: The modules whose tests take longest (ten seconds or more on a loaded machine), longest
#: first, run first: four processes taking one test at a time then end together on short tests,
#: instead of one finishing a long test alone at the end (20 s of one busy core, measured).
LONGEST_FIRST = ("test_benches", "test_render_apps", "test_memory", "test_revisit_crawl", "test_resume",
                 "test_documents", "test_operations", "test_scrapyd", "test_first_hour", "test_report_languages",
                 "test_dashboard", "test_web_standards_crawl", "test_report", "test_archive_output",
                 "test_exports_crawl", "test_crawl",
                 "test_package", "test_hostile_crawl", "test_render_crawl",
                 "test_distributed_crawl")  # (these four: serial)


@pytest.fixture
def threaded_replans(monkeypatch) -> None:
    """The revisit pipeline's replans as in a running crawl, their thread run to its end at once
    (a real thread, joined; its result handed back as deferToThread would)."""
    import threading

    from twisted.internet import defer, reactor

    from crawlproj.revisit import pipeline as revisit_pipeline

    def in_a_thread(f):
        out = []
        t = threading.Thread(target=lambda: out.append(f()))
        t.start()
        t.join()
        return defer.succeed(out[0])

    monkeypatch.setattr(revisit_pipeline, "deferToThread", in_a_thread)
    monkeypatch.setattr(reactor, "running", True, raising=False)


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "slow: starts a real server or a crawl process (left out by make test-fast)")
    config.addinivalue_line("markers",
                            "serial: judged against the wall clock; make test runs it beside one other at most")
    config.addinivalue_line("markers", "edit_loop: the one crawl make test-fast keeps, slow as it is")


def _module(item) -> str:
    return item.module.__name__.rsplit(".", 1)[-1]


def pytest_collection_modifyitems(config, items) -> None:
    def rank(item) -> int:
        module = _module(item)
        return LONGEST_FIRST.index(module) if module in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each module keeps its order
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _tier_guard(request, monkeypatch) -> None:
    """A test of the fast tier starts no server and no crawl: one that does is slow, and fails
    here until it is marked so, instead of landing unseen in `make test-fast`."""
    if request.node.get_closest_marker("slow") is not None:
        return
    import subprocess

    from crawlproj.distributed.redis_server import ServerProcess

    def refuse(what: str) -> None:
        raise RuntimeError(f"{request.node.nodeid} starts {what}: mark it slow "
                           "(pytestmark = pytest.mark.slow, or @pytest.mark.slow on the test)")

    popen = subprocess.Popen.__init__

    def guarded_popen(self, args, *more, **kwargs):
        argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else str(args).split()
        if "scrapy" in argv and "crawl" in argv:
            refuse("a crawl process")
        popen(self, args, *more, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded_popen)
    monkeypatch.setattr(ServerProcess, "__enter__", lambda self: refuse(f"a server ({type(self).__name__})"))
    monkeypatch.setattr(harness.SandboxProcess, "start", lambda self: refuse("the sandbox web"))
