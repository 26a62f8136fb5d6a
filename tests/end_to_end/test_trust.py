"""The grade cannot be forged: a gallery of cheating suites, the confinement
of every run, and faults of the grader itself (python/ol/grading/README.md
gives the process model and the threat model these tests hold it to).

    gallery      tests/grading_suites/cheats/*: one suite per way a student
                 might try to earn the grade without the work.  None passes
                 or gains score, in the local check (shared collection) or the
                 instructor's (isolated runs); none changes a file outside
                 its own folder; no process of theirs outlives the check.
    state        no run reads or changes the grader's own session keyring,
                 nor leaves a key for a later run; the instructor's checkout
                 (on sys.path through an editable install's .pth file) is out
                 of reach in `ol grade`.
    faults       a crashing collector, a crashing warm process, a killed
                 implementation process, SIGINT and SIGTERM: exit 2 or 130/143,
                 no score, nothing left behind.  Whatever bytes a run writes
                 to its report cost only that run (the parser itself, fuzzed:
                 tests/grading/test_protocol.py).
    resources    a run that forks to allocate past its memory bound is
                 killed, and the host never loses more than the bound; a CPU
                 hog beside a check changes no verdict.
    two checks   a check's runs cannot reach another's through their users
                 (a range of run users per check; the draws themselves:
                 tests/grading/sandbox/test_confine.py).
    no namespaces  as root in Docker's default seccomp profile (simulated:
                 tests/helpers/docker_default.py), the gallery and `ol grade` still
                 confine every run (by uid): no pass, no gain, nothing left.
                 `ol grade` gives the gallery nothing in either mode (the
                 Gradescope bundle: tests/end_to_end/test_class_grading.py).

The gallery grades against a sample of the counted mutants (every pitfall,
the correct implementations and their repeats are all there): what it
checks is that nothing but behaviour can move a verdict, for which a
sample is enough, and the full set would make it minutes longer.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.cheats import CHEATS, GALLERY, HOSTILE, MAX_CHEAT_SCORE, assert_nothing_left, assert_stopped, materialize
from helpers.classes import MODEL_ANSWER
from helpers.kit import (DOCKER_DEFAULT, ROOT, SANDBOX_PACKAGES, copy_checkout, explain, kill_group, run_ol,
                         sampled_home, sigint_as_at_a_terminal, snapshot, virtual_environment)
from helpers.processes import (command_line, descendants, files_of_run_users, owner_alive, parent,
                               proc_file, role, run_users, started, uid_of, vote_keys)
from helpers.sessions import sampled_session
from ol.core.test_folder import TestFolder
from ol.grading.check import CheckRequest, check_module
from ol.grading.events import Judged
from ol.grading.grader import Grader
from ol.grading.protocol import RunRequest
from ol.grading.sandbox import confine
from ol.grading.scheduler import Run
from ol.grading.session import GradingFault, GradingSession
from ol.grading.variants import Variant


def test_the_gallery_covers_every_class_of_the_threat_model():
    for cheat in ("vote-through-the-keyring", "vote-through-the-session-keyring", "read-the-graders-keyring",
                  "instructors-rope-through-sys-path", "rewrite-the-autograders-results"):
        assert cheat in GALLERY, cheat
    assert len(GALLERY) >= 25
    docs = " ".join((CHEATS / name / "test_cheat.py").read_text().split('"""')[1] for name in GALLERY)
    for kind in ("Forged verdicts", "Telling mutants apart without calling them", "Around the allow-list",
                 "Out of the fence", "Fail quietly", "Cross-run state"):
        assert kind in docs, f"no cheat of the class {kind!r}"


@pytest.fixture(scope="module")
def sampled():
    """sampled_session(); the repository's files before the gallery runs."""
    before = repository_files()
    yield sampled_session()
    assert repository_files() == before, "a cheating suite changed a file of the repository"


def repository_files() -> dict[str, str]:
    return snapshot(ROOT, skip=(".git", ".ol", ".pytest_cache", ".hypothesis", "build"))


@pytest.mark.needs_confinement
@pytest.mark.parametrize("sharing", ["shared"])   # isolated, in these namespaces: test_ol_grade_gives_the_gallery_nothing
@pytest.mark.parametrize("cheat", GALLERY)
def test_no_cheating_suite_passes_or_gains_score(cheat, sharing, sampled, tmp_path):
    folder = materialize(cheat, tmp_path)
    own_files = snapshot(folder)
    result = check_module(ROOT, "L7.3", CheckRequest(tests=folder, course_tests=False, time_limit=8, workers=2,
                                                     isolated=sharing == "isolated", fresh=True), session=sampled)
    assert_stopped(cheat, sharing, result)
    assert snapshot(folder) == own_files or cheat.startswith("counter"), "the kit's copy is read-only to runs"
    assert_nothing_left(cheat)


