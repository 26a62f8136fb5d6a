"""The observer's half of the shared check's collect-once protocol: the
collected suite (ol.grading.sandbox.collector, inside a confined run of the tests'
sandbox), seen from here.  The frame layout both halves use is in
ol.grading.protocol.
"""

from __future__ import annotations

import secrets
import select
import signal
import socket
import time
from dataclasses import dataclass

from ol.grading import protocol
from ol.grading.protocol import EXIT_COLLECT, EXIT_EMPTY, FrameReader, NotesStream, RunEnd, RunRequest
from ol.grading.sandbox import confine
from ol.grading.sandbox.warm_link import Sandbox, SandboxFault
from ol.grading.wire import read_available


@dataclass(frozen=True)
class NotCollected:
    """Why the collected suite serves no run: every run then ends with `exit`
    and carries note() among its notes, as an isolated run that met the same
    problem would say it.  `isolate` is no fault of the suite: it calls the
    code under test while it is imported, so it must be collected in each run."""

    kind: str                  # "isolate", "empty" or "collect"
    exit: int                  # EXIT_COLLECT, or EXIT_EMPTY for a suite without a test
    detail: str | None = None  # what pytest said, for "collect" (the suite's own words: may be "")

    @classmethod
    def collecting(cls, detail: str) -> NotCollected:
        return cls("collect", EXIT_COLLECT, detail)

    def note(self) -> dict:
        return {"problem": self.kind, **({"detail": self.detail} if self.detail is not None else {})}


ISOLATE, EMPTY = NotCollected("isolate", EXIT_COLLECT), NotCollected("empty", EXIT_EMPTY)


class SuiteBroke(Exception):
    """The shared check's collected suite (the suite's own process) wrote into
    the grader's connection what is not a frame: the suite is rejected."""


class CollectedRun:
    """One run of the collected suite, seen from here: its notes (a socket
    whose other end the run holds) and its end, as the collector's D frame
    says it (the suite's own claim: README.md, what the local check
    guarantees)."""

    def __init__(self, link: CollectorLink, token: int, sock: socket.socket):
        self.link, self.token, self.sock = link, token, sock
        self.stream = NotesStream()
        self.stream.lines.append({"collected": list(link.collected), "filed": list(link.filed)})   # once, for every run
        self.end: RunEnd | None = None
        self.kill_sent = False

    def watched(self) -> list:
        return [self.sock] if self.sock is not None else []

    def take(self, ready) -> list[dict]:
        if self.sock is None or self.sock not in ready:
            return []
        chunk = bytearray()
        closed = read_available(self.sock, chunk, most=8)
        lines = self.stream.feed(bytes(chunk))
        if closed:
            lines += self.stream.finish()
            self.sock.close()
            self.sock = None
        return lines

    def ended(self, exit: int, cpu: float) -> None:
        while self.sock is not None and self.take([self.sock]):
            pass
        # stopped as a guard says it: killed after the observer asked (not ended by itself first)
        self.end = RunEnd(exit=exit, cpu=cpu, stopped=self.kill_sent and exit == 128 + signal.SIGKILL)

    def stop(self) -> None:
        if self.end is None:
            self.kill_sent = True
            self.link.kill_run(self.token)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.link.runs.pop(self.token, None)


