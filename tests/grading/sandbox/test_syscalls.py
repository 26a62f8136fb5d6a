"""Kit tests of ol.grading.sandbox.syscalls: the seccomp filter refuses the
keyring calls to every confined run, and System V IPC, message queues and
socket() besides to a run confined by uid alone, while all else (getpid,
socketpair) still works; a fresh session keyring is not the one the
process had.  Each case runs in a forked child, which the filter cannot
leave: it says what each call gave on a pipe, before and after."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket

import pytest

from helpers.forked import in_a_child
from ol.grading.sandbox import syscalls

pytestmark = pytest.mark.skipif(not syscalls.supported(), reason=f"no filter is built for {platform.machine()}")

PR_SET_NO_NEW_PRIVS = 38
KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING = 0, -3


def number(name: str) -> int:
    return syscalls._NUMBERS[platform.machine()][1][name]


def errno_of(result: int) -> int:
    """0 for a call that worked, else its errno."""
    return 0 if result >= 0 else ctypes.get_errno()


def session_keyring() -> int:
    """The serial of this process's session keyring (-errno when keyctl fails)."""
    got = syscalls.libc().syscall(number("keyctl"), KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
    return got if got >= 0 else -ctypes.get_errno()


def calls() -> dict[str, int]:
    """What each call gives here: 0, or the errno it failed with."""
    libc = syscalls.libc()
    said = {"keyctl": errno_of(libc.syscall(number("keyctl"), KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)),
            "add_key": errno_of(libc.syscall(number("add_key"), b"user", b"ol-test-key", b"x", 1, -2)),
            "getpid": errno_of(libc.syscall(39 if platform.machine() == "x86_64" else 172))}
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        said["socket"] = 0
    except OSError as error:
        said["socket"] = error.errno
    try:
        for end in socket.socketpair():
            end.close()
        said["socketpair"] = 0
    except OSError as error:
        said["socketpair"] = error.errno
    return said


def filtered(names: tuple[str, ...]):
    def body() -> dict:
        before = calls()
        assert syscalls.libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
        assert syscalls.refuse(names)
        return {"before": before, "after": calls()}
    return body


def test_every_confined_run_is_refused_the_keyring_and_nothing_else():
    said = in_a_child(filtered(syscalls.KEYRING))
    if said["before"]["keyctl"] in (errno.EPERM, errno.ENOSYS):
        pytest.skip("keyctl is refused here already (a seccomp profile above this process)")
    assert said["after"]["keyctl"] == said["after"]["add_key"] == errno.EPERM, said
    assert said["after"]["getpid"] == said["after"]["socketpair"] == 0, said
    assert said["after"]["socket"] == said["before"]["socket"], "socket() is refused only to runs confined by uid"


def test_a_run_confined_by_uid_is_refused_sockets_too_but_not_socketpair():
    said = in_a_child(filtered(syscalls.KEYRING + syscalls.SHARED_OBJECTS))
    assert said["before"]["socket"] == 0, said
    assert said["after"]["socket"] == errno.EPERM and said["after"]["socketpair"] == 0, said
    assert said["after"]["getpid"] == 0, said


def test_a_fresh_session_keyring_is_not_the_one_inherited():
    def body() -> dict:
        before = session_keyring()
        syscalls.join_fresh_session_keyring()
        return {"before": before, "after": session_keyring()}

    said = in_a_child(body)
    if said["before"] < 0:
        pytest.skip(f"keyctl is refused here already: {os.strerror(-said['before'])}")
    assert said["after"] > 0 and said["after"] != said["before"], said
    assert session_keyring() == said["before"], "the child's keyring is its own: this process keeps its own"
