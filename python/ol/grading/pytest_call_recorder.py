"""pytest plugin: record every call the course tests make to the module under
test, then replay each call on two other versions of it and compare.

    python -m pytest course/tests/L7.3 -p ol.grading.pytest_call_recorder --ol-record settings.json

settings.json: {"target": "tinyllm.modern.rope", "out": "results.json",
"limit": 5000, "pairs": [{"id": "s02", "edit": TEXT, "chaff": TEXT,
"base": TEXT}, ...]}.  `ol verify` uses it to check that a chaff around the
reference (ol.grading.chaffs) gives what its pitfall's edits give, on the very
inputs the course tests use (ol.grading.chaff_equivalence reads the results).
With "variants": [{"id", "source"}, ...] and "base": TEXT instead of "pairs",
it finds each variant's witness against the base (ol.grading.witness_replay, for
ol.grading.witnesses).

Recording is transparent: the target's public functions, and the public
methods and constructors of its classes, are wrapped in place before the test
files import them; each wrapper keeps a copy of the arguments and calls the
original.  Arguments it can copy: arrays, Tensors, numbers, strings, dtypes,
tuples, lists and dicts of them, objects of the target's classes, and
dataclass objects of other modules (L7.5's attention takes L7.3's RopeSpec),
made again from their fields; a call with anything else is counted as
unrecordable and left out.

At the end of the session each recorded call runs again, on fresh copies of
its arguments, on the edit (a module made from "edit") and on the chaff (a
module made from "chaff", importing "base" as `correct`):

    both return   the values must agree: same structure, shapes and dtypes,
                  numbers within 1e-6 relative (nan where nan); a Tensor that
                  needs a gradient also gives the same gradient of each input
                  Tensor for one fixed random output gradient
    both raise    the same exception class
    one raises    not compared (the call is outside what one of them does),
                  but counted

The results file holds, per pair, {"compared", "equal", "both_raised",
"one_sided", "mismatches": [first few, described]}, and the numbers of calls
recorded and of calls whose arguments could not be copied.
"""

from __future__ import annotations

import importlib
import json
import traceback

from ol.grading.call_recording import Recorder, compare_pair
from ol.grading.witness_replay import find_witnesses


def pytest_addoption(parser) -> None:
    parser.addoption("--ol-record", default=None, metavar="SETTINGS",
                     help="record the calls to the module under test and compare two versions on them (ol verify)")


def pytest_configure(config) -> None:
    path = config.getoption("ol_record")
    if not path:
        return
    with open(path, encoding="utf-8") as file:
        settings = json.load(file)
    recorder = Recorder(importlib.import_module(settings["target"]), int(settings.get("limit", 5000)))
    recorder.install()
    config._ol_recorder = (recorder, settings)


def pytest_runtest_setup(item) -> None:
    recorder, _ = getattr(item.config, "_ol_recorder", (None, None))
    if recorder is not None:
        recorder.test = item.nodeid


def pytest_sessionfinish(session, exitstatus) -> None:
    recorder, settings = getattr(session.config, "_ol_recorder", (None, None))
    if recorder is None:
        return
    try:
        results = {"recorded": len(recorder.calls), "unrecordable": recorder.unrecordable}
        if "variants" in settings:   # ol.grading.witnesses: one call that tells each variant from the base
            results["witnesses"] = find_witnesses(recorder, settings["base"], settings["variants"],
                                                  settings.get("features", []),
                                                  package=settings.get("target", "").rpartition(".")[0])
        else:
            results["pairs"] = {pair["id"]: compare_pair(recorder, pair) for pair in settings["pairs"]}
    except Exception:  # a fault of the comparison itself: said, never a silent pass
        results = {"error": traceback.format_exc()[-4000:]}
    with open(settings["out"], "w", encoding="utf-8") as file:
        json.dump(results, file)
