"""Profiles and bad settings fail at start-up with a message naming the setting."""

import subprocess
import sys

import pytest
from scrapy.settings import Settings

from crawlproj.config import validate
from crawlproj.errors import SettingsError
from crawlproj.profiles import ProfileAddon, available_profiles
from crawlproj.resolver import parse_host_resolve, pinned_address
from sandbox.harness import PROJECT_DIR


CONTACT = "crawlproj-tests/0.1 (+https://crawlproj.test/contact)"


def project_settings(**values):
    settings = Settings()
    settings.setmodule("crawlproj.defaults", priority="project")
    for key, value in {"USER_AGENT": CONTACT, **values}.items():
        settings.set(key, value, priority="cmdline")
    return settings


def test_local_profile_is_the_default_and_validates():
    assert "local" in available_profiles()
    settings = project_settings()
    ProfileAddon().update_settings(settings)
    assert settings.get("STORE_URI") == "sqlite:///data/crawl.db"


def test_the_archive_profile_fetches_requisites_and_packages_the_crawl():
    settings = project_settings(PROFILE="archive")
    ProfileAddon().update_settings(settings)
    assert settings.getbool("REQUISITES_ENABLED") and settings.getbool("WARC_OUTLINKS")
    assert settings.getbool("WACZ_ON_CLOSE")
    assert not project_settings().getbool("REQUISITES_ENABLED")  # off by default: docs/archiving.md says why


def test_cmdline_beats_profile():
    settings = project_settings(STORE_URI="sqlite:///other.db")
    ProfileAddon().update_settings(settings)
    assert settings.get("STORE_URI") == "sqlite:///other.db"


@pytest.mark.parametrize(
    "name, value",
    [
        ("PROFILE", "nonsense"),
        ("STORE_URI", "mysql://x/y"),
        ("STORE_BATCH_SIZE", "0"),
        ("STORE_FLUSH_INTERVAL", "soon"),
        ("MIN_INTERVAL", "-1"),
        ("DEPTH_LIMIT", "1.5x"),
        ("HOST_RESOLVE", "*.sandbox.test=not-an-ip"),
        ("FOLLOW_NOFOLLOW", "maybe"),
        ("USER_AGENT", ""),
        ("ADDRESS_ALLOWLIST", "10.0.0.0/33"),
        ("DYNAMIC_URL_PATTERNS", "(unclosed"),
        ("BACKOFF_STATUSES", "503,soon"),
        ("WASEDA_TARGET_SPEED", "0"),
        ("RENDER_MODE", "sometimes"),
        ("CHROMIUM_PATH", "/nonexistent/chromium"),
        ("RENDER_MAX_PAGES", "0"),
        ("MIN_INTERVAL", "nan"),  # passes every comparison: it would stall the crawl
        ("PAGE_STAGE_TIMEOUT", "inf"),
        ("CONCURRENT_REQUESTS", "many"),  # Scrapy's own settings are checked too
        ("DOWNLOADER_MIDDLEWARES", '{"a.b.C": "first"}'),
        ("LOG_LEVEL", "LOUD"),
        ("REQUISITES_TYPES", "stylesheet,videos"),
    ],
)
def test_bad_values_name_the_setting(name, value):
    with pytest.raises(SettingsError) as exc:
        ProfileAddon().update_settings(project_settings(**{name: value}))
    assert exc.value.name == name and name in str(exc.value)


@pytest.mark.slow  # a crawl process (refused before crawling)
def test_crawl_with_bad_setting_fails_before_crawling(tmp_path):
    for setting, fragment in (("PROFILE=distributedd", "unknown profile"), ("STORE_BATCH_SIZE=-5", "must be >= 1"),
                              ("MIN_INTERVALL=1", "unknown setting; did you mean MIN_INTERVAL?")):
        proc = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "web", "-s", setting, "-s", f"USER_AGENT={CONTACT}"],
                              cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2
        name = setting.split("=")[0]
        errors = [line for line in proc.stderr.splitlines() if line.startswith("crawlproj: ")]
        assert len(errors) == 1 and f"setting {name}=" in errors[0] and fragment in errors[0]
        assert "Traceback" not in proc.stderr and "Spider opened" not in proc.stderr


