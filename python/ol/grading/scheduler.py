"""The observer's scheduler: runs tests against implementations, each pair
in its own confined processes (ol.grading.sandbox.warm_link), `workers` at a time, and
records how each run ended.

For one run the observer makes a socket pair, hands one end to a fresh
implementation run (it knows the variant) and the other to a fresh tests run
(it knows nothing but the suite), and waits.  Each side's notes and its end
come straight back here (warm_link.RunEnds): the warm processes that fork the
runs never hold them.  The outcome is what this process observes: the exit
status the run's guard saw, or the deadline that this process measured
passing first.  Nothing a run writes can name the job it belongs to: the
mapping from run to job lives here only.

The notes are read while a run goes on; a caller that has heard enough from
a run (Scheduler.run's on_notes) stops it.  A stop reaches a run as its
death, and what the caller decided from is never shown to any run.

Time: every run of a check has the same limits (a run can read its own):
time_limit is processor time, per process, enforced by the kernel
(RLIMIT_CPU), so a verdict does not depend on how loaded the machine is;
this process's own clock stops a run only at WALL_FACTOR times that (a run
that sleeps or blocks uses no processor).

What runs write is read by ol.grading.protocol alone: notes and
collector frames, bounded, never raising.  In the shared check the tests' runs
are forked by the collected suite, reached through ol.grading.sandbox.collector_link.
"""

from __future__ import annotations

import dataclasses
import math
import os
import select
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ol.core.removal import remove_tree
from ol.grading.protocol import NotesStream, RunEnd, RunRequest
from ol.grading.sandbox import confine
from ol.grading.sandbox.collector_link import ISOLATE, CollectorLink, NotCollected
from ol.grading.sandbox.memory import MemoryBound
from ol.grading.sandbox.warm_link import OL_PACKAGE, READY_TIMEOUT, Sandbox, SandboxFault, Setup, make_scratch, runtime_copy

KILL_GRACE = 20.0        # seconds a killed run may take to be reported
WALL_FACTOR = 3.0        # a run is stopped by the clock at this many times its processor time limit


@dataclass
class Run:
    """One run: the request for the tests' side (the same for every graded
    run of a suite), the variant for the implementation's side, and the
    processor time each of its processes may take (seconds; the clock stops
    it at WALL_FACTOR times that)."""

    id: int
    tests: RunRequest
    impl: RunRequest
    time_limit: float
    wall_limit: float | None = None   # the clock's own deadline (default WALL_FACTOR x time_limit)

    @property
    def cpu_seconds(self) -> int:
        return max(1, math.ceil(self.time_limit))

    @property
    def deadline(self) -> float:
        return self.wall_limit if self.wall_limit is not None else WALL_FACTOR * self.time_limit


@dataclass
class RunOutcome:
    id: int
    exit: int | None = None          # the tests run's exit status; None if it ran out of time
    seconds: float = 0.0
    timed_out: bool = False
    notes: list[dict] = field(default_factory=list)   # what the tests run said: information only
    stopped: str = ""                # why the tests run was ended early (on_notes' reason; "" if it was not)
    tests_stopped: bool = False      # ... and its guard ended it on that request (not ended by itself first)
    impl_exit: int | None = None
    impl_notes: list[dict] = field(default_factory=list)
    impl_stopped: bool = False       # the implementation run was ended on the observer's request
    fault: str | None = None         # the sandbox failed to confine or run it
    cpu_seconds: float | None = None         # processor time of the tests run, all its processes (None: unknown)
    impl_cpu_seconds: float | None = None    # the same for the implementation run


# ---- slots: one run user and one memory group each ----------------------------------------
#
# A check with w workers has slot_count(w) = 2w + 1 slots, each with a memory group:
# worker k's tests run takes 2k, its implementation run 2k + 1, and the shared check's
# collector 2w.  A run's user is not its slot's: each run draws a fresh one from the
# check's block (confine.UidBlock), so no run's user says where it runs or what came before.

SIDES_PER_RUN = 2   # a tests run and an implementation run


def tests_slot(worker: int) -> int:
    return SIDES_PER_RUN * worker


def impl_slot(worker: int) -> int:
    return SIDES_PER_RUN * worker + 1


def collector_slot(workers: int) -> int:
    return SIDES_PER_RUN * workers


def slot_count(workers: int) -> int:
    return collector_slot(workers) + 1


# ---- the scheduler ---------------------------------------------------------------------


