"""Kit tests of ol.instructor.class_grading.processes: the checks a class's
grading starts, each in a session of its own; stop() ends every one, the
children they left included, and the run() waiting on each raises
Interrupted, never a record; a check past its time is killed with its
group; after stop() nothing starts.  Checks are played by small Python
programs."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from ol.instructor.class_grading.processes import STOP_GRACE, CheckProcesses, Interrupted

# A check that starts a child of its own and sleeps; it writes its child's pid into {pid_file} first.
WITH_A_CHILD = ("import subprocess, sys, time\n"
                "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                "open({pid_file!r}, 'w').write(str(child.pid))\ntime.sleep(60)\n")
# A check that ignores SIGTERM: only SIGKILL ends it.
DEAF = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)\n"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def in_thread(processes: CheckProcesses, program: str, timeout: float = 60) -> dict:
    """run() in a thread, as a grading's worker calls it: {"result": ...} or {"raised": ...} once it returns."""
    said: dict = {}

    def work():
        try:
            said["result"] = processes.run([sys.executable, "-c", program], cwd=None, env=dict(os.environ),
                                           timeout=timeout)
        except BaseException as error:   # noqa: BLE001
            said["raised"] = error
    thread = threading.Thread(target=work)
    thread.start()
    said["thread"] = thread
    return said


def wait_for(condition, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.05)


def test_a_check_runs_to_its_end_with_its_output():
    done = CheckProcesses().run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"],
                                cwd=None, env=dict(os.environ), timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "err\n")


def test_stop_ends_every_check_and_what_it_started_and_each_waiter_is_interrupted(tmp_path):
    processes = CheckProcesses()
    waiting = [in_thread(processes, WITH_A_CHILD.format(pid_file=str(tmp_path / "pid"))), in_thread(processes, DEAF)]
    try:
        wait_for(lambda: len(processes._running) == 2)
    except AssertionError:
        processes.stop()                             # nothing left running past a failure here
        raise
    checks = list(processes._running)
    time.sleep(0.5)                                   # the first has started its child
    started = time.monotonic()
    processes.stop()
    assert time.monotonic() - started < STOP_GRACE + 2
    for said in waiting:
        said["thread"].join(timeout=30)
        assert isinstance(said.get("raised"), Interrupted), said
    assert not any(alive(check.pid) for check in checks), "a check outlived stop()"
    with pytest.raises(Interrupted):
        processes.run([sys.executable, "-c", "pass"], cwd=None, env=dict(os.environ), timeout=60)


def test_the_child_a_check_left_is_ended_with_it(tmp_path):
    processes = CheckProcesses()
    said = in_thread(processes, WITH_A_CHILD.format(pid_file=str(tmp_path / "pid")))
    try:
        wait_for(lambda: (tmp_path / "pid").is_file() and (tmp_path / "pid").read_text())
        child = int((tmp_path / "pid").read_text())
        assert alive(child)
    finally:
        processes.stop()
    said["thread"].join(timeout=30)
    wait_for(lambda: not alive(child), seconds=STOP_GRACE + 5)


def test_a_check_past_its_time_is_killed_with_its_group(tmp_path):
    """The check ignores SIGTERM and has a child: both are gone once run() raises."""
    program = WITH_A_CHILD.format(pid_file=str(tmp_path / "pid")).replace(
        "import subprocess, sys, time\n", "import signal, subprocess, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        CheckProcesses().run([sys.executable, "-c", program], cwd=None, env=dict(os.environ), timeout=2)
    child = int((tmp_path / "pid").read_text())
    wait_for(lambda: not alive(child), seconds=5)