# ---- no state between runs, nothing of the grader's -----------------------------------------

KEYCTL_NUMBERS = {"x86_64": (248, 250), "aarch64": (217, 219)}   # add_key, keyctl
KEY_SPEC_SESSION_KEYRING, KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_READ = -3, 1, 11
SECRET = b"the instructor's API token"


def keyctl(*args) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall(KEYCTL_NUMBERS[platform.machine()][1], *args)


def session_keys() -> dict[int, bytes]:
    """{serial: payload} of the keys in this process's session keyring."""
    serials = (ctypes.c_int32 * 256)()
    size = keyctl(KEYCTL_READ, KEY_SPEC_SESSION_KEYRING, serials, ctypes.sizeof(serials))
    assert size >= 0, os.strerror(ctypes.get_errno())
    keys = {}
    for serial in serials[: size // 4]:
        payload = ctypes.create_string_buffer(4096)
        length = keyctl(KEYCTL_READ, serial, payload, 4096)
        keys[serial] = payload.raw[:length]
    return keys


@pytest.fixture
def graders_secret():
    """This process in a session keyring of its own (as pam_keyinit gives a
    login session) holding a secret, as an instructor's might."""
    named = keyctl(KEYCTL_JOIN_SESSION_KEYRING, b"ol-kit-test-grader-session")
    assert named > 0, os.strerror(ctypes.get_errno())
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    serial = libc.syscall(KEYCTL_NUMBERS[platform.machine()][0], b"user", b"instructor-secret", SECRET,
                          len(SECRET), KEY_SPEC_SESSION_KEYRING)
    assert serial > 0, os.strerror(ctypes.get_errno())
    yield serial
    keyctl(KEYCTL_JOIN_SESSION_KEYRING, None)   # a fresh anonymous one: the named one is released


KEYRING_CHEATS = ("read-the-graders-keyring", "vote-through-the-session-keyring", "vote-through-the-keyring")


@pytest.mark.needs_confinement
@pytest.mark.parametrize("sharing", ["shared", "isolated"])
def test_no_run_reads_or_changes_the_graders_keyring_or_leaves_a_key(sharing, graders_secret, sampled, tmp_path):
    """The grader runs in a session keyring holding a secret.  A suite that
    passes only if it reads a key there is rejected (it read nothing), the
    keyring holds the secret alone and unchanged afterwards, and no run
    left a key that /proc/keys shows (the vote cheats open theirs to
    every user)."""
    before = vote_keys()
    for cheat in KEYRING_CHEATS:
        folder = materialize(cheat, tmp_path)
        result = check_module(ROOT, "L7.3", CheckRequest(tests=folder, course_tests=False, time_limit=8, workers=2,
                                                         isolated=sharing == "isolated", fresh=True), session=sampled)
        assert not result.passed and (result.reason is not None or result.score <= MAX_CHEAT_SCORE), (
            cheat, result.score, result.reason)
        if cheat == "read-the-graders-keyring":
            assert result.reason == "your tests fail on a correct implementation", (result.reason, result.problems)
            assert "read no key of the grader's" in result.output, result.output[-2000:]
        assert session_keys() == {graders_secret: SECRET}, f"{cheat} changed the grader's session keyring"
    assert vote_keys() == before, "a run left a key in the kernel's keyrings"


def instructors_checkout(scratch: Path) -> tuple[Path, Path]:
    """An instructor's checkout with their own rope.py (the reference) in
    the student tree, installed editable into a venv the way pip does it (a
    .pth file naming <checkout>/python); (checkout, its python)."""
    checkout = copy_checkout(scratch / "instructor")
    (checkout / "python/tinyllm/modern").mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "course/reference/python/tinyllm/modern/rope.py", checkout / "python/tinyllm/modern")
    python = virtual_environment(scratch / "venv", holding=SANDBOX_PACKAGES)
    site_packages = next((scratch / "venv" / "lib").glob("python3*/site-packages"))
    (site_packages / "__editable__.tinyllm-0.pth").write_text(str(checkout / "python") + "\n")
    return checkout, python


