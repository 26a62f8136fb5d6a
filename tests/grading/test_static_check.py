"""Kit tests of ol.grading.static_check: what a graded test may not do is named
with its file and line, and the folder it judges is the one the sandbox is
given and pytest collects (its two former drifts: Jupyter's checkpoints, and
a folder whose only tests are in testing.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from helpers.kit import ROOT
from ol.core.catalog import load_catalog
from ol.core.test_folder import TestFolder
from ol.grading.session import read_folder
from ol.grading.static_check import check_test_folder


def test_static_check_names_file_and_line(tmp_path):
    folder = tmp_path / "l7-3-rope"
    folder.mkdir()
    (folder / "test_x.py").write_text(textwrap.dedent("""\
        import numpy as np
        import inspect
        from tinyllm.modern.rope import apply_rope, _tables_for
        from tinyllm.autograd import functional as F
        from hypothesis import strategies as st

        def test_a():
            f = apply_rope.__code__
            x = getattr(np, "lo" + "ad")
            return eval("1")
    """))
    (folder / "helpers.py").write_text("import numpy.testing\n")
    catalog = load_catalog(ROOT)
    grading = catalog.get("L7.3").grading
    found = [str(v) for v in check_test_folder(TestFolder(folder).snapshot(), tmp_path, grading.allowed_imports,
                                                {"tinyllm.modern.rope": frozenset({"apply_rope", "rope_cos_sin", "RopeSpec"})})]
    expected = ["l7-3-rope/test_x.py:2: imports inspect", "l7-3-rope/test_x.py:3: imports _tables_for",
                "l7-3-rope/test_x.py:8: uses .__code__", "l7-3-rope/test_x.py:9: calls getattr() with a computed",
                "l7-3-rope/test_x.py:10: uses eval()"]
    for prefix in expected:
        assert any(line.startswith(prefix) for line in found), (prefix, found)
    assert len(found) == len(expected), found
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no tests found" in str(check_test_folder(TestFolder(empty).snapshot(), tmp_path, grading.allowed_imports, {})[0])


def static_check(folder: Path) -> list[str]:
    grading = load_catalog(ROOT).get("L7.3").grading
    return [str(v) for v in check_test_folder(TestFolder(folder).snapshot(), folder.parent, grading.allowed_imports,
                                              {"tinyllm.modern.rope": frozenset({"apply_rope", "rope_cos_sin"})})]


def test_jupyter_checkpoints_are_skipped_by_the_static_check_as_by_the_sandbox(tmp_path):
    """A checkpoint is Jupyter's copy of a file, never graded (the sandbox is
    not given it, and pytest never enters a dot folder): the static check
    must not refuse the folder for it."""
    folder = tmp_path / "l7-3-rope"
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / "test_rope.py").write_text("from tinyllm.modern.rope import rope_cos_sin\n\n\n"
                                         "def test_a():\n    assert rope_cos_sin\n")
    (folder / ".ipynb_checkpoints" / "test_x.py").write_text("import os\n\n\ndef test_b():\n    assert os.sep\n")
    assert static_check(folder) == []
    assert sorted(read_folder(folder, "")) == ["test_rope.py"], "the sandbox is given the same files"


def test_a_folder_whose_only_tests_are_in_testing_py_has_no_tests_as_pytest_finds_none(tmp_path):
    folder = tmp_path / "l7-3-rope"
    folder.mkdir()
    (folder / "testing.py").write_text("def test_a():\n    assert True\n")
    found = static_check(folder)
    assert len(found) == 1 and "no tests found" in found[0], found
