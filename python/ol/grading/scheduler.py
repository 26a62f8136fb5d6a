"""The observer's scheduler: runs tests against implementations, each pair
in its own confined processes (ol.grading.sandbox), `workers` at a time, and
records how each run ended.

For one run the observer makes a socket pair, hands one end to a fresh
implementation run (it knows the variant) and the other to a fresh tests run
(it knows nothing but the suite), and waits.  The outcome is what it observes:
the tests run's exit status as its warm parent saw it, or the deadline that
this process measured passing first.  Nothing a run writes can name the job
it belongs to: the mapping from run to job lives here only.

Time: a run's time_limit is processor time, per process, enforced by the
kernel (RLIMIT_CPU), so a verdict does not depend on how loaded the machine
is; this process's own clock stops a run only at WALL_FACTOR times that (a
run that sleeps or blocks uses no processor).

What runs write is read by ol.grading.protocol alone: notes and
collector frames, bounded, never raising.  In the shared check the tests' runs
are forked by the collected suite, reached through ol.grading.collector_link.
"""

from __future__ import annotations

import dataclasses
import math
import os
import select
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ol.grading import confine
from ol.grading.collector_link import CollectorLink
from ol.grading.memory import MemoryBound
from ol.grading.protocol import RunRequest
from ol.grading.sandbox import OL_PACKAGE, READY_TIMEOUT, Sandbox, SandboxFault, Setup, make_scratch, runtime_copy

KILL_GRACE = 20.0        # seconds a killed run may take to be reported
WALL_FACTOR = 3.0        # a run is stopped by the clock at this many times its processor time limit


@dataclass
class Run:
    """One run: an anonymous request for the tests' side, the variant for the
    implementation's side, and the processor time each of its processes may
    take (seconds; the clock stops it at WALL_FACTOR times that)."""

    id: int
    tests: RunRequest | Callable[[], RunRequest]   # a callable is asked at start time (the order can change)
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
class Outcome:
    id: int
    exit: int | None = None          # the tests run's exit status; None if it ran out of time
    seconds: float = 0.0
    timed_out: bool = False
    notes: list[dict] = field(default_factory=list)   # what the tests run said: information only
    impl_exit: int | None = None
    impl_notes: list[dict] = field(default_factory=list)
    impl_stopped: bool = False       # the implementation run was ended on the observer's request
    fault: str | None = None         # the sandbox failed to confine or run it
    cpu_seconds: float | None = None         # processor time of the tests run, all its processes (None: unknown)
    impl_cpu_seconds: float | None = None    # the same for the implementation run


