"""The student's tree: writing stubs and starter tests, backups, the diff.

The student tree is sacred.  `start_module` only creates files that do not
exist; `reset_module` (and `remove_module`, `ol reset --remove`) copies every
file it is about to replace (or delete) into
<root>/.ol/backups/<module>/<timestamp>/<path in the repo> first and never
overwrites a backup; only `remove_module` deletes a file, and only after that
copy or when the file is a fresh stub; nothing here touches the student's own
test folder except to create it.
"""

from __future__ import annotations

import ast
import difflib
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from ol.core.catalog import REFERENCE_TREE, STUDENT_TREE, Catalog, Module
from ol.core.errors import OlError
from ol.core.native_build import c_files, native_bindings
from ol.core.state import STATE_DIR
from ol.student.c_stubs import c_stub_source
from ol.student.code_only import code_only as code_only_text
from ol.student.stubs import stub_source

BACKUP_DIR = f"{STATE_DIR}/backups"
DEFAULT_TEST_IMPORTS = ("numpy", "pytest", "hypothesis", "math")
STUB_MAKERS = {(".py", ".pyi"): stub_source, (".c", ".h"): c_stub_source}  # (file, contract) suffixes


class NotStartable(OlError):
    """`ol start` cannot write this module's stubs (no contract, or not a Python file)."""


@dataclass
class StartResult:
    """What `start_module` did; paths are relative to the repository."""

    written: list[str] = field(default_factory=list)   # stubs created
    kept: list[str] = field(default_factory=list)      # files that existed and were left alone
    test_folder: str = ""
    starter_test: str | None = None                   # the starter test, if written now
    tests_kept: list[str] = field(default_factory=list)  # the student's tests already there


@dataclass
class ResetResult:
    """What `reset_module` did; paths are relative to the repository."""

    backup_dir: str | None = None                      # None if nothing needed saving
    backed_up: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # already identical to a fresh stub
    removed: list[str] = field(default_factory=list)    # deleted (remove_module), after the backup


# ---- stubs -------------------------------------------------------------------


def fresh_stubs(root: str | Path, module: Module) -> dict[str, str]:
    """{file (relative to python/): stub text} for every file of the module:
    a .py file from its .pyi contract (ol.student.stubs), a .c file from its .h
    header (ol.student.c_stubs).

    Raises NotStartable when a file has no contract on disk, or is neither
    of these pairs.
    """
    root = Path(root)
    stubs = {}
    for file in module.files:
        contract = module.contract_for(file)
        make_stub = STUB_MAKERS.get((PurePosixPath(file).suffix, PurePosixPath(contract or "").suffix))
        if make_stub is None:
            raise NotStartable(
                f"{module.id} cannot be started yet: {STUDENT_TREE}/{file} has "
                + (f"the contract {contract}, " if contract else "no contract listed in the catalog, ")
                + "and stubs are generated only for Python files from .pyi contracts and C files "
                + "from .h headers. "
                + (f"Read {contract} and write {STUDENT_TREE}/{file} yourself."
                   if contract else "Ask the instructor.")
            )
        path = root / contract
        if not path.exists():
            raise NotStartable(f"{module.id} cannot be started yet: its contract {contract} is not in "
                               "this checkout (the course is incomplete here; pull, or ask the instructor)")
        stubs[file] = make_stub(path.read_text(encoding="utf-8"), module.id, file, contract)
    return stubs


# ---- start ---------------------------------------------------------------------


def start_module(root: str | Path, module: Module, catalog: Catalog) -> StartResult:
    """Write the module's stubs and its starter test, creating only files that
    do not exist yet.  The starter test is written only into a test folder
    that holds no test_*.py file."""
    root = Path(root)
    stubs = fresh_stubs(root, module)  # all or nothing: fail before writing anything
    result = StartResult(test_folder=module.student_tests)
    for file, text in stubs.items():
        rel = f"{STUDENT_TREE}/{file}"
        if _create(root / rel, text):
            result.written.append(rel)
        else:
            result.kept.append(rel)

    folder = root / module.student_tests
    folder.mkdir(parents=True, exist_ok=True)
    existing = sorted(p.name for p in folder.glob("test_*.py"))
    if existing:
        result.tests_kept = [f"{module.student_tests}/{name}" for name in existing]
    else:
        rel = f"{module.student_tests}/{module.starter_test_name}"
        if _create(root / rel, starter_test_text(root, module, catalog)):
            result.starter_test = rel
    return result


