"""The `ol` command line: parse arguments, call the library, print.

Each verb is a pair of small functions, `_<verb>_args(parser)` and
`_<verb>(args, ctx) -> exit code`, registered in VERBS.  Verbs that live in
other modules (the grader's `check` and `verify`, `watch`, `shell`) are listed
in LAZY_VERBS and imported only when they are run; such a module defines

    def configure(parser: argparse.ArgumentParser) -> None
    def run(args: argparse.Namespace, ctx: ol.cli.Context) -> int
    TAKES_PYTEST_ARGS = True     (optional: it accepts `-- ARGS` for pytest)

Exit codes (ol.core.exits): 0 ok; 1 a failure (tests fail, `diff` refused); 2 the
command could not run as asked (usage errors, an unknown module, a module or
its needs not started, a fault of the grader); 130 and 143 when stopped by
SIGINT or SIGTERM, which leave no process or temporary folder behind.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TextIO

from ol.core import deps, student_kit
from ol.core.arguments import module_arg, module_args, module_verb
from ol.core.catalog import CATALOG_PATH, Catalog, Module, load_catalog
from ol.core.errors import OlError
from ol.core.exits import ERROR, INTERRUPTED, NOT_PASSED, OK, TERMINATED
from ol.core.native_build import C_FLAGS, SHARED_FLAGS, NoCompiler, c_files, find_compiler, include_dirs
from ol.core.runner import (PYTEST_NO_TESTS, PYTEST_USAGE_ERROR, NotReady, TestRun, plan_overlay, run_course_tests,
                       run_student_tests)
from ol.core.state import PASSING, STARTED, StateStore
from ol.student.workspace import BACKUP_DIR, reference_diff, remove_module, reset_module, start_module


WORKFLOW = """\
tinyllm course runner: you build the library module by module.

  ./ol start L7.3     write the stub and your test folder; says which chapter to read
  ./ol tests L7.3     run the course tests on your code (--ref-deps: needs from the reference)
                      write your own tests in python/tests/l7-3-rope/ (--mine runs them)
  ./ol watch L7.3     the tests again on every save (--mine: your own tests)
  ./ol shell L7.3     a Python prompt with tinyllm as the tests see it (-c CODE runs CODE)
  ./ol check L7.3     the course tests, then the mutation grade of your own tests
  ./ol diff  L7.3     after the course tests pass: your code against the reference
  ./ol submit L7.3    in a class: L7.3-submission.zip, checked as the grader will take it
  ./ol list           every module and how far you are
  ./ol reset L7.3     a fresh stub, after saving your code to a backup (--remove: back to not started)

Where the modules L7.3 needs come from: yours, or with --ref-deps all from the reference,
or with --ref-unstarted the reference for those you have not started.

./ol COMMAND --help says more about each command.
"""


def _workflow(ol: str) -> str:
    """WORKFLOW, plus how to call ol from the current directory if not ./ol."""
    return WORKFLOW + ("" if ol == "./ol" else f"(From this directory, ./ol is {ol}.)\n")


# ---- context shared by the verbs ---------------------------------------------------


@dataclass
class Context:
    """What every verb gets: the repository, its catalog and state, and the streams."""

    root: Path
    out: TextIO = sys.stdout
    err: TextIO = sys.stderr

    @cached_property
    def catalog(self) -> Catalog:
        catalog = load_catalog(self.root)
        for warning in catalog.warnings:
            self.warn(warning)
        return catalog

    @cached_property
    def store(self) -> StateStore:
        return StateStore(self.root, warn=self.warn)

    def module(self, module_id: str) -> Module:
        """The catalog's module; UnknownModule (exit 2, listing the ids) otherwise."""
        return self.catalog.get(module_id)

    def say(self, *lines: str) -> None:
        for line in lines:
            print(line, file=self.out)
        self.out.flush()

    def warn(self, message: str) -> None:
        print(f"ol: warning: {message}", file=self.err)

    def show(self, rel: str) -> str:
        """A repository path (relative to the root) as the user should type it
        from where they are: relative inside the repository, absolute outside."""
        path = self.root / rel
        try:
            cwd = Path.cwd().resolve()
        except FileNotFoundError:  # the current directory was deleted
            cwd = Path("/")
        if cwd == self.root or self.root in cwd.parents:
            shown = os.path.relpath(path, cwd)
            return shown + ("/" if rel.endswith("/") else "")
        return str(path) + ("/" if rel.endswith("/") else "")

    @cached_property
    def ol(self) -> str:
        """How to run ol from the current directory: "./ol" at the root."""
        shown = self.show("ol")
        return shown if os.sep in shown else "./" + shown


