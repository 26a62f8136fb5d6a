"""Kit tests of the floor per public function (ol.grading.floors): a suite
that leaves a function of the contract untested does not pass, whatever its
score, and every report says which function and by how much."""

from __future__ import annotations

import json
import math

import pytest

from helpers.kit import ROOT
from ol.core.catalog import CatalogError, load_catalog
from ol.grading.check import CheckRequest, check_module
from ol.grading.floors import Floor, function_floors, public_names
from ol.grading.html_report import to_html
from ol.grading.report import to_json, to_text
from ol.grading.session import GradingSession

ORACLE_ONLY = ROOT / "tests" / "grading_suites" / "l7-4-oracle-only"


def test_every_graded_module_has_a_floor_for_each_public_function_of_its_contract():
    for module in load_catalog(ROOT).modules:
        if module.grading is None:
            continue
        contract = (ROOT / module.contract_for(module.grading.target)).read_text()
        assert sorted(module.grading.floors) == sorted(public_names(contract)), (
            f"{module.id}: floors {module.grading.floors} must name each public function and class of the contract")
        assert all(0 < share <= 1 for share in module.grading.floors.values()), module.grading.floors


@pytest.mark.parametrize("floors", ["{ rope_spec = 1.5 }", "{ _yarn = 0.5 }", "{ rope_spec = true }", "0.5",
                                    '{ "not a name" = 0.5 }'])
def test_a_floor_is_a_share_for_a_public_name(tmp_path, floors):
    (tmp_path / "course").mkdir()
    (tmp_path / "course/catalog.toml").write_text(
        '[[module]]\nid = "A"\ntitle = "A"\nrung = "R1"\nneeds = []\nfiles = ["pkg/a.py"]\nchapter = "c.md"\n'
        'course_tests = "t"\nstudent_tests = "s"\nfixtures = []\n[module.grading]\nthreshold = 0.8\n'
        "target = 'pkg/a.py'\npitfalls = 'p'\nequivalent = 'e'\nalternates = []\nmodel_answer = 'm'\n"
        f"allowed_imports = []\nfloors = {floors}\n")
    with pytest.raises(CatalogError, match="floors must be a table of public function names"):
        load_catalog(tmp_path)


def test_a_floor_counts_the_mutants_of_its_function_and_its_methods_only():
    mutants = [{"function": f, "killed": k} for f, k in [("RopeSpec.apply", True), ("RopeSpec", False),
                                                          ("RopeSpec.__post_init__", True), ("_tables_for", False),
                                                          ("apply_rope", False), ("<module>", True)]]
    floors = function_floors({"RopeSpec": 0.5, "apply_rope": 0.5, "rope_cos_sin": 0.5}, mutants)
    assert floors == [Floor("RopeSpec", 0.5, 2, 3), Floor("apply_rope", 0.5, 0, 1), Floor("rope_cos_sin", 0.5, 0, 0)]
    assert [(f.needed, f.met) for f in floors] == [(2, True), (1, False), (0, True)]
    with pytest.raises(Exception, match="_tables_for, which the contract does not define"):
        function_floors({"_tables_for": 0.5}, mutants, ("rope.pyi", "def apply_rope(x): ...\nclass RopeSpec: ...\n"))


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_suite_that_never_calls_rope_spec_fails_l7_4_on_its_floor():
    """Issue 19: oracle comparisons of rope_parameters only, no rope_spec test.
    Its score and pitfalls pass (0.83 before floors existed); the floor fails it."""
    session = GradingSession(ROOT, "L7.4")
    result = check_module(ROOT, "L7.4", CheckRequest(tests=ORACLE_ONLY, course_tests=False, fresh=True),
                          session=session)
    assert result.reason is None, result.problems
    assert result.score >= result.threshold and all(p.killed for p in result.pitfalls), (
        f"without its floor the suite would pass: score {result.score:.3f}, "
        f"missed {[p.id for p in result.pitfalls if not p.killed]}")
    assert result.passed is False
    counted = sum(m.function.split(".")[0] == "rope_spec" for m in session.mutants.counted)   # from the mutant set
    said = f"rope_spec: 0 of {counted} caught (at least {math.ceil(counted / 2)} needed)"
    assert counted > 0
    floors = {f["function"]: f for f in result.floors}
    assert floors["rope_spec"]["met"] is False and floors["rope_parameters"]["met"] is True, result.floors

    text = to_text(result)
    assert f"BELOW   {said}" in text and f"catch at least {math.ceil(counted / 2)} more of rope_spec's mutants" in text
    data = json.loads(to_json(result))
    assert data["passed"] is False and data["floors"] == result.floors
    assert said in to_html(result, (ROOT / "course/reference/python/tinyllm/modern/rope_scaling.py").read_text(), "x")

    from ol.instructor.class_grading.feedback import markdown
    from ol.instructor.class_grading.gradescope import results_json
    from ol.instructor.class_grading.one import GradeRecord
    from ol.instructor.class_grading.outcome import NOT_PASSED, read_outcome

    points = load_catalog(ROOT).get("L7.4").grading.points
    outcome = read_outcome(GradeRecord.from_json({**data, "student": "ann", "names": {}}), points, [])
    assert outcome.status == NOT_PASSED and outcome.reason.startswith(f"below a function's floor: {said}"), \
        outcome.reason   # and, since the chapter's features (ol.grading.features), linear scaling's floor too
    assert said in markdown(outcome, points, "full")
    gradescope = results_json(outcome, points, "full")
    assert said in gradescope["output"] and said in gradescope["tests"][1]["output"]
