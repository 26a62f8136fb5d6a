"""The stages of a grade, and verdicts read from what the observer saw.

    course tests     trusted tests, the student's module on the other side
    the suite        every pitfall and counted mutant, and the correct
                     implementations (the reference three times, each
                     alternate twice) among them, in one random order

Every run of the suite gets the same request: every test, in the suite's own
order, each test's outcome in its notes (README.md: no channel the grader
opens itself).  Nothing a run can observe (its request, its limits, its
order, its stage) depends on what any other run did: the correct
implementations are not a first stage whose length or outcome later runs
could measure, and a run learns the observer's decisions only by its death.

    graded tests     the tests that passed on every run of a correct
                     implementation; every other test (failed, errored, hung,
                     or never reached there) is left out and named, with why
    verdict          caught when a graded test failed on it, or when the run
                     crashed or ran out of time outside a left-out test; only
                     the run's exit, its own notes and the observer's clock
                     decide it
    stops            the observer stops a mutant's run at its first graded
                     failure (a pitfall's and a correct run go to the end:
                     the report's "by" and the graded tests come from them;
                     a re-check stops a pitfall's once the run has gone past
                     every test whose outcome on it the last check did not
                     see with the same code: PitfallSeen).
                     While the correct runs are still coming, a failure of a
                     test not yet known to fail on them counts; a mutant
                     stopped by a test that then turns out left out runs
                     again, with a correct run among the runs again

Claims in the notes are the suite's own: a run that says a test failed is a
run whose test failed, which the suite decides anyway.  What no run can do
is learn another run's notes or outcome.

Time limits are processor time (ol.grading.scheduler), the same for every
run of the check.  The clock stops a run only at 3x the time limit (3
minutes by default): a run that waits rather than computes.
"""

from __future__ import annotations

import dataclasses
import math
import random
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from ol.grading.events import Judged, OnEvent, Planned
from ol.grading.protocol import RunRequest, merged_notes, per_test_seconds
from ol.grading.pytest_driver import EXIT_COLLECT, EXIT_EMPTY, EXIT_FAILED, EXIT_PASSED
from ol.grading.sandbox.confine import describe_exit
from ol.grading.scheduler import WALL_FACTOR, RunOutcome, Run, Scheduler
from ol.grading.session import GradingFault, GradingSession
from ol.grading.variants import Variant, describe, is_pitfall

PASSED, FAILED, TIMEOUT, CRASHED = "passed", "failed", "timeout", "crashed"
UNKNOWN = "unknown"      # stopped at a test that turned out not graded: to run again
NOT_RUN = "not run"      # a test a correct run never reached
REFUSED = "refused"      # a file the static check left out: never run (ol.grading.check.refused_files)
NOT_IMPORTED = "it does not import"   # a student kit's variant whose run never imported it: no catch
STOP_FAILED, STOP_DONE = "a graded test failed", "no graded test is left"   # why the observer stops a run
STOP_SEEN = "every test left was seen on this pitfall by the last check"      # ... a pitfall's, in a re-check
SEEN_MARGIN = 0.5   # a pitfall's run is cut only while it and the last full one fit in this share of each limit
OUT_OF_PROCESSOR_TIME = (128 + signal.SIGXCPU,)   # the kernel's RLIMIT_CPU signal
MAX_REPORTED_FAILURES = 50
CORRECT_RUNS = {"reference": 3, "alternate": 2}   # runs of each correct implementation among the variants


@dataclass(frozen=True)
class Verdict:
    key: str
    status: str                     # passed, failed, timeout or crashed
    failed: tuple[str, ...] = ()    # node ids of failing tests (the first, or all); information only
    seconds: float = 0.0
    detail: str = ""

    @property
    def caught(self) -> bool:
        """A variant is caught when the suite fails, hangs or crashes on it."""
        return self.status in (FAILED, TIMEOUT, CRASHED)


