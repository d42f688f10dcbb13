# crawlproj: every target sets itself up (.venv, Python packages, system binaries).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SEEDS  ?= seeds/default.txt
STAMP  := $(VENV)/.installed
CRAWL_STAMP := $(VENV)/.crawl-installed

.PHONY: setup crawl test test-fast demo bench clean
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

## make test: the whole suite (what CI runs), in two phases. TEST_WORKERS processes share the
## tests that tolerate a loaded machine (most wait on servers, not on the CPU); then SERIAL_WORKERS
## processes share the `serial` ones (crawls judged against the wall clock, tests/conftest.py):
## three on this 2-core machine, as most of their time is spent waiting out politeness intervals.
## In each phase a process takes one test at a time, the longest first (LONGEST_FIRST), the tests
## of one xdist_group one after another in one process (the timed tests that start Chromium:
## renders beside another browser's are slower than the timeouts they judge), and a test that
## fails beside others runs again alone, and must pass alone (a crawl timed on a loaded machine
## measures the load, not the crawler).
## pytest's exit 5 (nothing selected, e.g. PYTEST_ARGS naming one file) is no failure.
TEST_WORKERS ?= 4
SERIAL_WORKERS ?= 3
PYTEST := $(BIN)/python -m pytest -q -o cache_dir=$(VENV)/pytest-cache
# $(call share,processes,marker expression): the tests so marked, shared, failures again alone.
define share
$(PYTEST) -n $(1) --dist loadgroup --maxschedchunk 1 -m "$(2)" $(PYTEST_ARGS) || test $$? -eq 5 || { \
  echo "make test: the tests that failed beside others run again, alone:"; \
  $(PYTEST) --last-failed --last-failed-no-failures none -m "$(2)" $(PYTEST_ARGS); }
endef
test: setup .venv-pywb/.installed
	@rm -rf $(VENV)/pytest-cache
	$(call share,$(TEST_WORKERS),not serial)
	$(call share,$(SERIAL_WORKERS),serial)

## make test-fast: the edit-test loop: the unit tests and one small crawl (no other server or crawl)
test-fast: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow" $(PYTEST_ARGS)

## make demo: sandbox web + crawl + summary, no internet needed
demo: setup
	$(BIN)/scrapy demo $(ARGS)

## make bench: every benchmark in bench/, one JSON line each
bench: setup
	@for b in bench/*.py; do echo "# $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .venv-pywb data .pytest_cache
