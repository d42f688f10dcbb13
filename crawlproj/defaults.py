"""Every setting, declared once: ``NAME: check = default``, under a ``#:`` line saying what it is for.

The check (from :mod:`crawlproj.checks`) says what the setting accepts; every one runs
at start-up (:func:`crawlproj.config.validate`) and a bad value stops the crawl with
one line naming it. ``docs/settings.md`` is generated from this module
(``python -m crawlproj.config``), and a test fails when the two disagree.

The project's settings module (``settings/`` beside ``scrapy.cfg``) takes these as its
base; a profile there (``-s PROFILE=local``, ...) is applied over them by
:class:`crawlproj.profiles.ProfileAddon`; ``-s`` options and a spider's
``custom_settings`` still win over the profile.
"""

# Not ``from __future__ import annotations``: each annotation is the check object itself.
from crawlproj.checks import (ai_uses, boolean, handlers, chromium, cidr_list, class_path, components, choice,
                              exporters, export_fields, feeds, fraction,
                              fraction_or_one, host_resolve, int_list, interval_pair, non_empty, number, port,
                              prioritizer, probability, readable_file, redis_url, regex_list, revisit_range,
                              requisite_kinds, store_uri, string_list, text, token, unit_interval)
from scrapy.settings import default_settings as _scrapy_defaults

# -- identity ----------------------------------------------------------------
#: Publish who crawls and how to reach them (the Waseda crawler). Set your own contact URL.
USER_AGENT: non_empty = "crawlproj/0.1 (+https://example.invalid/crawlproj-contact)"
#: Product token matched against robots.txt groups, then '*'.
ROBOTSTXT_USER_AGENT: non_empty = "crawlproj"
#: Obey robots.txt (RFC 9309), read by crawlproj's robots.txt middleware.
ROBOTSTXT_OBEY: boolean = True
#: How robots.txt is read: RFC 9309's groups and product tokens (and /robots.txt always
#: allowed), protego matching the paths. Scrapy's own parsers may be named instead.
ROBOTSTXT_PARSER: class_path = "crawlproj.politeness.robots.Rfc9309RobotParser"

# -- scope -------------------------------------------------------------------
#: Seed list(s) for the `web` spider: one URL a line, '#' comments.
SEEDS_FILE: text = "seeds/default.txt"
#: Hop limit from the seed; the Waseda crawler used 15.
DEPTH_LIMIT: number(int, 0) = 15
#: Links followed through consecutive dynamic pages (a query, or a path matching
#: DYNAMIC_URL_PATTERNS) stop after this many hops (the Waseda crawler: cut complaints; stops
#: infinite calendars). Separate from DEPTH_LIMIT. 0 turns it off.
CGI_HOP_LIMIT: number(int, 0) = 5
DYNAMIC_URL_PATTERNS: regex_list = [r"\.cgi\b", r"\.php\b", r"\.aspx?\b", r"/cgi-bin/"]
#: A link whose path repeats one segment this many times is a relative-link loop. 0: off.
MAX_REPEATED_SEGMENTS: number(int, 0) = 3
#: Links with more query parameters than this are generated URLs. 0: off.
QUERY_MAX_PARAMS: number(int, 0) = 16
#: The most pages admitted per host (the Waseda crawler's per-site cap). 0: no cap.
MAX_PAGES_PER_HOST: number(int, 0) = 50_000
#: The most links taken from one page (as Heritrix's default): a link farm's page names tens of
#: thousands of hosts; the rest of its links are left (crawlproj/over_budget/links). 0: all.
MAX_LINKS_PER_PAGE: number(int, 0) = 6_000
#: Host names admitted per registered domain (the public suffix list: a link farm's subdomains
#: are one domain's) over the crawl; links to more are dropped before the URL-seen filter
#: (traps/domain_max_hosts). 0: no limit.
DOMAIN_MAX_HOSTS: number(int, 0) = 1_000
#: New URLs admitted per registered domain (traps/max_pages_per_domain). 0: no limit.
MAX_PAGES_PER_DOMAIN: number(int, 0) = 500_000
#: At most this many requests in flight at once to the hosts of one registered domain, however
#: many addresses they have (a link farm spread over many servers is one operator's). 0: no cap.
DOMAIN_CONCURRENCY: number(int, 0) = 8
#: Hosts of one registered domain with URLs in the frontier at once: the URLs of its further
#: hosts wait in the domain's overflow (on disk when the frontier spills) until one of its open
#: hosts runs dry. 0: no limit (the distributed frontier has none: any worker may take a URL).
DOMAIN_ACTIVE_HOSTS: number(int, 0) = 100
#: (host, text digest) pairs remembered: a page whose text another page of its host already had
#: is a copy at another URL (session ids in paths or links, calendars, mirrors), and its links
#: are not followed (crawlproj/duplicate_page_links_skipped). About 180 bytes each. 0: off.
DUPLICATE_TEXTS_KEPT: number(int, 0) = 200_000
#: A host whose new pages are mostly copies of its other pages: once it has COPY_HOST_MIN_PAGES
#: pages, each further copy rests it COPY_HOST_REST seconds while copies are COPY_HOST_SLOW_SHARE
#: of its pages or more, and at COPY_HOST_CAP_SHARE or more nothing more of it is fetched (its
#: queued URLs are dropped, traps/copy_host_dropped). A share of 0 turns that step off.
COPY_HOST_MIN_PAGES: number(int, 1) = 20
COPY_HOST_SLOW_SHARE: number(float, 0) = 0.5
COPY_HOST_CAP_SHARE: number(float, 0) = 0.9
COPY_HOST_REST: number(float, 0) = 10.0
#: Trap defences (hop limits, repeated segments, per-host caps) and the crawl ordering.
SPIDER_MIDDLEWARES: components = {"crawlproj.spidermiddlewares.trap_defence.TrapDefenceMiddleware": 800,
                      "crawlproj.spidermiddlewares.ordering.OrderingMiddleware": 700}
#: Only follow links to these domains (and their subdomains); empty: anywhere.
ALLOWED_DOMAINS: string_list = []
#: Only follow links whose host ends with one of these suffixes, e.g. [".jp"].
ALLOWED_SUFFIXES: string_list = []
#: Follow rel=nofollow links anyway (they are always recorded in the link table).
FOLLOW_NOFOLLOW: boolean = False
#: URLs longer than this after canonicalisation are refused (counted).
URL_MAX_LENGTH: number(int, 16) = 2048
#: Query and ;path parameters that may carry a session id. The canonicaliser removes one only
#: when its value looks like a session token: 16 or more letters and digits, both kinds, no "/",
#: and random (one-case hex, or letters and digits alternating 3 times or more). sid=00/01/25/1430236
#: (a Slash story), sid=7041 (a PHP-Nuke article) and sid=Main.WebHome are kept; phpBB's
#: sid=9682993c8daa2c5497996114facdc805 and Tomcat's ;jsessionid=6BEF030AB1677BEC333FFCC7BF4DF564
#: are removed. Numeric ColdFusion CFID/CFTOKEN values are kept (a copy costs a fetch, not a page).
SESSION_ID_PARAMS: string_list = [
    "jsessionid", "phpsessid", "sid", "sessionid", "session_id",
    "aspsessionid", "cfid", "cftoken", "zenid", "oscsid",
]

# -- name resolution ---------------------------------------------------------
#: Pin host names or patterns to addresses, like curl --resolve:
#: {"*.sandbox.test": "127.0.0.1"} or "*.sandbox.test=127.0.0.1,staging.example=10.0.0.5".
#: Read when the process starts (it configures the resolver), so give it in
#: settings or with -s, not in a profile.
HOST_RESOLVE: host_resolve = {}
#: The resolver that applies HOST_RESOLVE and caches answers (DNSCACHE_TTL).
TWISTED_DNS_RESOLVER: class_path = "crawlproj.resolver.HostResolveResolver"

