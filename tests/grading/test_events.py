"""A check's events (ol.grading.events) as their readers take them: by type."""

from __future__ import annotations

import dataclasses
import io

import pytest

from ol.grading.check_cli import _RunsBar
from ol.grading.events import Judged, Planned, StageEnded, Unconfined


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_of_ol_check_counts_the_runs_that_caught_their_variant():
    screen = Terminal()
    progress = _RunsBar(screen)
    progress(Planned(4))
    for status, caught in (("failed", True), ("correct", False), ("passed", False), ("timeout", True)):
        progress(Judged(status, caught))
    progress(StageEnded("the suite on every variant", 1.5, runs=4))   # not the bar's: passed over
    progress(Unconfined("no bubblewrap"))
    assert screen.getvalue().split("\r")[-1].strip() == "grading [" + "#" * 30 + "] 4/4 runs, 2 caught"


def test_an_event_is_a_value_no_reader_can_change():
    event = Judged("failed", True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.caught = False
    assert event == Judged("failed", True) and hash(event) == hash(Judged("failed", True))
