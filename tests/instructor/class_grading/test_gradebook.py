"""A class's results in each platform's own conventions, without grading:
the late penalty's arithmetic, the Canvas and Moodle files read back by the
rules their importers document, the copy finder's ranking, and results.json
as Gradescope's specification reads it.  (The same, end to end through
`ol grade`: tests/end_to_end/test_class_adoption.py.)

    late work    Canvas's late policy: a share of the maximum per day (hour)
                 started, capped, never below 0; a grace; a per-student deadline
    canvas       lib/gradebook_importer.rb's reading (instructure/canvas-lms):
                 five student columns, a "Points Possible" row, "Name (id)"
    moodle       the export layout its CSV import reads back, ID number mapped
"""

from __future__ import annotations

import csv
import io
import re
from fractions import Fraction

import pytest

from helpers.kit import ROOT, explain, run_ol
from helpers.gradebooks import canvas_reads
from ol.core.catalog import load_catalog
from ol.instructor.class_grading.gradebook import (DAY, HOUR, ExportRow, LatePolicy, ManifestError, parse_duration,
                                                   parse_late_penalty, parse_share, read_manifest, write_export)
from ol.instructor.class_grading.points import points

MODULE = load_catalog(ROOT).get("L7.3")
TABLE = MODULE.grading.points
DEADLINE = 1_772_409_540.0          # 2026-03-01T23:59:00+00:00


# ---- late work ------------------------------------------------------------------------------------


def test_the_late_penalty_counts_each_day_started_as_canvas_does():
    """Canvas's guide: 10%/day on a 10-point assignment, 1.3 days late, takes 20%
    (2 points); the share is of the maximum, whatever was earned."""
    policy = LatePolicy(Fraction(1, 10), DAY)
    assert policy.lateness(DEADLINE + 1.3 * DAY, DEADLINE).share == Fraction(1, 5)
    assert policy.lateness(DEADLINE + 1, DEADLINE).share == Fraction(1, 10), "a second late is a day started"
    assert policy.lateness(DEADLINE, DEADLINE).late == "no" and policy.lateness(None, DEADLINE).late == ""
    capped = LatePolicy(Fraction(1, 10), DAY, cap=Fraction(1, 2), grace=15 * 60)
    assert capped.lateness(DEADLINE + 9 * DAY, DEADLINE).share == Fraction(1, 2)
    assert capped.lateness(DEADLINE + 14 * 60, DEADLINE).late == "no", "within the grace it is not late"
    assert capped.lateness(DEADLINE + 16 * 60, DEADLINE).share == Fraction(1, 10)
    hourly = LatePolicy(Fraction(2, 100), HOUR)
    assert hourly.lateness(DEADLINE + 2.5 * HOUR, DEADLINE).share == Fraction(6, 100)
    full = points(TABLE, course=(53, 53), score=Fraction(1), pitfalls=(7, 7))
    assert full.late(Fraction(1, 5)).total == 80 and full.late(Fraction(1, 5)).penalty == 20
    weak = points(TABLE, course=(10, 53), score=Fraction(1, 9), pitfalls=(0, 7))
    assert weak.late(Fraction(1, 2)).total == 0, "never below 0 points"
    assert weak.late(Fraction(0)).total == weak.before_penalty


@pytest.mark.parametrize("parse, text, value", [
    (parse_late_penalty, "10%/day", (Fraction(1, 10), DAY)), (parse_late_penalty, "2.5%/hour", (Fraction(1, 40), HOUR)),
    (parse_share, "50%", Fraction(1, 2)), (parse_duration, "15m", 900.0), (parse_duration, "1d", DAY)])
def test_the_late_options_read_what_the_issue_names(parse, text, value):
    assert parse(text) == value


@pytest.mark.parametrize("parse, text, says", [
    (parse_late_penalty, "10%", "per day or per hour, such as 10%/day"), (parse_late_penalty, "0%/day", "above 0%"),
    (parse_share, "150%", "at most 100%"), (parse_duration, "15", "such as 15m")])
