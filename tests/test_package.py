"""crawlproj as a user adopts it: the wheel and sdist built, the wheel installed (no extras) in a
clean venv, `scrapy startproject`, one ADDONS line, a spider of the user's own crawling a real
documentation site (Debian's PostgreSQL manual) on nginx; its politeness judged from nginx's own
log and its pages read from the store."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sandbox import docsites
from sandbox.audit import politeness_report
from sandbox.harness import PROJECT_DIR, project_copy
from sandbox.servers import NginxServer

# A wheel built and installed, crawls judged by nginx's log: slow, and timed.
pytestmark = [pytest.mark.slow, pytest.mark.serial]

PG = docsites.SITES[0]
PAGES = 12
CONTACT = "mydocs/1.0 (+https://mydocs.example/bot)"
SPIDER = '''
from crawlproj.spiders.site import SiteSpider


class DocsSpider(SiteSpider):
    """One documentation site, crawlproj's way; besides the pages, each page's first heading."""

    name = "docs"

    async def parse(self, response, **kwargs):
        async for out in super().parse(response, **kwargs):
            yield out
        yield {"url": response.url, "h1": response.css("h1::text").get()}
'''


def run(cmd: list, cwd: Path | str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SCRAPY_SETTINGS_MODULE")}
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def built_once(tmp_path_factory, name: str, build) -> Path:
    """``build(folder)`` run once for every process of the run: a process that took another
    module's test between two of these tears its module fixtures down, and built the wheel and
    venv again (50 s each on a slow machine). The first process builds under a lock; the others
    wait for it and take what it built."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / f"built-{name}"
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / ".done").exists():
            build(shared)
            (shared / ".done").touch()
    return shared


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    def build(out: Path) -> None:
        sources = project_copy(out / "sources" / "crawlproj")  # other tests write beside the checkout
        built = run([sys.executable, "-m", "build", "--outdir", out / "dist", sources], cwd=out)  # the wheel from the sdist
        assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]

    return built_once(tmp_path_factory, "dist", build) / "dist"


@pytest.fixture(scope="module")
def project(dist, tmp_path_factory) -> tuple[Path, Path]:
    """A clean venv (no system site-packages) with the wheel alone, and a new Scrapy project
    whose settings gain the ADDONS line and a contact, and a spider of its own (a copy for this
    module's crawls: the venv is shared)."""
    def build(tmp: Path) -> None:
        venv = tmp / "venv"
        assert run([sys.executable, "-m", "venv", venv], cwd=tmp).returncode == 0
        wheel = next(dist.glob("*.whl"))
        installed = run([venv / "bin" / "pip", "install", "-q", wheel], cwd=tmp, timeout=900)
        assert installed.returncode == 0, installed.stderr[-3000:]
        assert run([venv / "bin" / "scrapy", "startproject", "mydocs"], cwd=tmp).returncode == 0
        settings = tmp / "mydocs" / "mydocs" / "settings.py"
        text = settings.read_text()
        assert "\nADDONS = {}\n" in text and "\nDOWNLOAD_DELAY = 1\n" in text  # Scrapy's template, as it is
        settings.write_text(text.replace("\nADDONS = {}\n", '\nADDONS = {"crawlproj.addon.Crawlproj": 0}\n')
                            + f'\nUSER_AGENT = "{CONTACT}"\n')
        (tmp / "mydocs" / "mydocs" / "spiders" / "docs.py").write_text(SPIDER)

    shared = built_once(tmp_path_factory, "project", build)
    root = tmp_path_factory.mktemp("user") / "mydocs"
    shutil.copytree(shared / "mydocs", root)
    return shared / "venv", root


