"""Kit tests of ol.instructor.class_grading.one: a submission's record as
<student>.json holds it."""

from __future__ import annotations

import json

from ol.grading.check import CheckResult
from ol.instructor.class_grading.one import GradeRecord


def test_the_record_names_a_submissions_entry_source_in_json_and_reads_it_back():
    record = GradeRecord(student="bob", entry="bob.zip", module="L7.3", names={"python/tests/a.py": "a.py"},
                         result=CheckResult(module="L7.3", threshold=0.8, score=0.9, killed=9, counted=10))
    written = json.loads(json.dumps(record.to_json()))
    assert written["source"] == "bob.zip" and "entry" not in written, "the record's JSON keeps the word source"
    assert written["killed"] == 9 and written["student"] == "bob"
    read = GradeRecord.from_json(written)
    assert read.entry == "bob.zip" and read.result.score == 0.9 and read.names == record.names


def test_a_record_of_an_earlier_grading_reads_its_entry():
    earlier = {"student": "ann", "source": "ann", "module": "L7.3", "passed": False, "score": None,
               "not_graded": {"reason": "no test file", "details": []}}
    read = GradeRecord.from_json(earlier)
    assert read.entry == "ann" and read.result is None and read.not_graded["reason"] == "no test file"
