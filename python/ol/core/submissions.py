"""A class's submissions, read safely: only the files a module's catalog entry
names, from folders, zips or tarballs, one per student.

    submissions = read_submissions(Path("submissions"), module)
    s = submissions[0]
    s.student     a name unique in the class and safe as a file name
    s.entry       the entry it came from, as it is named in SUBMISSIONS
    s.files       checkout path -> bytes (python/tinyllm/modern/rope.py, ...)
    s.names       checkout path -> the file's name in the submission (the student's words)
    s.ignored     names in the submission that were not taken
    s.submitted   the entry's time (an archive's own, a folder's newest file), or None
    s.refused     why the entry could not be taken (the student's words), or None
    s.taken_from  where its files were found, when deeper than the rules below expect ("" otherwise)

A submission holds the student's files at their checkout paths
(python/tinyllm/modern/rope.py, python/tests/l7-3-rope/...), possibly inside
one top folder, or directly at its root: rope.py beside test_*.py, or beside a
folder named like the test folder (l7-3-rope/) or tests/; another .py file
at the root is taken as a helper only when a test imports it.

Those rules are read from the submission's root, found at any depth: the
top (or its one top folder) when the module's file is there, else the one
folder that holds it deeper down (Downloads/L7.3 submission/python/... has
its root at "Downloads/L7.3 submission"; src/rope.py at "src").  A file at
its checkout path (…/python/tinyllm/modern/rope.py) is preferred to a bare
rope.py; two equally good candidates are a refusal that names both.  When
no test file is found from that root, the one folder elsewhere named like
the test folder (…/python/tests/l7-3-rope/, l7-3-rope/, tests/) holds the
tests.  `taken_from` then says where the files were found; everything else
is listed as ignored.

Each entry is read by ol.core.archives, which refuses what cannot be taken
safely; a refusal, or any other failure to read, is that student's alone
(`refused`), never the class's.

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

import ast
import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from ol.core.archives import Refused, no_file_is_a_folder, read_entry, shown
from ol.core.catalog import STUDENT_TREE, Module
from ol.core.test_folder import SKIPPED_FOLDERS, is_test_file

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
SKIPPED_PARTS = SKIPPED_FOLDERS | {"__MACOSX", ".git", ".ol", ".DS_Store"}   # and an archive's junk
RESERVED_NAMES = {"grades", "summary"}     # DIR/grades.csv, DIR/summary.md sit beside <student>.md
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,99}")


@dataclass
class Submission:
    student: str
    entry: str                      # the entry of SUBMISSIONS it came from, as named there
    files: dict[str, bytes] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    submitted: float | None = None
    refused: str | None = None
    taken_from: str = ""

    def digest(self) -> str:
        """sha256 over the files taken (paths and bytes)."""
        h = hashlib.sha256()
        for path in sorted(self.files):
            h.update(path.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(self.files[path]).digest())
        return h.hexdigest()


def read_submissions(folder: Path, module: Module) -> list[Submission]:
    """One Submission per entry of `folder` (a folder, a .zip, a .tar or a .tar.gz),
    by student name.  Never raises for one entry: what cannot be read is
    that submission's `refused`."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"SUBMISSIONS must be a folder with one entry per student; {folder} is not a folder")
    entries = sorted(e for e in folder.iterdir() if not e.name.startswith(".") and e.name not in SKIPPED_PARTS)
    names = student_names([e.name for e in entries])
    return [read_submission(entry, module, names[entry.name]) for entry in entries]


def read_submission(entry: Path, module: Module, student: str) -> Submission:
    submission = Submission(student, shown(entry.name))
    try:
        submission.submitted = entry.lstat().st_mtime     # the entry's own time, even if it cannot be read
        raw, submission.submitted = read_entry(entry)
        taken = take(raw, module)
        submission.files, submission.names, submission.ignored = taken.files, taken.names, taken.ignored
        submission.taken_from = taken.taken_from
    except Refused as why:
        submission.refused = f"{submission.entry} {why}"
    except OSError as error:     # its own message may hold the instructor's paths: never shown
        submission.refused = f"{submission.entry} could not be read ({error.strerror or type(error).__name__})"
    except Exception as error:  # noqa: BLE001 (one unreadable entry must never stop the class)
        submission.refused = f"{submission.entry} could not be read ({type(error).__name__})"
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


# ---- which files are the student's work ------------------------------------------------------


class Taken(NamedTuple):
    files: dict[str, bytes]      # checkout path -> bytes
    names: dict[str, str]        # checkout path -> the name in the submission
    ignored: list[str]           # names in the submission not taken
    taken_from: str = ""         # where they were found, when deeper than expected ("" otherwise)


