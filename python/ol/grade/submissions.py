"""A class's submissions, read safely: only the files a module's catalog entry
names, from folders, zips or tarballs, one per student.

    submissions = read_submissions(Path("submissions"), module)
    submissions[0].student, .files, .ignored, .error, .digest()

A submission holds the student's files at their checkout paths
(python/tinyllm/modern/rope.py, python/tests/l7-3-rope/...), possibly inside
one top folder, or directly at its root: rope.py beside test_*.py, or beside a
folder named like the test folder (l7-3-rope/) or tests/.  Everything else is
listed as ignored.  An archive entry with an absolute path, `..`, a link or a
device, or an archive that unpacks to more than MAX_BYTES, is refused for that
student alone (Submission.error), never extracted anywhere.
"""

from __future__ import annotations

import hashlib
import io
import re
import stat
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ol.catalog import STUDENT_TREE, Module

MAX_BYTES = 16 << 20
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
SKIPPED_PARTS = {"__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints", "__MACOSX", ".git", ".ol"}


class Refused(Exception):
    """A submission that cannot be taken safely; the message says why."""


@dataclass
class Submission:
    student: str                                    # a name safe for a file: alice, bob.smith
    source: Path                                    # the folder or archive it came from
    files: dict[str, bytes] = field(default_factory=dict)   # checkout path -> bytes
    ignored: list[str] = field(default_factory=list)
    error: str | None = None                        # why it could not be taken

    def digest(self) -> str:
        """sha256 over the files taken (paths and bytes)."""
        h = hashlib.sha256()
        for path in sorted(self.files):
            h.update(path.encode() + b"\0" + hashlib.sha256(self.files[path]).digest())
        return h.hexdigest()


def read_submissions(folder: Path, module: Module) -> list[Submission]:
    """One Submission per entry of `folder` (a folder, a .zip or a .tar.gz),
    by student name; entries of any other kind are refused by name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"SUBMISSIONS must be a folder with one entry per student; {folder} is not a folder")
    submissions, seen = [], {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        student = _student_name(entry)
        if student in seen:
            student = f"{student}-{seen[student] + 1}"
        seen[student] = seen.get(student, 0) + 1
        submission = Submission(student, entry)
        try:
            raw = _read_entry(entry)
            submission.files, submission.ignored = take(raw, module)
        except Refused as why:
            submission.error = f"{entry.name}: {why}"
        submissions.append(submission)
    return submissions


def _student_name(entry: Path) -> str:
    name = entry.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return re.sub(r"[^A-Za-z0-9._@-]+", "_", name).strip("._") or "student"


# ---- reading one entry, without ever writing it out ----------------------------------------


def _read_entry(entry: Path) -> dict[str, bytes]:
    """Every regular file of the entry, by its path inside it."""
    if entry.is_symlink():
        raise Refused("is a symbolic link; submit a folder or an archive")
    if entry.is_dir():
        return _read_folder(entry)
    name = entry.name.lower()
    if name.endswith(".zip"):
        return _read_zip(entry)
    if name.endswith((".tar.gz", ".tgz")):
        return _read_tar(entry)
    raise Refused("is neither a folder, a .zip nor a .tar.gz")


def _read_folder(folder: Path) -> dict[str, bytes]:
    files, total = {}, 0
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_symlink():
            raise Refused(f"holds a link ({relative}); submit plain files")
        if path.is_file():
            total += path.stat().st_size
            if total > MAX_BYTES:
                raise Refused(f"holds more than {MAX_BYTES >> 20} MiB")
            files[relative] = path.read_bytes()
    return files


def _safe(name: str) -> str:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise Refused(f"holds an absolute path ({name})")
    if ".." in path.parts:
        raise Refused(f"holds a path that leaves it ({name})")
    return path.as_posix()


def _read_zip(path: Path) -> dict[str, bytes]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise Refused(f"is not a readable zip ({error})") from None
    files, total = {}, 0
    with archive:
        for info in archive.infolist():
            name = _safe(info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise Refused(f"holds a link ({info.filename}); submit plain files")
            if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):   # no type bits: a plain file
                raise Refused(f"holds a special file ({info.filename})")
            if info.is_dir():
                continue
            total += info.file_size
            if total > MAX_BYTES:
                raise Refused(f"unpacks to more than {MAX_BYTES >> 20} MiB")
            try:
                files[name] = archive.read(info)[: MAX_BYTES + 1]
            except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as error:
                raise Refused(f"cannot read {info.filename} ({error})") from None
    return files


def _read_tar(path: Path) -> dict[str, bytes]:
    try:
        archive = tarfile.open(path, "r:gz")
    except (tarfile.TarError, OSError) as error:
        raise Refused(f"is not a readable .tar.gz ({error})") from None
    files, total = {}, 0
    with archive:
        try:
            for member in archive:
                name = _safe(member.name)
                if member.issym() or member.islnk():
                    raise Refused(f"holds a link ({member.name}); submit plain files")
                if member.isdir():
                    continue
                if not member.isfile():
                    raise Refused(f"holds a special file ({member.name})")
                total += member.size
                if total > MAX_BYTES:
                    raise Refused(f"unpacks to more than {MAX_BYTES >> 20} MiB")
                extracted = archive.extractfile(member)
                files[name] = extracted.read() if extracted else b""
        except (tarfile.TarError, OSError, EOFError) as error:
            raise Refused(f"is not a readable .tar.gz ({error})") from None
    return files


# ---- which files are the student's work ------------------------------------------------------


def take(raw: dict[str, bytes], module: Module) -> tuple[dict[str, bytes], list[str]]:
    """(files at their checkout paths, paths ignored) for `module`."""
    raw = {name: data for name, data in raw.items() if not SKIPPED_PARTS.intersection(PurePosixPath(name).parts)}
    raw = _without_single_top_folder(raw)
    module_files = {f"{STUDENT_TREE}/{f}" for f in module.files}
    tests = module.student_tests.rstrip("/")
    taken, ignored = {}, []
    checkout_layout = any(name in module_files or name.startswith(tests + "/") for name in raw)
    by_basename = {PurePosixPath(f).name: f for f in module_files}
    tests_names = (PurePosixPath(tests).name, "tests")
    for name, data in sorted(raw.items()):
        path = PurePosixPath(name)
        if name in module_files or name.startswith(tests + "/"):
            taken[name] = data
        elif checkout_layout:
            ignored.append(name)
        elif len(path.parts) == 1 and name in by_basename:
            taken[by_basename[name]] = data
        elif path.parts[0] in tests_names and len(path.parts) > 1:
            taken[f"{tests}/{PurePosixPath(*path.parts[1:]).as_posix()}"] = data
        elif len(path.parts) == 1 and path.suffix == ".py":
            taken[f"{tests}/{name}"] = data        # test files and helpers beside the module file
        else:
            ignored.append(name)
    return taken, ignored


def _without_single_top_folder(raw: dict[str, bytes]) -> dict[str, bytes]:
    """An archive of one folder (alice/python/...) is read from inside it."""
    tops = {PurePosixPath(name).parts[0] for name in raw}
    if len(tops) == 1 and all(len(PurePosixPath(name).parts) > 1 for name in raw):
        top = tops.pop()
        if top not in ("python", "tests"):
            return {PurePosixPath(name).relative_to(top).as_posix(): data for name, data in raw.items()}
    return raw


def archive_bytes(files: dict[str, bytes]) -> bytes:
    """The files as a zip (used to ship a submission to a worker)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(files.items()):
            archive.writestr(name, data)
    return buffer.getvalue()
