"""What each graded chapter says about tests, as data that tests/course/test_hints.py runs.

Every graded module of the catalog has a file here named after its id
(L7.3: l7_3.py; tests/course/test_hints.py fails for a graded module without one),
which defines

    HINTS      the chapter's claims about inputs and the mistakes they show: each Hint
    ADVICE     the sentences of section 13's **Hints.** paragraph that advise and claim nothing a
               test could run (every other sentence of it must hold the words of a Hint)
    TOLERANCE  {"atol", "rtol"}: when two results differ, as the chapter's section 13 compares
    ORACLE     the oracle section 13 recommends, at the tolerance it recommends
"""

from __future__ import annotations

import importlib
import re
import zlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Hint:
    """One claim: `says`, words of the module's section `section`; `call`, the
    input it suggests, as an expression over the module's public names (and
    np, Tensor, gradient(f, x, g), and what the module's file adds); `mistake`,
    what it is for: a generated mutant as its edit "old => new" of the
    reference (the new text keeps the old one's indentation), or the id of a
    pitfall or misconception; `plain`, an input that does not tell the
    mistake from the reference (the claim's "cannot see", or a plainer input
    the hint's twist improves on), compared at `plain_tolerance` when it is
    given (a looser tolerance the hint warns against) and else at the
    module's."""

    module: str
    says: str
    call: str
    mistake: str
    plain: str | None = None
    section: int = 13
    plain_tolerance: dict | None = None

    @property
    def id(self) -> str:
        words = re.sub(r"[^a-z0-9]+", "-", self.says.lower()).strip("-")
        return f"{self.module}:{words[:50]}:{zlib.crc32((self.call + self.mistake + str(self.plain)).encode()) % 10**4:04d}"


@dataclass(frozen=True)
class Oracle:
    """The recommended oracle: `says`, the words of section 13 that recommend it
    and its tolerance; `check`, Python that defines check(implementation) ->
    a list of problems (empty: the oracle, at that tolerance, accepts the
    implementation on every case).  It runs with the reference tree and
    course/tests on sys.path, in the repository; `fixture(path)` loads a
    golden fixture, `model_answer(module_id)` the module's model-answer
    suite, whose oracle functions are the chapter's recommendation written
    out."""

    says: tuple[str, ...]
    check: str


def hints_file(module_id: str):
    """The module of this package for `module_id`, or None if it has none yet."""
    name = f"{__name__}.{module_id.lower().replace('.', '_')}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name != name:
            raise
        return None
