"""Kit tests of ol.grading.sandbox.collector_link: when the shared check's
collected suite serves no run (NotCollected), each run of it ends as a run
that met the same problem in an isolated check would: with its exit, and a
note the observer's parser keeps whole and the grader reads."""

from __future__ import annotations

import json

import pytest

from ol.grading import protocol
from ol.grading.protocol import EXIT_COLLECT, EXIT_EMPTY, merged_notes
from ol.grading.sandbox.collector_link import EMPTY, ISOLATE, NotCollected
from ol.grading.scheduler import Unrun

DETAIL = "E   ModuleNotFoundError: No module named 'helpers_of_mine'"


@pytest.mark.parametrize("problem", [ISOLATE, EMPTY, NotCollected.collecting(DETAIL)], ids=lambda p: p.kind)
def test_a_suite_not_collected_ends_every_run_with_its_exit_and_note(problem):
    unrun = Unrun(problem)
    assert unrun.end.exit == {"isolate": EXIT_COLLECT, "empty": EXIT_EMPTY, "collect": EXIT_COLLECT}[problem.kind]
    line = (json.dumps(problem.note()) + "\n").encode()
    assert protocol.parse_notes(line) == [problem.note()], "a note the observer's parser would drop"
    notes = merged_notes(unrun.stream.lines)
    assert notes["problem"] == problem.kind
    assert notes.get("detail", "") == (DETAIL if problem.kind == "collect" else "")
