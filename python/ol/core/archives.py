"""One entry of a class's submissions read into memory, safely: a folder, a
.zip, a .tar or a .tar.gz, nothing ever extracted or written out.

    files, submitted = read_entry(Path("submissions/bob.zip"))   # {path inside: bytes}, its time
    # or Refused("holds a path that leaves it (../x.py)"): the reason, in the student's words

An entry is refused when it holds an absolute path, `..`, a link or a
special file, a name that is not UTF-8 or longer than a file system takes,
the same path twice or as both a file and a folder, more than MAX_MEMBERS
files and folders, or more than MAX_BYTES.  Both limits are counted while
reading, so a bomb is never read whole: a tarball is read as a stream whose
decompressed bytes are cut at the budget (headers and long names included),
and a zip's member count and directory size are read from its end record
before zipfile parses the directory.  A 6 MB .tar.gz of a million empty
members is refused after its first thousand headers.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import tarfile
import zipfile
import zlib
from contextlib import nullcontext
from pathlib import Path, PurePosixPath

MAX_BYTES = 16 << 20             # what one submission may hold, unpacked
MAX_MEMBERS = 1000               # files and folders in one submission
MAX_PART_BYTES = 255             # one name in a path (Linux's NAME_MAX)
MAX_PATH_BYTES = 1024            # a whole path inside a submission
# A bound on a zip's central directory: per member a 46-byte entry, its name
# (at most MAX_PATH_BYTES) and room for its extra field and comment.
MAX_DIRECTORY_BYTES_PER_MEMBER = 2048

# The zip's end of central directory record (PKWARE's APPNOTE, 4.3.16): its
# signature, its size without the comment that may follow it, that comment's
# largest size, and where in the record the member count (2 bytes) and the
# directory's size (4 bytes) stand, little-endian.  A zip64 archive leaves
# ZIP64_MARK as its member count there.
ZIP_END_SIGNATURE = b"PK\x05\x06"
ZIP_END_BYTES = 22
ZIP_COMMENT_MAX = 0xFFFF
ZIP_END_MEMBERS, ZIP_END_DIRECTORY = slice(10, 12), slice(12, 16)
ZIP64_MARK = 0xFFFF


class Refused(Exception):
    """An entry that cannot be taken safely; the message says why, in the
    student's words (it follows the entry's name: "fay.zip holds ...")."""


def shown(name: str) -> str:
    """A file name as text that can always be printed and written (a byte that
    is not UTF-8 becomes U+FFFD)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


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


NOT_AN_ARCHIVE = "is neither a folder, a .zip, a .tar nor a .tar.gz"


def read_entry(entry: Path) -> tuple[dict[str, bytes], float | None]:
    """Every regular file of the entry, by its path inside it, and the entry's time."""
    if entry.is_symlink():
        raise Refused("is a symbolic link; submit a folder or an archive")
    if entry.is_dir():
        return _read_folder(entry)
    name = entry.name.lower()
    if not entry.is_file():
        raise Refused(NOT_AN_ARCHIVE)
    if entry.stat().st_size > MAX_BYTES:
        raise Refused(f"is larger than {MAX_BYTES >> 20} MiB; submit only your work")
    if name.endswith(".zip"):
        files = _read_zip(entry)
    elif name.endswith((".tar.gz", ".tgz")):
        files = _read_tar(entry, compressed=True)
    elif name.endswith(".tar"):
        files = _read_tar(entry, compressed=False)
    else:
        raise Refused(NOT_AN_ARCHIVE)
    no_file_is_a_folder(files)
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


def no_file_is_a_folder(files: dict[str, bytes]) -> None:
    folders = {str(parent) for name in files for parent in PurePosixPath(name).parents}
    clash = sorted(folders.intersection(files))
    if clash:
        raise Refused(f"holds {clash[0]} both as a file and as a folder")


def _read_zip(path: Path) -> dict[str, bytes]:
    members, directory = _zip_directory_size(path)
    if members > MAX_MEMBERS or directory > MAX_MEMBERS * MAX_DIRECTORY_BYTES_PER_MEMBER:
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
        file.seek(max(0, size - (ZIP_END_BYTES + ZIP_COMMENT_MAX)))
        tail = file.read()
    at = tail.rfind(ZIP_END_SIGNATURE)
    if at < 0 or len(tail) - at < ZIP_END_BYTES:
        raise Refused("is not a readable zip (no end of central directory)")
    end = tail[at:at + ZIP_END_BYTES]
    members = int.from_bytes(end[ZIP_END_MEMBERS], "little")
    directory = int.from_bytes(end[ZIP_END_DIRECTORY], "little")
    return (MAX_MEMBERS + 1 if members == ZIP64_MARK else members), directory


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


def _read_tar(path: Path, compressed: bool) -> dict[str, bytes]:
    files, budget = {}, _Budget()
    kind = ".tar.gz" if compressed else ".tar"
    try:
        with open(path, "rb") as raw, (gzip.GzipFile(fileobj=raw) if compressed else nullcontext(raw)) as unzipped:
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
        raise Refused(f"is not a readable {kind} ({error})") from None
    return files
