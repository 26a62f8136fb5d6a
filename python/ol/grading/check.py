"""`ol check`: grade a student's own tests by mutation.

    1. the module's course tests pass on the student's code;
    2. the student's test folder passes the static check (ol.grading.static_check);
    3. the suite passes on the reference and on every alternate correct
       implementation ("your test rejects a correct implementation" otherwise);
    4. the suite runs against the pitfall mutants and every counted generated
       mutant; a mutant is killed when the suite fails, hangs or crashes on it.

    score  = killed / counted   (pitfalls and generated mutants alike)
    passed = score >= threshold and every pitfall killed

The student's tests run from a private copy in a temporary folder, against
tinyllm modules served from memory, fenced off from the repository
(ol.grading.sandbox): nothing in the repository changes during a check.
"""

from __future__ import annotations

import ast
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ol.catalog import REFERENCE_TREE, Catalog, Module, dotted_name, load_catalog
from ol.errors import OlError
from ol.grading import sandbox
from ol.grading.mutants import MutantSet, build_mutant_set
from ol.grading.static_check import check_test_folder

REFERENCE_KEY = "reference"


class NotGraded(OlError):
    """The module has no graded tests (no [module.grading] in the catalog)."""


@dataclass(frozen=True)
class PitfallOutcome:
    id: str
    misconception: str
    symptom: str
    killed: bool


@dataclass(frozen=True)
class Survivor:
    id: str
    function: str
    diff: str


