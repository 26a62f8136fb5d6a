"""`ol submit MODULE`: the archive a student hands in, checked as the grader
will take it (otter-grader's `otter check`, nbgrader's `validate`).

    ./ol submit L7.3                  # writes L7.3-submission.zip beside ./ol and lists it
    ./ol submit L7.3 --out ~/hand-in.zip

It holds the module's files and the student's test folder at their checkout
paths (python/tinyllm/modern/rope.py, python/tests/l7-3-rope/...), nothing
else.  Before writing it, each thing the grader looks at is checked, in the
grader's own words:

    the files at their paths   the archive, read back as `ol grade` reads a
                               submission (ol.core.submissions),
                               gives exactly these files
    they parse                 every .py file (ol.core.screening)
    the import rules           the static check of `ol check` (ol.grading.static_check)
    the course tests run       on the student's code, with --ref-deps as the grade runs them

A missing module file, or one that does not parse, leaves nothing to grade:
no archive is written.  Any other problem is listed and the archive is
written all the same (each part of the grade stands on its own); the exit
code is then 1.  An existing file at the archive's place is replaced only
if `ol submit` wrote it (its zip comment says so).
"""

from __future__ import annotations

import argparse
import io
import zipfile
from pathlib import Path

from ol.core.arguments import module_arg
from ol.core.catalog import STUDENT_TREE
from ol.core.errors import OlError
from ol.core.exits import ERROR, NOT_PASSED, OK
from ol.core.files import write_whole

COMMENT = b"written by ol submit"           # the mark of an archive this command may replace
MAX_LISTED_FAILURES = 5


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Write MODULE-submission.zip, the files your instructor grades (your module's file and "
                          "your test folder, at their paths), after checking them as the grader will: the files "
                          "at their paths, that they parse, the import rules of ol check, that the course tests "
                          "run. Exit 0 all is well, 1 a problem is listed (the archive is still written unless "
                          "there is nothing to grade), 2 it could not run.")
    module_arg(parser)
    parser.add_argument("--out", type=Path, metavar="ZIP", default=None,
                        help="where to write the archive (default MODULE-submission.zip beside ./ol)")


def run(args: argparse.Namespace, ctx) -> int:
    try:
        module = ctx.module(args.module)
        out = args.out or ctx.root / f"{module.id}-submission.zip"
        refuse_to_replace(out)
        files = collect(ctx.root, module)
        ctx.say(f"ol submit {module.id}: your work, checked as the grader will take it")
        fatal, problems, checked = check(ctx, module, files)
    except OlError as error:
        print(f"ol submit: {error}", file=ctx.err)
        return ERROR
    for line in checked:
        ctx.say(f"  ok       {line}")
    for line in fatal + problems:
        ctx.say(f"  PROBLEM  {line}")
    if fatal:
        print(f"ol submit {module.id}: nothing written: there is nothing to grade until this is fixed.",
              file=ctx.err)
        return NOT_PASSED
    try:
        write_archive(out, files)
    except (OSError, OlError) as error:
        print(f"ol submit: could not write {out}: {getattr(error, 'strerror', None) or error}", file=ctx.err)
        return ERROR
    shown = ctx.show(str(out.resolve().relative_to(ctx.root))) if _inside(out, ctx.root) else str(out)
    ctx.say("", f"ol submit {module.id}: wrote {shown} "
                f"({len(files)} file{'s' if len(files) != 1 else ''}), what the grader will take:")
    ctx.say(*(f"  {path}" for path in sorted(files)))
    ctx.say("", f"Hand in {out.name} as your instructor asks, as it is (do not unpack it or rename what is "
                "inside)." + (" Fix the problems above first if you can: each costs points." if problems else ""))
    return NOT_PASSED if problems else OK


def collect(root: Path, module) -> dict[str, bytes]:
    """{checkout path: bytes}: the module's files that exist, and every file
    of the student's test folder (as the grader reads a folder)."""
    from ol.core.test_folder import TestFolder

    files = {}
    for name in module.files:
        path = root / STUDENT_TREE / name
        if path.is_file():
            files[f"{STUDENT_TREE}/{name}"] = path.read_bytes()
    tests = root / module.student_tests
    if tests.is_dir():
        files.update(TestFolder(tests).read(module.student_tests.rstrip("/")))
    return files


