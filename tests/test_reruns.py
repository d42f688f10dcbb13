"""`make test`'s phases (scripts/test-phase) say which tests ran again alone and why."""

import os
import subprocess
import sys

import pytest

from sandbox.harness import PROJECT_DIR

pytestmark = pytest.mark.slow  # pytest processes of their own

SUITE = '''
import os, pathlib

def test_steady():
    assert True

def test_fails_beside_others_then_passes_alone():
    mark = pathlib.Path(os.environ["MARK_FILE"])
    if not mark.exists():
        mark.write_text("seen")
        assert 0.0487 >= 0.05, "smallest gap 0.0487 s for its 0.05 s interval"

def test_fails_both_times():
    assert False, "broken for good"
'''


def test_a_test_that_fails_then_passes_alone_is_named_with_its_first_failure(tmp_path):
    (tmp_path / "test_flaky.py").write_text(SUITE)
    log = tmp_path / "reruns.jsonl"
    env = {**os.environ, "PYTHON": sys.executable, "TEST_CACHE": str(tmp_path / "cache"),
           "TEST_RERUN_LOG": str(log), "MARK_FILE": str(tmp_path / "mark"), "PYTHONPATH": str(PROJECT_DIR)}
    phase = subprocess.run([str(PROJECT_DIR / "scripts" / "test-phase"), "2", "not serial",
                            str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert phase.returncode != 0, phase.stdout  # one test fails alone too
    assert "run again, alone" in phase.stdout
    told = subprocess.run([sys.executable, "-m", "tests.rerun_log", str(log)], cwd=PROJECT_DIR,
                          capture_output=True, text=True, timeout=60).stdout
    assert "2 test(s) failed beside others and ran again alone" in told, told
    flaky = told[told.index("test_fails_beside_others_then_passes_alone"):]
    assert "smallest gap 0.0487 s for its 0.05 s interval" in flaky.splitlines()[1]
    assert "then: passed alone" in flaky.splitlines()[2]
    assert "broken for good" in told and "then: failed alone" in told
    assert told.strip().endswith("reruns 2, passed alone 1, failed alone 1")
    assert "test_steady" not in told
