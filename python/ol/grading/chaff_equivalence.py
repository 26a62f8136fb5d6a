"""Does each chaff mean what its pitfall means?  `ol verify`'s comparison.

A pitfall is defined twice: by its edits of the reference (pitfalls.toml)
and by its chaff, a wrapper around any correct implementation
(ol.grading.chaffs).  Around the reference, the two must give the same
results on the inputs of the course tests, wherever both give one:

    results = compare_chaffs_with_edits(root, "L7.3")
    results["s02"].problems        # [] when they agree

The course tests run once on the reference, with every call to the module
under test recorded (ol.grading.pytest_call_recorder); each recorded call is then
replayed on each pitfall's edit and on its chaff around the reference.  The
comparison is generic: nothing in it knows a module or a pitfall, so it is
run again, unchanged, whenever a reference, a pitfall or a chaff changes.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ol.core.catalog import REFERENCE_TREE
from ol.grading.chaffs import load_chaffs
from ol.grading.session import GradingFault, GradingSession


@dataclass
class Comparison:
    """One pitfall: its edit against its chaff around the reference, call by call."""

    id: str
    compared: int = 0        # calls where both returned
    equal: int = 0           # of those and of both_raised, the ones that agree
    both_raised: int = 0
    one_sided: int = 0       # calls where only one of the two raised: not compared
    mismatches: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        found = list(self.mismatches)
        if self.compared == 0:
            found.append("no course-test call gives a result on both the edit and the chaff: nothing was compared")
        return found


def compare_chaffs_with_edits(root: Path, module_id: str, *, session: GradingSession | None = None,
                              limit: int = 20000) -> dict[str, Comparison]:
    """{pitfall id: Comparison} for every pitfall of the module (which must
    have chaffs).  Raises GradingFault when the course tests cannot be
    recorded (the reference failing them, the recorder failing)."""
    from ol.core.runner import run_tests

    session = session or GradingSession(root, module_id)
    grading, module = session.grading, session.module
    pitfalls = list(session.mutants.pitfalls)
    chaffs = {c.id: c for c in load_chaffs(session.root, grading, [p.id for p in pitfalls])}
    with tempfile.TemporaryDirectory(prefix="ol-chaffs-") as scratch:
        settings, out = Path(scratch) / "settings.json", Path(scratch) / "results.json"
        settings.write_text(json.dumps({
            "target": session.target, "out": str(out), "limit": limit,
            "pairs": [{"id": p.id, "edit": p.source, "chaff": chaffs[p.id].source, "base": session.reference.source}
                      for p in pitfalls],
        }), encoding="utf-8")
        run = run_tests(session.root, module, [session.root / module.course_tests], implementation="reference",
                        pytest_args=["-p", "ol.grading.pytest_call_recorder", "--ol-record", str(settings), "-q"],
                        capture=True, catalog=session.catalog)
        if not run.ok or not out.is_file():
            raise GradingFault(f"the course tests of {module.id} could not be recorded on the reference "
                               f"({REFERENCE_TREE}/{grading.target}): pytest exit {run.exit_code}\n{run.output[-3000:]}")
        results = json.loads(out.read_text(encoding="utf-8"))
    if "error" in results:
        raise GradingFault(f"comparing the chaffs of {module.id} with their edits failed:\n{results['error']}")
    return {pid: Comparison(pid, **counts) for pid, counts in results["pairs"].items()}
