"""pytest plugin: write each test's outcome to the JSON file named by $OL_RESULTS.

    OL_RESULTS=/tmp/results.json python -m pytest -p ol.core.pytest_results ...

The file holds {"outcomes": [{"nodeid", "outcome"}, ...], "deselected": N}:
the outcomes in the order pytest reported them, where outcome is "passed",
"failed", "skipped", or "error" (a failure in setup or teardown, or a file
that could not be collected, e.g. an import error); N counts the tests that
-k or -m left out.  ol.core.runner reads it into a TestRun.
"""

from __future__ import annotations

import json
import os

ENV = "OL_RESULTS"

_outcomes: dict[str, str] = {}
_deselected: list[int] = [0]


def pytest_deselected(items) -> None:
    _deselected[0] += len(items)


def pytest_collectreport(report) -> None:
    if report.failed:
        _outcomes[report.nodeid or "<collection>"] = "error"


def pytest_runtest_logreport(report) -> None:
    previous = _outcomes.get(report.nodeid)
    if report.when == "call":
        outcome = report.outcome  # passed, failed or skipped (xfail counts as skipped)
    elif report.failed:
        outcome = "error"  # setup or teardown failed
    elif report.skipped:
        outcome = "skipped"  # e.g. a skip mark or pytest.skip() in a fixture
    else:
        outcome = None
    # a later failure (teardown) overrides an earlier pass; nothing overrides a failure
    if outcome and previous not in ("failed", "error"):
        _outcomes[report.nodeid] = outcome


def pytest_sessionfinish(session, exitstatus) -> None:
    path = os.environ.get(ENV)
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"outcomes": [{"nodeid": k, "outcome": v} for k, v in _outcomes.items()],
                       "deselected": _deselected[0]}, f)