# -- frontier and politeness -------------------------------------------------
#: The two-tier Mercator frontier replaces Scrapy's scheduler; politeness lives there.
SCHEDULER: class_path = "crawlproj.frontier.scheduler.FrontierScheduler"
#: The URL-seen test: a growing Bloom filter (URLSEEN_CAPACITY, URLSEEN_ERROR_RATE).
DUPEFILTER_CLASS: class_path = "crawlproj.frontier.urlseen.BloomDupeFilter"
#: Scrapy's downloader, announcing every finished fetch to the frontier.
DOWNLOADER: class_path = "crawlproj.frontier.downloader.FrontierDownloader"
#: Smallest time between one request's finish and the next request to the same host, in seconds.
MIN_INTERVAL: number(float, 0) = 1.0
#: Mercator rule: rest at least this many times the last fetch's duration.
INTERVAL_DURATION_FACTOR: number(float, 0) = 10.0
#: Politeness keys (hosts) whose state (Waseda window, Crawl-delay, failures, session, rule)
#: stays in memory: the least recently used beyond it are spilled to a scratch SQLite file
#: (in FRONTIER_SPILL_DIR, or the temporary directory) and read back when next used, so a
#: crawl's memory follows its active hosts, not every host it has seen (about 1.5 KB a host
#: in memory; 0: keep all). It bounds the frontier's per-host page counts (MAX_PAGES_PER_HOST) too.
HOST_STATE_MEMORY: number(int, 0) = 20_000
#: robots.txt Crawl-delay is honoured up to this many seconds.
MAX_CRAWL_DELAY: number(float, 0) = 60.0
#: Waseda dynamic interval (the Waseda crawler): min_interval + SLOW_DELAY x max(0, 1 - speed /
#: TARGET_SPEED) + ERROR_DELAY x errors / 10, over the host's last WASEDA_WINDOW fetches, in
#: seconds. Speed is bytes/s; errors are timeouts, dropped connections and send/receive errors.
#: A delay of 0 turns its term off.
WASEDA_INTERVAL_ENABLED: boolean = True
WASEDA_TARGET_SPEED: number(float, 0, inclusive=False) = 16384.0
WASEDA_SLOW_DELAY: number(float, 0) = 10.0
WASEDA_ERROR_DELAY: number(float, 0) = 30.0
WASEDA_WINDOW: number(int, 1) = 10
#: Responses smaller than this do not count toward the speed (their time is latency,
#: not line speed); they still count for errors.
WASEDA_MIN_BYTES: number(int, 0) = 8192
#: A host answering one of these statuses rests for its Retry-After (seconds or an
#: HTTP date), or BACKOFF_DEFAULT without one, never more than BACKOFF_MAX.
BACKOFF_STATUSES: int_list = [429, 503]
BACKOFF_DEFAULT: number(float, 0) = 60.0
BACKOFF_MAX: number(float, 0) = 3600.0
#: Retries (Scrapy's RetryMiddleware, RETRY_TIMES) go back through the frontier: the host
#: then waits RETRY_BACKOFF_BASE x 2^(n-1) seconds before retry n, with +-50% jitter,
#: at most RETRY_BACKOFF_MAX.
RETRY_TIMES: number(int, 0) = 2
RETRY_BACKOFF_BASE: number(float, 0) = 2.0
RETRY_BACKOFF_MAX: number(float, 0) = 300.0
#: Suspend (the Waseda crawler): after crawling one host continuously for SUSPEND_AFTER_SECONDS
#: and/or SUSPEND_AFTER_PAGES, it rests SUSPEND_FOR seconds. 0 turns a trigger off.
SUSPEND_AFTER_SECONDS: number(float, 0) = 1800.0
SUSPEND_AFTER_PAGES: number(int, 0) = 0
SUSPEND_FOR: number(float, 0) = 300.0
#: Keep-alive (the Waseda crawler): connections are reused per host; when a server closes keep-alive
#: (Connection: close), the host rests this many seconds. 0 turns it off.
KEEPALIVE_CLOSE_PAUSE: number(float, 0) = 2.0
#: Seconds an idle persistent connection is kept for the host's next request (Twisted keeps
#: them 240 s): longer than the politeness interval of most hosts, so a host crawled on reuses
#: its connection, and short enough that a broad crawl does not hold one for every host it left.
KEEPALIVE_IDLE_SECONDS: number(float, 0, inclusive=False) = 60.0
#: At most this many idle persistent connections over all hosts, the longest idle closed first,
#: and at most a quarter of the process's file descriptors (RLIMIT_NOFILE): a broad crawl leaves
#: hosts faster than KEEPALIVE_IDLE_SECONDS lets their connections go. 0: only the descriptors' cap.
KEEPALIVE_MAX_IDLE: number(int, 0) = 1000
#: Keep-alive aware HTTP/1.1, and the browser for requests that need rendering.
DOWNLOAD_HANDLERS: handlers = {  # keep-alive aware HTTP/1.1, and rendering for requests that need it
    "http": "crawlproj.rendering.handler.RenderingDownloadHandler",
    "https": "crawlproj.rendering.handler.RenderingDownloadHandler",
}
#: At most this many requests in flight to one IP address across all its host names
#: (the Waseda crawler: one server hosting many subdomains). 0: no cap.
PER_IP_CONCURRENCY: number(int, 0) = 1
#: At most this many requests a second to one IP address across all its host names, robots.txt
#: fetches included: host intervals rest each name, this rests the server behind them. A request
#: refused before connecting (robots.txt, address safety) gives its slot back, in a distributed
#: crawl too (unless another request has taken a later one). 0: no limit.
PER_IP_RATE: number(float, 0) = 10.0
#: A host whose last HOST_PARK_AFTER fetches all failed (DNS, connection, timeout, 5xx) is
#: parked for HOST_PARK_FOR seconds, then tried again. 0 turns parking off.
HOST_PARK_AFTER: number(int, 0) = 10
HOST_PARK_FOR: number(float, 0) = 1800.0
#: Front-tier priority levels (0 is the most important).
FRONTIER_LEVELS: number(int, 1) = 8
#: Refill picks level L with weight FRONTIER_BIAS ** -L among non-empty levels.
FRONTIER_BIAS: number(float, 0) = 2.0
#: Crawl ordering (crawlproj.ordering): "bfs" (hops from the seed), "opic", "backlinks",
#: "larger_sites", "topical", "scores" (PRIORITY_SCORES_FILE), "depth", or a weighted mix
#: such as "opic:0.7,depth:0.3".
PRIORITIZER: prioritizer = "bfs"
#: Known scores for the "scores" ordering: JSON {url: score} or lines "url<TAB>score" (say, a
#: previous crawl's PageRank).
PRIORITY_SCORES_FILE: text = ""
#: The "backlinks" ordering counts a link from another host as this many links from the URL's
#: own host: a site's navigation links most of its pages, a link from elsewhere is a vote (as
#: Bharat and Henzinger's topic distillation sets intra-host links apart). 1: every link alike.
BACKLINKS_OTHER_HOST_WEIGHT: number(int, 1) = 10
#: The importance state (OPIC cash, in-links, site sizes) is saved beside the frontier's
#: journal (JOBDIR) this often, and when the crawl stops.
ORDERING_SAVE_SECONDS: number(float, 0, inclusive=False) = 60.0
#: Topical crawling: the topic as a query (also -a topic=...), or a file of example pages
#: (paragraphs separated by blank lines).
TOPIC: text = ""
#: A file of example pages for topical crawling (see TOPIC).
TOPIC_FILE: readable_file = ""
#: How relevance is judged: "tfidf" (a TF-IDF profile of the topic) or "embedding" (WordLlama
#: sentence embeddings, shipped inside its PyPI wheel and loaded offline).
TOPICAL_MODEL: choice("tfidf", "embedding") = "tfidf"
#: A page is relevant from this cosine with the topic (the harvest rate counts them); 0: the
#: model's own (0.1 for tfidf, 0.3 for embedding).
TOPICAL_THRESHOLD: number(float, 0) = 0.0
#: A link's score: this share of its page's relevance, the rest its anchor text's.
TOPICAL_INHERIT: unit_interval = 0.5
#: Links are followed through at most this many irrelevant pages in a row (a relevant page can
#: sit behind irrelevant ones); past it, only links whose anchor is relevant.
TOPICAL_TUNNEL: number(int, 0) = 1
#: A focused crawl fetches off-topic links (the last level) only when no on-topic URL is left
#: to fetch, not whenever the on-topic hosts must rest: fewer pages wasted, a slower crawl.
TOPICAL_FOCUS: boolean = True
#: ... but off-topic links wait at most this many seconds in a row for on-topic ones: an
#: on-topic host that is parked (HOST_PARK_FOR) or suspended must not stall the crawl.
TOPICAL_FOCUS_WAIT: number(float, 0) = 60.0
#: The operator's opt-out list: one host, domain or URL prefix a line; re-read when it changes.
#: In the distributed profile the Redis set <REDIS_PREFIX>:opt_out is read too.
OPT_OUT_FILE: text = ""
#: How often the opt-out list is checked for changes.
OPT_OUT_RELOAD_SECONDS: number(float, 0, inclusive=False) = 5.0
#: Politeness key: "host" (default), "domain" (registrable domain, approximate) or
#: "ip" (the host's resolved address: hosts sharing a server share its politeness).
FRONTIER_KEY: choice("host", "domain", "ip") = "host"
#: Back queues kept active; 0 means 3 x CONCURRENT_REQUESTS (Mercator). More are
#: activated when no active host is due, up to FRONTIER_MAX_ACTIVE_KEYS.
FRONTIER_ACTIVE_KEYS: number(int, 0) = 0
FRONTIER_MAX_ACTIVE_KEYS: number(int, 1) = 10_000
#: Queues keep this many entries at each end in memory and spill the middle to disk
#: (a front-tier queue, and a back queue of one active key). 0 keeps everything in memory.
FRONTIER_FRONT_BUFFER: number(int, 0) = 1024
FRONTIER_BACK_BUFFER: number(int, 0) = 8
#: Where spilled queue segments go ("" = JOBDIR/frontier/spill, or a temporary
#: directory without JOBDIR). Scratch space: wiped on start, removed on close.
FRONTIER_SPILL_DIR: text = ""
#: Spill segment file size in bytes; a segment is deleted once fully read back.
FRONTIER_SEGMENT_BYTES: number(int, 4096) = 67_108_864
#: URL-seen Bloom filter: URLs before it grows (size it to the crawl), and its
#: false-positive rate (the whole chain stays below it as it grows).
URLSEEN_CAPACITY: number(int, 1000) = 1_000_000
URLSEEN_ERROR_RATE: number(float, 0, inclusive=False) = 0.001
#: Requests in flight across all hosts (each host still gets one at a time).
CONCURRENT_REQUESTS: number(int, 1) = 64
#: Outputs of one response (its links, its item, their extras) processed at once. Scrapy starts
#: this many tasks for every response, whatever it yields: its 100 were most of a crawl's
#: reactor callbacks, and each turn of the loop, a due host's request waiting, longer for them.
CONCURRENT_ITEMS: number(int, 1) = 8
#: A safety net only: the frontier never hands out two requests for one host.
CONCURRENT_REQUESTS_PER_DOMAIN: number(int, 1) = 1
#: Scrapy's slot delays stay off: politeness lives in the frontier, in one place.
DOWNLOAD_DELAY: number(float, 0) = 0
#: Scrapy's jitter on its slot delay: off with the delay.
DOWNLOAD_DELAY_JITTER: number(float, 0) = 0

