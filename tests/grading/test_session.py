"""Kit tests of ol.grading.session: the session's fingerprint, which keys
the verdict cache (.ol/verdicts) and the witnesses' cache, reads every file
of the grader's own code, its sandbox/ included: a kit update that changes
only how runs are confined must not keep the catches made before it."""

from __future__ import annotations

from pathlib import Path

from helpers.kit import ROOT
from ol.grading.session import GradingSession

GRADING = ROOT / "python" / "ol" / "grading"


def test_the_fingerprint_reads_every_file_of_the_grader(monkeypatch):
    session = GradingSession(ROOT, "L7.3")
    read: set[Path] = set()
    original = Path.read_bytes

    def recording(path: Path) -> bytes:
        read.add(Path(path).resolve())
        return original(path)

    monkeypatch.setattr(Path, "read_bytes", recording)
    first = session.fingerprint()
    grader = {path.resolve() for path in GRADING.rglob("*.py")}
    assert any(path.parent.name == "sandbox" for path in grader)
    assert grader - read == set(), f"files of the grader the fingerprint does not read: {sorted(grader - read)}"
    assert session.fingerprint() == first, "the same code, the same fingerprint"
