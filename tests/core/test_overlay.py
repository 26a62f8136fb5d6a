"""Kit tests of ol.core.overlay: exact module names come from the mapped source,
everything else imports normally (its pytest plugin: test_pytest_overlay.py)."""

from __future__ import annotations

import json
import sys
import traceback

import pytest

from ol.core.overlay import Source, install_overlay, remove_overlay

@pytest.fixture
def overlay():
    finders = []

    def install(mapping):
        finders.append(install_overlay(mapping))
        return finders[-1]

    yield install
    for finder in finders:
        remove_overlay(finder)


def test_text_source_is_a_normal_module_whose_traceback_shows_the_text(tmp_path, overlay):
    decoy = tmp_path / "olx_text.py"
    decoy.write_text("this file is not what was imported\n" * 5)
    overlay({"olx_text": Source.from_text("VALUE = 42\n\ndef boom():\n    raise ValueError('from text')\n",
                                          origin=str(decoy))})
    import olx_text

    assert olx_text.VALUE == 42
    assert olx_text.__file__ == str(decoy)
    with pytest.raises(ValueError) as caught:
        olx_text.boom()
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert frames[-1].filename == str(decoy)
    assert frames[-1].line == "raise ValueError('from text')", "the line comes from the text, not the file"


def test_path_source_and_packages(tmp_path, overlay):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/__init__.py").write_text("NAME = 'overlay package'\n")
    (tmp_path / "pkg/sub.py").write_text("from . import NAME as PARENT\n")
    (tmp_path / "elsewhere.py").write_text("WHERE = 'mapped file'\n")
    overlay({"olx_pkg": Source.from_path(tmp_path / "pkg/__init__.py"),
             "olx_pkg.mapped": Source.from_path(tmp_path / "elsewhere.py")})
    import olx_pkg
    import olx_pkg.mapped
    import olx_pkg.sub  # not mapped: found on the package's own path

    assert olx_pkg.NAME == "overlay package"
    assert olx_pkg.mapped.WHERE == "mapped file"
    assert olx_pkg.sub.PARENT == "overlay package"


def test_unmapped_names_fall_through_and_removal_forgets(overlay):
    finder = overlay({"olx_gone": Source.from_text("X = 1\n")})
    import json as json_again  # an unmapped module imports as usual

    assert json_again is json
    import olx_gone

    assert olx_gone.X == 1 and sys.meta_path[0] is finder
    remove_overlay(finder)
    assert "olx_gone" not in sys.modules and finder not in sys.meta_path
    with pytest.raises(ModuleNotFoundError):
        import olx_gone  # noqa: F811


def test_source_needs_exactly_one_of_path_or_text():
    with pytest.raises(ValueError):
        Source()
    with pytest.raises(ValueError):
        Source(path="a.py", text="x = 1")