# -- downloads ---------------------------------------------------------------
#: Address ranges (CIDR) that may be fetched although not public. By default loopback,
#: private, link-local (169.254.169.254, cloud metadata), multicast and reserved
#: addresses are refused, after DNS and on every redirect. The sandbox profile allows loopback.
ADDRESS_ALLOWLIST: cidr_list = []
#: Address safety first, then robots.txt, politeness feedback, page parsing and the render decision.
DOWNLOADER_MIDDLEWARES: components = {
    # First: refuse internal addresses before anything (robots.txt included) connects.
    "crawlproj.downloadermiddlewares.address_safety.AddressSafetyMiddleware": 50,
    # The CGI hop limit again, for redirects, sitemap and seeded URLs (links met it already).
    "crawlproj.downloadermiddlewares.cgi_hop_limit.CgiHopLimitMiddleware": 60,
    # Scrapy's redirects, a loop ending as a redirect_loop error (the URL-seen filter dropped it).
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "crawlproj.downloadermiddlewares.redirects.LoopAwareRedirectMiddleware": 600,
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "crawlproj.downloadermiddlewares.redirects.LoopAwareMetaRefreshMiddleware": 580,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "crawlproj.downloadermiddlewares.robots_txt.RobotsTxtMiddleware": 100,
    # After robots.txt: AI-use signals recorded, and reserved pages skipped (AI_USE_SKIP).
    "crawlproj.downloadermiddlewares.ai_signals.AiSignalsMiddleware": 110,
    # Static first; a page whose HTML is an empty JavaScript shell goes back to be rendered.
    "crawlproj.downloadermiddlewares.render_decision.RenderDecisionMiddleware": 950,
    # Just above it, so a large page is parsed in a page thread before anything reads it.
    "crawlproj.downloadermiddlewares.page_parse.PageParseMiddleware": 960,
    # Above both: a body whose own charset contradicts its header is read in its own.
    "crawlproj.downloadermiddlewares.body_charset.BodyCharsetMiddleware": 970,
    # Next to the download handler: sees raw 503s and dropped connections before retries.
    "crawlproj.downloadermiddlewares.waseda_interval.WasedaIntervalMiddleware": 990,
}
#: DNS: answers are cached for DNSCACHE_TTL seconds; one lookup may take DNS_TIMEOUT.
#: Process-level, like HOST_RESOLVE: give them in settings or with -s.
DNSCACHE_TTL: number(float, 0) = 3600.0
DNS_TIMEOUT: number(float, 0, inclusive=False) = 20
#: Seconds before a download is given up on (counted as a timeout: it slows the host down).
DOWNLOAD_TIMEOUT: number(float, 0, inclusive=False) = 30
#: Bodies longer than this are cut and counted, never buffered whole; warned about from DOWNLOAD_WARNSIZE.
DOWNLOAD_MAXSIZE: number(int, 0) = 16 * 1024 * 1024  # endless bodies are cut and counted, not buffered
DOWNLOAD_WARNSIZE: number(int, 0) = 4 * 1024 * 1024
#: Response header lines and bytes, at most: past either the download is cut and stored as
#: too_large (DOWNLOAD_MAXSIZE counts bodies only; a server may send headers without end). 0: off.
DOWNLOAD_MAX_HEADERS: number(int, 0) = 500
DOWNLOAD_MAX_HEADER_BYTES: number(int, 0) = 256 * 1024
#: Bytes of responses Scrapy's scraper may hold before Scrapy stops sending requests; above
#: DOWNLOAD_MAXSIZE, so that one large page never stops every host (Scrapy's default is 5 MB).
SCRAPER_SLOT_MAX_ACTIVE_SIZE: number(int, 0) = 24 * 1024 * 1024
#: Redirects followed for one URL; a loop ends here and is stored as a fetch error.
REDIRECT_MAX_TIMES: number(int, 0) = 10
#: A host's robots.txt is fetched again after this many seconds (the Waseda crawler: 24 h drew
#: complaints, 6 h did not). A 5xx or unreachable robots.txt is asked again sooner.
ROBOTSTXT_TTL: number(float, 0) = 6 * 3600.0
#: Seconds before a robots.txt that failed (5xx, unreachable) is asked again.
ROBOTSTXT_ERROR_TTL: number(float, 0) = 1800.0
#: Hosts whose parsed robots.txt is kept (the least recently fetched go first, and are fetched
#: again when next needed): about 4.4 KB each. Above FRONTIER_MAX_ACTIVE_KEYS, so a host in the
#: frontier's active set keeps its rules.
ROBOTSTXT_CACHE_HOSTS: number(int, 1) = 20_000
#: Seed the crawl with the sitemaps a robots.txt lists (Sitemap: lines), read again every
#: ROBOTSTXT_TTL. Their URLs in scope are queued; every URL's lastmod, changefreq and priority
#: is stored, and lastmod goes to the revisit state. Off by default, as in Nutch and StormCrawler:
#: a sitemap can queue 50,000 URLs a file; the incremental profile turns it on.
ROBOTSTXT_SITEMAPS: boolean = False
#: Fetch each host's /.well-known/tdmrep.json (W3C TDMRep) once, inside a visit of its own, and
#: record its rules. Robots.txt Content-Signal lines and tdm-reservation headers are always recorded.
AI_USE_TDMREP: boolean = False
#: Uses of content (search, ai-input, ai-train, tdm) whose reservation by the publisher makes the
#: crawler skip a page: before fetching it when robots.txt's Content-Signal or tdmrep.json
#: reserves one (tdmrep.json is then fetched), after when its tdm-reservation header does
#: (the page is not stored). Empty: record the signals, skip nothing.
AI_USE_SKIP: ai_uses = []
#: Error responses (4xx, 5xx) reach the spider: they are stored, and the frontier learns from them.
HTTPERROR_ALLOW_ALL: boolean = True
COOKIES_ENABLED: boolean = False
TELNETCONSOLE_ENABLED: boolean = False
#: Scrapy 2.19's remote-control extension opens a second server in every crawl process, from
#: which anyone holding its token (left in a file under the home directory, even after a kill -9)
#: can run any Python. Off: crawlproj's dashboard is the way to watch and steer a crawl.
REMOTE_CONTROL_ENABLED: boolean = False
#: Scrapy's own extensions, less those two: Scrapy imports every extension it lists, even one
#: switched off, and theirs cost each crawl process aiohttp and twisted.conch at start (0.1 CPU-s).
#: To turn either on, name it in EXTENSIONS too.
EXTENSIONS_BASE: components = {path: order for path, order in _scrapy_defaults.EXTENSIONS_BASE.items()
                               if path.rsplit(".", 1)[-1] not in {"TelnetConsole", "RemoteControl"}}
