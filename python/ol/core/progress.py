"""A progress bar: one line on a terminal, redrawn in place; nothing elsewhere.

    bar = Bar(total=120, stream=sys.stderr)
    bar.advance("runs, 14 caught")      #   grading [#####.........] 21/120 runs, 14 caught
    bar.close()                         # the line blanked, the cursor back at its start

`ol check` counts runs (ol.grading.check_cli), `ol grade` submissions
(ol.instructor.class_grading.grade_cli); what each adds after the count is its own.
"""

from __future__ import annotations

import math
import sys


class Bar:
    def __init__(self, total: int, stream=None, width: int = 30):
        self.total, self.width = total, width
        self.stream = stream or sys.stderr
        self.done = 0
        self.active = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._longest = 0     # characters of the longest line drawn: close() blanks that many

    def advance(self, suffix: str) -> None:
        """One more done; on a terminal, draw the bar with `suffix` after the count."""
        self.done += 1
        if not self.active:
            return
        filled = int(self.width * min(self.done, self.total) / max(self.total, 1))
        line = f"  grading [{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} {suffix}"
        self._longest = max(self._longest, len(line))
        self.stream.write("\r" + line)
        self.stream.flush()

    def close(self) -> None:
        if self.active and self.done:
            self.stream.write("\r" + " " * self._longest + "\r")
            self.stream.flush()


def duration(seconds: float) -> str:
    """A time left as a person says it: "40 s", "12 min"."""
    if seconds < 90:
        return f"{math.ceil(seconds)} s"
    return f"{seconds / 60:.0f} min"
