"""One hostile submission never costs the class (issue 29): what a run says
is untrusted text, and every writer of it (the terminal, grades.csv,
summary.md, each student's .md and .html) takes any string.

The class is graded against a sample of the mutants (kit.sampled_home): what
is tested here is where the text goes, not the mutants.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import shutil
import sys

import pytest

from helpers.kit import ROOT, explain, run_ol, sampled_home
from ol.core.files import write_whole
from ol.core.test_folder import TestFolder
from ol.grading.protocol import parse_note_line
from ol.grading.session import GradingSession
from ol.grading.static_check import NESTED_TOO_DEEPLY, check_test_folder
from ol.grading.suite_code import SuiteDigests
from helpers.classes import MODEL_ANSWER, REFERENCE_ROPE, ROPE, TESTS, suite_files, write_folder

# A test that fails on every correct implementation (so it is left out and the rest graded) with a
# message holding a lone surrogate: pytest's report of it reaches the observer as JSON, whose
# \udcff escape Python decodes to a str that UTF-8 cannot encode.
SAYS_A_SURROGATE = b'def test_says_a_lone_surrogate():\n    assert False, "\\udcff is what I say"\n'


def test_a_lone_surrogate_in_a_note_reads_as_a_replacement_character(tmp_path):
    line = parse_note_line(b'{"failed": "t.py::test_\\udcff", "collected": ["a\\udcff"]}')
    assert line == {"failed": "t.py::test_\ufffd", "collected": ["a\ufffd"]}, line
    write_whole(tmp_path / "said.md", "a lone \udcff surrogate")      # a writer given one anyway
    assert (tmp_path / "said.md").read_bytes() == b"a lone ? surrogate"


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_lone_surrogate_in_a_failure_message_costs_the_class_nothing(tmp_path):
    """Before: ol grade ended with a UnicodeEncodeError while writing the
    .md of the student whose left-out test said a lone surrogate, with no
    grades.csv and no summary.md, on every rerun."""
    submissions = tmp_path / "submissions"
    files = {ROPE: REFERENCE_ROPE.read_bytes(), **suite_files(MODEL_ANSWER)}
    write_folder(submissions / "amy", files)
    write_folder(submissions / "zed", {**files, f"{TESTS}/test_says.py": SAYS_A_SURROGATE})
    env = dict(os.environ, HOME=str(sampled_home(tmp_path / "home")),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    env.pop("XDG_CACHE_HOME", None)
    r = run_ol(ROOT, "grade", "L7.3", "submissions", "--out", "graded", "--time-limit", "8", "--feedback", "full",
               cwd=tmp_path, env=env, timeout=900)
    assert r.returncode == 0, explain(r)
    with open(tmp_path / "graded" / "grades.csv", newline="") as f:
        table = {row["student"]: row for row in csv.DictReader(f)}
    assert table["amy"]["status"] == table["zed"]["status"] == "passed", table
    said = (tmp_path / "graded" / "zed.md").read_text(encoding="utf-8")
    assert "test_says_a_lone_surrogate" in said and "\ufffd is what I say" in said, said[-2000:]
    assert (tmp_path / "graded" / "zed.html").is_file() and (tmp_path / "graded" / "summary.md").is_file()


# ---- nesting no reader of source survives --------------------------------------------------


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_a_file_nested_past_what_python_compiles_is_named_not_a_fault(tmp_path, depth):
    """1,000 levels parse but do not compile (nor survive pytest's assert
    rewrite); 100,000 do not parse.  Before, the static check's recursive
    NodeVisitor raised RecursionError out of the grader."""
    (tmp_path / "test_deep.py").write_text("def test_deep():\n    x = 1" + " + 1" * depth + "\n    assert x\n")
    (tmp_path / "test_fine.py").write_text("def test_fine():\n    assert 1\n")
    violations = check_test_folder(TestFolder(tmp_path).snapshot(), tmp_path, ("numpy",), {})
    assert [(v.path, v.message) for v in violations] == [("test_deep.py", NESTED_TOO_DEEPLY)], violations


# ---- line ends as Python counts them -------------------------------------------------------

# Every character str.splitlines breaks at that Python source may hold inside a line.
NOT_LINE_ENDS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def weakened(suite: str) -> str:
    """The suite with its asserts made to check nothing."""
    return suite.replace(" assert ", " assert True or ").replace("np.testing.assert_allclose(", "(lambda *a, **k: 0)(")


def test_a_tests_digest_follows_its_body_past_any_separator(tmp_path):
    """A line of separators above the tests: str.splitlines would shift every
    later line, and a test's digest would cover other text than its own."""
    text = "# " + NOT_LINE_ENDS * 40 + "\n\n\ndef test_one():\n    assert 1 == 1\n\n\ndef test_two():\n    assert 2\n"
    (tmp_path / "test_sep.py").write_text(text, encoding="utf-8")
    before = SuiteDigests(TestFolder(tmp_path).snapshot(), "t").of("t/test_sep.py::test_one")
    (tmp_path / "test_sep.py").write_text(text.replace("assert 1 == 1", "pass"), encoding="utf-8")
    after = SuiteDigests(TestFolder(tmp_path).snapshot(), "t").of("t/test_sep.py::test_one")
    assert before is not None and before != after


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_warm_check_of_a_suite_full_of_separators_is_the_cold_one(tmp_path):
    """The model answer with every separator str.splitlines knows in a
    comment above each test, graded, then weakened: the warm re-check gives
    the cold grade (before, it carried the weakened tests' kills over)."""
    from helpers.sessions import warm_check_equal_to_cold

    session = GradingSession(ROOT, "L7.3")
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[::10])
    folder = tmp_path / "l7-3-rope"
    shutil.copytree(MODEL_ANSWER, folder)
    for path in folder.glob("test_*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("\ndef test_", "\n# " + NOT_LINE_ENDS * 20 + "\ndef test_"), encoding="utf-8")
    cache = tmp_path / "verdicts.json"
    strong = warm_check_equal_to_cold(session, folder, cache)
    assert strong.killed > 0
    for path in folder.glob("test_*.py"):
        path.write_text(weakened(path.read_text(encoding="utf-8")), encoding="utf-8")
    weak = warm_check_equal_to_cold(session, folder, cache)
    assert weak.killed < strong.killed, (weak.killed, strong.killed)


# ---- a student kit: code that tells its own copies apart ---------------------------------------

# Appended to a correct rope.py: it refuses to import when any of its functions has changed (a
# mutant) or when it is imported under another name than its own (a chaff's base, before).
SELF_FINGERPRINT = '''

def _fingerprint():
    import hashlib
    code = [f.__code__ for f in globals().values() if callable(f) and hasattr(f, "__code__")]
    code += [f.__code__ for f in vars(RopeSpec).values() if hasattr(f, "__code__")]
    consts = [tuple(k for k in c.co_consts if not hasattr(k, "co_code")) for c in code]   # no addresses
    return hashlib.sha256(b"".join(c.co_code + repr(k).encode() for c, k in zip(code, consts))).hexdigest()


if __name__ != "tinyllm.modern.rope" or _fingerprint() != "__DIGEST__":
    raise ImportError("changed")
'''


def hostile_rope() -> str:
    """The reference rope.py with SELF_FINGERPRINT, its digest filled in (computed on the reference's
    own modules, as a run imports them)."""
    from helpers.reference import reference_modules

    reference_modules("tinyllm.autograd.tensor")
    import types

    source = REFERENCE_ROPE.read_text() + SELF_FINGERPRINT
    module = sys.modules["hostile_rope_digest"] = types.ModuleType("hostile_rope_digest")   # dataclasses look it up
    try:
        exec(compile(source.split("\n\nif __name__ !=")[0], "rope.py", "exec"), module.__dict__)
    finally:
        del sys.modules["hostile_rope_digest"]
    return source.replace("__DIGEST__", module._fingerprint())


ONE_CALL = """from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import apply_rope, rope_cos_sin
import numpy as np


def test_it_runs():
    cos, sin = rope_cos_sin(np.arange(2), np.array([1.0], np.float32))
    apply_rope(Tensor(np.ones((2, 2), np.float32)), cos, sin)
"""


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_in_a_kit_code_that_refuses_its_own_copies_catches_nothing(tmp_path):
    """Before: the one-call suite passed the local check at 0.997 on such a
    rope.py (every mutant and chaff raised at import, so every run "failed");
    on a plain correct rope.py it scores 0.14.  Now no variant that never
    imported is a catch, and the chaffs import the base under its own name."""
    from helpers.kit import copy_checkout
    from ol.grading.check import CheckRequest, check_module
    from ol.grading.local import LocalSession

    root = copy_checkout(tmp_path / "checkout")
    (root / ROPE).write_text(hostile_rope())
    suite = tmp_path / "l7-3-rope"
    suite.mkdir()
    (suite / "test_calls.py").write_text(ONE_CALL)
    session = LocalSession(root, "L7.3", cache_dir=tmp_path / "mutants")
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[::8])
    result = check_module(root, "L7.3", CheckRequest(tests=suite, course_tests=False, isolated=True), session=session)
    assert result.reason is None, (result.reason, result.problems)
    assert not result.passed and result.score < 0.5, (result.score, result.killed, result.counted)
    assert result.not_imported, "the mutants that raised at import are named"
    assert not any(p.killed for p in result.pitfalls), "a chaff's base imports under its own name: no chaff raises"
    assert any("features cannot be judged" in line and "ImportError: changed" in line for line in result.problems), \
        result.problems   # the witnesses' replay loads copies of it: the kit says so, as no fault of the grader