#: Scrapy's log level.
LOG_LEVEL: choice("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") = "INFO"

# -- JavaScript rendering (scrapy-playwright, the system Chromium) ------------
#: auto: fetch statically, render only pages whose HTML needs JavaScript (and hosts whose
#: pages keep needing it, directly); always: render every page; never: no browser at all.
RENDER_MODE: choice("auto", "always", "never") = "auto"
#: The browser; empty: /usr/bin/chromium, then chromium on PATH. Never a Playwright download.
CHROMIUM_PATH: chromium = ""
#: Pages open in the browser at once (each costs tens of MB; one that rendered well is kept,
#: at about:blank, for the next render).
RENDER_MAX_PAGES: number(int, 1) = 4
#: Seconds for the navigation itself, and for the browser to open the page it renders in (a new
#: context or renderer process); the page is closed after either.
RENDER_NAVIGATION_TIMEOUT: number(float, 0, inclusive=False) = 30.0
#: Seconds for the whole render, navigation included, from when the browser has the page open.
RENDER_TIMEOUT: number(float, 0, inclusive=False) = 60.0
#: The DOM is read once the app has settled: no sub-request pending (a fetch() started by a
#: script is waited for), no change to the DOM's nodes or text (a MutationObserver) and no
#: long task on the page's main thread for this many seconds; or after RENDER_IDLE_TIMEOUT at most.
RENDER_IDLE_SECONDS: number(float, 0) = 0.3
RENDER_IDLE_TIMEOUT: number(float, 0) = 10.0
#: A fresh browser context after this many pages, its kept pages closed with it (bounds the
#: browser's memory: a kept page keeps its last site's renderer process). 0: never.
RENDER_CONTEXT_MAX_PAGES: number(int, 0) = 100
#: The browser (all its processes) is restarted between renders once its resident set passes
#: this (render/browser_restarts): a renderer gives memory back only when it ends. 0: never.
RENDER_BROWSER_MAX_RSS: number(int, 0) = 1536 * 2**20
#: Browser requests of these Playwright resource types are blocked (never reach the server).
RENDER_BLOCK_RESOURCE_TYPES: string_list = ["image", "media", "font", "stylesheet", "texttrack", "eventsource",
                               "websocket", "manifest", "ping", "other"]
#: Let a rendered page fetch from other hosts. Off: those requests would bypass the
#: frontier's one-request-per-host rule for the other host.
RENDER_OTHER_HOSTS: boolean = False
#: Evidence samples are rendered offline, from the page in hand and the script cache, their
#: misses prefetched through the frontier, instead of rendered through the frontier (holding
#: their host for a whole render). A prefetch another worker of a distributed crawl takes is
#: rendered there (it carries the sample). docs/rendering.md.
RENDER_SAMPLE_OFFLINE: boolean = True
#: The browser's share of the CPU beside the crawl's own process. ``idle``: only what the
#: crawl leaves (Linux SCHED_IDLE; elsewhere as ``low``), so no host's next request waits for
#: a render on a small machine; a crawl that renders most pages on a machine whose cores the
#: crawl keeps busy (WORKERS = cores) wants ``low`` (nice +10) or ``normal``.
RENDER_BROWSER_PRIORITY: choice("idle", "low", "normal") = "idle"
#: The browser's processes are kept off this many of the machine's CPUs (the first ones): even
#: at ``idle`` a browser busy in the kernel is not preempted at once, and with a CPU the
#: browser never uses, the crawl's reactor always finds one free (docs/rendering.md). 0: none;
#: a machine with no more CPUs than this keeps the browser on all. WORKERS and the
#: distributed profile set 0: their workers keep every CPU busy.
RENDER_BROWSER_SPARE_CPUS: number(int, 0) = 1
#: Scripts a render fetched are kept (by URL, up to this many bytes) for later renders:
#: request routing turns the browser's own cache off. 0: every render fetches them again.
RENDER_ASSET_CACHE_BYTES: number(int, 0) = 32 * 2**20
#: The rule on the static HTML: a page is rendered when it shows fewer than RENDER_MIN_TEXT
#: characters of visible text (in three pieces at most) and fewer than RENDER_MIN_LINKS
#: links, and loads script. A render shows more when it adds a quarter of RENDER_MIN_TEXT
#: characters, and a quarter, to the page's main text.
RENDER_MIN_TEXT: number(int, 0) = 200
RENDER_MIN_LINKS: number(int, 0) = 3
#: A host's rendering mode switches after this many pages in a row show it is wrong
#: (rendered pages that gained or did not, pages judged dynamic that gained nothing).
RENDER_HOST_SWITCH: number(int, 1) = 3
#: Of each host's pages that the rule leaves static (and that load script), the first this
#: many are also rendered as evidence, then those whose count is a power of
#: RENDER_SAMPLE_GROWTH. 0: only those.
RENDER_SAMPLE_FIRST: number(int, 0) = 2
#: After the first RENDER_SAMPLE_FIRST, a host's pages left static are sampled at counts
#: that are powers of this (4: the 4th, 16th, 64th...): the longer the rule is right, the
#: rarer the check.
RENDER_SAMPLE_GROWTH: number(int, 2) = 4
#: The render decision's evidence is kept for this many hosts, the ones met last (about 520
#: bytes a host): a host let go keeps its mode (render or static, for four times as many), and
#: its sampling starts again when it comes back. 0: every host's is kept.
RENDER_EVIDENCE_HOSTS: number(int, 0) = 20000

# -- storage -----------------------------------------------------------------
#: Where pages, links, hosts and errors go. sqlite:///relative/path or sqlite:////absolute/path.
STORE_URI: store_uri = "sqlite:///data/crawl.db"
#: Rows per transaction; the store never commits one row at a time.
STORE_BATCH_SIZE: number(int, 1) = 200
#: Seconds between flushes of a partial batch; a kill -9 loses at most this much work.
STORE_FLUSH_INTERVAL: number(float, 0, inclusive=False) = 2.0
#: Rows that may wait for the store's writer while it writes a batch; past this, each new item
#: waits for that write in the item pipeline (and ITEM_BACKLOG holds the frontier back), so a
#: writer slower than the crawl does not keep every page's text and links in memory. 0: no limit.
STORE_BACKLOG: number(int, 0) = 400
#: Content (text, Markdown, metadata), near-duplicates, revisit state, WARC, then the store, in that order.
ITEM_PIPELINES: components = {
    "crawlproj.content.content_pipeline.ContentPipeline": 250,
    "crawlproj.content.near_duplicates_pipeline.NearDuplicatePipeline": 300,
    "crawlproj.revisit.pipeline.RevisitPipeline": 400,
    "crawlproj.store.warc_pipeline.ArchivePipeline": 500,
    "crawlproj.changes.pipeline.ChangePipeline": 600,
    "crawlproj.store.pipeline.StorePipeline": 800,
}

