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


#: What makes a test slow: a real server or a crawl process of its own. `make test-fast` (the
#: edit-test loop) leaves these out but for one small crawl; `make test` (CI) runs everything.
SLOW_FIXTURES = {"sandbox_factory", "redis_server", "redis_cluster", "any_redis", "_redis_of_module", "apps"}
SLOW_MODULES = {"test_benches", "test_memory", "test_scrapyd", "test_render_apps", "test_report_languages",
                "test_extraction_equivalence", "test_first_hour", "test_crawl", "test_operations", "test_report",
                "test_workers", "test_archive_output", "test_exports_crawl", "test_content_crawl",
                "test_revisit_crawl", "test_resume", "test_distributed_crawl", "test_render_crawl",
                "test_hostile_crawl", "test_web_standards_crawl", "test_frontier_crawl", "test_ordering_crawl",
                "test_dashboard", "test_render", "test_servers", "test_encodings", "test_offload", "test_stalls",
                "test_package"}
#: Tests whose crawls are judged against the wall clock the crawl shares with its server (gaps
#: between fetches, gaps after answers cut off by a timeout, renders given up after a timeout,
#: workers joining a crawl in time, an opt-out list read mid-crawl): on a machine loaded by
#: other tests they measure the load, so `make test` runs them after the parallel run of
#: everything else, three at a time (they mostly wait out intervals: the machine was 1.3 cores
#: busy with three), and any that fails beside others again alone. (The revisit crawls on an
#: accelerated clock left this list when their flake turned out to be a scheduling bug; the dates
#: test stops each crawl on the server's record of visits, not after so many seconds.)
#: Whole modules so judged; in test_politeness, test_frontier_crawl and test_ordering_crawl only
#: the tests marked `serial` are (the others judge lower bounds, counts and orders a load cannot break).
SERIAL_MODULES = {"test_distributed_crawl", "test_render_crawl", "test_hostile_crawl", "test_package"}
#: The modules whose tests take longest (ten seconds or more on a loaded machine), longest
#: first, run first: four processes taking one test at a time then end together on short tests,
#: instead of one finishing a long test alone at the end (20 s of one busy core, measured).
LONGEST_FIRST = ("test_benches", "test_render_apps", "test_memory", "test_revisit_crawl", "test_resume",
                 "test_documents", "test_operations", "test_scrapyd", "test_first_hour", "test_report_languages",
                 "test_dashboard", "test_web_standards_crawl", "test_report", "test_archive_output",
                 "test_exports_crawl", "test_crawl",
                 "test_package", "test_hostile_crawl", "test_render_crawl",
                 "test_distributed_crawl")  # (these four: serial)
#: The one crawl the fast tier keeps: the web spider over the sandbox, end to end.
FAST_CRAWL = "test_web_crawl_stores_every_reachable_page_once_and_the_exact_link_graph"


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "slow: starts a real server or a crawl process (left out by make test-fast)")
    config.addinivalue_line("markers",
                            "serial: judged against the wall clock; make test runs it beside one other at most")


def _module(item) -> str:
    return item.module.__name__.rsplit(".", 1)[-1]


def pytest_collection_modifyitems(config, items) -> None:
    def rank(item) -> int:
        module = _module(item)
        return LONGEST_FIRST.index(module) if module in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each module keeps its order
    for item in items:
        module = _module(item)
        slow = module in SLOW_MODULES or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
        if slow and item.name != FAST_CRAWL:
            item.add_marker(pytest.mark.slow)
        if module in SERIAL_MODULES:
            item.add_marker(pytest.mark.serial)
