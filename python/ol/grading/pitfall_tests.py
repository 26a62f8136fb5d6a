"""Which tests of the suite fail on each caught pitfall: the report's "by".

The variants stage stops each run at its first failing test, in an order
that puts the tests that caught most so far first, so the test it names for
a pitfall is the one that happened to come first, often one about something
else.  Here each caught pitfall runs the whole suite once more, every test,
in file order, after the grade is decided: what the runs say is information
for the report, never a verdict.

A re-check (ol.grading.recheck) knows, for every test whose code is
unchanged, whether it failed on each pitfall last time; then only the new or
edited tests need asking.  Each is asked in a short run that tries it first
and then a test known to fail on the pitfall (so the run ends there either
way); a pitfall with more new tests than MAX_ASKED runs the whole suite.

    by = tests_failing_on(grader, [variant, ...])          # {"pitfall:p01": ("...::test_a", "...::test_b")}
    by = tests_failing_on(grader, variants, known, code)   # known: Known(...) from the last check
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ol.grading.scheduler import Run
from ol.grading.protocol import RunRequest
from ol.grading.variants import Variant

MAX_LISTED = 200   # tests named per pitfall
MAX_ASKED = 3      # new or edited tests asked one by one; more: the whole suite runs


@dataclass(frozen=True)
class Known:
    """What the last check found: each test's code digest then, and the tests
    that failed on each pitfall."""

    code: dict[str, str] = field(default_factory=dict)         # test -> digest of its code (ol.grading.suite_code)
    by: dict[str, list[str]] = field(default_factory=dict)     # pitfall key -> the tests that failed on it


def tests_failing_on(grader, variants: list[Variant], known: Known | None = None,
                     code: Callable[[str], str | None] | None = None) -> dict[str, tuple[str, ...]]:
    """The tests that fail on each variant, in the suite's file order.
    known and code (a test's digest now): what can be taken from the last check."""
    order = {test: n for n, test in enumerate(grader.collected)}
    changed = [] if known is None or code is None else \
        [t for t in grader.collected if known.code.get(t) is None or known.code[t] != code(t)]
    found, whole, asked = {}, [], []     # asked: (variant, new test, a test known to fail on it)
    for variant in variants:
        before = None if known is None or code is None else known.by.get(variant.key)
        still = [t for t in before or () if t in order and t not in changed]
        if before is None or len(changed) > MAX_ASKED or (changed and not still):
            whole.append(variant)
        else:
            found[variant.key] = still
            asked += [(variant, test, still[0]) for test in changed]
    limit = grader.mutant_time_limit()
    runs = {grader._id(): (v, None) for v in whole}
    runs.update({grader._id(): (v, (test, failing)) for v, test, failing in asked})
    outcomes = grader.scheduler.run([
        Run(run_id, RunRequest(suite="student", task="grade", all_tests=True) if pair is None else
            RunRequest(suite="student", task="grade", order=list(pair)), variant.request(), limit)
        for run_id, (variant, pair) in runs.items()])
    for run_id, (variant, pair) in runs.items():
        failed = _failed(outcomes[run_id])
        if pair is None:
            found[variant.key] = list(failed)
        elif pair[0] in failed:
            found[variant.key].append(pair[0])
    in_file_order = lambda tests: sorted(set(tests), key=lambda t: (order.get(t, len(order)), t))  # noqa: E731
    return {key: tuple(in_file_order(tests))[:MAX_LISTED] for key, tests in found.items()}


def _failed(outcome) -> list[str]:
    """The tests a run says failed, and the one it was still running when its time was up."""
    report = [line for line in outcome.notes if isinstance(line, dict)]
    failed = [str(line["failed"]) for line in report if "failed" in line]
    if outcome.timed_out:
        failed += [str(line["running"]) for line in report[-1:] if "running" in line]
    return failed
