"""The report's languages on real pages: Debian documentation in five declared languages,
English (Node.js), Japanese DocBook pages that declare nothing, and the same Japanese pages
re-encoded as Shift_JIS and EUC-JP or mislabelled ``lang="en"`` by their template. Crawled
from nginx on loopback, then read back from the archive as `scrapy report` does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crawlproj.report.analysis import languages
from sandbox import docsites
from sandbox.harness import run_crawl
from sandbox.servers import NginxServer
from crawlproj.store.sqlite import SqliteStore

pytestmark = pytest.mark.slow

_HTML_LANG = re.compile(rb"<html[^>]*\slang=\"([^\"]+)\"", re.I)


def _legacy_site(root: Path) -> list[str]:
    """Debian Reference's first Japanese chapters three more ways: Shift_JIS, EUC-JP, and
    UTF-8 under a template that declares English. Returns the pages' paths."""
    paths = []
    for k in (1, 2, 3):
        source = Path(f"/usr/share/debian-reference/ch0{k}.ja.html").read_text(encoding="utf-8")
        for directory, charset in (("sjis", "Shift_JIS"), ("eucjp", "EUC-JP"), ("lie", "UTF-8")):
            page = source.replace("charset=UTF-8", f"charset={charset}").replace('encoding="UTF-8"', f'encoding="{charset}"')
            if directory == "lie":
                page = page.replace("<html ", '<html lang="en" ', 1)
            (root / directory).mkdir(parents=True, exist_ok=True)
            (root / directory / f"ch0{k}.html").write_bytes(page.encode(charset, errors="xmlcharrefreplace"))
            paths.append(f"/{directory}/ch0{k}.html")
    (root / "index.html").write_text("<html><body>" + "".join(f'<a href="{p}">{p}</a>' for p in paths)
                                     + "</body></html>")
    return paths


def test_languages_of_real_pages_declared_detected_and_in_legacy_encodings(tmp_path):
    sites = (*docsites.LANGUAGE_SITES, docsites.SITES[4])  # + Node.js, declared English
    docsites.ensure_installed(sites)
    legacy = tmp_path / "legacy"
    legacy_pages = _legacy_site(legacy)
    vhosts = {s.name: s.root for s in sites} | {"legacy.docs.test": str(legacy)}
    with NginxServer(vhosts) as nginx:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"http://{s.name}:{nginx.port}{s.start}\n" for s in sites)
                         + f"http://legacy.docs.test:{nginx.port}/index.html\n")
        settings = {"HOST_RESOLVE": docsites.HOST_RESOLVE, "ALLOWED_DOMAINS": docsites.DOMAIN, "MIN_INTERVAL": 0,
                    "RENDER_MODE": "never", "STORE_URI": f"sqlite:///{tmp_path}/crawl.db"}
        result = run_crawl("web", tmp_path / "run", args={"seeds": str(seeds)}, settings=settings)
        assert result.returncode == 0, result.log[-3000:]
    store = SqliteStore(str(tmp_path / "crawl.db"))
    found = languages(store.query)
    html = {url: (host, path) for url, host, path in (
        (u, h, "/" + u.split("/", 3)[3]) for (u, h) in store.query(
            "SELECT url, host FROM pages WHERE status = 200 AND content_type LIKE 'text/html%'"))}
    # Every page that declares a language, as nginx served it.
    roots = {s.name: Path(s.root) for s in sites}
    declared = {}
    for url, (host, path) in html.items():
        if host in roots and (roots[host] / path.lstrip("/")).is_file():
            match = _HTML_LANG.search((roots[host] / path.lstrip("/")).read_bytes()[:4096])
            if match:
                declared[url] = match.group(1).decode().split("-")[0].lower()
    assert len(declared) >= 100 and set(declared.values()) == {"de", "fr", "it", "ja", "ru", "en"}
    wrong = {url: (declared[url], found[url]) for url in declared if found[url].code != declared[url]}
    assert len(wrong) <= len(declared) // 100, wrong  # at least 99% right
    # Japanese: undeclared DocBook pages, Shift_JIS, EUC-JP, and a template's false lang="en".
    japanese = [u for u, (h, p) in html.items() if p.endswith(".ja.html") or p in legacy_pages]
    assert len([u for u in japanese if html[u][1] in legacy_pages]) == 9 and len(japanese) >= 15
    assert {u: found[u].code for u in japanese if found[u].code != "ja"} == {}
    lie = [u for u in japanese if "/lie/" in u]
    assert lie and all(found[u].how != "declared" for u in lie), {u: found[u] for u in lie}  # overruled
    # The declaration decided nearly all (a few untranslated pages' text overruled it).
    assert sum(found[u].how == "declared" for u in declared) >= 0.95 * len(declared)
