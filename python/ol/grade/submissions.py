"""A class's submissions, read safely: only the files a module's catalog entry
names, from folders, zips or tarballs, one per student.

    submissions = read_submissions(Path("submissions"), module)
    s = submissions[0]
    s.student     a name unique in the class and safe as a file name
    s.source      the entry it came from, as it is named in SUBMISSIONS
    s.files       checkout path -> bytes (python/tinyllm/modern/rope.py, ...)
    s.names       checkout path -> the file's name in the submission (the student's words)
    s.ignored     names in the submission that were not taken
    s.submitted   the entry's time (an archive's own, a folder's newest file), or None
    s.refused     why the entry could not be taken (the student's words), or None

A submission holds the student's files at their checkout paths
(python/tinyllm/modern/rope.py, python/tests/l7-3-rope/...), possibly inside
one top folder, or directly at its root: rope.py beside test_*.py, or beside a
folder named like the test folder (l7-3-rope/) or tests/; another .py file
at the root is taken as a helper only when a test imports it.  Everything else
is listed as ignored.

Nothing is ever extracted.  An entry is refused, for that student alone, when
it holds an absolute path, `..`, a link or a special file, a name that is not
UTF-8 or longer than a file system takes, the same path twice or as a file
and a folder, more than MAX_MEMBERS files and folders, or more than MAX_BYTES
(counted while reading, so a bomb is never read whole: a tarball's
decompressed stream is cut at its budget, a zip's directory is sized before
it is parsed); or when it cannot be read at all.

Names.  A student is named by the entry's name without its archive suffix
when that name is plain (letters, digits, `._@-`, at most 100 characters),
unique in the class (ignoring case), and not one of the result files'
(grades, summary).  Any other entry gets its cleaned name, `+` and 8 hex
digits of the sha256 of its full name: `bob/` and `bob.zip` become
`bob+81b637d8` and `bob+e7f62bc2`, and `bob-2.zip` stays `bob-2`.  A plain
name never holds `+`, so a made name cannot meet a real one, and a name
depends only on its own entry and whether another entry shares its stem.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import stat
import tarfile
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ol.catalog import STUDENT_TREE, Module

MAX_BYTES = 16 << 20             # what one submission may hold, unpacked
MAX_MEMBERS = 1000               # files and folders in one submission
MAX_PART_BYTES = 255             # one name in a path (Linux's NAME_MAX)
MAX_PATH_BYTES = 1024            # a whole path inside a submission
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
SKIPPED_PARTS = {"__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints", "__MACOSX", ".git", ".ol",
                 ".DS_Store"}
RESERVED_NAMES = {"grades", "summary"}     # DIR/grades.csv, DIR/summary.md sit beside <student>.md
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,99}")


class Refused(Exception):
    """A submission that cannot be taken safely; the message says why, in the
    student's words (it follows the entry's name: "fay.zip holds ...")."""


@dataclass
class Submission:
    student: str
    source: str
    path: Path
    files: dict[str, bytes] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    submitted: float | None = None
    refused: str | None = None

    def digest(self) -> str:
        """sha256 over the files taken (paths and bytes)."""
        h = hashlib.sha256()
        for path in sorted(self.files):
            h.update(path.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(self.files[path]).digest())
        return h.hexdigest()


def read_submissions(folder: Path, module: Module) -> list[Submission]:
    """One Submission per entry of `folder` (a folder, a .zip or a .tar.gz),
    by student name.  Never raises for one entry: what cannot be read is
    that submission's `refused`."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"SUBMISSIONS must be a folder with one entry per student; {folder} is not a folder")
    entries = sorted(e for e in folder.iterdir() if not e.name.startswith(".") and e.name not in SKIPPED_PARTS)
    names = student_names([e.name for e in entries])
    return [read_submission(entry, module, names[entry.name]) for entry in entries]


def read_submission(entry: Path, module: Module, student: str) -> Submission:
    submission = Submission(student, shown(entry.name), entry)
    try:
        submission.submitted = entry.lstat().st_mtime     # the entry's own time, even if it cannot be read
        raw, submission.submitted = _read_entry(entry)
        submission.files, submission.names, submission.ignored = take(raw, module)
    except Refused as why:
        submission.refused = f"{submission.source} {why}"
    except OSError as error:     # its own message may hold the instructor's paths: never shown
        submission.refused = f"{submission.source} could not be read ({error.strerror or type(error).__name__})"
    except Exception as error:  # noqa: BLE001 (one unreadable entry must never stop the class)
        submission.refused = f"{submission.source} could not be read ({type(error).__name__})"
    return submission