# Suites that leave code of theirs where the shared check's collector may call it once the
# suite is collected; each records the pid of every process that calls it.  A run is pid 1 of
# its own namespace and never calls it itself, so a pid other than its own is the collector's
# (or a run's guard's, forked from it), whose memory the run inherits.
HOOKS_IN_THE_COLLECTOR = {
    "gc_callback": """
gc.disable()        # no collection but an explicit gc.collect() calls it
gc.callbacks.append(lambda phase, info: CALLERS.append(os.getpid()))
""",
    "at_fork": """
os.register_at_fork(before=lambda: CALLERS.append(os.getpid()),
                    after_in_parent=lambda: CALLERS.append(os.getpid()))
""",
    "ctypes_errcheck": """
def errcheck(result, function, arguments):
    CALLERS.append(os.getpid())
    return result


g = getattr                   # past the static check's words, as read-the-job-from-the-stack goes
for caller in dataclasses.inspect.stack():   # up to the collector's frame, whose C functions it calls later
    for value in list(g(caller.frame, "f_lo" + "cals").values()):
        if hasattr(value, "errcheck"):
            value.errcheck = errcheck

""",
}
# A builtin the collector's loop would look up by name, replaced once the collection is done
# (pytest_collection_finish); it records the calls made from the collector's own frame.
BUILTIN_AFTER_COLLECTION = """
import dataclasses
import typing

os, builtins = typing.sys.modules["os"], typing.sys.modules["builtins"]
g = getattr           # past the static check's words
LEN_CALLERS = []


def pytest_collection_finish(session):
    own_len = builtins.len

    def recording_len(sized):   # a call from the collector's own loop, not from collect()'s code
        caller = g(dataclasses.inspect.currentframe(), "f_ba" + "ck")
        if g(g(caller, "f_co" + "de"), "co_na" + "me") == "serve_collected":
            LEN_CALLERS.append(os.getpid())
        return own_len(sized)

    builtins.len = recording_len
"""
BUILTIN_WATCHER = """
import typing

os = typing.sys.modules["os"]


def test_no_builtin_of_the_suites_ran_in_the_collector():
    conftest, = [m for m in list(typing.sys.modules.values()) if hasattr(m, "LEN_CALLERS")]
    assert [pid for pid in conftest.LEN_CALLERS if pid != os.getpid()] == []
"""
# Shared memory mapped while collecting, with ctypes' pointer conversion replaced so that the
# collector's munmap, which every run makes before the suite's tests, would be handed another address.
SHARED_MEMORY_WATCHER = """
import typing

import numpy as np
import numpy.ctypeslib

g = getattr           # past the static check's words
SHARED = g(np, "mem" + "map")("/tmp/ol-marks.bin", dtype=np.uint8, mode="w+", shape=(4096,))
pointer = numpy.ctypeslib.ctypes.c_void_p
KEPT, convert = SHARED.ctypes.data, pointer.from_param


def elsewhere(cls, address):
    return convert(0 if address == KEPT else address)


pointer.from_param = classmethod(elsewhere)


def test_no_run_finds_the_mark_of_another():
    with g(typing.sys.modules["builtins"], "op" + "en")("/proc/self/maps") as maps:
        if "ol-marks.bin" not in maps.read():
            return              # unmapped, as in every run
    seen, SHARED[0] = int(SHARED[0]), 1
    assert seen == 0
"""
# Every ctypes array of six words in the collector's frame (the capabilities it leaves a run) filled
# with ones, while collecting: capset would then keep every capability of the run's user namespace.
CAPABILITIES_WATCHER = """
import dataclasses
import typing

g = getattr           # past the static check's words
for caller in dataclasses.inspect.stack():
    for value in list(g(caller.frame, "f_lo" + "cals").values()):
        if g(value, "_length_", None) == 6 and hasattr(value, "_type_"):
            for word in range(6):
                value[word] = 0xFFFFFFFF


def test_a_run_holds_no_capability():
    with g(typing.sys.modules["builtins"], "op" + "en")("/proc/self/status") as status:
        effective, = [line for line in status if line.startswith("CapEff:")]
    assert int(effective.split()[1], 16) == 0
"""
# A run's memory group as /proc/self/cgroup gives it: the root of its own cgroup namespace, the
# same for every run, so its path tells no run which slot it runs in.
MEMORY_GROUP_WATCHER = """
import typing

g = getattr           # past the static check's words


def test_a_runs_memory_group_is_the_root_of_its_own():
    with g(typing.sys.modules["builtins"], "op" + "en")("/proc/self/cgroup") as groups:
        paths = [line.strip().split(":", 2)[2] for line in groups if ":memory:" in line or line.startswith("0::")]
    assert paths and set(paths) == {"/"}, paths
"""
HOOK_WATCHER = """
import dataclasses
import typing

gc, os = typing.sys.modules["gc"], typing.sys.modules["os"]   # past the allow-list, as a cheat would
CALLERS = []
{hook}

def test_no_code_of_the_suite_ran_in_the_collector():
    assert [pid for pid in CALLERS if pid != os.getpid()] == []
"""


