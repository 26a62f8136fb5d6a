"""Kit tests of ol.core.pytest_hypothesis: the plugin that drops Hypothesis's
explain phase from ol test's runs, unless the command line asks for a profile
or for the explanation.  A real pytest runs a file whose test reports the
phases Hypothesis would use."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.kit import pytest_with_plugin

REPORT_PHASES = '''
from hypothesis import Phase, settings

def test_report_phases():
    phases = settings.default.phases
    print("EXPLAIN" if Phase.explain in phases else "NO-EXPLAIN", "SHRINK" if Phase.shrink in phases else "")
'''

PROFILES = '''
from hypothesis import settings
settings.register_profile("mine", deadline=None)
'''


def phases_seen(tmp_path: Path, *arguments: str) -> str:
    (tmp_path / "test_phases.py").write_text(REPORT_PHASES)
    (tmp_path / "conftest.py").write_text(PROFILES)
    done = pytest_with_plugin(tmp_path, "ol.core.pytest_hypothesis", "-s", "test_phases.py", *arguments)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_explain_phase_is_dropped_and_shrinking_stays(tmp_path):
    seen = phases_seen(tmp_path)
    assert "NO-EXPLAIN SHRINK" in seen, seen


@pytest.mark.parametrize("asked", [["--hypothesis-explain"], ["--hypothesis-profile", "mine"]])
def test_the_command_line_wins(tmp_path, asked):
    seen = phases_seen(tmp_path, *asked)
    assert "EXPLAIN SHRINK" in seen and "NO-EXPLAIN" not in seen, seen