@dataclass(frozen=True)
class PitfallSeen:
    """What the last check saw of the suite on one pitfall, for a re-check
    (ol.grading.verdict_cache keeps it; only tests whose code is unchanged).

    A re-check stops the pitfall's run once the run has begun a test after
    every test whose outcome does not hold (holding()), and takes the others'
    from here: the report's "by" is then the one a run to the end gives, for
    tests that do not depend on one another's side effects nor on what else is
    collected (request.session.items).  An outcome holds while the test runs
    before the same test as then: pytest tears a module's or a session's
    fixtures down, and runs teardown_module, in the teardown of the test before
    the first that does not need them, and charges a failure there to that
    test.  Processor time and wall time add up across a run's tests, so the
    cut holds only while this run and a whole run of the last check (`cpu`,
    `seconds`: at most) fit in SEEN_MARGIN of the limits; past it the pitfall
    runs again to its end."""

    outcomes: dict[str, bool]       # test -> whether it failed on the pitfall (False: it passed)
    after: dict[str, str | None]    # test -> the test that ran after it then (None: it was the last)
    cpu: float                      # processor seconds of a run to the end, the larger side's (at most)
    seconds: float                  # wall seconds of it (at most)

    def holding(self, order: list[str]) -> dict[str, bool]:
        """The outcomes that hold in a run whose tests run in `order`."""
        now = _successors(order)
        return {test: failed for test, failed in self.outcomes.items()
                if test in now and test in self.after and self.after[test] == now[test]}


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


@dataclass(frozen=True)
class LeftOut:
    """A test that is not graded, because of what it did on a correct implementation."""

    test: str
    status: str                    # failed, timeout, crashed or "not run" (an earlier test ended the run)
    implementations: tuple[str, ...]
    detail: str = ""