@dataclass
class CheckResult:
    """What `ol check` found; `reason` is set when the check stopped early."""

    module: str
    threshold: float
    passed: bool = False
    score: float | None = None
    killed: int = 0
    counted: int = 0
    pitfalls: list[PitfallOutcome] = field(default_factory=list)
    survivors: list[Survivor] = field(default_factory=list)
    reason: str | None = None
    problems: list[str] = field(default_factory=list)   # lines that explain `reason`
    output: str = ""      # pytest's report of the suite on a correct implementation it rejects
    excluded: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def check_module(
    root: Path,
    module_id: str,
    *,
    tests: Path | None = None,
    ref_deps: bool = False,
    course_tests: bool = True,
    workers: int = 2,
    time_limit: float = 60.0,
    on_event: Callable[[dict], None] | None = None,
) -> CheckResult:
    """Grade the tests in `tests` (default: the student's folder for the module).

    course_tests=False skips step 1 (the instructor's `ol verify` grades the
    model answer against the reference).  time_limit bounds collecting the
    suite and each run on a correct implementation; a mutant gets 2 s + 10x
    the reference's run time, at most time_limit.
    """
    started = time.monotonic()
    root = Path(root).resolve()
    catalog = load_catalog(root)
    module = catalog.get(module_id)
    grading = module.grading
    if grading is None:
        raise NotGraded(
            f"{module.id} has no graded tests: `ol check` grades modules whose catalog entry has "
            f"[module.grading] ({', '.join(m.id for m in catalog.modules if m.grading)}). "
            f"Run ./ol tests {module.id} for its course tests."
        )
    tests = Path(tests) if tests is not None else root / module.student_tests
    result = CheckResult(module=module.id, threshold=grading.threshold)

    def stop(reason: str, problems: list[str]) -> CheckResult:
        result.reason, result.problems = reason, problems
        result.seconds = time.monotonic() - started
        return result

    if course_tests:
        from ol.runner import run_course_tests

        run = run_course_tests(root, module, ref_deps=ref_deps, capture=True, catalog=catalog)
        if not run.ok:
            failing = run.failed or [f"pytest exit code {run.exit_code}"]
            return stop("course tests fail on your code: fix them first (./ol tests "
                        f"{module.id}{' --ref-deps' if ref_deps else ''})", failing)

    if not tests.is_dir():
        return stop(f"no test folder {tests.relative_to(root) if tests.is_relative_to(root) else tests}: "
                    f"./ol start {module.id} creates it with a starter test", [])
    violations = check_test_folder(tests, root, grading.allowed_imports, _contract_names(root, catalog, grading))
    if violations:
        return stop("your tests do things graded tests may not (they were not run)", [str(v) for v in violations])

    mutants = build_mutant_set(root / REFERENCE_TREE / grading.target, root / grading.pitfalls, root / grading.equivalent)
    result.excluded = {"message_only": len(mutants.message_only), "equivalent": len(mutants.equivalent)}
    with tempfile.TemporaryDirectory(prefix="ol-check-") as work:
        suite = _private_suite(root, catalog, module, tests, Path(work))
        stages = _stages(root, grading, mutants, time_limit)
        if on_event is not None:
            on_event({"event": "plan", "runs": sum(len(stage.jobs) for stage in stages)})
        try:
            run = sandbox.run_stages(suite, stages, workers=workers, time_limit=time_limit, on_event=on_event)
        except sandbox.SuiteProblem as problem:
            return stop("your tests could not be run", str(problem).splitlines())
        _retry_without_grafting(suite, run, stages, time_limit)
        result.output = _why_rejected(suite, run, stages, time_limit, Path(work))

    rejecting = [v for v in run.verdicts.values() if v.key == REFERENCE_KEY or v.key.startswith("alternate:")]
    rejected = [v for v in rejecting if v.status != sandbox.PASSED]
    if rejected:
        lines = []
        for v in rejected:
            which = "the reference" if v.key == REFERENCE_KEY else f"a second correct implementation ({v.key})"
            tests_named = ", ".join(v.failed) or "(no single test: " + v.detail + ")"
            lines.append(f"your test rejects a correct implementation: {tests_named} {v.status} on {which}"
                         + (f" ({v.detail})" if v.detail and v.failed else ""))
        return stop("your tests fail on a correct implementation", lines)

    by_pitfall = [(p, run.verdicts.get(f"pitfall:{p.id}")) for p in mutants.pitfalls]
    by_mutant = [(m, run.verdicts.get(m.id)) for m in mutants.counted]
    result.pitfalls = [PitfallOutcome(p.id, p.misconception, p.symptom, bool(v and v.killed)) for p, v in by_pitfall]
    result.survivors = [Survivor(m.id, m.function, m.diff) for m, v in by_mutant if not (v and v.killed)]
    result.counted = len(by_pitfall) + len(by_mutant)
    result.killed = sum(o.killed for o in result.pitfalls) + sum(bool(v and v.killed) for _, v in by_mutant)
    result.score = result.killed / result.counted if result.counted else 1.0
    result.passed = result.score >= grading.threshold and all(o.killed for o in result.pitfalls)
    result.seconds = time.monotonic() - started
    return result


def _contract_names(root: Path, catalog: Catalog, grading) -> dict[str, frozenset[str]]:
    """Public names of each allowed tinyllm module's contract."""
    names: dict[str, frozenset[str]] = {}
    for module in catalog.modules:
        for file in module.files:
            name = dotted_name(file)
            contract = module.contract_for(file)
            if name not in grading.allowed_imports or contract is None or not (root / contract).exists():
                continue
            tree = ast.parse((root / contract).read_text())
            public = set()
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    public.add(node.name)
                elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    public.update(t.id for t in targets if isinstance(t, ast.Name))
            names[name] = frozenset(n for n in public if not n.startswith("_"))
    return names


