"""The local check's memory of what was caught: a second `ol check` after an
edit re-runs only what the edit can change.

    cache = VerdictCache(root / ".ol" / "verdicts" / "L7.3.json", session, tests_folder)
    carried = cache.carried(variants)         # {variant key: the test that caught it}
    ...                                        # grade the rest
    cache.save(new_kills)

The course tests' pass carries over too, when the student's code (and, without
--ref-deps, the modules it needs) is the same text as at that pass: an edit
of the tests cannot change it.

A kill carries over when the test that caught the variant lives in a file
that has not changed since, the folder's other files (conftest.py, helpers,
data) have not changed, and nothing that shapes the grade has changed (the
session's fingerprint: the reference, the mutants, the grader's own code).
Everything else is graded again: survivors, and kills whose test file was
edited.  The correct implementations always run again, and so do their
repeats among the variants.  Verdicts are deterministic (fixed hash seed,
derandomized Hypothesis), so a warm check gives the cold check's grade; a
kit test compares them over a sequence of edits.

Only `ol check` on the student's own machine uses it: never the isolated
check, never `ol grade` or the autograder, whose grade must not depend on
anything the student's machine kept.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath

from ol.grading.session import SKIPPED_FOLDERS, GradingSession

FORMAT = 1


class VerdictCache:
    def __init__(self, path: Path, session: GradingSession, tests: Path):
        self.path, self.tests = Path(path), Path(tests)
        self.kit_path = session.suite_path(tests)            # how node ids name the folder
        self.fingerprint = session.fingerprint()
        self.files = _file_hashes(self.tests)
        self.shared = hashlib.sha256(json.dumps(
            sorted((name, digest) for name, digest in self.files.items() if not _is_test_file(name))).encode()
        ).hexdigest()
        self.entries, self.course = self._load()

    def _load(self) -> tuple[dict[str, dict], dict]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}, {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("fingerprint") != self.fingerprint \
                or data.get("folder") != self.kit_path or data.get("shared") != self.shared:
            return {}, {}
        entries, course = data.get("kills", {}), data.get("course", {})
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
        """{variant key: the test that caught it} for every kill still valid."""
        carried = {}
        for key in keys:
            entry = self.entries.get(key)
            if not isinstance(entry, dict):
                continue
            test, digest = entry.get("test"), entry.get("file_sha256")
            file = self._file_of(test) if isinstance(test, str) else None
            if file is not None and digest == self.files.get(file):
                carried[key] = test
        return carried

    def save(self, kills: dict[str, str]) -> None:
        """Remember these kills ({variant key: test}); a failure to write only costs time."""
        entries = {}
        for key, test in kills.items():
            file = self._file_of(test)
            if file is not None and file in self.files:
                entries[key] = {"test": test, "file_sha256": self.files[file]}
        data = {"format": FORMAT, "fingerprint": self.fingerprint, "folder": self.kit_path, "shared": self.shared,
                "kills": entries, "course": self.course}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
            tmp.replace(self.path)
        except OSError:
            pass

    def _file_of(self, test: str) -> str | None:
        """The file (relative to the test folder) a node id names."""
        path = test.split("::", 1)[0]
        prefix = self.kit_path.rstrip("/") + "/"
        return path[len(prefix):] if path.startswith(prefix) else None


def code_digest(student_source: str, overrides: dict, ref_deps: bool) -> str:
    """A hash of the code the course tests run on: the student's file, and the
    student's files of the modules it needs unless they come from the reference."""
    return hashlib.sha256(json.dumps([student_source, overrides, ref_deps], sort_keys=True).encode()).hexdigest()


def _file_hashes(folder: Path) -> dict[str, str]:
    hashes = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and not SKIPPED_FOLDERS.intersection(relative.parts):
            hashes[relative.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def _is_test_file(name: str) -> bool:
    stem = PurePosixPath(name).name
    return stem.endswith(".py") and (stem.startswith("test_") or stem.endswith("_test.py"))
