"""The implementations a suite is graded against, as the observer knows them
(a Variant: its key, its text, whether it is the course's own code), and how
a report names each one by its key.

    reference        the course's implementation
    alternate:N      a second correct implementation
    pitfall:ID       a pitfall (a chaff around a correct implementation, or its edits)
    student          the student's own code
    anything else    a mutant's id
"""

from __future__ import annotations

from dataclasses import dataclass

from ol.grading.compiled import code_of
from ol.grading.protocol import RunRequest


@dataclass(frozen=True)
class Variant:
    """One implementation of the module under test, as the observer knows it."""

    key: str       # "reference", "alternate:1", "pitfall:s01", "student", or a mutant id
    source: str    # the whole module text
    origin: str    # the path its tracebacks name
    trusted: bool | None = None   # None: the course's own code, unless the key is "student"

    @property
    def is_trusted(self) -> bool:
        """Course code runs as it is; a student's code (their file, or in a
        student kit every variant made from it) is confined."""
        return self.key != "student" if self.trusted is None else self.trusted

    def request(self, *, modules: dict | None = None, tracebacks: bool = False) -> RunRequest:
        """What the implementation's side is told to load for one run.  Only
        the student's own code is confined there; the course's variants are
        trusted code."""
        compiled = code_of(self.source, self.origin) if self.is_trusted else {}   # never a student's text here
        return RunRequest(source={"source": self.source, "origin": self.origin, **compiled}, modules=modules or {},
                          tracebacks=tracebacks, trusted=self.is_trusted)


def describe(key: str) -> str:
    """How a report names the variant `key`."""
    if key == "reference":
        return "the reference"
    if key.startswith("alternate:"):
        return f"a second correct implementation ({key})"
    if key.startswith("pitfall:"):
        return f"pitfall {key.split(':', 1)[1]}"
    return f"mutant {key}"
