"""Kit tests of ol.grading.sandbox.collector_link (and warm_link's start_run):
a side that ended between runs is a fault of the grader, named, never a
broken pipe.  When the shared check's collected suite serves no run
(NotCollected), each run of it ends as a run that met the same problem in
an isolated check would: with its exit, and a note the observer's parser
keeps whole and the grader reads.  (Which frame
of the collector becomes which problem is held end to end: grading/test_check.py's
suites that do not collect, that hold no test, that call the code under
test at import.)"""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest

from ol.grading import protocol
from ol.grading.protocol import EXIT_COLLECT, EXIT_EMPTY, RunRequest, merged_notes
from ol.grading.sandbox.collector_link import EMPTY, ISOLATE, NotCollected
from ol.grading.scheduler import Unrun

DETAIL = "E   ModuleNotFoundError: No module named 'helpers_of_mine'"


@pytest.mark.parametrize("problem", [ISOLATE, EMPTY, NotCollected.collecting(DETAIL), NotCollected.collecting("")],
                         ids=["isolate", "empty", "collect", "collect-said-nothing"])
def test_a_suite_not_collected_ends_every_run_with_its_exit_and_note(problem):
    unrun = Unrun(problem)
    assert unrun.end.exit == {"isolate": EXIT_COLLECT, "empty": EXIT_EMPTY, "collect": EXIT_COLLECT}[problem.kind]
    line = (json.dumps(problem.note()) + "\n").encode()
    assert protocol.parse_notes(line) == [problem.note()], "a note the observer's parser would drop"
    notes = merged_notes(unrun.stream.lines)
    assert notes["problem"] == problem.kind
    # a collection problem always carries its detail, even the empty words of a suite's frame
    assert ("detail" in notes) == (problem.kind == "collect") and notes.get("detail") == problem.detail


@pytest.mark.parametrize("side", ["warm process", "collected suite"])
def test_a_side_that_ended_between_runs_is_a_fault_of_the_grader_not_a_broken_pipe(side):
    """A warm process or the collected suite that ends between two runs (the
    kill above, timed just so) leaves a socket whose other end is gone: the
    next run's frame must be a SandboxFault naming what ended, which
    check_module turns into GradingFault; a bare BrokenPipeError escaped."""
    from types import SimpleNamespace

    from ol.grading.sandbox.collector_link import CollectorLink
    from ol.grading.sandbox.warm_link import Sandbox, SandboxFault

    ours, gone = socket.socketpair()
    gone.close()
    channel, other = socket.socketpair()
    if side == "warm process":
        ended = object.__new__(Sandbox)
        ended.process = subprocess.Popen(["true"], stderr=subprocess.PIPE)
        ended.process.wait()
        ended.control, ended.stderr, ended.setup = ours, bytearray(), SimpleNamespace(role="tests")
        expected = "the tests sandbox failed: it could not be sent a run"
    else:
        ended = object.__new__(CollectorLink)
        ended.control, ended.collected, ended.runs = ours, [], {}
        expected = "the process holding your collected tests could not be sent a run"
    try:
        with pytest.raises(SandboxFault, match=expected):
            ended.start_run(RunRequest(suite="student"), channel, os.getuid())
        if side == "collected suite":
            assert ended.runs == {}, "a run that never started keeps no notes socket"
    finally:
        for sock in (ours, channel, other):
            sock.close()
        if side == "warm process":
            ended.process.stderr.close()
