#!/usr/bin/env bash
# make test: the whole suite (what CI runs), as two groups at once.
#
# * SERIAL_WORKERS processes (2) share the `serial` tests, crawls judged against the wall clock
#   (tests/conftest.py), at the normal CPU priority;
# * TEST_WORKERS processes (4) share every other test at the lowest priority (nice 19): they
#   tolerate a loaded machine, and take only the CPU the timed crawls leave, so those crawls run
#   as on a quiet machine while the rest of the suite fills the idle cores.
#
# In each group a process takes one test at a time, the longest first (LONGEST_FIRST), and a test
# that fails beside others runs again on its own, and must pass then (a crawl timed on a loaded
# machine measures the load, not the crawler). The serial group's output is shown when it ends.
# pytest's exit 5 (nothing selected, e.g. PYTEST_ARGS naming one file) is no failure.
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON_BIN:-.venv/bin/python}
TEST_WORKERS=${TEST_WORKERS:-4}
SERIAL_WORKERS=${SERIAL_WORKERS:-2}
read -r -a EXTRA <<< "${PYTEST_ARGS:-}"

# share PROCESSES MARKER-EXPRESSION CACHE-DIR: the tests so marked, shared; failures again on their own.
share() {
    "$PYTHON" -m pytest -q -o cache_dir="$3" -n "$1" --dist load --maxschedchunk 1 -m "$2" "${EXTRA[@]}"
    local status=$?
    if [ "$status" -eq 0 ] || [ "$status" -eq 5 ]; then
        return 0
    fi
    echo "make test: the tests ($2) that failed beside others run again, on their own:"
    "$PYTHON" -m pytest -q -o cache_dir="$3" --last-failed --last-failed-no-failures none -m "$2" "${EXTRA[@]}"
}

rm -rf .venv/pytest-cache-serial .venv/pytest-cache-shared
serial_log=.venv/serial-tests.log
share "$SERIAL_WORKERS" serial .venv/pytest-cache-serial > "$serial_log" 2>&1 &
serial=$!
(renice -n 19 "$BASHPID" > /dev/null && share "$TEST_WORKERS" "not serial" .venv/pytest-cache-shared)
shared_status=$?
wait "$serial"
serial_status=$?
echo "make test: the serial tests (timed against the wall clock), beside the others:"
cat "$serial_log"
if [ "$shared_status" -ne 0 ] || [ "$serial_status" -ne 0 ]; then
    exit 1
fi
