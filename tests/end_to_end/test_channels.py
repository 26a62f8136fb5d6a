"""No channel the grader opens itself (python/ol/grading/README.md): nothing a
run does changes what another run sees.

Each attack is a suite that judges nothing by itself (tests/grading_suites/
channels/channel.py): it digests what the module under test answers to the
model answer's calls and tries to learn the correct digest from what the
grader carries between runs, writing its own digest into the durations of
its tests, its processor time, its output and its exit, and reading the
order of its tests and the access times of files it may read.  Its judge
fails exactly when its digest differs from one it learnt.  So the judge
catching nothing is the property: it learnt nothing.  Before these defences
the same suites passed L7.4 and L7.5 through the order of their tests, and
L7.3 through access times, in `ol check --isolated`, `ol grade` and the
Gradescope bundle.

    order       every graded run gets the same request: every test, in the
                suite's own order; no order is learnt from a run, and no
                stage runs first that a later run could time
    memo        a run confined by uid cannot leave a mark in an access time
                (its files set ahead, the system's read once before the
                first run; read-only mounts under bubblewrap)
    guessing    a test that guesses a bit of the answer is left out exactly
                when it guessed wrong, so the grade tells the suite one bit
                per test left out: past the catalog's max_rejected the suite
                is not graded
    clean-up    a run that outlives its guard (setsid, a double fork) is
                found by its user, which no later run shares; a tree too
                deep for shutil.rmtree is removed and faults no one; no run
                may list or reach another's folder

The suites are graded against a sample of the counted mutants (every
pitfall and every correct run among them), as the gallery is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cheats import channel_suite
from helpers.kit import DOCKER_DEFAULT, ROOT, explain, sampled_home
from helpers.processes import descendants, files_of_run_users, run_users, uid_of
from helpers.sessions import sampled
from ol.core.test_folder import TestFolder
from ol.grading.check import CheckRequest, check_module
from ol.grading.sandbox import confine
from ol.grading.session import GradingSession

CHANNELS = ROOT / "tests" / "grading_suites" / "channels"
JUDGE = "test_channel.py::test_a_judge"


def judge_learnt_nothing(record: dict) -> None:
    """The judge caught no variant and was graded (it passed every correct run)."""
    assert not record["passed"], record
    named = [test for test in record.get("killed_by", {}).values() if test.endswith("::test_a_judge")]
    by = [p["id"] for p in record.get("pitfalls", []) if any(t.endswith("::test_a_judge") for t in p.get("tests", ()))]
    left_out = [e["test"] for e in record.get("rejected", []) if e["test"].endswith("::test_a_judge")]
    assert not named and not by and not left_out, (named, by, left_out, record.get("reason"))


# ---- order and memo, in ol check --isolated -------------------------------------------------------------

GRADE_IN_PROCESS = """
import dataclasses, json, sys
sys.path[:0] = [{python!r}, {tests!r}]
from pathlib import Path
from ol.grading.check import CheckRequest, check_module
from helpers.sessions import sampled
session = sampled({module!r}, {every!r})
result = check_module(Path({root!r}), {module!r}, CheckRequest(tests=Path({suite!r}), course_tests=False,
                      isolated=True, require_confinement=True, workers={workers!r}), session=session)
