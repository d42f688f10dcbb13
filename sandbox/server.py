"""The sandbox web server: serves a :class:`SandboxWeb` on one loopback port.

Every host ``h<i>.sandbox.test`` is served from the same port, told apart by
the Host header. Every request is recorded (host, path, arrival, finish,
connection), and the politeness report is computed from that record on demand.

Control endpoints live under ``/__sandbox__/`` on any host name and are not
recorded: ``report`` (the politeness report; ``?interval=S&basis=idle|start``),
``log`` (the raw record as JSON lines), ``config`` and ``reset`` (POST).

Run it with ``scrapy sandbox`` or ``python -m sandbox.server``; with
``--port 0`` it picks a free port and prints ``{"port": N, ...}`` as its first
line of output, so tests and the demo can start it as a real process.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import signal
import socket
import sys
import time
from collections import Counter
from email.utils import formatdate, parsedate_to_datetime

from aiohttp import web
from aiohttp.helpers import must_be_empty_body

from crawlproj.politeness.ai_signal_rules import TDMREP_PATH
from . import hostile, structures
from .audit import Record, politeness_report
from .changes import PageChanges
from .graph import HostSpec, SandboxConfig, SandboxWeb

CONTROL = "/__sandbox__/"


class SandboxServer:
    """Serves the sandbox web and records every request it answers."""

    def __init__(self, config: SandboxConfig, port: int) -> None:
        self.web = SandboxWeb(config, port)
        self.records: list[Record] = []
        self.attempts: Counter[tuple[int, str]] = Counter()
        self._connections: dict[int, int] = {}
        self._bodies: dict[tuple[int, int], tuple[bytes, dict[str, str]]] = {}
        self.rng = random.Random(config.seed)  # session ids of the session trap
        self.robots_override: dict[int, str] = {}  # host -> robots.txt set through the control API
        self.down: set[int] = set()  # hosts whose pages answer 503 until brought up again
        self.changes = (PageChanges(config.seed, config.change_min, config.change_max, config.time_scale,
                                    origin=time.time()) if config.change_max > 0 else None)

    def _connection_id(self, request: web.BaseRequest) -> int:
        key = id(request.transport)
        return self._connections.setdefault(key, len(self._connections) + 1)

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        arrival = time.perf_counter()
        if request.path.startswith(CONTROL):
            return self.control(request)
        conn = self._connection_id(request)
        name = request.host.rsplit(":", 1)[0] if request.host else ""
        host = self.web.host_index(name)
        status, body, headers = 404, b"not found\n", {"Content-Type": "text/plain"}
        spec = HostSpec()
        dropped = False
        if host is not None and self.web.specs[host].hostile and request.path != "/robots.txt":
            return await self.hostile(request, name, conn, arrival)
        if host is None and name == structures.SHARED_ADDRESS:  # the shared server's IP literal
            host = next((i for i in self.web.hosts if self.web.specs[i].structure == "shared_ip"), None)
        if host is not None and self.web.specs[host].structure and request.path != "/robots.txt":
            return await self.structure(request, host, name, conn, arrival)
        if host is not None:
            spec = self.web.specs[host]
            if spec.trap and request.path != "/robots.txt":
                trap = self.web.trap_page(host, request.path, request.query_string, self.rng)
                if trap is not None:
                    status, body, headers = 200, trap, {"Content-Type": "text/html; charset=utf-8"}
            elif (sitemap := self.web.sitemap_file(host, request.path, self.lastmod(host))) is not None:
                status, (body, headers) = 200, sitemap
            elif (document := self.web.document_file(host, request.path, self.lastmod(host), time.time())) is not None:
                status, (body, headers) = 200, document
            elif request.path == TDMREP_PATH and (tdmrep := self.web.tdmrep_json(host)) is not None:
                status, body, headers = 200, tdmrep, {"Content-Type": "application/json"}
            elif request.path == "/robots.txt":
                status, text = self.web.robots_txt(host)
                if host in self.robots_override:
                    status, text = 200, self.robots_override[host]
                body, headers = text.encode(), {"Content-Type": "text/plain"}
                if status == 301:  # an endless chain of robots.txt redirects
                    hop = int(request.query.get("hop", "0")) + 1
                    headers["Location"] = f"/robots.txt?hop={hop}"
            elif spec.js and (asset := self.web.js_asset(host, request.path)) is not None:
                status, (body, headers) = 200, asset
            else:
                k = self.web.page_index(host, request.path) if not request.query_string else None
                if k is not None:
                    self.attempts[(host, request.path)] += 1
                    attempt = self.attempts[(host, request.path)]
                    if host in self.down or self.web.should_fail(host, request.path, attempt):
                        status, body = 503, b"try again later\n"
                        if spec.retry_after > 0:
                            headers = {**headers, "Retry-After": str(int(spec.retry_after))}
                    else:
                        dropped = self.web.should_drop(host, request.path, attempt)
                        status = 200
                        if self.changes is None:
                            body, headers = self._body(host, k)
                        else:
                            status, body, headers = self._changing(request, host, k, spec)
        if spec.latency > 0:
            await asyncio.sleep(spec.latency)
        response = web.StreamResponse(status=status, headers=headers)
        if not spec.keepalive:
            response.force_close()  # sends Connection: close
        response.content_length = len(body)
        finish = await self._prepare(request, response, body)
        if dropped:
            # Half the promised body, then the connection goes: a receive error at the client.
            await response.write(body[: len(body) // 2])
            finish = time.perf_counter()
            self._record(request, name, request.path_qs, arrival, finish, -1, conn, len(body) // 2)
            if request.transport is not None:
                request.transport.abort()
            return response
        if spec.bandwidth > 0 and request.method != "HEAD":
            chunk = max(1, int(spec.bandwidth / 20))
            for i in range(0, len(body), chunk):
                await asyncio.sleep(len(body[i : i + chunk]) / spec.bandwidth)
                finish = time.perf_counter()
                await response.write(body[i : i + chunk])
        elif request.method != "HEAD":
            await response.write(body)
        # Finish = just before the last bytes go to the socket (write() hands them to the
        # kernel before it can yield): no client can hold the whole response earlier.
        # A stamp after an await would add event-loop lag on a busy machine and make
        # polite clients look impolite.
        await response.write_eof()
        self._record(request, name, request.path_qs, arrival, finish, status, conn, len(body))
        return response

    def _body(self, host: int, k: int, version: int = 0) -> tuple[bytes, dict[str, str]]:
        key = (host, k, version)
        if key not in self._bodies:
            if len(self._bodies) > 50_000:
                self._bodies.clear()
            self._bodies[key] = self.web.render(host, k, version)
        return self._bodies[key]

    def lastmod(self, host: int):  # noqa: ANN201 - Callable[[int], float] | None
        """Page k's last change (real Unix seconds) for the sitemaps, when pages change."""
        if self.changes is None:
            return None
        return lambda k: self.changes.version(host, k, time.time())[1]

    def _changing(self, request: web.BaseRequest, host: int, k: int,
                  spec: HostSpec) -> tuple[int, bytes, dict[str, str]]:
        """A changing page: its current version with validators, 304 when the client's copy is
        current, and a rotating ad slot and timestamp outside the main text (not a change)."""
        assert self.changes is not None
        version, changed_at = self.changes.version(host, k, time.time())
        body, headers = self._body(host, k, version)
        validators: dict[str, str] = {}
        if spec.validators in ("etag", "last-modified"):
            validators["Last-Modified"] = formatdate(changed_at, usegmt=True)
        elif spec.validators == "now":  # a date that says nothing: the server's clock
            validators["Last-Modified"] = formatdate(time.time(), usegmt=True)
        if spec.validators == "etag":
            validators["ETag"] = f'"h{host}-{k}-v{version}"'
        if "ETag" in validators and request.headers.get("If-None-Match"):
            current = request.headers["If-None-Match"] in (validators["ETag"], "*")
        elif spec.validators in ("etag", "last-modified") and request.headers.get("If-Modified-Since"):
            try:
                since = parsedate_to_datetime(request.headers["If-Modified-Since"]).timestamp()
            except (TypeError, ValueError):
                since = -1.0  # an unreadable date: send the page
            current = int(changed_at) <= since  # HTTP dates have whole seconds
        else:
            current = False
        if current:
            return 304, b"", validators
        noise = (f'<aside class="ad">Sponsored {self.rng.randrange(10**6)}</aside>'
                 f'<footer class="served">Served at {time.time():.6f}</footer>').encode()
        return 200, body.replace(b"</body>", noise + b"</body>"), {**headers, **validators}

    def _record(self, request: web.BaseRequest, *fields: object) -> None:
        """Record a request with the local address it arrived at (the per-IP audit's key)."""
        sockname = request.transport.get_extra_info("sockname") if request.transport is not None else None
        self.records.append(Record(*fields, address=sockname[0] if sockname else ""))  # type: ignore[arg-type]

    async def structure(self, request: web.BaseRequest, host: int, name: str, conn: int,
                        arrival: float) -> web.StreamResponse:
        """A page of the hostile-structures family (:mod:`sandbox.structures`)."""
        spec, path, port = self.web.specs[host], request.path, self.web.port
        status, body = 200, b""
        if spec.structure == "farm":
            body = structures.farm_page(host, port, spec.structure_links)
        elif spec.structure == "shared_ip":
            if self.web.host_name(host) == name:
                body = structures.shared_root(host, port, spec.structure_links) if path == "/" else b""
            elif path in ("/", "/about.html"):
                body = structures.shared_page(name, path)
        elif spec.structure == "calendar":
            if path == "/":
                body = structures.calendar_page(0)
            elif path.startswith("/cal/") and path.rstrip("/").rsplit("/", 1)[1].isdigit():
                body = structures.calendar_page(int(path.rstrip("/").rsplit("/", 1)[1]))
        elif spec.structure == "headers":
            if path == "/":
                body = b'<html><head><title>headers</title></head><body><a href="/endless">e</a> <a href="/many">m</a></body></html>'
            elif path in ("/endless", "/many"):
                return await self._header_flood(request, name, conn, arrival, endless=path == "/endless")
        if not body:
            status, body = 404, b"not found\n"
        response = web.Response(status=status, body=body, content_type="text/html" if status == 200 else "text/plain")
        await response.prepare(request)
        finish = time.perf_counter()
        await response.write_eof()
        self._record(request, name, request.path_qs, arrival, finish, status, conn, len(body))
        return response

    async def _header_flood(self, request: web.BaseRequest, name: str, conn: int, arrival: float,
                            endless: bool) -> web.StreamResponse:
        """Header lines straight onto the socket: without end (until the client hangs up), or 600
        and then a body."""
        transport, sent, finish = request.transport, 0, time.perf_counter()
        if transport is not None:
            transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
            n = 0
            while not transport.is_closing() and (endless and n < 4_000_000 or not endless and n < 600):
                lines = structures.header_lines(n, 100 if endless else 600)
                before = time.perf_counter()
                transport.write(lines)
                if not transport.get_write_buffer_size():
                    finish = before  # the last write the kernel took whole (see hostile())
                sent, n = sent + len(lines), n + (100 if endless else 600)
                await asyncio.sleep(0)
                while transport.get_write_buffer_size() > 1 << 20 and not transport.is_closing():
                    await asyncio.sleep(0.01)  # the client reads no faster: wait, as a socket would
            if not endless:
                finish = time.perf_counter()  # the kernel takes this end whole: the client reads it
                transport.write(b"Content-Length: 5\r\nConnection: close\r\n\r\nhello")
            transport.close()
        self._record(request, name, request.path_qs, arrival, finish, 200, conn, sent)
        raise asyncio.CancelledError  # the connection is gone: aiohttp has nothing to send

    async def hostile(self, request: web.BaseRequest, name: str, conn: int, arrival: float) -> web.StreamResponse:
        """A page of the hostile family (:mod:`sandbox.hostile`), recorded like any other."""
        path, html = request.path, "text/html; charset=utf-8"
        status, headers, body = 200, {"Content-Type": html}, b""
        sent = 0
        if path == "/":
            body = hostile.index(f"http://{hostile.REFUSED_HOST}:{self.web.port}")
        elif path.startswith("/redirect/") and path[10:].isdigit():
            status, headers = 302, {"Location": f"/redirect/{int(path[10:]) + 1}"}
        elif path in ("/endless.html", "/trickle.html"):
            response = web.StreamResponse(headers={"Content-Type": html})
            await response.prepare(request)
            chunk, pause = (b"<p>" + b"x" * 65_532, 0.0) if path == "/endless.html" else (b" ", 1.0)
            # Until the client hangs up. The finish is stamped before the last write the kernel
            # took whole, as for any page: a stamp taken when the server notices the hang-up
            # comes after the client's own end by the event loop's lag, and on a busy machine
            # made a polite client's next request look early (0.0487 s for 0.05 in a loaded
            # test run). After a reset the kernel takes nothing, and bytes left in the
            # transport's buffer went (or not) at a time the server does not know.
            finish = time.perf_counter()
            try:
                while request.transport is not None and not request.transport.is_closing():
                    before = time.perf_counter()
                    await response.write(chunk)
                    transport = request.transport
                    if transport is None or transport.is_closing():
                        break
                    sent += len(chunk)
                    if not transport.get_write_buffer_size():
                        finish = before
                    await asyncio.sleep(pause)
            except (ConnectionError, RuntimeError):
                pass
            self._record(request, name, request.path_qs, arrival, finish, 200, conn, sent)
            return response
        else:
            pages = {"/deep.html": hostile.deep, "/words.html": hostile.words, "/nul.html": hostile.nul,
                     "/hrefs.html": hostile.hrefs, "/ok.html": hostile.ok, "/charset.html": hostile.charset_page,
                     "/bomb.html": hostile.bomb,
                     "/app.html": lambda: hostile.app(f"http://{hostile.REFUSED_ADDRESS}:{self.web.port}")}
            if path in pages:
                body = pages[path]()
                if path == "/bomb.html":
                    headers["Content-Encoding"] = "gzip"
            else:
                status, body, headers = 404, b"not found\n", {"Content-Type": "text/plain"}
        response = web.StreamResponse(status=status, headers=headers)
        response.content_length = len(body)
        finish = await self._send(request, response, body)
        self._record(request, name, request.path_qs, arrival, finish, status, conn, len(body))
        return response

    @staticmethod
    async def _prepare(request: web.BaseRequest, response: web.StreamResponse, body: bytes) -> float:
        """``prepare()`` the response; the finish as far as it goes, for a ``body`` to follow."""
        # A StreamResponse sends its headers inside prepare(): with no body to follow (a 302, a
        # 304, a HEAD, an empty page: aiohttp's own rule) they are the whole response, so the
        # finish is stamped before. A stamp after them read a redirect's next hop as 1.4 ms
        # early when the server lost its core between the send and the stamp.
        empty = not body or must_be_empty_body(request.method, response.status)
        before = time.perf_counter()
        await response.prepare(request)
        return before if empty else time.perf_counter()

    async def _send(self, request: web.BaseRequest, response: web.StreamResponse, body: bytes) -> float:
        """Send a whole ``body``; the finish, stamped just before the last bytes go to the socket."""
        finish = await self._prepare(request, response, body)
        if body:
            await response.write(body)
        await response.write_eof()
        return finish

    def control(self, request: web.BaseRequest) -> web.Response:
        what = request.path[len(CONTROL) :]
        if what == "report":
            raw = request.query.get("interval")
            interval = None if raw is None else float(raw)
            report = politeness_report(self.records, interval, request.query.get("basis", "idle"))
            return web.json_response(report)
        if what == "log":
            lines = (json.dumps(dataclasses.asdict(r)) for r in self.records)
            return web.Response(text="\n".join(lines) + "\n", content_type="application/x-ndjson")
        if what == "config":
            return web.json_response({"port": self.web.port, "config": config_to_dict(self.web.config)})
        if what == "robots" and request.method == "POST":
            # Replace one host's robots.txt mid-crawl (tests of the robots.txt TTL).
            self.robots_override[int(request.query["host"])] = request.query["text"]
            return web.json_response({"ok": True, "at": time.perf_counter()})  # on the record's clock
        if what == "down" and request.method == "POST":
            # Take one host's pages down (503 to every page, robots.txt still served), or up again.
            host = int(request.query["host"])
            (self.down.add if request.query.get("down", "1") == "1" else self.down.discard)(host)
            return web.json_response({"ok": True, "down": sorted(self.down)})
        if what == "reset" and request.method == "POST":
            self.records.clear()
            self.attempts.clear()
            self.robots_override.clear()
            self.down.clear()
            return web.json_response({"ok": True})
        return web.Response(status=404, text="unknown control endpoint\n")