def student_names(entries: list[str]) -> dict[str, str]:
    """{entry name: student name}: unique, stable, and a made name never equal
    to a plain one (the module's docstring says how)."""
    stems = {entry: _stem(entry) for entry in entries}
    shared = Counter(stem.lower() for stem in stems.values())
    names = {}
    for entry, stem in stems.items():
        plain = PLAIN_NAME.fullmatch(stem) and shared[stem.lower()] == 1 and stem.lower() not in RESERVED_NAMES
        names[entry] = stem if plain else _made_name(stem, entry, 8)
    if len({n.lower() for n in names.values()}) < len(names):       # 8 hex digits met: use 32
        names = {e: (n if "+" not in n else _made_name(stems[e], e, 32)) for e, n in names.items()}
    return names


def _stem(entry: str) -> str:
    for suffix in ARCHIVE_SUFFIXES:
        if entry.lower().endswith(suffix) and len(entry) > len(suffix):
            return entry[: -len(suffix)]
    return entry


def _made_name(stem: str, entry: str, digits: int) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._@-]+", "_", stem).strip("._-")[:60] or "student"
    return f"{cleaned}+{hashlib.sha256(entry.encode('utf-8', 'surrogateescape')).hexdigest()[:digits]}"


def shown(name: str) -> str:
    """A file name as text that can always be printed and written (a byte that
    is not UTF-8 becomes U+FFFD)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# ---- reading one entry, without ever writing it out ----------------------------------------


class _Budget:
    """What a submission may still hold: members and bytes."""

    def __init__(self):
        self.members, self.bytes = 0, 0
        self.seen: set[str] = set()

    def member(self) -> None:
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise Refused(f"holds more than {MAX_MEMBERS} files and folders; submit only your work")

    def take(self, size: int) -> int:
        """Count `size` bytes; return how many more may be read."""
        self.bytes += size
        if self.bytes > MAX_BYTES:
            raise Refused(f"unpacks to more than {MAX_BYTES >> 20} MiB; submit only your work")
        return MAX_BYTES - self.bytes

    def file(self, name: str, data: bytes, files: dict[str, bytes]) -> None:
        if name in files:
            raise Refused(f"holds {name} twice")
        files[name] = data


def _read_entry(entry: Path) -> tuple[dict[str, bytes], float | None]:
    """Every regular file of the entry, by its path inside it, and the entry's time."""
    if entry.is_symlink():
        raise Refused("is a symbolic link; submit a folder or an archive")
    if entry.is_dir():
        return _read_folder(entry)
    name = entry.name.lower()
    if not entry.is_file():
        raise Refused("is neither a folder, a .zip nor a .tar.gz")
    if entry.stat().st_size > MAX_BYTES:
        raise Refused(f"is larger than {MAX_BYTES >> 20} MiB; submit only your work")
    if name.endswith(".zip"):
        files = _read_zip(entry)
    elif name.endswith((".tar.gz", ".tgz")):
        files = _read_tar(entry)
    else:
        raise Refused("is neither a folder, a .zip nor a .tar.gz")
    _no_file_is_a_folder(files)
    return files, entry.stat().st_mtime


def _read_folder(folder: Path) -> tuple[dict[str, bytes], float | None]:
    files, budget, newest = {}, _Budget(), None
    for parent, dirs, names in os.walk(folder, onerror=_raise):
        dirs.sort()
        for name in sorted(dirs + names):
            path = Path(parent) / name
            relative = checked_name(path.relative_to(folder).as_posix())
            budget.member()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                raise Refused(f"holds a link ({relative}); submit plain files")
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode):
                raise Refused(f"holds a special file ({relative})")
            budget.take(info.st_size)
            with open(path, "rb") as file:
                data = file.read(MAX_BYTES + 1)
            budget.take(max(0, len(data) - info.st_size))        # a file that grew while read
            budget.file(relative, data, files)
            newest = max(newest or info.st_mtime, info.st_mtime)
    return files, newest if newest is not None else folder.stat().st_mtime


