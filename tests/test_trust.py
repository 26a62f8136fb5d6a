"""The grade cannot be forged: a gallery of cheating suites, the confinement
of every run, and faults of the grader itself (python/ol/grading/README.md
gives the process model and the threat model these tests hold it to).

    gallery      tests/grading_suites/cheats/*: one suite per way a student
                 might try to earn the grade without the work.  None passes
                 or gains score, in the local check (shared collection) or the
                 instructor's (isolated runs); none changes a file outside
                 its own folder; no process of theirs outlives the check.
    faults       a crashing collector, a crashing warm process, a killed
                 implementation process, SIGINT and SIGTERM: exit 2 or 130/143,
                 no score, nothing left behind.
    portability  one full check with the spawn start method (no fork in the
                 process model) grades as the fork one does.

The gallery grades against a sample of the counted mutants (every pitfall,
the correct implementations and their repeats are all there): what it
checks is that nothing but behaviour can move a verdict, for which a
sample is enough, and the full set would make it minutes longer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from kit import (ROOT, copy_checkout, explain, kill_group, processes_with, run_ol, sigint_as_at_a_terminal,
                 snapshot, virtual_environment)
from ol.grading.check import check_module
from ol.grading.session import GradingFault, GradingSession
from reference import reference_modules

CHEATS = ROOT / "tests" / "grading_suites" / "cheats"
GALLERY = sorted(p.name for p in CHEATS.iterdir() if p.is_dir())
MODEL_ANSWER = ROOT / "course/reference/python/tests/l7-3-rope"
ESCAPEE_MARKERS = ("sleep 31416", "sleep 31417")
CANARIES = ("ol-cheat-was-here", "ol-cheat-ctypes-was-here")
# A suite that only calls the functions (and judges nothing) kills the mutants
# that raise or hang; no cheat may score more than this.
MAX_CHEAT_SCORE = 0.5
STATIC_REASON = "your tests do things graded tests may not (they were not run)"
# Cheats that a reader of source can see; the others read as harmless code and
# must be stopped by the process model and the operating system.
STOPPED_BY_THE_STATIC_CHECK = {
    "compiled-helper": "is a compiled file", "shadow-numpy": "is named like the module numpy",
    "copy-of-the-reference": "your oracle must be your own", "copy-of-the-alternate": "your oracle must be your own",
}


def test_the_gallery_covers_every_class_of_the_threat_model():
    assert len(GALLERY) >= 25
    docs = " ".join((CHEATS / name / "test_cheat.py").read_text().split('"""')[1] for name in GALLERY)
    for kind in ("Forged verdicts", "Telling mutants apart without calling them", "Around the allow-list",
                 "Out of the fence", "Fail quietly", "Cross-run state"):
        assert kind in docs, f"no cheat of the class {kind!r}"


@pytest.fixture(scope="module")
def sampled():
    """L7.3's grading session with every pitfall and a spread of the counted
    mutants; the repository's files before the gallery runs."""
    session = GradingSession(ROOT, "L7.3")
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[::20])
    before = repository_files()
    yield session
    assert repository_files() == before, "a cheating suite changed a file of the repository"


def repository_files() -> dict[str, str]:
    return snapshot(ROOT, skip=(".git", ".ol", ".pytest_cache", ".hypothesis", "build"))


def materialize(name: str, dest: Path, root: Path = ROOT) -> Path:
    """The cheat's folder, its placeholders filled: where the repository (root)
    and the home folder are, the reference's fingerprint, renamed copies of
    the course's implementations."""
    rope, alternate = reference_modules("tinyllm.modern.rope")[0], ROOT / "course/reference/alternates/L7.3/rope.py"
    values = {
        "__ROOT__": str(root), "__HOME__": os.path.expanduser("~"),
        "__REFERENCE_FINGERPRINT__": hashlib.sha256(rope.apply_rope.__code__.co_code).hexdigest(),
        "__REFERENCE_COPY__": (ROOT / "course/reference/python/tinyllm/modern/rope.py").read_text()
        .replace("def rope_cos_sin", "def my_cos_sin").replace("def apply_rope", "def my_apply"),
        "__ALTERNATE_COPY__": alternate.read_text().replace("def rope_cos_sin", "def alt_cos_sin"),
    }
    folder = dest / name
    shutil.copytree(CHEATS / name, folder)
    for path in folder.rglob("*.py"):
        text = path.read_text()
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        path.write_text(text)
    return folder