def test_the_wheel_holds_crawlproj_alone_with_its_licence_and_dependency_ranges(dist):
    wheel = next(dist.glob("*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"crawlproj", "crawlproj-0.1.0.dist-info"}  # no settings, seeds
    # Every module of the checkout's package is in it (a folder without __init__.py was left out).
    package = PROJECT_DIR / "crawlproj"
    assert {str(p.relative_to(PROJECT_DIR)) for p in package.rglob("*.py")} <= set(names)
    assert "crawlproj-0.1.0.dist-info/licenses/LICENSE" in names
    meta = zipfile.ZipFile(wheel).read("crawlproj-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Python: >=3.11\n" in meta and "Requires-Dist: scrapy<3,>=2.19\n" in meta
    core = [line for line in meta.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert core and not any("==" in line for line in core)
    assert not any(name in line for line in core for name in ("playwright", "redis", "scipy", "matplotlib",
                                                                "wordllama", "pyarrow", "wacz"))
    for extra in ("render", "report", "distributed", "ordering", "parquet", "wacz"):
        assert f"Provides-Extra: {extra}\n" in meta
    assert next(dist.glob("*.tar.gz"))


def test_a_new_scrapy_project_crawls_politely_with_one_addons_line(project):
    venv, root = project
    python = venv / "bin" / "python"
    where = run([python, "-c", "import crawlproj, importlib.util as u; "
                               "print(crawlproj.__file__, u.find_spec('settings'), u.find_spec('seeds'))"], cwd=root)
    assert where.stdout.startswith(str(venv)) and where.stdout.split()[1:] == ["None", "None"], where.stdout
    with NginxServer({PG.name: PG.root}) as nginx:
        crawl = run([venv / "bin" / "scrapy", "crawl", "docs", "-a", f"url=http://{PG.name}:{nginx.port}{PG.start}",
                     "-a", f"max_pages={PAGES}", "-s", f"HOST_RESOLVE={docsites.HOST_RESOLVE}",
                     "-s", "ADDRESS_ALLOWLIST=127.0.0.0/8", "-O", "items.jsonl"], cwd=root)
        records = nginx.records()
    log = crawl.stderr
    assert crawl.returncode == 0 and "Traceback" not in log, log[-4000:]
    assert "crawlproj.addon.Crawlproj" in log and "MIN_INTERVAL=1.0" in log  # the template's DOWNLOAD_DELAY
    assert "pip install 'crawlproj[render]'" in log  # no render extra: fetched statically, and said so
    assert "COMMANDS_MODULE = 'crawlproj.commands'" in log  # how to have scrapy report and the others
    # Pages in the store, with their text; the user's own items in the user's feed beside them.
    with sqlite3.connect(root / "data" / "crawl.db") as conn:
        pages = conn.execute("SELECT url FROM pages WHERE status = 200").fetchall()
    assert len(pages) == PAGES
    items = [json.loads(line) for line in (root / "items.jsonl").read_text().splitlines()]
    assert sum("h1" in item for item in items) >= PAGES - 1 and sum("markdown" in item for item in items) == PAGES
    assert list((root / "data" / "warc").glob("*.warc.gz"))
    # Politeness, from nginx's record: robots.txt first, one request at a time, 1 s between them.
    assert records[0].path == "/robots.txt"
    report = politeness_report(records, interval=1.0)
    assert report["requests"] == PAGES + 1 and report["violations"] == 0, report


def test_a_feature_without_its_extra_names_the_extra_in_one_line(project):
    venv, root = project
    for setting, extra in (("RENDER_MODE=always", "render"), ("WACZ_ON_CLOSE=True", "wacz")):
        crawl = run([venv / "bin" / "scrapy", "crawl", "docs", "-a", "url=http://docs.invalid/", "-s", setting],
                    cwd=root)
        assert crawl.returncode != 0 or "Traceback" in crawl.stderr
        assert f"needs crawlproj's {extra} extra: pip install 'crawlproj[{extra}]'" in crawl.stderr, crawl.stderr[-2000:]


def test_a_crawl_that_stores_nothing_says_why_in_any_project(project):
    venv, root = project
    crawl = run([venv / "bin" / "scrapy", "crawl", "docs", "-a", "url=http://127.0.0.1:9/docs/"], cwd=root)
    assert "Traceback" not in crawl.stderr, crawl.stderr[-3000:]
    said = [line for line in crawl.stderr.splitlines() if "no page was stored" in line]
    assert len(said) == 1 and "address safety refused 1 loopback" in said[0] and "ADDRESS_ALLOWLIST" in said[0], said
    assert any("127.0.0.1: not crawled: address safety refused it" in line for line in crawl.stderr.splitlines())
