"""Kit tests of ol.core.pytest_overlay: the plugin that installs the overlay
named by $OL_OVERLAY before pytest imports any test, and does nothing without it."""

from __future__ import annotations

import json

from helpers.kit import pytest_with_plugin


def test_pytest_plugin_installs_the_overlay_from_the_environment(tmp_path):
    overlay_file = tmp_path / "overlay.json"
    overlay_file.write_text(json.dumps({
        "olx_plugged": {"source": "ANSWER = 'from json'\n", "origin": str(tmp_path / "olx_plugged.py")},
        "olx_file": {"path": str(tmp_path / "real.py")},
    }))
    (tmp_path / "real.py").write_text("ANSWER = 'from a file'\n")
    (tmp_path / "test_plugged.py").write_text(
        "import olx_plugged, olx_file\n\n"
        "def test_it():\n"
        "    assert olx_plugged.ANSWER == 'from json'\n"
        "    assert olx_file.ANSWER == 'from a file'\n"
    )
    done = pytest_with_plugin(tmp_path, "ol.core.pytest_overlay", "test_plugged.py", env={"OL_OVERLAY": str(overlay_file)})
    assert done.returncode == 0, done.stdout + done.stderr


def test_without_the_variable_nothing_is_overlaid(tmp_path):
    (tmp_path / "olx_plain.py").write_text("ANSWER = 'on disk'\n")
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\n"
        "def test_it():\n"
        "    import olx_plain\n"
        "    assert olx_plain.ANSWER == 'on disk'\n"
        "    assert not [f for f in sys.meta_path if type(f).__name__ == 'OverlayFinder']\n"
    )
    done = pytest_with_plugin(tmp_path, "ol.core.pytest_overlay", "test_plain.py", unset=("OL_OVERLAY",))
    assert done.returncode == 0, done.stdout + done.stderr