@pytest.mark.needs_confinement
def test_no_hook_added_while_collecting_runs_in_the_collector(sampled, tmp_path):
    """The shared check's collector calls gc.collect(), forks, calls C
    functions through ctypes and uses builtins once the suite is collected.
    A gc callback, an at-fork handler, a ctypes errcheck or a replaced
    builtin the suite left would run there, beside the loop that reads every
    run's end; a replaced ctypes conversion would keep shared memory mapped
    in every run, and changed ctypes arrays would leave it capabilities; a
    memory group's name would tell a run its slot.  Each watcher's test would then fail on the correct runs and
    be left out."""
    suite = tmp_path / "l7-3-rope"
    shutil.copytree(MODEL_ANSWER, suite)
    for name, hook in HOOKS_IN_THE_COLLECTOR.items():
        (suite / f"test_{name}.py").write_text(HOOK_WATCHER.format(hook=hook))
    (suite / "conftest.py").write_text(BUILTIN_AFTER_COLLECTION)
    (suite / "test_builtin_len.py").write_text(BUILTIN_WATCHER)
    (suite / "test_shared_memory.py").write_text(SHARED_MEMORY_WATCHER)
    (suite / "test_capabilities.py").write_text(CAPABILITIES_WATCHER)
    (suite / "test_memory_group.py").write_text(MEMORY_GROUP_WATCHER)
    result = check_module(ROOT, "L7.3", CheckRequest(tests=suite, course_tests=False, workers=2, fresh=True),
                          session=sampled)
    assert result.reason is None and result.rejected == [] and result.passed, (result.reason, result.rejected)
    assert result.graded_tests == result.tests, "every test graded: the watchers among them"


@pytest.mark.needs_confinement
def test_ol_grade_keeps_the_instructors_checkout_out_of_reach():
    """`ol grade` grades from a copy of the kit; the instructor's checkout is
    still on sys.path (an editable install).  A suite that walks every
    sys.path entry and / for the instructor's files, and for a rope.py to use
    as its oracle, finds neither: it fails on the reference, saying so."""
    scratch = Path(tempfile.mkdtemp(prefix="ol-instructor-", dir="/var/tmp"))
    try:
        checkout, python = instructors_checkout(scratch)
        seen = subprocess.run([str(python), "-c", "import sys; print(sys.path)"], capture_output=True, text=True)
        assert str(checkout / "python") in seen.stdout, seen   # the editable install is in force
        submissions = scratch / "class"
        cheat = materialize("instructors-rope-through-sys-path", scratch, root=checkout)
        (submissions / "sam" / "python/tests").mkdir(parents=True)
        shutil.copytree(cheat, submissions / "sam" / "python/tests/l7-3-rope")
        (submissions / "sam" / "python/tinyllm/modern").mkdir(parents=True)
        shutil.copy2(ROOT / "course/reference/python/tinyllm/modern/rope.py", submissions / "sam/python/tinyllm/modern")
        out = scratch / "graded"
        r = subprocess.run([str(python), str(checkout / "ol"), "grade", "L7.3", str(submissions), "--out", str(out),
                            "--jobs", "1", "--time-limit", "20"], cwd=scratch, capture_output=True, text=True,
                           timeout=900)
        assert r.returncode == 0, explain(r)
        record = json.loads((out / "sam.json").read_text())
        assert record["reason"] == "your tests fail on a correct implementation", record
        assert "nothing of the instructor's: walked" in record["output"] and "saw []" in record["output"], (
            record["output"][-3000:])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ---- where the student's Python lives ---------------------------------------------------


@pytest.mark.needs_confinement
def test_a_venv_inside_the_checkout_is_seen_by_the_runs_and_the_checkout_is_not():
    # /var/tmp, not pytest's /tmp: a Python under /tmp cannot be confined (next test)
    scratch = Path(tempfile.mkdtemp(prefix="ol-venv-", dir="/var/tmp"))
    try:
        checkout = copy_checkout(scratch / "checkout")
        python = virtual_environment(checkout / ".venv", holding=SANDBOX_PACKAGES)
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


@pytest.mark.needs_confinement
def test_the_observer_never_imports_the_suite_or_the_code_under_test(sampled, tmp_path):
    folder = tmp_path / "l7-3-rope"
    shutil.copytree(MODEL_ANSWER, folder)
    (folder / "test_rope_oracle.py").rename(folder / "test_only_in_a_sandbox.py")
    before = set(sys.modules)
    result = check_module(ROOT, "L7.3", CheckRequest(tests=folder, course_tests=False, fresh=True), session=sampled)
    assert result.passed, (result.reason, result.problems)
    imported = set(sys.modules) - before
    assert not [m for m in imported if "only_in_a_sandbox" in m or m.startswith(("tinyllm", "_ol_contract"))], imported


# ---- faults of the grader ---------------------------------------------------------------


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
        if isinstance(event, Judged):
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
    assert not left, f"processes left behind: {[command_line(p) for p in left]}"


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
        check_module(ROOT, "L7.3", CheckRequest(tests=folder, course_tests=False, time_limit=20, fresh=True),
                     session=sampled, on_event=on_event)
    assert on_event.seen["killed"], f"no {victim} was found to kill"
    nothing_left(before)


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
    alive = [p for p in tree if os.path.exists(f"/proc/{p}") and command_line(p)]
    assert not alive, f"processes outlived the interrupted check: {[command_line(p) for p in alive]}"
    assert list(scratch.iterdir()) == [], "temporary folders were left behind"


