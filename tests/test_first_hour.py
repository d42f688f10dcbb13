"""A new user's first hour (issue 41): each command run as a user runs it, checked by what they see."""

import json
import subprocess
import sys
import time

import pytest

from sandbox.harness import PROJECT_DIR, crawl_command, dashboard_urls, interrupt, run_crawl

pytestmark = pytest.mark.slow

CONTACT = "crawlproj-tests/0.1 (+https://crawlproj.test/contact)"


def scrapy(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=PROJECT_DIR, capture_output=True,
                          text=True, timeout=timeout)


def test_a_refused_crawl_says_why_names_the_setting_and_exits_1(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "1", "--pages", "3")
    proc = scrapy("crawl", "site", "-a", f"url=http://127.0.0.1:{sandbox.port}/", "-s", f"USER_AGENT={CONTACT}",
                  "-s", f"STORE_URI=sqlite:///{tmp_path}/crawl.db", "-s", "LAST_CRAWL_FILE=", "-s",
                  "DASHBOARD_ENABLED=False", "-s", "RENDER_MODE=never")
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("crawlproj: no page was stored: address safety refused") and "ADDRESS_ALLOWLIST" in last
    # The host's refusal was said once, at WARNING, with the setting that changes it.
    said = [line for line in proc.stderr.splitlines() if "127.0.0.1: not crawled: address safety refused it" in line]
    assert len(said) == 1 and "WARNING" in said[0] and "ADDRESS_ALLOWLIST" in said[0]
    assert sandbox.records() == []  # nothing reached the server


def test_a_crawl_of_a_server_that_is_not_there_names_the_refused_connection_not_robots_txt(tmp_path):
    """Its robots.txt could not be fetched, so the host was not crawled: the cause is the connection
    (issue 58: it read "robots.txt disallowed all 1 URL(s)" and "errors: none")."""
    proc = scrapy("crawl", "site", "-a", "url=http://127.0.0.1:9/docs/", "-s", f"USER_AGENT={CONTACT}",
                  "-s", "ADDRESS_ALLOWLIST=127.0.0.0/8", "-s", f"STORE_URI=sqlite:///{tmp_path}/crawl.db",
                  "-s", "LAST_CRAWL_FILE=", "-s", "DASHBOARD_ENABLED=False", "-s", "RENDER_MODE=never")
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("crawlproj: no page was stored: every fetch failed (robots.txt connection_refused 1)")
    assert "nothing accepted the connection" in last and "robots.txt disallowed" not in proc.stderr
    assert "errors: 1 (robots.txt connection_refused 1)" in proc.stderr


def test_a_user_agent_without_a_contact_and_seeds_without_a_url_are_refused(tmp_path):
    proc = scrapy("crawl", "site", "-a", "url=https://example.org/", "-s", "USER_AGENT=mybot")
    assert proc.returncode == 2 and "setting USER_AGENT='mybot' is invalid: names no contact" in proc.stderr
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# my seeds\nexample.org\nftp://example.org/pub/\n")
    proc = scrapy("crawl", "web", "-a", f"seeds={seeds}", "-s", f"USER_AGENT={CONTACT}")
    lines = [line for line in proc.stderr.splitlines() if line.startswith("crawlproj: ")]
    assert proc.returncode == 2 and len(lines) == 1 and "no crawlable URL in it" in lines[0], proc.stderr[-1500:]
    assert f"{seeds}:2" in lines[0] and "Spider opened" not in proc.stderr


def test_the_console_shows_progress_refusals_and_a_summary_not_a_stats_dump(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "4", "--pages", "12", "--cross-host", "0", "--host", "3:robots=private")
    result = run_crawl("web", tmp_path, args={"seeds": sandbox.seeds_file}, settings={
        "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path}/crawl.db", "MIN_INTERVAL": 0.3,
        "PROGRESS_INTERVAL": 1, "RENDER_MODE": "never"})
    assert result.returncode == 0, result.log[-2000:]
    log = result.log
    progress = [line for line in log.splitlines() if "URLs queued" in line]
    assert progress and "pages (" in progress[0] and "hosts active" in progress[0] and "errors" in progress[0]
    assert any("done about" in line for line in progress)  # the completion estimate, as a clock time
    said = [line for line in log.splitlines() if "h3.sandbox.test: its robots.txt disallows some of its URLs" in line]
    assert len(said) == 1 and "WARNING" in said[0]
    stored = result.stats["store/pages"]
    assert f"{stored:,} pages stored in sqlite:///{tmp_path}/crawl.db" in log
    assert "refused by robots.txt" in log and "next: scrapy report --store" in log
    assert "Dumping Scrapy stats" not in log and "Enabled downloader middlewares" not in log
    assert len(log.splitlines()) < 60  # was over 200 lines for a crawl this size


