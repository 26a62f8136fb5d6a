"""Kit tests of the student's loop around `ol tests`: the static check that
`--mine` shows first, and `ol diff --code-only`.

Each runs the real `./ol` in a temporary checkout where L7.3 is started and
the student's rope.py holds the reference's code.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kit import copy_checkout, explain, run_ol
from ol.code_only import code_only

ROPE = "python/tinyllm/modern/rope.py"
REFERENCE_ROPE = "course/reference/python/tinyllm/modern/rope.py"
TESTS = "python/tests/l7-3-rope"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    checkout = copy_checkout(tmp_path_factory.mktemp("checkout"))
    r = run_ol(checkout, "start", "L7.3", cwd=checkout)
    assert r.returncode == 0, explain(r)
    shutil.copy(checkout / REFERENCE_ROPE, checkout / ROPE)
    return checkout


# ---- ol tests --mine: the static check first ---------------------------------------------


def test_tests_mine_shows_what_check_would_refuse_and_runs_anyway(checkout, tmp_path):
    refused = checkout / TESTS / "test_refused.py"
    refused.write_text("import os\nfrom tinyllm.modern.rope import rope_cos_sin\n\n\n"
                       "def test_reads_a_file():\n    assert open is not None and os.sep\n")
    try:
        r = run_ol(checkout, "tests", "L7.3", "--mine", "--ref-deps", cwd=tmp_path)
    finally:
        refused.unlink()
    assert r.returncode == 0, f"the tests pass, so --mine passes: the check only informs\n{explain(r)}"
    assert f"{TESTS}/test_refused.py:1: imports os" in r.stdout, explain(r)
    assert f"{TESTS}/test_refused.py:6: uses open()" in r.stdout, explain(r)
    assert r.stdout.index("imports os") < r.stdout.index("2 passed"), "the findings come before the run"
    assert "would not grade them" in r.stdout, "and are recalled after it"

    r = run_ol(checkout, "tests", "L7.3", "--mine", "--ref-deps", cwd=tmp_path)
    assert r.returncode == 0 and "nothing it would refuse" in r.stdout, explain(r)


# ---- ol diff --code-only ----------------------------------------------------------------


def test_diff_code_only_shows_the_code_that_differs(checkout, tmp_path):
    reference = (checkout / REFERENCE_ROPE).read_text()
    rope = checkout / ROPE
    rope.write_text(reference
                    .replace('"""cos and sin of the angles', '"""In my words: the cos and sin of the angles', 1)
                    .replace("# [..., r/2]: one float32 product, as HF computes it", "# one product")
                    .replace("    a_out = a * cos - b * sin", "    a_out = -(b * sin) + a * cos\n\n"))
    try:
        full = run_ol(checkout, "diff", "L7.3", "--ref-deps", cwd=tmp_path)
        code = run_ol(checkout, "diff", "L7.3", "--ref-deps", "--code-only", cwd=tmp_path)
    finally:
        shutil.copy(checkout / REFERENCE_ROPE, rope)
    assert full.returncode == 0 and code.returncode == 0, explain(full) + explain(code)
    assert "In my words" in full.stdout and "# one product" in full.stdout
    changed = [line for line in code.stdout.splitlines()
               if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert changed == ["-    a_out = -(b * sin) + a * cos", "+    a_out = a * cos - b * sin"], explain(code)
    assert "docstrings and comments left out" in code.stdout

    identical = run_ol(checkout, "diff", "L7.3", "--ref-deps", "--code-only", cwd=tmp_path)
    assert "apart from docstrings, comments and blank lines" in identical.stdout, explain(identical)


def test_code_only_drops_docstrings_and_comments_and_nothing_else():
    python = (
        '"""Module doc."""\n'
        "import math  # why\n\n\n"
        "class A:\n"
        '    """Class doc,\n    on two lines # not a comment."""\n'
        "    x = '# kept: inside a string'\n\n"
        "    def f(self):  # note\n"
        "        '''Doc.'''\n"
        "        return 'ü' + \"\"\"not a docstring\"\"\"\n"
        "def g(): \"\"\"doc\"\"\"; return 1\n"
    )
    assert code_only(python, ".py") == (
        "import math\n\n"
        "class A:\n"
        "    x = '# kept: inside a string'\n\n"
        "    def f(self):\n"
        "        return 'ü' + \"\"\"not a docstring\"\"\"\n\n"
        "def g(): return 1\n"
    )
    c = ('#include "a.h"  /* the header */\n\n'
         "// a line comment\n"
         'static const char *s = "/* not a comment */ // nor this";\n'
         "int f(void) {\n    return '/' /* slash */;\n}\n"
         "int g(void) { return 2; }\n")
    assert code_only(c, ".c") == (
        '#include "a.h"\n'
        'static const char *s = "/* not a comment */ // nor this";\n'
        "int f(void) {\n    return '/' ;\n}\n\n"
        "int g(void) { return 2; }\n"
    )
    assert code_only("def broken(:\n  # kept as it is\n", ".py") == "def broken(:\n  # kept as it is\n"
    assert code_only("a  # b\n", ".txt") == "a  # b\n"