# ---- slots: one run user and one memory group each ----------------------------------------
#
# A check with w workers has slot_count(w) = 2w + 1 slots, numbered from 0 within its own
# block of run users (confine.UidBlock: no two checks on a machine share one): worker k's
# tests run takes 2k, its implementation run 2k + 1, and the shared check's collector 2w.

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


    def user(self, index: int) -> int:
        return self.users.uid(index)

    def memory_fd(self, index: int) -> int:
        return self.memory.join_fd(index) if self.memory is not None else -1

    def memory_bound(self) -> str:
        """Which memory bound is in force (ol.grading.memory)."""
        return self.memory.describe() if self.memory is not None else ""

    def __enter__(self) -> Scheduler:
        try:
            self.users = confine.UidBlock(slot_count(self.workers))
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
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
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

    # ---- running -----------------------------------------------------------------------

    def run(self, runs: list[Run], on_done: Callable[[Run, Outcome], None] | None = None) -> dict[int, Outcome]:
        """Every run's outcome, by id.  Raises SandboxFault if a sandbox fails."""
        pending = list(runs)
        active: dict[int, _Active] = {}
        free_slots = list(range(self.workers))
        outcomes: dict[int, Outcome] = {}
        impl = self.sandboxes["impl"]
        while pending or active:
            while pending and free_slots:
                run = pending.pop(0)
                slot = free_slots.pop(0)
                active[run.id] = self._start(run, slot, impl)
            now = time.monotonic()
            wait = min(a.wake_at() for a in active.values()) - now
            watched = [stream for sandbox in self.sandboxes.values() for stream in (sandbox.control, sandbox.process.stderr)]
            if self.link is not None:
                watched += self.link.watched()
            ready, _, _ = select.select(watched, [], [], max(0.0, wait))
            for sandbox in self.sandboxes.values():
                if sandbox.process.stderr in ready:
                    sandbox.drain_stderr()
                if sandbox.control in ready:
                    message = sandbox.receive()
                    if self.link is not None and message.get("id") == self.link.run_id and sandbox is not impl:
                        if self.link.problem is None:   # it ended while it still had runs to serve
                            raise SandboxFault(self.link.ended(message))
                        continue
                    if message.get("event") == "done" and message.get("id") in active:
                        self._done(active[message["id"]], sandbox is not impl, message, impl)
            if self.link is not None:
                for message in self.link.read([r for r in ready if r in self.link.watched()]):
                    if message["id"] in active:
                        self._done(active[message["id"]], True, message, impl)
            now = time.monotonic()
            for run_id, item in list(active.items()):
                if item.finished():
                    del active[run_id]
                    free_slots.append(item.slot)
                    outcomes[run_id] = item.outcome
                    if item.outcome.fault:
                        raise SandboxFault(f"a run could not be confined: {item.outcome.fault}")
                    if on_done is not None:
                        on_done(item.run, item.outcome)
                elif item.overdue(now):
                    item.expire(item.tests_side, impl)
                elif item.lost(now):
                    tests = item.tests_side if isinstance(item.tests_side, Sandbox) else self.sandboxes["tests"]
                    raise SandboxFault(tests.died(f"run {run_id} was killed but never reported")
                                      if item.outcome.exit is None else impl.died(f"run {run_id}'s implementation never ended"))
        return outcomes

    @staticmethod
    def _done(item: _Active, from_tests: bool, message: dict, impl: Sandbox) -> None:
        item.done(from_tests, message)
        if from_tests and not item.impl_done and not item.impl_kill_sent:
            item.impl_kill_sent = True   # nothing will call it any more
            impl.kill_run(item.run.id)

    def _start(self, run: Run, slot: int, impl: Sandbox) -> _Active:
        request = run.tests() if callable(run.tests) else run.tests
        request = dataclasses.replace(request, cpu_seconds=run.cpu_seconds)
        tests = self.sandboxes["course" if request.suite == "course" and "course" in self.sandboxes else "tests"]
        ours, theirs = socket.socketpair()
        side = tests
        try:
            impl.start_run(run.id, dataclasses.replace(run.impl, cpu_seconds=run.cpu_seconds), ours,
                           self.user(impl_slot(slot)), self.memory_fd(impl_slot(slot)))
            if self.sharing == "shared" and request.task == "grade":
                side = self._collector(tests, run.time_limit)
                if side.problem == {"problem": "isolate"}:
                    # the suite calls the code under test while it is imported: that needs a
                    # variant at collection, so from now on it is collected in every run
                    self.sharing, side = "isolated", tests
                elif side.problem is not None:   # the suite does not collect: every run says so
                    item = _Active(run, slot, side)
                    self._done(item, True, {"exit": side.problem_exit, "notes": [side.problem]}, impl)
                    return item
            side.start_run(run.id, request, theirs, self.user(tests_slot(slot)), self.memory_fd(tests_slot(slot)))
        finally:
            ours.close()
            theirs.close()
        return _Active(run, slot, side)

    def _collector(self, tests: Sandbox, time_limit: float) -> CollectorLink:
        """The local check's collected suite, started on first use."""
        if self.link is None:
            index = collector_slot(self.workers)
            self.link = CollectorLink(tests, self.user(index), self.memory_fd(index), time_limit * WALL_FACTOR)
        return self.link


class _Active:
    """One run in flight on the warm processes: both sides' notes, the deadline."""

    def __init__(self, run: Run, slot: int, tests_side):
        self.run, self.slot, self.tests_side = run, slot, tests_side
        self.started = time.monotonic()
        self.deadline = self.started + run.deadline
        self.outcome = Outcome(run.id)
        self.tests_done = self.impl_done = self.impl_kill_sent = False
        self.killed_at: float | None = None

    def wake_at(self) -> float:
        return self.killed_at + KILL_GRACE if self.killed_at is not None else self.deadline

    def done(self, from_tests: bool, message: dict) -> None:
        if message.get("fault"):
            self.outcome.fault = message["fault"]
        if from_tests:
            self.tests_done = True
            if not self.outcome.timed_out:
                self.outcome.exit = int(message["exit"])
                self.outcome.seconds = time.monotonic() - self.started
            self.outcome.notes = list(message.get("notes", []))
            self.outcome.cpu_seconds = message.get("cpu")
        else:
            self.impl_done = True
            self.outcome.impl_exit = int(message["exit"])
            self.outcome.impl_stopped = bool(message.get("stopped"))
            self.outcome.impl_notes = list(message.get("notes", []))
            self.outcome.impl_cpu_seconds = message.get("cpu")

    def finished(self) -> bool:
        return self.tests_done and self.impl_done

    def overdue(self, now: float) -> bool:
        return self.killed_at is None and not self.tests_done and now > self.deadline

    def lost(self, now: float) -> bool:
        return self.killed_at is not None and now > self.killed_at + KILL_GRACE

    def expire(self, tests, impl: Sandbox) -> None:
        """The deadline passed: the run timed out, whatever it reports later."""
        self.outcome.timed_out = True
        self.outcome.exit = None
        self.outcome.seconds = time.monotonic() - self.started
        self.killed_at = time.monotonic()
        self.impl_kill_sent = True
        tests.kill_run(self.run.id)
        impl.kill_run(self.run.id)

