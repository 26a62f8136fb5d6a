"""Kit tests of the floor per feature of the chapter (ol.grading.features,
issue 27 item 3): a counted mutant belongs to the feature its witness's
call exercises, and a suite that leaves a feature untested does not pass,
whatever its score.  The must-show case: a suite that never calls L7.5's
attention with a cache (tests/grading_suites/l7-5-no-cache) catches every
pitfall and scores above the threshold, and does not pass."""

from __future__ import annotations

import pytest

from helpers.kit import ROOT
from ol.core.catalog import CatalogError, load_catalog
from ol.grading.check import CheckRequest, MutantLine, check_module
from ol.grading.features import feature_floors, feature_line
from ol.grading.report import to_text
from ol.grading.session import GradingSession
from ol.grading.witnesses import find_witnesses

NO_CACHE = ROOT / "tests" / "grading_suites" / "l7-5-no-cache"
CATALOG = load_catalog(ROOT)


@pytest.mark.slow
def test_every_graded_module_names_its_features_and_each_has_mutants():
    """A feature with no mutant would be a floor nothing can miss: each has some, from the witnesses."""
    for module in CATALOG.modules:
        if module.grading is None:
            continue
        assert module.grading.features, f"{module.id} names no feature of its chapter"
        session = GradingSession(ROOT, module.id)
        witnesses = find_witnesses(session, list(session.mutants.counted))
        found = {w.feature for w in witnesses.values() if w}
        assert [f.id for f in module.grading.features if f.id not in found] == [], module.id


def test_the_l7_5_cache_mutants_are_the_ones_only_a_call_with_past_shows():
    session = GradingSession(ROOT, "L7.5")
    witnesses = find_witnesses(session, list(session.mutants.counted))
    cache = [w for w in witnesses.values() if w and w.feature == "kv-cache"]
    assert len(cache) >= 10 and all("past=" in w.call and "past=None" not in w.call for w in cache)
    assert all(w.feature != "kv-cache" for w in witnesses.values() if w and "past=" not in w.call)


def test_a_feature_counts_its_own_mutants_against_its_floor():
    features = CATALOG.get("L7.5").grading.features
    mutants = [MutantLine(f"m{n}", "attention", 1, killed, feature=feature)
               for n, (feature, killed) in enumerate([("kv-cache", True), ("kv-cache", False), ("kv-cache", False),
                                                      ("causal-mask", True), ("", False)])]
    entries = {e["id"]: e for e in feature_floors(features, mutants)}
    assert (entries["kv-cache"]["caught"], entries["kv-cache"]["counted"], entries["kv-cache"]["needed"],
            entries["kv-cache"]["met"]) == (1, 3, 2, False)
    assert entries["causal-mask"]["met"] and entries["validation"]["counted"] == 0 and entries["validation"]["met"]
    assert feature_line(entries["kv-cache"]).endswith(": 1 of 3 caught (at least 2 needed)")


@pytest.mark.parametrize("entry, said", [
    ('id = "a"\ntitle = "A"\nfloor = 1.5', "floor must be a share"),
    ('id = "a"\ntitle = "A"\nfloor = 0.5\nwhen = "past is"', "when is not a Python expression"),
    ('id = "a"\ntitle = "A"\nfloor = 0.5\nraises = "yes"', "raises and gradient must be true or false"),
    ('id = "a"\ntitle = "A"\nfloor = 0.5\ncalls = [1]', "calls must be a function name"),
    ('title = "A"\nfloor = 0.5', "missing key"),
])
def test_a_bad_feature_is_named_with_what_was_expected(tmp_path, entry, said):
    (tmp_path / "course").mkdir()
    (tmp_path / "course/catalog.toml").write_text(
        '[[module]]\nid = "A"\ntitle = "A"\nrung = "R1"\nneeds = []\nfiles = ["pkg/a.py"]\nchapter = "c.md"\n'
        'course_tests = "t"\nstudent_tests = "s"\nfixtures = []\n[module.grading]\nthreshold = 0.8\n'
        "target = 'pkg/a.py'\npitfalls = 'p'\nequivalent = 'e'\nalternates = []\nmodel_answer = 'm'\n"
        f"allowed_imports = []\n[[module.grading.features]]\n{entry}\n")
    with pytest.raises(CatalogError, match=said):
        load_catalog(tmp_path)


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_suite_that_never_calls_attention_with_past_does_not_pass_l7_5():
    result = check_module(ROOT, "L7.5", CheckRequest(tests=NO_CACHE, course_tests=False, fresh=True))
    assert result.reason is None and all(p.killed for p in result.pitfalls)
    assert result.score >= result.threshold, "the score alone would pass it"
    cache = next(f for f in result.features if f["id"] == "kv-cache")
    assert not cache["met"] and not result.passed, result.features
    text = to_text(result)
    assert f"BELOW   {feature_line(cache)}" in text
    assert "a call that would catch one: attention(" in text and "past=" in text.split("a call that would catch one")[1]
    assert 'more mutants of the feature "the key/value cache' in text