# ---- what a run writes -------------------------------------------------------------------


def hostile_suite(tmp_path: Path) -> Path:
    """The model answer plus a test that writes every HOSTILE payload to its
    report descriptor (4), at import and when it runs, and passes."""
    folder = tmp_path / "l7-3-rope"
    shutil.copytree(MODEL_ANSWER, folder)
    (folder / "test_writes_into_its_report.py").write_text(
        "import random\n\nos_module = random._os\n"
        f"PAYLOADS = {HOSTILE!r}\n\n\n"
        "def write_all():\n    for payload in PAYLOADS:\n        try:\n            os_module.write(4, payload)\n"
        "        except OSError:\n            pass\n\n\nwrite_all()\n\n\n"
        "def test_writes_into_its_report():\n    write_all()\n")
    return folder


@pytest.fixture(scope="module")
def model_answer_kills(sampled):
    result = check_module(ROOT, "L7.3", CheckRequest(tests=MODEL_ANSWER, course_tests=False, isolated=True),
                          session=sampled)
    assert result.reason is None, (result.reason, result.problems)
    return result.killed, result.counted


@pytest.mark.parametrize("sharing", ["shared", "isolated"])
def test_hostile_bytes_in_a_runs_report_cost_only_that_runs_lines(sharing, sampled, model_answer_kills, tmp_path):
    """Issue 17's attack and other hostile reports, written by the tests'
    side: the check grades as the model answer alone does (the writes lose
    only the run's own report lines), no GradingFault."""
    result = check_module(ROOT, "L7.3", CheckRequest(tests=hostile_suite(tmp_path), course_tests=False, time_limit=20,
                                                     isolated=sharing == "isolated", fresh=True), session=sampled)
    assert result.reason is None, (result.reason, result.problems)
    assert (result.killed, result.counted) == model_answer_kills


def student_rope_writing(payload: bytes) -> Variant:
    """The reference rope.py, writing `payload` to its report descriptor at
    import, as the student's code in the implementation's sandbox."""
    reference = (ROOT / "course/reference/python/tinyllm/modern/rope.py").read_text()
    write = f"\n\nimport os as _os\ntry:\n    _os.write(4, {payload!r})\nexcept OSError:\n    pass\n"
    return Variant("student", reference + write, "python/tinyllm/modern/rope.py")


@pytest.mark.needs_confinement
def test_a_student_rope_writing_hostile_bytes_does_not_stop_the_course_tests(sampled):
    with sampled.scheduler({}, course=True, workers=2) as scheduler:
        grader = Grader(sampled, scheduler, time_limit=60)
        course = grader.course_tests(student_rope_writing(b"".join(HOSTILE)))
    assert course.ok and course.passed and not course.failed, course.output[-3000:]


@pytest.mark.needs_confinement
def test_random_bytes_from_both_sides_of_a_real_run_cost_only_that_run(sampled, tmp_path):
    """Hypothesis drives real runs on one pair of warm processes: the
    implementation (the student's, confined) writes the bytes to its report,
    and returns them to the tests, which write them to theirs.  Every run
    ends as the suite decides (it passes), and the warm processes live on."""
    folder = tmp_path / "echo"
    folder.mkdir()
    (folder / "test_echo.py").write_text(
        "import random\n\nimport numpy as np\nfrom tinyllm.modern.rope import rope_cos_sin\n\n\n"
        "def test_echo():\n    cos, _ = rope_cos_sin(np.arange(1), np.array([1.0], np.float32))\n"
        "    random._os.write(4, cos.tobytes())\n")
    with sampled.scheduler({"student": TestFolder(folder).snapshot()}, course=False, workers=1) as scheduler:
        grader = Grader(sampled, scheduler, time_limit=20)

        @settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(st.one_of(st.binary(min_size=1, max_size=5000), st.sampled_from(HOSTILE)))
        def one_run(payload):
            variant = student_rope_writing(payload)
            source = variant.source.replace(
                "def rope_cos_sin(", f"_PAYLOAD = {payload!r}\n\n\ndef _real_rope_cos_sin(", 1) + (
                "\n\ndef rope_cos_sin(positions, inv_freq, *args, **kwargs):\n"
                "    import numpy as _np\n    return _np.frombuffer(_PAYLOAD, _np.uint8), _np.zeros(1)\n")
            run = Run(grader._id(), RunRequest(suite="student", task="grade"),
                      Variant("student", source, variant.origin).request(), 20)
            outcome = scheduler.run([run])[run.id]
            assert outcome.exit == 0 and outcome.fault is None, (outcome, payload[:100])

        one_run()


