"""What a run may touch of the host's files, where it cannot have a mount
namespace of its own (the by-uid confinement: ol.grading.sandbox.confine.BY_UID).

Landlock (Linux 5.13 and later, allowed by Docker's default seccomp profile)
lets an unprivileged process give up access for good, for itself and
everything it starts:

    read, list, execute   beneath each of `readable` (the Python installation,
                          /usr, /etc, the libraries, the run's files)
    read and write        beneath `writable` (the run's own temporary folder),
                          and /dev/null
    nothing else          no file of the grader, of the instructor, of another
                          run; no /proc of other processes; no /tmp of the host

and, from ABI 4 on, no TCP (bind or connect), from ABI 6 on, no abstract
unix socket or signal outside the run.

    abi()                                  0 where Landlock is missing
    restrict(readable=[...], writable=[...])
"""

from __future__ import annotations

import ctypes
import os

from ol.grading.sandbox import syscalls

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446   # the same number on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# LANDLOCK_ACCESS_FS_*: one bit each, in the order the kernel added them
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | (1 << 14) | (1 << 15)   # + truncate, ioctl_dev
_NET_TCP = 0b11                     # bind, connect (ABI 4)
_SCOPE_ALL = 0b11                   # abstract unix sockets, signals (ABI 6)
READ = _EXECUTE | _READ_FILE | _READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class LandlockError(OSError):
    pass


def abi() -> int:
    """The Landlock ABI version this kernel offers (0: none)."""
    try:
        version = syscalls.libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def restrict(readable: list[str], writable: list[str]) -> None:
    """Restrict this process (and everything it starts) to reading beneath
    `readable` and reading and writing beneath `writable`.  Needs
    no_new_privs set first.  Paths that do not exist are skipped."""
    version = abi()
    if version < 1:
        raise LandlockError("Landlock is not available on this kernel")
    libc = syscalls.libc()
    fs = _FS_RIGHTS_BY_ABI.get(version, _FS_RIGHTS_BY_ABI[5])
    attr = _RulesetAttr(fs, _NET_TCP if version >= 4 else 0, _SCOPE_ALL if version >= 6 else 0)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        raise LandlockError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        for paths, rights in ((readable, READ), (writable, fs)):
            for path in paths:
                _allow(libc, ruleset, path, rights)
        _allow(libc, ruleset, os.devnull, _READ_FILE | _WRITE_FILE)
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise LandlockError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)


def _allow(libc, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        rule = _PathBeneath(rights, fd)
        if libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                        ctypes.c_uint32(0)) != 0:
            raise LandlockError(ctypes.get_errno(), f"landlock_add_rule({path}): {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)
