"""`ol verify` on every module of the course, and that it reports a module
whose pieces have drifted apart."""

from __future__ import annotations

import re

import pytest

from helpers.kit import ROOT, copy_checkout, explain, run_ol
from ol.core.catalog import load_catalog

pytestmark = pytest.mark.slow   # every test here runs ol verify: minutes each

PITFALLS = "course/mutants/L7.3/pitfalls.toml"
EQUIVALENT = "course/mutants/L7.3/equivalent.toml"
WARNINGS = "course/mutants/L7.4/misconceptions.toml"


def test_every_module_of_the_course_is_sound(tmp_path):
    r = run_ol(ROOT, "verify", cwd=tmp_path, timeout=1200)
    assert r.returncode == 0, explain(r)
    modules = load_catalog(ROOT).modules
    for number, module in enumerate(modules, start=1):
        assert f"ol verify {module.id}: sound" in r.stdout, explain(r)
        assert re.search(rf"^ol verify {re.escape(module.id)} \({number}/{len(modules)}, \d+ s\): ", r.stderr, re.M), \
            "each stage is shown as it starts"
    assert re.search(r"^ol verify L7\.3 \(\d+/\d+, \d+ s\): the model answer graded against \d+ mutants", r.stderr,
                     re.M), r.stderr
    lines = r.stdout.splitlines()
    pitfalls = ("s01", "s02", "s03", "s04", "s05", "s06", "s07",               # L7.3
                "p01", "p02", "p03", "p04", "p05", "p06", "p07", "p08",       # L7.4
                "a01", "a02", "a03", "a04", "a05", "a06",                     # L7.5
                "w01", "w02", "w03", "w04", "w05")                            # L7.7
    for pitfall in pitfalls:
        assert any(re.match(rf"\s+ok\s+pitfall {pitfall} fails test_", line) for line in lines), explain(r)
    for warning in ("m07", "m08", "m09", "m10", "m11", "m12"):  # L7.4's chapter warnings (issue 19)
        assert any(re.match(rf"\s+ok\s+misconception {warning} \(a warning of chapter section \d+\) fails test_", line)
                   for line in lines), explain(r)
    graded = [m for m in load_catalog(ROOT).modules if m.grading]
    assert [m.id for m in graded if m.grading.chaffs is None] == [], "every graded module's pitfalls have chaffs"
    for pitfall in pitfalls:
        assert any(re.match(rf"\s+ok\s+chaff {pitfall} fails test_", line) for line in lines), explain(r)
        assert any(re.match(rf"\s+ok\s+chaff {pitfall} around the reference equals its edit", line)
                   for line in lines), explain(r)
    assert r.stdout.count("the model answer scores 1.00") == len(graded) == 4, explain(r)
    assert len(re.findall(r"ok\s+\d+ of the \d+ counted mutants have a witness", r.stdout)) == 4, explain(r)


def edit(checkout, path: str, old: str, new: str):
    file = checkout / path
    text = file.read_text()
    assert old in text, f"{path} no longer holds {old!r}: update this test"
    file.write_text(text.replace(old, new, 1))


def test_verify_reports_a_pitfall_that_misses_its_test_and_an_equivalent_entry_no_longer_generated(tmp_path):
    """Two drifts of L7.3 in one checkout (one ol verify run): each is reported, neither hides the other."""
    checkout = copy_checkout(tmp_path / "checkout")
    edit(checkout, PITFALLS, 'caught_by = ["test_partial_rotary_golden"]', 'caught_by = ["test_hand_example"]')
    file = checkout / EQUIVALENT
    file.write_text(file.read_text() + '\n[[equivalent]]\nid = "apply_rope:0000000000"\n'
                    'function = "apply_rope"\nreason = "a mutant of a reference that has since changed"\n')
    r = run_ol(checkout, "verify", "L7.3", cwd=tmp_path, timeout=1200)
    assert r.returncode == 1 and "ol verify L7.3: PROBLEMS" in r.stdout, explain(r)
    assert "pitfall s03 is NOT caught by test_hand_example" in r.stdout, explain(r)
    assert "apply_rope:0000000000" in r.stdout and "no longer generated" in r.stdout, explain(r)


def test_verify_reports_a_chapter_warning_that_misses_the_test_it_names(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    # m09, float32 steps, is caught by test_computed_in_float64 alone
    edit(checkout, WARNINGS, 'caught_by = ["test_computed_in_float64"]', 'caught_by = ["test_hand_example"]')
    r = run_ol(checkout, "verify", "L7.4", cwd=tmp_path, timeout=1200)
    assert r.returncode == 1 and "ol verify L7.4: PROBLEMS" in r.stdout, explain(r)
    assert ("misconception m09 (a warning of chapter section 3) is NOT caught by test_hand_example (it fails: "
            "test_computed_in_float64)") in r.stdout, explain(r)


def test_verify_reports_a_pitfall_edit_that_no_longer_applies(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    interleaved = "rot.shape)  # a_0, b_0, a_1, b_1, ..."  # in the old text of s07's edit only
    edit(checkout, PITFALLS, interleaved, interleaved.replace("a_0, b_0", "a0, b0"))
    r = run_ol(checkout, "verify", "L7.3", cwd=tmp_path, timeout=1200)
    assert r.returncode == 1, explain(r)
    assert "pitfall s07" in r.stdout and "occurs 0 times" in r.stdout, explain(r)
    assert "the model answer is not graded until every pitfall applies" in r.stdout, explain(r)
