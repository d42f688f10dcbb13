# crawlproj: every target sets itself up (.venv, Python packages, system binaries).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SEEDS  ?= seeds/default.txt
STAMP  := $(VENV)/.installed
CRAWL_STAMP := $(VENV)/.crawl-installed

.PHONY: setup crawl test test-fast demo bench bench-smoke clean
# Independent prerequisites build side by side (make test: the crawler's venv and pywb's, 10 s).
MAKEFLAGS += -j2

# pyproject.toml's dependencies and those of the extras named; the checkout itself goes on the
# venv's path through a .pth file, as an editable install would, without setuptools' warnings
# about editable installs. pip prints errors only (-qq): a machine's pip configuration can name
# package indexes that do not exist, one warning per package.
# $(call install,extras...)
define install
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -qq --upgrade pip
	@$(BIN)/python -c "import sys, tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
	  extras = p['optional-dependencies']; \
	  print('\n'.join(p['dependencies'] + [r for g in sys.argv[1:] for r in extras[g] if not r.startswith('crawlproj')]))" \
	  $(1) > $(VENV)/requirements.txt
	$(BIN)/pip install -qq -r $(VENV)/requirements.txt
	@$(BIN)/python -c "import os, sysconfig; \
	  open(os.path.join(sysconfig.get_paths()['purelib'], 'crawlproj.pth'), 'w').write(os.getcwd() + '\n')"
	@touch $@
endef
# The tests' and benchmarks' venv: every extra, and dev's tools.
$(STAMP): pyproject.toml
	$(call install,render report distributed ordering parquet wacz dev)
# What crawling needs (make crawl): the core, rendering, and Redis for WORKERS=N.
$(CRAWL_STAMP): pyproject.toml
	$(call install,render distributed)

# pywb (replay in tests) in a venv of its own: it pins redis<3, which the crawler cannot use.
.venv-pywb/.installed:
	@test -x .venv-pywb/bin/python || $(PYTHON) -m venv .venv-pywb
	.venv-pywb/bin/pip install -qq "pywb>=2.10,<2.11"
	@touch $@

# The project's own modules are compiled here, once per change: where PYTHONDONTWRITEBYTECODE is
# set (as on this machine), Python would compile them again in every crawl process (0.4 CPU-s each).
setup: $(STAMP)
	@bash scripts/system-deps.sh
	@$(BIN)/python -m compileall -q crawlproj sandbox settings bench

## make crawl CONTACT=url-or-mail [SEEDS=path] [ARGS='-s NAME=VALUE ...']: broad crawl on the local profile
## (the real web: site owners must be able to reach whoever runs the crawl)
## (only what crawling needs: no test tools, no test material)
crawl: $(CRAWL_STAMP)
	@bash scripts/system-deps.sh crawl
	@$(BIN)/python -m compileall -q crawlproj settings
	$(BIN)/scrapy crawl web -a seeds=$(SEEDS) -s PROFILE=local \
	  $(if $(CONTACT),-s "USER_AGENT=crawlproj/0.1 (+$(CONTACT))") $(ARGS)

## make test: the whole suite (what CI runs), in two phases (scripts/test-phase). TEST_WORKERS
## processes share the tests that tolerate a loaded machine (most wait on servers, not on the
## CPU); then SERIAL_WORKERS processes share the `serial` ones (crawls judged against the wall
## clock, marked on the tests): three on this 2-core machine, as most of their time is spent
## waiting out politeness intervals. In each phase a process takes one test at a time, the
## longest first (tests/conftest.py), the tests of one xdist_group one after another in one
## process (renders beside another browser's are slower than the timeouts they judge), and a
## test that fails beside others runs again alone, and must pass alone. The suite ends by naming
## every test that ran again, its first failure and how it ended alone (tests/rerun_log.py).
TEST_WORKERS ?= 4
SERIAL_WORKERS ?= 3
RERUN_LOG := $(VENV)/test-reruns.jsonl
test: setup .venv-pywb/.installed
	@rm -rf $(VENV)/pytest-cache $(RERUN_LOG)
	@status=0; export PYTHON=$(abspath $(BIN)/python) TEST_CACHE=$(abspath $(VENV)/pytest-cache) TEST_RERUN_LOG=$(abspath $(RERUN_LOG)); \
	  scripts/test-phase $(TEST_WORKERS) "not serial" $(PYTEST_ARGS) || status=1; \
	  scripts/test-phase $(SERIAL_WORKERS) serial $(PYTEST_ARGS) || status=1; \
	  $(BIN)/python -m tests.rerun_log $(RERUN_LOG); exit $$status

## make test-fast: the edit-test loop: the unit tests and one small crawl (no other server or crawl)
test-fast: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow or edit_loop" $(PYTEST_ARGS)

## make demo: sandbox web + crawl + summary, no internet needed
demo: setup
	$(BIN)/scrapy demo $(ARGS)

## make bench: every benchmark in bench/, one JSON line each
bench: setup
	@for b in bench/*.py; do echo "# $$b"; $(BIN)/python $$b || exit 1; done

## make bench-smoke: every bench in its --smoke mode, one JSON line each (a refactor's before and after)
bench-smoke: setup
	@PYTHON=$(abspath $(BIN)/python) scripts/bench-smoke

clean:
	rm -rf $(VENV) .venv-pywb data .pytest_cache
