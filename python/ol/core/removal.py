"""Removing a folder tree that a run may have shaped: the one way `ol`
removes a run's temporary folder, a check's scratch folder or a dead
check's leftovers.

    problem = remove_tree(path)     # None when it is gone (or never was)

shutil.rmtree recurses once per folder level, so a run that builds a tree
1,100 folders deep makes it raise RecursionError; a run may also leave
folders it made unlistable (mode 000).  Here the walk holds one descriptor,
of the folder it is in, and a stack of the names it went down by:

    at a folder:  list it (up to BATCH entries a time)
                  unlink each file and link (by dir_fd: never followed)
                  a subfolder among them: go down into it (O_NOFOLLOW)
                  nothing left: go up (openat "..") and rmdir it from there

so depth costs a list entry, never Python's stack, and each level is
entered and left once.  The tree must be still while we walk (the runs that
wrote it have ended: every caller removes a run's folder after its
processes).  A folder we cannot list is made listable (chmod 0o700: we own
it, or we are root) once.  An entry that cannot be removed is skipped, so
its folder stays and says why.  Nothing here raises: what could not be
removed comes back as one sentence for the caller to log, never as a fault
of whoever comes next.
"""

from __future__ import annotations

import os
import stat

OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
BATCH = 4096           # entries taken from one listing


def remove_tree(path: str | os.PathLike) -> str | None:
    """Remove `path` and everything beneath it, following no link and
    recursing nowhere.  None when nothing is left, else what could not be
    removed, in one sentence."""
    path = os.path.abspath(os.fspath(path))
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"could not look at {path}: {error.strerror or error}"
    parent, name = os.path.split(path)
    try:
        parent_fd = os.open(parent or "/", OPEN_FOLDER)
    except OSError as error:
        return f"could not open {parent or '/'}: {error.strerror or error}"
    try:
        if not stat.S_ISDIR(info.st_mode):
            return _remove_entry(parent_fd, name, lambda: path, folder=False)
        return _remove_folder(parent_fd, path, name)
    except MemoryError:
        return f"could not remove {path}: a tree too large to walk"
    finally:
        os.close(parent_fd)


def _remove_folder(top_parent: int, path: str, name: str) -> str | None:
    names = [name]                     # the names we went down by, from `path` on
    skipped: list[set[str]] = [set()]  # per level: entries that would not go
    here = _open_folder(top_parent, name)
    if here is None:
        return f"could not open {path}"
    problem = None
    try:
        while names:
            try:
                entries = _entries(here, skipped[-1])
            except OSError as error:
                problem = problem or f"could not list {_shown(path, names)}: {error.strerror or error}"
                entries = None
            folder = None
            for entry, is_folder in entries or ():
                if is_folder:
                    folder = folder or entry
                    continue
                failed = _remove_entry(here, entry, lambda: f"{_shown(path, names)}/{entry}", folder=False)
                if failed:
                    problem = problem or failed
                    skipped[-1].add(entry)
            if folder is not None:     # down
                below = _open_folder(here, folder)
                if below is None:
                    problem = problem or f"could not open {_shown(path, names)}/{folder}"
                    skipped[-1].add(folder)
                    continue
                os.close(here)
                here = below
                names.append(folder)
                skipped.append(set())
                continue
            if entries:                # files only: list again for the rest
                continue
            done = names.pop()         # empty but for what would not go (or unlistable): up
            skipped.pop()
            try:
                above = os.open("..", OPEN_FOLDER, dir_fd=here) if names else os.dup(top_parent)
            except OSError as error:
                return problem or f"could not go back up from {_shown(path, names + [done])}: {error.strerror or error}"
            os.close(here)
            here = above
            failed = _remove_entry(here, done, lambda: _shown(path, names + [done]), folder=True)
            if failed:
                problem = problem or failed
                if names:
                    skipped[-1].add(done)
    finally:
        os.close(here)
    return problem


def _open_folder(dir_fd: int, name: str) -> int | None:
    for attempt in range(2):
        try:
            return os.open(name, OPEN_FOLDER, dir_fd=dir_fd)
        except PermissionError:
            if attempt == 1:
                return None
            try:                       # made unlistable by a run: it is ours, or we are root
                os.chmod(name, 0o700, dir_fd=dir_fd, follow_symlinks=False)
            except (OSError, NotImplementedError):
                return None
        except OSError:
            return None
    return None


def _entries(fd: int, skipped: set[str]) -> list[tuple[str, bool]]:
    """Up to BATCH entries of the folder open at fd that are not skipped,
    each (name, is a folder); [] when there are none."""
    found = []
    with os.scandir(fd) as listing:     # a scandir of a descriptor starts at the top each time
        for entry in listing:
            if entry.name in skipped:
                continue
            try:
                found.append((entry.name, entry.is_dir(follow_symlinks=False)))
            except OSError:
                found.append((entry.name, False))
            if len(found) >= BATCH:
                break
    return found


def _remove_entry(dir_fd: int, name: str, shown, *, folder: bool) -> str | None:
    """rmdir or unlink `name` in the folder open at dir_fd; shown() names it
    in the sentence returned when that fails."""
    try:
        (os.rmdir if folder else os.unlink)(name, dir_fd=dir_fd)
        return None
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"could not remove {shown()}: {error.strerror or error}"


def _shown(path: str, names: list[str]) -> str:
    """The path of the level `names` leads to (for messages only)."""
    return os.path.join(path, *names[1:])
