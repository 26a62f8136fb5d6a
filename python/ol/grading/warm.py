"""The warm process inside a sandbox: set up once, then fork one run at a time.

    python -c 'from ol.grading.warm import main; main(CONTROL_FD)'

It is trusted: it never runs a student's code itself.  It receives a setup
message on its control socket (files, module sources, its role), imports
what every run needs (its role: ol.grading.roles), then forks runs on
request (ol.grading.confine does the confining) and reports how each ended.

A run's verdict is its exit status, seen by this process's waitpid and
passed on as such; what the run writes to its notes pipe (the tests it
collected, the one it is running, the failures) is information for the
student's report, never a verdict.  A run learns nothing of which job it is:
the tests' runs get the same request every time; only the implementation
runs know the variant, and they are in another sandbox.

Messages (ol.grading.wire; the run's channel, and its memory group's
cgroup.procs where there is one, travel as SCM_RIGHTS):
    -> {"op": "setup", ...}          <- {"event": "ready"} | {"event": "fault"}
    -> {"op": "run", "id": n, ...}   <- {"event": "done", "id": n, "exit": code, "stopped": bool,
       (protocol.RunRequest)             "notes": [...], "cpu": seconds}
    -> {"op": "kill", "id": n}       (the run's "done" follows)
    -> {"op": "quit"}

The notes a run writes are read by protocol.parse_notes alone: a
run that writes anything at all there loses its own notes, nothing
more.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket

from ol.grading.roles import CHANNEL_FD, NOTES_FD, Role, traceback_text


def main(control_fd: int) -> None:
    from ol.grading.wire import PeerGone, WireError, recv_message, send_message

    control = socket.socket(fileno=control_fd)
    try:
        header, buffers = recv_message(control)
        role = Role.for_setup(header, buffers)
        from ol.grading import syscalls

        syscalls.prepare()   # every run it forks loads a filter: built once, here
    except BaseException as error:  # the setup is ours: any failure is an internal fault
        _send_safely(control, {"event": "fault", "detail": f"setup failed: {traceback_text(error)}"})
        os._exit(1)
    send_message(control, {"event": "ready", "pid": os.getpid()})
    try:
        Loop(control, role).serve()
    except (PeerGone, WireError, OSError):
        pass
    finally:
        os._exit(0)


def _send_safely(control, message) -> None:
    from ol.grading.wire import send_message

    try:
        send_message(control, message)
    except OSError:
        pass


# ---- the loop ----------------------------------------------------------------------------


class _Run:
    def __init__(self, run_id, guard: int, notes_fd: int, fault_fd: int):
        self.id, self.guard, self.notes_fd, self.fault_fd = run_id, guard, notes_fd, fault_fd
        self.notes = bytearray()
        self.fault = bytearray()
        self.stopped = False     # killed on the observer's request

    def buffer(self, name: str) -> bytearray:
        """Where what the run wrote on its pipe `name` ("notes_fd", "fault_fd") is kept."""
        return self.notes if name == "notes_fd" else self.fault


class Loop:
    """Forks runs on request and reports each one's exit status when it ends."""

    def __init__(self, control: socket.socket, role: Role):
        self.control, self.role = control, role
        self.runs: dict[int, _Run] = {}      # guard pid -> run
        wake_read, self.wake_write = os.pipe()
        self.wake_read = wake_read
        for fd in (wake_read, self.wake_write):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        signal.set_wakeup_fd(self.wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def serve(self) -> None:
        while True:
            readable = [self.control, self.wake_read] + [fd for r in self.runs.values() for fd in (r.notes_fd, r.fault_fd) if fd >= 0]
            ready, _, _ = select.select(readable, [], [], 1.0)
            for fd in ready:
                if fd is self.control:
                    header, buffers = recv_message_with_fds(self.control)
                    if header.get("op") == "quit":
                        self.kill_all()
                        return
                    self.command(header, buffers)
                elif fd == self.wake_read:
                    try:
                        os.read(self.wake_read, 4096)
                    except BlockingIOError:
                        pass
                else:
                    self.drain(fd)
            self.reap()

    def command(self, header: dict, fds: list[int]) -> None:
        op = header.get("op")
        if op == "run":
            self.start(header, fds)
        elif op == "kill":
            for run in self.runs.values():
                if run.id == header.get("id"):
                    run.stopped = True
                    _kill(run.guard)
        else:
            for fd in fds:
                os.close(fd)

    def start(self, header: dict, fds: list[int]) -> None:
        from ol.grading import confine
        from ol.grading.protocol import RunRequest

        request = RunRequest.from_header(header)
        channel = fds[0] if fds else -1
        memory = fds[1] if len(fds) > 1 else -1
        notes_read, notes_write = os.pipe()
        fault_read, fault_write = os.pipe()
        keep = {notes_write: NOTES_FD}
        if channel >= 0:
            keep[channel] = CHANNEL_FD
        body = lambda moved: self.role.run_or_fault(request)  # noqa: E731
        limits = self.role.limits_for(request)
        if request.trusted:  # a variant of the course's own module: no need to confine it
            guard = confine.run_plain(body, limits=limits, keep_fds=keep, memory_fd=memory)
        else:
            guard = confine.run_confined(
                body, confinement=self.role.confinement, user=request.user, limits=limits, keep_fds=keep,
                fault_fd=fault_write, scratch=self.role.scratch, dumpable=request.task == "collect", memory_fd=memory,
                readable=self.role.readable,
            )
        for fd in (notes_write, fault_write, *fds):
            os.close(fd)
        for fd in (notes_read, fault_read):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        self.runs[guard] = _Run(header.get("id"), guard, notes_read, fault_read)

    def drain(self, fd: int) -> None:
        """One chunk of a run's pipe, kept up to the protocol's bound; closed
        once its writer has."""
        from ol.grading.wire import read_available

        for run in self.runs.values():
            for name in ("notes_fd", "fault_fd"):
                if getattr(run, name) == fd:
                    if read_available(fd, run.buffer(name), most=1):
                        os.close(fd)
                        setattr(run, name, -1)
                    return

    def reap(self) -> None:
        from ol.grading.confine import exit_code
        from ol.grading.protocol import MAX_NOTES_BYTES
        from ol.grading.wire import READ_CHUNK, read_available

        while self.runs:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            run = self.runs.pop(pid, None)
            if run is None:
                continue
            for name in ("notes_fd", "fault_fd"):  # what is there now; a grandchild may hold the pipe
                fd = getattr(run, name)
                if fd >= 0:                          # reads enough to fill the bound, no more
                    read_available(fd, run.buffer(name), most=MAX_NOTES_BYTES // READ_CHUNK + 1)
                    os.close(fd)
            self.done(run, exit_code(status), usage.ru_utime + usage.ru_stime)

    def done(self, run: _Run, code: int, cpu: float) -> None:
        """The run's "done": its exit status, its processor time (the guard
        and everything it waited for: the whole run), its notes."""
        from ol.grading.protocol import parse_notes
        from ol.grading.wire import send_message

        message = {"event": "done", "id": run.id, "exit": code, "stopped": run.stopped,
                   "notes": parse_notes(run.notes), "cpu": round(cpu, 4)}
        if run.fault:
            message["fault"] = run.fault.decode(errors="replace")[-4000:]
        send_message(self.control, message)

    def kill_all(self) -> None:
        for guard in list(self.runs):
            _kill(guard)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def recv_message_with_fds(sock: socket.socket) -> tuple[dict, list]:
    """A control message; a "run" is preceded by one byte carrying its channel fd."""
    from ol.grading.wire import recv_message

    header, buffers = recv_message(sock)
    if header.get("fds"):
        _, fds, _, _ = socket.recv_fds(sock, 1, int(header["fds"]))
        return header, list(fds)
    return header, []
