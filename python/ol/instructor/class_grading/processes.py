"""The `ol check` processes a class's grading has started, and ending them
all when the grading is interrupted (Ctrl-C, SIGTERM).

    processes = CheckProcesses()
    done = processes.run(command, cwd=copy, env=env, timeout=1200)   # like subprocess.run, output captured
    processes.stop()          # from the main thread: every process ended within STOP_GRACE + KILL_WAIT s

Each check runs in a session of its own (no terminal's Ctrl-C reaches it,
so none outlives a grading that waits on it unawares).  stop() sends SIGTERM
to each check's process group (a check ends its sandboxes on the way out,
ol.core.command: exit 143) and SIGKILL to what is left after STOP_GRACE seconds; a
run() then waiting on that check raises Interrupted at once, never a
record: an ended check is no grade.  After stop(), run() starts nothing.
An exception raised in the waiting thread itself (a cancelled Ray task
gets KeyboardInterrupt there) ends its check the same way.

The main thread waits for the checks with completed_awake(), never a
blocking as_completed(): the kernel may hand a process-directed SIGINT or
SIGTERM to a worker thread, and Python runs the handler only when the main
thread next executes bytecode, so a main thread blocked on a lock would hear
the signal only when some check ends (seconds to minutes later).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait

STOP_GRACE = 2.0        # seconds a check has to end its sandboxes after SIGTERM
KILL_WAIT = 1.0         # seconds to reap it after SIGKILL
POLL = 0.2              # how often a waiting run() looks whether the grading is stopping


def completed_awake(futures: Iterable[Future]) -> Iterator[Future]:
    """Each future as it completes, as concurrent.futures.as_completed, but the
    calling thread wakes every POLL seconds, so a signal's handler runs in it
    within POLL whichever thread the kernel delivered the signal to."""
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=POLL, return_when=FIRST_COMPLETED)
        yield from done


class Interrupted(Exception):
    """The grading was stopped while (or before) this check ran."""


class CheckProcesses:
    def __init__(self):
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self.stopping = False

    def run(self, command: list[str], *, cwd, env: dict, timeout: float) -> subprocess.CompletedProcess:
        """`command` to its end, its output captured as text; TimeoutExpired
        after `timeout` seconds (the process group killed), Interrupted when stop()
        ends it."""
        with self._lock:
            if self.stopping:
                raise Interrupted()
            process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, start_new_session=True)
            self._running.add(process)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    out, err = process.communicate(timeout=POLL)
                    break
                except subprocess.TimeoutExpired:
                    if self.stopping:
                        _reap(process, STOP_GRACE + KILL_WAIT)
                        raise Interrupted() from None
                    if time.monotonic() > deadline:
                        _signal_group(process, signal.SIGKILL)
                        _reap(process, KILL_WAIT)
                        raise subprocess.TimeoutExpired(command, timeout) from None
        except BaseException:      # raised in this thread itself (a Ray task cancelled: KeyboardInterrupt)
            if process.poll() is None:
                _signal_group(process, signal.SIGTERM)
                _reap(process, STOP_GRACE)
            raise
        finally:
            with self._lock:
                self._running.discard(process)
        if self.stopping:
            raise Interrupted()
        return subprocess.CompletedProcess(command, process.returncode, out, err)

    def stop(self) -> None:
        """End every running check: SIGTERM, then SIGKILL after STOP_GRACE seconds."""
        with self._lock:
            self.stopping = True
            running = list(self._running)
        for process in running:
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        for process in running:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for process in running:
            if process.poll() is None:                  # (an ended leader's pid may be another's by now)
                _signal_group(process, signal.SIGKILL)


def _signal_group(process: subprocess.Popen, number: int) -> None:
    try:
        os.killpg(process.pid, number)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(process: subprocess.Popen, seconds: float) -> None:
    """Wait for `process` (ended by stop()), closing its pipes so nothing it left holding them blocks."""
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL)
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()
