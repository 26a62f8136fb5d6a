"""Every survivor's witness tells a right implementation from the broken one (issue 27, item 1).

A witness is a call a student can copy into a test.  Here it is copied as a
student would: its text evaluated as Python (np, Tensor and the module's own
names in scope) on the reference and on the mutant, each loaded afresh,
without the recorder that found it.  Every witness written out in full must
show a difference there; a witness with an argument too large to write out
(`<float32[2, 3, 5, 10]>`) cannot be copied, and these stay few.  A mutant
without a witness is possibly equivalent: counted, never hidden, and listed
by ol verify.  Then one check: each survivor in `--json` carries its
witness or `possibly_equivalent: true`, and the text report shows it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from helpers.kit import ROOT
from ol.grading.call_recording import load_module
from ol.grading.check import CheckRequest, check_module
from ol.grading.report import to_text, witness_sentence
from ol.grading.session import GradingSession
from ol.grading.witness_replay import Raised, _differs
from ol.grading.witnesses import WITNESS_FIELDS, find_witnesses
from helpers.reference import reference_modules

(tensor,) = reference_modules("tinyllm.autograd.tensor")
MODULES = ("L7.3", "L7.4", "L7.5")
NOT_WRITTEN_OUT = 0.2   # at most this share of the witnesses has an argument too large to write out


def copied(call: str, module) -> object:
    """What evaluating the witness's text gives on `module`: its result, or Raised."""
    scope = {"np": np, "Tensor": tensor.Tensor, **{name: getattr(np, name) for name in
                                                   ("float16", "float32", "float64", "int32", "int64")},
             **vars(module)}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return eval(call, scope)   # the course's own call text, as a student pastes it
        except Exception as error:
            return Raised(error)


@pytest.mark.parametrize("module_id", MODULES)
@pytest.mark.filterwarnings("ignore:finfo\\(\\) dtype cannot be None:DeprecationWarning")   # a mutant's np.finfo(None)
def test_every_witness_copied_as_a_student_would_tells_the_mutant_from_the_reference(module_id):
    session = GradingSession(ROOT, module_id)
    mutants = list(session.mutants.counted)
    witnesses = find_witnesses(session, mutants)
    assert set(witnesses) == {m.id for m in mutants}
    reference = load_module(f"replay_reference_{module_id}", session.reference.source)
    written_out = [m for m in mutants if witnesses[m.id] and "<" not in witnesses[m.id].call]
    found = [m for m in mutants if witnesses[m.id]]
    assert len(written_out) >= (1 - NOT_WRITTEN_OUT) * len(found), "most witnesses can be copied as they stand"
    assert len(found) >= 0.95 * len(mutants), "nearly every counted mutant has a witness"
    same = []
    for mutant in written_out:
        call = witnesses[mutant.id].call
        broken = load_module(f"replay_mutant_{module_id}", mutant.source)
        if not _differs(copied(call, reference), copied(call, broken)):
            same.append(f"{mutant.id}: {witnesses[mutant.id].sentence()[:300]}")
    assert same == [], same[:5]
    for witness in filter(None, witnesses.values()):
        assert witness.function.split(".")[0] in session.contract[1], f"{witness.function} is public"
        if not witness.test:   # a course test's call with one number changed: written out, replayed above
            assert "<" not in witness.call, witness.call
            continue
        # the course test that makes the call: where a student finds the arrays a long call elides
        file, _, name = witness.test.partition("::")
        assert file.startswith(f"{session.module.course_tests}/") and \
            f"def {name.split('[')[0]}(" in (ROOT / file).read_text(), witness.test


@pytest.mark.needs_confinement   # a shared check
def test_a_weak_l7_5_suite_sees_each_survivor_as_its_witness_in_json_and_text():
    result = check_module(ROOT, "L7.5", CheckRequest(tests=ROOT / "tests/grading_suites/l7-5-weak",
                                                     course_tests=False, fresh=True))
    assert not result.passed and result.survivors
    record = result.to_json()
    session = GradingSession(ROOT, "L7.5")
    by_id = {m.id: m for m in session.mutants.counted}
    reference = load_module("replay_reference_json", session.reference.source)
    for survivor in record["survivors"]:
        if survivor["possibly_equivalent"]:
            assert survivor["witness"] is None
            continue
        assert set(survivor["witness"]) == set(WITNESS_FIELDS), survivor
        if "<" not in survivor["witness"]["call"]:
            broken = load_module("replay_mutant_json", by_id[survivor["id"]].source)
            assert _differs(copied(survivor["witness"]["call"], reference),
                            copied(survivor["witness"]["call"], broken)), survivor
    text = to_text(result, max_survivors=None)
    for survivor in result.survivors:
        if survivor.witness:
            assert " ".join(witness_sentence(survivor.witness).split()) in " ".join(text.split())


def test_a_boundary_the_course_tests_never_probe_is_found_among_their_calls_neighbours():
    """YaRN's temperature is 1 for a factor <= 1, and the course tests' YaRN
    calls all have larger factors: before, the mutants `factor <= 2`,
    `2.0 if factor <= 1` and `(factor <= 1) and False` had no witness.  A
    recorded call with its factor changed (to 1.5, to 0.5) tells each of them."""
    session = GradingSession(ROOT, "L7.4")
    mutants = [m for m in session.mutants.counted if m.id.startswith("_yarn_temperature:")]
    witnesses = find_witnesses(session, mutants)
    assert mutants and all(witnesses[m.id] for m in mutants), {m.id: witnesses[m.id] for m in mutants}
    neighbours = [w for w in witnesses.values() if not w.test]
    assert len(neighbours) >= 3 and all("'factor': " in w.call and "<" not in w.call for w in neighbours), neighbours


def test_a_neighbour_keeps_its_numbers_type_or_is_not_tried():
    """A neighbour changes one number to one its type can hold: np.uint8(0)
    has no -1 (numpy raises OverflowError there, which ended the whole
    search), an IntEnum has no neighbours, a float none past its range."""
    import enum

    from ol.grading.witness_replay import _changed

    class Layout(enum.IntEnum):
        HALF = 5

    snapshot = ("tuple", [("value", np.uint8(0)), ("value", Layout.HALF), ("value", np.float32(3e38)),
                          ("value", True)])
    changed = [tuple(item[1] for item in near[1]) for near in _changed(snapshot)]
    assert changed and all(type(value) is type(original) for near in changed
                           for value, original in zip(near, (np.uint8(0), Layout.HALF, np.float32(3e38), True)))
    assert {near[0] for near in changed} == {np.uint8(0), np.uint8(1), np.uint8(2), np.uint8(3)}
    assert all(np.isfinite(near[2]) for near in changed) and {near[1] for near in changed} == {Layout.HALF}