@pytest.mark.slow
@pytest.mark.needs_confinement
@pytest.mark.parametrize("sharing", ["shared", "isolated"])
@pytest.mark.parametrize("cheat", GALLERY)
def test_no_cheating_suite_passes_or_gains_score(cheat, sharing, sampled, tmp_path):
    folder = materialize(cheat, tmp_path)
    own_files = snapshot(folder)
    result = check_module(ROOT, "L7.3", tests=folder, course_tests=False, session=sampled, sharing=sharing,
                          time_limit=8, workers=2)
    assert not result.passed, f"{cheat} passed ({sharing})"
    assert result.reason is not None or result.score <= MAX_CHEAT_SCORE, (
        f"{cheat} scored {result.score:.2f} ({result.killed}/{result.counted}) in the {sharing} check")
    if cheat in STOPPED_BY_THE_STATIC_CHECK:
        assert result.reason == STATIC_REASON, (cheat, result.reason)
        assert any(STOPPED_BY_THE_STATIC_CHECK[cheat] in line for line in result.problems), result.problems
    else:
        assert result.reason != STATIC_REASON, f"{cheat} should get past the static check: {result.problems}"
    assert snapshot(folder) == own_files or cheat.startswith("counter"), "the kit's copy is read-only to runs"
    for canary in CANARIES:
        assert not (ROOT / canary).exists(), f"{cheat} wrote into the repository"
    for marker in ESCAPEE_MARKERS:
        assert not processes_with(marker), f"a process of {cheat} outlived the check"


