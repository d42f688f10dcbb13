"""Deployment: a real scrapyd on a loopback port, the egg deployed with scrapyd-deploy, two
distributed ``web`` jobs on one Redis against the sandbox, and their shards merged."""

import glob
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from sandbox import harness
from sandbox.servers import ScrapydServer
from crawlproj.store.merge import merge_shards

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def call(url, data=None):
    body = urllib.parse.urlencode(data, doseq=True).encode() if data else None
    with urllib.request.urlopen(url, data=body, timeout=30) as answer:
        return json.loads(answer.read())


def project_copy(tmp_path: Path) -> Path:
    """The sources in this test's folder: scrapyd-deploy runs ``setup.py clean -a`` (with
    ``--debug``, so that its output names any failure) beside them."""
    return harness.project_copy(tmp_path / "project")


def test_deploy_with_scrapyd_and_run_two_distributed_jobs(redis_server, sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "8", "--pages", "12")
    with ScrapydServer(str(BIN / "scrapyd")) as scrapyd:
        # A deploy target for this scrapyd, beside the project's own scrapy.cfg.
        config = tmp_path / "xdg"
        config.mkdir()
        (config / "scrapy.cfg").write_text(f"[deploy:test]\nurl = {scrapyd.url}\nproject = crawlproj\n")
        deploy = subprocess.run([str(BIN / "scrapyd-deploy"), "test", "-p", "crawlproj", "--debug"],
                                cwd=project_copy(tmp_path),
                                capture_output=True, text=True, timeout=300,
                                env={**os.environ, "XDG_CONFIG_HOME": str(config)})
        assert deploy.returncode == 0 and '"status": "ok"' in deploy.stdout, deploy.stdout + deploy.stderr
        assert call(scrapyd.url + "listprojects.json")["projects"] == ["crawlproj"]
        assert "web" in call(scrapyd.url + "listspiders.json?project=crawlproj")["spiders"]
        shards = tmp_path / "shards"
        settings = {
            "PROFILE": "distributed", "REDIS_URL": redis_server.url, "REDIS_PREFIX": "scrapyd",
            "HOST_RESOLVE": sandbox.host_resolve, "ADDRESS_ALLOWLIST": "127.0.0.0/8", "PER_IP_CONCURRENCY": 0, "PER_IP_RATE": 0, "DOMAIN_CONCURRENCY": 0,
            "USER_AGENT": "crawlproj-test/0.1 (+https://crawlproj.invalid/test)", "RENDER_MODE": "never",
            "STORE_URI": f"sqlite:///{shards}/{{worker}}/crawl.db", "MIN_INTERVAL": 0.2, "FRONTIER_PARTITIONS": 8,
            "WORKER_HEARTBEAT": 0.5, "WORKER_TTL": 3, "STORE_FLUSH_INTERVAL": 0.5}
        jobs = [call(scrapyd.url + "schedule.json", {
            "project": "crawlproj", "spider": "web", "seeds": sandbox.seeds_file,
            "setting": [f"{k}={v}" for k, v in settings.items()]})["jobid"] for _ in range(2)]
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            listed = call(scrapyd.url + "listjobs.json?project=crawlproj")
            finished = {j["id"] for j in listed["finished"]}
            if finished >= set(jobs):
                break
            time.sleep(0.5)
        logs = {job: (Path(scrapyd.dir) / "logs" / "crawlproj" / "web" / f"{job}.log").read_text() for job in jobs}
        assert finished >= set(jobs), listed
    for log in logs.values():
        assert "INFO: crawl finished after " in log, log[-3000:]  # the console's summary (the stats are in the stats file)
        assert "DistributedScheduler" in log or "joined scrapyd" in log
    paths = sorted(glob.glob(f"{shards}/*/crawl.db"))
    assert len(paths) == 2  # one shard per job
    summary = merge_shards(str(tmp_path / "merged.db"), paths)
    import sqlite3

    with sqlite3.connect(tmp_path / "merged.db") as conn:
        pages = {url for (url,) in conn.execute("SELECT url FROM pages")}
        per_shard = [sqlite3.connect(p).execute("SELECT COUNT(*) FROM pages").fetchone()[0] for p in paths]
    assert pages == sandbox.web.expected_pages() and summary["pages"] == len(pages)
    assert all(n > 0 for n in per_shard) and sum(per_shard) == len(pages)  # both worked, none twice
    report = sandbox.report(interval=0.2)
    assert report["violations"] == 0 and report["max_concurrency"] == 1


def test_a_scrapyd_job_that_cannot_start_says_why_in_its_log_and_the_egg_carries_the_seeds(tmp_path):
    """The egg Scrapyd runs has no checkout around it: it carries seeds/ (a job with no -a seeds
    reads seeds/default.txt from it) and no test sandbox; a job that cannot start ends its own
    log with one ERROR line saying why (Scrapyd lists it as finished either way)."""
    egg = tmp_path / "crawlproj.egg"
    built = subprocess.run([str(BIN / "scrapyd-deploy"), "--build-egg", str(egg), "--debug"], cwd=project_copy(tmp_path),
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    import zipfile

    names = zipfile.ZipFile(egg).namelist()
    assert "seeds/default.txt" in names
    assert not [n for n in names if n.startswith(("sandbox/", "crawlproj/sandbox/", "tests/", "bench/"))], names
    elsewhere = tmp_path / "job-folder"  # a job's working folder: no seeds/ in it
    elsewhere.mkdir()
    read = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(egg)!r}); "
                           "from crawlproj.spiders.web import read_seeds_file; "
                           "print(len(read_seeds_file('seeds/default.txt').splitlines()))"],
                          cwd=elsewhere, capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": ""})
    assert read.returncode == 0 and int(read.stdout) > 1, read.stderr
    with ScrapydServer(str(BIN / "scrapyd")) as scrapyd:
        config = tmp_path / "xdg"
        config.mkdir()
        (config / "scrapy.cfg").write_text(f"[deploy:test]\nurl = {scrapyd.url}\nproject = crawlproj\n")
        deploy = subprocess.run([str(BIN / "scrapyd-deploy"), "test", "-p", "crawlproj", "--debug"],
                                cwd=project_copy(tmp_path),
                                capture_output=True, text=True, timeout=300,
                                env={**os.environ, "XDG_CONFIG_HOME": str(config)})
        assert deploy.returncode == 0, deploy.stdout + deploy.stderr
        job = call(scrapyd.url + "schedule.json", {"project": "crawlproj", "spider": "web",
                                                     "setting": ["MIN_INTERVALL=1", "PROFILE=sandbox"]})["jobid"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if job in {j["id"] for j in call(scrapyd.url + "listjobs.json?project=crawlproj")["finished"]}:
                break
            time.sleep(0.5)
        log = (Path(scrapyd.dir) / "logs" / "crawlproj" / "web" / f"{job}.log").read_text()
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and "crawlproj: setting MIN_INTERVALL='1' is invalid" in errors[0], log[-2000:]
    assert "did you mean MIN_INTERVAL?" in errors[0]