# -- page content: the store, feeds, scrapy export, scrapy search ----------------
#: Extract each stored page's content (crawlproj.content.extraction: main text, Markdown,
#: title, description, language, canonical URL, author, dates) before near-duplicates: about
#: 3 ms of CPU a page (bench/content.py). Off: pages carry no text, near-duplicates extract
#: their own main text, and feeds and the store have none.
CONTENT_ENABLED: boolean = True
#: Keep each stored page's content (crawlproj.items.PageContent: main text, Markdown,
#: description, author, dates) in the store's page_content table, zstd-compressed, written with
#: the page's row (docs/exporting.md). Off: pages are stored without text (feeds still carry it).
CONTENT_STORE: boolean = True
#: Keep (and extract) each page's main content as Markdown beside its plain text: as many stored
#: bytes again as the text (2.6 KB a page on documentation pages, docs/exporting.md). Off: text only.
CONTENT_MARKDOWN: boolean = True
#: The most characters kept of each of a page's text and Markdown, in extraction and in the
#: store (the page's `limited` then says max_chars). 0: no cap.
CONTENT_MAX_CHARS: number(int, 0) = 2_000_000
#: Index each stored page's title and text for `scrapy search` (SQLite FTS5, bm25; CJK as
#: bigrams) in the store's write transaction: 2.3 KB and 0.27 ms of CPU a documentation page.
#: Needs CONTENT_STORE. Off: pages are not indexed (`scrapy search --reindex` builds it later).
CONTENT_SEARCH: boolean = True
#: Scrapy's feeds ({URI: options}; -o and -O set it): one record per stored page, the fields of
#: FEED_EXPORT_FIELDS or, unset, docs/exporting.md's. Each is checked at start: a feed that cannot
#: be written (a directory that cannot be made, no permission, an unknown format) stops the crawl.
FEEDS: feeds = {}
#: The fields of each feed record, in order (a list, or {field: column name}); None: the default
#: fields (docs/exporting.md). body, body_encoding, response_headers and request_headers only when named.
FEED_EXPORT_FIELDS: export_fields = None
#: Feeds are written in UTF-8 (JSON without \uXXXX escapes).
FEED_EXPORT_ENCODING: non_empty = "utf-8"
#: Scrapy's exporters by format, with crawlproj's page records (crawlproj.exports.feeds), and Parquet.
FEED_EXPORTERS: exporters = {
    "json": "crawlproj.exports.feeds.JsonExporter",
    "jsonlines": "crawlproj.exports.feeds.JsonLinesExporter",
    "jsonl": "crawlproj.exports.feeds.JsonLinesExporter",
    "jl": "crawlproj.exports.feeds.JsonLinesExporter",
    "csv": "crawlproj.exports.feeds.CsvExporter",
    "xml": "crawlproj.exports.feeds.XmlExporter",
    "marshal": "crawlproj.exports.feeds.MarshalExporter",
    "pickle": "crawlproj.exports.feeds.PickleExporter",
    "parquet": "crawlproj.exports.feeds.ParquetExporter",
}

# -- content: near-duplicates and the WARC archive ---------------------------
#: Check every HTML page's main text against the stored pages (exact, then MinHash LSH).
NEAR_DUPLICATES_ENABLED: boolean = True
#: Estimated Jaccard similarity of word (or, for CJK text, character) 5-gram shingles
#: from which a page is a near-duplicate.
NEAR_DUPLICATES_THRESHOLD: fraction = 0.8
#: MinHash permutations: more estimate the Jaccard better and cost time and 4 bytes each a page.
NEAR_DUPLICATES_NUM_PERM: number(int, 16) = 128
#: Pages with fewer shingles than this get no signature (too little text to estimate a Jaccard):
#: they are matched by their text and their shingle set only.
NEAR_DUPLICATES_MIN_SHINGLES: number(int, 1) = 10
#: The signature reads at most this many characters of a page's main text (the exact-duplicate
#: hash reads all of it): tens of thousands of shingles judge a Jaccard as well as millions, and
#: a page of megabytes of text would otherwise hold the crawl for seconds and cost hundreds of MB.
#: 0: no limit.
NEAR_DUPLICATES_MAX_CHARS: number(int, 0) = 200_000

