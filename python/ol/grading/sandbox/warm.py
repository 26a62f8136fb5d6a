"""The warm process inside a sandbox: set up once, then fork one run at a time.

    python -c 'from ol.grading.sandbox.warm import main; main(CONTROL_FD)'

It is trusted: it never runs a student's code itself.  It receives a setup
message on its control socket (files, module sources, its role), imports
what every run needs (its role: ol.grading.sandbox.roles), then forks runs on
request (ol.grading.sandbox.confine does the confining).

Every run is forked from this process, so whatever this process holds when
it forks, the run holds a copy of (code that reads its own memory, through
numpy's raw pointers, would find it).  So this process holds nothing of any
other run: a run's notes go straight from the run to the observer (a pipe
the observer made), how it ended goes from its guard to the observer (a
socket the observer made), and the request is the same for every run of
the student's suite.  What is left here, confined by uid, is the guards'
pids and each run's user and temporary folder, which it needs to clean up
after the run:

    on a guard's end    (outside the namespace confinement, as root) every
                        process of the run's user killed, then the run's
                        folder removed (ol.core.removal: no tree can fault it);
                        whatever cannot be removed is written to stderr,
                        which the observer keeps for its fault messages

This is the root side of a run, not its guard: a run that outlives its guard
(setsid, a double fork) is still found by its user.

In the namespace confinement a run has no guard: it is cloned beside this
process, as a child of its parent, the reporter (ol.grading.sandbox.reporter), which
reaps it, stops it and tells the observer how it ended; the reporter never
forks a run.  So is a run of a variant of the course's own (trusted: nothing
to confine), in every confinement.  The shared check's collector keeps a
guard: its runs need a reaper above them (confine._reaper).

Messages (ol.grading.wire; the descriptors travel as SCM_RIGHTS):
    -> {"op": "setup", ...}          <- {"event": "ready"} | {"event": "fault"}
    -> {"op": "run", ...}            (protocol.RunRequest) with the run's channel, its notes
                                     pipe, its end socket and, where there is one, its memory
                                     group's join file (memory.JOIN_FILE)
    -> {"op": "quit"}
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import sys

from ol.grading.sandbox.roles import CHANNEL_FD, NOTES_FD, Role, traceback_text


def main(control_fd: int) -> None:
    from ol.grading.wire import PeerGone, WireError, recv_message, send_message

    from ol.grading.sandbox import reporter

    link = reporter.start(control_fd)   # from here on this process is the reporter's child
    control = socket.socket(fileno=control_fd)
    try:
        header, buffers = recv_message(control)
        role = Role.for_setup(header, buffers)
        from ol.grading.sandbox import syscalls

        syscalls.prepare()   # every run it forks loads a filter: built once, here
    except BaseException as error:  # the setup is ours: any failure is an internal fault
        _send_safely(control, {"event": "fault", "detail": f"setup failed: {traceback_text(error)}"})
        os._exit(1)
    send_message(control, {"event": "ready", "pid": os.getpid()})
    loop = Loop(control, role, link)
    try:
        loop.serve()
    except (PeerGone, WireError, OSError):
        pass
    finally:
        loop.kill_all()
        os._exit(0)


def _send_safely(control, message) -> None:
    from ol.grading.wire import send_message

    try:
        send_message(control, message)
    except OSError:
        pass


# ---- the loop ----------------------------------------------------------------------------


class Loop:
    """Forks runs on request; reaps their guards and cleans up after each."""

    def __init__(self, control: socket.socket, role: Role, link: socket.socket):
        from ol.grading.sandbox.reporter import Beside

        self.control, self.role, self.link, self.beside = control, role, link, Beside()
        self.guards: dict[int, tuple[int | None, str | None]] = {}   # guard pid -> (run user, run folder)
        wake_read, self.wake_write = os.pipe()
        self.wake_read = wake_read
        for fd in (wake_read, self.wake_write):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        signal.set_wakeup_fd(self.wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def serve(self) -> None:
        while True:
            ready, _, _ = select.select([self.control, self.wake_read], [], [], 1.0)
            if self.control in ready:
                header, fds = recv_message_with_fds(self.control)
                if header.get("op") == "quit":
                    for fd in fds:
                        os.close(fd)
                    return
                if header.get("op") == "run":
                    self.start(header, fds)
                else:
                    for fd in fds:
                        os.close(fd)
            if self.wake_read in ready:
                try:
                    os.read(self.wake_read, 4096)
                except BlockingIOError:
                    pass
            self.reap()

    def start(self, header: dict, fds: list[int]) -> None:
        from ol.grading.sandbox import confine
        from ol.grading.protocol import RunRequest

        request = RunRequest.from_header(header)
        try:
            if len(fds) < 3:
                raise ValueError(f"a run needs its channel, notes and end descriptors; {len(fds)} came")
            channel, notes, report = fds[:3]
            memory = fds[3] if len(fds) > 3 else -1
            keep = {channel: CHANNEL_FD, notes: NOTES_FD}
            body = lambda moved: self.role.run_or_fault(request)  # noqa: E731
            limits = self.role.limits_for(request)
            user = folder = None
            if request.trusted:  # a variant of the course's own: not confined
                self.start_beside(0, report, lambda: confine.become_plain_run(
                    body, limits=limits, keep_fds=keep, memory_fd=memory))
                return
            if self.role.confinement == confine.CONFINED and request.task != "collect":
                # pid 1 of namespaces of its own: no guard between
                self.start_beside(confine.RUN_NAMESPACES, report, lambda: confine.become_confined_run(
                    body, user=request.user, limits=limits, keep_fds=keep, report_fd=report, memory_fd=memory,
                    readable=self.role.readable))
                return
            if self.role.confinement != confine.CONFINED:
                user = confine.run_uid(request.user)
                folder = self.role.run_folder(user)
            guard = confine.run_confined(
                body, confinement=self.role.confinement, user=request.user, limits=limits, keep_fds=keep,
                report_fd=report, private=folder, dumpable=request.task == "collect", memory_fd=memory,
                readable=self.role.readable,
            )
            self.guards[guard] = (user, folder)
        except Exception as error:   # ours: say it where the observer reads this run's end
            if len(fds) > 2:
                from ol.grading.protocol import fault_line

                try:
                    os.write(fds[2], fault_line(f"the run could not be started: {traceback_text(error)}"))
                except OSError:
                    pass
        finally:
            for fd in fds:
                os.close(fd)

    def start_beside(self, namespaces: int, report: int, become) -> None:
        """Clone a run beside this process, in new `namespaces`, where it calls
        become() (which never returns); the reporter watches it and writes
        its end on `report`."""
        from ol.grading.sandbox import reporter

        pid, pidfd = self.beside.fork(namespaces)
        if pid == 0:
            become()
        try:
            reporter.watch(self.link, pid, pidfd, report)
        finally:
            os.close(pidfd)

    def reap(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.guards:
                self.clean_up(*self.guards.pop(pid))

    def clean_up(self, user: int | None, folder: str | None) -> None:
        """After a run's guard has ended, however it ended: every process of
        the run's user killed, its folder removed."""
        from ol.core.removal import remove_tree
        from ol.grading.sandbox import confine

        if user is not None:
            confine.kill_user(user)
        if folder is not None:
            problem = remove_tree(folder)
            if problem:
                print(f"ol: a run's folder was left behind: {problem}", file=sys.stderr, flush=True)

    def kill_all(self) -> None:
        for guard in list(self.guards):
            try:
                os.kill(guard, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for guard in list(self.guards):
            try:
                os.waitpid(guard, 0)
            except ChildProcessError:
                pass
            self.clean_up(*self.guards.pop(guard))


def recv_message_with_fds(sock: socket.socket) -> tuple[dict, list]:
    """A control message; a "run" is followed by one byte carrying its descriptors."""
    from ol.grading.wire import recv_message

    header, buffers = recv_message(sock)
    if header.get("fds"):
        _, fds, _, _ = socket.recv_fds(sock, 1, int(header["fds"]))
        return header, list(fds)
    return header, []
