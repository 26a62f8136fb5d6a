"""What can be said of a submission before it is graded, in the student's
words: an entry that could not be read, an empty one, a missing module file,
a file that does not parse.

    screening = screen(module, submission)
    screening.reason        why the check is not run at all (None: run it)
    screening.unparsable    test files that do not parse: [{"file": name, "problem": "line N: ..."}]
    screening.no_tests      no test file was taken: what to say if the check finds none

The check is skipped only when it could earn nothing: no module file, or one
that does not parse (every course test would fail).  Test files that do not
parse are only noted: the check leaves them out and grades the rest of the
suite (ol.grading.check.refused_files); when none is left, the suite is not
graded and the reason names the file and line (ol.instructor.class_grading.outcome).
Files are parsed, never run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ol.core.catalog import STUDENT_TREE, Module
from ol.core.submissions import Submission


@dataclass(frozen=True)
class Screening:
    reason: str | None = None
    details: list[str] = field(default_factory=list)
    unparsable: list[dict] = field(default_factory=list)
    no_tests: str | None = None      # no test file taken: said if the check finds none either


def screen(module: Module, submission: Submission) -> Screening:
    if submission.refused:
        return Screening(f"your submission could not be read: {submission.refused}")
    tests = module.student_tests.rstrip("/")
    if not submission.files and not submission.ignored:
        return Screening(f"your submission is empty: expected {_expected(module)} and your tests in {tests}/")
    for file in module.files:
        path = f"{STUDENT_TREE}/{file}"
        name = PurePosixPath(file).name
        if path not in submission.files:
            return Screening(f"no {name}: expected {path}, or {name} in any folder; {_found(submission, name)}",
                             [f"files taken: {', '.join(sorted(submission.names.values())) or 'none'}",
                              f"files ignored: {', '.join(submission.ignored) or 'none'}"])
        problem = parse_problem(submission.files[path])
        if problem is not None:
            shown = submission.names.get(path, name)
            return Screening(f"your {name} does not parse: {shown} {problem}")
    if not any(path.startswith(tests + "/") for path in submission.files):
        no_tests = (f"no tests: expected test files in {tests}/, or test_*.py at the top; "
                    f"{_found_tests(submission)}")
    else:
        no_tests = None
    unparsable = []
    for path, data in sorted(submission.files.items()):
        if path.startswith(tests + "/") and path.endswith(".py"):
            problem = parse_problem(data)
            if problem is not None:
                unparsable.append({"file": submission.names.get(path, path), "problem": problem})
    return Screening(unparsable=unparsable, no_tests=no_tests)


def parse_problem(source: bytes) -> str | None:
    """None when `source` is Python that parses, else "line N: message"."""
    try:
        compile(source, "<submission>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return f"line {error.lineno or '?'}: {error.msg}"
    except (ValueError, UnicodeDecodeError) as error:      # a NUL byte, bytes that are not text
        return f"is not Python source ({error})"
    except (RecursionError, MemoryError):
        return "is nested too deeply to read"
    return None


def _expected(module: Module) -> str:
    return ", ".join(f"{STUDENT_TREE}/{f}" for f in module.files)


def _found(submission: Submission, name: str) -> str:
    """What the submission holds that looks like the missing file."""
    everything = sorted(set(submission.names.values()) | set(submission.ignored))
    same = [n for n in everything if PurePosixPath(n).name == name]
    stem = PurePosixPath(name).stem
    alike = [n for n in everything if PurePosixPath(n).name.startswith(stem) and n.endswith(".py") and n not in same]
    if same:
        return f"found {', '.join(same[:5])}"
    if alike:
        return f"found {', '.join(alike[:5])} (named otherwise)"
    return f"found no file named {name}"


def _found_tests(submission: Submission) -> str:
    python = [n for n in submission.ignored if n.endswith(".py")]
    return f"found {', '.join(python[:5])} (not taken)" if python else "found no other Python file"
