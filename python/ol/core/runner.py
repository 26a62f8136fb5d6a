"""Run a module's course tests (or the student's own tests) in a pytest subprocess.

The runner decides where every module of the run comes from and tells the
child through the overlay (ol.core.overlay, installed by the pytest plugin
ol.core.pytest_overlay); it never copies or edits a file.

    implementation="student"   the module's files from python/ (the student's)
    implementation="reference" the module's files from course/reference/python/
    ref_deps=True              the needs (transitively) from the reference (in a
                               student kit, a need it withholds from python/)
    ref_deps="unstarted"       the needs you have started from python/, the
                               others from the reference (ol.core.deps: the rule)
    sources={name: text}       replacement source for any module (a stub, a
                               mutant), without touching a file

    run = run_course_tests(root, "L7.3", ref_deps=True, capture=True)
    run.exit_code, run.passed, run.failed, run.output

A C module (L9.6) is compiled first, into the run's temporary folder
(ol.core.native_build); its binding, tinyllm.native, always comes from the
reference, and TINYLLM_NATIVE_LIB points it at the fresh build.  A C file
that does not compile stops the run with BuildFailed (exit 2 in the CLI).

The child is `python -m pytest` with PYTHONPATH=<root>/python first, so the
repository's own tree wins over any installed copy, cwd=<root>, and no
writes into the repository: `-p no:cacheprovider` (.pytest_cache),
`-p no:benchmark` (pytest-benchmark's .benchmarks), and Hypothesis keeps its
example database in <root>/.ol/hypothesis (gitignored) unless
HYPOTHESIS_STORAGE_DIRECTORY is already set, and skips its slow explain
phase (ol.core.pytest_hypothesis).  (Python's own __pycache__
folders, gitignored, are the one exception.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ol.core import deps
from ol.core.catalog import REFERENCE_TREE, STUDENT_TREE, Catalog, Module, dotted_name, load_catalog
from ol.core.errors import OlError
from ol.core.native_build import LIBRARY_ENV, build_native, c_files, native_bindings
from ol.core.overlay import Source

IMPLEMENTATIONS = ("student", "reference")
# Two of pytest's exit statuses (pytest.ExitCode) that `ol` words apart; named
# here so that `ol` starts without importing pytest.
PYTEST_USAGE_ERROR = 4     # ExitCode.USAGE_ERROR: pytest refused its arguments (those after --)
PYTEST_NO_TESTS = 5        # ExitCode.NO_TESTS_COLLECTED


class NotReady(OlError):
    """The run cannot start: the module or one of its needs is not started, or
    a test folder or reference file is missing.  The message says what to do."""


@dataclass(frozen=True)
class TestOutcome:
    """One test's result, as pytest reported it."""

    __test__ = False  # not a pytest test class, despite its name

    nodeid: str    # "course/tests/L7.3/test_rope.py::test_validation[odd]"
    outcome: str   # "passed", "failed", "skipped" or "error"

    @property
    def name(self) -> str:
        """The test's name with its parameters: "test_validation[odd]"."""
        return self.nodeid.rsplit("::", 1)[-1]

    @property
    def function(self) -> str:
        """The test function's name: "test_validation"."""
        return self.name.split("[", 1)[0]


@dataclass(frozen=True)
class TestRun:
    """The result of one pytest run.

    exit_code is pytest's own: 0 all passed, 1 some failed, 2 interrupted
    (e.g. a test file failed to import), 3 internal error, 4 usage error,
    5 no tests collected.
    """

    __test__ = False

    exit_code: int
    outcomes: tuple[TestOutcome, ...] = ()
    output: str = ""                        # stdout and stderr, when captured
    deselected: int = 0                     # tests left out by -k / -m
    command: tuple[str, ...] = field(default=(), repr=False)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def complete(self) -> bool:
        """True if every test was selected (no -k / -m filtering)."""
        return self.deselected == 0

    def names(self, *outcomes: str) -> list[str]:
        return [o.name for o in self.outcomes if o.outcome in outcomes]

    @property
    def passed(self) -> list[str]:
        return self.names("passed")

    @property
    def failed(self) -> list[str]:
        """Tests that failed or errored (including files that failed to import)."""
        return self.names("failed", "error")

    @property
    def skipped(self) -> list[str]:
        return self.names("skipped")


def run_course_tests(root: str | Path, module: Module | str, **options) -> TestRun:
    """Run `module`'s course tests (catalog `course_tests`); `options` are
    run_tests' keywords (ref_deps, sources, implementation, pytest_args,
    capture, catalog, timeout).

    Raises NotReady (with a message naming the fix) if the module's files are
    missing from the student's tree, or, without ref_deps, a need is not
    started; subprocess.TimeoutExpired if `timeout` seconds pass.
    """
    return _run_folder(root, module, "course_tests", options, lambda m: (
        f"the course tests of {m.id} ({m.course_tests}) are not in this "
        "checkout; the course is incomplete here (pull, or ask the instructor)"))


