"""Kit test of the package's maps: ol/__init__.py names every module and
folder of ol/, once, and nothing else; so does each wing's __init__.py for
its own folder (as tests/test_grading_architecture.py holds the grader's
map, python/ol/grading/README.md)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from helpers.kit import ROOT

PACKAGE = ROOT / "python" / "ol"
ENTRY = re.compile(r"^    ([a-z_0-9]+(?:\.py|/))\s{2,}\S", re.M)
WINGS = ("core", "student", "instructor")


def differences(folder: Path) -> list[str]:
    """What keeps folder/__init__.py's docstring from being the folder's map ([]: nothing)."""
    listed = ENTRY.findall(ast.get_docstring(ast.parse((folder / "__init__.py").read_text()), clean=False) or "")
    present = {p.name for p in folder.glob("*.py") if p.name != "__init__.py"} | \
              {p.name + "/" for p in folder.iterdir() if (p / "__init__.py").is_file()}
    problems = [f"{name} is listed twice" for name in sorted({n for n in listed if listed.count(n) > 1})]
    problems += [f"{name} is in {folder.name}/ but not on its map" for name in sorted(present - set(listed))]
    problems += [f"{name} is on {folder.name}/'s map but not in the folder" for name in sorted(set(listed) - present)]
    return problems


def test_the_package_map_lists_every_wing_and_module_of_ol_and_no_other():
    assert differences(PACKAGE) == []


@pytest.mark.parametrize("wing", WINGS)
def test_each_wing_maps_its_own_folder(wing):
    assert differences(PACKAGE / wing) == []


def test_the_graders_sandbox_maps_its_own_folder():
    """grading/sandbox/: the processes and their confinement (the grader's
    README lists the same files with their folder)."""
    assert differences(PACKAGE / "grading" / "sandbox") == []


def test_every_wing_is_held_here():
    """A wing added to ol/ without its map test would go unchecked: the grader's
    map has a test of its own (test_grading_architecture.py)."""
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == {*WINGS, "grading"}


def test_a_module_off_the_map_or_a_line_without_its_module_is_found(tmp_path):
    (tmp_path / "__init__.py").write_text('"""A map.\n\n    kept.py      here\n    gone.py      moved away\n"""\n')
    (tmp_path / "kept.py").write_text("")
    (tmp_path / "new.py").write_text("")
    assert differences(tmp_path) == [f"new.py is in {tmp_path.name}/ but not on its map",
                                     f"gone.py is on {tmp_path.name}/'s map but not in the folder"]
