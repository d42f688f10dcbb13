"""A pytest plugin (``-p tests.rerun_log``) that keeps, in ``TEST_RERUN_LOG`` (JSON lines), every
test that failed (with the first line of its failure) and, in the run that tries failures again
alone (``TEST_RERUN=1``), each one's outcome there: ``python -m tests.rerun_log`` then says at the
end of `make test` which tests ran again, why, and how they ended."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def _first_line(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return next((line for line in text.splitlines() if line.strip()), "")[:300]


_LOG: str | None = None


def pytest_configure(config) -> None:
    """The log's path, made absolute where pytest starts: tests run in folders of their own."""
    global _LOG
    given = os.environ.get("TEST_RERUN_LOG")
    _LOG = os.path.join(str(config.invocation_params.dir), given) if given else None


def pytest_runtest_logreport(report) -> None:
    log = _LOG
    if not log or report.when not in ("setup", "call") or report.skipped:
        return
    alone = os.environ.get("TEST_RERUN") == "1"
    if report.passed and not (alone and report.when == "call"):
        return
    entry = {"test": report.nodeid, "run": "alone" if alone else "beside others",
             "outcome": report.outcome, "message": _first_line(report) if report.failed else ""}
    with open(log, "a") as out:
        out.write(json.dumps(entry) + "\n")


def summary(entries: list[dict]) -> list[str]:
    """The lines `make test` ends with: each test that failed beside others, its first failure
    and how it ended alone, then a count."""
    first: dict[str, str] = {}
    alone: dict[str, dict] = {}
    for e in entries:
        if e["run"] == "beside others":
            first.setdefault(e["test"], e["message"])
        else:
            alone[e["test"]] = e
    if not first:
        return ["make test: no test failed beside others; none ran again"]
    lines = [f"make test: {len(first)} test(s) failed beside others and ran again alone:"]
    for test, message in first.items():
        ended = alone.get(test)
        how = "not run again" if ended is None else ended["outcome"] + " alone" + (
            f" ({ended['message']})" if ended["outcome"] == "failed" else "")
        lines.append(f"  {test}\n    beside others: {message}\n    then: {how}")
    passed = sum(1 for t in first if alone.get(t, {}).get("outcome") == "passed")
    lines.append(f"make test: reruns {len(first)}, passed alone {passed}, failed alone {len(first) - passed}")
    return lines


if __name__ == "__main__":
    path = Path(sys.argv[1])
    entries = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    print("\n".join(summary(entries)))
