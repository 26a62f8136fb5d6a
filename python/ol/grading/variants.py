"""The implementations a suite is graded against, as the observer knows them
(a Variant: its key, its text, whether it is the course's own code), and how
a report names each one by its key.  A key is a string (verdicts, reports and
the verdict cache are keyed by it); its kind is read here alone:

    key              kind_of(key)
    reference        REFERENCE     the course's implementation
    alternate:N      ALTERNATE     a second correct implementation (alternate_key(N))
    pitfall:ID       PITFALL       a pitfall: a chaff around a correct implementation, or its edits (pitfall_key(ID))
    student          STUDENT       the student's own code
    anything else    MUTANT        a mutant's id
"""

from __future__ import annotations

from dataclasses import dataclass

from ol.core.overlay import Source
from ol.grading.compiled import code_of
from ol.grading.protocol import RunRequest


REFERENCE, ALTERNATE, PITFALL, STUDENT, MUTANT = "reference", "alternate", "pitfall", "student", "mutant"


def pitfall_key(pitfall_id: str) -> str:
    return f"{PITFALL}:{pitfall_id}"


def alternate_key(number: int) -> str:
    return f"{ALTERNATE}:{number}"


def kind_of(key: str) -> str:
    """REFERENCE, ALTERNATE, PITFALL, STUDENT or MUTANT: what the variant `key` is."""
    if key in (REFERENCE, STUDENT):
        return key
    prefix, colon, _ = key.partition(":")
    return prefix if colon and prefix in (ALTERNATE, PITFALL) else MUTANT


def is_pitfall(key: str) -> bool:
    return kind_of(key) == PITFALL


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
        return self.key != STUDENT if self.trusted is None else self.trusted

    def request(self, *, modules: dict | None = None, tracebacks: bool = False) -> RunRequest:
        """What the implementation's side is told to load for one run.  Only
        the student's own code is confined there; the course's variants are
        trusted code."""
        compiled = code_of(self.source, self.origin) if self.is_trusted else {}   # never a student's text here
        return RunRequest(source={**Source.from_text(self.source, self.origin).to_json(), **compiled}, modules=modules or {},
                          tracebacks=tracebacks, trusted=self.is_trusted)


def describe(key: str) -> str:
    """How a report names the variant `key`."""
    kind = kind_of(key)
    if kind == REFERENCE:
        return "the reference"
    if kind == ALTERNATE:
        return f"a second correct implementation ({key})"
    if kind == PITFALL:
        return f"pitfall {key.split(':', 1)[1]}"
    return f"mutant {key}"