class CollectorLink:
    """The local check's collected suite (ol.grading.sandbox.collector), seen from here.

    It is started once, as a run of the tests' sandbox; each graded run is
    then one frame to it, the same for every run, carrying the run's
    channel, a notes socket whose other end stays here, and the run's memory
    group.  A run is known to it by a random token, not a count.  It is the
    suite's own process: what it says about a run is the suite's claim,
    blind to which variant the run served (README.md: what the local check
    guarantees), and its frames are read by protocol.FrameReader, which
    never raises."""

    def __init__(self, tests: Sandbox, user: int, memory_fd: int, collect_seconds: float, cpu_seconds: int):
        """Start collecting as `user`; wait up to collect_seconds (the observer's clock) for it.
        cpu_seconds: the processor time of the collector and of each of its runs (every run's)."""
        ours, theirs = socket.socketpair()
        self.own = tests.start_run(RunRequest(suite="student", task="collect", cpu_seconds=cpu_seconds), theirs,
                                   user, memory_fd)
        theirs.close()
        self.control = ours
        self.frames = FrameReader()
        self.runs: dict[int, CollectedRun] = {}
        self.collected: list[str] = []   # the suite's test ids, in running order
        self.filed: list[str] = []       # the same, in file order
        self.problem: NotCollected | None = None
        self._await_collection(collect_seconds)

    def _await_collection(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            watched = [self.control, *self.own.watched()]
            ready, _, _ = select.select(watched, [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                self.problem = NotCollected.collecting(
                    f"collecting your tests took longer than {seconds:.0f} s: look for a loop or a long "
                    "computation at module level (outside any test function)")
                return
            self.own.take(ready)
            if self.own.end is not None and self.control not in ready and not self._pending_frame():
                raise SandboxFault(self.ended())
            if self.control in ready:
                for frame in self._frames():
                    if frame.kind == protocol.FRAME_DONE:
                        continue   # written by the suite while it was being collected: no run exists yet
                    if frame.kind == protocol.FRAME_COLLECTED:
                        self.collected, self.filed = protocol.collected_ids(frame)
                        return
                    kind, detail = protocol.problem(frame)
                    if kind == "isolate":
                        self.problem = ISOLATE
                    elif kind == "empty":
                        self.problem = EMPTY
                    else:   # a collection error, or threads left running by it
                        self.problem = NotCollected.collecting(detail or kind)
                    return
                if self.frames.broken:
                    self.problem = NotCollected.collecting(
                        "your tests wrote into the grader's own connection while being collected")
                    return

    def _frames(self) -> list[protocol.Frame]:
        try:
            chunk = self.control.recv(protocol.MAX_NOTES_BYTES)
        except OSError:
            chunk = b""
        if not chunk:
            raise SandboxFault(self.ended())
        return self.frames.feed(chunk)

    def start_run(self, request: RunRequest, channel: socket.socket, user: int, memory_fd: int = -1) -> CollectedRun:
        token = secrets.randbits(31)
        while token in self.runs:
            token = secrets.randbits(31)
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        fds = [channel.fileno(), theirs.fileno()] + ([memory_fd] if memory_fd >= 0 else [])
        try:
            socket.send_fds(self.control, [protocol.run_frame(token, len(fds))], fds)
        except OSError as error:   # it ended between two runs: its exit status comes with the fault
            ours.close()
            raise SandboxFault(f"the process holding your collected tests could not be sent a run "
                               f"({error.strerror or error})") from None
        finally:
            theirs.close()
        run = self.runs[token] = CollectedRun(self, token, ours)
        return run

    def kill_run(self, token: int) -> None:
        try:
            self.control.sendall(protocol.kill_frame(token))
        except OSError:
            pass

    def _pending_frame(self) -> bool:
        """Its last frame may still be in the socket when its process has ended."""
        ready, _, _ = select.select([self.control], [], [], 0)
        return bool(ready)

    def watched(self) -> list:
        if self.problem is not None:   # the suite did not collect: nothing more comes from it
            return []
        return [self.control, *self.own.watched()]

    def read(self, ready: list) -> None:
        """Take the collector's frames: each D frame ends its run.  Raises
        SuiteBroke if the collector writes what is not a frame, SandboxFault
        if it ends while runs are in flight."""
        self.own.take(ready)
        if self.control not in ready:
            if self.own.end is not None and not self._pending_frame():
                raise SandboxFault(self.ended())
            return
        try:
            chunk = self.control.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            raise SandboxFault(self.ended())
        for frame in self.frames.feed(chunk):
            run = self.runs.get(frame.run_id) if frame.kind == protocol.FRAME_DONE else None
            if run is not None and run.end is None:
                run.ended(frame.exit, frame.cpu_ms / 1000)
        if self.frames.broken:
            raise SuiteBroke(f"the process holding your collected tests wrote {self.frames.broken}")

    def ended(self) -> str:
        end = self.own.end or RunEnd()
        notes = self.own.stream.lines
        return (f"the process holding your collected tests ended ({confine.describe_exit(end.exit)})"
                + (f": {'; '.join(end.faults)}" if end.faults else "")
                + (f": {_lines_text(notes)}" if notes else ""))

    def close(self) -> None:
        for run in list(self.runs.values()):
            run.close()
        self.control.close()
        self.own.stop()
        self.own.close()


def _lines_text(lines: list) -> str:
    return "; ".join(str(line)[:500] for line in lines)[:2000]
