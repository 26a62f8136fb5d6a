"""`ol release MODULE... --out DIR`: the student kit, without the answers.

Two outputs from one repository, as nbgrader and otter-grader make them: the
instructor keeps this repository (and grades from it: ol grade, Gradescope);
the students get a kit written from it.

    ol release L7.3 L7.4 --out ../class-kit              # a new folder, its own git repository
    ol release L7.3 --solutions --out ../class-kit       # after the deadline: add L7.3's answers

The kit holds the modules released and those they need (the catalog's needs,
transitively):

    always          the ol runner (python/ol/), the package skeleton
                    (python/tinyllm/), pyproject.toml, setup.py, the launcher
    every module    its catalog entry, chapter, contracts, course tests (with
                    their conftest, golden loader and diagnosis), starter
                    example and fixtures
    a need          its reference (so --ref-deps works), and, if graded, all
                    its grading files: a module the kit needs but does not
                    assess ships whole, as in this repository
    a released one  its pitfalls (misconception, symptom, the course tests
                    that catch them; not their edits) and chaffs
                    (ol.grading.chaffs), which the local check runs around
                    the student's own code (ol.grading.local)

and leaves out, for each released module, everything that holds or rebuilds
its answer: the reference, the alternates, the model-answer suite, the pitfall
edits, the misconceptions' edits and the equivalent list; and for the kit as
a whole the kit's own tests (with the calibration suites), benchmarks and
oracles.  Before the kit is committed, a scan (ol.instructor.answer_scan) looks for
every function of each withheld reference and alternate in every file of it,
by syntax tree; a function the course tests themselves hold is public by
design (they ship) and is listed, not refused.  Anything else found stops
the release, and the half-written folder is removed.

course/release.toml (ol.core.student_kit) records what the kit withholds; the
kit's README (ol.instructor.kit_readme) says what a student does there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tomllib
from pathlib import Path, PurePosixPath

from ol.core import student_kit
from ol.core.catalog import CATALOG_PATH, COURSE_TESTS_SUPPORT, REFERENCE_TREE, Catalog, Module, load_catalog
from ol.core.errors import OlError
from ol.core.exits import OK
from ol.instructor.answer_scan import Leak, fingerprints, functions_in_text, scan_folder

ALWAYS = ("ol", "pyproject.toml", "setup.py", ".gitignore", "python/ol/", "python/tinyllm/")
COMMIT_AUTHOR = ("ol release", "ol-release@localhost")   # when git knows no identity here


class ReleaseError(OlError):
    """The kit cannot be written as asked; the message says why and what to do."""

    exit_code = 2


# ---- what goes into the kit ------------------------------------------------------------------------


def kit_modules(catalog: Catalog, released: list[Module]) -> list[Module]:
    """The released modules and everything they need, in catalog order."""
    wanted = {m.id for m in released}
    for module in released:
        wanted.update(m.id for m in catalog.needs_closure(module))
    return [m for m in catalog.modules if m.id in wanted]


def kit_files(root: Path, catalog: Catalog, released: list[Module]) -> dict[str, bytes]:
    """{path in the kit: content} of every file the kit holds but the README and the manifest."""
    from ol.instructor.class_grading.checkout import checkout_files

    root = Path(root)
    withheld = {m.id for m in released}
    modules = kit_modules(catalog, released)
    everything = checkout_files(root)
    chosen: set[str] = {p for p in everything if any(p == a or (a.endswith("/") and p.startswith(a)) for a in ALWAYS)}

    def folder(path: str) -> set[str]:
        return {p for p in everything if p.startswith(path.rstrip("/") + "/")}

    chosen.update(p for p in COURSE_TESTS_SUPPORT if (root / p).is_file())
    for module in modules:
        chosen.update(p for p in (module.chapter, module.starter, *module.contracts, *module.fixtures)
                      if (root / p).is_file())
        chosen.update(folder(module.course_tests))
        for fixture in module.fixtures:
            readme = PurePosixPath(fixture).parent / "README.md"
            if (root / readme).is_file():
                chosen.add(str(readme))
        if module.id not in withheld:
            chosen.update(_reference_files(root, module))
            if module.grading:
                grading = module.grading
                chosen.update(p for p in (grading.pitfalls, grading.equivalent, *grading.alternates)
                              if (root / p).is_file())
                chosen.update(folder(str(PurePosixPath(grading.pitfalls).parent)))
                chosen.update(folder(grading.model_answer))
        else:
            chosen.update(p for p in _reference_files(root, module) if p not in _answer_files(module))
            if module.grading:
                chosen.update(folder(module.grading.chaffs))
    chosen.update(_package_inits(root, modules))
    chosen.discard(CATALOG_PATH)
    files = {path: (root / path).read_bytes() for path in sorted(chosen)}
    files[CATALOG_PATH] = catalog_text(root, [m.id for m in modules]).encode()
    for module in released:
        if module.grading:
            files[module.grading.pitfalls] = pitfalls_without_edits(root / module.grading.pitfalls).encode()
    return files


def _reference_files(root: Path, module: Module) -> set[str]:
    from ol.core.native_build import native_bindings

    files = {f"{REFERENCE_TREE}/{f}" for f in module.files}
    files.update(f"{REFERENCE_TREE}/{f}" for f in native_bindings(module).values())
    return {p for p in files if (root / p).is_file()}


def _answer_files(module: Module) -> set[str]:
    """The files of the reference tree that are the module's answer: the ones the student writes
    (a C module's Python binding, say, is not one of them)."""
    return {f"{REFERENCE_TREE}/{f}" for f in module.files}


def _package_inits(root: Path, modules: list[Module]) -> set[str]:
    """Every __init__.py of the reference tree on the way to the kit's modules' files."""
    inits = set()
    for module in modules:
        for file in module.files:
            parts = PurePosixPath(file).parts[:-1]
            for depth in range(1, len(parts) + 1):
                init = f"{REFERENCE_TREE}/{'/'.join(parts[:depth])}/__init__.py"
                if (root / init).is_file():
                    inits.add(init)
    return inits


def catalog_text(root: Path, kept: list[str]) -> str:
    """The catalog with only the kept modules' entries, each exactly as written
    (its comment lines above it included)."""
    text = (Path(root) / CATALOG_PATH).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == "[[module]]"]
    begins = []
    for start in starts:   # an entry owns the comment lines right above it
        begin = start
        while begin > 0 and lines[begin - 1].lstrip().startswith("#"):
            begin -= 1
        begins.append(begin)
    pieces = ["".join(lines[:begins[0]])] if begins else [text]
    for number, begin in enumerate(begins):
        end = begins[number + 1] if number + 1 < len(begins) else len(lines)
        chunk = "".join(lines[begin:end])
        if tomllib.loads(chunk)["module"][0]["id"] in kept:
            pieces.append(chunk)
    result = "".join(pieces)
    original = {m["id"]: m for m in tomllib.loads(text)["module"]}
    assert [m for m in tomllib.loads(result)["module"]] == [original[i] for i in original if i in kept], \
        "the kit's catalog lost or changed an entry"
    return result