# ---- the registry --------------------------------------------------------------------


@dataclass(frozen=True)
class Verb:
    name: str
    summary: str                                              # one line for `ol --help`
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Context], int]
    description: str = ""                                     # for `ol NAME --help`
    takes_pytest_args: bool = False                           # accepts `-- ARGS`


VERBS: dict[str, Verb] = {}

# Verbs implemented elsewhere: name -> (module defining configure and run, summary).
LAZY_VERBS: dict[str, tuple[str, str]] = {
    "check": ("ol.grading.check_cli", "the course tests, then the mutation grade of your own tests"),
    "watch": ("ol.student.watch", "run the tests again each time you save a file (--mine: your own tests)"),
    "shell": ("ol.student.shell", "a Python prompt (or -c CODE) with tinyllm as the module's tests see it"),
    "verify": ("ol.instructor.verify", "instructor: the reference passes, stubs fail, pitfalls are caught"),
    "grade": ("ol.instructor.class_grading.grade_cli", "instructor: grade a folder of submissions (grades.csv, summary.md)"),
    "gradescope": ("ol.instructor.class_grading.gradescope", "instructor: build a Gradescope autograder bundle"),
    "milestone": ("ol.student.milestone.milestone_cli", "a whole model on your modules: MS-L7 runs SmolLM2-135M against transformers"),
    "release": ("ol.instructor.release", "instructor: write the student kit without the answers (--solutions: add them)"),
    "submit": ("ol.student.submit", "write MODULE-submission.zip, checked as the grader will take it"),
}


def register(verb: Verb) -> Verb:
    VERBS[verb.name] = verb
    return verb


# ---- start ----------------------------------------------------------------------------


def _start_args(parser):
    module_args(parser)   # the flag the commands start suggests carry (no warning about unfinished needs)


def _start(args, ctx: Context) -> int:
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

    unfinished = _unfinished_needs(ctx, module)
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


def _unfinished_needs(ctx: Context, module: Module) -> list[tuple[Module, str]]:
    """The needs (transitively) whose course tests have not passed."""
    unfinished = []
    for need in ctx.catalog.needs_closure(module):
        status = ctx.store.status(need)
        if not status.at_least(PASSING):
            unfinished.append((need, status.state))
    return unfinished


register(Verb(
    "start", "write a module's stubs and your test folder (never overwrites a file)",
    _start_args, _start,
    description=(
        "Writes the module's files as stubs generated from its contracts (each body raises\n"
        "NotImplementedError naming what to write; in C, it returns an error code), creates your\n"
        "test folder with a starter test, and prints the chapter, the course tests, your test\n"
        "folder and the rung.\n"
        "A file that exists is never overwritten: it is kept, and start says so."
    ),
))


# ---- tests ----------------------------------------------------------------------------


def _tests(args, ctx: Context) -> int:
    module = ctx.module(args.module)
    policy = deps.policy_of(args)
    plan_overlay(ctx.root, module, catalog=ctx.catalog, ref_deps=policy)  # NotReady: say why first
    served = _deps_phrase(ctx, module, policy)
    if args.mine:
        refused = _static_findings(ctx, module)
        ctx.say(f"ol: your tests in {ctx.show(module.student_tests + '/')} on your {module.id}{served}")
        run = run_student_tests(ctx.root, module, ref_deps=policy, pytest_args=args.pytest_args,
                                catalog=ctx.catalog)
        _summarize(ctx, run, f"your tests of {module.id}")
        if refused:
            ctx.say(f"(they ran, but {ctx.ol} check would not grade them: fix the {refused} finding"
                    f"{'s' if refused > 1 else ''} listed before the run)")
        return _exit_code(run)

    ctx.say(f"ol: the course tests of {module.id} on your {module.id}{served}")
    run = run_course_tests(ctx.root, module, ref_deps=policy, pytest_args=args.pytest_args,
                           catalog=ctx.catalog)
    state = _record(ctx, module, run, policy)
    _summarize(ctx, run, f"course tests of {module.id}")
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
    return _exit_code(run)


def _static_findings(ctx: Context, module: Module) -> int:
    """Read the student's tests as `ol check` will (its static check), print
    what it would refuse, and return how many findings there are.  Nothing
    is refused here: the tests run anyway."""
    from ol.grading.static_check import check_student_tests

    folder = ctx.root / module.student_tests
    if module.grading is None or not folder.is_dir():
        return 0
    violations = check_student_tests(ctx.root, ctx.catalog, module, folder)
    if not violations:
        ctx.say(f"ol: your tests read as {ctx.ol} check reads them: nothing it would refuse.")
        return 0
    ctx.say(f"ol: your tests read as {ctx.ol} check reads them: it would refuse to grade them, for "
            f"{'this' if len(violations) == 1 else 'these ' + str(len(violations))}:")
    for violation in violations:
        ctx.say(f"  {violation}")
    ctx.say("  They run now all the same; fix these before you check.", "")
    return len(violations)