print(json.dumps(result.to_json()))
"""


def graded_by_uid(suite: Path, tmp_path: Path, every: int) -> dict:
    """`suite` graded L7.3 by `ol check --isolated`'s engine in Docker's default profile (confined by
    uid), against every pitfall and every `every`th mutant: its record, once it has a score."""
    driver = GRADE_IN_PROCESS.format(python=str(ROOT / "python"), tests=str(ROOT / "tests"), module="L7.3",
                                     root=str(ROOT), suite=str(suite), every=every, workers=2)
    r = subprocess.run([*DOCKER_DEFAULT, sys.executable, "-c", driver], capture_output=True, text=True,
                       timeout=1800, cwd=tmp_path, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 0, explain(r)
    record = json.loads(r.stdout.strip().splitlines()[-1])
    assert record["confinement"] == confine.BY_UID and record["score"] is not None, record
    return record


# Every run of the order attack sleeps about 2.5 s (its duration probes): a few mutants of each module
# are enough, with every pitfall and every correct run beside them, and four runs at a time (they wait
# rather than compute).
ORDER_SAMPLE = {"L7.4": 100, "L7.5": 50}
ORDER_WORKERS = 4


@pytest.mark.needs_confinement
@pytest.mark.parametrize("where", ["namespaces", "namespace-less"])
@pytest.mark.parametrize("module", ["L7.4", "L7.5"])
def test_the_order_of_a_runs_tests_carries_nothing(module, where, tmp_path):
    suite = channel_suite(module, ["order"], tmp_path)
    under = [] if where == "namespaces" else DOCKER_DEFAULT
    driver = GRADE_IN_PROCESS.format(python=str(ROOT / "python"), tests=str(ROOT / "tests"), module=module,
                                     root=str(ROOT), suite=str(suite), every=ORDER_SAMPLE[module],
                                     workers=ORDER_WORKERS)
    r = subprocess.run([*under, sys.executable, "-c", driver], capture_output=True, text=True, timeout=1800,
                       cwd=tmp_path, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 0, explain(r)
    record = json.loads(r.stdout.strip().splitlines()[-1])
    assert record["confinement"] == (confine.CONFINED if where == "namespaces" else confine.BY_UID), record
    assert record["score"] is not None, record   # graded: every test passed on every correct run
    judge_learnt_nothing(record)


# ---- access times, where namespaces are refused -----------------------------------------------------------


@pytest.mark.needs_confinement
def test_a_memo_in_access_times_carries_nothing_in_ol_check(tmp_path):
    """Confined by uid (Docker's default profile), `ol check --isolated`'s
    engine: the first run may read files to leave its digest in their
    access times, and no later run finds it."""
    suite = channel_suite("L7.3", ["memo"], tmp_path, writers=False)
    judge_learnt_nothing(graded_by_uid(suite, tmp_path, every=40))


@pytest.mark.needs_confinement
def test_a_memo_in_access_times_carries_nothing_in_ol_grade(tmp_path):
    """The same memo through `ol grade` confined by uid: the class's one
    submission, the reference's rope.py and the memo suite, gets nothing
    from it."""
    submission = tmp_path / "class" / "memo"
    suite = channel_suite("L7.3", ["memo"], tmp_path / "suites", writers=False)
    shutil.copytree(suite, submission / "python/tests/l7-3-rope")
    (submission / "python/tinyllm/modern").mkdir(parents=True)
    shutil.copy(ROOT / "course/reference/python/tinyllm/modern/rope.py", submission / "python/tinyllm/modern/rope.py")
    out = tmp_path / "graded"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               HOME=str(sampled_home(tmp_path / "home")), TMPDIR=str(tmp_path))
    env.pop("XDG_CACHE_HOME", None)
    r = subprocess.run([*DOCKER_DEFAULT, str(ROOT / "ol"), "grade", "L7.3", str(tmp_path / "class"), "--out", str(out),
                        "--time-limit", "30", "--feedback", "none"], capture_output=True, text=True, timeout=1800,
                       cwd=tmp_path, env=env)
    assert r.returncode == 0, explain(r)
    record = json.loads((out / "memo.json").read_text())
    assert record["confinement"] == confine.BY_UID and not record.get("error"), record
    judge_learnt_nothing(record)


# ---- clean-up that no run can stop -------------------------------------------------------------------------

LEFTOVERS = ROOT / "tests" / "grading_suites" / "leftovers"


@pytest.mark.needs_confinement
def test_what_a_run_leaves_is_cleaned_up_and_reached_by_no_other_run(tmp_path):
    """Confined by uid: a run opens its folder to all, builds a tree 1,100
    deep in it and leaves a setsid grandchild.  The suite is graded (the
    folder above its own never lists), no grader fault comes of the tree,
    and when the check ends nothing of any run's user is left: no process,
    no file, no scratch folder."""

    before = set(Path(tmp_path).glob("ol-sandbox-*"))
    record = graded_by_uid(LEFTOVERS, tmp_path, every=120)
    assert record["tests"] == record["graded_tests"] == 4, record["rejected"]
    assert not run_users(), "a process of a run's user outlived the check"
    assert not files_of_run_users(str(tmp_path), "/tmp", "/var/tmp", "/dev/shm"), "a run's file was left"
    assert set(Path(tmp_path).glob("ol-sandbox-*")) == before, "the check's scratch folder was left"


@pytest.mark.needs_confinement
def test_a_run_that_outlives_its_guard_is_ended_by_its_user(tmp_path):
    """Confined by uid, a run's guard is SIGKILLed (by us, here: as a guard
    that faults would end) while its setsid grandchild sleeps: the warm
    process, not the guard, kills every process of the run's user and
    removes its folder.  The check says the grader faulted; nothing of any
    run's user is left once it has exited."""
    import time


    driver = GRADE_IN_PROCESS.format(python=str(ROOT / "python"), tests=str(ROOT / "tests"), module="L7.3",
                                     root=str(ROOT), suite=str(LEFTOVERS), every=120, workers=2)
    check = subprocess.Popen([*DOCKER_DEFAULT, sys.executable, "-c", driver], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=dict(os.environ, TMPDIR=str(tmp_path)))
    killed = []
    try:
        deadline = time.monotonic() + 600
        while not killed and time.monotonic() < deadline and check.poll() is None:
            users = {}
            ours = set(descendants(check.pid))   # never a guard of another check on this machine (a pytest worker's)
            for pid in run_users(settle=0, left_only=False):
                if pid in ours:
                    users.setdefault(uid_of(pid), []).append(pid)
            for pids in users.values():
                if len(pids) < 2:
                    continue                   # the run alone: its grandchild is not out yet
                for pid in pids:               # the run's parent (its init) and the grandchild's (its guard)
                    parent = _parent(pid)
                    if parent > 1 and uid_of(parent) == 0:
                        os.kill(parent, 9)
                        killed.append(parent)
            time.sleep(0.05)
        out, err = check.communicate(timeout=1800)
    finally:
        if check.poll() is None:
            check.kill()
    assert killed, "no run with a grandchild was seen"
    assert not run_users(), "a process of a run's user outlived its guard and the check"