# ---- resources ---------------------------------------------------------------------------


def memory_of_descendants() -> int:
    """Bytes of memory the processes below this one hold, each shared page
    counted once (the sum of their PSS).  What the host loses to the grader:
    /proc/meminfo's MemAvailable would count the machine's other users too."""
    total = 0
    for pid in descendants(os.getpid()):
        for line in proc_file(pid, "smaps_rollup").split(b"\n"):
            if line.startswith(b"Pss:"):
                total += int(line.split()[1]) * 1024
    return total


@pytest.mark.needs_confinement
def test_a_run_that_forks_to_allocate_past_its_memory_bound_is_killed(sampled, tmp_path):
    """Three children of 1 GiB each, all held at once, against the default
    bound of 2 GiB per run: a process of the run is killed (the cgroup) or
    its allocation fails (the rlimit fallback), so the suite fails on the
    reference; and the grader's processes never hold more than the bound
    and the sandboxes' own (about 100 MiB each)."""
    folder = tmp_path / "l7-3-rope"
    folder.mkdir()
    (folder / "test_hoard.py").write_text(
        "import random\n\nimport numpy as np\nfrom tinyllm.modern.rope import rope_cos_sin\n\n"
        "os_module = random._os\n\n\n"
        "def test_hoard_in_children():\n"
        "    ready_read, ready_write = os_module.pipe()\n    go_read, go_write = os_module.pipe()\n"
        "    children = []\n    for _ in range(3):\n        pid = os_module.fork()\n        if pid == 0:\n"
        "            os_module.close(ready_read)\n            os_module.close(go_write)\n"
        "            hoard = np.ones(1 << 27)   # 1 GiB, every page written\n"
        "            os_module.write(ready_write, b'x')\n            os_module.close(ready_write)\n"
        "            os_module.read(go_read, 1)   # held until all three hold theirs\n"
        "            os_module._exit(0 if hoard[-1] == 1 else 1)\n"
        "        children.append(pid)\n"
        "    os_module.close(ready_write)\n    os_module.close(go_read)\n    ready = b''\n"
        "    while len(ready) < 3 and (chunk := os_module.read(ready_read, 3)):\n        ready += chunk\n"
        "    os_module.close(go_write)\n"
        "    assert [os_module.waitpid(pid, 0)[1] for pid in children] == [0, 0, 0] and ready == b'xxx'\n")
    bound = confine.Limits().memory
    highest, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            highest[0] = max(highest[0], memory_of_descendants())
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = check_module(ROOT, "L7.3", CheckRequest(tests=folder, course_tests=False, workers=1, time_limit=30,
                                                         isolated=True), session=sampled)
    finally:
        done.set()
        watcher.join()
    held = highest[0]
    assert held <= bound + (300 << 20), f"the grader held {held >> 20} MiB with one run bound to {bound >> 20} MiB"
    assert result.reason == "your tests fail on a correct implementation", (result.reason, result.problems)
    assert "2.0 GiB per run" in getattr(result, "memory_bound", ""), getattr(result, "memory_bound", None)


class CpuHog:
    """Twelve shell loops spinning beside a check, from the moment start()
    is called.  Where the cgroup v1 cpu controller is writable, the hogs and
    the check's processes share at most half a core (a cpu cgroup of their
    own: every run of the check takes several times as long by the clock,
    and the machine's other users lose at most half a core); elsewhere the
    hogs simply run beside it."""

    HOGS = 12
    QUOTA = 50000   # microseconds of processor time per 100000

    def __init__(self):
        self.hogs: list[subprocess.Popen] = []
        self.group = Path("/sys/fs/cgroup/cpu") / f"ol-kit-hog-{os.getpid()}"
        try:
            self.group.mkdir()
            (self.group / "cpu.cfs_period_us").write_text("100000")
            (self.group / "cpu.cfs_quota_us").write_text(str(self.QUOTA))
        except OSError:
            self.group = None

    def start(self) -> None:
        self.hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(self.HOGS)]
        if self.group is not None:
            for pid in [os.getpid(), *descendants(os.getpid())]:
                self._move(pid, self.group)

    def stop(self) -> None:
        for hog in self.hogs:
            hog.kill()
            hog.wait()
        if self.group is not None:
            for pid in [os.getpid(), *descendants(os.getpid())]:
                self._move(pid, self.group.parent)
            self.group.rmdir()

    @staticmethod
    def _move(pid: int, group: Path) -> None:
        try:
            (group / "cgroup.procs").write_text(str(pid))
        except OSError:   # it ended meanwhile
            pass