def _raise(error: OSError) -> None:
    raise error


def checked_name(name: str) -> str:
    """A member's path as a relative POSIX path, or Refused: not UTF-8, absolute,
    leaving the submission, too long for a file system."""
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        raise Refused(f"holds a file name that is not UTF-8 ({shown(name)}); rename it") from None
    if "\0" in name:
        raise Refused(f"holds a file name with a NUL character ({name!r})")
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or re.match(r"^[A-Za-z]:", name):
        raise Refused(f"holds an absolute path ({name})")
    if ".." in path.parts:
        raise Refused(f"holds a path that leaves it ({name})")
    if len(encoded) > MAX_PATH_BYTES or any(len(part.encode()) > MAX_PART_BYTES for part in path.parts):
        raise Refused(f"holds a file name too long for a file system ({name[:40]}...: at most {MAX_PART_BYTES} "
                      f"bytes a name, {MAX_PATH_BYTES} a path)")
    return path.as_posix()


def _no_file_is_a_folder(files: dict[str, bytes]) -> None:
    folders = {str(parent) for name in files for parent in PurePosixPath(name).parents}
    clash = sorted(folders.intersection(files))
    if clash:
        raise Refused(f"holds {clash[0]} both as a file and as a folder")


def _read_zip(path: Path) -> dict[str, bytes]:
    members, directory = _zip_directory_size(path)
    if members > MAX_MEMBERS or directory > MAX_MEMBERS * 2048:
        raise Refused(f"holds more than {MAX_MEMBERS} files and folders; submit only your work")
    files, budget = {}, _Budget()
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                budget.member()
                name = checked_name(info.filename)
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise Refused(f"holds a link ({info.filename}); submit plain files")
                if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):   # no type bits: a file
                    raise Refused(f"holds a special file ({info.filename})")
                if info.is_dir():
                    continue
                left = budget.take(info.file_size)
                with archive.open(info) as member:                  # file_size may lie: read at most what is left
                    data = member.read(left + info.file_size + 1)
                budget.take(len(data) - info.file_size)
                budget.file(name, data, files)
    except Refused:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, RuntimeError, NotImplementedError,
            zlib.error, ValueError) as error:
        raise Refused(f"is not a readable zip ({error})") from None
    return files


def _zip_directory_size(path: Path) -> tuple[int, int]:
    """(members, bytes of the central directory) from the zip's end record,
    read before zipfile parses the directory: a zip of a million entries is
    refused from its last few bytes.  A zip64 end record counts as too many."""
    size = path.stat().st_size
    with open(path, "rb") as file:
        file.seek(max(0, size - (22 + 0xFFFF)))
        tail = file.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        raise Refused("is not a readable zip (no end of central directory)")
    members = int.from_bytes(tail[at + 10:at + 12], "little")
    directory = int.from_bytes(tail[at + 12:at + 16], "little")
    return (MAX_MEMBERS + 1 if members == 0xFFFF else members), directory


class _Capped(io.RawIOBase):
    """A decompressed stream that refuses to give more than `limit` bytes:
    a tarball is read through it, so no header, long name or padding of a bomb
    is ever read beyond the budget."""

    def __init__(self, stream, limit: int):
        self.stream, self.left = stream, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left <= 0:
            raise Refused(f"unpacks to more than {MAX_BYTES >> 20} MiB; submit only your work")
        view = memoryview(buffer)[: min(len(buffer), self.left)]
        data = self.stream.read(len(view))
        view[: len(data)] = data
        self.left -= len(data)
        return len(data)


# A tarball's stream besides its files' bytes: per member a header, perhaps a
# long-name or pax header and its data, and padding to 512 bytes; then the end.
TAR_OVERHEAD = MAX_MEMBERS * 4 * 512 + 20 * 512