def _deps_phrase(ctx: Context, module: Module, policy: str) -> str:
    """", with L0.1 from the reference and your own L7.3": where the needs come from (ol.core.deps)."""
    closure = [m.id for m in ctx.catalog.needs_closure(module)]
    referenced = _referenced(ctx, module, policy)
    given = [m for m in closure if m in referenced]
    yours = [m for m in closure if m not in referenced]
    parts = ([f"{', '.join(given)} from the reference"] if given else []) + (
        [f"your own {', '.join(yours)}"] if yours else [])
    return f", with {' and '.join(parts)}" if parts else ""


def _referenced(ctx: Context, module: Module, policy: str) -> set[str]:
    """The ids of the module's needs that the reference serves under `policy`."""
    return deps.from_reference(ctx.root, ctx.catalog.needs_closure(module), policy)


def _record(ctx: Context, module: Module, run: TestRun, policy: str) -> str | None:
    """Update the state after a course-test run; None if the run proves nothing
    (a subset that passed, or a pytest usage error).  The record says whether
    any need came from the reference (`ol list`'s *)."""
    if run.exit_code == PYTEST_USAGE_ERROR or (run.ok and not run.complete):
        return None
    return ctx.store.record_test_result(module, run.ok, ref_deps=bool(_referenced(ctx, module, policy)))


def _summarize(ctx: Context, run: TestRun, what: str) -> None:
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
        ctx.say("", f"{what}: {len(run.passed)} passed, {len(run.failed)} failed: {_some(run.failed)}.")


def _some(items: Sequence[str], shown: int = 4) -> str:
    """The first few test items of `items` by their ids ("test_validation[odd-rotary_dim]"),
    and how many more items there are."""
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def _exit_code(run: TestRun) -> int:
    if run.exit_code == 0:
        return OK
    return ERROR if run.exit_code == PYTEST_USAGE_ERROR else NOT_PASSED


# ./ol tests' arguments; ./ol watch takes the same (ol/student/watch.py)
tests_arguments = module_verb(mine="run your own tests (the module's student test folder) instead of the course tests")

register(Verb(
    "tests", "run a module's course tests on your code (--mine: your own tests)",
    tests_arguments, _tests, takes_pytest_args=True,
    description=(
        "Runs the module's course tests on your files, printing pytest's output as it goes.\n"
        "The module is always yours; the modules it needs are yours too, unless --ref-deps (all of\n"
        "them from the reference, so only your code for this module is tested) or --ref-unstarted\n"
        "(the reference for those you have not started).\n"
        "Arguments after -- go to pytest, e.g. ./ol tests L7.3 -- -k hand -x\n"
        "Exit: 0 all pass, 1 a test fails, 2 the tests could not run (unknown module, not started).\n"
        "A full passing run marks the module 'course tests passing' in ./ol list."
    ),
))


# ---- diff -----------------------------------------------------------------------------


def _diff(args, ctx: Context) -> int:
    module = ctx.module(args.module)
    if module.id in student_kit.withheld(ctx.root):
        print(f"ol: diff refused: the reference of {module.id} is not released yet. This is a student kit: your "
              f"instructor adds it after the deadline (ol release {module.id} --solutions); from then on "
              f"{ctx.ol} diff {module.id} reruns the course tests and, once they pass, shows your "
              f"{', '.join('python/' + f for f in module.files)} (-) against the reference (+).", file=ctx.err)
        return NOT_PASSED
    policy = deps.policy_of(args)
    plan_overlay(ctx.root, module, catalog=ctx.catalog, ref_deps=policy)  # NotReady: say why first
    served = _deps_phrase(ctx, module, policy)
    ctx.say(f"ol: running the course tests of {module.id} on your code first{served} ...")
    run = run_course_tests(ctx.root, module, ref_deps=policy, capture=True, catalog=ctx.catalog)
    _record(ctx, module, run, policy)
    ref = deps.flag(policy)
    if not run.ok:
        failing = _some(run.failed) or "see ./ol tests"
        hint = ""
        if policy != deps.REFERENCE and module.needs and _unfinished_needs(ctx, module):
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