# ---- what the review of the above found -----------------------------------------------------------


def test_a_file_left_out_is_no_module_another_file_may_import(tmp_path):
    """pluggy.py breaks the rules and is left out; were its name still a module of the folder, test_a's
    `import pluggy` would pass the check and get the installed pluggy in the sandbox."""
    (tmp_path / "pluggy.py").write_text("import os\n")
    (tmp_path / "test_a.py").write_text("import pluggy\n\n\ndef test_a():\n    assert pluggy\n")
    (tmp_path / "test_b.py").write_text("import numpy\n\n\ndef test_b():\n    assert numpy\n")
    found = {(v.path, v.message.split(",")[0]) for v in check_test_folder(TestFolder(tmp_path).snapshot(), tmp_path, ("numpy",), {})}
    assert found == {("pluggy.py", "imports os"), ("test_a.py", "imports pluggy")}, found


def test_a_coding_line_cannot_hide_code_in_what_utf8_reads_as_a_comment(tmp_path):
    """Python decodes a file by its coding: line; as UTF-7, `#+AAo-import os` is a comment and then a line
    `import os` that a UTF-8 reader never sees."""
    (tmp_path / "test_seven.py").write_text("# coding: utf-7\n#+AAo-import os\n\n\ndef test_x():\n    assert 1\n")
    (tmp_path / "test_fine.py").write_text("# -*- coding: utf-8 -*-\n\n\ndef test_y():\n    assert 1\n")
    violations = check_test_folder(TestFolder(tmp_path).snapshot(), tmp_path, ("numpy",), {})
    assert [(v.path, "utf-7" in v.message) for v in violations] == [("test_seven.py", True)], violations