def pitfalls_without_edits(path: Path) -> str:
    """A pitfalls file with every field but the edits (which hold lines of the answer)."""
    import json

    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("pitfall", [])
    lines = ["# The pitfalls of this module: what each misconception is, what it breaks, and the course",
             "# tests that catch it.  Each one's behaviour is its chaff (chaffs/<id>.py beside this file),",
             "# a wrapper that shows the misconception around any correct implementation; ol check runs",
             "# them around your own code.  (Written by ol release from the instructor's file.)", ""]
    for entry in entries:
        lines.append("[[pitfall]]")
        for key, value in entry.items():
            if key == "edit":
                continue
            if isinstance(value, list):
                lines.append(f"{key} = [{', '.join(json.dumps(v, ensure_ascii=False) for v in value)}]")
            else:
                lines.append(f"{key} = {json.dumps(value, ensure_ascii=False)}")
        lines.append("")
    return "\n".join(lines)


# ---- the answers, and the scan for them -------------------------------------------------------------


def answers(root: Path, modules: list[Module]) -> dict[str, str]:
    """{path: source} of the references and alternates of these modules (their .py files)."""
    found = {}
    for module in modules:
        paths = [f"{REFERENCE_TREE}/{f}" for f in module.files if f.endswith(".py")]
        paths += list(module.grading.alternates) if module.grading else []
        found.update({p: (Path(root) / p).read_text(encoding="utf-8") for p in paths if (Path(root) / p).is_file()})
    return found


