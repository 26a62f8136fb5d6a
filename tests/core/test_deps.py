"""One meaning for --ref-deps, and --ref-unstarted beside it (issue 30; ol.core.deps).

- Where each module comes from, for every command that runs code: the
  runner's plan (tests, watch, diff, shell), the grading session's student
  variant (check) and the milestone's plan, each for neither flag,
  --ref-deps and --ref-unstarted, with L7.3 started and L0.3 not.
- Every verb's --help gives both flags in the same words.
- `ol reset MODULE --remove`: the files saved as ol reset saves them, then
  deleted; the module is not started again and --ref-unstarted serves the
  reference in its place.
- `--max-survivors 0` shows the counts alone.
- The milestone with L7.3 passing and L8.2 started as a stub (slow: two runs
  of SmolLM2): it stops with the NotImplementedError, and says that
  `ol reset L8.2 --remove` brings the reference back; after that command it
  passes.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil

import pytest

from helpers.kit import ROOT, copy_checkout, explain, run_ol
from ol.core.catalog import REFERENCE_TREE, STUDENT_TREE, load_catalog
from ol.core.deps import MINE, REFERENCE, UNSTARTED, PartlyStarted, started
from ol.core.runner import NotReady, plan_overlay
from ol.grading.check import CheckResult, Survivor
from ol.grading.report import to_text
from ol.student.milestone import get_milestone, plan_milestone

VERBS = ("tests", "watch", "shell", "check", "diff", "milestone")
WHERE = {"tinyllm.modern.rope": "L7.3", "tinyllm.autograd.nn": "L0.3", "tinyllm.autograd.tensor": "L0.1"}


@pytest.fixture
def checkout(tmp_path):
    """A fresh checkout with L7.5 started (a stub) and L7.3 started (the reference's rope.py as the student's)."""
    root = copy_checkout(tmp_path / "checkout")
    assert run_ol(root, "start", "L7.5", "--ref-deps", cwd=root).returncode == 0
    own = root / STUDENT_TREE / "tinyllm/modern/rope.py"
    shutil.copy(root / REFERENCE_TREE / "tinyllm/modern/rope.py", own)
    return root


def whose(root, path) -> str:
    return "reference" if str(path).startswith(str(root / REFERENCE_TREE)) else "yours"


def test_the_runner_serves_each_need_as_the_flag_says(checkout):
    catalog = load_catalog(checkout)
    module = catalog.get("L7.5")

    def plan(policy):
        overlay = plan_overlay(checkout, module, catalog=catalog, ref_deps=policy)
        return {name: whose(checkout, overlay[name].path) for name in WHERE}

    assert plan(REFERENCE) == {"tinyllm.modern.rope": "reference", "tinyllm.autograd.nn": "reference",
                               "tinyllm.autograd.tensor": "reference"}
    assert plan(True) == plan(REFERENCE)   # a library caller's ref_deps=True keeps its meaning
    assert plan(UNSTARTED) == {"tinyllm.modern.rope": "yours", "tinyllm.autograd.nn": "reference",
                               "tinyllm.autograd.tensor": "reference"}
    with pytest.raises(NotReady, match="L0.3"):   # neither flag: every need is yours, and L0.3 is not started
        plan(MINE)
    for policy in (REFERENCE, UNSTARTED):   # the module in hand is yours under both
        served = plan_overlay(checkout, module, catalog=catalog, ref_deps=policy)["tinyllm.modern.attention"]
        assert whose(checkout, served.path) == "yours"


def test_a_partly_started_need_is_named_not_guessed(checkout):
    catalog = load_catalog(checkout)
    (checkout / STUDENT_TREE / "tinyllm/modern/rope.py").unlink()
    (checkout / STUDENT_TREE / "tinyllm/autograd/nn.py").write_text("# mine\n")
    assert plan_overlay(checkout, catalog.get("L7.5"), catalog=catalog, ref_deps=UNSTARTED)
    module = catalog.get("L7.3x")   # four files (no module needs it, so it is asked directly)
    assert run_ol(checkout, "start", "L7.3x", "--ref-deps", cwd=checkout).returncode == 0
    assert started(checkout, module)
    (checkout / STUDENT_TREE / module.files[0]).unlink()
    with pytest.raises(PartlyStarted, match=f"{module.files[0]} is missing.*reset L7.3x --remove"):
        started(checkout, module)


def test_check_grades_the_course_tests_with_the_same_needs(checkout):
    from ol.grading.session import GradingSession

    session = GradingSession(checkout, "L7.5")
    assert session.student_variant(REFERENCE)[1] == {}
    assert sorted(session.student_variant(UNSTARTED)[1]) == ["tinyllm.modern.rope"]
    assert session.student_variant(UNSTARTED)[1]["tinyllm.modern.rope"]["origin"] == f"{STUDENT_TREE}/tinyllm/modern/rope.py"
    with pytest.raises(Exception, match="tensor.py does not exist"):   # neither flag: the student's L0.1, not started
        session.student_variant(MINE)


def test_the_milestone_serves_the_needs_by_the_same_rule(checkout):
    catalog = load_catalog(checkout)
    milestone = get_milestone(checkout, "MS-L7")

    def rows(policy):
        return {module: whose_ for module, _, whose_ in plan_milestone(checkout, catalog, milestone,
                                                                         ref_deps=policy).rows if module}

    every = rows(REFERENCE)
    assert every["L7.3"] == "yours" and every["L7.5"].startswith("the reference (--ref-deps)"), every
    assert all(w != "yours" for m, w in every.items() if m != "L7.3"), "--ref-deps: only the subject is yours"
    some = rows(UNSTARTED)
    assert some["L7.3"] == "yours" and some["L7.5"] == "yours" and some["L0.3"].startswith("the reference"), some
    from ol.student.milestone import MilestoneNotReady

    with pytest.raises(MilestoneNotReady, match="--ref-unstarted"):
        rows(MINE)


def test_every_verb_states_both_flags_in_the_same_words(tmp_path):
    helps = {verb: run_ol(ROOT, verb, "--help", cwd=tmp_path) for verb in VERBS}
    for verb, r in helps.items():
        assert r.returncode == 0, explain(r)
        text = " ".join(r.stdout.split())
        assert "[--ref-deps | --ref-unstarted]" in text, f"ol {verb} --help\n{r.stdout}"
        assert "all from the reference, whatever you have written" in text, f"ol {verb} --help\n{r.stdout}"
        assert "yours where you have started them, the reference's where not" in text, f"ol {verb} --help\n{r.stdout}"


def test_reset_remove_saves_the_files_and_takes_the_module_back_to_not_started(checkout):
    stub = checkout / STUDENT_TREE / "tinyllm/modern/attention.py"
    mine = stub.read_text() + "\n# a line of mine\n"
    stub.write_text(mine)
    r = run_ol(checkout, "reset", "L7.5", "--remove", cwd=checkout)
    assert r.returncode == 0, explain(r)
    assert not stub.exists()
    backups = list((checkout / ".ol/backups/L7.5").glob(f"*/{STUDENT_TREE}/tinyllm/modern/attention.py"))
    assert [b.read_text() for b in backups] == [mine], "the file is saved before it is deleted"
    assert "L7.5 is not started now" in r.stdout and (checkout / "python/tests/l7-5-attention").is_dir()
    listed = run_ol(checkout, "list", cwd=checkout).stdout
    assert any(line.startswith("L7.5 ") and "not started" in line for line in listed.splitlines()), listed
    again = run_ol(checkout, "reset", "L7.5", "--remove", cwd=checkout)
    assert again.returncode == 2 and "not started" in again.stderr, explain(again)
    # a fresh stub holds nothing of the student's: deleted without a backup
    assert run_ol(checkout, "start", "L8.2", "--ref-deps", cwd=checkout).returncode == 0
    r = run_ol(checkout, "reset", "L8.2", "--remove", cwd=checkout)
    assert r.returncode == 0 and "a fresh stub: nothing of yours" in r.stdout, explain(r)
    assert not (checkout / ".ol/backups/L8.2").exists()
    # and the shell serves the reference's L7.5 again (it is not started), as --ref-unstarted does a need
    r = run_ol(checkout, "shell", "L7.5", "--ref-unstarted", "-c",
               "import tinyllm.modern.attention as a, tinyllm.modern.rope as r; print(a.__file__); print(r.__file__)",
               cwd=checkout)
    assert r.returncode == 0, explain(r)
    served = r.stdout.split()
    assert served == [str(checkout / REFERENCE_TREE / "tinyllm/modern/attention.py"),
                      str(checkout / STUDENT_TREE / "tinyllm/modern/rope.py")], explain(r)


def test_max_survivors_0_shows_the_counts_alone(tmp_path):
    from ol.grading import check_cli

    parser = argparse.ArgumentParser()
    check_cli.configure(parser)
    assert parser.parse_args(["L7.3", "--max-survivors", "0"]).max_survivors == 0
    result = CheckResult(module="L7.3", threshold=0.8, score=0.5, killed=1, counted=3,
                         survivors=[Survivor("m1", "apply_rope", "-first_old\n+first_new"),
                                    Survivor("m2", "apply_rope", "-second_old\n+second_new")])
    counts = to_text(result, 0)
    assert "2  apply_rope" in counts and "first_old" not in counts and "in apply_rope (2):" not in counts, counts
    assert "2 more not shown" in counts
    assert "first_old" in to_text(result, 1) and "second_old" not in to_text(result, 1)


@pytest.mark.slow   # two runs of SmolLM2-135M: about a minute each on two busy cores
def test_a_stub_stops_the_milestone_until_reset_remove_brings_the_reference_back(tmp_path):
    root = copy_checkout(tmp_path / "checkout")
    assert run_ol(root, "start", "L7.3", "--ref-deps", cwd=root).returncode == 0
    shutil.copy(root / REFERENCE_TREE / "tinyllm/modern/rope.py", root / STUDENT_TREE / "tinyllm/modern/rope.py")
    r = run_ol(root, "tests", "L7.3", "--ref-deps", cwd=root)
    assert r.returncode == 0, explain(r)
    assert run_ol(root, "start", "L8.2", "--ref-deps", cwd=root).returncode == 0   # started only to look at it

    r = run_ol(root, "milestone", "MS-L7", "--ref-unstarted", cwd=root, timeout=900)
    assert r.returncode == 1 and "NotImplementedError" in r.stdout, explain(r)
    assert "your L8.2 (python/tinyllm/modern/decoding.py) still raises NotImplementedError" in r.stdout, explain(r)
    assert "./ol reset L8.2 --remove" in r.stdout, explain(r)

    r = run_ol(root, "reset", "L8.2", "--remove", cwd=root)
    assert r.returncode == 0, explain(r)
    r = run_ol(root, "milestone", "MS-L7", "--ref-unstarted", cwd=root, timeout=900)
    assert r.returncode == 0 and "MS-L7 passed" in r.stdout, explain(r)
    assert re.search(r"L8\.2 +course/reference/python/tinyllm/modern/decoding\.py +the reference \(--ref-unstarted\)",
                     r.stdout), explain(r)
    assert re.search(r"L7\.3 +python/tinyllm/modern/rope\.py +yours", r.stdout), explain(r)
    assert json.loads((root / ".ol/state.json").read_text())["modules"].get("L8.2") is None