def _create(path: Path, text: str) -> bool:
    """Write `text` to a new file at `path`; False (and no write) if it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(path, "x", encoding="utf-8") as f:  # "x": never replaces a file
            f.write(text)
    except FileExistsError:
        return False
    return True


# ---- the starter test ---------------------------------------------------------


def allowed_test_imports(root: str | Path, module: Module, catalog: Catalog | None = None) -> tuple[str, ...]:
    """What the student's own tests may import: the catalog's grading
    allow-list, or else the module's own tinyllm modules and what its
    contracts import from tinyllm, plus numpy, pytest, hypothesis, math.
    A C module's tests import its binding (tinyllm.native) and, given the
    catalog, the Python modules it needs, to compare the C with."""
    if module.grading is not None:
        return module.grading.allowed_imports
    names = list(module.module_names)
    if c_files(module):
        names.extend(native_bindings(module))
        for need in catalog.needs_closure(module) if catalog else ():
            names.extend(need.module_names)
    for file in module.module_names.values():
        contract = module.contract_for(file)
        path = Path(root) / contract if contract else None
        if path is None or not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tinyllm"):
                names.append(node.module)
            elif isinstance(node, ast.Import):
                names.extend(a.name for a in node.names if a.name.startswith("tinyllm"))
    return tuple(dict.fromkeys(names)) + DEFAULT_TEST_IMPORTS


def starter_test_text(root: str | Path, module: Module, catalog: Catalog) -> str:
    """The starter test: a docstring with how to run the tests and the import
    allow-list, then the module's example test from its starter file
    (catalog `starter`, default course/starters/<id>.py)."""
    root = Path(root)
    allowed = allowed_test_imports(root, module, catalog)
    wrapped = _wrap(", ".join(allowed), width=74, indent="    ")
    if module.grading is not None:
        grade = (f"Grade them:  ./ol check {module.id}   (rung {module.rung}: at least "
                 f"{module.grading.threshold:.0%} of the mutants caught, every pitfall caught)")
        rule = "Import only these (ol check rejects anything else):"
    else:
        grade = f"(rung {module.rung})"
        rule = "Import only these:"
    needs = " [--ref-deps]" if module.needs else ""
    header = (
        f'"""Your own tests for {module.id}: {module.title}.\n\n'
        f"Run them:    ./ol tests {module.id} --mine{needs}\n"
        f"{grade}\n\n"
        f"{rule}\n{wrapped}\n"
        "Test behaviour through the public functions; do not read the library's source\n"
        "(inspect, __file__, opening its files).  The example below is true of every\n"
        f"correct {module.id}; add your own tests beside it, in this folder.\n"
        '"""\n\n'
    )
    example_path = root / module.starter
    if example_path.exists():
        return header + example_path.read_text(encoding="utf-8")
    first = next(iter(module.module_names), None)
    return header + (
        f"import {first}\n\n\ndef test_the_module_imports():\n"
        f"    assert {first} is not None\n" if first else "def test_nothing_yet():\n    pass\n"
    )


def _wrap(text: str, width: int, indent: str) -> str:
    lines, line = [], indent
    for word in text.split(" "):
        if len(line) + len(word) > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += word + " "
    lines.append(line.rstrip())
    return "\n".join(lines)


# ---- reset ---------------------------------------------------------------------


def reset_module(root: str | Path, module: Module, now: datetime | None = None) -> ResetResult:
    """Put fresh stubs in place of the module's files, after copying each file
    that differs from its fresh stub into a new backup folder.  The student's
    own test folder is not touched."""
    root = Path(root)
    stubs = fresh_stubs(root, module)
    result, to_save = _back_up(root, module, stubs, now)
    for file, text in stubs.items():
        rel = f"{STUDENT_TREE}/{file}"
        path = root / rel
        if path.exists() and file not in to_save:
            result.unchanged.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        result.written.append(rel)
    return result


def remove_module(root: str | Path, module: Module, now: datetime | None = None) -> ResetResult:
    """Take the module back to not started: save its files as reset_module
    does (each one that differs from a fresh stub), then delete them, so that
    --ref-deps and --ref-unstarted serve the reference's in their place.  A
    deleted file that is not in `backed_up` was a fresh stub: none of it was
    the student's.  The test folder is not touched."""
    root = Path(root)
    result, _ = _back_up(root, module, fresh_stubs(root, module), now)
    for file in module.files:
        path = root / STUDENT_TREE / file
        if path.exists():
            path.unlink()
            result.removed.append(f"{STUDENT_TREE}/{file}")
    return result


def _back_up(root: Path, module: Module, stubs: dict[str, str], now: datetime | None) -> tuple[ResetResult, list[str]]:
    """Copy each of the module's files that differs from its fresh stub into a
    new backup folder; the result so far, and those files (relative to python/)."""
    result = ResetResult()
    to_save = [f for f, text in stubs.items()
               if (root / STUDENT_TREE / f).exists()
               and (root / STUDENT_TREE / f).read_text(encoding="utf-8", errors="replace") != text]
    if to_save:
        backup = _new_backup_dir(root, module, now or datetime.now())
        result.backup_dir = backup.relative_to(root).as_posix()
        for file in to_save:
            rel = f"{STUDENT_TREE}/{file}"
            target = backup / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, target)
            result.backed_up.append(rel)
    return result, to_save


def _new_backup_dir(root: Path, module: Module, now: datetime) -> Path:
    """A backup folder that did not exist before (a suffix -2, -3 ... if needed)."""
    base = root / BACKUP_DIR / module.id / now.strftime("%Y%m%d-%H%M%S")
    candidate, n = base, 2
    while True:
        try:
            candidate.mkdir(parents=True, exist_ok=False)
            return candidate
        except FileExistsError:
            candidate = base.with_name(f"{base.name}-{n}")
            n += 1


# ---- diff ----------------------------------------------------------------------


def reference_diff(root: str | Path, module: Module, code_only: bool = False) -> str:
    """A unified diff of the student's files (from) against the reference (to),
    labelled `student: python/...` and `reference: course/reference/python/...`;
    "" if they are identical.  code_only compares the code alone (ol.student.code_only:
    no docstrings, comments or blank lines on either side)."""
    root = Path(root)
    chunks = []
    for file in module.files:
        student, reference = f"{STUDENT_TREE}/{file}", f"{REFERENCE_TREE}/{file}"
        chunks.extend(difflib.unified_diff(
            _lines(root / student, code_only), _lines(root / reference, code_only),
            fromfile=f"student: {student}", tofile=f"reference: {reference}",
        ))
    return "".join(chunks)


def _lines(path: Path, code_only: bool = False) -> list[str]:
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    if code_only:
        text = code_only_text(text, path.suffix)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
