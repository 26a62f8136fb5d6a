"""Run a command as a grader runs in a Docker container with Docker's default
security settings (as on Gradescope): root, but namespaces refused.

    python tests/helpers/docker_default.py COMMAND [ARG...]

What it plays (measured: /work/shared/notes/confinement.md):
  - seccomp (pyseccomp==0.1.2 over Debian's libseccomp2), default allow:
    unshare and setns refused (EPERM), clone refused when it asks for a new
    mount, user, pid or network namespace, clone3 ENOSYS (so the C library
    falls back to clone).  bubblewrap cannot start.  The keyring calls that
    Docker also refuses are left allowed here: the grader must refuse them
    itself.
  - Docker's capabilities for root (no CAP_SYS_ADMIN, CAP_SYS_RESOURCE, ...).
  - the cgroup file system read-only, as Docker mounts it.
  - in a mount namespace of its own (a container has one): the folders on
    the way to this Python (pyenv under /root, 0700) opened to other users,
    as a container image's /usr/local is.  Nothing else of the host changes.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
# Docker's default capabilities for root (moby: oci/caps/defaults.go)
DOCKER_CAPABILITIES = {0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 27, 29, 31}   # CHOWN ... SETFCAP
CAP_LAST = 40
PR_CAPBSET_DROP, CAP_VERSION_3 = 24, 0x20080522

libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def open_to_others(folder: str) -> None:
    """Mount a world-readable copy of `folder`'s listing over it: a tmpfs
    holding a bind mount of each of its entries."""
    keep = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    entries = os.listdir(folder)
    check(libc.mount(b"tmpfs", folder.encode(), b"tmpfs", 0, b"mode=0755"), f"tmpfs on {folder}")
    for name in entries:
        source = f"/proc/self/fd/{keep}/{name}"
        target = os.path.join(folder, name)
        kind = os.lstat(source).st_mode
        if stat.S_ISLNK(kind):
            os.symlink(os.readlink(source), target)
            continue
        if stat.S_ISDIR(kind):
            os.mkdir(target)
        else:
            open(target, "w").close()
        libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None)


def container_filesystem() -> None:
    check(libc.unshare(CLONE_NEWNS), "unshare")
    check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "private /")
    python = os.path.realpath(sys.executable)
    closed = [str(p) for p in reversed(__import__("pathlib").Path(python).parents)
              if os.stat(p).st_mode & 0o005 != 0o005]
    for folder in closed:
        open_to_others(folder)
    for line in open("/proc/self/mounts"):
        target, kind = line.split()[1], line.split()[2]
        if kind in ("cgroup", "cgroup2"):
            libc.mount(None, target.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)


def docker_capabilities() -> None:
    for cap in range(CAP_LAST + 1):
        if cap not in DOCKER_CAPABILITIES:
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    mask = sum(1 << cap for cap in DOCKER_CAPABILITIES)
    header = (ctypes.c_uint32 * 2)(CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)(mask & 0xFFFFFFFF, mask & 0xFFFFFFFF, mask & 0xFFFFFFFF,
                                 mask >> 32, mask >> 32, mask >> 32)
    check(libc.capset(header, data), "capset")


def namespaces_refused() -> None:
    import pyseccomp as seccomp

    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    rules.add_rule(seccomp.ERRNO(errno.EPERM), "unshare")
    rules.add_rule(seccomp.ERRNO(errno.EPERM), "setns")
    for flag in (CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET):
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    rules.load()


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    container_filesystem()
    docker_capabilities()
    namespaces_refused()
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