class Scheduler:
    """Runs Runs, `workers` at a time, each in fresh confined processes.

        with Scheduler(tests_setup, impl_setup, confinement=confine.CONFINED) as scheduler:
            outcomes = scheduler.run([Run(0, {...}, {...}, 30.0), ...])
    """

    def __init__(self, tests: Setup | None, impl: Setup, *, confinement: str, hidden: Path, workers: int = 2,
                 sharing: str = "isolated", course: Setup | None = None, limits: confine.Limits | None = None):
        if confinement not in confine.CONFINEMENTS:
            raise ValueError(f"confinement must be one of {', '.join(confine.CONFINEMENTS)}; got {confinement!r}")
        if sharing not in ("isolated", "shared") or (sharing == "shared" and confinement != confine.CONFINED):
            raise ValueError(f"sharing must be 'isolated', or 'shared' confined; got {sharing!r} ({confinement})")
        self.sharing = sharing
        self.link: CollectorLink | None = None
        # tests: the student's suites; course: the course tests (their own sandbox, since it may
        # hold what a student's suite must never see: the reference, for diagnosing failures)
        self.setups = {role: setup for role, setup in (("tests", tests), ("impl", impl), ("course", course)) if setup}
        self.confinement, self.workers = confinement, max(1, workers)
        self.hidden = Path(hidden)   # the repository: never visible in a sandbox
        self.scratch = None          # outside the namespace mode: a private host folder for the sandboxes' files
        self.sandboxes: dict[str, Sandbox] = {}
        self.wanted_limits = limits or confine.Limits()
        self.limits = self.wanted_limits
        self.users: confine.UidBlock | None = None
        self.memory: MemoryBound | None = None
        self.runtime = confine.RUNTIME if confinement == confine.CONFINED else str(OL_PACKAGE.parent)
        self.collect_seconds = 0.0   # the shared check: how long collecting the suite took
        self.beside: list[Run] = []              # runs to start with the next call of run(), reported apart
        self.beside_outcomes: dict[int, RunOutcome] = {}


    def memory_fd(self, index: int, *, renamed: bool = True) -> int:
        return self.memory.join_fd(index, renamed=renamed) if self.memory is not None else -1

    def memory_bound(self) -> str:
        """Which memory bound is in force (ol.grading.sandbox.memory)."""
        return self.memory.describe() if self.memory is not None else ""

    def __enter__(self) -> Scheduler:
        try:
            self.users = confine.UidBlock()
            self.memory = MemoryBound.make(slot_count(self.workers), self.wanted_limits.memory,
                                           per_user=os.geteuid() == 0 and self.confinement != confine.UNCONFINED)
            self.limits = self.memory.limits(self.wanted_limits)
            if self.confinement != confine.CONFINED:
                self.scratch = make_scratch(self.confinement)
                if self.confinement == confine.BY_UID:
                    self.runtime = runtime_copy(self.scratch)
            for role, setup in self.setups.items():
                self.sandboxes[role] = Sandbox(setup, self.confinement, self.hidden, self.limits, self.runtime)
            for role, sandbox in self.sandboxes.items():
                sandbox.send_setup(self._scratch_for(role))
            for sandbox in self.sandboxes.values():
                self._await_ready(sandbox)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None
        for sandbox in self.sandboxes.values():
            sandbox.close()
        self.sandboxes.clear()
        if self.users is not None:
            self.users.sweep()       # before the scratch folder: no run of ours still writes there
        if self.scratch is not None:
            problem = remove_tree(self.scratch)
            if problem:
                print(f"ol: the check's scratch folder was left behind: {problem}", file=sys.stderr)
            self.scratch = None
        if self.memory is not None:
            self.memory.close()
        if self.users is not None:
            self.users.close()

    def _scratch_for(self, role: str) -> str:
        return os.path.join(self.scratch, role) if self.scratch else ""

    def _await_ready(self, sandbox: Sandbox) -> None:
        ready, _, _ = select.select([sandbox.control], [], [], READY_TIMEOUT)
        if not ready:
            raise SandboxFault(sandbox.died(f"it was not ready after {READY_TIMEOUT:.0f} s"))
        message = sandbox.receive()
        if message.get("event") != "ready":
            raise SandboxFault(sandbox.died(message.get("detail", "its setup failed")))
        sandbox.ready = True

    # ---- running -----------------------------------------------------------------------

    def start_beside(self, run: Run) -> None:
        """Run `run` beside the runs of the next call of run(), in the same
        slots: neither waits for the other.  Its outcome is not among that
        call's, nor seen by its callbacks: outcome_beside(run.id) gives it."""
        self.beside.append(run)

    def outcome_beside(self, run_id: int) -> RunOutcome:
        """The outcome of a run started with start_beside, once it has ended."""
        if run_id not in self.beside_outcomes:
            self.run([])
        return self.beside_outcomes.pop(run_id)

    def run(self, runs: list[Run], on_done: Callable[[Run, RunOutcome], None] | None = None,
            on_notes: Callable[[Run, list[dict]], str | None] | None = None) -> dict[int, RunOutcome]:
        """Every run's outcome, by id.  on_notes(run, notes so far) is asked
        whenever a tests run has written more; a reason (a non-empty string)
        stops that run, and is its outcome's `stopped`.  Raises SandboxFault
        if a sandbox fails.  Runs queued by start_beside start first and are
        waited for too."""
        beside = {run.id for run in self.beside}
        pending = [*self.beside, *runs]
        self.beside = []
        mine = on_notes
        if beside and on_notes is not None:
            on_notes = lambda run, notes: None if run.id in beside else mine(run, notes)  # noqa: E731
        active: dict[int, _Active] = {}
        free_slots = list(range(self.workers))
        outcomes: dict[int, RunOutcome] = {}
        impl = self.sandboxes["impl"]
        try:
            while pending or active:
                while pending and free_slots:
                    run = pending.pop(0)
                    item = self._start(run, free_slots.pop(0), impl)
                    active[run.id] = item
                now = time.monotonic()
                wait = min([a.wake_at() for a in active.values()] or [now]) - now
                watched = [stream for sandbox in self.sandboxes.values()
                           for stream in (sandbox.control, sandbox.process.stderr)]
                if self.link is not None:
                    watched += self.link.watched()
                for item in active.values():
                    watched += item.watched()
                ready = set(select.select(watched, [], [], max(0.0, wait))[0])
                for sandbox in self.sandboxes.values():
                    if sandbox.process.stderr in ready:
                        sandbox.drain_stderr()
                    if sandbox.control in ready:
                        sandbox.receive()   # a warm process says nothing after its setup: this is its end
                if self.link is not None:
                    self.link.read([r for r in ready if r in self.link.watched()])
                for item in active.values():
                    item.read(ready, on_notes)
                now = time.monotonic()
                for run_id, item in list(active.items()):
                    if item.finished():
                        del active[run_id]
                        free_slots.append(item.slot)
                        item.close()
                        if item.outcome.fault:
                            raise SandboxFault(f"a run could not be confined: {item.outcome.fault}")
                        if run_id in beside:
                            self.beside_outcomes[run_id] = item.outcome
                            continue
                        outcomes[run_id] = item.outcome
                        if on_done is not None:
                            on_done(item.run, item.outcome)
                    elif item.overdue(now):
                        item.expire()
                    elif item.lost(now):
                        tests = item.tests_side if isinstance(item.tests_side, Sandbox) else self.sandboxes["tests"]
                        raise SandboxFault(tests.died(f"run {run_id} was stopped but never ended")
                                           if item.tests_end.end is None else
                                           impl.died(f"run {run_id}'s implementation never ended"))
        finally:
            for item in active.values():
                item.stop_all()
                item.close()
        return outcomes

    def _start(self, run: Run, slot: int, impl: Sandbox) -> _Active:
        request = dataclasses.replace(run.tests, cpu_seconds=run.cpu_seconds)
        tests = self.sandboxes["course" if request.suite == "course" and "course" in self.sandboxes else "tests"]
        ours, theirs = socket.socketpair()
        side = tests
        impl_end = tests_end = None
        try:
            impl_end = impl.start_run(dataclasses.replace(run.impl, cpu_seconds=run.cpu_seconds), ours,
                                      self.users.draw(), self.memory_fd(impl_slot(slot), renamed=not run.impl.trusted))
            if self.sharing == "shared" and request.task == "grade":
                side = self._collector(tests, run)
                if side.problem == ISOLATE:
                    # the suite calls the code under test while it is imported: that needs a
                    # variant at collection, so from now on it is collected in every run
                    self.sharing, side = "isolated", tests
                elif side.problem is not None:   # the suite does not collect: every run says so
                    item = _Active(run, slot, side, Unrun(side.problem), impl_end)
                    item.impl_stop_sent = True
                    impl_end.stop()
                    return item
            # a run of the collector's sees its group as the root of a cgroup namespace of its own
            tests_end = side.start_run(request, theirs, self.users.draw(),
                                       self.memory_fd(tests_slot(slot), renamed=side is tests))
        except BaseException:
            for end in (impl_end, tests_end):
                if end is not None:
                    end.stop()
                    end.close()
            raise
        finally:
            ours.close()
            theirs.close()
        return _Active(run, slot, side, tests_end, impl_end)

    def _collector(self, tests: Sandbox, run: Run) -> CollectorLink:
        """The local check's collected suite, started on first use."""
        if self.link is None:
            index = collector_slot(self.workers)
            started = time.monotonic()
            self.link = CollectorLink(tests, self.users.draw(), self.memory_fd(index), run.time_limit * WALL_FACTOR,
                                      run.cpu_seconds)
            self.collect_seconds = time.monotonic() - started
        return self.link


