"""Pages are parsed off the reactor's thread (the Scrapy adapter of :mod:`crawlproj.content.budget`).

A page thread runs the parse and the extraction while the reactor goes on
dispatching requests, taking the GIL back from the thread's Python parts every switch
interval. Measured on real documentation pages before this: a 6 MB page (17,000
links) held the reactor 0.4-3 s, and every host's next request waited that long.
What a thread cannot take off the reactor is C code that keeps the GIL: on Node.js's
5.8 MB ``all.html``, resiliparse's main-content extraction (``extract_plain_text``)
keeps it for its whole 263 ms (lexbor's parse for about 22 ms at a time). So a page of
``PAGE_PROCESS_MIN_BYTES`` or more has its main text extracted and signed in a helper
process, spawned on first use, which dies with the crawl.
Small pages go too (``PAGE_THREAD_MIN_BYTES`` 0): a polite crawl's due requests then
wait less for the page in hand, and the Python parts of the thread's work give the
GIL back every ``PAGE_THREAD_SWITCH_INTERVAL``.

:class:`~crawlproj.downloadermiddlewares.page_parse.PageParseMiddleware` parses an HTML response (and reads its links and
title) in the page thread before the render decision and the spider read it;
:class:`~crawlproj.content.near_duplicates_pipeline.NearDuplicatePipeline` extracts the page's
main text there too. Work that runs past ``PAGE_STAGE_TIMEOUT`` is given up on: the
page is stored with what could be extracted and ``budget/timeout/<stage>`` counted.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.crawler import Crawler

from ..errors import DocumentFailed, StageTimeout
from ..extensions.stalls import backlogged
from ..store.writer import asyncio_reactor

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _die_with_parent(nice: int = 0) -> None:
    """A helper process's initializer: it ends when the crawl does, even after a kill -9
    (Linux; elsewhere it ends when its queue closes), and runs ``nice`` steps below the crawl."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the crawl's to handle
    if nice > 0 and hasattr(os, "setpriority"):
        os.setpriority(os.PRIO_PROCESS, 0, min(19, os.getpriority(os.PRIO_PROCESS, 0) + nice))
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _vm_bytes() -> int:
    """This process's virtual memory size (0 when unreadable)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        return 0


def _capped(memory: int, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the document helper, whose address space is capped at its size when
    first called plus ``memory`` bytes (``RLIMIT_AS``): a compression bomb or a recursive
    object graph fails its allocation (MemoryError, or the helper dies) instead of taking
    the machine's memory."""
    import resource

    if memory > 0 and resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + memory, resource.RLIM_INFINITY))
    return fn(*args)


def _start_document_helper(prepare: Callable[[], Any] | None, nice: int = 0) -> None:
    _die_with_parent(nice)
    if prepare is not None:  # loaded before the cap: the parser's libraries and models are not the document's
        prepare()


#: How long closing waits for a helper process's manager thread once the helper is killed.
CLOSE_JOIN_SECONDS = 5.0


