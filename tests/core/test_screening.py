"""Kit tests of ol.core.screening: what is said of a submission before any
check, in the student's words.  The check is skipped only where it could
earn nothing (nothing read, nothing handed in, no module file, one that does
not parse); a test file that does not parse, or no test file, is only noted.
Submissions are written as folders and read by ol.core.submissions, as
`ol grade` reads them."""

from __future__ import annotations

import pytest

from helpers.classes import MODEL_ANSWER, MODULE, REFERENCE_ROPE, ROPE, TESTS, suite_files, write_folder
from ol.core.screening import parse_problem, screen
from ol.core.submissions import read_submissions

GOOD = {ROPE: REFERENCE_ROPE.read_bytes(), **suite_files(MODEL_ANSWER)}


@pytest.fixture(scope="module")
def screened(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("class")
    write_folder(folder / "good", GOOD)
    write_folder(folder / "no-rope", {k: v for k, v in GOOD.items() if k != ROPE} | {"rope_v2.py": b"x = 1\n"})
    write_folder(folder / "broken-rope", {**GOOD, ROPE: b"def rope_cos_sin(:\n"})
    write_folder(folder / "broken-test", {**GOOD, f"{TESTS}/test_broken.py": b"def test_x(:\n    pass\n"})
    write_folder(folder / "no-tests", {ROPE: GOOD[ROPE], "notes/scratch.py": b"x = 1\n"})
    (folder / "empty").mkdir()
    (folder / "unreadable.zip").write_bytes(b"not a zip at all")
    return {s.student: screen(MODULE, s) for s in read_submissions(folder, MODULE)}


def test_a_whole_submission_is_checked_with_nothing_to_note(screened):
    assert screened["good"].reason is None and not screened["good"].unparsable and screened["good"].no_tests is None


@pytest.mark.parametrize(("student", "said"), [
    ("empty", "your submission is empty: expected python/tinyllm/modern/rope.py"),
    ("unreadable", "your submission could not be read"),
    ("no-rope", "no rope.py: expected python/tinyllm/modern/rope.py"),
    ("broken-rope", "your rope.py does not parse:"),
])
def test_a_submission_that_could_earn_nothing_is_not_checked_and_told_why(screened, student, said):
    assert screened[student].reason is not None and screened[student].reason.startswith(said), screened[student]


def test_what_looks_like_the_missing_file_is_named(screened):
    assert "found rope_v2.py (named otherwise)" in screened["no-rope"].reason, screened["no-rope"].reason


def test_a_test_file_that_does_not_parse_is_noted_and_the_rest_checked(screened):
    noted = screened["broken-test"]
    assert noted.reason is None
    assert [(u["file"].rsplit("/", 1)[-1], u["problem"]) for u in noted.unparsable] == [
        ("test_broken.py", "line 1: invalid syntax")], noted.unparsable


def test_no_test_file_is_noted_with_what_was_found_instead(screened):
    noted = screened["no-tests"]
    assert noted.reason is None and noted.no_tests.startswith(f"no tests: expected test files in {TESTS}/")
    assert "scratch.py" in noted.no_tests, noted.no_tests


@pytest.mark.parametrize(("source", "problem"), [
    (b"x = 1\n", None), (b"x = (\n", "line 1: "), (b"x = 1\x00\n", "line ?: source code string cannot contain null"),
    (b"\xff\xfe not text", "line 1: (unicode error)"), (b"(" * 100_000, "line 1: too many nested parentheses"),
    (b"x = " + b"-" * 100_000 + b"1", "is nested too deeply to read"),
])
def test_parse_problem_names_the_line_or_what_the_bytes_are(source, problem):
    said = parse_problem(source)
    assert said is None if problem is None else said is not None and said.startswith(problem), said
