"""The chaffs: each pitfall as a wrapper around any correct implementation
(course/mutants/<module>/chaffs/).  Each one fails the course tests its
pitfall names, gives what the pitfall's edits give around the reference on
the course tests' inputs, and holds no line of the answer; and the
comparison that says so catches a chaff that means something else."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.kit import ROOT, copy_checkout
from ol.core.catalog import REFERENCE_TREE, load_catalog
from ol.grading.chaff_equivalence import compare_chaffs_with_edits
from ol.grading.chaffs import load_chaffs
from ol.grading.grader import Grader
from ol.grading.session import GradingSession
from ol.instructor.answer_scan import scan_folder
from ol.instructor.verify import COURSE_TESTS_TIME_LIMIT

GRADED = [m.id for m in load_catalog(ROOT).modules if m.grading and m.grading.chaffs]


def test_every_graded_module_has_a_chaff_for_each_pitfall():
    assert GRADED == ["L7.3", "L7.4", "L7.5", "L7.7"]
    for module_id in GRADED:
        session = GradingSession(ROOT, module_id)
        ids = [p.id for p in session.mutants.pitfalls]
        assert [c.id for c in load_chaffs(ROOT, session.grading, ids)] == ids
        assert [v.key for v in session.pitfall_variants()] == [f"pitfall:{i}" for i in ids]   # what is graded
        assert all(v.source != p.source for v, p in zip(session.pitfall_variants(), session.mutants.pitfalls))


@pytest.mark.slow
@pytest.mark.parametrize("module_id", GRADED)
def test_each_chaff_around_the_reference_fails_the_course_tests_its_pitfall_names(module_id):
    session = GradingSession(ROOT, module_id)
    with session.scheduler({}, workers=2) as scheduler:
        runs = Grader(session, scheduler, time_limit=COURSE_TESTS_TIME_LIMIT).course_tests_of(session.pitfall_variants())
    for pitfall in session.mutants.pitfalls:
        failed = {name.split("[")[0] for name in runs[f"pitfall:{pitfall.id}"].failed}
        assert set(pitfall.caught_by) <= failed, (pitfall.id, sorted(failed))


@pytest.mark.slow
@pytest.mark.parametrize("module_id", GRADED)
def test_each_chaff_around_the_reference_equals_its_edit_on_the_course_tests_inputs(module_id):
    comparisons = compare_chaffs_with_edits(ROOT, module_id)
    assert sorted(comparisons) == sorted(p.id for p in GradingSession(ROOT, module_id).mutants.pitfalls)
    for pid, comparison in comparisons.items():
        assert not comparison.problems, (pid, comparison.problems)
        assert comparison.compared > 100 and comparison.equal == comparison.compared + comparison.both_raised, \
            (pid, comparison)


def test_the_comparison_finds_a_chaff_that_means_another_pitfall_or_drops_a_gradient(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    chaffs = checkout / "course/mutants/L7.3/chaffs"
    (chaffs / "s02.py").write_text((chaffs / "s05.py").read_text())   # the other table's mistake
    s06 = (chaffs / "s06.py").read_text()
    forward_only = s06.replace("Tensor(x.data[..., r // 2 : r])", "x[..., r // 2 : r]").replace(
        "Tensor(x.data[..., 1:r:2])", "x[..., 1:r:2]")   # the same forward, with the gradient kept
    assert forward_only != s06
    (chaffs / "s06.py").write_text(forward_only)
    comparisons = compare_chaffs_with_edits(checkout, "L7.3")
    assert any("sin" in m or "result[1]" in m for m in comparisons["s02"].mismatches), comparisons["s02"]
    assert comparisons["s06"].mismatches and all("gradient" in m for m in comparisons["s06"].mismatches), \
        comparisons["s06"]
    for pid in ("s01", "s03", "s04", "s05", "s07"):
        assert not comparisons[pid].problems, (pid, comparisons[pid].problems)


def test_the_comparison_replays_calls_that_take_a_settings_object_or_a_dtype(tmp_path):
    # L7.5's attention takes L7.3's RopeSpec, a dataclass of another module, and
    # causal_mask a dtype: the recorder keeps both.  Were such calls left out,
    # a chaff with another pitfall's attention, or a correct causal_mask, would pass.
    checkout = copy_checkout(tmp_path / "checkout")
    chaffs = checkout / "course/mutants/L7.5/chaffs"
    (chaffs / "a04.py").write_text((chaffs / "a06.py").read_text())   # the softmax's mistake, not the heads'
    a03 = (chaffs / "a03.py").read_text().replace("causal_mask", "_shifted_mask").replace("correct._shifted_mask",
                                                                                         "correct.causal_mask")
    (chaffs / "a03.py").write_text(a03 + "\n\ndef causal_mask(n_new, n_past, dtype):\n"
                                   "    return correct.causal_mask(n_new, n_past, dtype)\n")   # attention alone shifted
    comparisons = compare_chaffs_with_edits(checkout, "L7.5")
    assert comparisons["a04"].mismatches, comparisons["a04"]
    assert all(m.startswith("attention(") and "RopeSpec(...)" in m for m in comparisons["a04"].mismatches), \
        comparisons["a04"].mismatches
    assert comparisons["a03"].mismatches, comparisons["a03"]
    assert all(m.startswith("causal_mask(") for m in comparisons["a03"].mismatches), comparisons["a03"].mismatches
    for pid in ("a01", "a02", "a05", "a06"):
        assert not comparisons[pid].problems, (pid, comparisons[pid].problems)


def test_no_chaff_holds_a_line_or_a_function_of_the_answer():
    catalog = load_catalog(ROOT)
    answers = {}
    for module_id in GRADED:
        module = catalog.get(module_id)
        for path in [f"{REFERENCE_TREE}/{module.grading.target}", *module.grading.alternates]:
            answers[path] = (ROOT / path).read_text()
    lines = {line.strip() for text in answers.values() for line in text.splitlines()}
    for module_id in GRADED:
        folder = ROOT / catalog.get(module_id).grading.chaffs
        assert not scan_folder(folder, answers), "a chaff holds a function of the answer"
        for path in sorted(folder.glob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                code = line.strip()
                if len(code) < 20 or code.startswith(("def ", "from ", "import ", "#", '"""')):
                    continue   # the contract's signatures, imports, prose
                assert code not in lines, f"{path.relative_to(ROOT)}:{number} is a line of the answer: {code}"


def test_the_scan_finds_a_reference_function_whatever_its_names(tmp_path):
    reference = (ROOT / REFERENCE_TREE / "tinyllm/modern/rope.py").read_text()
    start = reference.index("def _tables_for(")
    end = reference.index("\n\n\n", start) if "\n\n\n" in reference[start:] else len(reference)
    renamed = reference[start:end].replace("cos", "c").replace("target", "wanted").replace("largest", "big")
    (tmp_path / "notes.md").write_text("Some notes.\n\n```python\n" + renamed + "\n```\n")
    leaks = scan_folder(tmp_path, {"rope.py": reference})
    assert [(leak.path, leak.original) for leak in leaks] == [("notes.md", "_tables_for")], leaks
    (tmp_path / "notes.md").write_text("```python\ndef _tables_for(x, cos, sin, r):\n    return cos, sin\n```\n")
    assert not scan_folder(tmp_path, {"rope.py": reference}), "the same name and signature is not the answer"
    assert Path(tmp_path / "notes.md").exists()