def config_to_dict(config: SandboxConfig) -> dict:
    data = dataclasses.asdict(config)
    data["overrides"] = [[i, dataclasses.asdict(spec)] for i, spec in config.overrides]
    return data


def config_from_dict(data: dict) -> SandboxConfig:
    data = dict(data)
    data["overrides"] = tuple((int(i), HostSpec(**spec)) for i, spec in data.get("overrides", ()))
    return SandboxConfig(**data)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The sandbox's options, shared by ``scrapy sandbox`` and ``python -m``."""
    d = SandboxConfig()
    parser.add_argument("--hosts", type=int, default=d.hosts, help="number of hosts h<i>.sandbox.test")
    parser.add_argument("--pages", type=int, default=d.pages, help="pages per host (mean with --power-law)")
    parser.add_argument("--power-law", type=float, default=d.power_law, help="Zipf exponent of host sizes (0: equal)")
    parser.add_argument("--out-links", type=int, default=d.out_links, help="random links per page")
    parser.add_argument("--cross-host", type=float, default=d.cross_host, help="share of links to other hosts")
    parser.add_argument("--page-bytes", type=int, default=d.page_bytes, help="approximate page size")
    parser.add_argument("--latency", type=float, default=d.latency, help="seconds before each response")
    parser.add_argument("--bandwidth", type=float, default=d.bandwidth, help="bytes/s per response (0: unlimited)")
    parser.add_argument("--error-rate", type=float, default=d.error_rate, help="share of page attempts that get 503")
    parser.add_argument("--crawl-delay", type=float, default=d.crawl_delay, help="Crawl-delay of crawl_delay hosts")
    parser.add_argument("--no-robots-mix", action="store_true", help="every host allows everything")
    parser.add_argument("--no-japanese", action="store_true", help="no Japanese hosts")
    parser.add_argument("--content-mix", action="store_true",
                        help="content families: template, near-duplicate variants and mirror hosts")
    parser.add_argument("--js-mix", action="store_true",
                        help="JavaScript-only hosts: i %% 10 == 4 spa, 5 fetch() of JSON, 6 bare script")
    parser.add_argument("--documents", action="store_true",
                        help="documents: i %% 10 == 1 real PDFs, 2 an honest RSS feed, 3 a lying Atom feed")
    parser.add_argument("--change-min", type=float, default=d.change_min,
                        help="changing pages: shortest mean change interval, crawl-clock seconds (0: static)")
    parser.add_argument("--change-max", type=float, default=d.change_max,
                        help="changing pages: longest mean change interval, crawl-clock seconds")
    parser.add_argument("--time-scale", type=float, default=d.time_scale,
                        help="crawl-clock seconds per real second (the crawler's REVISIT_TIME_SCALE)")
    parser.add_argument("--importance", action="store_true",
                        help="preferential links: a known, skewed PageRank (SandboxWeb.pagerank)")
    parser.add_argument("--importance-tail", type=float, default=d.importance_tail,
                        help="with --importance: share of links that go to any page, not a popular one")
    parser.add_argument("--topics", type=int, default=d.topics, help="hosts are about one of this many topics")
    parser.add_argument("--topic-tunnel", type=float, default=d.topic_tunnel,
                        help="share of cross-host links that leave their topic")
    parser.add_argument("--seed", type=int, default=d.seed, help="random seed of the generated web")
    parser.add_argument(
        "--host", action="append", default=[], metavar="I:KEY=V,...",
        help="per-host override, e.g. 3:latency=0.2,error_rate=0.1,robots=missing",
    )
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (0: a free one)")
    parser.add_argument("--bind", default="127.0.0.1", help="loopback address to listen on")
    parser.add_argument("--also-bind", default="",
                        help="more loopback addresses to listen on, on the same port, comma-separated "
                             "(where the hostile structures' names are pinned)")
    parser.add_argument("--seeds-file", help="also write one seed URL per host to this file")


