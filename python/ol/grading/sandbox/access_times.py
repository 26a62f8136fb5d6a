"""Access times: the mark a read leaves on a file, and how no run can leave one
that a later run could see.

Linux moves a file's access time (stat's st_atime) when the file is read; on
most mounts ("relatime") only on the first read after the file changed, or
after a day.  A run that may read files which a later run may also stat
could so leave one bit per file: read it or not.  Landlock, which bounds
what a run confined by uid may open, does not bound stat().  So:

    namespaces (bubblewrap)   every mount a run sees is read-only
                              (confine.freeze_mounts): no read moves anything
    by uid (no namespaces)    a run reads the host's own file systems, so
                              before its first run each warm process
      its own files           the run's files, the runtime copy of `ol`:
                              accessed far ahead (FROZEN_ACCESS_NS), and
                              relatime never moves an access time that lies
                              ahead of both now and the file's change time
      the system's            what a run may read of the installation and
                              the system (readable_system: the standard
                              library, the packages the warm process
                              imported, the shared libraries it mapped):
                              read once now (prime), after which no read
                              moves them for a day; a file whose times lie
                              in the future is set ahead as our own are
      strictatime             a mount that moves access times on every read
                              cannot be made safe: refused (mount_problem)

A file written or replaced during a check (a cache of the grader's) is not
readable by a run: only the paths above are.
"""

from __future__ import annotations

import os
import stat
import sys
import sysconfig
import time

FROZEN_ACCESS_NS = 4102444800 * 10**9   # 2100-01-01: ahead of any check
STALE_SECONDS = 20 * 3600                # relatime moves a day-old access time: prime anything older
SYSTEM_FILES = ("/etc/ld.so.cache", "/dev/null", "/dev/urandom", "/dev/random", "/dev/zero")
PACKAGE_FOLDERS = ("site-packages", "dist-packages")   # where pip puts packages


def freeze_own(root: str | os.PathLike) -> None:
    """Set the access time of `root` and everything beneath it far ahead,
    keeping each modification time (the grader's own files: it may)."""
    for path in _walk(os.fspath(root)):
        try:
            info = os.lstat(path)
            os.utime(path, ns=(FROZEN_ACCESS_NS, info.st_mtime_ns), follow_symlinks=False)
        except (OSError, NotImplementedError):
            continue


def readable_system() -> list[str]:
    """What a run confined by uid may read of this Python and the system:
    the standard library (its compiled modules included), every top-level
    package of site-packages that this process has imported (and its
    bundled libraries, numpy.libs), the shared libraries this process has
    mapped, and SYSTEM_FILES.  Call it in the warm process, after its
    imports: what a run needs beyond these, the static check refuses."""
    paths = _standard_library()
    site = {os.path.realpath(p) for p in sys.path if p.endswith(PACKAGE_FOLDERS)}
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if not origin:
            continue
        origin = os.path.realpath(origin)
        for folder in site:
            if origin.startswith(folder + os.sep):
                top = origin[len(folder) + 1:].split(os.sep, 1)[0]
                paths.add(os.path.join(folder, top))
                libs = os.path.join(folder, top.split(".")[0] + ".libs")
                if os.path.isdir(libs):
                    paths.add(libs)
    paths.update(_mapped_files())
    paths.update(p for p in SYSTEM_FILES if os.path.exists(p))
    ordered = sorted(p for p in paths if os.path.exists(p))
    return [p for p in ordered if not any(p.startswith(q + os.sep) for q in ordered if q != p)]


def _standard_library() -> set[str]:
    """The standard library's folders.  Where the installed packages lie
    beneath one (lib/python3.11/site-packages, as in pyenv's and
    python.org's builds), that folder's entries but the packages' folder:
    a run reads only the packages the warm process imported, as in a venv,
    and prime() walks the library, not every package installed (102,000
    entries, 2.3 s for each warm process, on a machine with torch)."""
    paths = set()
    for folder in {os.path.realpath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib")}:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        if not any(name in PACKAGE_FOLDERS for name in names):
            paths.add(folder)
            continue
        paths.update(os.path.join(folder, name) for name in names if name not in PACKAGE_FOLDERS)
    return paths


def _mapped_files() -> set[str]:
    found = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].startswith("/"):
                    path = fields[5].strip()
                    if not path.endswith(" (deleted)") and os.path.isfile(path):
                        found.add(os.path.realpath(path))
    except OSError:
        pass
    return found


def prime(paths: list[str]) -> str | None:
    """Read once, now, every entry beneath `paths` whose access time the
    next read would move (relatime: not after its last change, or older than
    STALE_SECONDS); set ahead any whose times lie in the future.  Returns a
    sentence when a path lies on a mount that moves access times on every
    read, else None."""
    problem = mount_problem(paths)
    if problem:
        return problem
    now = time.time()
    for path in (p for root in paths for p in _walk(root)):
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if info.st_atime > max(info.st_mtime, info.st_ctime) and now - info.st_atime < STALE_SECONDS:
            continue
        _access(path, info)
        try:
            after = os.lstat(path)
        except OSError:
            continue
        if after.st_atime <= max(after.st_mtime, after.st_ctime) and max(after.st_mtime, after.st_ctime) > now:
            try:   # changed "in the future" (a clock that was ahead): no read would settle it
                os.utime(path, ns=(FROZEN_ACCESS_NS, after.st_mtime_ns), follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
    return None


def _access(path: str, info: os.stat_result) -> None:
    """What a run's read would do to the access time, done now."""
    try:
        if stat.S_ISDIR(info.st_mode):
            with os.scandir(path):
                pass
        elif stat.S_ISLNK(info.st_mode):
            os.readlink(path)
        elif stat.S_ISREG(info.st_mode) or stat.S_ISCHR(info.st_mode):
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                os.read(fd, 1)
            finally:
                os.close(fd)
    except OSError:
        pass


def mount_problem(paths: list[str]) -> str | None:
    """Why access times beneath `paths` cannot be kept still (a mount that is
    neither read-only, noatime nor relatime: strictatime), or None."""
    mounts = _mounts()
    for path in paths:
        real = os.path.realpath(path)
        point, options = max(((p, o) for p, o in mounts if real == p or real.startswith(p.rstrip("/") + "/")),
                             key=lambda m: len(m[0]), default=("/", {"relatime"}))
        if not options & {"ro", "noatime", "relatime"}:
            return (f"{real} lies on {point}, mounted without relatime or noatime: every read there moves a "
                    "file's access time, which another run could see; remount it relatime (the default) or noatime")
    return None


def mount_points() -> list[str]:
    """The mount points of this process's mount namespace, from
    /proc/self/mountinfo (the kernel writes space, tab, newline and
    backslash in them as octal escapes)."""
    import re

    points = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            fields = line.split(" ")
            if len(fields) > 4:
                points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


def _mounts() -> list[tuple[str, set[str]]]:
    found = []
    try:
        with open("/proc/self/mountinfo") as info:
            lines = info.read().splitlines()
    except OSError:
        return found
    points = mount_points()
    for point, line in zip(points, lines):
        fields = line.split(" ")
        found.append((point, set(fields[5].split(",")) if len(fields) > 5 else set()))
    return found


def _walk(root: str):
    """root and every entry beneath it, without following links or recursing."""
    yield root
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                continue
            with os.scandir(folder) as entries:
                for entry in entries:
                    yield entry.path
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                    except OSError:
                        continue
        except OSError:
            continue
