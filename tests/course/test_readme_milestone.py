"""The README's table of the modules a milestone runs is the catalog's.

For every [[milestone]] of course/catalog.toml the README holds, between
its two markers, exactly what ol.student.milestone.module_table writes from the
catalog: every module the run imports (modules_of: the needs and what they
need), so that a module added to a milestone's needs, or a title changed,
shows up here until the README says it.  Each module the table names has
the chapter, the contract and the course tests the sentence above the
table promises.
"""

from __future__ import annotations

import re

import pytest

from helpers.kit import ROOT
from ol.core.catalog import load_catalog
from ol.student.milestone import load_milestones, module_table, modules_of

CATALOG = load_catalog(ROOT)
MILESTONES = load_milestones(ROOT)
README = (ROOT / "README.md").read_text(encoding="utf-8")


def table_in_readme(milestone_id: str) -> str | None:
    """The text between the README's markers for `milestone_id` (None: no markers)."""
    found = re.search(rf"<!-- modules of {re.escape(milestone_id)}:[^\n]*-->\n\n(.*?)\n<!-- end of the modules of "
                      rf"{re.escape(milestone_id)} -->", README, re.DOTALL)
    return found.group(1) if found else None


@pytest.mark.parametrize("milestone_id", sorted(MILESTONES))
def test_the_readme_table_is_the_catalogs(milestone_id):
    milestone = MILESTONES[milestone_id]
    expected = module_table(ROOT, CATALOG, milestone)
    shown = table_in_readme(milestone_id)
    assert shown is not None, (f"README.md has no table of the modules {milestone_id} runs; put this between "
                               f"'<!-- modules of {milestone_id}: ... -->' and '<!-- end of the modules of "
                               f"{milestone_id} -->':\n\n{expected}")
    assert shown == expected, f"README.md's table of {milestone_id} is not the catalog's; it should read:\n\n{expected}"


def test_the_table_names_every_module_the_run_imports():
    """The table is the catalog's, and it is complete: L7.4 (which L7.9 needs) is in it, and every module
    the table names has what the sentence above it promises."""
    milestone = MILESTONES["MS-L7"]
    rows = re.findall(r"^\| (\S+) \| `", module_table(ROOT, CATALOG, milestone), re.MULTILINE)
    assert rows == [m.id for m in modules_of(CATALOG, milestone)]
    assert {"L7.3", "L7.4", "L0.3", "L7.5", "L7.9", "L8.2"} <= set(rows)
    for module in modules_of(CATALOG, milestone):
        assert (ROOT / module.chapter).is_file(), module.chapter
        assert (ROOT / module.course_tests).is_dir(), module.course_tests
        assert all(module.contract_for(f) and (ROOT / module.contract_for(f)).is_file() for f in module.files), module.id