# -- the page budget: what one page may cost (crawlproj.content.budget) -----------
#: A page is parsed (and its main text read) up to where it first nests deeper than this;
#: the rest is left out and counted (crawlproj/over_budget/depth): parsers are superlinear in
#: nesting. Real pages nest 10-70 deep; Blink stops at 512.
PAGE_MAX_DEPTH: number(int, 16) = 1024
#: ... and up to its this-many-th element (crawlproj/over_budget/elements); a 6 MB page has
#: about 120,000.
PAGE_MAX_ELEMENTS: number(int, 100) = 250_000
#: A page nested deeper than this gets its visible text as main text (linear time) instead of
#: main-content scoring, which walks each node's text once per ancestor.
MAIN_TEXT_MAX_DEPTH: number(int, 1) = 256
#: HTML pages of at least this many bytes are parsed, and their main text extracted, in a
#: page thread, so that no page holds the reactor for long (resiliparse's main-content step
#: still keeps the GIL: see PAGE_PROCESS_MIN_BYTES). 0: every page.
PAGE_THREAD_MIN_BYTES: number(int, 0) = 0
#: Python's GIL switch interval while page threads run: the longest the reactor waits for the
#: GIL when a page thread holds it (Python's default is 5 ms). 0: left as it is.
PAGE_THREAD_SWITCH_INTERVAL: number(float, 0) = 0.001
#: Page threads; 0 does all per-page work on the reactor's thread.
PAGE_THREADS: number(int, 0) = 1
#: HTML pages of at least this many bytes are parsed, and have their main text extracted and
#: signed, in a helper process instead of a page thread: the parser and resiliparse's
#: main-content step keep the GIL, and on a large page every host's next request would wait
#: for them (and, in the one page thread, every smaller page's parse). Few pages are this
#: large (a documentation page is mostly under 40 KB), so the pickling costs little, and the
#: helper works on another core. 0: never (page threads only). With PAGE_THREADS 0, all
#: per-page work stays on the reactor's thread, large pages' too.
PAGE_PROCESS_MIN_BYTES: number(int, 0) = 128 * 1024
#: The helper processes (large pages, documents) run this many nice steps below the crawl: its
#: reactor, whose turns decide when each host's next request goes, comes first when the CPUs
#: are busy (WORKERS = cores), and PAGE_STAGE_BACKLOG holds the frontier while a helper
#: catches up. 0: the crawl's own priority.
PAGE_PROCESS_NICE: number(int, 0, high=19) = 10
#: Work on one page in a page thread is given up on after this many seconds (in the helper
#: process, from its turn); the page is stored with what could be extracted
#: (budget/timeout/parse, budget/timeout/main_text).
PAGE_STAGE_TIMEOUT: number(float, 0, inclusive=False) = 20.0
#: While this many pages wait for or are in the page threads and the helper process, or wait
#: for or are in the spider's link stage, the frontier hands out nothing: pages that cost more
#: to parse than to fetch (a link farm's 50,000 links) wait on their server instead of in
#: memory. 0: no limit.
PAGE_STAGE_BACKLOG: number(int, 0) = 32
#: ... or while pages of this many bytes in all do (pages of megabytes cost hundreds of MB
#: once parsed; a count alone bounds them too late, or small pages too soon). 0: no limit.
PAGE_STAGE_BACKLOG_BYTES: number(int, 0) = 32 * 2**20
#: While this many items are in the item pipelines (Scrapy's scraper counts them), the frontier
#: hands out nothing, so that a host answering small pages (404s) faster than the store takes
#: them cannot pile items up in memory. 0: no limit.
ITEM_BACKLOG: number(int, 0) = 64
#: PDF responses (by Content-Type, or by their magic bytes under any other type) are read for
#: their text, title, author, language and links (crawlproj.content.pdf, PDFium) in a helper
#: process of their own, at most PDF_MAX_PAGES pages and PDF_MAX_CHARS characters of text, for
#: at most PDF_TIMEOUT seconds and PDF_MAX_MEMORY bytes of memory above the helper's own; past
#: a bound the page is stored with what was read (documents/over_budget/pdf_pages,
#: documents/timeout, documents/over_budget/pdf_memory). 0 pages: PDFs are stored unread.
PDF_MAX_PAGES: number(int, 0) = 500
PDF_MAX_CHARS: number(int, 1000) = 2_000_000
PDF_TIMEOUT: number(float, 0, inclusive=False) = 20.0
PDF_MAX_MEMORY: number(int, 0) = 1024 * 1024 * 1024
#: RSS and Atom feeds (by Content-Type, or an XML body whose root is rss, feed or rdf:RDF) are
#: read (crawlproj.content.feeds, feedparser) in a page thread: their entries' links are
#: followed, and each entry's updated or published date is change evidence for the page it
#: links, as a sitemap's <lastmod> is (revisit/sitemap_lastmod). An incremental crawl revisits
#: a host's feeds before its other due pages. Off: feeds are stored as pages and not read.
FEEDS_ENABLED: boolean = True
#: At a close (CLOSESPIDER_*, SIGTERM), pages already fetched are still read and stored for this
#: many seconds; those left after it are dropped (crawlproj/pages_left_at_close), for a JOBDIR
#: resume to fetch again: a clean stop leaves nothing to fetch twice, and a close held up by a
#: link farm's pages still ends in seconds.
CLOSE_GRACE: number(float, 0) = 5.0
#: Pages whose links the spider reads side by side on the reactor's thread; the rest wait their
#: turn, so that link farms' pages side by side never hold the reactor long. 0: no limit.
LINK_STAGE_PAGES: number(int, 0) = 2
#: The reactor's stalls are measured by a tick this often (0: not measured); a stall of
#: STALL_WARN seconds or more is logged and counted (reactor/stalls, reactor/max_stall_seconds).
#: A fetch's duration leaves out the stalls the tick saw (the thread waiting for the GIL a
#: page thread keeps), and it sees only those that cover its due time: at 0.05 most stalls
#: of tens of ms went unseen, and a 10x duration rule read each as a slow server.
STALL_TICK: number(float, 0) = 0.01
STALL_WARN: number(float, 0, inclusive=False) = 1.0
#: Archive the content of duplicates too (by default they are recorded, not archived).
NEAR_DUPLICATES_KEEP_CONTENT: boolean = False
#: The near-duplicate index's class: on disk in SQLite (signatures and LSH bands; nothing per
#: page in memory), or
#: crawlproj.distributed.near_duplicates.RedisNearDuplicateIndex, shared by every worker in
#: REDIS_URL (the distributed profile's choice). Built by its from_settings.
NEAR_DUPLICATES_INDEX_CLASS: class_path = "crawlproj.content.near_duplicates_pipeline.LocalNearDuplicateIndex"
#: Where the index persists; empty: beside the store (data/crawl.db -> data/crawl.near_duplicates.db).
NEAR_DUPLICATES_INDEX: text = ""
#: Archive every fetched page as WARC/1.1 (request + response records, per-record gzip).
WARC_ENABLED: boolean = True
#: Directory of the WARC files; empty: warc/ beside the store database.
WARC_DIR: text = ""
#: WARC file names start with this ({worker} is replaced in the distributed profile).
WARC_PREFIX: non_empty = "crawlproj"
#: A WARC file is closed and a new one started once it passes this many bytes.
WARC_MAX_BYTES: number(int, 4096) = 1 << 30
#: Write each page's outlinks in a metadata record beside its response, as Heritrix does
#: ("outlink: URL L a/@href" a line), for tools that rebuild the link graph from the WARC alone.
WARC_OUTLINKS: boolean = False
#: The payload-digest index (each payload's first capture: a later identical payload, at
#: any URL, in any crawl into this store, is written as a revisit record pointing at it).
#: Empty: beside the store (data/crawl.db -> data/crawl.digests.db).
WARC_DIGEST_INDEX: text = ""
#: Fetch and archive each HTML page's requisites: its stylesheets (and their @import and url()
#: targets: fonts, background images), scripts, images, icons, iframes and video posters, through
#: the frontier like any request (politeness, robots.txt, address safety, the URL-seen filter), as
#: response or revisit records, never stored as pages (docs/archiving.md). Off by default: a search
#: index or a study of text does not need them and each costs a fetch in its host's interval; the
#: archive profile turns it on.
REQUISITES_ENABLED: boolean = False
#: Which kinds of requisite are fetched.
REQUISITES_TYPES: requisite_kinds = ["stylesheet", "script", "image", "icon", "iframe", "media", "font"]
#: Requisites taken from one page (or one stylesheet), at most, in document order. 0: no bound.
REQUISITES_MAX_PER_PAGE: number(int, 0) = 150
#: Requisites fetched from one host over the crawl, at most. 0: no bound.
REQUISITES_MAX_PER_HOST: number(int, 0) = 20_000
#: A requisite's body, at most (bytes): a larger one is cut and counted (requisites/too_large).
REQUISITES_MAX_BYTES: number(int, 1) = 8 * 1024 * 1024
#: Fetch requisites on hosts other than the page's (a CDN's stylesheet, a font service), still
#: within ALLOWED_DOMAINS and ALLOWED_SUFFIXES; off: the page's own host only.
REQUISITES_OTHER_HOSTS: boolean = True
#: Package the crawl as a WACZ (WARC files, CDXJ index, pages list, datapackage) when it
#: closes, as `scrapy wacz` does (crawlproj.store.wacz). Off: indexing a large archive takes a while.
WACZ_ON_CLOSE: boolean = False
#: The WACZ file written at close; empty: beside the store (data/crawl.db -> data/crawl.wacz).
WACZ_FILE: text = ""