register(Verb(
    "diff", "after the course tests pass: your files against the reference",
    module_verb(code_only="compare the code alone: docstrings, comments and blank lines left out on both sides"),
    _diff,
    description=(
        "Reruns the module's course tests on your code (your files may have changed since the\n"
        "last ./ol tests); if they all pass, prints a unified diff of your files (-) against the\n"
        "reference solution (+).  If they do not pass, it refuses and exits 1.\n"
        "--code-only leaves out docstrings, comments and blank lines on both sides, so the diff\n"
        "shows how the code differs, not the prose."
    ),
))


# ---- list -----------------------------------------------------------------------------


def _list_args(parser):
    pass


def _list(args, ctx: Context) -> int:
    ctx.store.records()  # a corrupt state file is reported (and kept) even if nothing is started
    rows = []
    notes = set()
    for module in ctx.catalog.modules:
        status = ctx.store.status(module)
        marks = []
        if status.ref_deps and status.at_least(PASSING):
            marks.append("*")
            notes.add("* with needs from the reference (--ref-deps, or --ref-unstarted)")
        if status.edited_since and status.at_least(PASSING):
            marks.append("+")
            notes.add("+ your files changed since (run ./ol tests again to update)")
        if status.missing:
            marks.append("!")
            notes.add("! some of the module's files are missing")
        rows.append((module.id, module.rung, status.state + "".join(marks), module.title))
    widths = [max(len(r[i]) for r in rows + [("Module", "Rung", "State", "")]) for i in range(3)]
    ctx.say("  ".join(h.ljust(w) for h, w in zip(("Module", "Rung", "State"), widths)) + "  Title")
    for row in rows:
        ctx.say("  ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + "  " + row[3])
    for note in sorted(notes):
        ctx.say(note.replace("./ol", ctx.ol))
    return OK


register(Verb(
    "list", "every module with its state (nothing is run)",
    _list_args, _list,
    description=(
        "Shows every module of the catalog with its state: not started, started, course tests\n"
        "passing, or checked.  It reads .ol/state.json, which start, tests, diff, reset and\n"
        "check update, and runs nothing."
    ),
))


# ---- reset ----------------------------------------------------------------------------


def _reset_args(parser):
    module_arg(parser)
    parser.add_argument("--remove", action="store_true",
                        help="take the module back to not started: save your files (as reset does), then "
                             "delete them, so that --ref-deps and --ref-unstarted serve the reference's")


def _reset(args, ctx: Context) -> int:
    module = ctx.module(args.module)
    if not ctx.store.status(module).at_least(STARTED):
        raise NotReady(f"nothing to reset: {module.id} is not started. ./ol start {module.id} writes its stubs.")
    if args.remove:
        result = remove_module(ctx.root, module)
        ctx.store.forget(module)
    else:
        result = reset_module(ctx.root, module)
        ctx.store.record(module, STARTED)
    if result.backup_dir:
        ctx.say("Saved your files before " + ("deleting" if args.remove else "replacing") + " them:")
        for rel in result.backed_up:
            ctx.say(f"  {ctx.show(rel)}  ->  {ctx.show(result.backup_dir + '/' + rel)}")
        ctx.say(f"backup: {ctx.show(result.backup_dir)}")
    for rel in result.written:
        ctx.say(f"Wrote a fresh stub: {ctx.show(rel)}")
    for rel in result.unchanged:
        ctx.say(f"Already a fresh stub (left as it is): {ctx.show(rel)}")
    for rel in result.removed:
        ctx.say(f"Deleted: {ctx.show(rel)}" + ("" if rel in result.backed_up else "  (a fresh stub: nothing of yours)"))
    if args.remove:
        ctx.say(f"{module.id} is not started now: --ref-deps and --ref-unstarted take it from the reference; "
                f"{ctx.ol} start {module.id} writes fresh stubs again.")
    ctx.say(f"Your own tests in {ctx.show(module.student_tests + '/')} are left as they are.")
    if result.backup_dir:
        first = result.backed_up[0]
        ctx.say(f"To undo: cp {ctx.show(result.backup_dir + '/' + first)} {ctx.show(first)}")
    return OK


register(Verb(
    "reset", "a fresh stub in place of your files, after saving them to a backup",
    _reset_args, _reset,
    description=(
        f"Copies the module's files to {BACKUP_DIR}/MODULE/TIMESTAMP/ (printed; never overwritten),\n"
        "then writes fresh stubs in their place.  With --remove it deletes them instead: the module\n"
        "is not started again, and --ref-deps and --ref-unstarted serve the reference's in its place.\n"
        "Your own test folder is not touched."
    ),
))


# ---- the parser and main -------------------------------------------------------------------


def _lazy_verb(name: str) -> Verb:
    """The verb `name` of LAZY_VERBS, or a placeholder if its module is not written yet."""
    module_name, summary = LAZY_VERBS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is None or not module_name.startswith(error.name):
            raise  # the module exists but something it imports is missing: a real error

        def unavailable(args, ctx):
            print(f"ol: `{name}` is not available yet: its code ({module_name}) is not in this checkout.",
                  file=ctx.err)
            return ERROR

        return Verb(name, summary, lambda p: p.add_argument("rest", nargs=argparse.REMAINDER,
                                                            help=argparse.SUPPRESS), unavailable)
    return Verb(name, summary, module.configure, module.run,
                description=(module.__doc__ or "").strip().split("\n\n")[0],
                takes_pytest_args=getattr(module, "TAKES_PYTEST_ARGS", False))


def build_parser(selected: str | None, prog: str = "ol") -> argparse.ArgumentParser:
    """The argument parser.  Lazy verbs are imported only if `selected`."""
    parser = argparse.ArgumentParser(
        prog=prog, description=_workflow(prog).split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_workflow(prog).split("\n\n", 1)[1],
    )
    subparsers = parser.add_subparsers(dest="verb", metavar="COMMAND")
    names = list(VERBS) + [n for n in LAZY_VERBS if n not in VERBS]
    for name in names:
        if name in VERBS:
            verb = VERBS[name]
        elif name == selected:
            verb = _lazy_verb(name)
        else:
            subparsers.add_parser(name, help=LAZY_VERBS[name][1], add_help=False).add_argument(
                "rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            continue
        sub = subparsers.add_parser(
            name, help=verb.summary, description=verb.description or verb.summary,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        verb.configure(sub)
        if verb.takes_pytest_args:
            sub.usage = sub.format_usage().removeprefix("usage: ").strip() + " [-- PYTEST_ARGS]"
        sub.set_defaults(_verb=verb)
    return parser


def find_root(start: str | Path | None = None) -> Path:
    """The repository this `ol` belongs to: the given root, or the one that
    holds this package (<root>/python/ol)."""
    root = Path(start) if start else Path(__file__).resolve().parents[2]
    root = root.resolve()
    if not (root / CATALOG_PATH).exists():
        raise OlError(f"{root} is not a tinyllm checkout (no {CATALOG_PATH}); run the ol at the root "
                      "of your clone: ./ol")
    return root


def main(argv: Sequence[str] | None = None, root: str | Path | None = None,
         out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one ol command; returns the exit code (0 ok, 1 failure, 2 usage).
    SIGTERM unwinds it as Ctrl-C does, and only while it runs: the caller's
    own handler is back when it returns (a test that calls main keeps its
    pytest process as it was)."""
    err = err or sys.stderr
    with _terminating_cleanly():
        try:
            return _main(list(sys.argv[1:] if argv is None else argv), root, out or sys.stdout, err)
        except KeyboardInterrupt:
            print("ol: interrupted", file=err)
            return INTERRUPTED
        except Terminated:
            print("ol: terminated", file=err)
            return TERMINATED


def _main(argv: list[str], root: str | Path | None, out: TextIO, err: TextIO) -> int:
    try:
        ctx = Context(find_root(root), out, err)
    except OlError as error:
        print(f"ol: {error}", file=err)
        return error.exit_code

    pytest_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, pytest_args = argv[:at], argv[at + 1:]
    if not argv:
        print(_workflow(ctx.ol), file=out, end="")
        return OK

    selected = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(selected, prog=ctx.ol)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a usage error (2, message printed)
        return int(exit_.code or 0)
    verb: Verb | None = getattr(args, "_verb", None)
    if verb is None:
        print(_workflow(ctx.ol), file=out, end="")
        return OK
    if pytest_args and not verb.takes_pytest_args:
        parser.print_usage(err)
        print(f"ol: {verb.name} takes no pytest arguments after --", file=err)
        return ERROR
    args.pytest_args = pytest_args

    try:
        return verb.run(args, ctx)
    except OlError as error:
        message = str(error).replace("./ol ", ctx.ol + " ")
        print(f"ol: {message}", file=err)
        return error.exit_code


class Terminated(BaseException):
    """SIGTERM arrived: unwind like Ctrl-C, so every sandbox and temporary
    folder is cleaned up on the way out."""


@contextlib.contextmanager
def _terminating_cleanly():
    """SIGTERM raises Terminated inside the block (in the main thread: only
    there can Python set a handler); the handler before it is restored after."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)   # None: set outside Python
