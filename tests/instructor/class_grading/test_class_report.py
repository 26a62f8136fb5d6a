"""Kit tests of ol.instructor.class_grading.class_report: what `ol grade`
writes for a class, from records as the check writes them.  The counts use
one word each (submitted, graded, passed, not passed, not graded);
grades.csv has one row per student, sorted, each on one line whatever the
reason says; a record reads back as written, and one ol grade could not have
written reads as none; summary.md says why each not-graded one was not."""

from __future__ import annotations

import csv

from helpers.kit import ROOT
from ol.core.catalog import load_catalog
from ol.grading.check import CheckResult
from ol.instructor.class_grading.class_report import (CSV_FIELDS, counts, headline, read_record, row, summary,
                                                       write_csv, write_record)
from ol.instructor.class_grading.one import GradeRecord
from ol.instructor.class_grading.outcome import read_outcome

POINTS = load_catalog(ROOT).get("L7.3").grading.points
# (a record and its check name one confinement: the JSON holds the two side by side under one key)
RECORDS = [
    GradeRecord(student="zoe", entry="zoe.zip", module="L7.3", confinement="confined",
                result=CheckResult(module="L7.3", threshold=0.8, passed=True, score=1.0, killed=10, counted=10,
                                   course_tests={"passed": 5, "total": 5}, confinement="confined")),
    GradeRecord(student="amy", entry="amy", module="L7.3", confinement="confined",
                result=CheckResult(module="L7.3", threshold=0.8, passed=False, score=0.5, killed=5, counted=10,
                                   course_tests={"passed": 5, "total": 5}, confinement="confined")),
    GradeRecord(student="bo", entry="bo.tar.gz", module="L7.3",
                not_graded={"reason": "your submission is empty:\nexpected python/tinyllm/modern/rope.py",
                            "details": []}),
]


def outcomes():
    return [read_outcome(record, POINTS, []) for record in RECORDS]


def test_each_submission_is_counted_once_in_one_word():
    assert counts(outcomes()) == {"submitted": 3, "graded": 2, "passed": 1, "not passed": 1, "not graded": 1}
    assert headline("L7.3", outcomes()) == "ol grade L7.3: 3 submitted, 2 graded, 1 passed, 1 not graded"


def test_grades_csv_has_a_row_per_student_sorted_each_on_one_line(tmp_path):
    write_csv([row(o) for o in outcomes()], tmp_path / "grades.csv")
    lines = (tmp_path / "grades.csv").read_text().splitlines()
    assert len(lines) == 1 + len(RECORDS), "a reason's line break must not start a row"
    with open(tmp_path / "grades.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert tuple(table[0]) == CSV_FIELDS
    assert [r["student"] for r in table] == ["amy", "bo", "zoe"]
    by = {r["student"]: r for r in table}
    assert (by["zoe"]["status"], by["zoe"]["passed"], by["zoe"]["killed"]) == ("passed", "yes", "10")
    assert (by["bo"]["status"], by["bo"]["killed"], by["bo"]["source"]) == ("not graded", "", "bo.tar.gz")
    assert by["bo"]["reason"].startswith("your submission is empty: expected")


def test_a_record_reads_back_as_written_and_a_foreign_one_as_none(tmp_path):
    for record in RECORDS:
        write_record(record, tmp_path)
        assert read_record(tmp_path, record.student) == record
    (tmp_path / "eve.json").write_text("[1, 2]")
    (tmp_path / "kim.json").write_text("{not json")
    assert read_record(tmp_path, "eve") is None and read_record(tmp_path, "kim") is None
    assert read_record(tmp_path, "nobody") is None


def test_the_summary_counts_and_says_why_each_not_graded_one_was_not():
    text = summary("L7.3", outcomes(), POINTS)
    assert text.startswith("# L7.3: 3 submitted")
    assert "- passed: 1 of 3 submitted" in text and "- not graded: 1 (why: below)" in text
    why = text.split("## Not graded: why", 1)[1]
    assert "- bo (bo.tar.gz): your submission is empty:" in why
    assert "amy" not in why and "zoe" not in why
