"""Kit tests of ol.grading.suite_code: which code each test can run, as a
digest.  A re-check keeps a kill while its test's digest is unchanged
(ol.grading.verdict_cache), so an edit must change the digest of every test that
can run the edited code, and of no other."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ol.core.test_folder import TestFolder
from ol.grading.suite_code import SuiteDigests

KIT = "python/tests/l7-3-rope"

ONE_FILE = '''
import pytest
from tinyllm.modern.rope import rope_cos_sin

SCALE = 1.0


def helper(x):
    return x * SCALE


def test_a():
    assert helper(1) == 1


@pytest.mark.parametrize("n", [1, 2])
def test_b(n):
    # a comment inside a test is part of it (Hypothesis seeds a test from its source)
    assert n


def test_calls_a():
    test_a()


class TestGroup:
    def test_m(self):
        assert helper(2) == 2
'''


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))
    return folder


def digests(folder: Path, tests: list[str]) -> dict[str, str | None]:
    suite = SuiteDigests(TestFolder(folder).snapshot(), KIT)
    return {test: suite.of(f"{KIT}/{test}") for test in tests}


TESTS = ["test_one.py::test_a", "test_one.py::test_b[1]", "test_one.py::test_b[2]", "test_one.py::test_calls_a",
         "test_one.py::TestGroup::test_m", "test_two.py::test_x"]


def changed(tmp_path: Path, edit) -> set[str]:
    """The tests whose digest an edit of the two-file suite changes."""
    folder = write(tmp_path / "suite", {"test_one.py": ONE_FILE, "test_two.py": "def test_x():\n    assert 1\n"})
    before = digests(folder, TESTS)
    assert all(before.values()), before
    edit(folder)
    after = digests(folder, TESTS)
    return {test for test in TESTS if after[test] != before[test]}


def append(folder: Path, name: str, text: str) -> None:
    path = folder / name
    path.write_text(path.read_text() + text)


def replace(folder: Path, name: str, old: str, new: str) -> None:
    path = folder / name
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))


def test_adding_a_test_changes_no_other_test(tmp_path):
    assert changed(tmp_path, lambda f: append(f, "test_one.py", "\n\ndef test_new():\n    assert 2\n")) == set()


def test_editing_a_test_changes_it_and_the_tests_that_call_it(tmp_path):
    assert changed(tmp_path, lambda f: replace(f, "test_one.py", "helper(1) == 1", "helper(1) == 1.0")) == {
        "test_one.py::test_a", "test_one.py::test_calls_a"}


def test_a_comment_inside_a_test_changes_it_alone(tmp_path):
    assert changed(tmp_path, lambda f: replace(f, "test_one.py", "# a comment", "# another comment")) == {
        "test_one.py::test_b[1]", "test_one.py::test_b[2]"}


def test_editing_a_helper_or_a_constant_changes_every_test_of_its_file(tmp_path):
    one = {t for t in TESTS if t.startswith("test_one.py")}
    assert changed(tmp_path, lambda f: replace(f, "test_one.py", "SCALE = 1.0", "SCALE = 2.0")) == one
    assert changed(tmp_path, lambda f: replace(f, "test_one.py", "return x * SCALE", "return x + 0")) == one


def test_a_conftest_or_helper_file_changes_every_test(tmp_path):
    assert changed(tmp_path, lambda f: write(f, {"conftest.py": "import pytest\n"})) == set(TESTS)
    assert changed(tmp_path, lambda f: write(f, {"helpers.py": "X = 1\n"})) == set(TESTS)


def test_a_file_that_imports_another_test_file_follows_its_edits(tmp_path):
    def edit(folder):
        replace(folder, "test_two.py", "def test_x", "from test_one import helper\n\n\ndef test_x")
        before = digests(folder, TESTS)
        append(folder, "test_one.py", "\n\ndef test_new():\n    assert 2\n")
        after = digests(folder, TESTS)
        assert after["test_two.py::test_x"] != before["test_two.py::test_x"]
        assert after["test_one.py::test_a"] == before["test_one.py::test_a"]

    changed(tmp_path, edit)


def test_a_fixture_named_like_a_test_is_module_code(tmp_path):
    folder = write(tmp_path / "suite", {"test_f.py": '''
        import pytest


        @pytest.fixture
        def test_data():
            return 1


        def test_uses(test_data):
            assert test_data == 1


        def test_other():
            assert 1
        '''})
    tests = ["test_f.py::test_uses", "test_f.py::test_other"]
    before = digests(folder, tests)
    replace(folder, "test_f.py", "return 1", "return 2")
    after = digests(folder, tests)
    assert all(after[test] != before[test] for test in tests), "an autouse fixture would reach every test"


def test_what_cannot_be_read_has_no_digest(tmp_path):
    folder = write(tmp_path / "suite", {"test_bad.py": "def test_x(:\n    pass\n",
                                        "test_ok.py": "def test_y():\n    pass\n"})
    found = digests(folder, ["test_bad.py::test_x", "test_ok.py::test_y", "test_ok.py::test_gone",
                             "test_missing.py::test_z"])
    assert found["test_bad.py::test_x"] is None and found["test_ok.py::test_gone"] is None
    assert found["test_missing.py::test_z"] is None and found["test_ok.py::test_y"] is not None
    assert SuiteDigests(TestFolder(folder).snapshot(), KIT).of("elsewhere/test_ok.py::test_y") is None