# ---- where the student's Python lives ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_venv_inside_the_checkout_is_seen_by_the_runs_and_the_checkout_is_not():
    # /var/tmp, not pytest's /tmp: a Python under /tmp cannot be confined (next test)
    scratch = Path(tempfile.mkdtemp(prefix="ol-venv-", dir="/var/tmp"))
    try:
        checkout = copy_checkout(scratch / "checkout")
        python = virtual_environment(checkout / ".venv")
        (checkout / "python/tinyllm/modern").mkdir(parents=True, exist_ok=True)
        shutil.copy2(checkout / "course/reference/python/tinyllm/modern/rope.py", checkout / "python/tinyllm/modern")

        def check(tests: Path) -> dict:
            r = subprocess.run([str(python), str(checkout / "ol"), "check", "L7.3", "--ref-deps", "--json",
                                "--tests", str(tests)], cwd=scratch, capture_output=True, text=True, timeout=600)
            assert r.returncode in (0, 1), explain(r)
            return json.loads(r.stdout)

        honest = check(MODEL_ANSWER)
        assert honest["confinement"] == "confined" and honest["passed"], honest
        cheat = check(materialize("reference-read-at-run-time", scratch, root=checkout))
        assert cheat["confinement"] == "confined" and not cheat["passed"], cheat
        assert "No such file" in cheat["output"] or "FileNotFoundError" in cheat["output"], cheat["output"][-2000:]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_python_installed_under_tmp_is_not_confined_and_says_why(tmp_path):
    python = virtual_environment(tmp_path / "venv")
    r = subprocess.run([str(python), str(ROOT / "ol"), "check", "L7.3", "--ref-deps", "--require-confinement"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, explain(r)
    assert "installed under /tmp" in r.stderr and str(tmp_path / "venv") in r.stderr, explain(r)


@pytest.mark.needs_confinement
def test_the_observer_never_imports_the_suite_or_the_code_under_test(sampled, tmp_path):
    folder = tmp_path / "l7-3-rope"
    shutil.copytree(MODEL_ANSWER, folder)
    (folder / "test_rope_oracle.py").rename(folder / "test_only_in_a_sandbox.py")
    before = set(sys.modules)
    result = check_module(ROOT, "L7.3", tests=folder, course_tests=False, session=sampled, sharing="shared")
    assert result.passed, (result.reason, result.problems)
    imported = set(sys.modules) - before
    assert not [m for m in imported if "only_in_a_sandbox" in m or m.startswith(("tinyllm", "_ol_contract"))], imported


# ---- faults of the grader ---------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, by the parent links in /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _proc(pid: int, name: str) -> bytes:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return b""


def role(pid: int) -> str:
    """"tests" or "impl" for a process of a grading sandbox (OL_ROLE in its environment)."""
    for entry in _proc(pid, "environ").split(b"\0"):
        if entry.startswith(b"OL_ROLE="):
            return entry[8:].decode()
    return ""


def parent(pid: int) -> int:
    stat = _proc(pid, "stat")
    return int(stat.rsplit(b")", 1)[1].split()[1]) if stat else 0


def started(pid: int) -> int:
    stat = _proc(pid, "stat")
    return int(stat.rsplit(b")", 1)[1].split()[19]) if stat else 0


def uid_of(pid: int) -> int:
    for line in _proc(pid, "status").split(b"\n"):
        if line.startswith(b"Uid:"):
            return int(line.split()[1])
    return -1


def warm_process(kind: str) -> list[int]:
    """The warm process of a sandbox: its role is set, its parent's (bwrap) is not."""
    return [p for p in descendants(os.getpid()) if role(p) == kind and not role(parent(p))]


def victims_of(victim: str) -> list[int]:
    ours = descendants(os.getpid())
    if victim == "collector":   # the shared check's collected suite: the oldest unprivileged process of the tests
        found = sorted((started(p), p) for p in ours if role(p) == "tests" and uid_of(p) not in (0, -1))
        return [found[0][1]] if found else []
    if victim == "implementation run":   # a trusted run: a direct fork of the implementation's warm process
        warm = warm_process("impl")
        return [p for p in ours if warm and parent(p) == warm[0]][:1]
    return warm_process("tests")


def kill_after(verdicts: int, victim: str):
    """on_event for check_module: from the `verdicts`-th verdict on, SIGKILL
    the victim at every verdict (an implementation run found just as it ends
    would be killed too late to matter; the next one is not)."""
    seen = {"n": 0, "killed": []}

    def on_event(event):
        if event.get("event") == "verdict":
            seen["n"] += 1
            if seen["n"] >= verdicts:
                for pid in victims_of(victim):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:   # it ended between the listing and the kill
                        continue
                    seen["killed"].append(pid)

    on_event.seen = seen
    return on_event


def nothing_left(before: set[int]) -> None:
    time.sleep(0.5)
    left = [p for p in descendants(os.getpid()) if p not in before]
    assert not left, f"processes left behind: {[_cmdline(p) for p in left]}"


@pytest.mark.needs_confinement
@pytest.mark.parametrize("victim", ["collector", "tests warm process", "implementation run"])
def test_a_fault_of_the_grader_is_an_error_with_no_score(victim, sampled, tmp_path):
    """Each victim is SIGKILLed from outside once the variants are being
    graded: the check must stop with GradingFault (exit 2 in the CLI), never
    give a score."""
    folder = tmp_path / "l7-3-rope"
    shutil.copytree(MODEL_ANSWER, folder)
    before = set(descendants(os.getpid()))
    on_event = kill_after(2, victim)
    with pytest.raises(GradingFault):
        check_module(ROOT, "L7.3", tests=folder, course_tests=False, session=sampled, sharing="shared",
                     on_event=on_event, time_limit=20)
    assert on_event.seen["killed"], f"no {victim} was found to kill"
    nothing_left(before)


def _cmdline(pid: int) -> str:
    return _proc(pid, "cmdline").replace(b"\0", b" ").decode(errors="replace").strip()


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupting_ol_check_leaves_nothing_behind(signum, code, tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    r = run_ol(checkout, "start", "L7.3", "--ref-deps", cwd=tmp_path)
    assert r.returncode == 0, explain(r)
    shutil.copy2(ROOT / "course/reference/python/tinyllm/modern/rope.py", checkout / "python/tinyllm/modern/rope.py")
    for test in MODEL_ANSWER.glob("*.py"):
        shutil.copy2(test, checkout / "python/tests/l7-3-rope" / test.name)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch), PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    process = subprocess.Popen([str(checkout / "ol"), "check", "L7.3", "--ref-deps", "--json"], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               preexec_fn=sigint_as_at_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(descendants(process.pid)) < 8:   # well into the grading
            time.sleep(0.2)
        time.sleep(2)
        tree = descendants(process.pid)
        assert tree, "ol check never started its sandboxes"
        os.kill(process.pid, signum)
        out, err = process.communicate(timeout=60)
    finally:
        kill_group(process)
    assert process.returncode == code, (process.returncode, out[-2000:], err[-2000:])
    assert b'"score"' not in out or b'"score": null' in out
    time.sleep(1)
    alive = [p for p in tree if os.path.exists(f"/proc/{p}") and _cmdline(p)]
    assert not alive, f"processes outlived the interrupted check: {[_cmdline(p) for p in alive]}"
    assert list(scratch.iterdir()) == [], "temporary folders were left behind"


# ---- portability ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_full_check_with_the_spawn_start_method_grades_as_the_fork_one_does(tmp_path):
    """No fork in the process model (as on macOS and Windows): every run is a
    fresh interpreter.  Same verdicts, the whole mutant set."""
    session = GradingSession(ROOT, "L7.3")
    suite = ROOT / "tests/calibration/l7-3-suite-c"
    spawned = check_module(ROOT, "L7.3", tests=suite, course_tests=False, session=session, start_method="spawn",
                           time_limit=60)
    forked = check_module(ROOT, "L7.3", tests=suite, course_tests=False, session=session, sharing="isolated")
    assert spawned.reason is None and forked.reason is None, (spawned.reason, spawned.problems)
    assert (spawned.killed, spawned.counted, spawned.passed) == (forked.killed, forked.counted, forked.passed)
    assert [s.id for s in spawned.survivors] == [s.id for s in forked.survivors]
    assert json.dumps([p.killed for p in spawned.pitfalls]) == json.dumps([p.killed for p in forked.pitfalls])