def test_every_command_finds_the_last_crawl_and_says_which(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "2", "--pages", "4")
    record = tmp_path / "last.json"
    db = tmp_path / "crawl" / "crawl.db"
    result = run_crawl("web", tmp_path / "crawl", args={"seeds": sandbox.seeds_file}, settings={
        "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{db}", "LAST_CRAWL_FILE": str(record),
        "MIN_INTERVAL": 0.02, "RENDER_MODE": "never"})
    assert result.returncode == 0, result.log[-2000:]
    assert json.loads(record.read_text())["store"] == f"sqlite:///{db}"
    said = f"reading the crawl in {db} (the last crawl's, as {record} records)"
    for command in (["wacz"], ["deadletters", "list"], ["report", "--out", str(tmp_path / "report")]):
        proc = scrapy(*command, "-s", f"LAST_CRAWL_FILE={record}", timeout=120)
        assert proc.returncode == 0 and said in proc.stderr, (command, proc.stderr[-1500:])
    assert (db.parent / "crawl.wacz").exists()
    # deadletters read the crawl's own queue, beside its store, not a new empty one of the settings
    assert (db.parent / "crawl.deadletters.db").exists()


def test_a_test_crawl_is_not_recorded_as_the_users_last():
    assert "LAST_CRAWL_FILE=" in crawl_command("web")


def test_an_incremental_crawl_over_a_stored_crawl_does_not_fetch_its_pages_again(sandbox_factory, tmp_path):
    """The first incremental run after a local crawl of the same store: pages already stored are
    the refresher's (revisited when due, an hour on here), not new URLs to fetch again."""
    sandbox = sandbox_factory("--hosts", "3", "--pages", "10", "--no-robots-mix")
    db = f"sqlite:///{tmp_path}/crawl.db"
    first = run_crawl("web", tmp_path / "local", args={"seeds": sandbox.seeds_file}, settings={
        "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": db, "MIN_INTERVAL": 0.02, "RENDER_MODE": "never"})
    assert first.returncode == 0 and first.stats["store/pages"] >= 20, first.log[-2000:]
    sandbox.reset()
    again = run_crawl("web", tmp_path / "incremental", args={"seeds": sandbox.seeds_file}, settings={
        "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": db, "MIN_INTERVAL": 0.02, "RENDER_MODE": "never",
        "REVISIT_MODE": "incremental", "JOBDIR": str(tmp_path / "job"), "CLOSESPIDER_TIMEOUT": 8})
    assert again.returncode == 0, again.log[-2000:]  # continuous: a spell with nothing due is no failure
    assert again.stats["revisit/stored_marked_seen"] == first.stats["store/pages"]
    fetched = [r.path for r in sandbox.records() if r.path != "/robots.txt"]
    assert fetched == [], fetched


def test_ctrl_c_stops_at_once_and_a_static_crawl_says_nothing_it_need_not(sandbox_factory, tmp_path):
    """Issue 41, item 7: no browser for a purely static site (RENDER_MODE left as the user finds
    it), the profile said once, no warning or traceback of the crawler's own plumbing, and
    Ctrl-C ends the crawl in seconds (it took 18) with the closing summary."""
    sandbox = sandbox_factory("--hosts", "4", "--pages", "60", "--no-robots-mix")
    url_file = tmp_path / "dashboard.json"
    proc = subprocess.Popen(crawl_command("web", {"seeds": sandbox.seeds_file}, {
        "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path}/crawl.db", "MIN_INTERVAL": 0.5,
        "PROGRESS_INTERVAL": 1, "DASHBOARD_PORT": 0, "DASHBOARD_URL_FILE": str(url_file)}),
        cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        dashboard_urls(url_file, proc)
        deadline = time.monotonic() + 60
        while len([r for r in sandbox.records() if r.path != "/robots.txt"]) < 12 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, "the crawl ended before it was interrupted"
        log, waited = interrupt(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, log[-2000:]
    assert waited < 10, f"Ctrl-C took {waited:.1f} s"  # 18 s before; about 1 s with fetches in flight
    lines = log.splitlines()
    assert sum("profile 'sandbox' applied" in line for line in lines) == 1
    assert not any("rendering with" in line for line in lines)  # Chromium was never started
    for noise in ("Traceback", "Warning", "deprecated", "returned a Deferred", "never retrieved", "No open spider"):
        assert not any(noise in line for line in lines), (noise, log[-2000:])
    assert any("crawl shutdown after" in line and "pages stored in" in line for line in lines), log[-2000:]


def test_workers_on_one_site_say_why_the_extra_ones_wait(sandbox_factory, tmp_path):
    """Issue 41, item 8: -s WORKERS=2 on one site fetched fewer pages than one worker, with no
    hint why. It says so, and the crawl still stores the site."""
    sandbox = sandbox_factory("--hosts", "1", "--pages", "6", "--no-robots-mix")
    result = run_crawl("site", tmp_path, args={"url": sandbox.web.origin(0) + "/"}, settings={
        "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path}/crawl.db", "WORKERS": 2,
        "MIN_INTERVAL": 0.05, "RENDER_MODE": "never", "DASHBOARD_PORT": 0})
    assert result.returncode == 0, result.log[-2000:]
    said = [line for line in result.log.splitlines() if "WORKERS=2 on one site" in line]
    assert len(said) == 1 and "WARNING" in said[0] and "workers beyond the first mostly wait" in said[0], said
