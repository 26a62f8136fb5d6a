"""Kit tests of ol.grading.rejected: each test left out is named once, in
the order the student wrote the tests, with the failure pytest gave it on
the first correct implementation it failed on (or what the graded run said,
where the report run said nothing), and the implementations it failed on,
the reference first.  The scheduler is played here: the report runs'
notes are what a run of task "pytest" says."""

from __future__ import annotations

from dataclasses import dataclass, field

from ol.grading.grader import FAILED, TIMEOUT, LeftOut
from ol.grading.rejected import PREFIX, REPORT_TAIL, rejected_tests, report_tail
from ol.grading.scheduler import RunOutcome


@dataclass
class Variant:
    key: str

    def request(self):
        return self.key


@dataclass
class Session:
    reference: Variant = field(default_factory=lambda: Variant("reference"))
    alternates: tuple = (Variant("alternate:1"),)

    def describe_variant(self, key):
        return None


class Scheduler:
    """Answers each report run with what that implementation's pytest run said."""

    def __init__(self, said: dict[str, dict]):
        self.said, self.asked = said, []

    def run(self, runs):
        self.asked += [run.impl for run in runs]
        return {run.id: RunOutcome(run.id, exit=1, notes=[self.said.get(run.impl, {})]) for run in runs}


class Grader:
    def __init__(self, scheduler, filed):
        self.scheduler, self.filed, self.collected, self.time_limit, self.ids = scheduler, filed, filed, 20, 0

    def _id(self):
        self.ids += 1
        return self.ids


FILED = ["t.py::test_first", "t.py::test_second", "t.py::test_third"]


def test_each_test_left_out_once_in_the_students_order_with_its_own_failure():
    said = {"reference": {"failures": {"t.py::test_third": "assert 0.5 == 1.0"}, "output": "x" * 10},
            "alternate:1": {"failures": {"t.py::test_first": "NameError: name 'foo' is not defined\nmore"},
                            "output": "____ test_first ____\nNameError"}}
    scheduler = Scheduler(said)
    left_out = {"t.py::test_third": LeftOut("t.py::test_third", FAILED, ("alternate:1", "reference")),
                "t.py::test_second": LeftOut("t.py::test_second", TIMEOUT, ("reference",), "ran past 20 s"),
                "t.py::test_first": LeftOut("t.py::test_first", FAILED, ("alternate:1",))}
    found = rejected_tests(Grader(scheduler, FILED), Session(), left_out)
    assert sorted(scheduler.asked) == ["alternate:1", "reference"], "one report run per implementation failed on"
    assert [e["test"] for e in found.entries] == FILED
    assert found.entries[0]["failure"].startswith("NameError") and found.entries[1]["failure"] == "ran past 20 s"
    assert found.entries[2]["implementations"] == ["reference", "alternate:1"], "the reference first"
    assert found.lines[0] == (f"{PREFIX}t.py::test_first failed on a second correct implementation (alternate:1): "
                              "NameError: name 'foo' is not defined")
    assert found.output == said["alternate:1"]["output"], "the report of the first test's implementation"


def test_a_hang_is_not_run_again_for_its_words():
    scheduler = Scheduler({})
    left_out = {"t.py::test_first": LeftOut("t.py::test_first", TIMEOUT, ("reference",), "ran past 20 s")}
    found = rejected_tests(Grader(scheduler, FILED), Session(), left_out)
    assert scheduler.asked == [] and found.entries[0]["failure"] == "ran past 20 s"


def test_a_long_report_is_cut_at_a_heading_not_mid_traceback():
    report = "x\n" * REPORT_TAIL + "_____ test_first _____\nE   assert 1 == 2\n" + "y" * 100
    tail = report_tail(report)
    assert tail.startswith("_____ test_first _____") and len(tail) <= REPORT_TAIL
    assert report_tail("short") == "short"