class Grader:
    """Runs the stages above on one scheduler."""

    def __init__(self, session: GradingSession, scheduler: Scheduler, *, time_limit: float,
                 on_event: OnEvent | None = None):
        self.session, self.scheduler, self.time_limit = session, scheduler, time_limit
        self.on_event = on_event or (lambda event: None)
        self.collected: list[str] = []            # the suite's test ids, in running order
        self.filed: list[str] = []                # the same, in the suite's file order (for reports)
        self.left_out: dict[str, LeftOut] = {}    # test -> why it is not graded
        self.by: dict[str, tuple[str, ...]] = {}  # a pitfall's key -> the graded tests that failed on it
        self.seen: dict[str, PitfallSeen] = {}     # a pitfall's key -> what this check saw on it (the next re-check's)
        self.correct_verdicts: list[Verdict] = []
        self.next_id = 0
        self.runs = self.correct_runs = self.runs_again = 0   # of the suite: all, on correct implementations, again
        self.runs_cut = 0                         # pitfalls' runs stopped at STOP_SEEN and completed from the last check

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    # ---- course tests ------------------------------------------------------------------

    def course_tests(self, variant: Variant, modules: dict | None = None) -> CourseRun:
        """The module's course tests (trusted) on the student's own `variant`,
        which lives on the other side; tracebacks of its exceptions come back."""
        run = self._course_run(variant, modules)
        return _course_run(self.scheduler.run([run])[run.id], self.time_limit)

    def course_tests_beside(self, variant: Variant, modules: dict | None = None) -> Callable[[], CourseRun]:
        """course_tests, started beside the runs this grader starts next (its
        slots are not idle while one run of the course tests goes on); the
        function returned waits for their result."""
        run = self._course_run(variant, modules)
        self.scheduler.start_beside(run)
        return lambda: _course_run(self.scheduler.outcome_beside(run.id), self.time_limit)

    def _course_run(self, variant: Variant, modules: dict | None) -> Run:
        return Run(self._id(), RunRequest(suite="course", task="pytest"),
                   variant.request(modules=modules, tracebacks=True), self.time_limit)

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

    def suite(self, variants: list[Variant], *, correct: bool = True,
              carried: dict[str, Verdict] | None = None,
              seen: dict[str, PitfallSeen] | None = None) -> dict[str, Verdict]:
        """The suite on every variant, with the correct implementations among
        them (correct=False: only the variants, graded by the tests left out
        before).  carried: catches kept from the last check, by variant key;
        such a variant is not run while the test that caught it is graded.
        seen: what the last check saw on each pitfall, by key; its run is cut
        and completed from it (PitfallSeen).
        Raises SuiteProblem if the suite cannot be graded: it does not
        collect, or no test passes on every correct run."""
        carried = dict(carried or {})
        seen = {key: what for key, what in (seen or {}).items() if self._within_margins(what.cpu, what.seconds)}
        pending = [v for v in variants if v.key not in carried]
        verdicts: dict[str, Verdict] = {}
        # left-out tests only grow, each round runs fewer, and a pitfall cut past the margins
        # runs again once, uncut: this ends
        for _ in range(len(variants) + 2):
            jobs = [(v, False) for v in pending]
            if correct:
                first = not self.correct_verdicts
                jobs += ([(self.session.reference, True)] * (CORRECT_RUNS["reference"] if first else 1)
                         + [(a, True) for a in self.session.alternates for _ in range(CORRECT_RUNS["alternate"] if first else 0)])
            random.SystemRandom().shuffle(jobs)
            self.on_event(Planned(len(jobs)))
            self.runs_again += len(pending) if self.runs else 0
            self.runs += len(jobs)
            self.correct_runs += sum(is_correct for _, is_correct in jobs)
            outcomes = self._run_stream(jobs, seen)
            if correct:
                self._grade_tests([(v, o) for (v, is_correct), o in zip(jobs, outcomes) if is_correct])
            again = []
            for (variant, is_correct), outcome in zip(jobs, outcomes):
                if is_correct:
                    continue
                verdict = self._judged(variant, outcome)
                if is_pitfall(variant.key):
                    verdict = self._pitfall(variant, verdict, outcome, seen.get(variant.key))
                    if verdict is None:   # cut where the cut does not hold: to its end, next round
                        del seen[variant.key]
                        again.append(variant)
                        continue
                verdicts[variant.key] = verdict
            for key, kept in list(carried.items()):   # a kill whose test still runs and is graded
                if kept.failed and kept.failed[0] not in self.left_out and kept.failed[0] in self.collected:
                    verdicts[key] = kept
                    del carried[key]
            by_key = {v.key: v for v in variants}
            pending = [by_key[key] for key in carried] + again + \
                      [v for v in variants if v.key in verdicts and verdicts[v.key].status == UNKNOWN]
            carried.clear()
            if not pending:
                break
        place = {test: index for index, test in enumerate(self.filed or self.collected)}
        for key, verdict in verdicts.items():
            if is_pitfall(key) and verdict.caught:
                self.by[key] = tuple(sorted(verdict.failed, key=lambda test: place.get(test, len(place))))
        return verdicts

    def _judged(self, variant: Variant, outcome: RunOutcome) -> Verdict:
        """The verdict on a variant; in a student kit (session.variants_must_import), a variant of the
        student's own code caught without ever importing is no catch: code that raises or exits when
        changed, or when imported under another name, would otherwise catch every mutant by itself."""
        verdict = self.verdict(variant.key, outcome, self.time_limit, self.left_out)
        imported = any("imported" in line for line in outcome.impl_notes)
        if verdict.caught and self.session.variants_must_import and not variant.is_trusted and not imported:
            return Verdict(variant.key, PASSED, (), outcome.seconds, NOT_IMPORTED)
        return verdict

    def _pitfall(self, variant: Variant, verdict: Verdict, outcome: RunOutcome,
                 seen: PitfallSeen | None) -> Verdict | None:
        """A pitfall's verdict, its run completed from `seen` where the observer
        cut it (STOP_SEEN); what this check saw on it goes to self.seen.  None:
        the cut does not hold (past SEEN_MARGIN of a limit, or a student kit's
        variant not imported before the cut): the pitfall runs again, uncut."""
        finished = _finished(outcome.notes)
        order = _collected(outcome.notes) or list(self.collected)
        after = _successors(order)
        cpu = max(outcome.cpu_seconds or 0.0, outcome.impl_cpu_seconds or 0.0)
        cut = outcome.stopped == STOP_SEEN and outcome.tests_stopped and outcome.exit == 128 + signal.SIGKILL
        if not cut or seen is None:   # (the observer cuts only a pitfall in `seen`)
            if outcome.stopped == STOP_SEEN:   # it ended by itself before the stop landed: its own end counts
                verdict = self._judged(variant, dataclasses.replace(outcome, stopped=""))
            if verdict.status in (PASSED, FAILED) and outcome.stopped in ("", STOP_SEEN):   # ran to its own end
                self.seen[variant.key] = PitfallSeen(finished, {t: after.get(t) for t in finished}, cpu, outcome.seconds)
            return verdict
        # past a limit's margin, a timeout (a test over its share goes on to the tests after it) or a
        # student kit's variant not imported yet, what a run to the end gives is not known: run it so
        unimported = (self.session.variants_must_import and not variant.is_trusted
                      and not any("imported" in line for line in outcome.impl_notes))
        if (not self._within_margins(cpu + seen.cpu, outcome.seconds + seen.seconds)
                or verdict.status not in (PASSED, FAILED) or unimported):
            return None
        self.runs_cut += 1
        outcomes = {**seen.holding(order), **finished}
        self.seen[variant.key] = PitfallSeen(outcomes, {t: after.get(t) for t in outcomes},
                                             cpu + seen.cpu, outcome.seconds + seen.seconds)
        failed = tuple(test for test in order if outcomes.get(test) and test not in self.left_out)
        if not failed:
            return verdict
        return Verdict(variant.key, FAILED, failed[:MAX_REPORTED_FAILURES], outcome.seconds,
                       verdict.detail if verdict.status == FAILED else "")

    def _within_margins(self, cpu: float, seconds: float) -> bool:
        """Whether a run's processor and wall time fit in SEEN_MARGIN of their
        limits: a pitfall's run cut there could not have met either."""
        return cpu <= SEEN_MARGIN * self.time_limit and seconds <= SEEN_MARGIN * WALL_FACTOR * self.time_limit

    def _run_stream(self, jobs: list[tuple[Variant, bool]],
                    seen: dict[str, PitfallSeen] | None = None) -> list[RunOutcome]:
        """One run per job.  A mutant's run is stopped at its first failure of
        a test not known to fail on a correct run (STOP_FAILED); any run
        other than a correct one once it starts a test from which on every
        test is left out (STOP_DONE: what follows cannot count); a pitfall's
        once it has begun a test after every test not in seen[its key]
        (STOP_SEEN)."""
        seen = seen or {}
        runs = {self._id(): job for job in jobs}
        failing_on_correct: set[str] = set(self.left_out)
        known = {"collected": list(self.collected), "left out": set(self.left_out)}   # from the correct runs so far
        cutoff = [_cutoff(known["collected"], known["left out"])]

        def on_notes(run: Run, notes: list[dict]) -> str | None:
            variant, is_correct = runs[run.id]
            failed = [str(line["failed"]) for line in notes if "failed" in line]
            if is_correct:
                failing_on_correct.update(failed)
                return None
            if not is_pitfall(variant.key) and any(t not in failing_on_correct for t in failed):
                return STOP_FAILED
            running = _unfinished(notes)
            if running is not None and running in known["collected"][cutoff[0]:]:
                return STOP_DONE
            if variant.key in seen and _past_the_unseen(notes, seen[variant.key]):
                return STOP_SEEN
            return None

        def done(run: Run, outcome: RunOutcome) -> None:
            variant, is_correct = runs[run.id]
            self._check_implementation(variant, outcome)
            if is_correct:
                listed = next((line["collected"] for line in outcome.notes if "collected" in line), [])
                known["collected"] = known["collected"] or list(listed)
                passed = {str(line["passed"]) for line in outcome.notes if "passed" in line}
                known["left out"] |= {t for t in known["collected"] if t not in passed} | set(failing_on_correct)
                cutoff[0] = _cutoff(known["collected"], known["left out"])
            status = "correct" if is_correct else \
                self.verdict(variant.key, outcome, self.time_limit, failing_on_correct).status
            self.on_event(Judged(status, caught=status in (FAILED, TIMEOUT, CRASHED)))

        request = RunRequest(suite="student", task="grade")
        wall = WALL_FACTOR * self.time_limit   # only a run that waits rather than computes meets it
        outcomes = self.scheduler.run([Run(i, request, v.request(), self.time_limit, wall) for i, (v, _) in runs.items()],
                                      on_done=done, on_notes=on_notes)
        return [outcomes[i] for i in runs]

    def _grade_tests(self, correct: list[tuple[Variant, RunOutcome]]) -> None:
        """Which tests are graded: those that passed on every correct run.
        Raises SuiteProblem when the suite does not collect or holds no test."""
        for variant, outcome in correct:
            notes = merged_notes(outcome.notes)
            if outcome.exit == EXIT_COLLECT and "problem" in notes:
                raise SuiteProblem("your tests could not be run",
                                   ["your tests do not collect (an error while importing them):",
                                    *notes.get("detail", "").splitlines()])
            if outcome.exit == EXIT_EMPTY and notes.get("problem") == "empty":
                raise SuiteProblem("your tests could not be run", [
                    "pytest found no tests in your test folder: name files test_*.py and functions test_*"])
        if not self.collected:
            for variant, outcome in correct:
                listed = next((line for line in outcome.notes if "collected" in line), None)
                if listed is not None and (variant.key == "reference" or not self.collected):
                    self.collected, self.filed = list(listed["collected"]), list(listed.get("filed", []))
        for variant, outcome in correct:
            verdict = self.verdict(variant.key, outcome, self.time_limit)
            self.correct_verdicts.append(verdict)
            passed = {str(line["passed"]) for line in outcome.notes if "passed" in line}
            failed = [str(line["failed"]) for line in outcome.notes if "failed" in line]
            overtime = {str(line["overtime"]) for line in outcome.notes if "overtime" in line}
            running = _unfinished(outcome.notes)
            share = per_test_seconds(math.ceil(self.time_limit))
            for test in self.collected:
                if test in passed and test not in failed:
                    continue
                status = (TIMEOUT if test in overtime else FAILED if test in failed else
                          verdict.status if test == running else NOT_RUN)
                detail = (f"it used its share of a run's processor time, in its own code or in the calls it made "
                          f"(the time limit is {math.ceil(self.time_limit)} s; one test may use {share:g} s on each side)"
                          if test in overtime else
                          verdict.detail if test == running else
                          "an earlier test ended the run before it" if status == NOT_RUN else "")
                known = self.left_out.get(test)
                implementations = tuple(dict.fromkeys((*(known.implementations if known else ()), variant.key)))
                self.left_out[test] = LeftOut(test, known.status if known else status, implementations,
                                              known.detail if known else detail)
        if self.collected and len(self.left_out) >= len(self.collected):
            raise SuiteProblem("your tests fail on a correct implementation", [
                "no test of yours passes on every correct implementation, so none can be graded:",
                *(f"  {t.test} {t.status} on {', '.join(describe(k) for k in t.implementations)}"
                  + (f": {t.detail}" if t.detail else "") for t in self.left_out.values())])

    # ---- reading outcomes --------------------------------------------------------------

    @staticmethod
    def verdict(key: str, outcome: RunOutcome, limit: float, left_out=frozenset()) -> Verdict:
        """What the run says of the variant, counting only graded tests:
        left_out holds the tests that are not graded."""
        notes = outcome.notes
        failed = [str(line["failed"]) for line in notes if "failed" in line]
        graded = tuple(t for t in failed if t not in left_out)[:MAX_REPORTED_FAILURES]
        running = _unfinished(notes)
        impl_out_of_time = (out_of_processor_time(outcome.impl_exit, outcome.impl_cpu_seconds, limit)
                            and outcome.exit != EXIT_PASSED)
        if outcome.timed_out or out_of_processor_time(outcome.exit, outcome.cpu_seconds, limit) or impl_out_of_time:
            if running is not None and running in left_out and not graded:
                return Verdict(key, PASSED, (), outcome.seconds, f"it ran out of time in {running}, which is not graded")
            where = "running" if running else "collecting your tests (look for a loop at module level)"
            spent = (f"had not ended after {outcome.seconds:.1f} s (the time limit is {limit:.1f} s of processor "
                     "time; a run that waits uses none)" if outcome.timed_out else
                     f"had used {math.ceil(limit)} s of processor time (the time limit)" if not impl_out_of_time else
                     f"waited on the code under test, which used {math.ceil(limit)} s of processor time "
                     "(the time limit)")
            return Verdict(key, TIMEOUT, (running,) if running else graded, outcome.seconds,
                           f"still {where} when it {spent}")
        overtime = {str(line["overtime"]) for line in notes if "overtime" in line}
        if graded and graded[0] in overtime:   # stopped at its share, on either side: it hangs there
            return Verdict(key, TIMEOUT, graded, outcome.seconds,
                           f"{graded[0]} used its share of the run's processor time "
                           f"(one test may use {per_test_seconds(math.ceil(limit)):g} s on each side)")
        if outcome.stopped:   # we ended it: a graded test had failed, or none was left to run
            if graded:
                return Verdict(key, FAILED, graded, outcome.seconds)
            return Verdict(key, UNKNOWN if outcome.stopped == STOP_FAILED else PASSED, (), outcome.seconds)
        if graded:
            return Verdict(key, FAILED, graded, outcome.seconds)
        if running is not None and running in left_out:   # it ended in a test that is not graded
            return Verdict(key, PASSED, (), outcome.seconds, f"it ended during {running}, which is not graded")
        if outcome.exit in (EXIT_PASSED, EXIT_FAILED):   # EXIT_FAILED: only tests that are not graded failed
            return Verdict(key, PASSED, (), outcome.seconds)
        return Verdict(key, CRASHED, (running,) if running else (), outcome.seconds,
                       f"the test process ended ({describe_exit(outcome.exit)})" + (f" during {running}" if running else ""))

    @staticmethod
    def _check_implementation(variant: Variant, outcome: RunOutcome) -> None:
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


