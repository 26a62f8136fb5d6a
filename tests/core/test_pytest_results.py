"""Kit tests of ol.core.pytest_results: the plugin that writes each test's outcome
to $OL_RESULTS, which ol.core.runner reads into a TestRun.  A real pytest runs a
file with one test of each kind, and the JSON must name each kind as the
module's docstring promises."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.kit import pytest_with_plugin

KINDS = '''
import pytest

@pytest.fixture
def broken_setup():
    raise RuntimeError("setup")

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")

def test_passes(): pass
def test_fails(): assert False
def test_skips(): pytest.skip("not today")
@pytest.mark.xfail(strict=False)
def test_expected_to_fail(): assert False
def test_setup_fails(broken_setup): pass
def test_passes_then_teardown_fails(broken_teardown): pass
def test_fails_then_teardown_fails(broken_teardown): assert False
def test_left_out_by_k(): pass
'''


def outcomes_of(tmp_path: Path, *arguments: str) -> dict:
    results = tmp_path / "results.json"
    done = pytest_with_plugin(tmp_path, "ol.core.pytest_results", *arguments, env={"OL_RESULTS": str(results)})
    assert results.exists(), done.stdout + done.stderr
    return json.loads(results.read_text())


def test_each_kind_of_test_gets_its_outcome_in_reported_order(tmp_path):
    (tmp_path / "test_kinds.py").write_text(KINDS)
    written = outcomes_of(tmp_path, "test_kinds.py", "-k", "not left_out")
    by_name = {entry["nodeid"].split("::")[-1]: entry["outcome"] for entry in written["outcomes"]}
    assert by_name == {
        "test_passes": "passed",
        "test_fails": "failed",
        "test_skips": "skipped",
        "test_expected_to_fail": "skipped",      # xfail counts as skipped
        "test_setup_fails": "error",
        "test_passes_then_teardown_fails": "error",  # a later teardown failure overrides the pass
        "test_fails_then_teardown_fails": "failed",  # nothing overrides a failure
    }
    assert [entry["nodeid"].split("::")[-1] for entry in written["outcomes"]][:3] == \
        ["test_passes", "test_fails", "test_skips"]
    assert written["deselected"] == 1


def test_a_file_that_cannot_be_imported_is_an_error(tmp_path):
    (tmp_path / "test_broken.py").write_text("import no_such_module_anywhere\n\ndef test_never(): pass\n")
    (tmp_path / "test_fine.py").write_text("def test_fine(): pass\n")
    written = outcomes_of(tmp_path, "test_broken.py", "test_fine.py", "--continue-on-collection-errors")
    assert {entry["nodeid"]: entry["outcome"] for entry in written["outcomes"]} == {
        "test_broken.py": "error", "test_fine.py::test_fine": "passed"}
    assert written["deselected"] == 0


def test_without_the_variable_nothing_is_written(tmp_path):
    (tmp_path / "test_fine.py").write_text("def test_fine(): pass\n")
    done = pytest_with_plugin(tmp_path, "ol.core.pytest_results", "test_fine.py", unset=("OL_RESULTS",))
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [path for path in tmp_path.rglob("*.json")], "the plugin wrote a file nobody asked for"
