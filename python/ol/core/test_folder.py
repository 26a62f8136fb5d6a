"""The student's test folder, as every part of ol reads it: the static check
(ol.grading.static_check), the sandbox builder (ol.grading.session's
read_folder), the re-check's digests (ol.grading.suite_code), and the
submissions of `ol submit` and `ol grade` (ol.core.submissions).  One model,
so they cannot disagree on which files a folder holds or which are tests.

    folder = TestFolder(root / "python/tests/l7-3-rope")
    folder.paths()          every path below it, files, folders and links, sorted
    folder.files()          its plain files (links are refused by read())
    folder.python_files()   its .py files
    folder.test_files()     the files pytest collects: test_*.py, *_test.py
    folder.read(prefix)     {prefix/relative path: bytes}, as a sandbox is given them
    folder.digests()        {relative path: sha256 hex}

Left out everywhere: caches that tools write beside the tests (pytest's,
Hypothesis's, Python's) and Jupyter's checkpoints, copies of a notebook's
files that pytest would otherwise collect twice.
"""

from __future__ import annotations

import hashlib
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from ol.core.errors import OlError

SKIPPED_FOLDERS = frozenset({"__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints"})
# pytest's defaults `python_files`, `python_functions`, `python_classes` (the
# sandboxes' pytest.ini set none)
TEST_FILE_PATTERNS = ("test_*.py", "*_test.py")
TEST_FUNCTION_PREFIX, TEST_CLASS_PREFIX = "test", "Test"
MAX_SUITE_BYTES = 16 << 20


class SuiteUnreadable(OlError):
    """A file of the tests to grade cannot be taken (not UTF-8, too large, a link)."""

    exit_code = 1


def is_test_file(name: str) -> bool:
    """Whether pytest collects the file `name` (a path; its last part counts)."""
    base = PurePosixPath(name).name
    return any(fnmatchcase(base, pattern) for pattern in TEST_FILE_PATTERNS)


class TestFolder:
    """A folder of tests, read by the rules above."""

    __test__ = False            # a class, not a test of pytest's: its name only looks like one

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def paths(self) -> list[Path]:
        """Every path below the folder (files, folders, links), skipped folders left out."""
        return [path for path in sorted(self.path.rglob("*"))
                if not SKIPPED_FOLDERS.intersection(path.relative_to(self.path).parts)]

    def files(self) -> list[Path]:
        """The plain files below the folder (a link is not one)."""
        return [path for path in self.paths() if path.is_file() and not path.is_symlink()]

    def python_files(self) -> list[Path]:
        return [path for path in self.files() if path.suffix == ".py"]

    def test_files(self) -> list[Path]:
        return [path for path in self.python_files() if is_test_file(path.name)]

    def relative(self, path: Path) -> str:
        """`path`'s name inside the folder, with forward slashes."""
        return path.relative_to(self.path).as_posix()

    def read(self, prefix: str = "") -> dict[str, bytes]:
        """Every file as {prefix/relative path: bytes}.  A link, or more than
        MAX_SUITE_BYTES in all, raises SuiteUnreadable."""
        files: dict[str, bytes] = {}
        total = 0
        for path in self.paths():
            if path.is_symlink():
                raise SuiteUnreadable(f"{path} is a symbolic link: graded folders may hold only plain files")
            if not path.is_file():
                continue
            data = path.read_bytes()
            total += len(data)
            if total > MAX_SUITE_BYTES:
                raise SuiteUnreadable(f"{self.path} holds more than {MAX_SUITE_BYTES >> 20} MiB: graded folders "
                                      "hold tests, not data")
            files[str(PurePosixPath(prefix) / self.relative(path)) if prefix else self.relative(path)] = data
        return files

    def digests(self) -> dict[str, str]:
        """{relative path: sha256 hex} of every file (read())."""
        return {name: hashlib.sha256(data).hexdigest() for name, data in self.read().items()}
