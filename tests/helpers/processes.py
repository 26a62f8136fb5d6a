"""The processes and files a check's runs leave, read from /proc and the
file system: what the kit's attack tests look for after a check, and which
processes a test may signal (only those below its own).

    descendants(pid)          every process below pid
    uid_of, role, parent, started    one process's user, grading role, parent, start time
    run_users()               live processes of the runs' users that no check holds any more
    files_of_run_users(...)   files the runs' users left in the given folders
    owner_alive(scratch)      whether the ol that made a scratch folder still runs
    proc_file, command_line   a file of /proc/<pid>, a process's command line
    memory_groups_of(pid)     the memory cgroups a check of process pid made
    vote_keys()               keys of the keyring cheats this process can see
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ol.grading.sandbox import confine


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


def proc_file(pid: int, name: str) -> bytes:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return b""


def role(pid: int) -> str:
    """"tests" or "impl" for a process of a grading sandbox (OL_ROLE in its environment)."""
    for entry in proc_file(pid, "environ").split(b"\0"):
        if entry.startswith(b"OL_ROLE="):
            return entry[8:].decode()
    return ""


def parent(pid: int) -> int:
    stat = proc_file(pid, "stat")
    return int(stat.rsplit(b")", 1)[1].split()[1]) if stat else 0


def started(pid: int) -> int:
    stat = proc_file(pid, "stat")
    return int(stat.rsplit(b")", 1)[1].split()[19]) if stat else 0


def uid_of(pid: int) -> int:
    for line in proc_file(pid, "status").split(b"\n"):
        if line.startswith(b"Uid:"):
            return int(line.split()[1])
    return -1


def owner_alive(scratch: Path) -> bool:
    """Whether the `ol` that made a scratch folder (warm_link.make_scratch: its
    pid in `owner`) still runs: another check on this machine, not ours."""
    try:
        os.kill(int((scratch / "owner").read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def run_users(settle: float = 5.0, *, left_only: bool = True) -> list[int]:
    """Live processes of the runs' users (UidBlock's range), once none is
    left or `settle` seconds have passed (a process killed at the end of a
    run is reaped by init a moment later).  left_only: only those no grader
    holds any more, whose ancestors up to init are all runs' users; a run
    of another check on this machine (another engineer's, say) has its
    guard, a process of the grader's, above it, and its block of users
    held (block_in_use)."""
    top = confine.RUN_UID_BASE + confine.UID_BLOCKS * confine.UID_BLOCK
    of_a_run = lambda pid: confine.RUN_UID_BASE <= uid_of(pid) < top   # noqa: E731
    deadline = time.monotonic() + settle
    while True:
        found = [int(entry) for entry in os.listdir("/proc")
                 if entry.isdigit() and of_a_run(int(entry)) and b"\nState:\tZ" not in proc_file(int(entry), "status")
                 and (not left_only or not (_held_by_a_grader(int(entry), of_a_run)
                                            or block_in_use(uid_of(int(entry)))))]
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def _held_by_a_grader(pid: int, of_a_run) -> bool:
    """Whether some ancestor of pid (below init) is not a run's process."""
    for _ in range(64):
        status = proc_file(pid, "status")
        parent = next((int(line.split()[1]) for line in status.split(b"\n") if line.startswith(b"PPid:")), 0)
        if parent <= 1:
            return False
        if not of_a_run(parent):
            return True
        pid = parent
    return True


def files_of_run_users(*folders: str) -> list[str]:
    """Entries of `folders` owned by a run's user whose block no check holds
    any more: what an ended check left (a check running beside it, another
    engineer's or another pytest's, owns its files while it runs)."""
    top = confine.RUN_UID_BASE + confine.UID_BLOCKS * confine.UID_BLOCK
    found = []
    for folder in folders:
        for path in Path(folder).iterdir():
            try:
                uid = path.lstat().st_uid
            except OSError:
                continue
            if confine.RUN_UID_BASE <= uid < top and not block_in_use(uid):
                found.append(str(path))
    return found


def block_in_use(uid: int) -> bool:
    """Whether a running check holds the block of run users `uid` is in
    (confine.UidBlock's flock, tried without waiting)."""
    import fcntl

    folder = next((f for f in confine.UID_LOCKS if os.access(f, os.W_OK)), None)
    index = (uid - confine.RUN_UID_BASE) // confine.UID_BLOCK
    if folder is None or not os.path.exists(lock := os.path.join(folder, f"tinyllm-ol-users-{index}.lock")):
        return False
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)      # closing drops the lock, if this took it
    return False


def command_line(pid: int) -> str:
    return proc_file(pid, "cmdline").replace(b"\0", b" ").decode(errors="replace").strip()


def memory_groups_of(owner: int) -> list[Path]:
    """The memory groups (ol.grading.sandbox.memory) a check of process `owner` made,
    anywhere under /sys/fs/cgroup.  os.walk passes over a group that another
    check, in another pytest worker, removes while it looks."""
    prefix = f"ol-run-{owner}-"
    return [Path(top) / name for top, folders, _ in os.walk("/sys/fs/cgroup") for name in folders
            if name.startswith(prefix)]


def vote_keys() -> list[str]:
    """The descriptions of keys named by the keyring cheats that /proc/keys
    shows this (root) process: a key a run opened to everyone shows here."""
    return [w for w in Path("/proc/keys").read_text().split() if w.startswith(("ol-vote-", "ol-planted"))]
