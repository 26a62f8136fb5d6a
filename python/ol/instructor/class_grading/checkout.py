"""The instructor's checkout: the files of the course an instructor grades
with, without any student's work.

    files = checkout_files(root)       # paths relative to root
    copy_checkout(root, dest)          # a private copy, e.g. per submission

In a git repository the checkout is what git tracks, plus course files not yet
committed, minus any untracked file under python/ (a student's own work in the
instructor's checkout).  Outside git (an unpacked Gradescope bundle) it is
every file but caches and state.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

IGNORED_PARTS = {".git", ".ol", "__pycache__", ".pytest_cache", ".hypothesis", "build", ".benchmarks"}


def checkout_files(root: Path) -> list[str]:
    root = Path(root)
    if (root / ".git").exists():
        try:
            def listed(*options):
                out = subprocess.run(["git", "ls-files", "-z", *options], cwd=root, check=True,
                                     capture_output=True).stdout.decode()
                return [name for name in out.split("\0") if name]

            tracked = listed("--cached")
            untracked = [n for n in listed("--others", "--exclude-standard") if not n.startswith("python/")]
            return sorted(n for n in set(tracked + untracked) if (root / n).is_file())
        except (OSError, subprocess.CalledProcessError):
            pass
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and not IGNORED_PARTS.intersection(p.relative_to(root).parts)
                  and not p.name.endswith((".pyc", ".egg-info")))


def copy_checkout(root: Path, dest: Path, files: list[str] | None = None) -> Path:
    """Copy the checkout's files into dest (which must not exist yet)."""
    root, dest = Path(root), Path(dest)
    for name in files if files is not None else checkout_files(root):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return dest


GRADE_FILES = ("ol", "pyproject.toml", "setup.py")              # what a grade is computed from: these files,
GRADE_FOLDERS = ("python/", "course/", "fixtures/")             # and everything in these folders


def checkout_digest(root: Path) -> str:
    """sha256 over the checkout files a grade depends on (path and bytes): the
    runner, the course and its fixtures; not the documentation, the checkout's
    own tests or its benchmarks, so editing those keeps a class's grades."""
    h = hashlib.sha256()
    for name in (n for n in checkout_files(root) if n in GRADE_FILES or n.startswith(GRADE_FOLDERS)):
        h.update(name.encode() + b"\0" + hashlib.sha256((Path(root) / name).read_bytes()).digest())
    return h.hexdigest()


def catalog_pitfalls(root: Path, module) -> list[dict]:
    """[{"id", "misconception", "symptom"}] of the module's pitfalls file, in
    its order: what every report lists, graded or not."""
    import tomllib

    path = Path(root) / module.grading.pitfalls
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [{"id": p.get("id", "?"), "misconception": p["misconception"], "symptom": p["symptom"]}
            for p in data.get("pitfall", [])]


def graded_source(root: Path, module) -> tuple[str, str]:
    """(text, path shown) of the file the module's mutants change: what a
    report draws its lines from."""
    from ol.core.catalog import REFERENCE_TREE

    path = f"{REFERENCE_TREE}/{module.grading.target}"
    return (Path(root) / path).read_text(encoding="utf-8"), path
