"""Points, and the one rounding every number a class is shown goes through.

The rule (the catalog's [module.grading.points], default 40, 50, 10):

    course tests   points["course_tests"] x passed / total     (0 when they did not run)
    mutation       points["mutation"]     x killed / counted    (0 when not graded)
    pitfalls       points["pitfalls"]     x caught / pitfalls   (0 when not graded)
    before penalty the sum of the three parts as shown
    total          before penalty minus the late penalty (a share of the maximum,
                   ol.instructor.class_grading.gradebook.LatePolicy), rounded down, never below 0
    maximum        the sum of points: the same for every student, graded or not

The rounding: every part is computed exactly (fractions) and then rounded
DOWN to hundredths; so is the score.  A number shown is never more than
was earned, and 1.00 or full points means everything was caught.  ol check
shows its score the same way (ol.grading.report.floored).  grades.csv,
summary.md, <student>.md and Gradescope all take their numbers from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction


def floor2(value: Fraction | float | None) -> Fraction | None:
    """Rounded down to hundredths, exactly."""
    if value is None:
        return None
    return Fraction(math.floor(Fraction(value) * 100), 100)


def shown(value: Fraction | float | None, empty: str = "") -> str:
    """A number as every report prints it: rounded down to hundredths, two digits."""
    rounded = floor2(value)
    return empty if rounded is None else f"{float(rounded):.2f}"


@dataclass(frozen=True)
class Points:
    course_tests: Fraction
    mutation: Fraction
    pitfalls: Fraction
    maximum: Fraction
    late_share: Fraction = Fraction(0)     # the late penalty as a share of the maximum (0: none)

    @property
    def before_penalty(self) -> Fraction:
        return self.course_tests + self.mutation + self.pitfalls

    @property
    def total(self) -> Fraction:
        """The points that count: before penalty, less the late penalty."""
        return max(Fraction(0), floor2(self.before_penalty - self.late_share * self.maximum))

    @property
    def penalty(self) -> Fraction:
        """The points the late penalty took."""
        return self.before_penalty - self.total

    def late(self, share: Fraction) -> Points:
        """These points with a late penalty of `share` of the maximum."""
        return replace(self, late_share=Fraction(share))

    def parts(self, table: dict[str, float]) -> list[tuple[str, Fraction, Fraction]]:
        """(part, points, out of) in the catalog's order."""
        return [("course_tests", self.course_tests, Fraction(table["course_tests"])),
                ("mutation", self.mutation, Fraction(table["mutation"])),
                ("pitfalls", self.pitfalls, Fraction(table["pitfalls"]))]


def points(table: dict[str, float], *, course: tuple[int, int] | None, score: Fraction | None,
           pitfalls: tuple[int, int] | None) -> Points:
    """The points of one submission.  course and pitfalls are (passed, total);
    None (or a total of 0) where that part did not run."""
    def part(name: str, fraction: Fraction | None) -> Fraction:
        return floor2(Fraction(table[name]) * fraction) if fraction is not None else Fraction(0)

    return Points(course_tests=part("course_tests", _fraction(course)), mutation=part("mutation", score),
                  pitfalls=part("pitfalls", _fraction(pitfalls)), maximum=sum((Fraction(v) for v in table.values()),
                                                                              Fraction(0)))


def _fraction(pair: tuple[int, int] | None) -> Fraction | None:
    if pair is None or not pair[1]:
        return None
    return Fraction(pair[0], pair[1])