# -- distributed crawling (the distributed profile) ---------------------------
#: The Redis holding the shared frontier, the URL-seen filter and the start URLs. A node of a
#: Redis Cluster will do: the crawl finds the cluster from it and spreads its partitions over
#: the masters (docs/distributed.md).
REDIS_URL: redis_url = "redis://127.0.0.1:6379/0"
#: A Redis Cluster's nodes to start from ("host:port host:port ..."), so that one node down at
#: start does not stop a worker; empty: REDIS_URL alone (a password in REDIS_URL still applies).
REDIS_CLUSTER_NODES: text = ""
#: Prefix of every key of this crawl: two crawls on one Redis need two prefixes.
REDIS_PREFIX: non_empty = "crawlproj"
#: Hosts are split into this many partitions by hash; workers lease their share of them.
FRONTIER_PARTITIONS: number(int, 1) = 64
#: Fetched pages the shared near-duplicate index and revisit state are laid out for: their
#: entries go into small hashes, about 64 a hash at this many pages, which Redis keeps in its
#: compact encoding (listpack, up to 128 entries a hash). Set it near the crawl's size; beyond
#: it they still work and cost more a page. The first worker's value is kept in Redis for all.
SHARED_STATE_CAPACITY: number(int, 1000) = 10_000_000
#: Due hosts a worker takes from Redis at once: one script call on one Redis (one round trip
#: serves this many requests); on a cluster, one call per partition asked, in one round trip per node.
REDIS_POP_BATCH: number(int, 1) = 16
#: A worker with nothing due asks Redis again after this many seconds (other workers push into
#: its partitions without telling it).
REDIS_POLL_SECONDS: number(float, 0, inclusive=False) = 0.25
#: Every worker takes due hosts from every partition, not only its share: for a few workers on one
#: machine (WORKERS), so that a host's pages go to whichever worker is free. Each pop then reads
#: every partition: leave it off for many workers.
REDIS_SHARED_PARTITIONS: boolean = False
#: A host in flight is leased to its worker for HOST_LEASE seconds (longer than any fetch).
HOST_LEASE: number(float, 0, inclusive=False) = 300.0
#: A worker renews itself every WORKER_HEARTBEAT s; silent for WORKER_TTL s it is dead and its
#: hosts and unfinished requests go back to the frontier. Partitions are leased for PARTITION_LEASE s.
WORKER_HEARTBEAT: number(float, 0, inclusive=False) = 2.0
WORKER_TTL: number(float, 0, inclusive=False) = 15.0
PARTITION_LEASE: number(float, 0, inclusive=False) = 30.0
#: This worker's name (empty: host-pid-random, new each run). "{worker}" in STORE_URI,
#: WARC_PREFIX, WARC_DIR, WARC_DIGEST_INDEX, NEAR_DUPLICATES_INDEX and REVISIT_DB is replaced by it.
WORKER_ID: text = ""
#: A worker with nothing to do in the whole shared frontier waits this many seconds for
#: seeds (`scrapy seed`) before it exits; 0: it exits at once.
WORKER_IDLE_TIMEOUT: number(float, 0) = 0.0
#: Crawl processes on this machine: one uses one core. Above 1, `scrapy crawl` starts a local
#: redis-server (its data kept beside the store, so a rerun resumes), runs this many workers of
#: a distributed crawl over it, and merges their shards into STORE_URI when they end. With
#: REDIS_URL or REDIS_CLUSTER_NODES set on the command line, the workers use that Redis instead.
WORKERS: number(int, 1) = 1
#: `scrapy seed FILE` pushes start URLs to this Redis list; workers read it while crawling.
REDIS_START_URLS_KEY: non_empty = "{prefix}:start_urls"

# -- incremental re-crawling (Tamura and Kitsuregawa) ---------------
#: Keep every fetched URL's change history and next due time (the long-term revisit queue).
REVISIT_ENABLED: boolean = True
#: "off": crawl once; "incremental": crawl continuously, revisiting known URLs as they fall
#: due while discovering new ones (also -a mode=incremental, or PROFILE=incremental).
REVISIT_MODE: choice("off", "incremental") = "off"
#: The long-term revisit queue's class: in SQLite (REVISIT_DB), or
#: crawlproj.distributed.revisit_queue.RedisRevisitQueue (REDIS_URL, partitioned by host hash
#: like the frontier: the distributed profile's choice). Built by its from_settings.
REVISIT_QUEUE_CLASS: class_path = "crawlproj.revisit.queue.RevisitQueue"
#: The long-term queue's SQLite file; empty: beside the store (data/crawl.db -> data/crawl.revisit.db).
REVISIT_DB: text = ""
#: Crawl-clock seconds per real second. Revisit times below are on the crawl clock; only a
#: simulation (the sandbox's --time-scale) sets anything but 1.
REVISIT_TIME_SCALE: number(float, 0, inclusive=False) = 1.0
#: "budget": each page gets the freshness-optimal share of the revisit budget for its
#: estimated change rate (Cho & Garcia-Molina; bench/revisit_sim.py); "estimate": eq. (3)'s
#: mean change interval times REVISIT_FACTOR (the paper's rule).
REVISIT_SCHEDULE: choice("budget", "estimate") = "budget"
#: Revisit intervals stay within [REVISIT_MIN_INTERVAL, REVISIT_MAX_INTERVAL] seconds (at most
#: 400 days; longer ones are redrawn uniformly in 300-400 days). The first revisit comes
#: uniformly at random within REVISIT_FIRST_INTERVAL [low, high] seconds.
REVISIT_MIN_INTERVAL: number(float, 0, inclusive=False) = 3600.0
REVISIT_MAX_INTERVAL: revisit_range = 400 * 86400.0
REVISIT_FIRST_INTERVAL: interval_pair = [86400.0, 7 * 86400.0]
#: Where eq. (3) has no estimate: never changed multiplies the last interval by REVISIT_BACKOFF,
#: always changed by REVISIT_SHRINK. The estimate schedule uses REVISIT_FACTOR x 1/lambda.
REVISIT_BACKOFF: number(float, 1) = 2.0
REVISIT_SHRINK: fraction_or_one = 0.5
REVISIT_FACTOR: number(float, 0, inclusive=False) = 1.0
#: The budget schedule spends REVISIT_BUDGET revisits per day; 0: REVISIT_SHARE of the
#: servers' polite capacity (the rest is left to discovery). Replanned every
#: REVISIT_REPLAN_SECONDS (real) from up to REVISIT_RATE_SAMPLE estimated rates.
REVISIT_BUDGET: number(float, 0) = 0.0
REVISIT_SHARE: fraction_or_one = 0.5
REVISIT_REPLAN_SECONDS: number(float, 0) = 60.0
#: Estimated rates a replan draws at random (the budget's multiplier is a mean over them; the
#: replan steers toward the revisits actually made): more costs each worker memory and time.
REVISIT_RATE_SAMPLE: number(int, 100) = 20_000
#: The budget schedule never revisits a page before it has changed with this probability, so
#: an ample budget is not spent on pages that rarely change.
REVISIT_MIN_CHANGE: probability = 0.1
#: A page the budget schedule would leave alone because every visit found it changed is first
#: revisited up to REVISIT_PROBES times at half the budget's threshold interval, to tell a page
#: that changes too fast to keep fresh from one merely visited seldom (0: never).
REVISIT_PROBES: number(int, 0) = 2
#: What counts as a change: "text" (the main text's hash, so ads and timestamps in the
#: layout are not changes) or "body" (any byte). REVISIT_IGNORE_PATTERNS (regexes) are cut
#: from the text first, e.g. dates inside the article.
REVISIT_CHANGE: choice("text", "body") = "text"
REVISIT_IGNORE_PATTERNS: regex_list = []
#: Revisits send If-None-Match / If-Modified-Since; a 304 is an unchanged visit.
REVISIT_CONDITIONAL: boolean = True
#: A server whose schedule asks more than its polite interval allows: "stretch" every interval
#: in proportion, or "drop" its least valuable (deepest) pages from the revisit queue.
REVISIT_OVERLOAD: choice("stretch", "drop") = "stretch"
#: The refresher reads URLs due within REVISIT_HORIZON crawl-clock seconds into memory
#: (at most REVISIT_SHORT_TERM_MAX), every REVISIT_REFRESH_SECONDS real seconds, and hands
#: each to the frontier when due. A revisit lost on the way is sent again after
#: REVISIT_IN_FLIGHT_TIMEOUT real seconds.
REVISIT_HORIZON: number(float, 0, inclusive=False) = 86400.0
REVISIT_SHORT_TERM_MAX: number(int, 1) = 1_000_000
REVISIT_REFRESH_SECONDS: number(float, 0, inclusive=False) = 1.0
REVISIT_IN_FLIGHT_TIMEOUT: number(float, 0, inclusive=False) = 3600.0

# -- changes and watches (crawlproj.changes, docs/watching.md) -------------------
#: Record what each revisit that finds new content changed (the store's changes table: main-text
#: diff, similarity, links, title; meaningful or noise), log a line per meaningful change and
#: send it to WEBHOOK_URLS. Off: revisits only reschedule.
CHANGES_ENABLED: boolean = True
#: Real seconds between readings of the store's watches (`scrapy watch add` while a crawl runs).
WATCH_REFRESH_SECONDS: number(float, 0) = 5.0
#: Addresses each meaningful change is POSTed to as JSON (crawlproj.changes.webhooks).
WEBHOOK_URLS: string_list = []
#: The shared secret the body is signed with (HMAC-SHA256, header X-Crawlproj-Signature); empty: unsigned.
WEBHOOK_SECRET: text = ""
#: Attempts after the first, the first retry WEBHOOK_BACKOFF seconds later, doubled each time;
#: then the delivery is dead-lettered in WEBHOOK_DEADLETTER_FILE (empty: <store>.webhooks-failed.jsonl).
WEBHOOK_RETRIES: number(int, 0) = 5
WEBHOOK_BACKOFF: number(float, 0) = 2.0
WEBHOOK_TIMEOUT: number(float, 0, inclusive=False) = 10.0
WEBHOOK_DEADLETTER_FILE: text = ""

