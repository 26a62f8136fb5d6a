"""The stages of a grade, and verdicts read from what the observer saw.

    course tests     trusted tests, the student's module on the other side
    correct first    the suite on the reference and every alternate, all tests
                     run: it must pass them (and this is where it is collected)
    variants         every pitfall and counted mutant, shuffled, with the
                     reference run twice more and each alternate once more at
                     random places; stop at each run's first failing test

A run is anonymous: every run of the variants stage gets the same request,
so a suite can only tell a mutant from the reference by calling it.  A suite
that fails a repeated correct implementation (a suite that counts runs, reads
the clock, or guesses) is rejected.

    verdict    killed when the suite failed, crashed, or ran out of time;
               only the exit status and the observer's clock decide it

Time limits are processor time (ol.grading.scheduler): a mutant's runs get
2 s + 10x the processor time of the slowest correct run, which the same
suite takes on any machine under any load, so the same submission gets the
same verdicts alone, side by side or beside a CPU hog.  The clock stops a
run only at 3x the whole time limit (3 minutes by default): a run that
waits rather than computes (a mutant cannot make one: it can only compute
forever, and its processor time runs out).
"""

from __future__ import annotations

import math
import random
import signal
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ol.grading.confine import describe_exit
from ol.grading.scheduler import WALL_FACTOR, Outcome, Run, Scheduler
from ol.grading.protocol import RunRequest, merged_notes
from ol.grading.session import GradingFault, GradingSession
from ol.grading.pytest_driver import EXIT_COLLECT, EXIT_EMPTY, EXIT_FAILED, EXIT_PASSED
from ol.grading.variants import Variant, describe

PASSED, FAILED, TIMEOUT, CRASHED = "passed", "failed", "timeout", "crashed"
OUT_OF_PROCESSOR_TIME = (128 + signal.SIGXCPU,)   # the kernel's RLIMIT_CPU signal
MAX_REPORTED_FAILURES = 50
REFERENCE_REPEATS = 2


@dataclass(frozen=True)
class Verdict:
    key: str
    status: str                     # passed, failed, timeout or crashed
    failed: tuple[str, ...] = ()    # node ids of failing tests (the first, or all); information only
    seconds: float = 0.0
    detail: str = ""

    @property
    def killed(self) -> bool:
        """A variant is killed when the suite fails, hangs or crashes on it."""
        return self.status in (FAILED, TIMEOUT, CRASHED)


class SuiteProblem(Exception):
    """The suite cannot be graded: it does not collect, holds no test, hangs
    while collecting, or rejects a correct implementation.  `lines` explain."""

    def __init__(self, reason: str, lines: list[str] = (), output: str = ""):
        super().__init__(reason)
        self.reason, self.lines, self.output = reason, list(lines), output


@dataclass
class CourseRun:
    """The course tests on one implementation."""

    ok: bool
    outcomes: dict[str, str] = field(default_factory=dict)   # node id -> passed/failed/error/skipped
    output: str = ""
    timed_out: bool = False

    @property
    def failed(self) -> list[str]:
        return [name.rsplit("::", 1)[-1] for name, outcome in self.outcomes.items() if outcome in ("failed", "error")]

    @property
    def passed(self) -> list[str]:
        return [name.rsplit("::", 1)[-1] for name, outcome in self.outcomes.items() if outcome == "passed"]


