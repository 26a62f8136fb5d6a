"""Forking a process straight into namespaces of its own: clone3(2).

    address = tid_field(libc)                    # before anything untrusted runs
    pid = libc.syscall(SYS_CLONE3, arguments(flags, address), ARGUMENTS.size)
    usable()                                     # (True, "") where the collector may fork so

The shared check's collector forks one run per variant, each pid 1 of a pid
namespace of its own.  unshare(CLONE_NEWPID) moves only the caller's later
children, so without clone3 every run needs a process between it and the
collector that unshares and forks again: a second copy of the collector's page
tables and a second exit per run (about a tenth of a check's time).  clone3
creates the child in its user, mount, network, IPC and pid namespaces at once.

The C library keeps the thread's id in its thread block (struct pthread) and
its own fork() has the kernel write the child's id there (CLONE_CHILD_SETTID);
a raw clone3 must do the same or the child's C library would go on using the
parent's id.  The field's place is the C library's private layout, so it is
found by its value (the first 32-bit word of the block equal to the thread's
id) and usable() checks it: in a child of the C library's fork, the word must
hold the child's own id.  Where it does not, or clone3 is refused (an old kernel, a
seccomp profile that answers ENOSYS), usable() says why and every check is
isolated.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import struct
import threading

SYS_CLONE3 = 435                    # the same number on every architecture (asm-generic)
CLONE_CHILD_SETTID = 0x01000000
ARGUMENTS = struct.Struct("=8Q")    # struct clone_args up to tls (CLONE_ARGS_SIZE_VER0, 64 bytes):
                                    # flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls
BLOCK_WORDS = 1024                  # how far into the thread block the id is looked for (4 KiB)


def tid_field(libc: ctypes.CDLL) -> int | None:
    """Address of the calling thread's id in the C library's thread block, or None."""
    pthread_self = ctypes.CFUNCTYPE(ctypes.c_void_p)(("pthread_self", libc))
    block = pthread_self()
    words = (ctypes.c_int32 * BLOCK_WORDS).from_address(block)
    tid = threading.get_native_id()
    found = next((i for i in range(BLOCK_WORDS) if words[i] == tid), None)
    return None if found is None else block + 4 * found


def arguments(flags: int, tid_address: int | None, pidfd_address: int = 0,
              exit_signal: int = signal.SIGCHLD) -> bytes:
    """clone3's argument block: a child with `flags` (its namespaces, say),
    exit_signal to the parent when it ends (0 with CLONE_PARENT, which
    clone3 requires: the caller's own is used), its id written at
    tid_address (CLONE_CHILD_SETTID); with CLONE_PIDFD, its pidfd written at
    pidfd_address."""
    return ARGUMENTS.pack(flags | CLONE_CHILD_SETTID, pidfd_address, 0 if tid_address is None else tid_address, 0,
                          int(exit_signal), 0, 0, 0)


@functools.cache
def usable() -> tuple[bool, str]:
    """(whether the collector can fork its runs with clone3, why not): a
    child of the C library's own fork must find its id where tid_field()
    points, and a child of clone3 too."""
    libc = ctypes.CDLL(None, use_errno=True)
    address = tid_field(libc)
    if address is None:
        return False, "the C library's thread block does not hold the thread's id where clone3 could set it"
    word = ctypes.c_int32.from_address(address)
    for fork in (os.fork, lambda: libc.syscall(SYS_CLONE3, arguments(0, address), ARGUMENTS.size)):
        pid = fork()
        if pid == 0:     # the child: nothing but a compare and _exit (the parent may have threads)
            os._exit(0 if word.value == threading.get_native_id() else 1)
        if pid < 0:
            return False, f"clone3 is refused here: {os.strerror(ctypes.get_errno())}"
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            return False, "a forked child did not find its own id where the thread block's id was looked for"
    return True, ""
