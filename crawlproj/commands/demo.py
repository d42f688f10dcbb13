"""``scrapy demo``: start the sandbox web, crawl it, stop it, and summarise."""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
from pathlib import Path

from scrapy.commands import ScrapyCommand

from ..extensions.console import refused


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "Crawl the sandbox web end to end (no internet needed) and print a summary"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--hosts", type=int, default=50, help="sandbox hosts (default 50)")
        parser.add_argument("--pages", type=int, default=20, help="pages per host (default 20)")
        parser.add_argument("--interval", type=float, default=0.2, help="politeness interval in seconds")
        parser.add_argument("--out", default="data/demo", help="where the database and logs go")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from sandbox.harness import SandboxProcess, run_crawl  # the checkout's, not the deployed egg's

        out = Path(opts.out)
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        db = out / "crawl.db"
        seeds = out / "seeds.txt"
        print(f"starting the sandbox web: {opts.hosts} hosts x {opts.pages} pages on 127.0.0.1")
        with SandboxProcess("--hosts", str(opts.hosts), "--pages", str(opts.pages), "--content-mix",
                            "--crawl-delay", str(2 * opts.interval), seeds_file=seeds) as sandbox:
            print(f"sandbox on port {sandbox.port}; crawling with `scrapy crawl web` (interval {opts.interval}s)")
            result = run_crawl(
                "web",
                out,
                args={"seeds": str(seeds)},
                settings={
                    "HOST_RESOLVE": sandbox.host_resolve,
                    "STORE_URI": f"sqlite:///{db}",
                    "MIN_INTERVAL": opts.interval,
                    "LOG_LEVEL": "INFO",
                    "WACZ_ON_CLOSE": True,  # data/demo/crawl.wacz: the crawl, ready for replay
                    # scrapy report, wacz and deadletters find it (the last crawl) with no --store
                    "LAST_CRAWL_FILE": self.settings.get("LAST_CRAWL_FILE"),
                },
            )
            # The frontier's promise: next request no sooner than the last one's finish + interval.
            report = sandbox.report(opts.interval, basis="idle")
        if result.returncode != 0:
            print(result.log[-3000:])
            raise SystemExit(f"the crawl failed (exit {result.returncode}); log: {out / 'crawl.log'}")
        conn = sqlite3.connect(db)
        pages = conn.execute("SELECT COUNT(*) FROM pages WHERE status BETWEEN 200 AND 299").fetchone()[0]
        hosts = conn.execute("SELECT COUNT(DISTINCT host) FROM pages WHERE status BETWEEN 200 AND 299").fetchone()[0]
        links = conn.execute("SELECT COUNT(*) FROM links").fetchone()[0]
        duplicates = dict(conn.execute("SELECT kind, COUNT(*) FROM duplicates GROUP BY kind").fetchall())
        warc_files = conn.execute("SELECT COUNT(DISTINCT warc_file) FROM pages").fetchone()[0]
        errors = (conn.execute("SELECT COUNT(*) FROM fetch_errors").fetchone()[0]
                  + conn.execute("SELECT COUNT(*) FROM pages WHERE status >= 400").fetchone()[0])
        conn.close()
        elapsed = float(result.stats.get("elapsed_time_seconds") or result.elapsed)
        summary = {
            "pages": pages,
            "hosts": hosts,
            "links": links,
            "errors": errors,
            "elapsed_s": round(elapsed, 2),
            "pages_per_s": round(pages / elapsed, 2) if elapsed else 0.0,
            "interval_s": opts.interval,
            "min_gap_s": report["min_gap"],
            "max_concurrency": report["max_concurrency"],
            "violations": report["violations"],
            "robots_forbidden": result.stats.get("crawlproj/robots_forbidden", 0),
            "not_crawled": refused(result.stats),
            "exact_duplicates": duplicates.get("exact", 0),
            "near_duplicates": duplicates.get("near", 0),
            "warc_files": warc_files,
            "store": str(db),
            "wacz": str(db.with_suffix(".wacz")) if db.with_suffix(".wacz").exists() else None,
            "log": str(out / "crawl.log"),
        }
        print()
        print(f"pages stored      {pages} from {hosts} hosts ({links} links)")
        print(f"errors            {errors}")
        stats = result.stats
        robots_5xx = sum(v for k, v in stats.items() if k.startswith("robotstxt/response_status_count/5"))
        not_crawled = ", ".join(f"{n} refused by {why}" if why != "scope" else f"{n} out of scope"
                                for why, n in refused(stats).items() if n) or "nothing refused"
        print(f"not crawled       {not_crawled}"
              + (f"; {robots_5xx} host(s) answered robots.txt with a 5xx, so they stay off-limits "
                 f"until it answers (RFC 9309)" if robots_5xx else ""))
        print(f"speed             {summary['pages_per_s']} pages/s over {summary['elapsed_s']} s")
        print(f"data              {db}  (tables pages, links, duplicates, hosts, fetch_errors)")
        print(f"duplicates        {summary['exact_duplicates']} exact, {summary['near_duplicates']} near "
              f"(sandbox families: templates, edited copies, mirrors); archive: {warc_files} WARC file(s) "
              f"in {out / 'warc'}")
        print(f"politeness        {report['requests']} requests seen by the server; smallest gap between "
              f"requests to one host {report['min_gap']} s (interval {opts.interval} s); "
              f"most concurrent requests to one host {report['max_concurrency']}; violations {report['violations']}")
        if summary["wacz"]:
            print(f"replayable        {summary['wacz']}  (WACZ: open it in pywb or ReplayWeb.page)")
        print(f"report            scrapy report --store sqlite:///{db}")
        print(json.dumps(summary))