def check(ctx, module, files: dict[str, bytes]) -> tuple[list[str], list[str], list[str]]:
    """(problems that leave nothing to grade, other problems, what is fine)."""
    from ol.core.screening import parse_problem

    fatal, problems, checked = [], [], []
    for name in module.files:
        path = f"{STUDENT_TREE}/{name}"
        if path not in files:
            fatal.append(f"no {path}: ./ol start {module.id} writes it; your work goes there")
        elif (problem := parse_problem(files[path])) is not None:
            fatal.append(f"{path} does not parse: {problem}")
    tests = module.student_tests.rstrip("/")
    unparsable = [f"{path} does not parse: {problem}" for path, data in sorted(files.items())
                  if path.startswith(tests + "/") and path.endswith(".py") and (problem := parse_problem(data))]
    problems += unparsable
    if not any(path.startswith(tests + "/") for path in files):
        problems.append(f"no tests: your test files go in {tests}/ (./ol start {module.id} made it)")
    if not fatal and not unparsable:
        checked.append("every file parses")
    taken = read_back(files, module)
    if taken == set(files):
        checked.append("the files at their paths: the grader takes exactly these")
    else:
        problems.append(f"the grader would not take the archive as it is: {', '.join(sorted(set(files) ^ taken))}")
    if module.grading is not None and (ctx.root / module.student_tests).is_dir() and not unparsable:
        from ol.grading.static_check import check_student_tests

        from ol.grading.static_check import FILE

        violations = check_student_tests(ctx.root, ctx.catalog, module, ctx.root / module.student_tests)
        problems += [f"the grader would leave this file out (the rest is graded): {v}" if v.scope == FILE else
                     f"the grader would refuse to grade your tests: {v}" for v in violations]
        if not violations:
            checked.append("your tests keep the import rules of ol check")
    if not fatal:
        said = _course_tests(ctx, module)
        (problems if said.startswith("the course tests") and "fail" in said else checked).append(said)
    return fatal, problems, checked


def read_back(files: dict[str, bytes], module) -> set[str]:
    """The checkout paths `ol grade` takes from the archive of `files`."""
    from ol.core.archives import Refused
    from ol.core.submissions import take

    try:
        return set(take(files, module).files)
    except Refused:
        return set()


def _course_tests(ctx, module) -> str:
    from ol.core.runner import NotReady, run_course_tests

    try:
        run = run_course_tests(ctx.root, module, ref_deps=True, capture=True, catalog=ctx.catalog)
    except NotReady as why:
        return f"the course tests could not run: {why}"
    total = len(run.outcomes)
    if run.ok:
        return f"the course tests run: {len(run.passed)} of {total} pass on your code"
    failed = run.failed
    named = ", ".join(failed[:MAX_LISTED_FAILURES]) + (" ..." if len(failed) > MAX_LISTED_FAILURES else "")
    return (f"the course tests fail on your code: {len(failed)} of {total} ({named}); your tests are graded all "
            f"the same, but these cost their points (./ol tests {module.id} --ref-deps shows why)")


def write_archive(out: Path, files: dict[str, bytes]) -> Path:
    """The zip of `files` at `out`, written whole; a file there that ol submit
    did not write is never replaced."""
    out = Path(out)
    refuse_to_replace(out)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            archive.writestr(path, files[path])
        archive.comment = COMMENT
    out.parent.mkdir(parents=True, exist_ok=True)
    write_whole(out, buffer.getvalue())
    return out


def refuse_to_replace(out: Path) -> None:
    """OlError when `out` is a file that ol submit did not write."""
    if Path(out).exists() and not _ours(Path(out)):
        raise OlError(f"{out} exists and ol submit did not write it; move it away or pass --out PATH")


def _ours(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.comment == COMMENT
    except (OSError, zipfile.BadZipFile):
        return False


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
        return True
    except ValueError:
        return False