@pytest.mark.needs_confinement
def test_a_cpu_hog_beside_a_check_changes_no_verdict():
    """A calibration suite (the one with most survivors) graded alone; then
    four of its survivors, four of its kills and two pitfalls graded again
    with a CPU hog beside the check from the first mutant on (the correct
    implementations' own times are measured unloaded: the worst case for a
    limit derived from them; only a survivor can turn into a kill): the same
    verdicts.  Beside the hog every run takes several times as long by the
    clock, so the sample is small."""
    session = GradingSession(ROOT, "L7.3")
    suite = ROOT / "tests/calibration/l7-3-suite-c"
    alone = check_module(ROOT, "L7.3", CheckRequest(tests=suite, course_tests=False, isolated=True), session=session)
    verdicts_alone = {m.id: m.killed for m in alone.mutants}
    survivors = [m for m in session.mutants.counted if not verdicts_alone[m.id]]
    kills = [m for m in session.mutants.counted if verdicts_alone[m.id]]
    assert survivors, "no survivor: nothing that load could turn into a kill"
    session.mutants = dataclasses.replace(session.mutants, counted=survivors[::max(1, len(survivors) // 4)][:4]
                                          + kills[::len(kills) // 4][:4], pitfalls=session.mutants.pitfalls[:2])
    hog = CpuHog()

    def start_the_hog(event):
        if isinstance(event, Judged) and not hog.hogs:
            hog.start()

    try:
        loaded = check_module(ROOT, "L7.3", CheckRequest(tests=suite, course_tests=False, isolated=True),
                              session=session, on_event=start_the_hog)
    finally:
        hog.stop()
    assert hog.hogs, "the hog never started"
    assert alone.reason is None and loaded.reason is None, (alone.problems, loaded.problems)
    verdicts_loaded = {m.id: m.killed for m in loaded.mutants}
    changed = sorted(k for k, killed in verdicts_loaded.items() if killed != verdicts_alone[k])
    assert not changed, f"beside the hog these mutants got another verdict: {changed}"
    assert [p.killed for p in loaded.pitfalls] == [p.killed for p in alone.pitfalls[:2]]


# ---- two checks at once ---------------------------------------------------------------------

# A run of one check fills its user's process count (RLIMIT_NPROC, 64) and holds it; a run of
# another check with the same user could then not fork.  The kernel counts a user's processes
# across user and pid namespaces, so this is a channel between checks (and a way to fail
# another student's suite) whenever two checks share run users: the old 61000 + slot did.
HOLD_EVERY_PROCESS = """
import random
import typing

os_module = random._os
sleep = typing.sys.modules["time"].sleep


def test_hold_every_process_of_my_user():
    while True:
        try:
            pid = os_module.fork()
        except OSError:
            break
        if pid == 0:
            sleep(600)
            os_module._exit(0)
    sleep(600)
"""
FORKS_A_LITTLE = """
import random

os_module = random._os


def test_four_forks():
    for _ in range(4):
        pid = os_module.fork()
        if pid == 0:
            os_module._exit(0)
        os_module.waitpid(pid, 0)
"""
CHECK_DRIVER = """
import json, signal, sys
from pathlib import Path
sys.path[:0] = [{tests!r}]
from helpers.kit import ROOT
from helpers.sessions import sampled_session
from ol.grading.check import CheckRequest, check_module
from ol.grading.sandbox import confine


class OneRangeForAll:   # the old code: every check's runs among the same few users, RUN_UID_BASE + slot
    def __init__(self):
        self.base, self.drawn = confine.RUN_UID_BASE, 0

    def draw(self):
        self.drawn += 1
        return self.base + self.drawn % 5

    def sweep(self):
        pass

    def close(self):
        pass


if {one_range!r}:
    confine.UidBlock = OneRangeForAll
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # unwind: the scheduler removes what it made
result = check_module(ROOT, "L7.3", CheckRequest(tests=Path({suite!r}), course_tests=False, isolated=True,
                                                  time_limit=60, workers=2), session=sampled_session())
print(json.dumps({{"reason": result.reason, "problems": result.problems, "killed": result.killed,
                  "rejected": [entry["test"] for entry in result.rejected]}}), flush=True)
"""


def users_holding(at_least: int) -> list[int]:
    """Run users (the whole range UidBlock hands out) with at least that many processes."""
    counts: dict[int, int] = {}
    for pid in run_users(settle=0, left_only=False):
        counts[uid_of(pid)] = counts.get(uid_of(pid), 0) + 1
    return [uid for uid, count in counts.items() if count >= at_least]


@pytest.mark.needs_confinement
@pytest.mark.parametrize("one_range", [False, True], ids=["a-range-per-check", "one-range-for-all"])
def test_a_check_cannot_reach_another_checks_runs_through_their_user(one_range, tmp_path):
    """Check A's suite holds every process its run user may have; check B,
    started meanwhile, forks a little in its tests.  With a range of run
    users per check (confine.UidBlock), B grades as it does alone.  With one
    range for all (the old code, played by OneRangeForAll), A's runs make
    some of B's runs fail: the attack works, so this test can tell the two
    apart."""
    suites = {}
    for name, text in (("hold", HOLD_EVERY_PROCESS), ("fork", FORKS_A_LITTLE)):
        suites[name] = tmp_path / name / "l7-3-rope"
        suites[name].mkdir(parents=True)
        (suites[name] / "test_suite.py").write_text(text)

    def driver(name: str) -> list[str]:
        return [sys.executable, "-c", CHECK_DRIVER.format(tests=str(ROOT / "tests"), one_range=one_range,
                                                          suite=str(suites[name]))]

    before = set(users_holding(1))
    holder = subprocess.Popen(driver("hold"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not set(users_holding(48)) - before:
            assert holder.poll() is None and time.monotonic() < deadline, holder.communicate()
            time.sleep(0.2)
        held = set(users_holding(48)) - before
        forker = subprocess.run(driver("fork"), capture_output=True, text=True, timeout=600)
    finally:
        holder.terminate()
        holder.communicate(timeout=60)
    assert forker.returncode == 0, explain(forker)
    result = json.loads(forker.stdout.splitlines()[-1])
    # B's test never calls the code, so alone it catches nothing and passes everywhere; each run whose fork
    # fails because A's runs hold its user shows: a correct run left out (rejected), or a mutant "caught"
    reached = bool(result["rejected"]) or result["killed"] > 0
    if one_range:
        assert reached, result
    else:
        assert not reached and result["reason"] is None, (result, f"check A's runs held the users {sorted(held)}")
    assert not run_users(), f"processes of the runs' users left: {[command_line(p) for p in run_users()]}"


# ---- where namespaces are refused (Docker's default, as on Gradescope) ---------------------


@pytest.mark.needs_confinement
@pytest.mark.parametrize("where", ["namespaces", "namespace-less"])
def test_ol_grade_gives_the_gallery_nothing(where, tmp_path):
    """`ol grade --jobs 2` on a class of the honest model answer and every
    cheat of the gallery, with bubblewrap, and in Docker's default profile
    (each run as a user of its own, under Landlock): the honest one passes
    with every mutant killed, no cheat passes or gains, each record names
    its confinement; nothing written outside the results folder, no key,
    nothing of a run's user left, no scratch folder of the grader's.  (In
    Docker's default profile this is the instructor's `ol check --isolated`
    on every cheat: ol grade runs it for each student.)"""
    under, mode = ([], confine.CONFINED) if where == "namespaces" else (DOCKER_DEFAULT, confine.BY_UID)
    submissions = tmp_path / "class"
    rope = (ROOT / "course/reference/python/tinyllm/modern/rope.py").read_bytes()
    for name, folder in [("honest", MODEL_ANSWER)] + [(c, materialize(c, tmp_path / "cheats")) for c in GALLERY]:
        shutil.copytree(folder, submissions / name / "python/tests/l7-3-rope")
        (submissions / name / "python/tinyllm/modern").mkdir(parents=True)
        (submissions / name / "python/tinyllm/modern/rope.py").write_bytes(rope)
    out = tmp_path / "graded"
    before_keys, before_repo = vote_keys(), repository_files()
    before_scratch = set(Path("/tmp").glob("ol-sandbox-*"))
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               HOME=str(sampled_home(tmp_path / "home")))
    env.pop("XDG_CACHE_HOME", None)
    r = subprocess.run([*under, str(ROOT / "ol"), "grade", "L7.3", str(submissions), "--out", str(out),
                        "--time-limit", "20", "--jobs", "2", "--feedback", "none"],
                       capture_output=True, text=True, timeout=3000, cwd=tmp_path, env=env)
    assert r.returncode == 0, explain(r)
    records = {name: json.loads((out / f"{name}.json").read_text()) for name in ["honest", *GALLERY]}
    honest = records["honest"]
    assert honest["passed"] and honest["killed"] == honest["counted"] and honest["counted"] > 0, honest
    for name, record in records.items():
        assert record["confinement"] == mode and not record.get("error"), record
        if name != "honest":
            assert_stopped(name, f"ol grade, {where}", record)
            assert_nothing_left(name)
    assert sorted(p.name for p in out.iterdir()) == sorted(["grades.csv", "summary.md", "honest.json",
                                                            *[f"{c}.json" for c in GALLERY]])
    assert repository_files() == before_repo and vote_keys() == before_keys
    assert not run_users() and not files_of_run_users("/tmp", "/var/tmp", "/dev/shm", str(tmp_path))
    left = [folder for folder in set(Path("/tmp").glob("ol-sandbox-*")) - before_scratch if not owner_alive(folder)]
    assert not left, f"the grader's scratch folder was left: {left}"