def _parent(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:")), 0)


# ---- guessing ------------------------------------------------------------------------------------------------

GUESSING = ROOT / "tests" / "grading_suites" / "guessing"


@pytest.mark.needs_confinement
def test_a_suite_that_guesses_its_oracle_is_not_graded(tmp_path):
    """Sixteen guesses of one bit each: the wrong ones fail on every correct
    implementation.  Left out one by one, they would leave the right ones as
    an oracle; past max_rejected (2) the suite is not graded, and says why."""
    session = sampled("L7.3")
    result = check_module(ROOT, "L7.3", CheckRequest(tests=GUESSING, course_tests=False, isolated=True),
                          session=session)
    wrong = [e for e in result.rejected if e["status"] == "failed"]
    assert len(wrong) > session.grading.max_rejected, "the reference's digest has too few 1s for this test"
    assert result.score is None and not result.passed, result.reason
    assert result.reason.startswith(f"{len(wrong)} of your tests fail on a correct implementation"), result.reason
    assert {e["test"].rsplit("[", 1)[1].rstrip("]") for e in wrong} == \
        {str(b) for b in range(16) if (_reference_digest() >> b) & 1}


def _reference_digest() -> int:
    """The guessing suite's digest of the reference, computed here."""
    import importlib.util

    from helpers.reference import reference_modules

    reference_modules("tinyllm.modern.rope", "tinyllm.autograd.tensor")   # what its imports then find
    spec = importlib.util.spec_from_file_location("guessing", GUESSING / "test_guessing.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.digest()


@pytest.mark.needs_confinement
def test_a_runs_memory_group_does_not_name_its_slot(tmp_path):
    """A run reads its memory group's path in /proc/self/cgroup.  A group
    named by its slot would tell a run which slot it runs in, which depends
    on when earlier runs ended: a channel.  Every run of one slot finds a
    name no run saw before.  (Confined by uid, Landlock refuses a run
    /proc/self/cgroup altogether.)"""
    suite = tmp_path / "l7-3-rope"
    suite.mkdir()
    (suite / "test_group.py").write_text(
        "def test_say_my_group():\n"
        "    with open('/proc/self/cgroup') as f:\n"
        "        lines = [line.strip() for line in f if ':memory:' in line or line.startswith('0::')]\n"
        "    assert False, '=' + 'GROUP=' + ' '.join(lines) + '=' + 'END='\n")   # the report quotes this line too
    session = GradingSession(ROOT, "L7.3")
    from ol.grading.protocol import RunRequest
    from ol.grading.scheduler import Run

    def groups_seen(run_in) -> list[str]:
        with session.scheduler({"student": TestFolder(suite).snapshot()}, course=False, workers=1, confinement=confine.CONFINED) as scheduler:
            if not (scheduler.memory and scheduler.memory.groups):
                assert os.geteuid() != 0, "root on this host should get memory cgroups"
                pytest.skip("no memory cgroup here: nothing names a slot")
            runs = [Run(n, RunRequest(suite="student", task="pytest"), session.reference.request(), 30.0)
                    for n in range(3)]
            outcomes = run_in(scheduler, runs)
        said = [next(line["output"] for line in o.notes if "output" in line) for o in outcomes.values()]
        assert all("=GROUP=" in text for text in said), said[0][-3000:]
        return [text.split("=GROUP=", 1)[1].split("=END=", 1)[0] for text in said]

    seen = groups_seen(lambda scheduler, runs: scheduler.run(runs))
    assert all("ol-run-" in group for group in seen), seen   # each run is in a group of ours
    assert len(set(seen)) == len(seen), f"runs of one slot saw the same memory group: {seen}"