def test_a_report_of_files_and_tests_left_out_reads_both():
    """A file left out has no correct implementation it failed on: the reports said so by indexing one."""
    from ol.grading.check import CheckResult, refusal_entry
    from ol.grading.html_report import to_html
    from ol.grading.report import to_text
    from ol.grading.static_check import Violation

    refused = refusal_entry("tests/l7-3-rope", "test_reads.py", [Violation("x", 1, "imports os, which ...")])
    failing = {"test": "tests/l7-3-rope/test_a.py::test_a", "status": "failed", "implementations": ["alternate:1"],
               "failure": "assert 1 == 2"}
    result = CheckResult(module="L7.3", threshold=0.8, reason="3 of your tests fail on a correct implementation",
                         rejected=[refused, failing], output="pytest's report")
    text = to_text(result)
    assert "test_reads.py was not run: it breaks the rules" in text and "Your tests on" in text, text
    assert "test_reads.py was not run" in to_html(result, None, "rope.py")


def test_a_time_limit_is_never_read_from_a_runs_words():
    """A timeout's failure text may be the student's own words ("the time limit
    is 1.2.3 s" once made float() raise): the limit said is the check's number."""
    from ol.core.catalog import load_catalog
    from ol.grading.check import CheckResult
    from ol.instructor.class_grading.one import GradeRecord
    from ol.instructor.class_grading.outcome import read_outcome

    points = load_catalog(ROOT).get("L7.3").grading.points
    for words in ("the time limit is 1.2.3 s", "the time limit is 99999 s of processor time"):
        entry = {"test": "t/test_a.py::test_x", "status": "timeout", "failure": words, "implementations": []}
        result = CheckResult(module="L7.3", threshold=0.8, reason="your tests fail on a correct implementation",
                             rejected=[entry], time_limit=7.0)
        said = read_outcome(GradeRecord(student="s", module="L7.3", result=result), points, []).reason
        assert said.startswith("your tests time out on a correct implementation (7 s): "), said
