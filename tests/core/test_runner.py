"""Kit tests of ol.core.runner: the reference passes every course test and a fresh
stub fails every one (for every Python module of the course), and the runner
picks each module's source as asked without writing into the repository."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ol.core.catalog import load_catalog
from ol.core.runner import (PYTEST_NO_TESTS, PYTEST_USAGE_ERROR, NotReady, TestOutcome, plan_overlay,
                            run_course_tests, run_student_tests)
from ol.student.workspace import fresh_stubs

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
PY_MODULES = [m for m in CATALOG.modules if all(f.endswith(".py") for f in m.files)]


@pytest.mark.slow
@pytest.mark.parametrize("module", PY_MODULES, ids=lambda m: m.id)
def test_reference_passes_and_a_fresh_stub_fails_every_course_test(module):
    reference = run_course_tests(ROOT, module, implementation="reference", capture=True, catalog=CATALOG)
    assert reference.exit_code == 0 and reference.failed == [], reference.output[-3000:]
    assert reference.passed, "the course tests ran"

    stubs = {name: text for name, (file, text) in
             zip(module.module_names, fresh_stubs(ROOT, module).items())}
    stub = run_course_tests(ROOT, module, ref_deps=True, sources=stubs, capture=True, catalog=CATALOG)
    assert stub.exit_code == 1, stub.output[-3000:]
    assert stub.passed == [], f"a stub passes {stub.passed}: these tests check nothing of {module.id}"
    assert sorted(stub.failed) == sorted(reference.passed), "every course test fails on the stub (none errors out)"
    assert "NotImplementedError" in stub.output


def test_outcome_names():
    outcome = TestOutcome("course/tests/L7.3/test_rope.py::test_validation[odd-rotary_dim]", "failed")
    assert outcome.name == "test_validation[odd-rotary_dim]"
    assert outcome.function == "test_validation"


# ---- a miniature course: module B needs module A ----------------------------------------

MINI_CATALOG = """
[[module]]
id = "A"
title = "A"
rung = "R1"
needs = []
files = ["mini/a.py"]
chapter = "course/chapters/A.md"
course_tests = "course/tests/A"
student_tests = "python/tests/a"
fixtures = []

[[module]]
id = "B"
title = "B"
rung = "R1"
needs = ["A"]
files = ["mini/b.py"]
chapter = "course/chapters/B.md"
course_tests = "course/tests/B"
student_tests = "python/tests/b"
fixtures = []
"""

B_TESTS = """\
from hypothesis import given, strategies as st

from mini.a import one
from mini.b import two


def test_one_is_one():
    assert one() == 1


@given(st.integers())
def test_two_is_two(n):
    assert two() == 2
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def mini(tmp_path):
    return write(tmp_path / "mini-course", {
        "course/catalog.toml": MINI_CATALOG,
        "course/reference/python/mini/__init__.py": "",
        "course/reference/python/mini/a.py": "def one():\n    return 1\n",
        "course/reference/python/mini/b.py": "from mini.a import one\n\ndef two():\n    return one() + 1\n",
        "course/tests/B/test_b.py": B_TESTS,
        "python/mini/__init__.py": "",
        "python/mini/b.py": "from mini.a import one\n\ndef two():\n    return one() + 2\n",
    })


def listing(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if ".ol" not in p.parts and "__pycache__" not in p.parts}


def test_needs_not_started_stop_the_run_unless_taken_from_the_reference(mini):
    with pytest.raises(NotReady, match=r"B needs A, and you have not started A\. Add --ref-deps"):
        run_course_tests(mini, "B")
    before = listing(mini)
    run = run_course_tests(mini, "B", ref_deps=True, capture=True)
    assert run.exit_code == 1 and sorted(run.passed) == ["test_one_is_one"], run.output
    assert run.failed == ["test_two_is_two"], "the student's b.py (one() + 2 with the reference one) fails"
    assert listing(mini) == before, "a run writes nothing into the repository (no .pytest_cache, .hypothesis)"
    assert (mini / ".ol/hypothesis").is_dir(), "Hypothesis keeps its examples under .ol/"


