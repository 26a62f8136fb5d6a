"""Kit tests of ol.core.progress: the one progress bar of ol check and ol grade."""

from __future__ import annotations

import io

from ol.core.progress import Bar, duration


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_redraws_one_line_and_close_blanks_all_of_it():
    stream = Terminal()
    bar = Bar(total=4, stream=stream, width=8)
    bar.advance("runs, 0 caught")
    bar.advance("runs, 1 caught, and a longer tail")
    bar.advance("runs")
    drawn = stream.getvalue().split("\r")[1:]
    assert drawn == ["  grading [##......] 1/4 runs, 0 caught",
                     "  grading [####....] 2/4 runs, 1 caught, and a longer tail",
                     "  grading [######..] 3/4 runs"]
    bar.close()
    assert stream.getvalue().endswith("\r" + " " * len(drawn[1]) + "\r"), "the longest line is blanked whole"


def test_the_bar_is_silent_off_a_terminal_and_past_its_total_stays_full():
    quiet = io.StringIO()
    bar = Bar(total=2, stream=quiet)
    for _ in range(3):
        bar.advance("submissions")
    bar.close()
    assert quiet.getvalue() == "" and bar.done == 3
    stream = Terminal()
    over = Bar(total=1, stream=stream, width=4)
    over.advance("")
    over.advance("")
    assert stream.getvalue().split("\r")[-1] == "  grading [####] 2/1 "


def test_duration_says_seconds_then_minutes():
    assert [duration(s) for s in (0.2, 89.0, 90.0, 725.0)] == ["1 s", "89 s", "2 min", "12 min"]
