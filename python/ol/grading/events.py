"""What a check tells its caller while it runs: check_module's on_event.

Feedback only (a progress bar, a warning, a profile), never part of the
result, and never read back by the grader.  Each is a frozen dataclass, so a
caller matches on its type, not on a key of a dict:

    Unconfined(why)          the check runs unconfined, because `why` (told once, before any run)
    Planned(runs)            the suite's next round of runs will be `runs` long
    Judged(status, caught)   one run's verdict is in: its status (grader.py's PASSED, FAILED, ...,
                             or "correct" for a run of a correct implementation), and whether it
                             caught its variant
    StageEnded(stage, seconds, runs, correct, again, cut, collect)
                             a stage of the check ended after `seconds`; the suite's stage counts
                             its runs (bench/bench_check.py --profile adds the stages up)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Unconfined:
    why: str


@dataclass(frozen=True)
class Planned:
    runs: int


@dataclass(frozen=True)
class Judged:
    status: str
    caught: bool


@dataclass(frozen=True)
class StageEnded:
    stage: str
    seconds: float
    runs: int | None = None          # the suite's stage: runs in all,
    correct: int | None = None       # of them of a correct implementation,
    again: int | None = None         # of them run again (stopped at a test then left out),
    cut: int | None = None           # of them pitfalls cut where the last check saw the rest (a re-check),
    collect: float | None = None     # and the seconds spent collecting (the shared check: once)


Event = Unconfined | Planned | Judged | StageEnded
OnEvent = Callable[[Event], None]