def public_by_design(root: Path, secrets: dict[str, str]) -> dict[str, list[str]]:
    """{answer path: [function, ...]} of the answers' functions that a course test
    holds too: the course tests ship, so these are public whatever the kit does."""
    wanted = fingerprints(secrets)
    shared: dict[str, list[str]] = {}
    for path in sorted((Path(root) / "course" / "tests").rglob("*.py")):
        for _, _, shape in functions_in_text(path.read_text(encoding="utf-8"), True):
            if shape in wanted:
                origin, name = wanted[shape]
                shared.setdefault(origin, []).append(name)
    return shared


def scan_kit(root: Path, kit: Path, withheld: list[Module],
             paths: list[str] | None = None) -> tuple[list[Leak], dict[str, list[str]]]:
    """(leaks, public by design): the functions of the withheld modules'
    references and alternates found in the kit's files (`paths`; default:
    every file git tracks there, and those it does not ignore), minus those
    the course tests hold.  A student's own work in the kit is not scanned."""
    secrets = answers(root, withheld)
    public = public_by_design(root, secrets)
    if paths is None:
        paths = [p for p in _git(kit, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
                 if p and not p.startswith("python/")] + \
                [p for p in _git(kit, "ls-files", "-z", "--cached", "python/").split("\0") if p]
    leaks = [leak for leak in scan_folder(kit, secrets, sorted(set(paths)))
             if leak.original not in public.get(leak.origin, [])]
    return leaks, public


# ---- writing the kit ---------------------------------------------------------------------------------


def release(root: Path, module_ids: list[str], out: Path) -> dict[str, list[str]]:
    """Write a new student kit for these modules at `out` (which must not exist,
    or be an empty folder), as its own git repository with one commit.
    Returns what the scan found public by design.  Raises ReleaseError."""
    root, out = Path(root).resolve(), Path(out).resolve()
    catalog, released = _released(root, module_ids)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"--out {out} exists and is not an empty folder: ol release writes a new kit and never "
                           "replaces files. Give a new folder (to add solutions to a kit: --solutions)")
    if root == out or root in out.parents:
        raise ReleaseError(f"--out {out} is inside the repository {root}: write the kit outside it")
    created = not out.exists()
    try:
        files = kit_files(root, catalog, released)
        for path, data in files.items():
            _write(out / path, data, executable=(root / path).is_file() and os.access(root / path, os.X_OK))
        kit = student_kit.Kit(tuple(m.id for m in released), ())
        student_kit.write_manifest(out, kit)
        from ol.instructor.kit_readme import kit_readme

        (out / "README.md").write_text(kit_readme(load_catalog(out), kit), encoding="utf-8")
        leaks, public = scan_kit(root, out, released, [*files, "README.md", student_kit.MANIFEST])
        if leaks:
            raise ReleaseError("the kit would hand out the answers: " + "; ".join(str(leak) for leak in leaks)
                               + ". Remove them from those files (or from the course material they come from)")
        _commit(out, f"Student kit: {', '.join(m.id for m in released)}, without their answers", init=True)
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        else:
            for child in out.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        raise
    return public


def release_solutions(root: Path, module_ids: list[str], out: Path) -> list[str]:
    """Add the reference and model answer of released modules to the kit at
    `out`, record it in its manifest and commit.  Returns the paths written."""
    root, out = Path(root).resolve(), Path(out).resolve()
    catalog, modules = _released(root, module_ids)
    kit = student_kit.read_kit(out)
    if kit is None:
        raise ReleaseError(f"--out {out} is not a student kit (no {student_kit.MANIFEST}): --solutions adds "
                           "answers to a kit written by ol release MODULE... --out DIR")
    strangers = [m.id for m in modules if m.id not in kit.released]
    if strangers:
        raise ReleaseError(f"{', '.join(strangers)} {'is' if len(strangers) == 1 else 'are'} not released in {out} "
                           f"(it releases {', '.join(kit.released)}); release a module before its solutions")
    written = []
    for module in modules:
        paths = sorted(_reference_files(root, module))
        if module.grading:
            answer = root / module.grading.model_answer
            paths += sorted(str(p.relative_to(root)) for p in answer.rglob("*") if p.is_file()
                            and "__pycache__" not in p.parts)
        written += paths
    clashes = [p for p in written if (out / p).exists() and (out / p).read_bytes() != (root / p).read_bytes()]
    if clashes:
        raise ReleaseError(f"{out} already has other files at {', '.join(clashes)}: ol release never replaces "
                           "a file it did not write; move them away first")
    before = (out / student_kit.MANIFEST).read_bytes()
    new = [p for p in written if not (out / p).exists()]
    try:
        for path in written:
            _write(out / path, (root / path).read_bytes())
        kit = student_kit.Kit(kit.released, tuple(m for m in kit.released
                                                  if m in kit.solutions or m in {x.id for x in modules}))
        student_kit.write_manifest(out, kit)
        leaks, _ = scan_kit(root, out, [catalog.get(m) for m in kit.withheld])
        if leaks:
            raise ReleaseError("the kit would hand out answers still withheld: " + "; ".join(map(str, leaks)))
        _commit(out, f"Solutions of {', '.join(m.id for m in modules)}: the reference and the model answer",
                paths=[*written, student_kit.MANIFEST])
    except BaseException:  # the kit as it was
        for path in new:
            (out / path).unlink(missing_ok=True)
        (out / student_kit.MANIFEST).write_bytes(before)
        raise
    return written