def test_the_students_own_needs_are_used_without_ref_deps(mini):
    write(mini, {"python/mini/a.py": "def one():\n    return 2\n"})
    run = run_course_tests(mini, "B", capture=True)
    assert sorted(run.failed) == ["test_one_is_one", "test_two_is_two"], run.output
    write(mini, {"python/mini/a.py": "def one():\n    return 1\n", "python/mini/b.py": "def two():\n    return 2\n"})
    assert run_course_tests(mini, "B", capture=True).exit_code == 0


def test_sources_replace_modules_without_touching_files(mini):
    student_b = (mini / "python/mini/b.py").read_text()
    run = run_course_tests(mini, "B", ref_deps=True, capture=True,
                           sources={"mini.b": "def two():\n    raise RuntimeError('mutant')\n"})
    assert run.failed == ["test_two_is_two"] and "mutant" in run.output
    assert "python/mini/b.py" in run.output, "the text is shown as the file it replaces"
    assert (mini / "python/mini/b.py").read_text() == student_b

    run = run_course_tests(mini, "B", ref_deps=True, capture=True, sources={"mini.b": "def two(:\n"})
    assert run.exit_code == 2 and run.passed == [], "a source that does not import fails every test"
    assert run.failed == ["course/tests/B/test_b.py"], run.outcomes


def test_reference_implementation_and_the_plan(mini):
    assert run_course_tests(mini, "B", implementation="reference", capture=True).exit_code == 0
    catalog = load_catalog(mini)
    plan = plan_overlay(mini, catalog.get("B"), catalog=catalog, ref_deps=True)
    assert plan["mini.a"].path == str(mini / "course/reference/python/mini/a.py")
    assert plan["mini.b"].path == str(mini / "python/mini/b.py")
    with pytest.raises(ValueError, match="implementation must be one of"):
        plan_overlay(mini, catalog.get("B"), catalog=catalog, implementation="mutant")


def test_not_started_missing_tests_and_pytest_usage_errors(mini):
    os.remove(mini / "python/mini/b.py")
    with pytest.raises(NotReady, match=r"B is not started: python/mini/b\.py does not exist\. Run ./ol start B"):
        run_course_tests(mini, "B", ref_deps=True)
    with pytest.raises(NotReady, match=r"course tests of A \(course/tests/A\) are not in this checkout"):
        run_course_tests(mini, "A")
    write(mini, {"python/mini/a.py": "def one():\n    return 1\n"})
    with pytest.raises(NotReady, match=r"no tests for A yet: python/tests/a does not exist"):
        run_student_tests(mini, "A")
    write(mini, {"python/mini/b.py": "def two():\n    return 2\n"})
    run = run_course_tests(mini, "B", capture=True, pytest_args=["--no-such-option"])
    assert run.exit_code == PYTEST_USAGE_ERROR and run.outcomes == ()
    run = run_course_tests(mini, "B", capture=True, pytest_args=["-k", "one"])
    assert run.ok and run.deselected == 1 and not run.complete


def test_the_pytest_exit_statuses_ol_names_are_pytests_own():
    assert PYTEST_USAGE_ERROR == pytest.ExitCode.USAGE_ERROR
    assert PYTEST_NO_TESTS == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_failing_property_is_shrunk_but_not_explained(mini):
    """Hypothesis's explain phase reruns a failing property on variations of
    its example (3 to 7 s a test on L7.3x's stubs): a runner's run leaves it
    out and keeps the shrunk example; pytest's --hypothesis-explain brings it back."""
    run = run_course_tests(mini, "B", ref_deps=True, capture=True)
    assert "test_two_is_two(\n" in run.output and "n=0," in run.output, "the example, shrunk: " + run.output
    assert "or any other generated value" not in run.output, run.output
    shutil.rmtree(mini / ".ol/hypothesis")   # a failure replayed from the database is not explained
    asked = run_course_tests(mini, "B", ref_deps=True, capture=True, pytest_args=["--hypothesis-explain"])
    assert "or any other generated value" in asked.output, asked.output
