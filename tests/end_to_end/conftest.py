"""Every test of this folder is slow: each follows real suites, or a real
class, through ol as a student or an instructor runs it (the gallery of
cheats, the channel attacks, the calibration suites, a class graded by
`ol grade`, Ray and Gradescope), and takes seconds to minutes.  The folder
marks them, so no test here needs its own @pytest.mark.slow and none can
fall into the fast tier (tests/test_markers.py holds both)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MARKERS = ("slow",)     # what this folder gives each of its tests


@pytest.hookimpl(tryfirst=True)   # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            for marker in MARKERS:
                item.add_marker(marker)