class Grader:
    """Runs the stages above on one scheduler; remembers which tests catch
    mutants, to try those first (one order for every run, so it says nothing
    about which variant a run gets)."""

    def __init__(self, session: GradingSession, scheduler: Scheduler, *, time_limit: float,
                 on_event: Callable[[dict], None] | None = None):
        self.session, self.scheduler, self.time_limit = session, scheduler, time_limit
        self.on_event = on_event or (lambda event: None)
        self.collected: list[str] = []
        self.kills: Counter[str] = Counter()
        self.durations: dict[str, float] = {}   # seconds each test took on the reference
        self.next_id = 0
        self.reference_seconds: float | None = None   # processor time of the slowest correct run

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    # ---- course tests ------------------------------------------------------------------

    def course_tests(self, variant: Variant, modules: dict | None = None) -> CourseRun:
        """The module's course tests (trusted) on the student's own `variant`,
        which lives on the other side; tracebacks of its exceptions come back."""
        run = Run(self._id(), RunRequest(suite="course", task="pytest"),
                  variant.request(modules=modules, tracebacks=True), self.time_limit)
        return _course_run(self.scheduler.run([run])[run.id], self.time_limit)

    def course_tests_of(self, variants: list[Variant]) -> dict[str, CourseRun]:
        """The course tests on each of the course's own variants, side by side."""
        runs = {self._id(): v for v in variants}
        outcomes = self.scheduler.run([Run(i, RunRequest(suite="course", task="pytest"), v.request(), self.time_limit)
                                    for i, v in runs.items()])
        results = {}
        for run_id, variant in runs.items():
            self._check_implementation(variant, outcomes[run_id])
            results[variant.key] = _course_run(outcomes[run_id], self.time_limit)
        return results

    # ---- the student's suite -------------------------------------------------------------

    def correct_implementations(self) -> list[Verdict]:
        """Stage 1: the suite, every test, on the reference and each alternate.
        Raises SuiteProblem if it cannot be collected or rejects one."""
        variants = [self.session.reference, *self.session.alternates]
        runs = {self._id(): v for v in variants}
        requests = [Run(i, RunRequest(suite="student", task="grade", all_tests=True, list_tests=v.key == "reference"),
                        v.request(), self.time_limit) for i, v in runs.items()]
        outcomes = self.scheduler.run(requests)
        verdicts = []
        for run_id, variant in runs.items():
            outcome = outcomes[run_id]
            self._check_implementation(variant, outcome)
            notes = merged_notes(outcome.notes)
            if outcome.exit == EXIT_COLLECT and "problem" in notes:
                raise SuiteProblem("your tests could not be run",
                                   ["your tests do not collect (an error while importing them):",
                                    *notes.get("detail", "").splitlines()])
            if outcome.exit == EXIT_EMPTY and notes.get("problem") == "empty":
                raise SuiteProblem("your tests could not be run", [
                    "pytest found no tests in your test folder: name files test_*.py and functions test_*"])
            if variant.key == "reference" and "collected" in notes:
                self.collected = list(notes["collected"])
                self.durations = _durations(outcome.notes)
            verdicts.append(self.verdict(variant.key, outcome, self.time_limit))
        self.reference_seconds = max(processor_seconds(outcomes[run_id]) for run_id in runs)
        return verdicts

    def variants(self, variants: list[Variant], *, repeats: bool = True) -> dict[str, Verdict]:
        """Stage 2: the suite on each variant, shuffled, stopping at the first
        failing test; with the correct implementations repeated among them."""
        jobs = list(variants)
        if repeats:
            jobs += [self.session.reference] * REFERENCE_REPEATS + list(self.session.alternates)
        random.SystemRandom().shuffle(jobs)
        limit = self.mutant_time_limit()
        runs = {self._id(): v for v in jobs}
        self.on_event({"event": "plan", "runs": len(runs)})
        verdicts: dict[str, Verdict] = {}
        repeated: list[Verdict] = []

        def done(run: Run, outcome: Outcome) -> None:
            variant = runs[run.id]
            self._check_implementation(variant, outcome)
            verdict = self.verdict(variant.key, outcome, limit)
            if verdict.killed and verdict.failed:
                self.kills[verdict.failed[0]] += 1
            if variant.key == "reference" or variant.key.startswith("alternate:"):
                repeated.append(verdict)
            else:
                verdicts[variant.key] = verdict
            self.on_event({"event": "verdict", "status": verdict.status})

        request = lambda: RunRequest(suite="student", task="grade", order=self.order())  # noqa: E731
        wall = WALL_FACTOR * self.time_limit   # only a run that waits rather than computes meets it
        self.scheduler.run([Run(i, request, v.request(), limit, wall) for i, v in runs.items()], on_done=done)
        rejected = [v for v in repeated if v.status != PASSED]
        if rejected:
            raise SuiteProblem("your tests fail on a correct implementation when it is run again", [
                f"your tests {v.status} on {describe(v.key)} when it came up again among the mutants"
                + (f" ({', '.join(v.failed)})" if v.failed else "") + (f": {v.detail}" if v.detail else "")
                for v in rejected
            ] + ["graded tests must judge what the code does: the same correct code must always pass, "
                 "whatever ran before it"])
        return verdicts

    def mutant_time_limit(self) -> float:
        """2 s + 10x the slowest correct run's processor time, at most the
        time limit."""
        if self.reference_seconds is None:
            return self.time_limit
        return min(self.time_limit, 2.0 + 10.0 * self.reference_seconds)

    def order(self) -> list[str]:
        """Tests that caught the most variants per second of running first,
        then the quickest: the same order for every run at a given moment
        (file order breaks ties)."""
        def key(test):
            seconds = max(self.durations.get(test, 1.0), 1e-4)
            return -self.kills[test] / seconds, seconds

        return sorted(self.collected, key=key)

    # ---- reading outcomes --------------------------------------------------------------

    @staticmethod
    def verdict(key: str, outcome: Outcome, limit: float) -> Verdict:
        notes = outcome.notes
        failed = tuple(str(line["failed"]) for line in notes if "failed" in line)[:MAX_REPORTED_FAILURES]
        running = next((str(line["running"]) for line in reversed(notes) if "running" in line), None)
        impl_out_of_time = (out_of_processor_time(outcome.impl_exit, outcome.impl_cpu_seconds, limit)
                            and outcome.exit != EXIT_PASSED)
        if outcome.timed_out or out_of_processor_time(outcome.exit, outcome.cpu_seconds, limit) or impl_out_of_time:
            where = "running" if running else "collecting your tests (look for a loop at module level)"
            spent = (f"had not ended after {outcome.seconds:.1f} s (the time limit is {limit:.1f} s of processor "
                     "time; a run that waits uses none)" if outcome.timed_out else
                     f"had used {math.ceil(limit)} s of processor time (the time limit)" if not impl_out_of_time else
                     f"waited on the code under test, which used {math.ceil(limit)} s of processor time "
                     "(the time limit)")
            return Verdict(key, TIMEOUT, (running,) if running else (), outcome.seconds,
                           f"still {where} when it {spent}")
        if outcome.exit == EXIT_PASSED:
            return Verdict(key, PASSED, (), outcome.seconds)
        if outcome.exit == EXIT_FAILED:
            return Verdict(key, FAILED, failed, outcome.seconds)
        return Verdict(key, CRASHED, failed or ((running,) if running else ()), outcome.seconds,
                       f"the test process ended ({describe_exit(outcome.exit)})" + (f" during {running}" if running else ""))

    @staticmethod
    def _check_implementation(variant: Variant, outcome: Outcome) -> None:
        """The process serving a course variant may end by itself (a variant
        that exits is behaviour: the tests see it gone), but nothing inside
        it sends SIGKILL: killed without our asking is a fault of the grader's
        machine, not a verdict.  A variant of the student's own code (their
        rope.py; in a student kit, the "reference" and every mutant made of
        it) may do anything, being killed included: that is a verdict."""
        if not variant.is_trusted:
            return
        if outcome.impl_exit == 128 + signal.SIGKILL and not outcome.impl_stopped:
            said = merged_notes(outcome.impl_notes).get("internal", "")
            raise GradingFault(
                f"the implementation process of {describe(variant.key)} ended on its own "
                f"({describe_exit(outcome.impl_exit)}) during a run: an internal fault of the grader, not a verdict"
                + (f"\n{said}" if said else "")
            )