class Unrun:
    """The tests' side of a run that never started: the suite did not
    collect, and every run says so."""

    def __init__(self, problem: NotCollected):
        self.end = RunEnd(exit=problem.exit)
        self.stream = NotesStream()
        self.stream.lines.append(problem.note())

    def watched(self) -> list:
        return []

    def take(self, ready) -> list[dict]:
        return []

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Active:
    """One run in flight: both sides' ends (notes and how each ended), the deadline."""

    def __init__(self, run: Run, slot: int, tests_side, tests_end, impl_end):
        self.run, self.slot, self.tests_side = run, slot, tests_side
        self.tests_end, self.impl_end = tests_end, impl_end
        self.started = time.monotonic()
        self.deadline = self.started + run.deadline
        self.outcome = RunOutcome(run.id)
        self.impl_stop_sent = self.tests_stop_sent = False
        self.killed_at: float | None = None
        self.seconds: float | None = None

    def watched(self) -> list:
        return self.tests_end.watched() + self.impl_end.watched()

    def read(self, ready: set, on_notes) -> None:
        """What either side said; stop the tests' side once on_notes has heard enough."""
        said = self.tests_end.take(ready)
        self.impl_end.take(ready)
        if said and not self.tests_stop_sent and self.tests_end.end is None:
            why = on_notes(self.run, self.tests_end.stream.lines) if on_notes is not None else None
            if why:
                self.tests_stop_sent, self.outcome.stopped = True, why
                self.tests_end.stop()
        if self.tests_end.end is not None and self.seconds is None:
            self.seconds = time.monotonic() - self.started
        if self.tests_end.end is not None and self.impl_end.end is None and not self.impl_stop_sent:
            self.impl_stop_sent = True   # nothing will call it any more
            self.impl_end.stop()

    def finished(self) -> bool:
        if self.tests_end.end is None or self.impl_end.end is None:
            return False
        tests, impl = self.tests_end.end, self.impl_end.end
        faults = [*tests.faults, *impl.faults]
        outcome = self.outcome
        if faults:
            outcome.fault = "; ".join(faults)[-4000:]
        elif tests.exit is None and not outcome.timed_out:
            outcome.fault = "the tests' side of the run ended without saying how"
        elif impl.exit is None:
            outcome.fault = "the implementation's side of the run ended without saying how"
        if not outcome.timed_out:
            outcome.exit = tests.exit
            outcome.seconds = self.seconds if self.seconds is not None else time.monotonic() - self.started
        outcome.notes = list(self.tests_end.stream.lines)
        outcome.tests_stopped = tests.stopped and self.tests_stop_sent
        outcome.cpu_seconds = tests.cpu if tests.exit is not None else None
        outcome.impl_exit, outcome.impl_stopped = impl.exit, impl.stopped and self.impl_stop_sent
        outcome.impl_notes = list(self.impl_end.stream.lines)
        outcome.impl_cpu_seconds = impl.cpu if impl.exit is not None else None
        return True

    def wake_at(self) -> float:
        return self.killed_at + KILL_GRACE if self.killed_at is not None else self.deadline

    def overdue(self, now: float) -> bool:
        return self.killed_at is None and self.tests_end.end is None and now > self.deadline

    def lost(self, now: float) -> bool:
        return self.killed_at is not None and now > self.killed_at + KILL_GRACE

    def expire(self) -> None:
        """The deadline passed: the run timed out, whatever it reports later."""
        self.outcome.timed_out = True
        self.outcome.exit = None
        self.outcome.seconds = time.monotonic() - self.started
        self.killed_at = time.monotonic()
        self.stop_all()

    def stop_all(self) -> None:
        self.impl_stop_sent = self.tests_stop_sent = True
        self.tests_end.stop()
        self.impl_end.stop()

    def close(self) -> None:
        self.tests_end.close()
        self.impl_end.close()
