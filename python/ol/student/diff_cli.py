"""`ol diff MODULE [--code-only]`: once the course tests pass on the
student's code, that code against the reference's."""

from __future__ import annotations

from ol.core import deps, student_kit
from ol.core.arguments import module_verb
from ol.core.command import Context
from ol.core.exits import NOT_PASSED, OK
from ol.core.runner import plan_overlay, run_course_tests
from ol.student.needs import deps_phrase, unfinished_needs
from ol.student.tests_cli import record, some
from ol.student.workspace import reference_diff

DESCRIPTION = (
    "Reruns the module's course tests on your code (your files may have changed since the\n"
    "last ./ol tests); if they all pass, prints a unified diff of your files (-) against the\n"
    "reference solution (+).  If they do not pass, it refuses and exits 1.\n"
    "--code-only leaves out docstrings, comments and blank lines on both sides, so the diff\n"
    "shows how the code differs, not the prose."
)

configure = module_verb(code_only="compare the code alone: docstrings, comments and blank lines left out on both sides")


def run(args, ctx: Context) -> int:
    module = ctx.module(args.module)
    if module.id in student_kit.withheld(ctx.root):
        print(f"ol: diff refused: the reference of {module.id} is not released yet. This is a student kit: your "
              f"instructor adds it after the deadline (ol release {module.id} --solutions); from then on "
              f"{ctx.ol} diff {module.id} reruns the course tests and, once they pass, shows your "
              f"{', '.join('python/' + f for f in module.files)} (-) against the reference (+).", file=ctx.err)
        return NOT_PASSED
    policy = deps.policy_of(args)
    plan_overlay(ctx.root, module, catalog=ctx.catalog, ref_deps=policy)  # NotReady: say why first
    served = deps_phrase(ctx, module, policy)
    ctx.say(f"ol: running the course tests of {module.id} on your code first{served} ...")
    run = run_course_tests(ctx.root, module, ref_deps=policy, capture=True, catalog=ctx.catalog)
    record(ctx, module, run, policy)
    ref = deps.flag(policy)
    if not run.ok:
        failing = some(run.failed) or "see ./ol tests"
        hint = ""
        if policy != deps.REFERENCE and module.needs and unfinished_needs(ctx, module):
            hint = " If the failures come from unfinished needs, use --ref-deps (every need from the reference)."
        print(
            f"ol: diff refused: the course tests of {module.id} do not pass now "
            f"({len(run.failed)} failing: {failing}). The reference is shown only once your own "
            f"code passes. {ctx.ol} tests {module.id}{ref} shows why.{hint}",
            file=ctx.err,
        )
        return NOT_PASSED

    text = reference_diff(ctx.root, module, code_only=args.code_only)
    what = "code (-) against the reference's (+), docstrings and comments left out" if args.code_only else \
        "code (-) against the reference (+)"
    ctx.say(f"ol: all {len(run.passed)} course tests pass, so here is your {what}:", "")
    if text:
        ctx.out.write(text)
        ctx.out.flush()
    else:
        ctx.say("(your code is the reference's, apart from docstrings, comments and blank lines)"
                if args.code_only else "(your files are identical to the reference)")
    return OK
