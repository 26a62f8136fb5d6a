"""The kit's `needs_confinement` marker (tests/conftest.py): with a Python
under /tmp the tests that grade confined are skipped, all for one reason
that names it; in CI, or without bubblewrap, they fail instead, so that a
skip never hides a missing dependency.

Each test runs pytest on a probe beside copies of the kit's conftest.py and
pyproject.toml (kit.run_probe), with the Python and environment of the case."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from helpers.kit import explain, run_probe, virtual_environment

PROBE = """\
import pytest


@pytest.mark.needs_confinement
def test_grades_confined():
    pass


@pytest.mark.needs_confinement
def test_grades_confined_too():
    pass


def test_needs_no_confinement():
    pass
"""


def test_a_python_under_tmp_skips_them_for_one_reason_and_ci_fails_them():
    scratch = Path(tempfile.mkdtemp(prefix="ol-python-", dir="/tmp"))  # not --basetemp's: it must be /tmp
    try:
        python = virtual_environment(scratch / "venv")

        r = run_probe(scratch / "locally", python, PROBE)
        assert r.returncode == 0 and "1 passed, 2 skipped" in r.stdout, explain(r)
        skips = [line for line in r.stdout.splitlines() if line.startswith("SKIPPED")]
        assert len(skips) == 1 and skips[0].startswith("SKIPPED [2] "), explain(r)
        assert "installed under /tmp" in skips[0] and str(scratch / "venv") in skips[0], explain(r)

        r = run_probe(scratch / "in-ci", python, PROBE, CI="true")
        assert r.returncode == 1 and "1 passed, 2 errors" in r.stdout, explain(r)
        assert "installed under /tmp" in r.stdout and "CI skips none" in r.stdout and "SKIPPED" not in r.stdout
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.needs_confinement  # this Python, outside /tmp: only the missing bwrap stops confinement
def test_without_bubblewrap_they_fail_and_say_what_to_install(tmp_path):
    r = run_probe(tmp_path, sys.executable, PROBE, PATH="/nonexistent-bin:" + os.path.dirname(sys.executable))
    assert r.returncode == 1 and "1 passed, 2 errors" in r.stdout and "SKIPPED" not in r.stdout, explain(r)
    assert "bubblewrap (bwrap) is not installed" in r.stdout and "tests/setup.sh installs bubblewrap" in r.stdout
    assert "-m 'not needs_confinement' runs the rest" in r.stdout, explain(r)
