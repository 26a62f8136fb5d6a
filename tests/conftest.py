"""What every kit test shares: its markers (pyproject.toml lists them; an
unknown one is an error here), and what `needs_confinement` does.

A test marked `needs_confinement` grades inside bubblewrap: the student's
shared check (which exists only confined), a guarantee that only the sandbox
gives (a cheat, a venv seen by the runs), or `ol grade`, which refuses to run
unconfined.  Before such a test runs, ol.grading.sandbox.confine.bubblewrap() says
whether confinement works here, and if it does not:

- a Python installed under /tmp: the test is skipped, every such test with
  the same reason (pytest -rs shows it on one line).  This is a choice of
  where the Python lives, not something missing: no install step can fix it,
  and a Python elsewhere runs these tests.
- in CI (the variable CI set, as CI sets it) nothing is skipped: a CI that
  cannot confine has lost what the grade's trust rests on, so it fails.
- any other reason (bwrap not installed, or unable to start a sandbox
  here) is a missing dependency, and a skip would hide it: the test fails,
  saying what to install and how to run the rest meanwhile.
"""

from __future__ import annotations

import os
import signal

import pytest

from ol.grading.sandbox import confine

NEEDS_CONFINEMENT = "needs_confinement"
# The words of confine.bubblewrap()'s reason for a Python under /tmp
# (tests/grading/sandbox/test_confine.py holds ol check to them).  Were they to change, the
# tests would fail rather than skip: never the other way round.
UNDER_TMP = "installed under /tmp"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def confinement_impossible() -> str | None:
    """Why these tests cannot confine here, when that is no missing
    dependency and no CI: the reason they are skipped for; else None."""
    usable, why = confine.bubblewrap()
    return None if usable or in_ci() or UNDER_TMP not in why else why


def pytest_configure(config: pytest.Config) -> None:
    # A misspelt marker (`slwo`) would quietly put a slow test in the fast
    # tier: in the kit's tests it is an error.  Not --strict-markers in
    # pyproject.toml, which `ol tests` would apply to the student's tests too.
    config.addinivalue_line("filterwarnings", "error::pytest.PytestUnknownMarkWarning")
    # The 60 slowest tests end every run of the kit's tests (CI's among them), so drift toward CI's
    # limit is seen where it starts; --durations N on the command line says otherwise.
    if config.option.durations is None:
        config.option.durations = 60


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist's own, which would choose "load"
def pytest_cmdline_main(config: pytest.Config) -> None:
    # `python -m pytest -n 2` (README) hands each worker whole files: a file's module fixtures
    # (a graded class, the gallery's session, a released kit) are made once, in one worker,
    # and the largest file (about 6 minutes) is far below half the run.  --dist says otherwise.
    if getattr(config.option, "numprocesses", None) and config.option.dist == "no":
        config.option.dist = "loadfile"


@pytest.hookimpl(tryfirst=True)  # before the fixtures that grade
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker(NEEDS_CONFINEMENT) is None:
        return
    usable, why = confine.bubblewrap()
    if usable:
        return
    if confinement_impossible():
        pytest.skip(f"confinement is impossible with this Python: {why}")
    then = ("CI skips none of these tests" if in_ci() and UNDER_TMP in why else
            "tests/setup.sh installs bubblewrap; meanwhile python -m pytest -m 'not needs_confinement' runs the rest")
    pytest.fail(f"this test grades confined, and confinement does not work here: {why}; {then}", pytrace=False)


# What a test may not leave changed in the pytest process: a later test would run under it (a
# SIGTERM handler of `ol`'s turned a SIGTERM meant for a check into an exception inside pytest).
WATCHED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGPIPE)
PYTEST_OWN = ("PYTEST_CURRENT_TEST",)   # pytest sets it for every phase of every test


def process_state() -> dict:
    return {
        "signal handlers": {signal.Signals(n).name: signal.getsignal(n) for n in WATCHED_SIGNALS},
        "working directory": os.getcwd(),
        "environment": {k: v for k, v in os.environ.items() if k not in PYTEST_OWN},
    }


@pytest.fixture(autouse=True)
def leaves_the_process_as_it_found_it():
    """Fails the test that changes a signal handler, the working directory or
    the environment of the pytest process and leaves it so (monkeypatch and
    tmp_path undo theirs before this looks), then puts them back."""
    before = process_state()
    yield
    after = process_state()
    changed = [what for what in before if before[what] != after[what]]
    for number, handler in before["signal handlers"].items():
        signal.signal(signal.Signals[number], handler)
    os.chdir(before["working directory"])
    for name in after["environment"].keys() - before["environment"].keys():
        del os.environ[name]
    os.environ.update(before["environment"])
    if changed:
        detail = "; ".join(f"{what}: {_difference(before[what], after[what])}" for what in changed)
        pytest.fail(f"this test left the pytest process changed ({detail}); undo it in the test "
                    "(monkeypatch, a try/finally)", pytrace=False)


def _difference(before, after) -> str:
    if isinstance(before, dict):
        keys = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        return ", ".join(f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in keys)[:400]
    return f"{before!r} -> {after!r}"


def pytest_report_header(config: pytest.Config) -> str:
    usable, why = confine.bubblewrap()
    if usable:
        return "confinement: bubblewrap works here"
    then = "skipped" if confinement_impossible() else "failed"
    return f"confinement: does not work here ({why}); tests marked {NEEDS_CONFINEMENT} will be {then}"