def run_student_tests(root: str | Path, module: Module | str, **options) -> TestRun:
    """Run the student's own tests (catalog `student_tests`) on the chosen
    code; `options` as for run_course_tests."""
    return _run_folder(root, module, "student_tests", options, lambda m: (
        f"you have no tests for {m.id} yet: {m.student_tests} does not exist "
        f"(./ol start {m.id} creates it with a starter test)"))


def _run_folder(root, module, folder_key: str, options: dict, missing) -> TestRun:
    """run_tests on the module's test folder named by `folder_key`."""
    catalog = options.pop("catalog", None) or load_catalog(root)
    module = catalog.get(module) if isinstance(module, str) else module
    tests = Path(catalog.root) / getattr(module, folder_key)
    if not tests.exists():
        raise NotReady(missing(module))
    return run_tests(catalog.root, module, [tests], catalog=catalog, **options)


def run_tests(
    root: str | Path,
    module: Module,
    test_paths: Iterable[str | Path],
    *,
    ref_deps: bool | str = False,
    sources: Mapping[str, str | Source] | None = None,
    implementation: str = "student",
    pytest_args: Sequence[str] = (),
    capture: bool = False,
    catalog: Catalog | None = None,
    timeout: float | None = None,
) -> TestRun:
    """Run pytest on `test_paths` with `module`'s code chosen as described above."""
    root = Path(root).resolve()
    with serving(root, module, catalog=catalog, implementation=implementation, ref_deps=ref_deps,
                 sources=sources) as served:
        if served.compiler_says and not capture:
            print(served.compiler_says, end="", flush=True)
        results_file = served.folder / "results.json"
        command = (
            sys.executable, "-m", "pytest", *(str(p) for p in test_paths),
            "-p", "ol.core.pytest_overlay", "-p", "ol.core.pytest_results", "-p", "ol.core.pytest_hypothesis",
            "-p", "no:cacheprovider", "-p", "no:benchmark",  # neither may write into the repository
            "--rootdir", str(root), *pytest_args,
        )
        env = dict(served.env, OL_RESULTS=str(results_file))
        if capture:
            done = subprocess.run(command, cwd=root, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=timeout)
            output = served.compiler_says + done.stdout
        else:
            sys.stdout.flush()
            done = subprocess.run(command, cwd=root, env=env, timeout=timeout)
            output = ""
        results = {"outcomes": [], "deselected": 0}
        if results_file.exists():  # pytest may stop before writing it (a usage error)
            results = json.loads(results_file.read_text(encoding="utf-8"))
    return TestRun(
        exit_code=done.returncode,
        outcomes=tuple(TestOutcome(r["nodeid"], r["outcome"]) for r in results["outcomes"]),
        output=output, deselected=results["deselected"], command=command,
    )


@dataclass(frozen=True)
class Served:
    """What a child Python needs to see tinyllm as a run of a module's tests does."""

    env: dict[str, str]           # child_env with OL_OVERLAY (and the native build's library)
    overlay: dict[str, Source]    # where each module comes from (plan_overlay)
    folder: Path                  # a private temporary folder, removed when the `with` ends
    compiler_says: str = ""       # the C compiler's warnings, ready to print ("" if none)


@contextmanager
def serving(
    root: str | Path,
    module: Module,
    *,
    catalog: Catalog | None = None,
    implementation: str = "student",
    ref_deps: bool | str = False,
    sources: Mapping[str, str | Source] | None = None,
) -> Iterator[Served]:
    """Prepare tinyllm as `module`'s tests see it, for the `with` block: plan
    the overlay, build the module's C (if any) into a temporary folder, and
    give the environment under which `python -p ol.core.pytest_overlay` (pytest)
    or ol.core.overlay.install_from_env() (any other child) installs it.

    Raises NotReady as plan_overlay does, and BuildFailed if the C does not compile.
    """
    root = Path(root).resolve()
    catalog = catalog or load_catalog(root)
    overlay = plan_overlay(root, module, catalog=catalog, implementation=implementation,
                           ref_deps=ref_deps, sources=sources)
    with tempfile.TemporaryDirectory(prefix="ol-run-") as tmp:
        build = build_native(root, module, Path(tmp) / "native", implementation=implementation, sources=sources)
        native_env = {LIBRARY_ENV: str(build.library)} if build else {}
        compiler_says = ""
        if build and build.messages:  # it compiled, with warnings worth reading
            compiler_says = f"ol: the compiler's warnings for {', '.join(c_files(module))}:\n{build.messages}\n\n"
        overlay_file = Path(tmp) / "overlay.json"
        overlay_file.write_text(json.dumps({n: s.to_json() for n, s in overlay.items()}), encoding="utf-8")
        env = child_env(root, OL_OVERLAY=str(overlay_file), **native_env)
        yield Served(env=env, overlay=overlay, folder=Path(tmp), compiler_says=compiler_says)