def _private_suite(root: Path, catalog: Catalog, module: Module, tests: Path, work: Path) -> sandbox.Suite:
    """The student's tests copied into `work`, and every tinyllm module the
    graded module and its needs consist of, as reference texts."""
    # the copy sits where the student's folder sits, so reports name their paths
    copy = work / (tests.relative_to(root) if tests.is_relative_to(root) else Path("tests") / tests.name)
    shutil.copytree(tests, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis"))
    (work / "pytest.ini").write_text("[pytest]\n")
    files: dict[str, str] = {}
    for owner in (*catalog.needs_closure(module), module):
        for file in owner.files:
            if file.endswith(".py"):
                files[dotted_name(file)] = file
    for name in list(files):
        parts = name.split(".")
        for depth in range(1, len(parts)):
            package = ".".join(parts[:depth])
            files.setdefault(package, "/".join(parts[:depth]) + "/__init__.py")
    reference = root / REFERENCE_TREE
    modules = {name: (reference / file).read_text() for name, file in files.items()}
    origins = {name: str(work / "lib" / file) for name, file in files.items()}
    return sandbox.Suite(tests=copy, workdir=work, modules=modules, origins=origins,
                         target=dotted_name(module.grading.target), fenced=root)


def _stages(root: Path, grading, mutants: MutantSet, time_limit: float) -> list[sandbox.Stage]:
    alternates = tuple(
        sandbox.Job(f"alternate:{number}", (root / path).read_text())
        for number, path in enumerate(grading.alternates, start=1)
    )
    graded = tuple(sandbox.Job(f"pitfall:{p.id}", p.source) for p in mutants.pitfalls) + tuple(
        sandbox.Job(m.id, m.source) for m in mutants.counted
    )
    return [
        sandbox.Stage((sandbox.Job(REFERENCE_KEY),), run_all_tests=True, stop_unless_all_pass=True, time_limit=time_limit),
        sandbox.Stage(alternates, run_all_tests=True, stop_unless_all_pass=True, time_limit=time_limit),
        sandbox.Stage(graded),
    ]


def _why_rejected(suite: sandbox.Suite, run: sandbox.RunResult, stages, time_limit: float, work: Path) -> str:
    """pytest's own report (short tracebacks) of the suite on the first correct
    implementation it fails, run afresh in the sandbox; "" if none fails."""
    jobs = {job.key: job for stage in stages[:2] for job in stage.jobs}
    for key, job in jobs.items():
        verdict = run.verdicts.get(key)
        if verdict is not None and verdict.status in (sandbox.FAILED, sandbox.CRASHED):
            report = work / "report.txt"
            sandbox.fresh_verdict(suite, job, run_all=True, time_limit=time_limit, output=report)
            text = report.read_text(errors="replace") if report.exists() else ""
            return text[-6000:]
    return ""


def _retry_without_grafting(suite: sandbox.Suite, run: sandbox.RunResult, stages, time_limit: float) -> None:
    """A variant that could not be grafted in place runs in a fresh interpreter."""
    jobs = {job.key: job for stage in stages for job in stage.jobs}
    for key, verdict in list(run.verdicts.items()):
        if verdict.status == sandbox.ERROR:
            run.verdicts[key] = sandbox.fresh_verdict(suite, jobs[key], run_all=False, time_limit=time_limit)


def equivalent_verdicts(root: Path, module_id: str, *, tests: Path, workers: int = 2, time_limit: float = 60.0) -> list[str]:
    """Ids of the module's reviewed equivalent mutants that `tests` catch
    (`ol verify` runs the model answer: a caught one is not equivalent)."""
    root = Path(root).resolve()
    catalog = load_catalog(root)
    module = catalog.get(module_id)
    grading = module.grading
    mutants = build_mutant_set(root / REFERENCE_TREE / grading.target, root / grading.pitfalls, root / grading.equivalent)
    if not mutants.equivalent:
        return []
    with tempfile.TemporaryDirectory(prefix="ol-verify-") as work:
        suite = _private_suite(root, catalog, module, Path(tests), Path(work))
        stages = [
            sandbox.Stage((sandbox.Job(REFERENCE_KEY),), run_all_tests=True, stop_unless_all_pass=True, time_limit=time_limit),
            sandbox.Stage(tuple(sandbox.Job(m.id, m.source) for m in mutants.equivalent)),
        ]
        run = sandbox.run_stages(suite, stages, workers=workers, time_limit=time_limit)
    return [m.id for m in mutants.equivalent if run.verdicts.get(m.id) is not None and run.verdicts[m.id].killed]
