"""The observer's half of the shared check's collect-once protocol: the
collected suite (ol.grading.collector, inside a confined run of the tests'
sandbox), seen from here.  The frame layout both halves use is in
ol.grading.protocol.
"""

from __future__ import annotations

import select
import socket
import time

from ol.grading import confine, protocol
from ol.grading.protocol import FrameReader, RunRequest
from ol.grading.sandbox import Sandbox, SandboxFault
from ol.grading.wire import read_available


class SuiteBroke(Exception):
    """The shared check's collected suite (the suite's own process) wrote into
    the grader's connection what is not a frame: the suite is rejected."""


class CollectorLink:
    """The local check's collected suite (ol.grading.collector), seen from here.

    It is started once, as a run of the tests' sandbox; each graded run is
    then one frame to it, carrying the run's channel, a notes socket whose
    other end stays here, and the run's memory group.  It is the suite's own
    process: what it says about a run is the suite's claim, blind to which
    variant the run served (README.md: what the local check guarantees), and
    its frames are read by protocol.FrameReader, which never raises."""

    RUN_ID = -1

    def __init__(self, tests: Sandbox, user: int, memory_fd: int, collect_seconds: float):
        """Start collecting as `user`; wait up to collect_seconds (the observer's clock) for it."""
        ours, theirs = socket.socketpair()
        tests.start_run(self.RUN_ID, RunRequest(suite="student", task="collect"), theirs, user, memory_fd)
        theirs.close()
        self.run_id, self.control = self.RUN_ID, ours
        self.frames = FrameReader()
        self.notes: dict[int, tuple[socket.socket, bytearray, int]] = {}   # run id -> notes socket, data, memory fd
        self.collected: list[str] = []
        self.listed: set[int] = set()     # runs whose report should name the collected tests
        self.problem: dict | None = None
        self.problem_exit = 0
        self._await_collection(collect_seconds, tests)

    def _await_collection(self, seconds: float, tests: Sandbox) -> None:
        deadline = time.monotonic() + seconds
        while True:
            ready, _, _ = select.select([self.control, tests.control], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                self.problem, self.problem_exit = {"problem": "collect", "detail": (
                    f"collecting your tests took longer than {seconds:.0f} s: look for a loop or a long "
                    "computation at module level (outside any test function)")}, 3
                return
            if tests.control in ready:
                message = tests.receive()
                if message.get("id") == self.RUN_ID and self.problem is None and not self._pending_frame():
                    raise SandboxFault(self.ended(message))
            if self.control in ready:
                for frame in self._frames():
                    if frame.kind == protocol.FRAME_DONE:
                        continue   # written by the suite while it was being collected: no run exists yet
                    if frame.kind == protocol.FRAME_COLLECTED:
                        self.collected = protocol.collected_ids(frame)
                        return
                    kind, detail = protocol.problem(frame)
                    if kind == "isolate":
                        self.problem, self.problem_exit = {"problem": "isolate"}, 3
                    elif kind == "empty":
                        self.problem, self.problem_exit = {"problem": "empty"}, 4
                    else:   # a collection error, or threads left running by it
                        self.problem, self.problem_exit = {"problem": "collect", "detail": detail or kind}, 3
                    return
                if self.frames.broken:
                    self.problem, self.problem_exit = {"problem": "collect", "detail": (
                        "your tests wrote into the grader's own connection while being collected")}, 3
                    return

    def _frames(self) -> list[protocol.Frame]:
        try:
            chunk = self.control.recv(protocol.MAX_NOTES_BYTES)
        except OSError:
            chunk = b""
        if not chunk:
            raise SandboxFault("the process holding your collected tests closed its connection")
        return self.frames.feed(chunk)

    def start_run(self, run_id: int, request: RunRequest, channel: socket.socket, user: int,
                  memory_fd: int = -1) -> None:
        index = {test: n for n, test in enumerate(self.collected)}
        order = [index[t] for t in request.order if t in index]
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        fds = [channel.fileno(), theirs.fileno()] + ([memory_fd] if memory_fd >= 0 else [])
        frame = protocol.run_frame(run_id, request.all_tests, len(fds), request.cpu_seconds, order)
        try:
            socket.send_fds(self.control, [frame], fds)
        except OSError as error:   # it ended between two runs: its exit status comes with the fault
            ours.close()
            raise SandboxFault(f"the process holding your collected tests could not be sent run {run_id} "
                               f"({error.strerror or error})") from None
        finally:
            theirs.close()
        self.notes[run_id] = (ours, bytearray(), memory_fd)
        if request.list_tests:
            self.listed.add(run_id)

    def kill_run(self, run_id: int) -> None:
        try:
            self.control.sendall(protocol.kill_frame(run_id))
        except OSError:
            pass

    def _pending_frame(self) -> bool:
        """Its last frame may still be in the socket when its process has ended."""
        ready, _, _ = select.select([self.control], [], [], 0)
        return bool(ready)

    def watched(self) -> list:
        if self.problem is not None:   # the suite did not collect: nothing more comes from it
            return []
        return [self.control] + [sock for sock, _, _ in self.notes.values()]

    def read(self, ready: list) -> list[dict]:
        """"done" messages for the runs that ended, with their notes.
        Raises SuiteBroke if the collector writes what is not a frame."""
        for run_id, (sock, data, _) in self.notes.items():
            if sock in ready:
                read_available(sock, data)
        if self.control not in ready:
            return []
        try:
            chunk = self.control.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            raise SandboxFault("the process holding your collected tests ended during grading")
        messages = []
        for frame in self.frames.feed(chunk):
            if frame.kind != protocol.FRAME_DONE or frame.run_id not in self.notes:
                continue   # not a run in flight
            sock, data, _ = self.notes.pop(frame.run_id)
            read_available(sock, data)
            sock.close()
            notes = protocol.parse_notes(data)
            if frame.run_id in self.listed:
                self.listed.discard(frame.run_id)
                notes.insert(0, {"collected": list(self.collected)})
            messages.append({"event": "done", "id": frame.run_id, "exit": frame.exit, "notes": notes,
                             "cpu": frame.cpu_ms / 1000})
        if self.frames.broken:
            raise SuiteBroke(f"the process holding your collected tests wrote {self.frames.broken}")
        return messages

    def ended(self, message: dict) -> str:
        return (f"the process holding your collected tests ended ({confine.describe_exit(message.get('exit'))})"
                + (f": {message['fault']}" if message.get("fault") else "")
                + (f": {_lines_text(message.get('notes', []))}" if message.get("notes") else ""))

    def close(self) -> None:
        for sock, _, _ in self.notes.values():
            sock.close()
        self.control.close()


def _lines_text(lines: list) -> str:
    return "; ".join(str(line)[:500] for line in lines)[:2000]
