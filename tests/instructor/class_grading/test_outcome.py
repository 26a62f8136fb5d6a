"""Kit tests of ol.instructor.class_grading.outcome: a check's record read
into what a student is told."""

from __future__ import annotations

from helpers.kit import ROOT
from ol.core.catalog import load_catalog
from ol.grading.check import CheckResult
from ol.instructor.class_grading.one import GradeRecord
from ol.instructor.class_grading.outcome import read_outcome

REJECTED = "your tests fail on a correct implementation"
TIMED_OUT = {"test": "python/tests/l7-3-rope/test_rope_oracle.py::test_loops", "status": "timeout",
             "failure": "", "implementations": ["reference"]}   # no limit in its words: the number is the result's


def outcome_of(result: CheckResult):
    points = load_catalog(ROOT).get("L7.3").grading.points
    return read_outcome(GradeRecord(student="sam", module="L7.3", result=result), points, [])


def test_a_suite_that_times_out_is_told_the_limit_its_check_gave_each_run():
    result = CheckResult(module="L7.3", threshold=0.8, reason=REJECTED, rejected=[TIMED_OUT], time_limit=7.0)
    said = outcome_of(result).reason
    assert said.startswith("your tests time out on a correct implementation (7 s): "), said
    assert "test_rope_oracle.py::test_loops" in said, said


def test_a_record_without_its_limit_names_none_and_a_failure_is_no_timeout():
    older = CheckResult(module="L7.3", threshold=0.8, reason=REJECTED, rejected=[TIMED_OUT])
    assert outcome_of(older).reason.startswith("your tests time out on a correct implementation: "), \
        "a record written before time_limit was kept: the words, no number"
    failed = CheckResult(module="L7.3", threshold=0.8, reason=REJECTED, time_limit=7.0,
                         rejected=[{**TIMED_OUT, "status": "failed", "failure": "E   assert 1 == 2"}])
    assert outcome_of(failed).reason.startswith(f"{REJECTED}: "), outcome_of(failed).reason
