"""The student's test folder, as every part of ol reads it: the static check
(ol.grading.static_check), the sandbox builder (ol.grading.session), the
re-check's digests (ol.grading.suite_code), and the submissions of `ol
submit` and `ol grade` (ol.core.submissions).  One model, so they cannot
disagree on which files a folder holds or which are tests.

    folder = TestFolder(root / "python/tests/l7-3-rope")
    folder.paths()          every path below it, files, folders and links, sorted
    folder.files()          its plain files (links are refused by read())
    folder.read(prefix)     {prefix/relative path: bytes}, as a sandbox is given them
    folder.digests()        {relative path: sha256 hex}

    snapshot = folder.snapshot()       the folder read once, into memory
    snapshot.entries                   (relative path, FILE | FOLDER | LINK | OTHER), sorted
    snapshot.files                     {relative path: bytes} of its plain files
    snapshot.python_files()            its .py files, relative
    snapshot.test_files()              the files pytest collects: test_*.py, *_test.py
    snapshot.read(prefix), .digests()  as the folder's own

`ol check` takes one snapshot and hands it to the static check, the verdict
cache and the sandboxes: what is judged is what runs, byte for byte, even if
the folder changes on disk in between.

Left out everywhere: caches that tools write beside the tests (pytest's,
Hypothesis's, Python's) and Jupyter's checkpoints, copies of a notebook's
files that pytest would otherwise collect twice.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
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
        return self.snapshot().read(prefix)

    def digests(self) -> dict[str, str]:
        """{relative path: sha256 hex} of every file (read())."""
        return self.snapshot().digests()

    def snapshot(self) -> Snapshot:
        """The folder read once: every entry's kind and every plain file's
        bytes.  More than MAX_SUITE_BYTES of files raises SuiteUnreadable
        (a file's size is looked at before it is read)."""
        entries, files, total = [], {}, 0
        for path in self.paths():
            name = self.relative(path)
            if path.is_symlink():
                entries.append((name, LINK))
            elif path.is_dir():
                entries.append((name, FOLDER))
            elif path.is_file():
                total += path.stat().st_size
                if total > MAX_SUITE_BYTES:
                    raise SuiteUnreadable(f"{self.path} holds more than {MAX_SUITE_BYTES >> 20} MiB: graded "
                                          "folders hold tests, not data")
                files[name] = path.read_bytes()
                entries.append((name, FILE))
            else:
                entries.append((name, OTHER))
        return Snapshot(self.path, tuple(entries), files)


FILE, FOLDER, LINK, OTHER = "file", "folder", "link", "other"   # an entry's kind in a Snapshot


@dataclass(frozen=True)
class Snapshot:
    """A test folder as read at one moment (TestFolder.snapshot)."""

    __test__ = False

    path: Path                                   # where it was read
    entries: tuple[tuple[str, str], ...]         # (relative path, kind), sorted as TestFolder.paths
    files: dict[str, bytes] = field(repr=False)  # relative path -> bytes, the plain files

    def python_files(self) -> list[str]:
        return [name for name in self.files if name.endswith(".py")]

    def test_files(self) -> list[str]:
        return [name for name in self.python_files() if is_test_file(name)]

    def read(self, prefix: str = "") -> dict[str, bytes]:
        """Every file as {prefix/relative path: bytes}; a link raises SuiteUnreadable."""
        for name, kind in self.entries:
            if kind == LINK:
                raise SuiteUnreadable(f"{self.path / name} is a symbolic link: graded folders may hold only "
                                      "plain files")
        return {str(PurePosixPath(prefix) / name) if prefix else name: data for name, data in self.files.items()}

    def digests(self) -> dict[str, str]:
        """{relative path: sha256 hex} of every file (read())."""
        return {name: hashlib.sha256(data).hexdigest() for name, data in self.read().items()}
