"""Kit tests of ol.grading.pytest_call_recorder: the plugin `ol verify` loads into
the course tests' pytest to record their calls to the module under test and
replay them on an edit and its chaff.  A real pytest runs a small suite against
a small module; the results file must count and compare what the plugin
promises (its docstring), and a fault of the comparison must be said."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers.kit import ROOT, pytest_with_plugin
from ol.core.runner import child_env

TARGET = "import numpy as np\n\ndef scale(x, k=2.0):\n    return np.asarray(x) * k\n"
SUITE = '''
import numpy as np
from olx_target import scale

def test_doubles():
    assert scale(np.ones(3)).sum() == 6

def test_triples():
    assert scale(np.arange(4.0), k=3.0)[1] == 3

def test_an_argument_it_cannot_copy():
    scale(np.ones(2), k=0.5)                                 # a plain number: recorded
    try:
        scale(object())                                        # an object: left out
    except TypeError:
        pass
'''
SAME = "from correct import scale\n"   # a chaff imports the base as `correct`
OFF_BY_ONE = "from correct import scale as _scale\n\ndef scale(x, k=2.0):\n    return _scale(x, k) + 1\n"


def record(tmp_path: Path, settings: dict) -> dict:
    (tmp_path / "olx_target.py").write_text(TARGET)
    (tmp_path / "test_suite.py").write_text(SUITE)
    settings = {"target": "olx_target", "out": str(tmp_path / "results.json"), **settings}
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    done = pytest_with_plugin(tmp_path, "ol.grading.pytest_call_recorder", "test_suite.py", "--ol-record", "settings.json",
                              env={"PYTHONPATH": os.pathsep.join([str(tmp_path), child_env(ROOT)["PYTHONPATH"]])})
    assert done.returncode == 0, done.stdout + done.stderr   # recording never changes a test's outcome
    return json.loads((tmp_path / "results.json").read_text())


def test_calls_are_recorded_and_replayed_on_both_sides(tmp_path):
    results = record(tmp_path, {"pairs": [
        {"id": "same", "edit": TARGET, "chaff": SAME, "base": TARGET},
        {"id": "off", "edit": TARGET, "chaff": OFF_BY_ONE, "base": TARGET},
    ]})
    assert results["recorded"] == 3 and results["unrecordable"] == 1, results
    same, off = results["pairs"]["same"], results["pairs"]["off"]
    assert same == {"compared": 3, "equal": 3, "both_raised": 0, "one_sided": 0, "mismatches": []}
    assert off["compared"] == 3 and off["equal"] == 0 and len(off["mismatches"]) == 3, off
    assert all("scale(" in line for line in off["mismatches"]), off["mismatches"]


def test_a_fault_of_the_comparison_is_said_not_passed(tmp_path):
    results = record(tmp_path, {"pairs": [{"id": "broken", "edit": "def scale(:", "chaff": SAME,
                                           "base": TARGET}]})
    assert list(results) == ["error"] and "SyntaxError" in results["error"], results


def test_without_the_option_nothing_is_wrapped(tmp_path):
    (tmp_path / "olx_target.py").write_text(TARGET)
    (tmp_path / "test_plain.py").write_text(
        "import olx_target\n\n"
        "def test_it():\n"
        "    assert olx_target.scale.__module__ == 'olx_target' and not hasattr(olx_target.scale, '__wrapped__')\n")
    done = pytest_with_plugin(tmp_path, "ol.grading.pytest_call_recorder", "test_plain.py")
    assert done.returncode == 0, done.stdout + done.stderr
