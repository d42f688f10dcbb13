"""The sandbox web: a deterministic synthetic multi-host web (pure logic).

Everything about the sandbox that a test needs as ground truth lives here:
which pages exist, what each page links to and with which anchor text, which
paths each host's robots.txt forbids, and how each page is encoded. The server
(:mod:`sandbox.server`) only renders what this module decides, so a
test can compute the expected crawl without talking to the server.

Hosts are ``h<i>.sandbox.test``. Page ``k`` of a host has a path decided by
``k`` alone (``/`` for 0, ``/p/<k>.html`` normally, ``/private/<k>.html`` and
``/p/<k>.cgi`` for some ``k``), so a robots.txt variant can forbid part of
every host. Each host's page set is a binary tree (page ``k`` links to
``2k+1`` and ``2k+2``) plus random links inside the host and across hosts, so
every page is within ``log2(pages)`` hops of its host's root.

New page families (traps, near-duplicates, changing pages, JS-only pages) are
added as a new :class:`HostSpec` kind plus a branch in :meth:`SandboxWeb.page`.

Content families (``content_mix``) give the near-duplicate pipeline labelled
ground truth: ``variants`` hosts hold families of a page and copies with a
known fraction of words edited (an exact byte copy among them), ``mirror``
hosts serve another host's pages under their own name (and charset), and
``template`` hosts share one heavy layout (header, navigation, sidebar,
footer) around distinct main text. English and Japanese variants of each.
"""

from __future__ import annotations

import base64
import bisect
import gzip
import hashlib
import heapq
import json
import random
import re
from collections import deque
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from dataclasses import dataclass, field, replace
from email.utils import formatdate
from functools import lru_cache
from html import escape as html_escape

from multidict import CIMultiDict

from crawlproj.politeness.robots_rules import RobotsRules

DOMAIN = "sandbox.test"
USER_AGENT_TOKEN = "crawlproj"
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
#: Static pages' sitemap lastmod: page k changed last this many days after it.
SITEMAP_EPOCH = 1_700_000_000.0
#: The robots.txt Content-Signal of an ai_signals host.
CONTENT_SIGNAL = "search=yes, ai-input=yes, ai-train=no"

#: robots.txt variants, assigned to hosts round-robin when ``robots_mix`` is on.
ROBOTS_VARIANTS = ("allow", "private", "wildcard", "crawl_delay", "missing", "error")
#: What changing pages send for conditional requests, by host index modulo 3.
VALIDATORS = ("etag", "last-modified", "none", "now")  # by host index, i % 4
#: charsets of Japanese hosts, and whether the charset is declared in the header or only in <meta>.
JAPANESE_CHARSETS = ("utf-8", "shift_jis", "euc-jp")

_EN_WORDS = (
    "crawler frontier politeness archive index search harvest server host page link anchor "
    "robots interval queue fetch revisit change estimate freshness mirror shingle signature "
    "bloom filter canonical redirect charset encoding sandbox graph render dynamic static "
    "network latency bandwidth error retry backoff schedule priority breadth depth trap"
).split()
# Kanji and kana that exist in JIS X 0208, so Shift_JIS and EUC-JP can carry them.
_JA_WORDS = (
    "日本語 検索 収集 巡回 更新 頻度 推定 負荷 軽減 間隔 文書 索引 保存 重複 検出 "
    "東京 大学 研究 情報 技術 ウェブ ページ サーバ ロボット クローラ です ます して いる "
    "ある こと もの ため から まで による について として では には"
).split()


@dataclass(frozen=True)
class HostSpec:
    """Per-host behaviour of the sandbox server."""

    robots: str = "allow"
    latency: float = 0.0  # seconds before the first byte
    bandwidth: float = 0.0  # bytes per second; 0 means unlimited
    error_rate: float = 0.0  # probability that one attempt at a page answers 503
    retry_after: float = 0.0  # Retry-After seconds sent with those 503s (0: no header)
    drop_rate: float = 0.0  # probability that one attempt's connection drops halfway through the body
    keepalive: bool = True  # False: every response says Connection: close
    trap: str = ""  # "" | "calendar" (infinite CGI) | "deep" (endless paths) | "session" (ids in every link)
    charset: str = "utf-8"
    japanese: bool = False
    charset_in_header: bool = True
    crawl_delay: float = 1.0  # used by the crawl_delay robots variant
    # "" | "template" (shared layout) | "variants" (near-duplicate families) | "mirror" (the
    # text of mirror_of's pages under a banner) | "copy" (mirror_of's very bytes: in-host links
    # are relative, so the copy reads as a site of its own, as a mirror made by rsync does)
    content: str = ""
    mirror_of: int = -1  # the host a "mirror" or "copy" host copies
    # "" static | "spa" (#app shell, data inline) | "fetch" (#root shell, JSON by fetch()) | "bare" |
    # "spin" (a script that never ends, on every page but the root: its render times out)
    js: str = ""
    # changing pages: "etag" (and an honest Last-Modified) | "last-modified" (honest, alone) |
    # "now" (Last-Modified is the time of the request, as some servers send; no 304s) | "none"
    validators: str = "etag"
    hostile: bool = False  # serves sandbox.hostile's pages instead of a site
    # a hostile structure instead of a site (sandbox.structures): "farm" | "shared_ip" |
    # "calendar" | "headers"; structure_links: the farm's new hosts a page, the shared server's names
    structure: str = ""
    structure_links: int = 50_000
    robots_header: bool = False  # robots directives in X-Robots-Tag headers, not <meta name=robots>
    # "index": the "allow" robots.txt lists /sitemap-index.xml, which lists a gzipped sitemap (even
    # pages) and a plain one (odd pages), each URL with <lastmod>, <changefreq> and <priority>.
    sitemap: str = ""
    # AI-use signals: robots.txt Content-Signal (ai-train=no), /.well-known/tdmrep.json reserving
    # the /p/*.cgi pages, and a tdm-reservation: 1 header on the /p/*.html pages whose k % 3 == 0.
    ai_signals: bool = False
    # Documents: "rss" (an honest RSS 2.0 feed at /feed.xml: each page's last change) | "atom_lying"
    # (an Atom feed at /feed.atom whose every entry says it changed at the moment of the request),
    # either announced by <link rel=alternate> on the root page; pdfs: the root links real PDFs
    # from Debian packages under /docs/ (one labelled application/octet-stream) and a hand-made
    # one whose links lead to /from-pdf.html, a page no HTML page links.
    feed: str = ""
    pdfs: bool = False


