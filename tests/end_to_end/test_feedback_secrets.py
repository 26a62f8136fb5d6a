"""No line of a secret reference reaches a student (issue 27, item 4).

Where the reference is secret (ol grade, the Gradescope autograder), what
is handed back (<student>.md, <student>.html, Gradescope's results.json)
shows no line of the assessed module's reference or alternates.  Before,
every <student>.html held the whole reference as its annotated source and
the diffs of its surviving mutants, and each .md and Gradescope entry held
those diffs: a class could assemble the answer key.

A line is secret when it is one of the reference's or an alternate's lines
(stripped of its indentation, at least MIN_CHARS long) that appears in no
public file of the module (its contract, chapter, starter and course tests)
and in none of the student's own files.  The student here hands in the
module's alternate as their code (so that the reference's lines are not
their own), or for L7.3 the reference (so that the alternate's are not),
with a weak suite (so that many mutants survive).  The page is read as its
reader sees it (entities undone) and its JSON data string by string.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys

import pytest

from helpers.kit import ROOT, explain, run_ol, sampled_home
from ol.core.catalog import STUDENT_TREE, load_catalog

CATALOG = load_catalog(ROOT)
MIN_CHARS = 20
WEAK = {"L7.3": "tests/grading_suites/shapes-and-errors", "L7.4": "tests/grading_suites/l7-4-hand-example",
        "L7.5": "tests/grading_suites/l7-5-weak"}


def lines_of(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if len(line.strip()) >= MIN_CHARS}


def public_lines(module) -> set[str]:
    paths = [ROOT / module.chapter, ROOT / f"course/starters/{module.id}.py"]
    paths += [ROOT / (module.contract_for(f) or f"course/contracts/py/{f}i") for f in module.files]
    paths += [p for p in (ROOT / module.course_tests).rglob("*.py")]
    return set().union(*(lines_of(p.read_text(encoding="utf-8")) for p in paths if p.is_file()))


def page_text(page: str) -> str:
    """An HTML page as a reader sees it (entities undone), and every string of its JSON data."""
    data = re.search(r'<script type="application/json" id="ol-check-data">(.*?)</script>', page, re.S)
    strings = strings_in(json.loads(data.group(1).replace("<\\/", "</"))) if data else []
    return html.unescape(page) + "\n" + "\n".join(strings)


def strings_in(value) -> list[str]:
    """Every string of a JSON value, so that escapes do not hide a line."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


@pytest.mark.needs_confinement
@pytest.mark.parametrize("module_id, hands_in", [(m, "alternate") for m in sorted(WEAK)] + [("L7.3", "reference")])
def test_no_line_of_the_reference_reaches_a_student(module_id, hands_in, tmp_path):
    from ol.instructor.class_grading.checkout import catalog_pitfalls
    from ol.instructor.class_grading.gradescope import results_json
    from ol.instructor.class_grading.one import GradeRecord
    from ol.instructor.class_grading.outcome import read_outcome

    module = CATALOG.get(module_id)
    grading = module.grading
    own = (ROOT / (grading.alternates[0] if hands_in == "alternate" else f"course/reference/python/{grading.target}")
           ).read_text(encoding="utf-8")
    student = tmp_path / "class" / "sam"
    (student / STUDENT_TREE / grading.target).parent.mkdir(parents=True)
    (student / STUDENT_TREE / grading.target).write_text(own)
    tests = student / module.student_tests
    tests.mkdir(parents=True)
    for path in (ROOT / WEAK[module_id]).glob("*.py"):
        (tests / path.name).write_text(path.read_text(encoding="utf-8"))
    env = dict(os.environ, HOME=str(sampled_home(tmp_path / "home", every=5, module=module_id)),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    env.pop("XDG_CACHE_HOME", None)
    r = run_ol(ROOT, "grade", module_id, "class", "--out", "graded", "--feedback", "full", "--time-limit", "20",
               cwd=tmp_path, env=env, timeout=1200)
    assert r.returncode == 0, explain(r)
    out = tmp_path / "graded"
    record = GradeRecord.from_json(json.loads((out / "sam.json").read_text()))
    outcome = read_outcome(record, grading.points, catalog_pitfalls(ROOT, module))
    assert outcome.survivors, "a weak suite leaves survivors: their diffs are what could leak"

    secret = set()
    for path in [f"{'course/reference/python'}/{grading.target}", *grading.alternates]:
        secret |= lines_of((ROOT / path).read_text(encoding="utf-8"))
    secret -= public_lines(module) | lines_of(own) | lines_of("".join(
        p.read_text(encoding="utf-8") for p in tests.glob("*.py")))
    assert len(secret) > 20, "the reference has lines of its own to find"
    handed_back = {"sam.md": (out / "sam.md").read_text(), "sam.html": page_text((out / "sam.html").read_text()),
                   "results.json": "\n".join(strings_in(results_json(outcome, grading.points, "full")))}
    found = {name: sorted(line for line in secret if line in text) for name, text in handed_back.items()}
    assert not any(found.values()), {name: lines[:5] for name, lines in found.items() if lines}

    # What is handed back instead: each survivor as its witness, under a function the student wrote
    assert any(s.witness for s in outcome.survivors), "the survivors have witnesses"
    for name, text in handed_back.items():
        assert "a right implementation" in text, f"{name} shows no survivor's witness"
    contract = (ROOT / (module.contract_for(grading.target) or f"course/contracts/py/{grading.target}i")).read_text()
    groups = re.findall(r"^- `([\w.]+)`: \d+", handed_back["sam.md"], re.M)
    assert groups and all(not g.startswith("_") and re.search(rf"\b(def|class) {g.split('.')[0]}\b", contract)
                          for g in groups), groups