class PageWorkers:
    """The crawl's page threads (``PAGE_THREADS``): run a function there and await it, within
    ``PAGE_STAGE_TIMEOUT``. Pages of fewer than ``PAGE_THREAD_MIN_BYTES`` are not sent.
    Work on a page of ``PAGE_PROCESS_MIN_BYTES`` or more goes to a helper process instead
    (one, started on first use), for C code that keeps the GIL; its function and arguments
    must pickle."""

    def __init__(self, threads: int, timeout: float, min_bytes: int, switch_interval: float = 0.0,
                 process_min_bytes: int = 0, backlog: int = 0, backlog_bytes: int = 0, process_nice: int = 0) -> None:
        self.threads, self.timeout, self.min_bytes = threads, timeout, min_bytes
        self.process_min_bytes, self.process_nice = process_min_bytes, process_nice
        # PAGE_STAGE_BACKLOG(_BYTES): busy() from this many pieces of work, or pages' bytes, queued or running
        self.backlog, self.backlog_bytes = backlog, backlog_bytes
        self.pending = self.pending_bytes = 0
        self.executor: ThreadPoolExecutor | None = None
        self.process: ProcessPoolExecutor | None = None
        self.documents: ProcessPoolExecutor | None = None  # run_document's helper, made on first use
        self._helper_turn: asyncio.Future | None = None  # done when the helper's last page sent is
        self._document_turn: asyncio.Lock | None = None
        # Threads need asyncio's loop to be awaited from Scrapy's coroutines.
        self.enabled = threads > 0 and asyncio_reactor()
        if self.enabled and switch_interval > 0:
            # A page thread running Python holds the GIL for up to this long while the
            # reactor waits for it (Python's default, 5 ms, measurably delayed due requests).
            sys.setswitchinterval(switch_interval)

    @classmethod
    def of(cls, crawler: Crawler) -> PageWorkers:
        """The crawler's one pool, made on first use and shut down when the spider closes."""
        workers = _workers.get(crawler)
        if workers is None:
            s = crawler.settings
            workers = _workers[crawler] = cls(s.getint("PAGE_THREADS"), s.getfloat("PAGE_STAGE_TIMEOUT"),
                                              s.getint("PAGE_THREAD_MIN_BYTES"), s.getfloat("PAGE_THREAD_SWITCH_INTERVAL"),
                                              s.getint("PAGE_PROCESS_MIN_BYTES"), s.getint("PAGE_STAGE_BACKLOG"),
                                              s.getint("PAGE_STAGE_BACKLOG_BYTES"), s.getint("PAGE_PROCESS_NICE"))
            crawler.signals.connect(workers.close, signal=signals.spider_closed)
        return workers

    def busy(self) -> bool:
        """Whether ``PAGE_STAGE_BACKLOG`` pieces of work, or ``PAGE_STAGE_BACKLOG_BYTES`` of their
        pages' bytes, are queued or running (the frontier waits)."""
        return backlogged(self.pending, self.pending_bytes, self.backlog, self.backlog_bytes)

    def wants(self, size: int) -> bool:
        return self.enabled and size >= self.min_bytes

    def _executor(self, size: int | None) -> Executor:
        if self.process_min_bytes and size is not None and size >= self.process_min_bytes:
            if self.process is None:
                # Spawned, not forked: the crawl's threads and reactor are not copied.
                self.process = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                                   initializer=_die_with_parent, initargs=(self.process_nice,))
            return self.process
        if self.executor is None:
            self.executor = ThreadPoolExecutor(self.threads, thread_name_prefix="crawlproj-page")
        return self.executor

    async def run(self, fn: Callable[..., T], *args: Any, size: int | None = None) -> T:
        """``fn(*args)`` in a page thread, or in the helper process for a page of ``size`` bytes
        from ``PAGE_PROCESS_MIN_BYTES``; :class:`StageTimeout` when it takes too long. A thread's
        work finishes in the background and its result is dropped.

        In the helper, a page's time counts from its turn (when the work sent before it is
        done), not from when it was sent: a helper behind a crawl that keeps the CPUs busy (it
        runs niced) is slow, not stuck, and pages queued behind a slow one ran out of time
        waiting (two workers on a slow machine: 53 pages in 110 s stored without their links
        or content). A page past its time has the helper killed and a new one started; the
        pages that were queued behind it are sent to the new one, once."""
        self.pending += 1
        self.pending_bytes += size or 0
        try:
            pool = self._executor(size)
            if pool is self.process:
                return await self._run_in_helper(fn, args, size)
            return await asyncio.wait_for(asyncio.wrap_future(pool.submit(fn, *args)), self.timeout)
        except asyncio.TimeoutError:
            raise StageTimeout(f"over {self.timeout:g} s") from None
        finally:
            self.pending -= 1
            self.pending_bytes -= size or 0

    async def _run_in_helper(self, fn: Callable[..., T], args: tuple, size: int | None, again: bool = False) -> T:
        pool = self._executor(size)
        future = _uncancelled(asyncio.wrap_future(pool.submit(fn, *args)))
        ahead, turn = self._helper_turn, asyncio.get_running_loop().create_future()
        self._helper_turn = turn
        try:
            if ahead is not None and not ahead.done():
                await asyncio.wait([ahead])  # (one helper, first in first out: then this page runs)
            return await asyncio.wait_for(future, self.timeout)
        except asyncio.TimeoutError:
            self._restart_process(pool)
            raise
        except BrokenProcessPool:  # killed under it, past another page's time
            if again:
                raise StageTimeout("the helper process was restarted twice under it") from None
        finally:
            if not turn.done():
                turn.set_result(None)
        return await self._run_in_helper(fn, args, size, again=True)

    async def run_document(self, fn: Callable[..., T], *args: Any, timeout: float, memory: int,
                           prepare: Callable[[], Any] | None = None) -> T:
        """``fn(*args)`` in the document helper process (one, spawned on first use, apart from the
        page helper): a parser of files that are not HTML (PDF) runs C code on hostile input, so
        it is bounded in time (:class:`StageTimeout` after ``timeout`` s) and in memory
        (``memory`` bytes above the helper's own; :class:`DocumentFailed` past it), and a helper
        that fails is replaced for the next document. ``prepare`` (picklable) runs once in each
        new helper, before the cap."""
        if self._document_turn is None:
            self._document_turn = asyncio.Lock()
        self.pending += 1
        try:
            # One document at a time in the helper: a helper that dies is the fault of the one
            # document in it (not of those queued behind), and its time is its own.
            async with self._document_turn:
                if self.documents is None:
                    self.documents = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                                         initializer=_start_document_helper,
                                                         initargs=(prepare, self.process_nice))
                pool = self.documents
                try:
                    return await asyncio.wait_for(_uncancelled(asyncio.wrap_future(pool.submit(_capped, memory, fn, *args))),
                                                  timeout)
                except asyncio.TimeoutError:
                    self.documents = None
                    self._kill(pool)
                    raise StageTimeout(f"over {timeout:g} s") from None
                except MemoryError:  # what the helper holds after it is anyone's guess: a new one
                    self.documents = None
                    self._kill(pool)
                    raise DocumentFailed("over its memory cap") from None
                except BrokenProcessPool:  # died under it (an allocation past the cap aborts PDFium)
                    self.documents = None
                    raise DocumentFailed("its helper process died") from None
        finally:
            self.pending -= 1

    @staticmethod
    def _kill(pool: Executor) -> None:
        # ProcessPoolExecutor kills its workers only from Python 3.14 (kill_workers()).
        for process in list(getattr(pool, "_processes", {}).values()):
            process.kill()
        pool.shutdown(wait=False)

    def _restart_process(self, pool: Executor) -> None:
        if self.process is pool:  # (not a helper started since)
            self.process = None
        # Not cancel_futures (in _kill): pages queued behind get BrokenProcessPool, not a
        # cancellation that would read as their own task's.
        self._kill(pool)
        logger.warning("the page helper process ran past PAGE_STAGE_TIMEOUT (%g s): restarted", self.timeout)

    def close(self) -> None:
        """Done with the crawl: the threads let go, the helper processes killed and their manager
        threads joined (bounded). A manager thread still closing its wake-up pipe when Python
        exits races concurrent.futures' exit hook, which then writes to the closed pipe and
        prints a traceback (EBADF) after the crawl's last line (Python 3.11)."""
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)
        for pool in (self.process, self.documents):
            if pool is not None:
                manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
                self._kill(pool)
                if manager is not None:
                    manager.join(CLOSE_JOIN_SECONDS)
        self.executor = self.process = self.documents = self._helper_turn = None


def _uncancelled(future: asyncio.Future) -> asyncio.Future:
    """``future`` (a helper process's work) to await without cancelling it when its awaiter gives
    up: Python 3.11's process pool, when its helper is killed, fails on a cancelled piece of work
    it still holds (InvalidStateError in its manager thread), and then nothing closes the pipe
    its feeder thread may be writing a large page into, and the crawl hangs at exit joining that
    thread. The work left is failed by the restart (BrokenProcessPool), or dropped at close."""
    future.add_done_callback(_retrieved)
    return asyncio.shield(future)


def _retrieved(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # read, so that asyncio does not log it as never retrieved


_workers: WeakKeyDictionary = WeakKeyDictionary()
