"""The sandbox's hostile host family: pages built to stall, bloat or misdirect a crawler (pure).

A host with ``hostile=true`` serves these pages instead of a generated site;
its root page links to all of them. Each is answered by
:meth:`sandbox.server.SandboxServer.hostile` and has one outcome a
sound crawler gives it (:data:`OUTCOMES`): stored (perhaps only in part), or a
named fetch error.
"""

from __future__ import annotations

import zlib
from functools import lru_cache

#: ``refused.test`` is pinned to this loopback address, which the hostile crawl test leaves
#: out of ADDRESS_ALLOWLIST: a fetch or a render that reaches it breaks address safety.
REFUSED_HOST = "refused.test"
REFUSED_ADDRESS = "127.0.0.2"

#: path -> what a sound crawler makes of it: "page" (stored), or the fetch error's kind.
OUTCOMES = {
    "/deep.html": "page",  # 20,000 unclosed <div>: parsed up to PAGE_MAX_DEPTH
    "/words.html": "page",  # 10 MB of distinct words: a bounded signature
    "/bomb.html": "too_large",  # 64 KB of gzip that inflates to 64 MB
    "/endless.html": "too_large",  # a body that never ends
    "/trickle.html": "timeout",  # one byte a second, for ever
    "/redirect/0": "redirect_limit",  # an endless redirect chain: stored under /redirect/0
    "/nul.html": "page",  # NUL bytes in markup and text
    "/charset.html": "page",  # Shift_JIS, declared UTF-8 by the header, Shift_JIS by its meta
    "/hrefs.html": "page",  # hrefs no URL parser should choke on
    "/app.html": "page",  # rendered (a script builds it), and tries to connect to a refused address
    "/ok.html": "page",  # linked only from the pages above: reached through them
}
CHARSET_TITLE = "日本語の表題"


def index(refused_origin: str) -> bytes:
    """The root page: a link to every hostile page, and one to a refused address."""
    links = "".join(f'<li><a href="{path}">{path}</a>' for path in OUTCOMES if path != "/ok.html")
    return (f"<!doctype html><html><head><title>hostile</title></head><body><ul>{links}"
            f'<li><a href="{refused_origin}/secret">internal</a></ul></body></html>').encode()


def deep(levels: int = 20_000) -> bytes:
    body = "".join(f"<div><p>level {i} <a href='/ok.html'>x</a> " for i in range(levels))
    return f"<html><head><title>deep</title></head><body>{body}</body></html>".encode()


def words(size: int = 10_000_000) -> bytes:
    """``size`` bytes of words that never repeat (every shingle is new)."""
    parts, total, i = [], 0, 0
    while total < size:
        chunk = " ".join(f"w{n:x}" for n in range(i, i + 10_000))
        parts.append(f"<p>{chunk}</p>")
        total += len(chunk) + 7
        i += 10_000
    return ("<html><head><title>words</title></head><body><a href='/ok.html'>ok</a>"
            + "".join(parts) + "</body></html>").encode()


@lru_cache(maxsize=1)
def bomb(inflated: int = 64 * 1024 * 1024) -> bytes:
    """A gzip member that inflates to ``inflated`` bytes of one repeated HTML line."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip header
    line = b"<p>" + b"a" * 1020 + b"\n"
    block = line * 1024
    out = [compressor.compress(block) for _ in range(inflated // len(block))]
    return b"".join(out) + compressor.flush()


def nul() -> bytes:
    return (b"<html><head><title>nul\x00title</title></head><body>\x00\x00text\x00 with NULs"
            b"<a href='/ok.html\x00'>ok\x00</a><a href='/ok.html'>ok</a></body></html>")


def charset_page() -> bytes:
    return (f'<html><head><meta charset="shift_jis"><title>{CHARSET_TITLE}</title></head>'
            f'<body><p>本文です。表示・ソフト・能力</p><a href="/ok.html">次へ</a></body></html>').encode("shift_jis")


def hrefs() -> bytes:
    bad = ["http://[::1", "http://%zz/", "javascript:alert(1)", "mailto:x@y", "http://" + "a" * 5000 + ".test/",
           "//", "http://h\u00e9llo\u2028.test/", "\x00", "http://user:pass@", "data:text/html,<b>x</b>",
           "/ok.html#frag", "ht!tp://x", " /ok.html "]
    links = "".join(f'<a href="{h}">{i}</a>' for i, h in enumerate(bad))
    return f"<html><head><title>hrefs</title></head><body>{links}</body></html>".encode()


def app(refused_origin: str) -> bytes:
    """A page a script builds (so it is rendered) that reaches for a refused address (an IP
    literal: no name to fail to resolve) every way a
    browser can: preconnect, prefetch, an iframe, an image, a WebSocket, a worker, a beacon,
    an event stream and a navigation."""
    ws = refused_origin.replace("http://", "ws://")
    return f"""<!doctype html><html><head><title>app</title>
<link rel="preconnect" href="{refused_origin}"><link rel="dns-prefetch" href="{refused_origin}">
<link rel="prefetch" href="{refused_origin}/prefetch"></head>
<body><div id="root"></div><iframe src="{refused_origin}/frame"></iframe><img src="{refused_origin}/i.png">
<script>
document.getElementById("root").innerHTML =
  "<h1>Rendered</h1><p>" + "This text exists only after the script ran. ".repeat(20) + "</p><a href='/ok.html'>ok</a>";
try {{ new WebSocket("{ws}/ws"); }} catch (e) {{}}
try {{ new Worker(URL.createObjectURL(new Blob(["fetch('{refused_origin}/w').catch(() => 0); new WebSocket('{ws}/w')"]))); }} catch (e) {{}}
try {{ navigator.sendBeacon("{refused_origin}/beacon", "x"); }} catch (e) {{}}
try {{ new EventSource("{refused_origin}/events"); }} catch (e) {{}}
setTimeout(() => {{ fetch("{refused_origin}/fetch").catch(() => 0); }}, 100);
</script></body></html>""".encode()


def ok() -> bytes:
    return b"<html><head><title>ok</title></head><body><p>An ordinary page at the end of hostile links.</p></body></html>"