def take(raw: dict[str, bytes], module: Module) -> Taken:
    """The files of `module` in the submission `raw` ({name: bytes}), by the
    rules of the module's docstring."""
    kept = {name: name for name in raw if not SKIPPED_PARTS.intersection(PurePosixPath(name).parts)}
    root, deeper = _root(list(kept), module)
    inside = {name[len(root) + 1:] if root else name: name for name in kept if _under(name, root)}
    if not deeper:
        inside = _inside_single_top_folder(list(inside))
    taken, ignored = _take_from(inside, raw, module)
    ignored += [name for name in kept if not _under(name, root)]
    tests = module.student_tests.rstrip("/")
    folder = None
    if not any(target.startswith(tests + "/") for target in taken):
        folder = _test_folder_elsewhere(ignored, module)
        for name in sorted(n for n in ignored if folder is not None and _under(n, folder)):
            taken[f"{tests}/{name[len(folder) + 1:]}"] = name
            ignored.remove(name)
    no_file_is_a_folder(dict.fromkeys(taken, b""))
    ignored += [name for name in raw if name not in kept]
    code = ", ".join(PurePosixPath(f).name for f in module.files)
    where = [f"{code if folder else 'files'} taken from {root}/"] if deeper else []
    where += [f"tests taken from {folder}/"] if folder else []
    return Taken({target: raw[submitted] for target, submitted in taken.items()}, taken, sorted(ignored),
                 ", ".join(where))


def _take_from(inside: dict[str, str], raw: dict[str, bytes], module: Module) -> tuple[dict[str, str], list[str]]:
    """({checkout path: name submitted}, names ignored) of `inside` ({name
    relative to the root: name submitted}), by the layout rules."""
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
        elif len(path.parts) == 1 and (is_test_file(name) or name == "conftest.py"):
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
    wanted = _imported_modules([raw[name] for target, name in taken.items() if target.startswith(tests + "/")])
    for name, submitted in helpers.items():
        if PurePosixPath(name).stem in wanted and f"{tests}/{name}" not in taken:
            taken[f"{tests}/{name}"] = submitted
        else:
            ignored.append(submitted)
    return taken, ignored


def _under(name: str, folder: str) -> bool:
    return not folder or name.startswith(folder + "/")


def _root(names: list[str], module: Module) -> tuple[str, bool]:
    """(the folder the layout rules read from, whether it is deeper than the
    top or its one top folder).  Refused when two folders hold the module's
    file equally well."""
    module_files = [f"{STUDENT_TREE}/{f}" for f in module.files]
    basenames = {PurePosixPath(f).name for f in module.files}
    top = {PurePosixPath(n).relative_to(t).as_posix() if t else n: n
           for t in [_single_top_folder(names)] for n in names}
    if any(name in module_files or name in basenames for name in top):
        return "", False
    at_checkout_path = {name[:-len(f) - 1]: name for name in names for f in module_files if name.endswith("/" + f)}
    bare = {str(PurePosixPath(name).parent): name for name in names
            if PurePosixPath(name).name in basenames and name not in at_checkout_path.values()}
    for candidates in (at_checkout_path, bare):
        if len(candidates) == 1:
            return next(iter(candidates)), True
        if len(candidates) > 1:
            first, second = sorted(candidates.values())[:2]
            raise Refused(f"holds two {PurePosixPath(first).name} ({first} and {second}) and the grader cannot tell "
                          f"which is your work; keep one")
    return "", False


def _test_folder_elsewhere(names: list[str], module: Module) -> str | None:
    """The one folder among `names` named like the test folder (…/python/tests/
    l7-3-rope, l7-3-rope, tests) that holds a test file, or None."""
    tests = module.student_tests.rstrip("/")
    folders = set()
    for name in names:
        parts = PurePosixPath(name).parts
        if not is_test_file(parts[-1]):
            continue
        for depth in range(len(parts) - 1, 0, -1):
            folder = "/".join(parts[:depth])
            if folder == tests or folder.endswith("/" + tests) or parts[depth - 1] in (PurePosixPath(tests).name,
                                                                                       "tests"):
                folders.add(folder)
                break
    return folders.pop() if len(folders) == 1 else None


def _single_top_folder(names: list[str]) -> str:
    """The one folder every name sits in (an archive of one folder: alice/...), or ""."""
    tops = {PurePosixPath(name).parts[0] for name in names}
    if len(tops) == 1 and all(len(PurePosixPath(name).parts) > 1 for name in names):
        top = next(iter(tops))
        if top not in (STUDENT_TREE, "tests"):
            return top
    return ""


def _inside_single_top_folder(names: list[str]) -> dict[str, str]:
    """An archive of one folder (alice/python/...) is read from inside it."""
    top = _single_top_folder(names)
    return {PurePosixPath(name).relative_to(top).as_posix() if top else name: name for name in names}


def _imported_modules(sources: list[bytes]) -> set[str]:
    """Top-level module names the given test files import (read, never run):
    `import helpers`, `from helpers import x`, `from . import helpers`."""
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
