"""The warm process's parent, which watches the runs cloned beside it.

    link = reporter.start()                  # first thing in the warm process: forks;
                                             # the parent serves() until the warm process ends
    pid, pidfd = Beside().fork(namespaces)   # in the warm process: a run that is the reporter's child
    reporter.watch(link, pid, pidfd, report) # the reporter tells the observer how it ended

A run of a variant of the course's own (the reference, an alternate, a
mutant) needs no confinement, and a run in the namespace confinement has
its namespaces from the moment it is cloned (pid 1 of its own pid
namespace, so the kernel ends all it left); either needs only someone to
reap it, stop it when the observer asks and say how it ended.  A guard
forked for each run would cost
a copy of the warm process's page tables and an exit per run.  The warm
process cannot do it either: every later run is forked from it, so it holds
nothing of any run's end (warm.py).  So the warm process forks each trusted
run beside itself (clone3 with CLONE_PARENT: the run is a child of the warm
process's parent) and hands the reporter the run's pid, a pidfd and its end
socket.  The reporter never forks a run: what it learns stays in it.

    bubblewrap's init
     └─ reporter          select() over its link, the warm process's pidfd and each run's
         │                pidfd and end socket; never forks after its start
         ├─ warm process  forks runs beside itself
         └─ run, run ...  trusted variants, or confined runs in namespaces of their own;
                          each joins its memory group

When the warm process ends, the reporter kills every run it still watches
and ends too.  Its lines on a run's end socket are the guards' own
(protocol.end_line): the observer reads them the same way.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import select
import signal
import socket

from ol.grading.protocol import end_line
from ol.grading.sandbox import clone
from ol.grading.sandbox.confine import exit_code

CLONE_PARENT = 0x00008000
CLONE_PIDFD = 0x00001000
PID = 4                     # bytes of a pid in a watch message
# clone(2) where clone3 answers ENOSYS (Docker's default profile): its number, and whether the
# child's tid pointer comes last (flags, stack, parent_tid, tls, child_tid) or fourth (x86-64)
CLONE = {"x86_64": (56, False), "aarch64": (220, True)}


def start(control_fd: int) -> socket.socket:
    """Fork: the parent becomes the reporter and never returns; the child (the
    warm process) gets the link it hands runs over.  The reporter closes the
    warm process's control socket: its end is the observer's word that the
    warm process is gone."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    warm = os.fork()
    if warm == 0:
        ours.close()
        return theirs
    theirs.close()
    os.close(control_fd)
    code = 1
    try:
        code = serve(ours, warm)
    finally:
        os._exit(code)      # the warm process's own: bubblewrap ends with it, and the observer says it


class Beside:
    """clone3 (or clone, where clone3 is refused) beside the calling process,
    as os.fork would fork below it; with namespaces of its own, where asked."""

    FLAGS = CLONE_PARENT | CLONE_PIDFD | clone.CLONE_CHILD_SETTID

    def __init__(self):
        libc = ctypes.CDLL(None, use_errno=True)
        self.syscall = libc.syscall
        self.pidfd = ctypes.c_int32(-1)
        self.tid = clone.tid_field(libc)
        self.blocks: dict[int, bytes] = {}      # namespaces -> clone3's argument block
        self.clone3 = True
        api = ctypes.pythonapi
        self.before, self.parent, self.child = api.PyOS_BeforeFork, api.PyOS_AfterFork_Parent, api.PyOS_AfterFork_Child

    def fork(self, namespaces: int = 0) -> tuple[int, int]:
        """(pid, pidfd) of a new child of this process's parent, in new
        `namespaces` (CLONE_NEW* flags); (0, -1) in it."""
        self.before()
        pid = self._clone3(namespaces) if self.clone3 else self._clone(namespaces)
        if pid < 0 and self.clone3 and ctypes.get_errno() == errno.ENOSYS:   # Docker's default profile
            self.clone3 = False
            pid = self._clone(namespaces)
        if pid == 0:
            self.child()
            return 0, -1
        self.parent()
        if pid < 0:
            raise OSError(ctypes.get_errno(), f"could not fork a run beside the warm process: "
                                              f"{os.strerror(ctypes.get_errno())}")
        return pid, self.pidfd.value

    def _clone3(self, namespaces: int) -> int:
        if namespaces not in self.blocks:
            self.blocks[namespaces] = clone.arguments(self.FLAGS | namespaces, self.tid,
                                                      ctypes.addressof(self.pidfd), exit_signal=0)
        return self.syscall(clone.SYS_CLONE3, self.blocks[namespaces], clone.ARGUMENTS.size)

    def _clone(self, namespaces: int) -> int:
        if platform.machine() not in CLONE:
            ctypes.set_errno(errno.ENOSYS)
            return -1
        number, tid_last = CLONE[platform.machine()]
        pidfd, tid = ctypes.c_void_p(ctypes.addressof(self.pidfd)), ctypes.c_void_p(self.tid)
        flags = self.FLAGS | namespaces | int(signal.SIGCHLD)
        return self.syscall(number, flags, None, pidfd, None, tid) if tid_last else \
            self.syscall(number, flags, None, pidfd, tid, None)


def watch(link: socket.socket, pid: int, pidfd: int, report: int) -> None:
    """Hand the reporter a run (the caller keeps its own copies of the descriptors)."""
    socket.send_fds(link, [pid.to_bytes(PID, "little")], [pidfd, report])


def serve(link: socket.socket, warm: int) -> int:
    """Watch runs until the warm process ends: each run's end goes to its end
    socket; a run whose end socket turns readable (the observer asks it to
    stop, or is gone) is killed.  Returns the warm process's exit code."""
    runs: dict[int, tuple[int, int]] = {}        # pidfd -> (pid, end socket)
    try:
        _watch(link, os.pidfd_open(warm), runs)
    finally:
        for pidfd, (pid, _) in runs.items():     # the warm process is gone: so are its runs
            _kill(pidfd)
            os.waitpid(pid, 0)
    return exit_code(os.waitpid(warm, 0)[1])


def _watch(link: socket.socket, warm_fd: int, runs: dict[int, tuple[int, int]]) -> None:
    asking: dict[int, int] = {}                  # end socket not yet asking -> pidfd
    stopped: set[int] = set()                    # pidfds of runs the observer stopped
    while True:
        ready = select.select([link, warm_fd, *runs, *asking], [], [])[0]
        for fd in ready:
            if fd == link:
                data, fds, _, _ = socket.recv_fds(link, PID, 2)
                if not data:
                    return
                pidfd, report = fds
                runs[pidfd] = (int.from_bytes(data, "little"), report)
                asking[report] = pidfd
            elif fd == warm_fd:
                return
            elif fd in asking:
                pidfd = asking.pop(fd)
                stopped.add(pidfd)
                _kill(pidfd)
            elif fd in runs:
                pid, report = runs.pop(fd)
                asking.pop(report, None)
                _, status, usage = os.wait4(pid, 0)
                try:
                    os.write(report, end_line(exit_code(status), usage.ru_utime + usage.ru_stime, fd in stopped))
                except OSError:
                    pass
                stopped.discard(fd)
                os.close(report)
                os.close(fd)


def _kill(pidfd: int) -> None:
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except ProcessLookupError:
        pass
