"""System calls a run may not make, refused by a seccomp filter (EPERM).

    refuse(KEYRING)                       every confined run
    refuse(KEYRING + SHARED_OBJECTS)      runs confined by uid alone
    prepare()                             in the warm process: build both once

The kernel's keyrings are keyed by user, not by mount or pid namespace: a
key stored by one run (add_key), opened to every user (KEYCTL_SETPERM) and
listed in /proc/keys is a channel to every later run.  A run has no use for
keys, so it cannot make one.  Where runs share the host's IPC and network
namespaces (the by-uid confinement), System V IPC objects, POSIX message queues and
sockets (socket(); socketpair() stays) would be channels too.  Docker's
default profile refuses the keyring calls already; this filter holds the
same wherever the grader runs.

The filter is a classic BPF program (x86-64 and AArch64; elsewhere nothing
is refused and refuse() returns False): any other architecture's calls
(i386 through int 0x80, x32) are refused with ENOSYS.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform

KEYRING = ("add_key", "request_key", "keyctl")
SHARED_OBJECTS = ("socket", "shmget", "semget", "msgget", "mq_open")
_NUMBERS = {   # arch -> (AUDIT_ARCH_*, {name: number})
    "x86_64": (0xC000003E, {"add_key": 248, "request_key": 249, "keyctl": 250, "socket": 41, "shmget": 29,
                            "semget": 64, "msgget": 68, "mq_open": 240}),
    "aarch64": (0xC00000B7, {"add_key": 217, "request_key": 218, "keyctl": 219, "socket": 198, "shmget": 194,
                             "semget": 190, "msgget": 186, "mq_open": 180}),
}
_X32_BIT = 0x40000000
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_KEYCTL_JOIN_SESSION_KEYRING = 1


class _Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Instruction))]


@functools.cache
def libc() -> ctypes.CDLL:
    """The C library, once for the grader (landlock.py and confine.py use it
    too); syscall() returns a long, as in <unistd.h>."""
    library = ctypes.CDLL(None, use_errno=True)
    library.syscall.restype = ctypes.c_long
    return library


def supported() -> bool:
    return platform.machine() in _NUMBERS


def program(names: tuple[str, ...]) -> list[tuple[int, int, int, int]]:
    """The BPF instructions (code, jt, jf, k) refusing `names`:

        0  load the architecture       1  not ours: ENOSYS
        2  load the call number        3  x32 call: ENOSYS
        4… one of `names`: EPERM       then allow
    """
    arch, numbers = _NUMBERS[platform.machine()]
    refused = [numbers[name] for name in names]
    allow = 4 + len(refused)
    eperm, enosys = allow + 1, allow + 2
    code = [(_LD_W_ABS, 0, 0, 4), (_JEQ_K, 0, enosys - 2, arch), (_LD_W_ABS, 0, 0, 0),
            (_JGE_K, enosys - 4, 0, _X32_BIT)]
    for index, number in enumerate(refused):
        code.append((_JEQ_K, eperm - (4 + index) - 1, 0, number))
    code += [(_RET_K, 0, 0, _ALLOW), (_RET_K, 0, 0, _ERRNO | errno.EPERM), (_RET_K, 0, 0, _ERRNO | errno.ENOSYS)]
    return code


def refuse(names: tuple[str, ...]) -> bool:
    """Load a filter refusing `names` in this process and all it starts
    (no_new_privs must be set).  False where the architecture is not known."""
    if not supported():
        return False
    if libc().prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(_compiled(names)), 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"seccomp filter: {os.strerror(error)}")
    return True


@functools.cache
def _compiled(names: tuple[str, ...]) -> _Program:
    """program(names) as the kernel takes it: built once per warm process,
    then loaded by every run it forks."""
    code = program(names)
    instructions = (_Instruction * len(code))(*[_Instruction(*i) for i in code])
    compiled = _Program(len(code), instructions)
    compiled.keep = instructions   # the array lives as long as the program that points into it
    return compiled


def prepare() -> None:
    """Build both filters now, in a warm process, so that the runs it forks
    load them without building them again."""
    if supported():
        _compiled(KEYRING)
        _compiled(KEYRING + SHARED_OBJECTS)


def join_fresh_session_keyring() -> None:
    """Replace the session keyring this process inherited (the grader's,
    from a login: pam_keyinit) with a new, empty, anonymous one.  Where
    keyctl itself is refused (Docker's default profile), there is no
    keyring to leave."""
    if not supported():
        return
    number = _NUMBERS[platform.machine()][1]["keyctl"]
    if libc().syscall(number, _KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        error = ctypes.get_errno()
        if error not in (errno.ENOSYS, errno.EPERM, errno.EACCES):
            raise OSError(error, f"keyctl(JOIN_SESSION_KEYRING): {os.strerror(error)}")
