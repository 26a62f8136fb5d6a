"""Kit test of the tests' layout (tests/README.md): a test file in a wing's
folder is named for the module it tests, at the same path,

    tests/grading/sandbox/test_confine.py   tests   python/ol/grading/sandbox/confine.py

or holds a theme across modules, listed in THEMES with what it holds.  A test
file whose module was renamed or moved away is found here."""

from __future__ import annotations

from pathlib import Path

from helpers.kit import ROOT

PACKAGE = ROOT / "python" / "ol"
TESTS = ROOT / "tests"
WINGS = ("core", "grading", "student", "instructor")

THEMES = {
    "grading/test_running_order.py": "pytest_driver's order of a suite's tests",
    "student/test_student_loop.py": "the loop around ol tests: the static check of --mine, watch, shell, diff",
    "student/test_native_path.py": "a student's path through a C module (L9.6): ol start, ol tests, the build",
    "instructor/class_grading/test_hostile.py": "hostile text through every writer of a class's report",
}


def strays(package: Path, tests: Path, themes: dict[str, str]) -> list[str]:
    """The test files of the wings' folders that name no module and no theme ([]: none)."""
    found = []
    for wing in WINGS:
        for test in sorted((tests / wing).rglob("test_*.py")):
            relative = test.relative_to(tests)
            module = package.joinpath(*relative.parts[:-1], test.name.removeprefix("test_"))
            if not module.is_file() and relative.as_posix() not in themes:
                found.append(f"tests/{relative.as_posix()} names no module: python/ol/"
                             f"{module.relative_to(package).as_posix()} is not there (rename it, or list its theme)")
    return found


def test_each_test_file_of_a_wing_names_its_module_or_its_theme():
    assert strays(PACKAGE, TESTS, THEMES) == []


def test_each_theme_is_a_test_file():
    assert [path for path in THEMES if not (TESTS / path).is_file()] == []


def test_a_test_file_whose_module_moved_is_found(tmp_path):
    package, tests = tmp_path / "ol", tmp_path / "tests"
    (package / "core").mkdir(parents=True)
    (package / "core" / "kept.py").write_text("")
    (tests / "core").mkdir(parents=True)
    for name in ("test_kept.py", "test_gone.py", "test_theme.py"):
        (tests / "core" / name).write_text("")
    assert strays(package, tests, {"core/test_theme.py": "a theme"}) == [
        "tests/core/test_gone.py names no module: python/ol/core/gone.py is not there (rename it, or list its theme)"]