def test_a_bad_late_option_says_what_was_expected(parse, text, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        parse(text)


def test_the_manifest_gives_each_student_a_deadline_of_their_own(tmp_path):
    path = tmp_path / "manifest.csv"
    path.write_text("entry,id,name,deadline,login,section,email\nada,1001,Ada L.,2026-03-04T23:59:00Z,ada1,S1,"
                    "ada@example.org\nbo.zip,1002,Bo M.,,,,\n")
    rows = read_manifest(path)
    assert rows["ada"].deadline == DEADLINE + 3 * DAY and rows["bo.zip"].deadline is None
    assert (rows["ada"].login, rows["ada"].section, rows["ada"].email) == ("ada1", "S1", "ada@example.org")
    path.write_text("entry,id,deadline\nada,1001,next week\n")
    with pytest.raises(ManifestError, match="line 2, column deadline: expected an ISO 8601 time"):
        read_manifest(path)


def test_ol_grade_refuses_late_options_it_cannot_apply(tmp_path):
    """Refused before any submission is read (EARLY_EXITS in tests/test_markers.py)."""
    (tmp_path / "submissions").mkdir()
    cases = [(["--late-penalty", "10%"], "argument --late-penalty: expected a percentage per day or per hour"),
             (["--late-penalty", "10%/day"], "--late-penalty needs a deadline"),
             (["--late-cap", "50%", "--deadline", "2026-03-01T23:59"], "--late-cap caps a late penalty"),
             (["--grace", "soon"], "argument --grace: expected a duration"),
             (["--assignment-id", "x"], "argument --assignment-id: expected the Canvas assignment's id"),
             (["--assignment-id", "12"], "--assignment-id names a Canvas assignment")]
    for extra, says in cases:
        r = run_ol(ROOT, "grade", "L7.3", "submissions", *extra, cwd=tmp_path)
        assert r.returncode == 2 and says in r.stderr, (extra, explain(r))


# ---- exports ----------------------------------------------------------------------------------------


ROWS = [ExportRow("s1001", "Ada Lovelace", "80.00", "100", "yes", "yes", login="ada", section="S1",
                  email="ada@example.org"),
        ExportRow("s1002", "Bo", "91.69", "100", "no", "no")]


def test_the_canvas_file_is_what_canvas_imports_into_that_assignment(tmp_path):
    column = f"L7.3 {MODULE.title}"
    path = write_export("canvas", ROWS, tmp_path / "canvas.csv", column=column, assignment_id="4711")
    assignments, students = canvas_reads(path.read_text())
    assert assignments == [(column, "4711", "100")], "the header updates assignment 4711, worth 100"
    assert students == {("SIS User ID", "s1001"): ["80.00"], ("SIS User ID", "s1002"): ["91.69"]}, \
        "the manifest's id is the SIS User ID (Canvas's own ID column is its internal number)"
    rows = list(csv.reader(io.StringIO(path.read_text())))
    assert rows[2][3:5] == ["ada", "S1"]
    new = write_export("canvas", ROWS, tmp_path / "new.csv", column=column)
    assert canvas_reads(new.read_text())[0] == [(column, None, "100")], \
        "without an id the title (its parentheses hold no number) makes a new assignment"


def test_the_moodle_file_is_its_export_layout_with_the_id_number(tmp_path):
    """Moodle's "Grade import" page: the import format is the export's; the
    user is found by mapping "ID number" to useridnumber (the map_user_data_with_value
    of grade/import/csv), each other column mapped to a grade item or ignored."""
    path = write_export("moodle", ROWS, tmp_path / "moodle.csv", column=f"L7.3 {MODULE.title}")
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert list(rows[0])[:4] == ["First name", "Last name", "ID number", "Email address"]
    assert {row["ID number"]: row[f"L7.3 {MODULE.title}"] for row in rows} == {"s1001": "80.00", "s1002": "91.69"}
    assert (rows[0]["First name"], rows[0]["Last name"], rows[0]["Email address"]) == ("Ada", "Lovelace",
                                                                                       "ada@example.org")


# ---- submissions to look at -----------------------------------------------------------------------


def test_a_renamed_copy_of_a_test_file_ranks_above_honest_students_who_all_wrote_a_correct_rope():
    """Honest students: each a correct rope.py (the reference, the alternate,
    or either with its names changed, as two students who follow the chapter
    write much the same code) and their own tests; one student hands in a
    renamed copy of another's test file.  That pair comes first, alone."""
    from helpers.classes import CALIBRATION, MODEL_ANSWER, REFERENCE_ROPE, renamed
    from ol.instructor.class_grading.copies import similar_pairs
    from ol.instructor.class_grading.grade_cli import _starter

    def suite(folder) -> str:
        return "\n".join(p.read_text() for p in sorted(folder.glob("*.py")))

    reference = REFERENCE_ROPE.read_text()
    alternate = (ROOT / MODULE.grading.alternates[0]).read_text()
    b = suite(CALIBRATION / "l7-3-suite-b")
    honest = {"ada": (reference, suite(MODEL_ANSWER)), "bo": (alternate, suite(CALIBRATION / "l7-3-suite-a")),
              "cy": (renamed(reference), b), "dee": (renamed(alternate), suite(CALIBRATION / "l7-3-suite-c"))}
    texts = {name: {"code": code, "tests": tests} for name, (code, tests) in honest.items()}
    texts["fay"] = {"code": alternate, "tests": renamed(b)}
    pairs = similar_pairs(texts, starter=_starter(ROOT, MODULE))
    assert pairs and (pairs[0].first, pairs[0].second, pairs[0].part) == ("cy", "fay", "tests"), pairs
    assert pairs[0].similarity >= 0.9 and not pairs[0].identical
    assert len(pairs) == 1, f"no correct rope.py makes two students alike, not even bo's and fay's: {pairs}"


# ---- Gradescope ------------------------------------------------------------------------------------


def outcome_of(**result):
    """An Outcome read from a record whose check gave `result` (CheckResult's
    fields), or, with not_graded, one the check never ran on."""
    from ol.grading.check import CheckResult
    from ol.instructor.class_grading.checkout import catalog_pitfalls
    from ol.instructor.class_grading.one import GradeRecord
    from ol.instructor.class_grading.outcome import read_outcome

    not_graded = result.pop("not_graded", None)
    checked = CheckResult(module="L7.3", threshold=0.8, **result) if result else None
    record = GradeRecord(student="ann", module="L7.3", result=checked, not_graded=not_graded)
    return read_outcome(record, TABLE, catalog_pitfalls(ROOT, MODULE))


def graded_outcome():
    from ol.grading.check import PitfallOutcome, Survivor
    from ol.instructor.class_grading.checkout import catalog_pitfalls

    pitfalls = [PitfallOutcome(p["id"], p["misconception"], p["symptom"], p["id"] != "s02")
                for p in catalog_pitfalls(ROOT, MODULE)]
    return outcome_of(passed=False, score=0.9, killed=18, counted=20, pitfalls=pitfalls,
                      survivors=[Survivor("m1", "apply_rope", "-    x = a\n+    x = b")],
                      course_tests={"passed": 53, "total": 53})


def test_gradescope_says_an_entry_was_not_run_instead_of_failing_it():
    """Gradescope's specs.md: status is "passed" or "failed" and overrides the
    score rule; an entry with neither score nor status marks neither.  A
    submission the check never ran on failed no pitfall: each says it was not run."""
    from ol.instructor.class_grading.gradescope import results_json
    from helpers.gradebooks import valid_results

    data = results_json(outcome_of(not_graded={"reason": "no rope.py: expected python/tinyllm/modern/rope.py",
                                               "details": []}), TABLE, "full")
    valid_results(data)
    misconceptions = [t for t in data["tests"] if t["name"].startswith("Misconception: ")]
    assert len(misconceptions) == 7 and not [t for t in data["tests"] if t.get("status") == "failed"], data["tests"]
    assert all(t["name"].endswith("(not run)") and "status" not in t and "score" not in t for t in misconceptions)
    assert all(t["output"].startswith("Not run: no rope.py") for t in misconceptions)
    parts = data["tests"][:3]
    assert [t["name"].rsplit(" (", 1)[1] for t in parts] == [f"not run: 0 of {float(p):g} points)" for p in TABLE.values()]
    assert not [t for t in parts if "score" in t or "status" in t], "a part not run shows neither 0 nor red"
    graded = results_json(graded_outcome(), TABLE, "full")
    valid_results(graded)
    states = [t.get("status") for t in graded["tests"] if t["name"].startswith("Misconception: ")]
    assert states == ["passed", "failed", *["passed"] * 5], "a graded submission's pitfalls pass or fail"


@pytest.mark.parametrize("visibility", ["visible", "hidden", "after_due_date", "after_published"])
def test_gradescope_visibility_is_set_on_the_mutation_and_pitfall_entries(visibility):
    from ol.instructor.class_grading.gradescope import results_json

    data = results_json(graded_outcome(), TABLE, "full", visibility=visibility)
    course, *rest = data["tests"]
    assert course["name"].startswith("Course tests") and course["visibility"] == "visible"
    assert rest and {t["visibility"] for t in rest} == {visibility}, rest
    with pytest.raises(ValueError, match="visibility must be one of visible, hidden"):
        results_json(graded_outcome(), TABLE, "full", visibility="later")


def test_the_feedback_levels_map_to_what_each_gradescope_entry_shows():
    """The table in ol.instructor.class_grading.gradescope's docstring, entry by entry."""
    from ol.instructor.class_grading.gradescope import results_json

    shown = {level: results_json(graded_outcome(), TABLE, level) for level in ("none", "summary", "full")}
    for level, data in shown.items():
        course, mutation, pitfalls, *misconceptions = data["tests"]
        assert course["output"] == "53 of 53 pass.", (level, course)
        assert len(misconceptions) == (0 if level == "none" else 7), level
        assert (mutation["output"] == "") is (level == "none") and (pitfalls["output"] == "") is (level == "none")
        assert "```diff" not in mutation["output"], (level, mutation["output"])   # the reference stays secret
        assert data["output"].splitlines()[0].startswith("NOT PASSED: ")
        assert ("pitfall s02 not caught" in data["output"]) is (level != "none"), (level, data["output"])
    assert "generated mutants survive" in shown["summary"]["tests"][1]["output"]
    assert "Symptom: " in shown["summary"]["tests"][4]["output"] and shown["summary"]["tests"][4]["status"] == "failed"


def test_ol_gradescope_puts_visibility_and_time_limit_in_the_bundle(tmp_path, monkeypatch):
    """--visibility and --time-limit reach autograder.json, and the autograder
    grades each submission with that time limit."""
    import json
    import zipfile

    from ol.grading.sandbox import confine
    from ol.instructor.class_grading import gradescope, one

    r = run_ol(ROOT, "gradescope", "L7.3", "--out", str(tmp_path / "a.zip"), "--visibility", "after_due_date",
               "--time-limit", "30", cwd=tmp_path)
    assert r.returncode == 0, explain(r)
    with zipfile.ZipFile(tmp_path / "a.zip") as bundle:
        config = json.loads(bundle.read("autograder.json"))
    assert (config["visibility"], config["time_limit"]) == ("after_due_date", 30.0)
    r = run_ol(ROOT, "gradescope", "L7.3", "--out", str(tmp_path / "b.zip"), "--visibility", "later", cwd=tmp_path)
    assert r.returncode == 2 and "argument --visibility: invalid choice: 'later'" in r.stderr, explain(r)
    asked = {}

    def grade_one(*args, **kwargs):
        asked.update(kwargs)
        return one.GradeRecord(student="", error="not graded here")

    monkeypatch.setattr(one, "grade_one", grade_one)
    monkeypatch.setattr(confine, "choose_confinement", lambda *a: (confine.CONFINED, ""))
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "rope.py").write_text("x = 1\n")
    (submission / "test_rope.py").write_text("def test_x():\n    assert True\n")
    data = gradescope.grade_submission(ROOT, {**config, "points": TABLE}, submission)
    assert asked["time_limit"] == 30.0 and data["tests"][1]["visibility"] == "after_due_date"