def processor_seconds(outcome: RunOutcome) -> float:
    """Processor time of a run's busier side (the wall time where the
    start method cannot say)."""
    sides = [s for s in (outcome.cpu_seconds, outcome.impl_cpu_seconds) if isinstance(s, (int, float))]
    return max(sides) if sides else outcome.seconds


def out_of_processor_time(exit: int | None, cpu: float | None, limit: float) -> bool:
    """Whether the kernel ended a process at its processor-time limit
    (RLIMIT_CPU = ceil(limit) s): SIGXCPU there, or SIGKILL a second later
    after it used at least the limit.  The SIGKILL is what a run that caught
    SIGXCPU gets, and a confined run busy in C code: it is pid 1 of its own
    pid namespace, whose SIGXCPU the kernel drops unless it is handled, and
    its handler (confine.out_of_processor_time) runs between bytecodes."""
    if exit in OUT_OF_PROCESSOR_TIME:
        return True
    return exit == 128 + signal.SIGKILL and cpu is not None and cpu >= max(1, math.ceil(limit))


def _course_run(outcome: RunOutcome, limit: float) -> CourseRun:
    notes = merged_notes(outcome.notes)
    out_of_time = (outcome.timed_out or out_of_processor_time(outcome.exit, outcome.cpu_seconds, limit)
                   or (outcome.exit != 0 and out_of_processor_time(outcome.impl_exit, outcome.impl_cpu_seconds, limit)))
    return CourseRun(ok=outcome.exit == 0, outcomes=notes.get("outcomes", {}),
                     output=notes.get("output", ""), timed_out=out_of_time)