def processor_seconds(outcome: Outcome) -> float:
    """Processor time of a run's busier side (the wall time where the
    start method cannot say)."""
    sides = [s for s in (outcome.cpu_seconds, outcome.impl_cpu_seconds) if isinstance(s, (int, float))]
    return max(sides) if sides else outcome.seconds


def out_of_processor_time(exit: int | None, cpu: float | None, limit: float) -> bool:
    """Whether the kernel ended a process at its processor-time limit
    (RLIMIT_CPU = ceil(limit) s): SIGXCPU there, or SIGKILL a second later
    after it used at least the limit.  The SIGKILL is what a run that caught
    SIGXCPU gets, and what every run gets as pid 1 of its own pid namespace:
    the kernel drops a signal its init does not handle, SIGXCPU included."""
    if exit in OUT_OF_PROCESSOR_TIME:
        return True
    return exit == 128 + signal.SIGKILL and cpu is not None and cpu >= max(1, math.ceil(limit))


def _course_run(outcome: Outcome, limit: float) -> CourseRun:
    notes = merged_notes(outcome.notes)
    out_of_time = (outcome.timed_out or out_of_processor_time(outcome.exit, outcome.cpu_seconds, limit)
                   or (outcome.exit != 0 and out_of_processor_time(outcome.impl_exit, outcome.impl_cpu_seconds, limit)))
    return CourseRun(ok=outcome.exit == 0, outcomes=notes.get("outcomes", {}),
                     output=notes.get("output", ""), timed_out=out_of_time)


def _durations(notes: list[dict]) -> dict[str, float]:
    """Seconds per test, from the times a run said it started each one."""
    marks = [(line["running"], line["at"]) for line in notes if "running" in line and "at" in line]
    ended = next((line["ended"] for line in reversed(notes) if "ended" in line), None)
    ends = [at for _, at in marks[1:]] + [ended if ended is not None else marks[-1][1] if marks else 0.0]
    return {test: max(0.0, end - start) for (test, start), end in zip(marks, ends)}