def _released(root: Path, module_ids: list[str]) -> tuple[Catalog, list[Module]]:
    if student_kit.read_kit(root) is not None:
        raise ReleaseError(f"{root} is a student kit: ol release runs in the instructor's repository")
    catalog = load_catalog(root)
    modules = []
    for module_id in module_ids:
        module = catalog.get(module_id)
        if module.grading and not module.grading.chaffs:
            raise ReleaseError(f"{module.id} is graded but has no chaffs ([module.grading] chaffs): a student kit's "
                               "check needs its pitfalls as behaviour (python/ol/grading/chaffs.py)")
        if module not in modules:
            modules.append(module)
    return catalog, modules


def _write(path: Path, data: bytes, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if executable:
        path.chmod(0o755)


def _git(folder: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True)
    except FileNotFoundError:
        raise ReleaseError("git is not installed: a student kit is a git repository (sudo apt-get install git)") from None
    if done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)} failed in {folder}: {done.stderr.strip()}")
    return done.stdout


def _commit(folder: Path, message: str, init: bool = False, paths: list[str] | None = None) -> None:
    """Commit `paths` (default: everything) in the kit's repository."""
    if init:
        _git(folder, "init", "-q")
    identity = []
    if not subprocess.run(["git", "config", "user.email"], cwd=folder, capture_output=True, text=True).stdout.strip():
        identity = ["-c", f"user.name={COMMIT_AUTHOR[0]}", "-c", f"user.email={COMMIT_AUTHOR[1]}"]
    _git(folder, "add", "-A", "--", *(paths or ["."]))
    _git(folder, *identity, "commit", "-q", "-m", message, "--", *(paths or ["."]))


# ---- the command line ------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Instructor: write the student kit for MODULE... at DIR, without their answers (reference, alternates, "
        "model answer, calibration suites, pitfall edits, equivalent list): a new folder, its own git "
        "repository, which installs with its README's first command. Students check their tests locally "
        "there, against mutants of their own code; the grade that counts stays yours (ol grade, ol gradescope). "
        "With --solutions, add the reference and model answer of MODULE... to an existing kit at DIR."
    )
    parser.add_argument("modules", metavar="MODULE", nargs="+", help="module ids from the catalog, e.g. L7.3 L7.4")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="the kit's folder")
    parser.add_argument("--solutions", action="store_true",
                        help="add the modules' reference and model answer to the existing kit at DIR")


def run(args: argparse.Namespace, ctx) -> int:
    out = args.out.expanduser()
    if args.solutions:
        written = release_solutions(ctx.root, args.modules, out)
        ctx.say(f"ol release: added the solutions of {', '.join(args.modules)} to {out.resolve()}:",
                *(f"  {path}" for path in written),
                "Committed there; students get them with git pull, and ol diff now shows them.")
        return OK
    public = release(ctx.root, args.modules, out)
    ctx.say(f"ol release: wrote the student kit for {', '.join(args.modules)} to {out.resolve()} "
            "(a git repository with one commit).",
            "Scanned: no function of their references or alternates is in it.")
    for origin, names in public.items():
        ctx.say(f"  (public by design: {', '.join(sorted(set(names)))} of {origin} also stand in the course "
                "tests, which ship)")
    ctx.say("Students clone it and set it up with its README's first command. After the deadline: "
            f"{ctx.ol} release {' '.join(args.modules)} --solutions --out {out}")
    return OK
