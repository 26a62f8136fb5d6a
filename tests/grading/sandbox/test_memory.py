"""Kit tests of ol.grading.sandbox.memory: where the host gives a memory
cgroup, every process of a run counts against one bound, past which the
kernel ends the run (signal 9); each slot's group takes a fresh name before
each run, and nothing is left after close(); where it does not, the bound
is split into processes times address space."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ol.grading.sandbox.confine import Limits
from ol.grading.sandbox.memory import FALLBACK_PROCESSES, GROUP_PREFIX, MemoryBound

MiB = 1 << 20
LIMIT = 96 * MiB


@pytest.fixture
def bound():
    made = MemoryBound.make(slots=2, limit=LIMIT, per_user=True)
    if not made.groups:
        made.close()
        pytest.skip(f"no memory cgroup can be made here: the bound is {made.describe()!r}")
    if made.how == "cgroup v1" and not (made.groups[0] / "memory.memsw.limit_in_bytes").exists() \
            and Path("/proc/swaps").read_text().count("\n") > 1:
        made.close()
        pytest.skip("cgroup v1 without swap accounting, and swap on: a run past its bound swaps instead of ending")
    yield made
    made.close()


def run_in(fd: int, program: str) -> int:
    """A child that joins the group behind `fd` (as a run's guard does), then runs `program`: its exit status."""
    def join():
        os.write(fd, b"0")
    child = subprocess.Popen([sys.executable, "-c", program], preexec_fn=join, pass_fds=(fd,))
    return child.wait(timeout=120)


def test_a_run_past_its_bound_is_ended_and_one_within_it_is_not(bound):
    assert bound.how.startswith("cgroup") and "per run, all its processes together" in bound.describe()
    assert run_in(bound.join_fd(0), "data = b'x' * (16 << 20)") == 0
    assert run_in(bound.join_fd(0), "data = b'x' * (256 << 20)") == -signal.SIGKILL
    # two processes of one run, each within the bound, together past it: one of them is ended
    together = ("import os, sys, time\npid = os.fork()\ndata = b'x' * (64 << 20)\ntime.sleep(1)\n"
                "if pid == 0:\n    os._exit(0)\n_, status = os.waitpid(pid, 0)\n"
                "sys.exit(3 if os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9 else 0)\n")
    assert run_in(bound.join_fd(1), together) in (-signal.SIGKILL, 3)
    assert subprocess.run([sys.executable, "-c", together]).returncode == 0, "outside the group both live"


def test_each_run_meets_its_slots_group_under_a_fresh_name(bound):
    names = {bound.groups[0].name}
    for _ in range(3):
        bound.join_fd(0)
        assert bound.groups[0].is_dir() and bound.groups[0].name not in names
        names.add(bound.groups[0].name)
    kept = bound.groups[1].name
    assert bound.join_fd(1, renamed=False) >= 0 and bound.groups[1].name == kept
    assert all(name.startswith(f"{GROUP_PREFIX}{os.getpid()}-") for name in names)
    assert bound.join_fd(2) == -1, "a slot past the bound's has no group"


def test_close_leaves_no_group():
    made = MemoryBound.make(slots=2, limit=LIMIT, per_user=True)
    groups = list(made.groups)
    made.close()
    assert not [group for group in groups if group.exists()]


def test_without_a_cgroup_the_bound_is_processes_times_address_space():
    fallback = MemoryBound(LIMIT, "processes x address space", [], [])
    limits = fallback.limits(Limits())
    assert limits.processes == FALLBACK_PROCESSES and limits.address_space * FALLBACK_PROCESSES == LIMIT
    assert f"{FALLBACK_PROCESSES} processes x {LIMIT // FALLBACK_PROCESSES >> 20} MiB" in fallback.describe()
    assert "not bounded" in MemoryBound(LIMIT, "address space", [], []).describe()
    assert fallback.join_fd(0) == -1
    with pytest.raises(ValueError, match="positive"):
        MemoryBound.make(slots=1, limit=0, per_user=True)
