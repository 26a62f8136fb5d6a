"""Kit tests of ol.core.catalog: the real catalog, and the errors a broken one gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from ol.core.catalog import COURSE_TESTS_SUPPORT, CatalogError, NotGraded, UnknownModule, dotted_name, load_catalog

ROOT = Path(__file__).resolve().parents[2]

ENTRY = """
[[module]]
id = "{id}"
title = "Module {id}"
rung = "R1"
needs = {needs}
files = ["pkg/{stem}.py"]
chapter = "course/chapters/{id}.md"
course_tests = "course/tests/{id}"
student_tests = "python/tests/{stem}"
fixtures = []
"""


def write_catalog(root: Path, text: str) -> Path:
    (root / "course").mkdir(parents=True, exist_ok=True)
    (root / "course/catalog.toml").write_text(text)
    return root


def entry(module_id: str, needs=(), stem=None) -> str:
    needs_toml = "[" + ", ".join(f'"{n}"' for n in needs) + "]"
    return ENTRY.format(id=module_id, needs=needs_toml, stem=stem or module_id.lower().replace(".", "_"))


# ---- the real catalog ------------------------------------------------------------------


def test_the_course_catalog_loads_without_warnings():
    catalog = load_catalog(ROOT)
    assert catalog.warnings == ()
    assert catalog.ids[:4] == ("L0.1", "L0.2", "M00.2", "L7.3")


def test_l7_3_entry():
    catalog = load_catalog(ROOT)
    rope = catalog.get("L7.3")
    assert rope.rung == "R5"
    assert rope.files == ("tinyllm/modern/rope.py",)
    assert rope.student_tests == "python/tests/l7-3-rope"
    assert rope.contracts == ("course/contracts/py/tinyllm/modern/rope.pyi",)
    assert rope.module_names == {"tinyllm.modern.rope": "tinyllm/modern/rope.py"}
    assert rope.starter_test_name == "test_rope_oracle.py"
    assert rope.grading is not None and rope.grading.threshold == 0.80
    assert "tinyllm.modern.rope" in rope.grading.allowed_imports
    closure = [m.id for m in catalog.needs_closure(rope)]
    assert sorted(closure) == ["L0.1", "L0.2", "M00.2"]
    assert closure.index("L0.1") < closure.index("L0.2"), "a need comes before what needs it"


def test_l7_4_entry():
    catalog = load_catalog(ROOT)
    scaling = catalog.get("L7.4")
    assert scaling.rung == "R5" and scaling.needs == ("L7.3",)
    assert scaling.module_names == {"tinyllm.modern.rope_scaling": "tinyllm/modern/rope_scaling.py"}
    assert scaling.contracts == ("course/contracts/py/tinyllm/modern/rope_scaling.pyi",)
    assert scaling.student_tests == "python/tests/l7-4-rope-scaling"
    assert scaling.starter_test_name == "test_rope_scaling_oracle.py"
    grading = scaling.grading
    assert grading is not None and grading.threshold == 0.80 and grading.target == "tinyllm/modern/rope_scaling.py"
    assert "tinyllm.modern.rope_scaling" in grading.allowed_imports
    assert not any(name.startswith("tinyllm.") and name != "tinyllm.modern.rope_scaling"
                   for name in grading.allowed_imports), "graded tests judge rope_scaling alone"
    assert [m.id for m in catalog.needs_closure(scaling)][-1] == "L7.3"


def test_every_module_has_its_contract_reference_and_course_tests():
    catalog = load_catalog(ROOT)
    for module in catalog.modules:
        for file in module.files:
            assert (ROOT / module.contract_for(file)).exists(), f"{module.id}: no contract for {file}"
            assert (ROOT / "course/reference/python" / file).exists(), f"{module.id}: no reference {file}"
        assert (ROOT / module.course_tests).is_dir(), f"{module.id}: no course tests"


def test_the_course_tests_support_is_every_file_beside_the_modules_folders():
    """The grader's sandboxes and the student kit both take COURSE_TESTS_SUPPORT
    with every module's course tests: a helper added beside them and not
    listed would be missing from both."""
    beside = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "course/tests").iterdir() if p.is_file())
    assert beside == sorted(COURSE_TESTS_SUPPORT)


def test_get_is_forgiving_about_case_and_strict_about_unknown_ids():
    catalog = load_catalog(ROOT)
    assert catalog.get("l7.3").id == "L7.3"
    with pytest.raises(UnknownModule) as caught:
        catalog.get("L7.99")
    assert isinstance(caught.value, ValueError)
    assert all(i in str(caught.value) for i in ("L7.99", "L0.1", "L0.2", "M00.2", "L7.3", "L7.4"))


def test_graded_gives_the_grading_or_says_which_modules_have_one():
    catalog = load_catalog(ROOT)
    assert catalog.graded("l7.3", "ol grade") is catalog.get("L7.3").grading
    with pytest.raises(NotGraded) as caught:
        catalog.graded("L0.1", "ol grade")
    graded = [m.id for m in catalog.modules if m.grading]
    assert graded and "L0.1" not in graded
    assert str(caught.value).startswith("L0.1 has no graded tests: ol grade grades ")
    assert f"({', '.join(graded)})" in str(caught.value) and "./ol tests L0.1" in str(caught.value)


def test_dotted_name():
    assert dotted_name("tinyllm/modern/rope.py") == "tinyllm.modern.rope"
    assert dotted_name("tinyllm/native/__init__.py") == "tinyllm.native"


# ---- validation -------------------------------------------------------------------------


def test_needs_closure_is_transitive_and_ordered(tmp_path):
    root = write_catalog(tmp_path, entry("A") + entry("B", ["A"]) + entry("C", ["B"]) + entry("D", ["C", "A"]))
    catalog = load_catalog(root)
    assert [m.id for m in catalog.needs_closure("D")] == ["A", "B", "C"]
    assert catalog.needs_closure("A") == ()


@pytest.mark.parametrize("text, expected", [
    (entry("A").replace('rung = "R1"\n', ""), ["module 'A'", "missing key(s) rung"]),
    (entry("A") + entry("A", stem="other"), ["'A' is listed twice"]),
    (entry("A", ["Z"]), ["module 'A'", "needs 'Z'", "known modules: A"]),
    (entry("A", ["B"]) + entry("B", ["A"]), ["cycle", "A -> B -> A"]),
    (entry("A", ["A"]), ["needs itself"]),
    (entry("A").replace('files = ["pkg/a.py"]', "files = []"), ["'files' is empty"]),
    (entry("A").replace('files = ["pkg/a.py"]', 'files = "pkg/a.py"'), ["'files' must be a list"]),
    (entry("A").replace('chapter = "course/chapters/A.md"', 'chapter = "../outside.md"'), ["must be relative"]),
    (entry("A") + "[module.grading]\nthreshold = 1.5\n", ["[module.grading]", "missing key(s)"]),
    ("title = 'no modules'\n", ["lists no modules"]),
    ("[[module]\n", ["not valid TOML"]),
])
def test_broken_catalogs_name_the_entry_and_the_problem(tmp_path, text, expected):
    root = write_catalog(tmp_path, text)
    with pytest.raises(CatalogError) as caught:
        load_catalog(root)
    for part in expected:
        assert part in str(caught.value), f"{part!r} not in: {caught.value}"


def test_grading_threshold_must_be_a_share(tmp_path):
    grading = ("[module.grading]\nthreshold = 80\ntarget = 'pkg/a.py'\npitfalls = 'p'\nequivalent = 'e'\n"
               "alternates = []\nmodel_answer = 'm'\nallowed_imports = ['numpy']\n")
    with pytest.raises(CatalogError, match="threshold must be a number from 0 to 1"):
        load_catalog(write_catalog(tmp_path, entry("A") + grading))


def test_unknown_keys_warn_but_do_not_stop_the_course(tmp_path):
    root = write_catalog(tmp_path, entry("A").replace("fixtures = []", "fixtures = []\nlanguage = 'c'"))
    catalog = load_catalog(root)
    assert catalog.ids == ("A",)
    assert len(catalog.warnings) == 1 and "'language'" in catalog.warnings[0] and "module 'A'" in catalog.warnings[0]


def test_missing_catalog_says_where_it_looked(tmp_path):
    with pytest.raises(CatalogError, match="no course catalog at .*tinyllm checkout"):
        load_catalog(tmp_path)


def test_explicit_contracts_pair_with_files(tmp_path):
    text = entry("A").replace('files = ["pkg/a.py"]', 'files = ["pkg/k.c"]\ncontracts = ["course/contracts/c/k.h"]')
    module = load_catalog(write_catalog(tmp_path, text)).get("A")
    assert module.contract_for("pkg/k.c") == "course/contracts/c/k.h"
    assert module.module_names == {}
