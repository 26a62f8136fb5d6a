"""Kit tests of ol.grading.verdict_cache: a re-check keeps the catches an edit
cannot change and what was seen on each pitfall, ignores a cache of another
format, limit or a broken one, and grades as a cold check does over a
sequence of edits.  (The course
tests' pass kept while the code is the same: test_check.py, through ol.)"""

from __future__ import annotations

import ast
import json

import pytest

from helpers.kit import ROOT
from helpers.sessions import sampled, warm_check_equal_to_cold
from ol.core.test_folder import TestFolder
from ol.grading.grader import PitfallSeen
from ol.grading.session import GradingSession
from ol.grading.verdict_cache import VerdictCache

SUITES = ROOT / "tests" / "grading_suites"


def test_a_verdict_cache_of_another_format_or_broken_is_ignored_not_crashed_on(tmp_path):
    """A cache of format 1 (before catches were kept per test) is ignored: it
    costs one full check, never a catch carried over by the wrong rule."""
    session = GradingSession(ROOT, "L7.3")
    folder = tmp_path / "l7-3-rope"
    folder.mkdir()
    (folder / "test_rope.py").write_text("def test_a():\n    assert True\n")
    path = tmp_path / "verdicts.json"
    key = session.mutants.counted[0].id
    test = f"{session.suite_path(folder)}/test_rope.py::test_a"
    VerdictCache(path, session, TestFolder(folder).snapshot(), time_limit=60.0).save({key: test})
    assert VerdictCache(path, session, TestFolder(folder).snapshot(), time_limit=60.0).carried([key]) == {key: test}, \
        "this format's record is read"
    assert VerdictCache(path, session, TestFolder(folder).snapshot(), time_limit=5.0).carried([key]) == {}, \
        "a catch at one time limit says nothing of another"
    assert VerdictCache(path, session, TestFolder(folder).snapshot(), time_limit=60.0, memory_limit=256).carried([key]) \
        == {}, "nor at one memory limit of another"
    record = json.loads(path.read_text())
    for broken in (json.dumps({**record, "format": 1, "shared": "a digest of the folder's other files"}),
                   json.dumps({**record, "caught": [test], "course": 3, "pitfall_tests": "?"}),
                   json.dumps([record]), '{"format": 2, "kills": {', "", "[" * 100_000):
        path.write_text(broken)
        cache = VerdictCache(path, session, TestFolder(folder).snapshot(), time_limit=60.0)
        assert cache.carried([key]) == {} and cache.course_passed("any") is None, broken


