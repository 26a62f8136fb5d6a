"""The `ol` command line: the parser, the one table of verbs, the dispatch.

Each verb is a module of the wing of those who run it (student/, instructor/,
grading/), listed in VERBS and imported only when it is run; what a verb
module defines, and the Context every verb gets, are in ol.core.command.

Exit codes (ol.core.exits): 0 ok; 1 a failure (tests fail, `diff` refused); 2 the
command could not run as asked (usage errors, an unknown module, a module or
its needs not started, a fault of the grader); 130 and 143 when stopped by
SIGINT or SIGTERM, which leave no process or temporary folder behind; 141
when whoever read the output stopped reading (`ol list | head -3`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ol.core.catalog import CATALOG_PATH
from ol.core.command import Context, Terminated, terminating_cleanly
from ol.core.errors import OlError
from ol.core.exits import BROKEN_PIPE, ERROR, INTERRUPTED, OK, TERMINATED

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


# ---- the verbs -----------------------------------------------------------------------

# name -> (the module that defines it, its line in `ol --help`), in the order --help lists them
VERBS: dict[str, tuple[str, str]] = {
    "start": ("ol.student.start_cli", "write a module's stubs and your test folder (never overwrites a file)"),
    "tests": ("ol.student.tests_cli", "run a module's course tests on your code (--mine: your own tests)"),
    "diff": ("ol.student.diff_cli", "after the course tests pass: your files against the reference"),
    "list": ("ol.student.list_cli", "every module with its state (nothing is run)"),
    "reset": ("ol.student.reset_cli", "a fresh stub in place of your files, after saving them to a backup"),
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


@dataclass(frozen=True)
class Verb:
    """A verb as the parser uses it, read from its module (ol.core.command)."""
    name: str
    summary: str                                              # one line for `ol --help`
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Context], int]
    description: str = ""                                     # for `ol NAME --help`
    takes_pytest_args: bool = False                           # accepts `-- ARGS`


def load_verb(name: str) -> Verb:
    """The verb `name` of VERBS, or a placeholder if its module is not written yet."""
    module_name, summary = VERBS[name]
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
                description=getattr(module, "DESCRIPTION", None) or (module.__doc__ or "").strip().split("\n\n")[0],
                takes_pytest_args=getattr(module, "TAKES_PYTEST_ARGS", False))


def build_parser(selected: str | None, prog: str = "ol") -> argparse.ArgumentParser:
    """The argument parser.  A verb's module is imported only if it is `selected`."""
    parser = argparse.ArgumentParser(
        prog=prog, description=_workflow(prog).split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_workflow(prog).split("\n\n", 1)[1],
    )
    subparsers = parser.add_subparsers(dest="verb", metavar="COMMAND")
    for name in VERBS:
        if name == selected:
            verb = load_verb(name)
        else:
            subparsers.add_parser(name, help=VERBS[name][1], add_help=False).add_argument(
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
    with terminating_cleanly():
        try:
            return _main(list(sys.argv[1:] if argv is None else argv), root, out or sys.stdout, err)
        except KeyboardInterrupt:
            print("ol: interrupted", file=err)
            return INTERRUPTED
        except Terminated:
            print("ol: terminated", file=err)
            return TERMINATED
        except BrokenPipeError:
            if out is None:   # our own stdout: point it at nothing, so the flush at exit has nowhere to fail
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return BROKEN_PIPE


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