def _read_tar(path: Path) -> dict[str, bytes]:
    files, budget = {}, _Budget()
    try:
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as unzipped:
            stream = io.BufferedReader(_Capped(unzipped, MAX_BYTES + TAR_OVERHEAD))
            with tarfile.open(fileobj=stream, mode="r|") as archive:        # a stream: members in order, once
                for member in archive:
                    budget.member()
                    name = checked_name(member.name)
                    if member.issym() or member.islnk():
                        raise Refused(f"holds a link ({member.name}); submit plain files")
                    if member.isdir():
                        continue
                    if not member.isfile():
                        raise Refused(f"holds a special file ({member.name})")
                    budget.take(member.size)
                    extracted = archive.extractfile(member)
                    budget.file(name, extracted.read() if extracted else b"", files)
    except Refused:
        raise
    except (tarfile.TarError, OSError, EOFError, zlib.error, ValueError) as error:
        raise Refused(f"is not a readable .tar.gz ({error})") from None
    return files


# ---- which files are the student's work ------------------------------------------------------


def take(raw: dict[str, bytes], module: Module) -> tuple[dict[str, bytes], dict[str, str], list[str]]:
    """(files at their checkout paths, {checkout path: name in the submission},
    names ignored) for `module`."""
    kept = {name: name for name in raw if not SKIPPED_PARTS.intersection(PurePosixPath(name).parts)}
    inside = _inside_single_top_folder(list(kept))        # {name inside: name submitted}
    module_files = {f"{STUDENT_TREE}/{f}" for f in module.files}
    tests = module.student_tests.rstrip("/")
    checkout_layout = any(name in module_files or name.startswith(tests + "/") for name in inside)
    by_basename = {PurePosixPath(f).name: f for f in module_files}
    tests_names = (PurePosixPath(tests).name, "tests")
    taken: dict[str, str] = {}          # checkout path -> name submitted
    helpers: dict[str, str] = {}        # top-level .py files a test may import
    ignored = []
    for name, submitted in sorted(inside.items()):
        path = PurePosixPath(name)
        if name in module_files or name.startswith(tests + "/"):
            target = name
        elif len(path.parts) == 1 and name in by_basename and by_basename[name] not in inside:
            target = by_basename[name]            # rope.py at the top, whatever the tests' layout
        elif checkout_layout:
            target = None
        elif path.parts[0] in tests_names and len(path.parts) > 1:
            target = f"{tests}/{PurePosixPath(*path.parts[1:]).as_posix()}"
        elif len(path.parts) == 1 and _is_test_file(name):
            target = f"{tests}/{name}"
        elif len(path.parts) == 1 and path.suffix == ".py":
            helpers[name] = submitted
            continue
        else:
            target = None
        if target is None:
            ignored.append(submitted)
        elif target in taken:
            raise Refused(f"holds both {taken[target]} and {submitted}, which are the same file of {module.id} "
                          f"({target}); keep one")
        else:
            taken[target] = submitted
    wanted = _imported_modules([raw[submitted] for target, submitted in taken.items() if target.startswith(tests + "/")])
    for name, submitted in helpers.items():
        if PurePosixPath(name).stem in wanted and f"{tests}/{name}" not in taken:
            taken[f"{tests}/{name}"] = submitted
        else:
            ignored.append(submitted)
    _no_file_is_a_folder(dict.fromkeys(taken, b""))
    ignored += [name for name in raw if name not in kept]
    return {target: raw[submitted] for target, submitted in taken.items()}, taken, sorted(ignored)


def _is_test_file(name: str) -> bool:
    return name == "conftest.py" or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")))


def _inside_single_top_folder(names: list[str]) -> dict[str, str]:
    """An archive of one folder (alice/python/...) is read from inside it."""
    tops = {PurePosixPath(name).parts[0] for name in names}
    if len(tops) == 1 and all(len(PurePosixPath(name).parts) > 1 for name in names):
        top = tops.pop()
        if top not in (STUDENT_TREE, "tests"):
            return {PurePosixPath(name).relative_to(top).as_posix(): name for name in names}
    return {name: name for name in names}


def _imported_modules(sources: list[bytes]) -> set[str]:
    """Top-level module names the given test files import (read, never run):
    `import helpers`, `from helpers import x`, `from . import helpers`."""
    import ast

    wanted: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wanted.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.module:
                    wanted.add(node.module.split(".")[0])
                if node.level:
                    wanted.update(alias.name for alias in node.names)
                    wanted.add("__init__")
    return wanted


def archive_bytes(files: dict[str, bytes]) -> bytes:
    """The files as a zip (used to ship a submission to a worker)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(files.items()):
            archive.writestr(name, data)
    return buffer.getvalue()
