"""One grading session: what `ol check`, `ol verify` and `ol grade` grade with,
built once per module.

    session = GradingSession(root, "L7.3")
    session.mutants                 the counted, message-only and equivalent mutants, the pitfalls
    session.reference, .alternates  the correct implementations (Variant: key, source, origin)
    with session.scheduler({"student": TestFolder(folder).snapshot()}) as scheduler:
        scheduler.run([...])           confined runs (ol.grading.scheduler)

The files a sandbox sees are assembled here, from the catalog: the course tests
with their conftest and golden loader, the module's fixtures, the suites to
run, and the reference text of every tinyllm module the tests' side needs
(the module under test itself is only a proxy there, built from its
contract).  Nothing else of the repository is visible to a run.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from ol.core.catalog import CONTRACT_TREE, COURSE_TESTS_SUPPORT, REFERENCE_TREE, STUDENT_TREE, dotted_name, load_catalog
from ol.core.errors import OlError
from ol.core.overlay import Source
from ol.core.test_folder import Snapshot, SuiteUnreadable, TestFolder
from ol.grading.mutants import MutantSet, build_mutant_set
from ol.grading.pytest_driver import NO_AUTOLOAD
from ol.grading.sandbox import confine
from ol.grading.sandbox.warm_link import Setup
from ol.grading.scheduler import Scheduler
from ol.grading.variants import Variant, alternate_key, pitfall_key

SANDBOX_ENV = {
    **confine.ONE_BLAS_THREAD,
    "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin",
    # no pytest plugin loaded by its package's entry point: a grade does not depend on which plugins the
    # machine that computes it has installed (this one: anyio, xdist, jaxtyping, pytest-benchmark,
    # platformdirs), and no run pays for their hooks; Hypothesis's is loaded by name (pytest_driver.plugins)
    NO_AUTOLOAD: "1",
}
# pytest as every graded run uses it: nothing written; the plugins that shell out or shuffle blocked by
# their names
PYTEST_ARGS = ["-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:benchmark", "-p", "no:faulthandler",
               "-p", "no:debugging", "-p", "no:pastebin", "-p", "no:junitxml", "--capture=no",
               "-W", "ignore::pytest.PytestAssertRewriteWarning"]


class GradingFault(OlError):
    """The grader itself failed (a sandbox, a fixture, the sandbox's files): exit 2 and
    no score, with the reason."""

    exit_code = 2


class GradingSession:
    """Everything grading one module needs, read once from the catalog."""

    # The suite is graded against the reference's mutants, which do not depend on
    # the student's code: failing course tests cost their own points, not the
    # suite's grade.  A session whose correct implementation is the student's own
    # code (ol.grading.local) needs that code to pass first.
    suite_needs_passing_code = False
    variants_must_import = False    # a variant caught without importing counts (a student kit's does not)
    # Survivors are shown by their witness (ol.grading.witnesses), found by replaying the calls the
    # course tests make on this tree's code (ol.core.runner's implementation): here the course's own,
    # trusted reference.  A kit records them on the student's own code, on the student's own machine.
    survivors_have_witnesses = True
    witnesses_recorded_on = "reference"

    def __init__(self, root: Path, module_id: str, *, cache_dir: Path | None = None,
                 pitfall_errors: list[str] | None = None):
        self.root = Path(root).resolve()
        self.catalog = load_catalog(self.root)
        self.module = self.catalog.get(module_id)
        grading = self.catalog.graded(module_id, "`ol check`")
        self.grading = grading
        self.target = dotted_name(grading.target)
        reference_path = self.root / REFERENCE_TREE / grading.target
        self.mutants: MutantSet = build_mutant_set(reference_path, self.root / grading.pitfalls,
                                                   self.root / grading.equivalent, cache_dir, pitfall_errors)
        self.reference = Variant("reference", _text(reference_path), f"{REFERENCE_TREE}/{grading.target}")
        self.alternates = tuple(Variant(alternate_key(n), _text(self.root / path), path)
                                for n, path in enumerate(grading.alternates, start=1))
        contract = self.module.contract_for(grading.target) or f"{CONTRACT_TREE}/{grading.target}i"
        self.contract = (contract, _text(self.root / contract))
        self.library = self._library()

    # ---- the variants --------------------------------------------------------------------

    def pitfall_variants(self) -> list[Variant]:
        """The pitfalls as graded: each one's chaff around the reference when
        the module has chaffs (ol.grading.chaffs), else each one's edits."""
        if self.grading.chaffs is None:
            return self.pitfall_edit_variants()
        from ol.grading.chaffs import chaff_variants, load_chaffs

        return chaff_variants(load_chaffs(self.root, self.grading, [p.id for p in self.mutants.pitfalls]),
                              self.reference)

    def pitfall_edit_variants(self) -> list[Variant]:
        """Each pitfall as the reference with its edits (`ol verify` compares them with the chaffs)."""
        return [Variant(pitfall_key(p.id), p.source, self.reference.origin) for p in self.mutants.pitfalls]

    def mutant_variants(self, which: str = "counted") -> list[Variant]:
        return [Variant(m.id, m.source, self.reference.origin) for m in getattr(self.mutants, which)]

    def student_variant(self, ref_deps: bool | str) -> tuple[Variant, dict]:
        """The student's own file, and the student's files of every module it
        needs that ol.core.deps does not take from the reference under `ref_deps`
        (False, True, or "unstarted"), as overrides for the implementation's side."""
        from ol.core.deps import from_reference

        path = self.root / STUDENT_TREE / self.grading.target
        student = Variant("student", _text(path, whose="your"), f"{STUDENT_TREE}/{self.grading.target}")
        overrides = {}
        closure = self.catalog.needs_closure(self.module)
        referenced = from_reference(self.root, closure, ref_deps)
        for owner in closure:
            if owner.id not in referenced:
                for name, file in owner.module_names.items():
                    overrides[name] = Source.from_text(_text(self.root / STUDENT_TREE / file, whose="your"),
                                                       f"{STUDENT_TREE}/{file}").to_json()
        return student, overrides

    # ---- what the sandboxes are given --------------------------------------------------

    def _library(self) -> dict[str, dict]:
        """Reference text of every tinyllm module the graded module and its needs
        consist of (packages included), except the module under test."""
        files: dict[str, str] = {}
        for owner in (*self.catalog.needs_closure(self.module), self.module):
            for name, file in owner.module_names.items():
                files[name] = file
        for name in list(files):
            parts = name.split(".")
            for depth in range(1, len(parts)):
                files.setdefault(".".join(parts[:depth]), "/".join(parts[:depth]) + "/__init__.py")
        files.pop(self.target, None)
        return {name: self._library_entry(file) for name, file in sorted(files.items())}

    def _library_entry(self, file: str) -> dict:
        """One module of the library: its text and the path its tracebacks name."""
        return Source.from_text(_text(self.root / REFERENCE_TREE / file), f"{REFERENCE_TREE}/{file}").to_json()

    @staticmethod
    def describe_variant(key: str) -> str | None:
        """How reports name a variant, where this session names it its own way (None: the usual name)."""
        return None

    def suite_path(self, folder: Path) -> str:
        """Where a suite sits among the sandbox's files: its path in the checkout (so reports
        name the student's own paths), else tests/<folder name>."""
        folder = Path(folder).resolve()
        return (str(folder.relative_to(self.root)) if folder.is_relative_to(self.root)
                else f"tests/{folder.name}")

    def tests_setup(self, suites: dict[str, Snapshot], left_out: frozenset[str] = frozenset()) -> Setup:
        """The student's suites' sandbox: the given suites (name -> snapshot of
        a folder) as files but those `left_out` (relative to their folder), the reference
        library, the proxy's contract.  Nothing of the course's
        implementations or tests: a suite must bring its own oracle."""
        files: dict[str, bytes] = {"pytest.ini": b"[pytest]\n"}
        suite_paths = {}
        for name, suite in suites.items():
            where = self.suite_path(suite.path)
            files.update({path: data for path, data in suite.read(where).items()
                          if path.removeprefix(where + "/") not in left_out})
            suite_paths[name] = where
        return Setup("tests", self._tests_header(suite_paths), files)

    def course_setup(self) -> Setup:
        """The course tests' sandbox: the course tests with their conftest and
        golden loader, the module's fixtures, and (for diagnosing a failure by
        the misconception it matches) the reference and the module's mutant
        files, at their repository paths."""
        files: dict[str, bytes] = {"pytest.ini": b"[pytest]\n"}
        for support in COURSE_TESTS_SUPPORT:
            if (self.root / support).is_file():
                files[support] = (self.root / support).read_bytes()
        files.update(read_folder(self.root / self.module.course_tests, self.module.course_tests))
        for fixture in self.module.fixtures:
            files[fixture] = (self.root / fixture).read_bytes()
        mutants = Path(self.grading.pitfalls).parent
        files.update(read_folder(self.root / mutants, mutants.as_posix()))
        files[self.reference.origin] = self.reference.source.encode()
        return Setup("tests", self._tests_header({"course": self.module.course_tests}), files)

    def _tests_header(self, suites: dict[str, str]) -> dict:
        return {
            "sys_path": host_sys_path(self.root), "env": dict(SANDBOX_ENV), "modules": self.library,
            "proxy": {"module": self.target, "contract": self.contract[1], "origin": self.contract[0]},
            "suites": suites, "preload": [n for n in self.library if "." in n], "pytest_args": PYTEST_ARGS,
        }

    def impl_setup(self) -> Setup:
        """The implementation's sandbox: the reference library, ready to load a variant."""
        header = {"sys_path": host_sys_path(self.root), "env": dict(SANDBOX_ENV), "modules": self.library,
                  "target": self.target, "preload": [n for n in self.library if "." in n]}
        return Setup("impl", header, {})

    def scheduler(self, suites: dict[str, Snapshot], *, course: bool = True, workers: int = 2, confinement: str | None = None,
               sharing: str = "isolated", limits: confine.Limits | None = None,
               left_out: frozenset[str] = frozenset()) -> Scheduler:
        """A Scheduler for these suites of the student's (none: course tests
        only; `left_out`: files, relative to their suite's folder, that the
        sandbox does not get), and the course tests unless course=False (not
        started: use it in a `with`)."""
        return Scheduler(self.tests_setup(suites, left_out) if suites else None, self.impl_setup(),
                      confinement=confinement or default_confinement(), hidden=self.root, workers=workers, sharing=sharing,
                      course=self.course_setup() if course else None, limits=limits)

    def fingerprint(self) -> str:
        """A hash of everything that shapes this module's grade: the catalog, the
        reference, alternates, pitfalls, equivalents, contract, course tests,
        fixtures, the library, and the grader's own code."""
        digest = hashlib.sha256()
        grading = Path(__file__).resolve().parent
        # the grader's code, sandbox/ included, and its test-folder rules
        paths = [grading.rglob("*.py"), [grading.parent / "core" / "test_folder.py"]]
        for path in sorted(p for group in paths for p in group):
            digest.update(path.read_bytes())
        for relative in ("course/catalog.toml", self.grading.pitfalls, self.grading.equivalent,
                         self.contract[0], *self.grading.alternates, *self.module.fixtures,
                         *COURSE_TESTS_SUPPORT):
            path = self.root / relative
            digest.update(relative.encode() + b"\0" + (path.read_bytes() if path.is_file() else b""))
        for relative, data in sorted(read_folder(self.root / self.module.course_tests, "").items()):
            digest.update(relative.encode() + b"\0" + data)
        if self.grading.chaffs is not None and (self.root / self.grading.chaffs).is_dir():
            for relative, data in sorted(read_folder(self.root / self.grading.chaffs, "").items()):
                digest.update(relative.encode() + b"\0" + data)
        digest.update(self.reference.source.encode())
        for name, entry in sorted(self.library.items()):
            digest.update(name.encode() + entry["source"].encode())
        return digest.hexdigest()


def default_confinement() -> str:
    """The strongest confinement this host allows (confine.choose_confinement)."""
    return confine.choose_confinement()[0]


def host_sys_path(root: Path) -> list[str]:
    """This interpreter's import path within its installation: not the
    repository (but for a virtual environment inside it), the current
    folder, nor any folder that PYTHONPATH or a .pth file adds (an editable
    install's checkout: the instructor's own files)."""
    kept = []
    for entry in sys.path:
        if not entry or entry == ".":
            continue
        real = os.path.realpath(entry)
        if confine.hides(root, real) or not os.path.exists(real) or not confine.within_installation(real):
            continue
        kept.append(real)
    return kept


def read_folder(folder: Path, prefix: str) -> dict[str, bytes]:
    """Every file under `folder` as {prefix/relative path: bytes}, read as the
    student's test folder is (ol.core.test_folder: the same caches
    skipped; links and oversized folders raise SuiteUnreadable), whether it
    holds the student's tests, the course tests or the mutants."""
    return TestFolder(folder).read(prefix)


def _text(path: Path, whose: str = "the course's") -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise OlError(f"{path} does not exist ({whose} file)") from None
    except UnicodeDecodeError as error:
        raise SuiteUnreadable(f"{path} is not UTF-8 text ({error}): save it as UTF-8") from None
