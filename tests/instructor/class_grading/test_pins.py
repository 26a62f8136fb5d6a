"""Kit tests of ol.instructor.class_grading.pins: the autograder's lock is
the whole closure of what a grade needs, at the versions installed here,
each once, with the autograder's platform deciding the markers; a package
missing here, or at a version its dependant refuses, stops the bundle with
what to do."""

from __future__ import annotations

import importlib.metadata
import re

import pytest

from helpers.kit import ROOT
from ol.instructor.class_grading.pins import LockError, lock_file, locked_versions, normalised


def test_the_lock_pins_the_graders_needs_and_all_they_need_at_the_installed_versions():
    pins = locked_versions(ROOT, python="3.11")
    for name in ("numpy", "pytest", "hypothesis", "mutmut", "pluggy", "iniconfig"):   # pluggy: pytest's own need
        assert pins.get(name) == importlib.metadata.version(name), name
    assert all(name == normalised(name) for name in pins)
    lines = [line for line in lock_file(ROOT, python="3.11").splitlines() if not line.startswith("#")]
    assert lines == sorted(lines) and all(re.fullmatch(r"[a-z0-9-]+==\S+", line) for line in lines), lines
    assert len({line.split("==")[0] for line in lines}) == len(lines), "each package once"


def write_project(root, dependencies: list[str]) -> None:
    quoted = ", ".join(f"'{d}'" for d in dependencies)   # TOML's literal strings: markers hold double quotes
    (root / "pyproject.toml").write_text(f'[project]\nname = "x"\ndependencies = [{quoted}]\n'
                                         '[project.optional-dependencies]\ndev = []\n')


def test_markers_are_read_for_the_autograders_platform_not_this_one(tmp_path):
    write_project(tmp_path, ['pytest; sys_platform == "linux"', 'not-installed-anywhere; sys_platform == "win32"',
                             'numpy; python_version < "3.0"'])
    pins = locked_versions(tmp_path, python="3.11")
    assert "pytest" in pins and "numpy" not in pins and "not-installed-anywhere" not in pins


@pytest.mark.parametrize(("requirement", "said"), [
    ("not-installed-anywhere", "which is not installed here"),
    ("pytest<1", "is installed here; install a matching version"),
])
def test_what_cannot_be_pinned_stops_the_lock_with_what_to_do(tmp_path, requirement, said):
    write_project(tmp_path, [requirement])
    with pytest.raises(LockError, match=said):
        locked_versions(tmp_path, python="3.11")
