"""Pitfalls as behaviour: chaffs (Examplar's word).

A pitfall in course/mutants/<module>/pitfalls.toml is a misconception with a
few text edits of the reference that show it.  Its chaff shows the same
misconception without a line of the answer: a module that wraps ANY correct
implementation of the graded module, imported under the name `correct`, and
changes what it does exactly where the misconception would:

    # course/mutants/L7.3/chaffs/s02.py: the sign of sin does not matter
    import correct

    def rope_cos_sin(positions, inv_freq, attention_scaling=1.0):
        cos, sin = correct.rope_cos_sin(positions, inv_freq, attention_scaling)
        return cos, -sin
    ...

So one pitfall means the same on both sides of a class: the instructor's
grade runs each chaff around the reference, a student kit's local check
(ol release) around the student's own code once it passes the course tests.
`ol verify` checks that each chaff fails the course tests its pitfall names
and that, around the reference, it gives what the pitfall's edits give on
the course tests' inputs (ol.grading.chaff_equivalence).

The catalog names the folder ([module.grading] chaffs); the chaff of pitfall
<id> is <folder>/<id>.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ol.core.catalog import Grading
from ol.core.errors import OlError
from ol.core.overlay import Source
from ol.grading.protocol import BASE_MODULE, RunRequest   # BASE_MODULE: the name a chaff imports its base by
from ol.grading.variants import Variant, pitfall_key


class ChaffMissing(OlError):
    """A pitfall of a module with chaffs has no chaff file (a fault of the course, exit 2)."""

    exit_code = 2


@dataclass(frozen=True)
class Chaff:
    id: str        # the pitfall's id: "s02"
    path: str      # relative to the repository: "course/mutants/L7.3/chaffs/s02.py"
    source: str


@dataclass(frozen=True)
class ChaffVariant(Variant):
    """A chaff served as the module under test, around `base` (a correct
    implementation: the reference, or a student's own file).  It is trusted
    exactly when its base is."""

    base: Variant | None = None

    def request(self, *, modules: dict | None = None, tracebacks: bool = False) -> RunRequest:
        request = super().request(modules=modules, tracebacks=tracebacks)
        request.modules = {**request.modules, BASE_MODULE: Source.from_text(self.base.source, self.base.origin).to_json()}
        return request


def chaff_path(grading: Grading, pitfall_id: str) -> str:
    return f"{grading.chaffs.rstrip('/')}/{pitfall_id}.py"


def load_chaffs(root: Path, grading: Grading, pitfall_ids: list[str]) -> list[Chaff]:
    """The chaff of every pitfall id, in that order.  Raises ChaffMissing
    naming each pitfall whose file is not there."""
    root = Path(root)
    missing = [chaff_path(grading, pid) for pid in pitfall_ids if not (root / chaff_path(grading, pid)).is_file()]
    if missing:
        raise ChaffMissing(f"pitfall{'s' if len(missing) > 1 else ''} without a chaff: {', '.join(missing)} "
                           "missing. Every pitfall of a module with chaffs needs one: a wrapper around "
                           "`import correct` that shows the misconception (python/ol/grading/chaffs.py)")
    return [Chaff(pid, chaff_path(grading, pid), (root / chaff_path(grading, pid)).read_text(encoding="utf-8"))
            for pid in pitfall_ids]


def chaff_variants(chaffs: list[Chaff], base: Variant) -> list[Variant]:
    """Each chaff around `base`, keyed "pitfall:<id>" as the pitfalls are graded."""
    return [ChaffVariant(pitfall_key(chaff.id), chaff.source, chaff.path, trusted=base.is_trusted, base=base)
            for chaff in chaffs]