def plan_overlay(
    root: str | Path,
    module: Module,
    *,
    catalog: Catalog,
    implementation: str = "student",
    ref_deps: bool | str = False,
    sources: Mapping[str, str | Source] | None = None,
) -> dict[str, Source]:
    """Where each module of the run comes from: {dotted name: Source}.

    The module's own files from the student's tree (or the reference with
    implementation="reference"); its needs closure from the student's tree,
    from the reference with implementation="reference", or as ol.core.deps rules
    for ref_deps (True: the reference; "unstarted": the reference where the
    student has not started the need); then
    `sources` replaces any of these (a bare string is shown as living at the
    path it replaces).  Raises NotReady for missing student or reference files.

    C files are not imported, so they are not in the plan (build_native
    compiles them); the binding package of each C module, e.g. tinyllm.native,
    is, always from the reference tree, so that it wins over the student's
    python/tinyllm/native/ folder, which holds only the C.
    """
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
    root = Path(root).resolve()
    sources = dict(sources or {})
    reference = implementation == "reference"
    closure = catalog.needs_closure(module)

    missing_own = [f for f in module.files if dotted_name(f) not in sources
                   and not reference and not (root / STUDENT_TREE / f).exists()]
    if missing_own:
        raise NotReady(f"{module.id} is not started: {', '.join(STUDENT_TREE + '/' + f for f in missing_own)} "
                       f"does not exist. Run ./ol start {module.id} first.")
    policy = deps.as_policy(ref_deps)
    referenced = {m.id for m in closure} if reference else deps.from_reference(root, closure, policy)
    if policy == deps.MINE and not reference:
        unstarted = [m for m in closure if any(
            not (root / STUDENT_TREE / f).exists() for f in m.files if dotted_name(f) not in sources)]
        if unstarted:
            raise NotReady(_needs_message(module, closure, unstarted))
    for need in closure:
        if need.id not in referenced and policy != deps.MINE:
            _check_own_need(root, module, need, sources, policy)   # a kit's withheld need, or a started one

    plan: dict[str, Source] = {}
    for owner in (*closure, module):
        from_reference = reference or owner.id in referenced
        tree = REFERENCE_TREE if from_reference else STUDENT_TREE
        for name, file in owner.module_names.items():
            path = root / tree / file
            if from_reference and not path.exists() and name not in sources:
                raise NotReady(f"the reference for {owner.id} is missing: {tree}/{file} "
                               "(the course is incomplete here; ask the instructor)")
            plan[name] = Source.from_path(path)
        for name, file in native_bindings(owner).items():
            path = root / REFERENCE_TREE / file
            if not path.exists():
                raise NotReady(f"the binding of {owner.id}'s C is missing: {REFERENCE_TREE}/{file} "
                               "(the course is incomplete here; ask the instructor)")
            plan[name] = Source.from_path(path)

    c_names = {dotted_name(f) for f in c_files(module)}  # compiled by build_native, not imported
    for name, source in sources.items():
        if name in c_names:
            continue
        if isinstance(source, str):
            replaced = plan.get(name)
            origin = replaced.path if replaced is not None else str(root / STUDENT_TREE / (name.replace(".", "/") + ".py"))
            source = Source.from_text(source, origin=origin)
        plan[name] = source
    return plan


def _check_own_need(root: Path, module: Module, need: Module, sources: Mapping, policy: str) -> None:
    """A need that comes from the student's files under --ref-deps or
    --ref-unstarted (a student kit's withheld need): its files must exist."""
    missing = [f for f in need.module_names.values() if dotted_name(f) not in sources
               and not (root / STUDENT_TREE / f).exists()]
    if missing:
        raise NotReady(f"{module.id} needs {need.id}, whose reference is not in this student kit (it is graded too), "
                       f"so {deps.FLAGS[policy]} takes it from your own "
                       f"{', '.join(STUDENT_TREE + '/' + f for f in missing)}, which does not exist. "
                       f"Do {need.id} first: ./ol start {need.id} --ref-deps")


def child_env(root: str | Path, **extra: str) -> dict[str, str]:
    """The environment of a child Python that must import this repository's
    own `ol` and `tinyllm` first, whatever else is installed."""
    root = Path(root).resolve()
    env = dict(os.environ)
    paths = [str(root / STUDENT_TREE)]
    runner_tree = str(Path(__file__).resolve().parents[2])  # where this `ol` lives: the plugins
    if runner_tree not in paths:
        paths.append(runner_tree)
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONSAFEPATH"] = "1"  # no cwd or script dir ahead of PYTHONPATH
    env.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(root / ".ol" / "hypothesis"))
    env.update(extra)
    return env


def _needs_message(module: Module, closure: Sequence[Module], unstarted: Sequence[Module]) -> str:
    return (
        f"{module.id} needs {_join([m.id for m in closure])}, and you have not started "
        f"{_join([m.id for m in unstarted])}. Add --ref-deps to take the needs from the reference "
        f"and test only your {module.id}:\n    ./ol tests {module.id} --ref-deps\n"
        f"or --ref-unstarted to take from the reference only the needs you have not started, "
        f"or build them first: ./ol start {unstarted[0].id}"
    )


def _join(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
