"""Kit tests of ol.grading.grader's cut of a pitfall's run in a re-check
(PitfallSeen): the observer stops the run only once it has begun a test after
every test the last check did not see, and the verdict is completed from what
the last check saw, unless the run ended by itself, the limits' margins are
passed, or a student kit's variant was never imported.  The outcomes here are
made by hand, as the scheduler would hand them over; the grader's other
stages are held end to end (test_check.py, test_verdict_cache.py)."""

from __future__ import annotations

import signal
from types import SimpleNamespace

import pytest

from ol.grading.grader import (FAILED, PASSED, SEEN_MARGIN, STOP_SEEN, Grader, LeftOut,
                               PitfallSeen, _past_the_unseen)
from ol.grading.pytest_driver import EXIT_FAILED
from ol.grading.scheduler import WALL_FACTOR, RunOutcome
from ol.grading.variants import Variant

LIMIT = 60.0
TESTS = ["t.py::test_a", "t.py::test_new", "t.py::test_b", "t.py::test_c", "t.py::test_left_out"]
A, NEW, B, C, LEFT_OUT = TESTS
PITFALL = Variant("pitfall:s01", "", "rope.py")
# the last check: test_b and test_c failed on the pitfall, test_a passed; test_new did not exist, so
# test_b ran after test_a then (after: the test each ran before, whose teardown pytest fits to it)
SEEN = PitfallSeen({A: False, B: True, C: True, LEFT_OUT: True}, {A: B, B: C, C: LEFT_OUT, LEFT_OUT: None},
                   cpu=0.3, seconds=0.5)
# this check's run: test_a passed, the new test failed, and the run began test_b: cut there
CUT_NOTES = [{"collected": TESTS}, {"running": A}, {"passed": A}, {"running": NEW}, {"failed": NEW}, {"running": B}]
KILLED = 128 + signal.SIGKILL


def grader(*, must_import: bool = False) -> Grader:
    made = Grader(SimpleNamespace(variants_must_import=must_import), None, time_limit=LIMIT)
    made.collected = list(TESTS)
    made.left_out = {LEFT_OUT: LeftOut(LEFT_OUT, FAILED, ("reference",))}
    return made


def outcome(**fields) -> RunOutcome:
    made = {"exit": KILLED, "stopped": STOP_SEEN, "tests_stopped": True, "notes": CUT_NOTES,
            "cpu_seconds": 0.1, "impl_cpu_seconds": 0.05, "seconds": 0.2, **fields}
    return RunOutcome(1, **made)


def verdict_of(made: Grader, run: RunOutcome, seen: PitfallSeen = SEEN, variant: Variant = PITFALL):
    return made._pitfall(variant, made._judged(variant, run), run, seen)


def test_a_cut_run_is_completed_from_what_the_last_check_saw():
    made = grader()
    verdict = verdict_of(made, outcome())
    assert verdict.status == FAILED and verdict.failed == (NEW, B, C), "graded failures, in running order"
    assert made.runs_cut == 1
    assert made.seen[PITFALL.key] == PitfallSeen({A: False, NEW: True, B: True, C: True, LEFT_OUT: True},
                                                 {A: NEW, NEW: B, B: C, C: LEFT_OUT, LEFT_OUT: None},
                                                 cpu=0.1 + 0.3, seconds=0.2 + 0.5), "at most, for the next cut"


def test_an_outcome_holds_only_before_the_same_test_as_then():
    """The attack: teardown_module fails on the pitfall.  pytest runs it in the
    teardown of the module's last test and charges the failure to that test.
    Last time test_c was the last; now a new test runs after it, which takes
    the failure: test_c's old failure must not be added."""
    order = [A, B, C, NEW]
    seen = PitfallSeen({A: False, B: False, C: True}, {A: B, B: C, C: None}, cpu=0.3, seconds=0.5)
    assert seen.holding(order) == {A: False, B: False}
    notes = [{"collected": order}, {"running": A}, {"passed": A}, {"running": B}, {"passed": B}, {"running": C}]
    assert not _past_the_unseen(notes, seen), "test_c ran before another test then: it must run"
    made = grader()
    made.collected = list(order)
    ended = notes + [{"passed": C}, {"running": NEW}, {"failed": NEW}]
    verdict = verdict_of(made, outcome(notes=ended, stopped="", tests_stopped=False, exit=EXIT_FAILED), seen=seen)
    assert verdict.failed == (NEW,)


