"""Kit test of ol/__init__.py: its map names every module and folder of the
package, once, and nothing else (as tests/test_grading_architecture.py holds
the grader's map)."""

from __future__ import annotations

import ast
import re

from kit import ROOT

PACKAGE = ROOT / "python" / "ol"
ENTRY = re.compile(r"^    ([a-z_]+(?:\.py|/))\s{2,}\S", re.M)


def test_the_package_map_lists_every_module_and_folder_of_ol_and_no_other():
    listed = ENTRY.findall(ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())))
    assert len(listed) == len(set(listed)), f"listed twice: {sorted(n for n in listed if listed.count(n) > 1)}"
    present = {p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"} | \
              {p.name + "/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert set(listed) == present, (f"in ol/ but not on the map: {sorted(present - set(listed))}; "
                                    f"on the map but not in ol/: {sorted(set(listed) - present)}")
