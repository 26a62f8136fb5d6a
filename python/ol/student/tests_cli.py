"""`ol tests MODULE [--mine] [--ref-deps | --ref-unstarted] [-- PYTEST_ARGS]`:
the course tests, or with --mine the student's own, on the student's code;
what the run proves is recorded for `ol list`.  `ol watch` and `ol diff` run
the tests through the parts here."""

from __future__ import annotations

from collections.abc import Sequence

from ol.core import deps
from ol.core.arguments import module_verb
from ol.core.catalog import Module
from ol.core.command import Context
from ol.core.exits import ERROR, NOT_PASSED, OK
from ol.core.runner import (PYTEST_NO_TESTS, PYTEST_USAGE_ERROR, TestRun, plan_overlay, run_course_tests,
                            run_student_tests)
from ol.student.needs import deps_phrase, served_by_reference

TAKES_PYTEST_ARGS = True
DESCRIPTION = (
    "Runs the module's course tests on your files, printing pytest's output as it goes.\n"
    "The module is always yours; the modules it needs are yours too, unless --ref-deps (all of\n"
    "them from the reference, so only your code for this module is tested) or --ref-unstarted\n"
    "(the reference for those you have not started).\n"
    "Arguments after -- go to pytest, e.g. ./ol tests L7.3 -- -k hand -x\n"
    "Exit: 0 all pass, 1 a test fails, 2 the tests could not run (unknown module, not started).\n"
    "A full passing run marks the module 'course tests passing' in ./ol list."
)

configure = module_verb(mine="run your own tests (the module's student test folder) instead of the course tests")   # ol watch takes the same


def run(args, ctx: Context) -> int:
    module = ctx.module(args.module)
    policy = deps.policy_of(args)
    plan_overlay(ctx.root, module, catalog=ctx.catalog, ref_deps=policy)  # NotReady: say why first
    served = deps_phrase(ctx, module, policy)
    if args.mine:
        refused = static_findings(ctx, module)
        ctx.say(f"ol: your tests in {ctx.show(module.student_tests + '/')} on your {module.id}{served}")
        run = run_student_tests(ctx.root, module, ref_deps=policy, pytest_args=args.pytest_args,
                                catalog=ctx.catalog)
        summarize(ctx, run, f"your tests of {module.id}")
        if refused:
            ctx.say(f"(they ran, but {ctx.ol} check would not grade them: fix the {refused} finding"
                    f"{'s' if refused > 1 else ''} listed before the run)")
        return exit_code(run)

    ctx.say(f"ol: the course tests of {module.id} on your {module.id}{served}")
    run = run_course_tests(ctx.root, module, ref_deps=policy, pytest_args=args.pytest_args,
                           catalog=ctx.catalog)
    state = record(ctx, module, run, policy)
    summarize(ctx, run, f"course tests of {module.id}")
    if run.ok and run.complete:
        ref = deps.flag(policy)
        ctx.say(
            f"Next: write your own tests in {ctx.show(module.student_tests + '/')} "
            f"(run them: {ctx.ol} tests {module.id} --mine{ref})"
            + (f", grade them: {ctx.ol} check {module.id}{ref}" if module.grading else "")
            + f"; see the reference: {ctx.ol} diff {module.id}{ref}"
        )
    elif not run.ok:
        ctx.say(f"Each failure above says what was expected. The chapter: {ctx.show(module.chapter)}")
    if state:
        ctx.say(f"({ctx.ol} list now shows {module.id}: {state})")
    return exit_code(run)


def static_findings(ctx: Context, module: Module) -> int:
    """Read the student's tests as `ol check` will (its static check), print
    what it would refuse, and return how many findings there are.  Nothing
    is refused here: the tests run anyway."""
    from ol.core.test_folder import SuiteUnreadable
    from ol.grading.static_check import check_student_tests

    folder = ctx.root / module.student_tests
    if module.grading is None or not folder.is_dir():
        return 0
    try:
        violations = check_student_tests(ctx.root, ctx.catalog, module, folder)
    except SuiteUnreadable as unreadable:     # ol check would refuse the folder whole: say so, then run
        ctx.say(f"ol: {ctx.ol} check would refuse to grade your tests: {unreadable}",
                "  They run now all the same; fix this before you check.", "")
        return 1
    if not violations:
        ctx.say(f"ol: your tests read as {ctx.ol} check reads them: nothing it would refuse.")
        return 0
    ctx.say(f"ol: your tests read as {ctx.ol} check reads them: it would refuse to grade them, for "
            f"{'this' if len(violations) == 1 else 'these ' + str(len(violations))}:")
    for violation in violations:
        ctx.say(f"  {violation}")
    ctx.say("  They run now all the same; fix these before you check.", "")
    return len(violations)


def record(ctx: Context, module: Module, run: TestRun, policy: str) -> str | None:
    """Update the state after a course-test run; None if the run proves nothing
    (a subset that passed, or a pytest usage error).  The record says whether
    any need came from the reference (`ol list`'s *)."""
    if run.exit_code == PYTEST_USAGE_ERROR or (run.ok and not run.complete):
        return None
    return ctx.store.record_test_result(module, run.ok, ref_deps=bool(served_by_reference(ctx, module, policy)))


def summarize(ctx: Context, run: TestRun, what: str) -> None:
    if run.ok:
        partial = f" ({run.deselected} left out by -k/-m)" if run.deselected else ""
        ctx.say("", f"{what}: all {len(run.passed)} passed{partial}.")
    elif run.exit_code == PYTEST_NO_TESTS:
        ctx.say("", f"{what}: no tests were collected.")
    elif run.exit_code == PYTEST_USAGE_ERROR:
        ctx.say("", "pytest did not accept the arguments after --; see its message above.")
    elif any(o.outcome == "error" and "::" not in o.nodeid for o in run.outcomes):
        ctx.say("", f"{what}: a test file could not be imported; the error above says why "
                "(often a syntax error or a missing name in your code).")
    else:  # counts and names are of test items: each parametrized case is one
        ctx.say("", f"{what}: {len(run.passed)} passed, {len(run.failed)} failed: {some(run.failed)}.")


def some(items: Sequence[str], shown: int = 4) -> str:
    """The first few test items of `items` by their ids ("test_validation[odd-rotary_dim]"),
    and how many more items there are."""
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def exit_code(run: TestRun) -> int:
    if run.exit_code == 0:
        return OK
    return ERROR if run.exit_code == PYTEST_USAGE_ERROR else NOT_PASSED