def _cutoff(collected: list[str], left_out: set[str]) -> int:
    """The first index of `collected` from which on every test is left out
    (len(collected) when the last one is graded)."""
    cutoff = len(collected)
    while cutoff > 0 and collected[cutoff - 1] in left_out:
        cutoff -= 1
    return cutoff


def _finished(notes: list[dict]) -> dict[str, bool]:
    """{test: whether it failed} for each test a run finished, but one it
    stopped at its share of processor time (a time, not an outcome of its code)."""
    overtime = {str(line["overtime"]) for line in notes if "overtime" in line}
    finished = {str(line["passed"]): False for line in notes if "passed" in line}
    finished.update({str(line["failed"]): True for line in notes if "failed" in line})
    return {test: failed for test, failed in finished.items() if test not in overtime}


def _past_the_unseen(notes: list[dict], seen: PitfallSeen) -> bool:
    """Whether a run has begun a test after each test of its collection whose
    outcome does not hold from `seen`: the test it runs now holds, and so does
    every test it has not finished.  (Begun: the test before it ended, its
    teardown too, and the run went on; a run that ends by itself after its
    last unseen test is never cut.)"""
    order = _collected(notes)
    if order is None or any("overtime" in line for line in notes):   # a time, not an outcome: run to the end
        return False
    holding, running = seen.holding(order), _unfinished(notes)
    if running is None or running not in holding:
        return False
    finished = _finished(notes)
    return all(test in finished or test in holding for test in order)


def _collected(notes: list[dict]) -> list[str] | None:
    """The run's tests in running order, as its notes say (None: not said)."""
    collected = next((line["collected"] for line in notes if "collected" in line), None)
    return [str(test) for test in collected] if isinstance(collected, list) else None


def _successors(order: list[str]) -> dict[str, str | None]:
    """Each test -> the test after it in `order` (None for the last)."""
    return {test: (order[index + 1] if index + 1 < len(order) else None) for index, test in enumerate(order)}


def _unfinished(notes: list[dict]) -> str | None:
    """The test a run started last and never said the outcome of (None: it finished each one)."""
    last = next((line for line in reversed(notes) if {"running", "passed", "failed"} & line.keys()), None)
    return str(last["running"]) if last is not None and "running" in last else None