@dataclass(frozen=True)
class SandboxConfig:
    """What the sandbox web looks like. Every field has a ``scrapy sandbox`` option."""

    hosts: int = 50
    pages: int = 20  # pages per host, or the mean size when power_law > 0
    power_law: float = 0.0  # Zipf exponent of host sizes; 0 gives every host `pages` pages
    out_links: int = 6  # random links per page besides the tree links
    cross_host: float = 0.2  # fraction of random links that go to another host
    nofollow: float = 0.1  # fraction of random links marked rel=nofollow
    page_bytes: int = 2000  # approximate body size of a page
    latency: float = 0.0
    bandwidth: float = 0.0
    error_rate: float = 0.0
    robots_mix: bool = True  # give hosts the ROBOTS_VARIANTS round-robin
    crawl_delay: float = 1.0  # Crawl-delay of the crawl_delay robots variant
    japanese: bool = True  # every 10th host (i % 10 in 7, 8, 9) serves Japanese text
    special_pages: bool = True  # base href, <area>, <link rel=next>, meta robots pages
    content_mix: bool = False  # content families by i % 10: 0, 1, 9 template; 2, 7 variants; 3, 8 mirror
    js_mix: bool = False  # JavaScript-only hosts by i % 10: 4 spa, 5 fetch, 6 bare
    documents: bool = False  # by i % 10: 1 PDFs, 2 an honest RSS feed, 3 a lying Atom feed
    # Changing pages (0: static): each page changes as a Poisson process with a mean interval
    # log-uniform in [change_min, change_max] crawl-clock seconds; the crawl clock runs
    # time_scale x real time. Validators by i % 4: ETag, Last-Modified only, none, Last-Modified at the request time.
    change_min: float = 0.0
    change_max: float = 0.0
    time_scale: float = 1.0
    # Link-based importance (issue 10): link targets are preferential, so a few hosts and, within
    # each host, a few pages (at random depths) draw most links; :meth:`SandboxWeb.pagerank` is
    # the ground truth.
    importance: bool = False
    importance_tail: float = 0.8  # share of those links that go to any page instead (the long tail)
    # Topics (issue 10): each host is about one of ``topics`` subjects (its pages' text draws on
    # that subject's words); cross-host links stay within the topic but for ``topic_tunnel``
    # of them, the tunnels a focused crawler must go through. 0: no topics.
    topics: int = 0
    topic_tunnel: float = 0.15
    seed: int = 1
    overrides: tuple[tuple[int, HostSpec], ...] = ()  # (host index, spec) pairs

    def with_overrides(self, **per_host: HostSpec) -> SandboxConfig:
        return replace(self, overrides=tuple((int(k), v) for k, v in per_host.items()))


@dataclass(frozen=True)
class Link:
    """One link as it appears in a page (target is absolute and canonical)."""

    target: str
    anchor: str
    nofollow: bool = False
    kind: str = "a"  # a | area | link


@dataclass(frozen=True)
class Page:
    host: int
    index: int
    url: str
    path: str
    title: str
    text: str
    links: tuple[Link, ...]
    meta_nofollow: bool = False
    meta_noindex: bool = False
    base_href: str | None = None
    family: tuple[int, int] | None = None  # (host, family) of a page of a variants host