def test_what_was_seen_on_a_pitfall_is_kept_for_the_tests_whose_code_is_unchanged(tmp_path):
    session = GradingSession(ROOT, "L7.3")
    folder = tmp_path / "l7-3-rope"
    folder.mkdir()
    (folder / "test_rope.py").write_text("def test_a():\n    assert True\n\n\ndef test_b():\n    assert 1\n")
    path, where = tmp_path / "verdicts.json", session.suite_path(folder)
    a, b = f"{where}/test_rope.py::test_a", f"{where}/test_rope.py::test_b"

    def cache():
        return VerdictCache(path, session, TestFolder(folder).snapshot(), time_limit=60.0)

    cache().save({}, {"pitfall:s01": PitfallSeen({a: False, b: True}, {a: b, b: None}, cpu=0.25, seconds=0.5)})
    assert cache().pitfalls_seen(["pitfall:s01", "pitfall:s02"]) == {
        "pitfall:s01": PitfallSeen({a: False, b: True}, {a: b, b: None}, cpu=0.25, seconds=0.5)}
    (folder / "test_rope.py").write_text("def test_a():\n    assert True\n\n\ndef test_b():\n    assert 2\n")
    assert cache().pitfalls_seen(["pitfall:s01"]) == {"pitfall:s01": PitfallSeen({}, {}, cpu=0.25, seconds=0.5)}, \
        "test_b changed: its outcome must be seen again, and test_a's, whose teardown test_b's needs shape"
    record = json.loads(path.read_text())
    entry = record["pitfalls"]["pitfall:s01"]
    for broken in ({**entry, "cpu": "0.25"}, {**entry, "cpu": float("nan")}, {**entry, "seconds": -1.0},
                   {**entry, "cpu": True}, {**entry, "tests": [a]}, "seen", {**entry, "seconds": float("inf")},
                   {**entry, "cpu": 10 ** 400}, {key: value for key, value in entry.items() if key != "cpu"}):
        path.write_text(json.dumps({**record, "pitfalls": {"pitfall:s01": broken}}))
        assert cache().pitfalls_seen(["pitfall:s01"]) == {}, broken
    path.write_text(json.dumps({**record, "pitfalls": {"pitfall:s01": {**entry, "tests": {
        a: ["x", "passed", None, None], b: 3, "t.py::test_gone": [None, True, None, None]}}}}))
    assert cache().pitfalls_seen(["pitfall:s01"]) == {"pitfall:s01": PitfallSeen({}, {}, 0.25, 0.5)}, \
        "each bad test dropped"


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_warm_recheck_grades_as_a_cold_check_over_a_sequence_of_edits(tmp_path):
    session = sampled("L7.3", every=8)
    folder = tmp_path / "l7-3-rope"
    folder.mkdir()
    weak = (SUITES / "shapes-and-errors" / "test_rope_shapes.py").read_text()
    minimal = (ROOT / "tests/calibration/l7-3-suite-c/test_rope_c.py").read_text()
    cache = tmp_path / "verdicts.json"

    def grade_both():
        return warm_check_equal_to_cold(session, folder, cache)

    (folder / "test_weak.py").write_text(weak)
    (folder / "test_minimal.py").write_text(minimal)
    assert grade_both().carried_over == 0, "nothing to keep from before the first check"
    # the minimal file loses every test but one: its kills are graded again, the weak file's are kept
    first_test = minimal.index("\ndef test_", minimal.index("def test_") + 1)
    (folder / "test_minimal.py").write_text(minimal[:first_test] + "\n")
    kept = grade_both()
    assert kept.carried_over > 0 and kept.killed < len(session.mutants.counted) + 7
    # the weak file changes: now the minimal file's (again whole) kills are re-graded, the weak file's too
    (folder / "test_minimal.py").write_text(minimal)
    (folder / "test_weak.py").write_text(weak + "\n# an edit\n")
    grade_both()
    # a helper beside the tests changes: nothing is kept
    (folder / "helpers.py").write_text("SCALE = 1.0\n")
    assert grade_both().carried_over == 0


