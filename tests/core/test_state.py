"""Kit tests of ol.core.state: states derived from files and records, atomic
writes, and a corrupt file that is reported and kept, never lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ol.core.catalog import load_catalog
from ol.core.state import CHECKED, NOT_STARTED, PASSING, STARTED, StateStore

CATALOG = """
[[module]]
id = "A"
title = "A"
rung = "R1"
needs = []
files = ["pkg/a.py", "pkg/b.py"]
chapter = "c.md"
course_tests = "course/tests/A"
student_tests = "python/tests/a"
fixtures = []
"""


@pytest.fixture
def course(tmp_path):
    (tmp_path / "course").mkdir()
    (tmp_path / "course/catalog.toml").write_text(CATALOG)
    warnings = []
    store = StateStore(tmp_path, warn=warnings.append)
    return tmp_path, load_catalog(tmp_path).get("A"), store, warnings


def write_files(root: Path, *files: str, text: str = "x = 1\n"):
    for file in files:
        path = root / "python" / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_states_follow_files_and_records(course):
    root, module, store, warnings = course
    assert store.status(module).state == NOT_STARTED
    write_files(root, "pkg/a.py")
    status = store.status(module)
    assert status.state == STARTED and status.missing == ("pkg/b.py",), "started, with a file missing"
    write_files(root, "pkg/b.py")
    assert store.status(module).state == STARTED, "no state file: derived from the files"

    store.record(module, PASSING, ref_deps=True)
    status = store.status(module)
    assert (status.state, status.ref_deps, status.edited_since) == (PASSING, True, False)
    write_files(root, "pkg/a.py", text="x = 2\n")
    assert store.status(module).edited_since, "list can tell the code changed, without running it"

    for file in ("pkg/a.py", "pkg/b.py"):
        (root / "python" / file).unlink()
    assert store.status(module).state == NOT_STARTED, "files gone: not started, whatever the record"
    assert warnings == []


def test_test_results_move_the_state(course):
    root, module, store, _ = course
    write_files(root, "pkg/a.py", "pkg/b.py")
    assert store.record_test_result(module, True, ref_deps=False) == PASSING
    assert store.record_test_result(module, False, ref_deps=False) == STARTED
    store.record(module, CHECKED)
    assert store.record_test_result(module, True, ref_deps=True) == CHECKED, "passing keeps checked"
    assert store.record_test_result(module, False, ref_deps=True) == STARTED, "failing does not"
    with pytest.raises(ValueError):
        store.record(module, NOT_STARTED)


def test_writes_are_atomic_and_leave_no_temporary_files(course):
    root, module, store, _ = course
    write_files(root, "pkg/a.py", "pkg/b.py")
    store.record(module, PASSING)
    assert sorted(p.name for p in (root / ".ol").iterdir()) == ["state.json"]
    data = json.loads((root / ".ol/state.json").read_text())
    assert data["version"] == 1 and data["modules"]["A"]["state"] == PASSING


@pytest.mark.parametrize("corrupt", ["{not json", '{"modules": [1, 2]}', '{"modules": {"A": 3}}', "[]"])
def test_a_corrupt_state_file_is_kept_reported_and_replaced(course, corrupt):
    root, module, store, warnings = course
    write_files(root, "pkg/a.py", "pkg/b.py")
    (root / ".ol").mkdir()
    (root / ".ol/state.json").write_text(corrupt)
    assert store.status(module).state == STARTED
    assert store.status(module).state == STARTED
    assert len(warnings) == 1 and "state.json.bak" in warnings[0], "one warning naming the copy"
    assert (root / ".ol/state.json.bak").read_text() == corrupt

    store.record(module, PASSING)
    assert store.status(module).state == PASSING
    (root / ".ol/state.json").write_text("second corruption")
    StateStore(root, warn=warnings.append).records()
    assert (root / ".ol/state.json.bak").read_text() == corrupt, "an earlier copy is never overwritten"
    assert (root / ".ol/state.json.bak-2").read_text() == "second corruption"
