"""Kit test of ol.instructor.class_grading.copies: summary.md's copy finder
sees a copy and a renamed copy, and no two of the honest calibration suites,
nor two students alike only in what everyone is given."""

from __future__ import annotations

from pathlib import Path

from helpers.classes import CALIBRATION, MODEL_ANSWER, MODULE, renamed
from helpers.kit import ROOT
from ol.core.catalog import load_catalog
from ol.instructor.class_grading import copies
from ol.student.workspace import fresh_stubs, starter_test_text


def test_the_copy_finder_sees_copies_but_not_honest_suites():
    def read(folder: Path) -> str:
        return "\n".join(p.read_text() for p in sorted(folder.glob("*.py")))

    suites = {name: read(CALIBRATION / f"l7-3-suite-{name[-1]}") for name in ("honest-a", "honest-b", "honest-c")}
    suites["model"] = read(MODEL_ANSWER)
    suites["copy-of-a"] = suites["honest-a"]
    suites["renamed-b"] = renamed(suites["honest-b"])
    assert suites["renamed-b"] != suites["honest-b"] and "def test_renamed_0" in suites["renamed-b"]
    compile(suites["renamed-b"], "renamed", "exec")
    starter = {"tests": starter_test_text(ROOT, MODULE, load_catalog(ROOT)),
               "code": "\n".join(fresh_stubs(ROOT, MODULE).values())}
    pairs = copies.similar_pairs({name: {"tests": text} for name, text in suites.items()}, starter=starter)
    found = {(p.first, p.second): p for p in pairs}
    assert found.pop(("copy-of-a", "honest-a")).identical
    assert found.pop(("honest-b", "renamed-b")).similarity >= 0.9
    assert not found, f"honest suites listed as alike: {found}"
    # what everyone is given does not make two students alike
    assert not copies.similar_pairs({"x": {"tests": starter["tests"] + "\n\ndef test_x():\n    assert 1\n"},
                                     "y": {"tests": starter["tests"] + "\n\ndef test_y():\n    assert 2\n"}},
                                    starter=starter)
