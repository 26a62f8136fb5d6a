"""Grading sessions made lighter for the kit's tests, and a check of the
verdict cache: each keeps every pitfall and a spread of the counted mutants,
which is what a test following a suite through the grader needs (the
calibration suites meet every mutant)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from helpers.kit import ROOT
from ol.grading.check import CheckRequest, check_module
from ol.grading.events import StageEnded
from ol.grading.session import GradingSession


def sampled(module: str, every: int = 40) -> GradingSession:
    """The module's grading session with every pitfall and every `every`th counted mutant."""
    session = GradingSession(ROOT, module)
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[::every])
    return session


def sampled_session() -> GradingSession:
    """L7.3's grading session with every pitfall and a spread of the counted mutants."""
    return sampled("L7.3", every=20)


def warm_check_equal_to_cold(session, folder: Path, cache: Path, cuts: list[int] | None = None):
    """Check `folder` warm (with the verdict cache) and cold; assert they give
    the same grade, kills, pitfalls and "by"; return the warm result.  cuts:
    where to add how many pitfalls' runs the warm check cut (PitfallSeen)."""
    def count(event) -> None:
        if cuts is not None and isinstance(event, StageEnded) and event.cut is not None:
            cuts.append(event.cut)

    warm = check_module(ROOT, "L7.3", CheckRequest(tests=folder, course_tests=False, verdicts=cache), session=session,
                        on_event=count)
    cold = check_module(ROOT, "L7.3", CheckRequest(tests=folder, course_tests=False, fresh=True), session=session)
    assert warm.reason is None and cold.reason is None, (warm.problems, cold.problems)
    assert ({m.id for m in warm.mutants if m.killed} == {m.id for m in cold.mutants if m.killed})
    assert [p.killed for p in warm.pitfalls] == [p.killed for p in cold.pitfalls]
    assert (warm.killed, warm.score, warm.passed) == (cold.killed, cold.score, cold.passed)
    assert [p.tests for p in warm.pitfalls] == [p.tests for p in cold.pitfalls], "the report's \"by\""
    assert (warm.tests, warm.graded_tests) == (cold.tests, cold.graded_tests), "the graded tests"
    return warm