def test_a_run_that_ended_by_itself_before_the_stop_landed_is_its_own_end():
    """The observer asked (STOP_SEEN) but the run had ended: the tests after
    it never ran, as in a cold check, so nothing of the last check is added."""
    ended = CUT_NOTES[:-1]   # it never began test_b
    for run in (outcome(exit=EXIT_FAILED, tests_stopped=False, notes=ended),
                outcome(exit=KILLED, tests_stopped=False, notes=ended)):   # killed, but not on our asking
        made = grader()
        verdict = verdict_of(made, run)
        assert verdict.failed == (NEW,) and made.runs_cut == 0, (run, verdict)
        assert made.seen[PITFALL.key].outcomes == {A: False, NEW: True}


@pytest.mark.parametrize("spent", [
    {"cpu_seconds": SEEN_MARGIN * LIMIT - SEEN.cpu + 0.01},
    {"impl_cpu_seconds": SEEN_MARGIN * LIMIT - SEEN.cpu + 0.01},
    {"seconds": SEEN_MARGIN * WALL_FACTOR * LIMIT - SEEN.seconds + 0.01},
], ids=["tests' processor time", "implementation's processor time", "wall time"])
def test_past_a_limits_margin_the_pitfall_runs_again_uncut(spent):
    """Time adds up across a run's tests: a cut run and a whole run of the last
    check that come near a limit could be a timeout run to the end."""
    made = grader()
    assert verdict_of(made, outcome(**spent)) is None and made.runs_cut == 0
    assert verdict_of(made, outcome()) is not None, "just under the margins, it is cut"


def test_a_test_over_its_share_before_the_cut_runs_the_pitfall_again():
    """A test stopped at its share of processor time fails and the run goes on
    to the tests after it: the verdict is a timeout whose "by" a run to the end
    would add to."""
    made = grader()
    overtime = CUT_NOTES[:4] + [{"overtime": NEW}, {"failed": NEW}, {"running": B}]
    assert verdict_of(made, outcome(notes=overtime)) is None and made.runs_cut == 0


def test_a_student_kits_variant_not_imported_before_the_cut_runs_again():
    """Caught without importing is no catch in a student kit; a test after the
    cut might import it, so the cut cannot say."""
    made = grader(must_import=True)
    untrusted = Variant("pitfall:s01", "", "rope.py", trusted=False)
    assert verdict_of(made, outcome(), variant=untrusted) is None
    imported = outcome(impl_notes=[{"imported": "tinyllm.modern.rope"}])
    assert verdict_of(made, imported, variant=untrusted).failed == (NEW, B, C)
    # a new first test that passes without calling the module: nothing caught yet, nothing imported
    passing = [{"collected": TESTS}, {"running": A}, {"passed": A}, {"running": NEW}, {"passed": NEW}, {"running": B}]
    assert verdict_of(made, outcome(notes=passing), variant=untrusted) is None


def test_a_cut_run_that_saw_no_failure_and_knows_none_passes():
    made = grader()
    notes = [{"collected": TESTS}, {"running": A}, {"passed": A}, {"running": NEW}, {"passed": NEW}, {"running": B}]
    verdict = verdict_of(made, outcome(notes=notes), seen=PitfallSeen({A: False, B: False, C: False},
                                                                      {A: B, B: C, C: LEFT_OUT}, 0.3, 0.5))
    assert verdict.status == PASSED and verdict.failed == ()


def test_the_observer_cuts_only_once_a_test_after_every_unseen_one_has_begun():
    assert _past_the_unseen(CUT_NOTES, SEEN)
    assert not _past_the_unseen(CUT_NOTES[:-1], SEEN), "the run might still end by itself after test_new"
    assert not _past_the_unseen(CUT_NOTES[:3], SEEN), "test_new has not run"
    without_c = PitfallSeen({A: False, B: True}, {A: B, B: C}, 0.3, 0.5)
    assert not _past_the_unseen(CUT_NOTES, without_c), "test_c was not seen: it must run"
    overtime = CUT_NOTES[:4] + [{"overtime": NEW}, {"failed": NEW}, {"running": B}]
    assert not _past_the_unseen(overtime, SEEN), "stopped at its share of time: a time, not an outcome"
    seen_over = CUT_NOTES[:5] + [{"running": B}, {"overtime": B}, {"failed": B}, {"running": C}]
    assert not _past_the_unseen(seen_over, SEEN), "a test seen before went over its share: run to the end"
    assert not _past_the_unseen([line for line in CUT_NOTES if "collected" not in line], SEEN), "no collection said"