# -- the live dashboard (crawlproj.dashboard) --------------------------------
#: Serve a live page of the crawl from the crawl process.
DASHBOARD_ENABLED: boolean = True
#: Where it listens: loopback by default (anything else is reachable by others; the token still holds).
DASHBOARD_HOST: non_empty = "127.0.0.1"
#: Its port; when taken (another crawl), any free port. 0: any free port.
DASHBOARD_PORT: port = 6081
#: The operator's token (view, pause, resume, stop) and the read-only token (view only). Empty:
#: a random one each run, logged with the URL. At least 12 characters when set.
DASHBOARD_TOKEN: token = ""
#: The read-only token (view only); see DASHBOARD_TOKEN.
DASHBOARD_READONLY_TOKEN: token = ""
#: Seconds between snapshots pushed to the page.
DASHBOARD_INTERVAL: number(float, 0.05) = 1.0
#: The page lists this many hosts (the most recently active).
DASHBOARD_MAX_HOSTS: number(int, 1) = 100
#: Hosts the dashboard remembers (the most recently heard of): its figures per host, about 480
#: bytes each. Its host count still counts every host.
DASHBOARD_HOSTS_KEPT: number(int, 1) = 10_000
#: Write the dashboard's URLs (with the tokens) as JSON to this file (mode 0600).
DASHBOARD_URL_FILE: text = ""
#: Publish each worker's snapshot to REDIS_URL and show every worker (the distributed profile's choice).
DASHBOARD_REDIS: boolean = False
#: Keep requests that ran out of retries on a transient failure (DEADLETTERS_KINDS) in the
#: dead-letter queue, for `scrapy deadletters retry` (crawlproj.store.deadletters).
DEADLETTERS_ENABLED: boolean = True
#: The failures that qualify: error kinds, and http_<status> for RETRY_HTTP_CODES answers.
DEADLETTERS_KINDS: string_list = ["dns", "timeout", "connection_refused", "connection_lost", "receive", "http_500",
                                  "http_502", "http_503", "http_504", "http_522", "http_524", "http_408", "http_429"]
#: Where they are kept: SQLite beside the store, or crawlproj.distributed.deadletters.RedisDeadLetters
#: (the distributed profile's choice). Built by its from_settings.
DEADLETTERS_CLASS: class_path = "crawlproj.store.deadletters.SqliteDeadLetters"
#: The SQLite file; empty: beside the store (data/crawl.db -> data/crawl.deadletters.db).
DEADLETTERS_DB: text = ""
#: A running crawl looks for entries marked for retry this often, and sends this many at a time.
DEADLETTERS_POLL_SECONDS: number(float, 0.1) = 5.0
DEADLETTERS_RETRY_BATCH: number(int, 1) = 1000
#: Seconds of history the completion estimate reads its fetch and discovery rates from
#: (crawlproj.frontier.completion; shown on the dashboard and in /metrics).
ESTIMATE_WINDOW: number(float, 1) = 30.0

#: Freeze the start-up heap out of the garbage collector's way once the engine starts, and use
#: GC_THRESHOLDS (generation 0, 1, 2): fewer, shorter collection pauses (crawlproj.extensions.gc_tuning).
#: The third leaves the oldest generation to the clock (GC_FULL_INTERVAL): at 20, with the
#: start-up heap frozen, Python collected it every few seconds, 0.1 s each.
GC_TUNING_ENABLED: boolean = True
GC_THRESHOLDS: int_list = [50_000, 20, 1000]
#: Seconds between full collections, which free what young collections leave in reference cycles
#: (each closed connection's objects, among others); 0: only when GC_THRESHOLDS asks. Stretched
#: so that their pauses take at most GC_FULL_MAX_SHARE of the time (crawlproj.extensions.gc_tuning).
GC_FULL_INTERVAL: number(float, 0) = 60.0
GC_FULL_MAX_SHARE: number(float, 0) = 0.01
#: asyncio's selector loop, timing how long it waits for I/O: a fetch's duration then leaves
#: out, exactly, the time the crawler's own thread was busy (crawlproj.extensions.stalls).
ASYNCIO_EVENT_LOOP: class_path = "crawlproj.extensions.stalls.IdleTimingEventLoop"
#: Scrapy's check of each callback for a generator's return value: off, because it reads and
#: parses the spider's source again on every page (its cache misses for bound methods).
WARN_ON_GENERATOR_RETURN_VALUE: boolean = False

#: Seconds between readings of the crawl process's resident set, put beside the pages stored in
#: the stats (process/rss_bytes, process/rss_growth_per_1000_pages; crawlproj.extensions.memory). 0: off.
MEMORY_SAMPLE_INTERVAL: number(float, 0) = 10.0
#: Pages stored before memory growth is measured (caches and the frontier fill first).
MEMORY_WARMUP_PAGES: number(int, 1) = 500
#: Hand free heap pages back to the system at each reading (glibc's malloc_trim): a parser's
#: small allocations fragment the heap, and freed pages otherwise stay with the process.
MEMORY_TRIM: boolean = True
#: Allocations of this many bytes or more get memory of their own, handed back to the system
#: when freed (glibc's M_MMAP_THRESHOLD, set when the crawl starts; crawlproj.extensions.memory):
#: a page of megabytes' body and tree then leave nothing behind. 0: glibc's own threshold,
#: which slides up to the largest block freed so far (up to 32 MB), so that after one large
#: page the next ones come from the heap, which keeps its high-water mark.
MEMORY_MMAP_THRESHOLD: number(int, 0) = 1024 * 1024

#: The final crawl stats, as JSON, are written here; empty: beside the store
#: (data/crawl.db -> data/crawl.stats.json).
STATS_FILE: text = ""
#: Scrapy's in-memory stats collector with plain attribute lookups: Scrapy 2.19's runs each
#: through a hook that warns of a ``spider`` argument (crawlproj.stats_collector).
STATS_CLASS: class_path = "crawlproj.stats_collector.CrawlStatsCollector"
#: Scrapy's dump of every stat on the console at the close: off, since they are all in
#: STATS_FILE and the console ends with a summary a person reads (crawlproj.extensions.console).
STATS_DUMP: boolean = False
#: Scrapy's "Crawled N pages" line every this many seconds: off, for crawlproj's progress line.
LOGSTATS_INTERVAL: number(float, 0) = 0.0
#: A progress line every this many seconds (pages and their rate, hosts active, URLs queued,
#: errors, when the crawl should be done). 0: none.
PROGRESS_INTERVAL: number(float, 0) = 30.0
#: Hosts whose refusal (address safety, robots.txt, scope) is logged, once each, with the
#: reason and the setting that changes it; the rest are counted in the stats.
REFUSALS_LOGGED: number(int, 0) = 20
#: Where a crawl records its store and stats file, for scrapy report, wacz and deadletters to
#: find it. Empty: not recorded.
LAST_CRAWL_FILE: text = "data/last_crawl.json"
#: Stats file, console, gc tuning, stall monitor, memory watch, the refresher, Redis seeds, the dashboard, the WACZ at close
#: and the dead-letter queue.
EXTENSIONS: components = {"crawlproj.extensions.statsfile.StatsFile": 0, "crawlproj.extensions.console.Console": 0, "crawlproj.extensions.gc_tuning.GcTuning": 0, "crawlproj.extensions.stalls.StallMonitor": 0, "crawlproj.extensions.stalls.ItemBacklog": 0, "crawlproj.extensions.memory.MemoryWatch": 0, "crawlproj.revisit.refresher.Refresher": 100,
              "crawlproj.distributed.seeds.RedisSeeds": 200, "crawlproj.dashboard.extension.Dashboard": 300,
              "crawlproj.store.wacz.WaczOnClose": 400, "crawlproj.store.deadletters.DeadLetterQueue": 500}
