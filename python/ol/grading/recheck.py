"""The local check's memory of what was caught: a second `ol check` after an
edit re-runs only what the edit can change.

    cache = VerdictCache(root / ".ol" / "verdicts" / "L7.3.json", session, tests_folder)
    carried = cache.carried(variants)         # {variant key: the test that caught it}
    ...                                        # grade the rest
    cache.save(new_kills, by, collected)        # and which tests fail on each pitfall (ol.grading.pitfall_tests)

The course tests' pass carries over too, when the student's code (and, without
--ref-deps, the modules it needs) is the same text as at that pass: an edit
of the tests cannot change it.

A kill carries over while the test that made it can run only the same code
as then: the test itself, the tests it names, its file's module code (imports,
helpers, fixtures) and the folder's other files (conftest.py, helpers, data),
compared by their text (ol.grading.suite_code), and while nothing that shapes
the grade has changed (the session's fingerprint: the reference, the mutants,
the grader's own code).  So adding or editing one test of a one-file suite
re-grades only what that edit can change: the survivors, and the kills of
tests whose code changed.  The correct implementations always run again, and
so do their repeats among the variants.  Verdicts are deterministic (fixed
hash seed, derandomized Hypothesis seeded from each test's own source), so a
warm check gives the cold check's grade for tests that do not depend on one
another's side effects (neither does a cold check's, whose test order
changes as it learns); a kit test compares them over a sequence of edits.

Only `ol check` on the student's own machine uses it: never the isolated
check, never `ol grade` or the autograder, whose grade must not depend on
anything the student's machine kept.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ol.files import write_whole
from ol.grading.pitfall_tests import Known
from ol.grading.session import GradingSession
from ol.grading.suite_code import SuiteDigests

FORMAT = 2


class VerdictCache:
    def __init__(self, path: Path, session: GradingSession, tests: Path):
        self.path, self.tests = Path(path), Path(tests)
        self.suite_path = session.suite_path(tests)            # how node ids name the folder
        self.fingerprint = session.fingerprint()
        self.digests = SuiteDigests(self.tests, self.suite_path)
        self.entries, self.course, self.memory = self._load()

    def _load(self) -> tuple[dict[str, dict], dict, dict]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}, {}, {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("fingerprint") != self.fingerprint \
                or data.get("folder") != self.suite_path:
            return {}, {}, {}
        entries, course, memory = data.get("kills", {}), data.get("course", {}), data.get("pitfall_tests", {})
        return (entries if isinstance(entries, dict) else {}, course if isinstance(course, dict) else {},
                memory if isinstance(memory, dict) else {})

    def course_passed(self, code: str) -> dict[str, int] | None:
        """{"passed": n, "total": n} if the course tests all passed on this
        code (code_digest()) at the last check, else None."""
        counts = self.course.get("counts")
        if self.course.get("code") != code or not isinstance(counts, dict):
            return None
        passed, total = counts.get("passed"), counts.get("total")
        if not (isinstance(passed, int) and passed == total and total > 0):
            return None
        return {"passed": passed, "total": total}

    def keep_course_pass(self, code: str, counts: dict[str, int]) -> None:
        """Remember that the course tests all passed on this code (saved by save())."""
        self.course = {"code": code, "counts": dict(counts)}

    def carried(self, keys: list[str]) -> dict[str, str]:
        """{variant key: the test that caught it} for every kill still valid:
        its test's code is the same as when it caught the variant."""
        carried = {}
        for key in keys:
            entry = self.entries.get(key)
            if not isinstance(entry, dict) or not isinstance(entry.get("test"), str):
                continue
            digest = self.digests.of(entry["test"])
            if digest is not None and entry.get("code") == digest:
                carried[key] = entry["test"]
        return carried

    def known(self) -> Known:
        """The tests that failed on each pitfall at the last check, with each
        test's code then (ol.grading.pitfall_tests asks only the others)."""
        code, by = self.memory.get("code", {}), self.memory.get("by", {})
        if not isinstance(code, dict) or not isinstance(by, dict):
            return Known()
        return Known({t: d for t, d in code.items() if isinstance(d, str)},
                     {k: [t for t in v if isinstance(t, str)] for k, v in by.items() if isinstance(v, list)})

    def code(self, test: str) -> str | None:
        """The digest of the code a test can run, now."""
        return self.digests.of(test)

    def save(self, kills: dict[str, str], by: dict[str, tuple[str, ...]] | None = None,
             collected: list[str] = ()) -> None:
        """Remember these kills ({variant key: test}), and the tests that fail
        on each pitfall among the `collected` ones; a failure to write only costs time."""
        entries = {}
        for key, test in kills.items():
            digest = self.digests.of(test)
            if digest is not None:
                entries[key] = {"test": test, "code": digest}
        code = {test: digest for test in collected if (digest := self.digests.of(test)) is not None}
        data = {"format": FORMAT, "fingerprint": self.fingerprint, "folder": self.suite_path,
                "kills": entries, "course": self.course,
                "pitfall_tests": {"code": code, "by": {key: list(tests) for key, tests in (by or {}).items()}}}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(self.path, json.dumps(data, indent=1, sort_keys=True))
        except OSError:
            pass


def code_digest(student_source: str, overrides: dict, ref_deps: bool) -> str:
    """A hash of the code the course tests run on: the student's file, and the
    student's files of the modules it needs unless they come from the reference."""
    return hashlib.sha256(json.dumps([student_source, overrides, ref_deps], sort_keys=True).encode()).hexdigest()