def config_from_args(args: argparse.Namespace) -> SandboxConfig:
    base = SandboxConfig(
        hosts=args.hosts, pages=args.pages, power_law=args.power_law, out_links=args.out_links,
        cross_host=args.cross_host, page_bytes=args.page_bytes, latency=args.latency,
        bandwidth=args.bandwidth, error_rate=args.error_rate, robots_mix=not args.no_robots_mix,
        japanese=not args.no_japanese, content_mix=args.content_mix, js_mix=args.js_mix, seed=args.seed,
        documents=args.documents,
        change_min=args.change_min or (args.change_max and args.change_max / 100), change_max=args.change_max,
        time_scale=args.time_scale, crawl_delay=args.crawl_delay, importance=args.importance,
        importance_tail=args.importance_tail, topics=args.topics, topic_tunnel=args.topic_tunnel,
    )
    overrides = []
    probe = SandboxWeb(dataclasses.replace(base, overrides=()))
    for item in args.host:
        index, _, assignments = item.partition(":")
        fields = {f.name: f.type for f in dataclasses.fields(HostSpec)}
        changes: dict[str, object] = {}
        for pair in filter(None, assignments.split(",")):
            key, _, value = pair.partition("=")
            if key not in fields:
                raise SystemExit(f"--host {item!r}: unknown field {key!r}; choose from {', '.join(fields)}")
            kind = fields[key]
            changes[key] = (value if kind == "str" else value.lower() in ("1", "true", "yes") if kind == "bool"
                            else int(value) if kind == "int" else float(value))
        overrides.append((int(index), dataclasses.replace(probe.specs[int(index)], **changes)))
    return dataclasses.replace(base, overrides=tuple(overrides))


def _listen(address: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((address, port))
    return sock


async def serve(config: SandboxConfig, port: int, bind: str = "127.0.0.1", seeds_file: str | None = None,
                also_bind: tuple[str, ...] = ()) -> None:
    sock = _listen(bind, port)
    port = sock.getsockname()[1]
    server = SandboxServer(config, port)
    runner = web.ServerRunner(web.Server(server.handle, access_log=None), handle_signals=False)
    await runner.setup()
    for listening in (sock, *(_listen(address, port) for address in also_bind)):
        await web.SockSite(runner, listening, backlog=1024).start()
    if seeds_file:
        with open(seeds_file, "w", encoding="utf-8") as fh:
            fh.write("# sandbox seeds: one root page per host\n" + "\n".join(server.web.seeds()) + "\n")
    print(json.dumps({"port": port, "bind": bind, "hosts": config.hosts,
                      "host_resolve": f"*.sandbox.test={bind}", "seeds_file": seeds_file}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="sandbox", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    asyncio.run(serve(config_from_args(args), args.port, args.bind, args.seeds_file,
                      tuple(filter(None, args.also_bind.split(",")))))


if __name__ == "__main__":
    sys.exit(main())
