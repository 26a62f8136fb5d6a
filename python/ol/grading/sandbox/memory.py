"""A memory bound per run, over all the run's processes.

    bound = MemoryBound.make(slots=6, limit=2 << 30)
    bound.describe()      "cgroup v1: 2.0 GiB per run, all its processes together"
    bound.join_fd(slot)   a descriptor that slot's next run joins its group by, or -1
    bound.limits(limits)  the resource limits a run gets under this bound
    bound.close()

Where the host lets us (root with a writable memory controller: cgroup v1,
or a cgroup v2 tree with the memory controller delegated to our own group),
each slot gets a memory cgroup below our own, limited to `limit` bytes with
no swap beyond it.  A run joins its slot's group as its first act (it
writes "0" to the group's JOIN_FILE through a descriptor the observer
opened: the sandbox itself sees no cgroup file system), so everything it
forks is counted together; past the bound the kernel's OOM killer ends the
run (signal 9).  Runs of one slot follow each other, never
overlap.  A run can read its group's path (/proc/self/cgroup), so a group
is renamed before each run to a name no run has seen: a name kept by the
slot would tell a run which slot it runs in, and that depends on when
earlier runs ended (README.md: no channel the grader opens itself).  A
variant of the course's own (the reference, a mutant) reads no group name
and tells its tests nothing but what its functions return, and a run the
shared check's collector forks is in a cgroup namespace rooted at its group
(its path reads "/"): their groups keep their names (a rename costs the
observer half a millisecond).

Elsewhere (a container without delegation, not root):

    processes x address space = limit       RLIMIT_NPROC x RLIMIT_AS

RLIMIT_NPROC counts the run's own user, so it holds only where each run has
a user of its own (the grader runs as root); otherwise only the address
space of each process is bounded, and describe() says so.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, replace
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
# What a run writes "0" to, to join its group.  v1's `tasks` moves the writing thread alone; a run
# joins as the first act of a process forked with one thread, so that is the whole run, and the
# kernel takes no global lock for it.  Through `cgroup.procs` it takes the lock that every fork and
# exit of the machine takes, and waits out an RCU grace period for it: 3.4 ms a run on average in a
# check of the model answer, up to 17 ms, and the observer's rename of the next group (0.02 ms alone)
# waited 1.2 ms on average behind it.  v2 has only cgroup.procs for a group of processes.
JOIN_FILE = {"v1": "tasks", "v2": "cgroup.procs"}
GROUP_PREFIX = "ol-run-"
FALLBACK_PROCESSES = 8        # without a cgroup: the run's processes, each with limit / 8 of address space
GiB = 1 << 30


@dataclass
class MemoryBound:
    limit: int                        # bytes per run
    how: str                          # "cgroup v1", "cgroup v2", "processes x address space", "address space"
    groups: list[Path]                # one per slot (empty without cgroups)
    fds: list[int]                    # their JOIN_FILE, open for writing

    @classmethod
    def make(cls, slots: int, limit: int, *, per_user: bool) -> MemoryBound:
        """Cgroups for `slots` slots if the host allows; else the rlimit
        fallback (per_user: each run has a user of its own, so RLIMIT_NPROC
        bounds the run's processes)."""
        if limit <= 0:
            raise ValueError(f"the memory limit must be a positive number of bytes, got {limit}")
        for version, parent in _parents():
            groups = _make_groups(version, parent, slots, limit)
            if groups is not None:
                fds = [os.open(group / JOIN_FILE[version], os.O_WRONLY | os.O_CLOEXEC) for group in groups]
                return cls(limit, f"cgroup {version}", groups, fds)
        return cls(limit, "processes x address space" if per_user else "address space", [], [])

    def join_fd(self, slot: int, *, renamed: bool = True) -> int:
        """The descriptor the next run of `slot` joins its group by, the
        group renamed first (a fresh name: nothing of the slot) unless not
        `renamed`: for a variant of the course's own, which never reads it."""
        if not 0 <= slot < len(self.fds):
            return -1
        if not renamed:
            return self.fds[slot]
        fresh = self.groups[slot].with_name(_group_name())
        self.groups[slot].rename(fresh)   # the open JOIN_FILE follows it
        self.groups[slot] = fresh
        return self.fds[slot]

    def limits(self, limits):
        """`limits` (ol.grading.sandbox.confine.Limits) under this bound: with a
        cgroup, each process may map up to the bound; without, the process
        count times each one's address space is the bound."""
        if self.groups:
            return replace(limits, memory=self.limit, address_space=min(limits.address_space, self.limit))
        return replace(limits, memory=self.limit, processes=FALLBACK_PROCESSES,
                       address_space=self.limit // FALLBACK_PROCESSES)

    def describe(self) -> str:
        size = f"{self.limit / GiB:.1f} GiB"
        if self.groups:
            return f"{self.how}: {size} per run, all its processes together"
        if self.how == "processes x address space":
            return (f"{FALLBACK_PROCESSES} processes x {self.limit // FALLBACK_PROCESSES >> 20} MiB of address space "
                    f"each (= {size} per run; no memory cgroup here)")
        return f"{self.limit // FALLBACK_PROCESSES >> 20} MiB of address space per process (no memory cgroup here, " \
               "and runs share the user running ol: their process count is not bounded)"

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        for group in self.groups:
            _remove(group)
        self.groups = []


def _parents() -> list[tuple[str, Path]]:
    """Where our own memory cgroup is, per hierarchy: v1's memory controller
    first, then a v2 tree (the unified mount, or /sys/fs/cgroup itself)."""
    found = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if "memory" in controllers.split(","):
            found.append(("v1", CGROUP_ROOT / "memory" / path.lstrip("/")))
    for line in lines:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and controllers == "":
            for mount in (CGROUP_ROOT / "unified", CGROUP_ROOT):
                if (mount / "cgroup.controllers").is_file():
                    found.append(("v2", mount / path.lstrip("/")))
                    break
    return found


def _make_groups(version: str, parent: Path, slots: int, limit: int) -> list[Path] | None:
    """`slots` limited groups under parent, or None (and nothing left) if
    the host does not allow it."""
    if not os.access(parent, os.W_OK):
        return None
    _remove_stale(parent)
    made = []
    try:
        for slot in range(slots):
            group = parent / _group_name()
            group.mkdir()
            made.append(group)
            if version == "v1":
                (group / "memory.limit_in_bytes").write_text(str(limit))
                if (group / "memory.memsw.limit_in_bytes").exists():   # no swap beyond the bound
                    (group / "memory.memsw.limit_in_bytes").write_text(str(limit))
            else:
                if not (group / "memory.max").exists():   # the memory controller is not delegated to us
                    raise OSError("no memory.max")
                (group / "memory.max").write_text(str(limit))
                if (group / "memory.swap.max").exists():
                    (group / "memory.swap.max").write_text("0")
        return made
    except OSError:
        for group in made:
            _remove(group)
        return None


def _group_name() -> str:
    """ol-run-<our pid>-<random>: the pid says whose it is (_remove_stale), the rest nothing."""
    return f"{GROUP_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"


def _remove_stale(parent: Path) -> None:
    """Groups left by an `ol` that was killed (its pid is gone)."""
    try:
        entries = list(parent.glob(GROUP_PREFIX + "*"))
    except OSError:
        return
    for group in entries:
        try:
            owner = int(group.name[len(GROUP_PREFIX):].split("-")[0])
            os.kill(owner, 0)
        except ProcessLookupError:
            _remove(group)
        except (OSError, ValueError):
            continue


def _remove(group: Path) -> None:
    """rmdir a group once its last process is gone (a killed run's
    processes may take a moment to leave)."""
    for _ in range(200):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)

