"""Kit tests of ol.grading.sandbox.confine: exit statuses and their words,
the run users two checks draw, the Docker default profile as the kit plays
it, a Python the grader cannot confine, and a run that dies with its guard."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.kit import DOCKER_DEFAULT, ROOT, explain, virtual_environment
from helpers.processes import uid_of
from ol.grading import scheduler
from ol.grading.sandbox import confine


def test_a_python_installed_under_tmp_is_not_confined_and_says_why(tmp_path):
    python = virtual_environment(tmp_path / "venv")
    r = subprocess.run([str(python), str(ROOT / "ol"), "check", "L7.3", "--ref-deps", "--require-confinement"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, explain(r)
    assert "installed under /tmp" in r.stderr and str(tmp_path / "venv") in r.stderr, explain(r)


def old_formula_uid(workers: int, pid: int, index: int) -> int:
    """The run user of slot `index` before UidBlock: a base per grader from its pid."""
    return 61000 + 2 * workers * (pid % 400) + index


def slot_users(uid, workers: int) -> list[int]:
    """Every run user one check with `workers` workers uses: its runs' both sides and its collector."""
    return ([uid(scheduler.tests_slot(k)) for k in range(workers)] + [uid(scheduler.impl_slot(k)) for k in range(workers)]
            + [uid(scheduler.collector_slot(workers))])


@pytest.mark.parametrize("workers", [1, 2, 3, 8])
def test_the_slots_of_two_checks_at_once_never_share_a_run_user(workers):
    """Every slot a check uses (both sides of each worker's run, the
    collector) lies inside its slot_count, no two the same.  A run's user is
    not its slot's: each run draws a fresh one, so two checks holding their
    blocks at once never draw the same user, one check never draws a user
    twice, and which user a run gets says nothing of its slot or of how many
    runs came before it.  The old formula, a base of 2 * workers * (pid %
    400), gave two checks one user: the collector's slot of one check was the
    first tests slot of the check whose pid was one more."""
    count = scheduler.slot_count(workers)
    indices = slot_users(lambda index: index, workers)
    assert sorted(indices) == list(range(count)), indices
    pid = 4242
    old_first = set(slot_users(lambda index: old_formula_uid(workers, pid, index), workers))
    old_second = set(slot_users(lambda index: old_formula_uid(workers, pid + 1, index), workers))
    assert old_first & old_second, "the old formula is the attack this test must be able to see"
    if os.geteuid() != 0:
        pytest.skip("run users are switched to (and blocks held) only as root")
    first, second = confine.UidBlock(), confine.UidBlock()
    try:
        drawn = [[block.draw() for _ in range(500)] for block in (first, second)]
        assert all(len(set(users)) == len(users) for users in drawn), "a user drawn twice in one check"
        assert not set(drawn[0]) & set(drawn[1]), "two checks drew one user"
        assert all(first.base <= u < first.base + confine.UID_BLOCK for u in drawn[0])
        steps = [b - a for a, b in zip(drawn[0], drawn[0][1:])]
        assert len(set(steps)) > 400, "the draws follow a pattern a run could read its place from"
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("how, code, said", [
    ("exit", 3, "exit status 3: the suite does not collect"), ("signal", 128 + signal.SIGKILL, "signal 9"),
    ("fault", confine.RUN_FAULT, "exit status 70: the run could not be set up, or the grader's code failed in it")])
def test_a_wait_status_reads_as_the_shells_exit_code_and_its_words(how, code, said):
    """The kernel's wait status of a real child, against the shell's
    convention (128 + signal) and the words every message uses."""
    child = os.fork()
    if child == 0:
        if how == "signal":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(3 if how == "exit" else confine.RUN_FAULT)
    _, status = os.waitpid(child, 0)
    assert confine.exit_code(status) == code
    assert confine.describe_exit(confine.exit_code(status)) == said
    assert confine.describe_exit(-signal.SIGKILL) == "signal 9", "a Popen returncode for a signal"


def test_docker_default_refuses_namespaces_and_leaves_setuid():
    """The simulation itself: bubblewrap cannot start, a user switch works,
    and the grader chooses to confine by uid."""
    probe = ("import os, subprocess, sys; from ol.grading.sandbox import confine; "
             "b = subprocess.run(['bwrap', '--ro-bind', '/', '/', '--unshare-pid', 'true'], capture_output=True); "
             "print(b.returncode, confine.choose_confinement()[0])")
    r = subprocess.run([*DOCKER_DEFAULT, sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, explain(r)
    code, mode = r.stdout.split()
    assert code != "0" and mode == confine.BY_UID, r.stdout


def test_a_run_dies_with_its_guard_once_it_has_a_user_of_its_own():
    """A change of user clears a process's parent-death signal.  No init
    stands between a run and its guard (confine._run): a run that did not set
    the signal again once it had its own user would live on, as that user,
    when its guard dies.  Confined by uid (as root), a run that sleeps: its
    guard is SIGKILLed, and the run follows it within seconds."""
    import signal
    import socket
    import tempfile
    import time


    if os.geteuid() != 0:
        pytest.skip("a run takes a user of its own only as root")
    block = confine.UidBlock()
    user = block.draw()
    above = Path(tempfile.mkdtemp(prefix="ol-test-run-"))   # as a role's runs_root: 0711, on a path
    above.chmod(0o711)                                       # every user may pass through
    folder = above / "run"
    folder.mkdir(mode=0o700)
    os.chown(folder, user, user)
    ours, theirs = socket.socketpair()
    started, says = os.pipe()

    def body(moved):
        os.write(3, b"x")
        time.sleep(120)
        return 0

    try:
        guard = confine.run_confined(body, confinement=confine.BY_UID, user=user, limits=confine.Limits(),
                                     keep_fds={says: 3}, report_fd=theirs.fileno(), private=str(folder))
        os.close(says)
        assert os.read(started, 1) == b"x", f"the run never started: {ours.recv(4096)!r}"
        run = int(Path(f"/proc/{guard}/task/{guard}/children").read_text().split()[0])
        assert uid_of(run) == user
        os.kill(guard, signal.SIGKILL)
        os.waitpid(guard, 0)
        deadline = time.monotonic() + 10
        while _alive(run) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(run), "the run outlived its guard"
    finally:
        confine.kill_user(user)
        block.close()
        shutil.rmtree(above, ignore_errors=True)
        for end in (ours, theirs):
            end.close()
        os.close(started)


def _alive(pid: int) -> bool:
    """pid runs (a zombie has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status
