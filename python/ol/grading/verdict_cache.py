"""The local check's memory of what was caught: a second `ol check` after an
edit re-runs only what the edit can change.

    cache = VerdictCache(root / ".ol" / "verdicts" / "L7.3.json", session, TestFolder(folder).snapshot(), time_limit=60.0)
    carried = cache.carried(variants)         # {variant key: the test that caught it}
    ...                                        # grade the rest
    cache.save(catches)                         # {variant key: test} of this check, with each test's code digest

The course tests' pass carries over too, when the student's code (and, without
--ref-deps, the modules it needs) is the same text as at that pass: an edit
of the tests cannot change it.

A kill carries over while the test that made it can run only the same code
as then: the test itself, the tests it names, its file's module code (imports,
helpers, fixtures) and the folder's other files (conftest.py, helpers, data),
compared by their text (ol.grading.suite_code), and while nothing that shapes
the grade has changed (the session's fingerprint: the reference, the mutants,
the grader's own code, and the limits: a test that times out on a mutant in
5 s may not in 60, nor run out of memory in 4 GiB as in 256 MiB), and while
that test is still graded (it passed on every correct run of this check).
So adding or editing one test of a one-file suite re-grades only what that
edit can change: the survivors, and the catches of tests whose code changed.
The correct implementations always run again in full: which tests are graded
is seen in every check.  A pitfall runs again until it has gone past every
test whose outcome on it the last check did not see with the same code; the
rest of its outcomes come from here (ol.grading.grader.PitfallSeen: each
while the test after it is the same too), so the report's "by" is a run to
the end's, for tests that do not depend on one another's side effects nor on
what else is collected.
Verdicts are deterministic (fixed hash seed, derandomized Hypothesis seeded
from each test's own source, one running order fixed by the suite's code),
so a warm check gives the cold check's grade for tests that do not depend on
one another's side effects; a kit test compares them over a sequence of edits.

Only `ol check` on the student's own machine uses it: never the isolated
check, never `ol grade` or the autograder, whose grade must not depend on
anything the student's machine kept.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from ol.core.files import write_whole
from ol.core.test_folder import Snapshot
from ol.grading.grader import PitfallSeen
from ol.grading.session import GradingSession
from ol.grading.suite_code import SuiteDigests

FORMAT = 5   # 4: "caught", was "kills"; 5: "pitfalls", each test's outcome on each pitfall


class VerdictCache:
    def __init__(self, path: Path, session: GradingSession, suite: Snapshot, *, time_limit: float,
                 memory_limit: int | None = None):
        self.path = Path(path)
        self.suite_path = session.suite_path(suite.path)        # how node ids name the folder
        # the limits shape a grade too: a crash out of memory or a timeout is a catch
        self.fingerprint = f"{session.fingerprint()} {float(time_limit)!r} {memory_limit!r}"
        self.digests = SuiteDigests(suite, self.suite_path)
        self.pitfalls: dict = {}
        self.entries, self.course = self._load()

    def _load(self) -> tuple[dict[str, dict], dict]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):   # RecursionError: a file nested too deep
            return {}, {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("fingerprint") != self.fingerprint \
                or data.get("folder") != self.suite_path:
            return {}, {}
        entries, course, pitfalls = data.get("caught", {}), data.get("course", {}), data.get("pitfalls", {})
        self.pitfalls = pitfalls if isinstance(pitfalls, dict) else {}
        return entries if isinstance(entries, dict) else {}, course if isinstance(course, dict) else {}

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

    def pitfalls_seen(self, keys: list[str]) -> dict[str, PitfallSeen]:
        """What the last check saw on each of these pitfalls, of the tests whose
        code is the same as then (a pitfall with a broken entry: none)."""
        seen = {}
        for key in keys:
            entry = self.pitfalls.get(key)
            if not isinstance(entry, dict) or not isinstance(entry.get("tests"), dict):
                continue
            try:   # a number JSON can hold but a float cannot (1e400 as an integer) is broken too
                cpu, seconds = (float(entry[name]) for name in ("cpu", "seconds")
                                if isinstance(entry.get(name), (int, float)) and not isinstance(entry[name], bool))
            except (ValueError, OverflowError):   # ValueError: one of them missing or not a number
                continue
            if not all(math.isfinite(n) and n >= 0 for n in (cpu, seconds)):
                continue
            failed, after = {}, {}
            for test, said in entry["tests"].items():
                # [its code's digest, failed, the test after it, that test's digest]: the test and the one
                # after it unchanged (the teardown a test runs depends on what the next one needs)
                if not (isinstance(said, list) and len(said) == 4 and isinstance(said[1], bool)
                        and said[0] is not None and said[0] == self.digests.of(test)
                        and (said[2] is None or (isinstance(said[2], str) and said[3] is not None
                                                 and said[3] == self.digests.of(said[2])))):
                    continue
                failed[test], after[test] = said[1], said[2]
            seen[key] = PitfallSeen(failed, after, cpu, seconds)
        return seen

    def save(self, catches: dict[str, str], pitfalls: dict[str, PitfallSeen] | None = None) -> None:
        """Remember these catches ({variant key: test}) and what was seen on each
        pitfall, with the code each test can run now; a failure to write only
        costs time."""
        entries = {}
        for key, test in catches.items():
            digest = self.digests.of(test)
            if digest is not None:
                entries[key] = {"test": test, "code": digest}
        seen = {key: {"tests": {test: [self.digests.of(test), failed, what.after.get(test),
                                       self.digests.of(what.after[test]) if what.after.get(test) else None]
                                for test, failed in what.outcomes.items()
                                if self.digests.of(test) is not None and test in what.after},
                      "cpu": what.cpu, "seconds": what.seconds}
                for key, what in (pitfalls or {}).items()}
        data = {"format": FORMAT, "fingerprint": self.fingerprint, "folder": self.suite_path,
                "caught": entries, "course": self.course, "pitfalls": seen}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(self.path, json.dumps(data, indent=1, sort_keys=True))
        except OSError:
            pass


def code_digest(student_source: str, overrides: dict, ref_deps: bool | str) -> str:
    """A hash of the code the course tests run on: the student's file, the
    student's files of the modules it needs that the reference does not serve,
    and where the needs come from (ref_deps: a policy of ol.core.deps, or a bool)."""
    return hashlib.sha256(json.dumps([student_source, overrides, ref_deps], sort_keys=True).encode()).hexdigest()