def generated(result) -> dict[str, str]:
    """The generated mutants a check caught, and by which test: what a re-check may keep
    (the pitfalls run again, cut where the last check saw the rest: PitfallSeen)."""
    return {key: test for key, test in result.killed_by.items() if not key.startswith("pitfall:")}


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_warm_recheck_of_a_one_file_suite_keeps_the_kills_of_unchanged_tests(tmp_path):
    """Students write one test file: adding or editing one test re-grades
    only what it can change, and the grade is still the cold check's."""
    session = sampled("L7.3", every=8)
    folder = tmp_path / "l7-3-rope"
    folder.mkdir()
    suite = folder / "test_rope.py"
    minimal = (ROOT / "tests/calibration/l7-3-suite-c/test_rope_c.py").read_text()
    cache = tmp_path / "verdicts.json"
    cuts: list[int] = []

    def grade_both():
        return warm_check_equal_to_cold(session, folder, cache, cuts)

    suite.write_text(minimal)
    first = grade_both()
    assert first.carried_over == 0 and first.killed > 0
    # two tests added at the end, one a copy of a test that catches pitfalls: every kill is kept (they
    # change no other test's code), and the copy is listed beside the original under each pitfall it fails on
    copy = minimal[minimal.index("def test_hand_example"):].split("\n\n\n")[0].replace(
        "def test_hand_example", "def test_hand_example_again")
    added_tests = "\n\ndef test_added():\n    assert rope_cos_sin(0, [1.0])[0][0] == 1\n\n\n" + copy + "\n"
    suite.write_text(minimal + added_tests)
    added = grade_both()
    assert added.carried_over == len(generated(first)), (added.carried_over, len(generated(first)))
    again = [p.id for p in added.pitfalls if any(t.endswith("::test_hand_example_again") for t in p.tests)]
    assert again and again == [p.id for p in added.pitfalls if any(t.endswith("::test_hand_example") for t in p.tests)]
    # one test edited: the kills it made are graded again, the others' kept
    tree = ast.parse(suite.read_text())
    tests = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]
    edited = max(tests, key=lambda node: sum(v.split("::")[-1].split("[")[0] == node.name
                                             for v in added.killed_by.values()))
    lines = suite.read_text().splitlines(keepends=True)
    lines.insert(edited.body[0].lineno - 1, " " * edited.body[0].col_offset + "assert True  # an edit\n")
    suite.write_text("".join(lines))
    kept = grade_both()
    made = sum(v.split("::")[-1].split("[")[0] == edited.name for v in generated(added).values())
    assert made > 0 and kept.carried_over == len(generated(added)) - made, (kept.carried_over, made)
    # a helper at module level changes: every test of the file can use it, nothing is kept
    suite.write_text("SCALE = 1.0\n\n\n" + suite.read_text())
    assert grade_both().carried_over == 0
    assert cuts[0] == 0 and sum(cuts) > 0, f"the re-checks cut the pitfalls' runs where the tests were seen: {cuts}"


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_recheck_does_not_cut_a_run_that_would_have_ended_by_itself(tmp_path):
    """The attack on the cut: a new test ends the whole run (pytest.exit) on
    every pitfall it tells from the reference, ahead of tests the last check
    saw fail there.  A cold check's run ends at it, so its "by" holds the new
    test alone; a run cut from the last check would add the others."""
    session = sampled("L7.3", every=40)
    folder = tmp_path / "l7-3-rope"
    folder.mkdir()
    suite = folder / "test_rope.py"
    minimal = (ROOT / "tests/calibration/l7-3-suite-c/test_rope_c.py").read_text()
    first_test = minimal.index("\ndef test_")
    ender = (   # the hand example of section 13, and the whole run ends where it fails
        "\n\ndef test_ends_the_run_on_a_wrong_rope():\n"
        "    cos, sin = rope_cos_sin(1, [1.0, 0.01])\n"
        "    x = Tensor(np.array([1, 0, 0, 1], np.float32))\n"
        "    if not np.allclose(apply_rope(x, cos, sin, 'half').data, [0.540302, -0.01, 0.841471, 0.99995], atol=1e-6):\n"
        "        pytest.exit('a wrong rope', returncode=1)\n"
    )
    cache, cuts = tmp_path / "verdicts.json", []
    suite.write_text(minimal)
    warm_check_equal_to_cold(session, folder, cache, cuts)
    suite.write_text(minimal[:first_test] + ender + minimal[first_test:])
    ended = warm_check_equal_to_cold(session, folder, cache, cuts)
    assert [p.tests for p in ended.pitfalls if any("test_ends_the_run" in t for t in p.tests)], \
        "the new test must end some pitfall's run, or this attack tries nothing"


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_recheck_takes_no_outcome_of_a_test_whose_next_test_changed(tmp_path):
    """The attack on the cut (a review's): teardown_module fails on pitfall
    s02 (the sine negated), and pytest charges that to the module's last test.
    Delete the last test: the one before it is last now and fails in a cold
    check, where the last check saw it pass."""
    session = sampled("L7.3", every=40)
    folder = tmp_path / "l7-3-rope"
    folder.mkdir()
    suite = folder / "test_rope.py"
    head = (
        "import numpy as np\n"
        "from tinyllm.modern.rope import rope_cos_sin\n\n\n"
        "def teardown_module():\n"
        "    cos, sin = rope_cos_sin(1, [1.0, 0.01])\n"
        "    assert np.asarray(sin).ravel()[0] > 0\n\n\n"
        "def test_cos_table():\n"
        "    sum(range(20_000_000))   # long enough for the observer's stop to land inside it\n"
        "    cos, sin = rope_cos_sin(1, [1.0, 0.01])\n"
        "    assert np.allclose(np.asarray(cos).ravel(), np.cos([1.0, 0.01]), atol=1e-6)\n"
    )
    last = ("\n\ndef test_shape():\n    cos, sin = rope_cos_sin(1, [1.0, 0.01])\n"
            "    assert np.asarray(cos).shape == np.asarray(sin).shape\n")
    cache = tmp_path / "verdicts.json"
    suite.write_text(head + last)
    first = warm_check_equal_to_cold(session, folder, cache)
    assert [p.tests for p in first.pitfalls if p.id == "s02"] == [(f"{session.suite_path(folder)}/test_rope.py::test_shape",)]
    suite.write_text(head)   # test_cos_table's own code is unchanged
    warm_check_equal_to_cold(session, folder, cache)