@dataclass
class SandboxWeb:
    """The sandbox web for one config, served on one port."""

    config: SandboxConfig = field(default_factory=SandboxConfig)
    port: int = 80

    def __post_init__(self) -> None:
        cfg = self.config
        self._sizes = _host_sizes(cfg.hosts, cfg.pages, cfg.power_law)
        overrides = dict(cfg.overrides)
        self.specs: list[HostSpec] = [overrides.get(i) or self._default_spec(i) for i in range(cfg.hosts)]
        for i, spec in enumerate(self.specs):
            if spec.content in ("mirror", "copy"):  # a mirror has exactly its original's pages
                self._sizes[i] = self._sizes[spec.mirror_of]
        self.page = lru_cache(maxsize=20000)(self._page)  # type: ignore[method-assign]
        self._rankings = lru_cache(maxsize=4096)(self._ranking)  # type: ignore[method-assign]
        if cfg.topics:
            order = self._ranking("topics", cfg.hosts)
            self._host_topic = {h: i % cfg.topics for i, h in enumerate(order)}
            self._topic_hosts = {t: sorted(h for h in self.hosts if self._host_topic[h] == t)
                                 for t in range(cfg.topics)}

    # -- hosts -----------------------------------------------------------
    def _default_spec(self, i: int) -> HostSpec:
        cfg = self.config
        japanese = cfg.japanese and i % 10 in (7, 8, 9)
        return HostSpec(
            robots=ROBOTS_VARIANTS[i % len(ROBOTS_VARIANTS)] if cfg.robots_mix else "allow",
            latency=cfg.latency,
            bandwidth=cfg.bandwidth,
            error_rate=cfg.error_rate,
            japanese=japanese,
            charset=JAPANESE_CHARSETS[i % 10 - 7] if japanese else "utf-8",
            # Alternate header-declared and <meta>-only charsets between decades of hosts.
            charset_in_header=(i // 10) % 2 == 0,
            crawl_delay=cfg.crawl_delay,
            content=_CONTENT_MIX.get(i % 10, "") if cfg.content_mix else "",
            mirror_of=i - 1 if cfg.content_mix and i % 10 in (3, 8) else -1,
            js=_JS_MIX.get(i % 10, "") if cfg.js_mix else "",
            validators=VALIDATORS[i % len(VALIDATORS)],
            feed={2: "rss", 3: "atom_lying"}.get(i % 10, "") if cfg.documents else "",
            pdfs=cfg.documents and i % 10 == 1,
        )

    def host_name(self, i: int) -> str:
        return f"h{i}.{DOMAIN}"

    def origin(self, i: int) -> str:
        return f"http://{self.host_name(i)}" + ("" if self.port == 80 else f":{self.port}")

    def host_index(self, name: str) -> int | None:
        # h<i>.sandbox.test, and the names of a hostile structure's host i (structures.py):
        # <label>.h<i>-farm.test and n<k>-h<i>-ip.test
        m = re.fullmatch(rf"(?:h(\d+)\.{re.escape(DOMAIN)}|[a-z0-9]+\.h(\d+)-farm\.test|n\d+-h(\d+)-ip\.test)\.?",
                         name.split(":")[0].lower())
        if m:
            index = int(next(g for g in m.groups() if g is not None))
            return index if index < self.config.hosts else None
        return None

    def size(self, i: int) -> int:
        return self._sizes[i]

    @property
    def hosts(self) -> range:
        return range(self.config.hosts)

    def seeds(self) -> list[str]:
        """One seed a host: its root page."""
        return [self.origin(i) + "/" for i in self.hosts]

    # -- paths -----------------------------------------------------------
    @staticmethod
    def path(k: int) -> str:
        if k == 0:
            return "/"
        if k % 7 == 3:
            return f"/private/{k}.html"
        if k % 5 == 2:
            return f"/p/{k}.cgi"
        return f"/p/{k}.html"

    def page_index(self, host: int, path: str) -> int | None:
        m = re.fullmatch(r"/(?:p|private)/(\d+)\.(?:html|cgi)", path)
        k = 0 if path == "/" else int(m.group(1)) if m else None
        if k is None or k >= self.size(host) or self.path(k) != path:
            return None
        return k

    def url(self, host: int, k: int) -> str:
        return self.origin(host) + self.path(k)

    # -- robots ----------------------------------------------------------
    def robots_txt(self, host: int) -> tuple[int, str]:
        """(status, body) of the host's robots.txt."""
        spec = self.specs[host]
        agent = f"User-agent: {USER_AGENT_TOKEN}\nDisallow: /private/\n\nUser-agent: *\n"
        if spec.robots == "missing":
            return 404, "not found\n"
        if spec.robots == "error":
            return 503, "temporarily unavailable\n"
        if spec.robots == "redirect":  # only by override: endless redirects (RFC 9309: after 5, unavailable)
            return 301, "moved\n"
        if spec.robots == "private":
            return 200, agent + "Disallow: /nothing-here/\n"
        if spec.robots == "wildcard":
            # Google-style wildcards, and the longest match wins: /p/2.cgi stays allowed.
            return 200, "User-agent: *\nDisallow: /*.cgi$\nAllow: /p/2.cgi$\n"
        if spec.robots == "crawl_delay":
            return 200, f"User-agent: *\nCrawl-delay: {spec.crawl_delay:g}\nDisallow:\n"
        signal = f"Content-Signal: {CONTENT_SIGNAL}\n" if spec.ai_signals else ""
        sitemap = "/sitemap-index.xml" if spec.sitemap == "index" else "/sitemap.xml"
        return 200, f"User-agent: *\n{signal}Disallow:\n\nSitemap: {self.origin(host)}{sitemap}\n"

    # -- sitemaps and AI-use signals -------------------------------------
    def sitemap_file(self, host: int, path: str,
                     lastmod: Callable[[int], float] | None = None) -> tuple[bytes, dict[str, str]] | None:
        """The sitemap file at ``path`` (None: there is none). ``lastmod(k)``: page k's last change,
        real Unix seconds (default: a day apart from :data:`SITEMAP_EPOCH`)."""
        spec = self.specs[host]
        if spec.robots != "allow":
            return None
        xml = {"Content-Type": "application/xml"}
        if spec.sitemap != "index":
            if path != "/sitemap.xml":
                return None
            locs = "".join(f"<url><loc>{self.url(host, k)}</loc></url>" for k in range(self.size(host)))
            return _xml(f'<urlset xmlns="{SITEMAP_NS}">{locs}</urlset>'), xml
        parts = {"/sitemaps/pages-1.xml.gz": 0, "/sitemaps/pages-2.xml": 1}
        stamp = lastmod or (lambda k: SITEMAP_EPOCH + 86400.0 * k)
        if path == "/sitemap-index.xml":
            items = "".join(f"<sitemap><loc>{self.origin(host)}{part}</loc><lastmod>{_w3c(SITEMAP_EPOCH)}</lastmod>"
                            f"</sitemap>" for part in parts)
            return _xml(f'<sitemapindex xmlns="{SITEMAP_NS}">{items}</sitemapindex>'), xml
        if path not in parts:
            return None
        entries = "".join(
            f"<url><loc>{self.url(host, k)}</loc><lastmod>{_w3c(stamp(k))}</lastmod>"
            f"<changefreq>{'daily' if k == 0 else 'weekly'}</changefreq><priority>{1.0 if k == 0 else 0.5}</priority>"
            f"</url>" for k in range(parts[path], self.size(host), 2))
        body = _xml(f'<urlset xmlns="{SITEMAP_NS}">{entries}</urlset>')
        if path.endswith(".gz"):
            return gzip.compress(body, mtime=0), {"Content-Type": "application/gzip"}
        return body, xml

    # -- documents: feeds and PDFs ------------------------------------------
    FEED_ENTRIES = 50

    def document_file(self, host: int, path: str, lastmod: Callable[[int], float] | None = None,
                      now: float = 0.0) -> tuple[bytes, dict[str, str]] | None:
        """A feed or PDF of a ``feed`` or ``pdfs`` host at ``path`` (None: there is none)."""
        spec = self.specs[host]
        stamp = lastmod or (lambda k: SITEMAP_EPOCH + 86400.0 * k)
        pages = range(min(self.size(host), self.FEED_ENTRIES))
        if spec.feed == "rss" and path == "/feed.xml":
            items = "".join(f"<item><title>{html_escape(self.page(host, k).title)}</title><link>{self.url(host, k)}</link>"
                            f"<pubDate>{formatdate(stamp(k), usegmt=True)}</pubDate></item>" for k in pages)
            return _xml(f'<rss version="2.0"><channel><title>{self.host_name(host)}</title>'
                        f"<link>{self.origin(host)}/</link><language>en</language>{items}</channel></rss>"), \
                {"Content-Type": "application/rss+xml"}
        if spec.feed == "atom_lying" and path == "/feed.atom":
            told = _w3c(now)  # every entry "just changed": a lie a crawler must not chase
            entries = "".join(f'<entry><title>{html_escape(self.page(host, k).title)}</title><id>{self.url(host, k)}</id>'
                              f'<link href="{self.url(host, k)}"/><updated>{told}</updated></entry>' for k in pages)
            return _xml(f'<feed xmlns="http://www.w3.org/2005/Atom"><title>{self.host_name(host)}</title>'
                        f"<id>{self.origin(host)}/</id><updated>{told}</updated>{entries}</feed>"), \
                {"Content-Type": "application/atom+xml"}
        if not spec.pdfs:
            return None
        from . import pdfs

        if path == "/docs/report.pdf":
            return pdfs.text_pdf([f"Read {self.origin(host)}/from-pdf.html for the details", "Appendix"],
                                 links=[f"{self.origin(host)}/from-pdf.html"], title=f"Report of {self.host_name(host)}",
                                 author="Sandbox"), {"Content-Type": "application/pdf"}
        if path == "/docs/manual.bin":  # a PDF under a label that says nothing
            return pdfs.real_pdf("bzip2-manual.pdf"), {"Content-Type": "application/octet-stream"}
        name = path.removeprefix("/docs/")
        if path.startswith("/docs/") and name in pdfs.REAL_PDFS:
            return pdfs.real_pdf(name), {"Content-Type": "application/pdf"}
        if path == "/from-pdf.html":
            return (b"<!DOCTYPE html><html><head><title>Found through a PDF</title></head><body>"
                    b"<p>Only a PDF links this page.</p></body></html>"), {"Content-Type": "text/html; charset=utf-8"}
        return None

    def document_paths(self, host: int) -> list[str]:
        """The documents a host's root page links (and, for a PDF host, the page only its PDF links)."""
        from . import pdfs

        spec = self.specs[host]
        paths = {"rss": ["/feed.xml"], "atom_lying": ["/feed.atom"]}.get(spec.feed, [])
        if spec.pdfs:
            paths += [f"/docs/{name}" for name in pdfs.REAL_PDFS if name != "bzip2-manual.pdf"]
            paths += ["/docs/manual.bin", "/docs/report.pdf"]
        return paths

    def sitemap_lastmods(self, host: int, lastmod: Callable[[int], float] | None = None) -> dict[str, float]:
        """URL -> the <lastmod> the host's sitemaps give it (whole seconds, as written)."""
        stamp = lastmod or (lambda k: SITEMAP_EPOCH + 86400.0 * k)
        return {self.url(host, k): float(int(stamp(k))) for k in range(self.size(host))}

    def tdmrep_json(self, host: int) -> bytes | None:
        """``/.well-known/tdmrep.json`` of an ``ai_signals`` host: the /p/*.cgi pages reserved."""
        if not self.specs[host].ai_signals:
            return None
        return json.dumps([{"location": "/p/*.cgi$", "tdm-reservation": 1,
                            "tdm-policy": f"{self.origin(host)}/tdm-policy.json"},
                           {"location": "/", "tdm-reservation": 0}]).encode()

    def tdm_header_reserved(self, host: int, k: int) -> bool:
        """Whether page k of an ``ai_signals`` host sends ``tdm-reservation: 1``."""
        return self.specs[host].ai_signals and self.path(k).endswith(".html") and k % 3 == 0 and k > 0

    def tdm_reserved(self, host: int, k: int) -> bool:
        """Whether tdmrep.json reserves page k (a crawler skipping reserved pages never asks for it)."""
        return self.specs[host].ai_signals and self.path(k).endswith(".cgi")

    def allowed(self, host: int, path: str, agent: str = USER_AGENT_TOKEN) -> bool:
        """What an RFC 9309 crawler may fetch: 4xx robots allow all, 5xx forbid all."""
        status, body = self.robots_txt(host)
        if status >= 500:
            return False
        if status >= 300:  # 4xx, or too many redirects: unavailable, so no rules
            return True
        return _robots(body).allowed(self.origin(host) + path, agent)

    # -- traps -----------------------------------------------------------
    def trap_page(self, host: int, path: str, query: str, rng: random.Random) -> bytes | None:
        """The body of a page on a trap host, or None (404). Trap hosts are endless by design."""
        trap = self.specs[host].trap
        links: list[str] = []
        if trap == "calendar" and path in ("/", "/cal.cgi"):
            m = re.fullmatch(r"m=(-?\d+)", query)
            month = int(m.group(1)) if m else 0
            links = [f"/cal.cgi?m={month + 1}", f"/cal.cgi?m={month - 1}"]
        elif trap == "deep" and path.endswith("/"):
            depth = path.count("/")
            links = [path + "loop/", path + f"d{depth}/"]
        elif trap == "session" and (path == "/" or re.fullmatch(r"/s/\d+\.html", path)):
            k = 0 if path == "/" else int(path[3:-5])
            if k >= self.size(host):
                return None
            # A session id as PHP and phpBB make them (32 hex digits): a new one in every link.
            links = [f"/s/{c}.html?sid={rng.getrandbits(128):032x}" for c in (2 * k + 1, 2 * k + 2) if c < self.size(host)]
        else:
            return None
        items = "".join(f'<li><a href="{href}">next</a></li>' for href in links)
        return f"<!DOCTYPE html>\n<html><head><title>trap {trap}</title></head><body><ul>{items}</ul></body></html>\n".encode()

    # -- pages -----------------------------------------------------------
    def _page(self, host: int, k: int) -> Page:
        cfg, spec = self.config, self.specs[host]
        if spec.content in ("mirror", "copy"):
            return self._mirror_page(host, k)
        if spec.content == "variants" and k > 0:
            return self._variant_page(host, k)
        rng = random.Random(f"{cfg.seed}:{host}:{k}")
        size = self.size(host)
        words = _JA_WORDS if spec.japanese else _EN_WORDS
        links: list[Link] = []
        if spec.content == "variants":  # the root is an index of every page of the host
            for child in range(1, size):
                links.append(Link(self.url(host, child), self._anchor(rng, words)))
        for child in (2 * k + 1, 2 * k + 2):
            if child < size and spec.content != "variants":
                links.append(Link(self.url(host, child), self._anchor(rng, words)))
        topic_words = self.topic_words(host)
        for _ in range(cfg.out_links):
            if cfg.hosts > 1 and rng.random() < cfg.cross_host:
                other = self._other_host(rng, host)
                if cfg.importance:
                    target = self.url(other, self._popular_page(rng, other))
                else:
                    target = self.url(other, rng.randrange(self.size(other)) if rng.random() < 0.5 else 0)
                # An anchor says what the target is about (a focused crawler scores it).
                anchor = self._anchor(rng, self.topic_words(other) or words)
            else:
                target = self.url(host, self._popular_page(rng, host) if cfg.importance else rng.randrange(size))
                anchor = self._anchor(rng, topic_words or words)
            links.append(Link(target, anchor, nofollow=rng.random() < cfg.nofollow))
        special = cfg.special_pages
        if special and k % 6 == 4 and len(links) > 2:
            links[-1] = replace(links[-1], kind="area")
        if special and k % 6 == 1 and k + 1 < size:
            links.append(Link(self.url(host, k + 1), "", kind="link"))
        n_words = max(20, cfg.page_bytes // (8 if spec.japanese else 7))
        # On a topic host, half the words are the topic's: realistic enough for TF-IDF to tell.
        text = ("" if spec.japanese else " ").join(
            rng.choice(topic_words) if topic_words and rng.random() < 0.5 else rng.choice(words)
            for _ in range(n_words))
        title = f"ページ {k} ホスト {host}" if spec.japanese else f"Page {k} of host {host}"
        if topic_words:
            title += " " + " ".join(rng.choice(topic_words) for _ in range(2))
        return Page(
            host=host,
            index=k,
            url=self.url(host, k),
            path=self.path(k),
            title=title,
            text=text,
            links=tuple(links),
            meta_nofollow=special and k % 13 == 6,
            meta_noindex=special and k % 17 == 8,
            base_href=self.origin(host) + "/p/" if special and k == 0 and host % 4 == 1 else None,
        )

    def _variant_page(self, host: int, k: int) -> Page:
        """Page k > 0 of a variants host: member ``(k - 1) % len(VARIANT_EDITS)`` of family
        ``(k - 1) // len(VARIANT_EDITS)``, the family's text with that share of words edited.
        Members 0 and 1 are byte-identical; every member links only back to the root."""
        spec = self.specs[host]
        family, member = divmod(k - 1, len(VARIANT_EDITS))
        words = _JA_WORDS if spec.japanese else _EN_WORDS
        base_rng = random.Random(f"{self.config.seed}:{host}:family:{family}")
        tokens = [base_rng.choice(words) for _ in range(max(40, self.config.page_bytes // (8 if spec.japanese else 7)))]
        edit_rng = random.Random(f"{self.config.seed}:{host}:{k}:edit")
        for i in edit_rng.sample(range(len(tokens)), round(VARIANT_EDITS[member] * len(tokens))):
            tokens[i] = edit_rng.choice([w for w in words if w != tokens[i]])
        title = f"記事 {family}" if spec.japanese else f"Article {family}"
        return Page(host=host, index=k, url=self.url(host, k), path=self.path(k), title=title,
                    text=("" if spec.japanese else " ").join(tokens), links=(Link(self.url(host, 0), title),),
                    family=(host, family))

    def _mirror_page(self, host: int, k: int) -> Page:
        """The mirrored host's page k under this host's name: same text, links moved to this host."""
        original = self.specs[host].mirror_of
        page = self.page(original, k)
        src, dst = self.origin(original) + "/", self.origin(host) + "/"
        links = tuple(replace(link, target=dst + link.target[len(src):]) if link.target.startswith(src) else link
                      for link in page.links)
        base = dst + page.base_href[len(src):] if page.base_href else None
        return replace(page, host=host, url=self.url(host, k), links=links, base_href=base)

    def main_text(self, host: int, k: int) -> str:
        """What a main-text extractor should find on the page: its title and text (ground truth)."""
        page = self.page(host, k)
        return f"{page.title} {page.text}"

    # -- importance and topics ----------------------------------------------
    def _ranking(self, what: str, n: int) -> list[int]:
        """A fixed random order of ``n`` things: popularity is not simply the lowest index."""
        order = list(range(n))
        random.Random(f"{self.config.seed}:rank:{what}").shuffle(order)
        return order

    def _zipf_pick(self, rng: random.Random, what: str, n: int) -> int:
        """Thing ``order[r]`` with probability proportional to ``(r + 1) ** -1.2``."""
        cumulative = _zipf_cumulative(n)
        r = min(bisect.bisect_left(cumulative, rng.random() * cumulative[-1]), n - 1)
        return self._rankings(what, n)[r]

    def _other_host(self, rng: random.Random, host: int) -> int:
        cfg = self.config
        while True:
            if cfg.topics and rng.random() >= cfg.topic_tunnel:  # stay within the topic
                same = self._topic_hosts[self.topic_of(host)]
                other = same[self._zipf_pick(rng, f"topic{self.topic_of(host)}", len(same))] if cfg.importance \
                    else rng.choice(same)
            elif cfg.importance:
                other = self._zipf_pick(rng, "hosts", cfg.hosts)
            else:
                other = rng.randrange(cfg.hosts - 1)
                other += other >= host
            if other != host or cfg.hosts == 1:
                return other

    def _popular_page(self, rng: random.Random, host: int) -> int:
        """A share ``importance_tail`` of links goes to any page of the host; the rest to its root
        (30%) or to a page by the host's own popularity order (Zipf), which is what makes a few
        pages important."""
        if rng.random() < self.config.importance_tail:
            return rng.randrange(self.size(host))
        return 0 if rng.random() < 0.3 else self._zipf_pick(rng, f"pages{host}", self.size(host))

    def topic_of(self, host: int) -> int | None:
        """The topic of ``host`` (None without topics): hosts are dealt to topics in a fixed random order."""
        if not self.config.topics:
            return None
        return self._host_topic[host]

    def topic_words(self, host: int) -> tuple[str, ...]:
        topic = self.topic_of(host)
        if topic is None:
            return ()
        table = TOPIC_WORDS_JA if self.specs[host].japanese else TOPIC_WORDS_EN
        return table[TOPICS[topic % len(TOPICS)]]

    def pagerank(self, damping: float = 0.85) -> dict[str, float]:
        """Ground truth: PageRank of every page a correct crawler can fetch, on the followable links."""
        from crawlproj.report.analysis import host_pagerank  # generic over node names

        index = {self.url(h, k): (h, k) for h in self.hosts for k in range(self.size(h))}
        pages = self.expected_crawl()
        edges = [(u, link.target, 1) for u in pages for link in self.page(*index[u]).links
                 if not link.nofollow and link.target in pages and not self.page(*index[u]).meta_nofollow]
        rank = host_pagerank(edges, damping)
        for u in pages:  # pages without links in or out still hold rank
            rank.setdefault(u, 0.0)
        total = sum(rank.values())
        return {u: r / total for u, r in rank.items()}

    @staticmethod
    def _anchor(rng: random.Random, words: tuple[str, ...] | list[str]) -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))

    def page_data(self, host: int, k: int) -> dict:
        """What a JavaScript page's script puts in the DOM: its title, text and links."""
        page = self.page(host, k)
        return {"title": page.title, "text": page.text,
                "links": [{"href": self._href(page, link.target), "anchor": link.anchor, "nofollow": link.nofollow}
                          for link in page.links]}

    def render(self, host: int, k: int, version: int = 0) -> tuple[bytes, Mapping[str, str]]:
        """The page's body bytes (in the host's charset) and response headers; ``version`` > 0:
        the page after that many changes (its main text starts with a revision line)."""
        spec, page = self.specs[host], self.page(host, k)
        if spec.content == "copy":
            return self.render(spec.mirror_of, k, version)
        if version:
            words = _JA_WORDS if spec.japanese else _EN_WORDS
            rng = random.Random(f"{self.config.seed}:{host}:{k}:v{version}")
            page = replace(page, text=f"Revision {version}: {' '.join(rng.choice(words) for _ in range(8))}. {page.text}")
        js = "" if spec.js == "spin" and k == 0 else spec.js  # a spinning host's root is static: its pages are found
        head = [f"<title>{page.title}</title>" if not js else "<title>Loading...</title>"]
        if not spec.charset_in_header:
            head.insert(0, f'<meta http-equiv="Content-Type" content="text/html; charset={spec.charset}">')
        if page.base_href:
            head.append(f'<base href="{page.base_href}">')
        robots = [d for d, on in (("nofollow", page.meta_nofollow), ("noindex", page.meta_noindex)) if on]
        if robots and not spec.robots_header:
            head.append(f'<meta name="robots" content="{", ".join(robots)}">')
        if js:
            return self._render_js(host, k, head)
        template = spec.content == "template" or (
            spec.content == "mirror" and self.specs[spec.mirror_of].content == "template")
        body = [f"<h1>{page.title}</h1>", f"<p>{page.text}</p>", "<ul>"]
        if template:
            before, after = ('<div id="content"><div class="entry">', "</div></div>") if spec.japanese else (
                "<main><article>", "</article></main>")
            body = [_template(spec.japanese)[0], before, *body[:2], after,
                    '<div class="related"><h2>Related</h2>', "<ul>"]
        if spec.content == "mirror":
            body.insert(0, f'<div class="banner">mirror of {self.host_name(spec.mirror_of)}</div>')
        area = []
        for link in page.links:
            href = self._href(page, link.target)
            if link.kind == "link":
                head.append(f'<link rel="next" href="{href}">')
            elif link.kind == "area":
                area.append(f'<area shape="rect" coords="0,0,10,10" href="{href}" alt="{link.anchor}">')
            else:
                rel = ' rel="nofollow"' if link.nofollow else ""
                body.append(f'<li><a href="{href}"{rel}>{link.anchor}</a></li>')
        if k == 0 and spec.feed:
            kind, href = ("application/rss+xml", "/feed.xml") if spec.feed == "rss" else ("application/atom+xml", "/feed.atom")
            head.append(f'<link rel="alternate" type="{kind}" title="Feed" href="{href}">')
        if k == 0 and spec.pdfs:
            body += [f'<li><a href="{path}">{path.rsplit("/", 1)[1]}</a></li>' for path in self.document_paths(host)]
        body.append("</ul>")
        if area:
            body.append('<img src="/map.png" usemap="#m" alt=""><map name="m">' + "".join(area) + "</map>")
        if template:
            body += ["</div>", _template(spec.japanese)[1]]
        document, headers = _document(spec, head, body)
        if spec.robots_header:
            headers = _robots_headers(headers, page)
        if self.tdm_header_reserved(host, k):
            headers = {**headers, "tdm-reservation": "1", "tdm-policy": f"{self.origin(host)}/tdm-policy.json"}
        return document, headers

    def _render_js(self, host: int, k: int, head: list[str]) -> tuple[bytes, dict[str, str]]:
        """A JavaScript-only page: its text and links exist only after /static/app.js runs.
        The images and the stylesheet are there to be blocked by a polite renderer."""
        spec = self.specs[host]
        head.append('<link rel="stylesheet" href="/static/app.css">')
        if spec.js == "spin":
            return _document(spec, head, ['<main class="page"></main>', "<script>for (;;) {}</script>"])
        if spec.js == "fetch":
            body = ['<div id="root"></div>', f"<script>window.__PAGE__ = {k};</script>"]
        else:
            data = base64.b64encode(json.dumps(self.page_data(host, k)).encode()).decode()
            inline = f'<script>window.__PAGE_DATA__ = "{data}";</script>'
            body = (['<div id="app" data-v-app></div>',
                     "<noscript>You need to enable JavaScript to run this app.</noscript>", inline]
                    if spec.js == "spa" else ['<main class="page"></main>', inline])  # bare: only much script
        body += ['<img src="/static/logo.png" alt="">', '<script src="/static/app.js"></script>']
        return _document(spec, head, body)

    def js_asset(self, host: int, path: str) -> tuple[bytes, dict[str, str]] | None:
        """The sub-resources of a JavaScript host: /static/app.js, /static/app.css,
        /static/logo.png and /api/<k>.json (what the fetch() pages load)."""
        if not self.specs[host].js:
            return None
        if path == "/static/app.js":
            return APP_JS.encode(), {"Content-Type": "application/javascript"}
        if path == "/static/app.css":
            return b"body { font-family: sans-serif; }\n", {"Content-Type": "text/css"}
        if path == "/static/logo.png":
            return PNG_1x1, {"Content-Type": "image/png"}
        m = re.fullmatch(r"/api/(\d+)\.json", path)
        if m and int(m.group(1)) < self.size(host):
            body = json.dumps(self.page_data(host, int(m.group(1))), ensure_ascii=False).encode()
            return body, {"Content-Type": "application/json; charset=utf-8"}
        return None

    def _href(self, page: Page, target: str) -> str:
        """Links inside the host are written relative (to <base> when there is one)."""
        origin = self.origin(page.host)
        if not target.startswith(origin + "/"):
            return target
        path = target[len(origin) :]
        if page.base_href:  # base is <origin>/p/: only correct resolution against it works
            return path[len("/p/") :] if path.startswith("/p/") else ".." + path
        return path

    def should_fail(self, host: int, path: str, attempt: int) -> bool:
        """Deterministic transient errors: attempt n of a page fails with probability error_rate."""
        return self._chance(self.specs[host].error_rate, f"{host}:{path}:{attempt}")

    def should_drop(self, host: int, path: str, attempt: int) -> bool:
        """Deterministic dropped connections: attempt n of a page drops with probability drop_rate."""
        return self._chance(self.specs[host].drop_rate, f"drop:{host}:{path}:{attempt}")

    def _chance(self, rate: float, what: str) -> bool:
        if rate <= 0:
            return False
        digest = hashlib.blake2b(f"{self.config.seed}:{what}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2**64 < rate

    # -- ground truth ----------------------------------------------------
    def expected_crawl(self, seeds: list[str] | None = None, depth_limit: int = 15, follow_nofollow: bool = False) -> dict[str, int]:
        """Pages a correct crawler fetches from ``seeds``: canonical URL -> hop depth.

        Follows the rules the crawler promises: robots.txt (RFC 9309), rel=nofollow
        and meta nofollow, and the hop limit from the seed.
        """
        index = {self.url(h, k): (h, k) for h in self.hosts for k in range(self.size(h))}
        depth: dict[str, int] = {}
        queue: deque[tuple[str, int]] = deque((s, 0) for s in (seeds or self.seeds()))
        while queue:
            url, d = queue.popleft()
            if url in depth or url not in index:
                continue
            h, k = index[url]
            if not self.allowed(h, self.path(k)):
                continue
            depth[url] = d
            page = self.page(h, k)
            if page.meta_nofollow or d >= depth_limit:
                continue
            for link in page.links:
                if follow_nofollow or not link.nofollow:
                    queue.append((link.target, d + 1))
        return depth

    def ideal_polite_fetches(self, seeds: list[str], interval: float, seconds: float, depth_limit: int = 15) -> int:
        """Pages an ideal polite crawler fetches from ``seeds`` before ``seconds`` (a bound).

        Fetches take no time and concurrency is unlimited; politeness is kept: a
        host's first visit fetches its robots.txt, and each visit is ``interval``
        after the last. Links are followed breadth-first within a host as they are
        found, so the bound accounts for discovering hosts, not just visiting them.
        """
        index = {self.url(h, k): (h, k) for h in self.hosts for k in range(self.size(h))}
        queues: dict[int, deque[tuple[str, int]]] = {}
        turns: list[tuple[float, int]] = []  # (time of the host's next visit, host)
        next_visit: dict[int, float] = {}
        scheduled: set[int] = set()  # hosts with a visit in ``turns``
        seen: set[str] = set()

        def found(url: str, d: int, now: float) -> None:
            if url in seen or url not in index:
                return
            seen.add(url)
            h = index[url][0]
            if h not in queues:  # a new host: robots.txt now, the first page one interval later
                queues[h] = deque()
                next_visit[h] = now + interval
            queues[h].append((url, d))
            if h not in scheduled:
                scheduled.add(h)
                heapq.heappush(turns, (max(next_visit[h], now), h))

        for url in seeds:
            found(url, 0, 0.0)
        fetched = 0
        while turns and turns[0][0] < seconds:  # a fetch at the closing instant cannot complete
            now, h = heapq.heappop(turns)
            scheduled.discard(h)
            url, d = queues[h].popleft()
            k = index[url][1]
            if self.allowed(h, self.path(k)):
                fetched += 1
                next_visit[h] = now + interval
                page = self.page(h, k)
                if not page.meta_nofollow and d < depth_limit:
                    for link in page.links:
                        if not link.nofollow:
                            found(link.target, d + 1, now)
            if queues[h] and h not in scheduled:
                scheduled.add(h)
                heapq.heappush(turns, (next_visit[h], h))
        return fetched

    def expected_pages(self, **kwargs: object) -> set[str]:
        """Pages a correct crawler stores (fetched and not meta noindex)."""
        index = {self.url(h, k): (h, k) for h in self.hosts for k in range(self.size(h))}
        return {u for u in self.expected_crawl(**kwargs) if not self.page(*index[u]).meta_noindex}  # type: ignore[arg-type]

    def expected_links(self, pages: set[str]) -> set[tuple[str, str]]:
        """(source, target) pairs of every link on ``pages``."""
        index = {self.url(h, k): (h, k) for h in self.hosts for k in range(self.size(h))}
        return {(u, link.target) for u in pages for link in self.page(*index[u]).links}


_JS_MIX = {4: "spa", 5: "fetch", 6: "bare"}

#: Topics of a ``topics`` sandbox, and the words a page on each draws on (English and Japanese).
TOPICS = ("astronomy", "cooking", "football", "finance", "medicine", "gardening")
TOPIC_WORDS_EN = {
    "astronomy": tuple("astronomy telescope planet galaxy orbit comet nebula star stellar eclipse observatory "
                       "asteroid cosmos supernova lunar solar meteor constellation spectrum redshift".split()),
    "cooking": tuple("cooking recipe kitchen oven flour butter garlic simmer roast sauce bake pastry dough "
                     "onion saucepan spice broth knife saute dessert".split()),
    "football": tuple("football match goal striker referee league stadium coach penalty midfield defender "
                      "tournament season kickoff offside keeper transfer fans tactics dribble".split()),
    "finance": tuple("finance stock bond market investor dividend interest bank equity portfolio inflation "
                     "currency trading yield broker hedge fund credit mortgage valuation".split()),
    "medicine": tuple("medicine patient doctor clinic diagnosis therapy surgery symptom hospital vaccine "
                      "disease nurse treatment dose chronic infection cardiology prescription recovery trial".split()),
    "gardening": tuple("gardening garden soil compost seed bloom prune shrub tulip orchard mulch harvest "
                       "greenhouse seedling perennial weed lawn trowel watering hedge".split()),
}
TOPIC_WORDS_JA = {
    "astronomy": tuple("天文 望遠鏡 惑星 銀河 軌道 彗星 星雲 恒星 日食 観測 宇宙 流星 星座".split()),
    "cooking": tuple("料理 台所 小麦粉 醤油 味噌 出汁 野菜 包丁 煮物 焼き魚 菓子 調味料 献立".split()),
    "football": tuple("蹴球 試合 得点 選手 審判 監督 競技場 反則 守備 攻撃 優勝 移籍 応援".split()),
    "finance": tuple("金融 株式 債券 市場 投資 配当 金利 銀行 為替 相場 証券 融資 資産".split()),
    "medicine": tuple("医療 患者 医師 診断 治療 手術 症状 病院 予防 注射 感染 看護 処方".split()),
    "gardening": tuple("園芸 庭園 土壌 堆肥 種子 開花 剪定 球根 果樹 温室 苗木 芝生 花壇".split()),
}


@lru_cache(maxsize=64)
def _zipf_cumulative(n: int, exponent: float = 1.2) -> list[float]:
    total, out = 0.0, []
    for r in range(n):
        total += (r + 1) ** -exponent
        out.append(total)
    return out

#: The script of every JavaScript host: renders the page's data (inline, or fetched as JSON).
APP_JS = """(function () {
  function esc(s) { return String(s).replace(/[&<>"]/g, function (c) {
    return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; }); }
  function render(d) {
    document.title = d.title;
    var root = document.getElementById("app") || document.getElementById("root") || document.querySelector("main");
    var html = "<h1>" + esc(d.title) + "</h1><p>" + esc(d.text) + "</p><ul>";
    d.links.forEach(function (l) {
      html += '<li><a href="' + esc(l.href) + '"' + (l.nofollow ? ' rel="nofollow"' : "") + ">" + esc(l.anchor) + "</a></li>";
    });
    root.innerHTML = html + "</ul>";
  }
  if (window.__PAGE_DATA__) {
    render(JSON.parse(decodeURIComponent(escape(atob(window.__PAGE_DATA__)))));
  } else {
    fetch("/api/" + window.__PAGE__ + ".json").then(function (r) { return r.json(); }).then(render);
  }
})();
"""
PNG_1x1 = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")

_CONTENT_MIX = {0: "template", 1: "template", 9: "template", 2: "variants", 7: "variants", 3: "mirror", 8: "mirror"}
#: share of words edited in each member of a near-duplicate family (members 0 and 1 are identical)
VARIANT_EDITS = (0.0, 0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.3)


@lru_cache(maxsize=2)
def _template(japanese: bool) -> tuple[str, str]:
    """The layout every template host shares (one per language): what goes before the main
    content (header, navigation, sidebar) and after it (footer). About 25 KB of boilerplate,
    several times the main text, so pages look alike unless the main text is extracted."""
    rng = random.Random(f"template:{japanese}")
    words = _JA_WORDS if japanese else _EN_WORDS
    sep = "" if japanese else " "

    def prose(n: int) -> str:
        return sep.join(rng.choice(words) for _ in range(n))

    nav = "".join(f'<li><a href="/#section-{i}">{prose(3)}</a></li>' for i in range(1, 60))  # the root: every host has it
    side = "".join(f"<p>{prose(60)}</p>" for _ in range(20))
    foot = "".join(f"<p>{prose(50)}</p>" for _ in range(24))
    if japanese:  # the older style common on Japanese sites: <div> soup, the roles only in ids and classes
        before = (f'<div id="header"><div class="logo">{prose(4)}</div><p class="tagline">{prose(20)}</p></div>'
                  f'<div id="globalnav"><ul>{nav}</ul></div><div id="sidebar">{side}</div>')
        return before, f'<div id="footer">{foot}<p class="copyright">(c) {prose(6)}</p></div>'
    before = (f'<header class="site-header"><div class="logo">{prose(4)}</div><p class="tagline">{prose(20)}</p>'
              f'</header><nav class="menu"><ul>{nav}</ul></nav><aside class="sidebar">{side}</aside>')
    return before, f'<footer class="site-footer">{foot}<p class="copyright">(c) {prose(6)}</p></footer>'


def _xml(body: str) -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'.encode()


def _w3c(seconds: float) -> str:
    """A W3C Datetime in +09:00 (a sitemap may write any zone; the reader must convert)."""
    return datetime.fromtimestamp(int(seconds), timezone(timedelta(hours=9))).isoformat()


def _document(spec: HostSpec, head: list[str], body: list[str]) -> tuple[bytes, dict[str, str]]:
    """A page's bytes in the host's charset, and its Content-Type (with or without the charset)."""
    html = "<!DOCTYPE html>\n<html><head>" + "".join(head) + "</head>\n<body>" + "\n".join(body) + "</body></html>\n"
    ctype = "text/html" + (f"; charset={spec.charset}" if spec.charset_in_header else "")
    return html.encode(spec.charset), {"Content-Type": ctype}


def _robots_headers(headers: dict[str, str], page: Page) -> CIMultiDict:
    """The page's robots directives as ``X-Robots-Tag`` headers, in each form a site may use:
    one for another crawler on every page (to be ignored), ``noindex`` for all crawlers,
    ``nofollow`` named for crawlproj."""
    out = CIMultiDict(headers)
    out.add("X-Robots-Tag", "otherbot: noindex, nofollow")
    if page.meta_noindex:
        out.add("X-Robots-Tag", "noindex")
    if page.meta_nofollow:
        out.add("X-Robots-Tag", "crawlproj: nofollow")
    return out


@lru_cache(maxsize=64)
def _robots(body: str) -> RobotsRules:
    return RobotsRules(body)


def _host_sizes(hosts: int, pages: int, power_law: float) -> list[int]:
    if power_law <= 0:
        return [pages] * hosts
    weights = [(i + 1) ** -power_law for i in range(hosts)]
    scale = pages * hosts / sum(weights)
    return [max(1, round(w * scale)) for w in weights]
