"""`ol start MODULE`: a module's stubs and the student's test folder
written, never over a file; then the chapter, the tests and what to do next."""

from __future__ import annotations

from pathlib import Path

from ol.core import deps
from ol.core.arguments import module_args
from ol.core.catalog import Module
from ol.core.command import Context
from ol.core.exits import OK
from ol.core.native_build import C_FLAGS, SHARED_FLAGS, NoCompiler, c_files, find_compiler, include_dirs
from ol.core.state import STARTED
from ol.student.needs import unfinished_needs
from ol.student.workspace import start_module

DESCRIPTION = (
    "Writes the module's files as stubs generated from its contracts (each body raises\n"
    "NotImplementedError naming what to write; in C, it returns an error code), creates your\n"
    "test folder with a starter test, and prints the chapter, the course tests, your test\n"
    "folder and the rung.\n"
    "A file that exists is never overwritten: it is kept, and start says so."
)


def configure(parser) -> None:
    module_args(parser)   # the flag the commands start suggests carry (no warning about unfinished needs)


def run(args, ctx: Context) -> int:
    module = ctx.module(args.module)
    result = start_module(ctx.root, module, ctx.catalog)
    if result.written:
        ctx.store.record(module, STARTED)

    ctx.say(f"{module.id}  {module.title}  (rung {module.rung})", "")
    for rel in result.written:
        ctx.say(f"  wrote  {ctx.show(rel)}  (a stub from {module.contract_for(rel.split('/', 1)[1])})")
    for rel in result.kept:
        ctx.say(f"  kept   {ctx.show(rel)}  (it exists, so it was left as it is; "
                f"{ctx.ol} reset {module.id} gives a fresh stub after a backup)")
    if result.starter_test:
        ctx.say(f"  wrote  {ctx.show(result.starter_test)}  (your first test: allowed imports and one example)")
    else:
        ctx.say(f"  kept   your tests in {ctx.show(module.student_tests + '/')} "
                f"({', '.join(Path(t).name for t in result.tests_kept)})")

    chapter_note = "" if (ctx.root / module.chapter).exists() else "  (not written yet)"
    ctx.say(
        "",
        f"  chapter       {ctx.show(module.chapter)}{chapter_note}",
        f"  course tests  {ctx.show(module.course_tests + '/')}",
        f"  your tests    {ctx.show(module.student_tests + '/')}",
        f"  rung          {module.rung}" + (
            f" (your tests are graded by mutation: at least {module.grading.threshold:.0%} of the "
            "mutants and every pitfall caught)" if module.grading else ""),
    )
    if c_files(module):
        _say_how_c_is_built(ctx, module)

    unfinished = unfinished_needs(ctx, module)
    policy = deps.policy_of(args)
    ref = deps.flag(deps.REFERENCE if policy == deps.MINE and unfinished else policy)
    if unfinished and policy == deps.MINE:
        ctx.say(
            "",
            f"{module.id} needs {', '.join(module.needs)}; not finished yet: "
            + ", ".join(f"{m.id} ({state})" for m, state in unfinished) + ".",
            f"Meanwhile, test with the reference's versions (--ref-deps, as below; --ref-unstarted "
            f"takes only those you have not started), or finish them first: {ctx.ol} start {unfinished[0][0].id}",
        )
    ctx.say(
        "",
        "Next:",
        f"  1. read the chapter        {ctx.show(module.chapter)}",
        f"  2. fill in the stub        {', '.join(ctx.show('python/' + f) for f in module.files)}",
        f"  3. run the course tests    {ctx.ol} tests {module.id}{ref}",
        f"  4. write your own tests in {ctx.show(module.student_tests + '/')}; "
        f"run them: {ctx.ol} tests {module.id} --mine{ref}",
    )
    if module.grading:
        ctx.say(f"  5. grade your tests        {ctx.ol} check {module.id}{ref}")
    ctx.say(f"  {6 if module.grading else 5}. see the reference       {ctx.ol} diff {module.id}{ref}")
    return OK


def _say_how_c_is_built(ctx: Context, module: Module) -> None:
    """The compile command of `ol tests` for a C module, or a warning that there is no compiler."""
    try:
        compiler = " ".join(find_compiler(module.id))
    except NoCompiler as error:
        ctx.warn(str(error))
        return
    flags = " ".join((*C_FLAGS, *SHARED_FLAGS, *(f"-I {d}" for d in include_dirs(module))))
    files = " ".join("python/" + f for f in c_files(module))
    ctx.say(f"  compiled as   {compiler} {flags} {files}",
            f"                (by {ctx.ol} tests, at the repository's root, into a temporary folder)")