@pytest.mark.slow  # crawl processes (refused before crawling)
@pytest.mark.parametrize("args, fragment", [
    (["web", "-a", "seeds=/no/such/seeds.txt"], "seeds file /no/such/seeds.txt: No such file or directory"),
    (["site"], "the site spider needs -a url="),
    (["site", "-a", "url=https://example.org/", "-a", "max_pages=many"], "-a max_pages='many': expected a whole number"),
])
def test_bad_arguments_and_seeds_get_one_line_and_exit_2(args, fragment):
    proc = subprocess.run([sys.executable, "-m", "scrapy", "crawl", *args, "-s", "PROFILE=sandbox"],
                          cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("crawlproj: ")]
    assert len(errors) == 1 and fragment in errors[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "Spider opened" not in proc.stderr


def test_host_resolve_forms():
    assert parse_host_resolve("*.sandbox.test=127.0.0.1, a.test=::1") == [("*.sandbox.test", "127.0.0.1"), ("a.test", "::1")]
    assert parse_host_resolve('{"x.test": "127.0.0.2"}') == [("x.test", "127.0.0.2")]
    assert parse_host_resolve({}) == []
    pins = parse_host_resolve({"*.sandbox.test": "127.0.0.1"})
    assert pinned_address(pins, "H3.Sandbox.Test.") == "127.0.0.1"
    assert pinned_address(pins, "sandbox.test.evil.com") is None


def test_validate_accepts_base_settings():
    validate(project_settings())


def test_every_setting_is_declared_once_with_its_check_and_reason():
    import inspect

    import settings as project
    from crawlproj import config

    values = {k: getattr(m, k) for m in config.MODULES for k in dir(m) if k.isupper()}
    checks = config.declared()
    assert sorted(checks) == sorted(values)  # every default has its check
    assert all(getattr(check, "accepts", "") for check in checks.values())
    reasons = {name: reason for m in config.MODULES for name, reason, _ in config._declarations(inspect.getsource(m))}
    assert sorted(reasons) == sorted(values) and all(reasons.values()), [n for n, r in reasons.items() if not r]
    # The project's settings module is the declarations, nothing more.
    assert {k: getattr(project, k) for k in dir(project) if k.isupper()} == values


def test_the_settings_reference_is_generated_from_the_declarations():
    from crawlproj import config

    page = (PROJECT_DIR / "docs" / "settings.md").read_text()
    assert page == config.reference(), "docs/settings.md is stale: python -m crawlproj.config > docs/settings.md"


def test_the_placeholder_contact_is_refused_outside_the_sandbox():
    settings = Settings()
    settings.setmodule("crawlproj.defaults", priority="project")
    with pytest.raises(SettingsError, match="USER_AGENT=.*placeholder contact"):
        ProfileAddon().update_settings(settings)
    settings.set("PROFILE", "sandbox", priority="cmdline")
    ProfileAddon().update_settings(settings)  # the sandbox may keep it


def test_dns_cache_answers_go_stale_after_the_ttl(monkeypatch):
    from twisted.internet import defer
    from scrapy.resolver import ThreadedResolver, dnscache

    from crawlproj import resolver as mod

    calls = []

    def lookup(self, name, timeout=()):
        calls.append(name)
        return defer.succeed(f"192.0.2.{len(calls)}")

    monkeypatch.setattr(ThreadedResolver, "getHostByName", lookup)
    clock = [1000.0]
    monkeypatch.setattr(mod.time, "monotonic", lambda: clock[0])
    r = mod.HostResolveResolver(object(), 100, 5.0, [("*.pinned.test", "127.0.0.1")], ttl=60)
    dnscache.pop("a.test", None)
    got = []
    r.getHostByName("a.test").addCallback(got.append)
    r.getHostByName("a.test").addCallback(got.append)
    clock[0] += 61
    r.getHostByName("a.test").addCallback(got.append)
    r.getHostByName("x.pinned.test").addCallback(got.append)
    assert got == ["192.0.2.1", "192.0.2.1", "192.0.2.2", "127.0.0.1"] and calls == ["a.test", "a.test"]


def test_the_readme_quotes_defaults_truly_and_links_pages_that_exist():
    import ast
    import re

    from crawlproj import defaults

    readme = (PROJECT_DIR / "README.md").read_text()
    rows = re.findall(r"^\| `([A-Z_0-9]+)` \| `(.+?)` \|", readme, re.M)
    assert len(rows) == 10
    for name, value in rows:
        assert ast.literal_eval(value) == getattr(defaults, name), name
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links and all((PROJECT_DIR / link).is_file() for link in links)
    assert len(readme.encode()) <= 20_000


def test_a_page_out_of_retries_is_logged_as_a_warning_not_an_error(caplog):
    import logging

    from crawlproj.log_levels import install_log_filters

    install_log_filters()
    install_log_filters()  # once is enough, however often it is asked
    retry = logging.getLogger("scrapy.downloadermiddlewares.retry")
    with caplog.at_level(logging.INFO):
        retry.error("Gave up retrying %(request)s (failed %(retry_times)d times): %(reason)s",
                    {"request": "<GET http://h.test/>", "retry_times": 3, "reason": "timeout"})
        retry.error("something else went wrong")
    assert [(r.levelname, r.getMessage()[:16]) for r in caplog.records] == [
        ("WARNING", "Gave up retrying"), ("ERROR", "something else w")]
    assert len(retry.filters) == 1


def test_an_unknown_setting_on_the_command_line_is_refused_and_known_ones_are_not():
    from crawlproj.config import validate

    settings = project_settings(DOWNLOAD_DELAY=0, MIN_INTERVAL=2, PLAYWRIGHT_LAUNCH_OPTIONS={}, SCHEDULER_PERSIST=True,
                                LOG_LEVEL="INFO")
    validate(settings)
    settings.set("NO_SUCH_THING", 1, priority="project")  # a project's own settings module may hold its own
    validate(settings)
    settings.set("CONCURENT_REQUESTS", 8, priority="cmdline")
    with pytest.raises(SettingsError, match="did you mean CONCURRENT_REQUESTS"):
        validate(settings)


def test_a_misspelt_setting_of_crawlprojs_own_prefixes_is_refused_and_other_extensions_pass():
    from crawlproj.config import validate

    settings = project_settings(REDIS_PARAMS={}, REDIS_START_URLS_KEY="k", PLAYWRIGHT_SOMETHING_NEW=1)
    for name in ("REDIS_PARAMS", "REDIS_START_URLS_KEY", "PLAYWRIGHT_SOMETHING_NEW"):
        settings.set(name, settings.get(name), priority="cmdline")
    validate(settings)  # scrapy-redis's, and a name no one here could have meant
    settings.set("REDIS_POP_BACH", 32, priority="cmdline")
    with pytest.raises(SettingsError, match="did you mean REDIS_POP_BATCH"):
        validate(settings)


def test_the_one_range_check_takes_each_end_open_or_closed():
    from scrapy.settings import Settings

    from crawlproj.checks import fraction, fraction_or_one, probability, unit_interval

    def refused(check, value):
        try:
            check(Settings({"X": value}), "X")
        except SettingsError as exc:
            return str(exc)
        return None

    assert [refused(c, 0) is None for c in (fraction, fraction_or_one, probability, unit_interval)] == [False, False, True, True]
    assert [refused(c, 1) is None for c in (fraction, fraction_or_one, probability, unit_interval)] == [False, True, False, True]
    assert "must be < 1" in refused(probability, 1) and "must be > 0" in refused(fraction, 0)
    assert refused(unit_interval, "nan") and unit_interval.accepts == "a number, 0 <= x <= 1"


def test_a_renamed_setting_given_by_its_old_name_is_read_as_the_new_one(caplog):
    from crawlproj.config import validate

    settings = project_settings()
    settings.set("WASEDA_MAX_DELAY_1", 2.5, priority="cmdline")
    validate(settings)
    assert settings.getfloat("WASEDA_SLOW_DELAY") == 2.5 and "WASEDA_MAX_DELAY_1" not in settings.attributes
    assert "WASEDA_MAX_DELAY_1 is now called WASEDA_SLOW_DELAY" in caplog.text
