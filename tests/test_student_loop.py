"""Kit tests of the student's loop around `ol tests`: the static check that
`--mine` shows first.

Each runs the real `./ol` in a temporary checkout where L7.3 is started and
the student's rope.py holds the reference's code.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kit import copy_checkout, explain, run_ol

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
