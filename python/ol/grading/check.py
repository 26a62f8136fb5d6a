"""`ol check`: grade a student's own tests by mutation.

    1. the module's golden fixtures are intact (a corrupted one is the
       course's fault: named, with the command that regenerates it);
    2. the course tests run on the student's code (the tests run trusted;
       the student's module runs confined on the other side of a proxy); when
       they fail, the student's tests are graded all the same (they are graded
       against the reference's mutants, which do not depend on the student's
       code) and the failure is kept in `course_failure`; only a session whose
       correct implementation is the student's own code stops there
       (GradingSession.suite_needs_passing_code: the student kit's local check).
       In the instructor's mode (isolated) they run after every run of the
       suite, so no run of the suite can learn what the student's code did;
       in the local check, whose suite is graded whatever they say, beside
       the suite's first runs (Scheduler.start_beside);
    3. the student's test folder passes the static check (ol.grading.static_check);
    4. the suite passes on the reference and on every alternate correct
       implementation ("your test rejects a correct implementation" otherwise);
    5. the suite runs against the pitfall mutants and every counted generated
       mutant, shuffled, with the correct implementations run again among
       them; a mutant is caught when the suite fails, hangs or crashes on it;
    6. each survivor gets its witness (ol.grading.witnesses), the call that tells
       it from the reference, unless the session says its mutants have none.

    score  = caught / counted   (the counted generated mutants; the pitfalls are graded
                                 apart: every one must be caught.  The record calls
                                 the caught ones `killed`, mutmut's word: a contract)
    passed = score >= threshold and every pitfall caught and every public
             function's floor met (ol.grading.floors) and every feature's
             (ol.grading.features) and the course tests pass

How runs are confined, and what each confinement guarantees: README.md in this folder.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ol.core.errors import OlError
from ol.core.test_folder import Snapshot, TestFolder
from ol.grading.events import OnEvent, StageEnded, Unconfined
from ol.grading.features import feature_floors
from ol.grading.floors import function_floors
from ol.grading.grader import FAILED, NOT_IMPORTED, NOT_RUN, REFUSED, CourseRun, Grader, SuiteProblem, Verdict
from ol.grading.verdict_cache import VerdictCache, code_digest
from ol.grading.rejected import rejected_tests
from ol.grading.sandbox import clone, confine
from ol.grading.sandbox.collector_link import SuiteBroke
from ol.grading.sandbox.warm_link import SandboxFault
from ol.grading.session import GradingFault, GradingSession
from ol.grading.static_check import FILE, Violation, check_student_tests
from ol.grading.variants import is_pitfall, pitfall_key
from ol.grading.witnesses import find_witnesses

DEFAULT_TIME_LIMIT = 60.0   # processor seconds: the course tests, collecting the suite, a correct run


@dataclass(frozen=True)
class PitfallOutcome:
    id: str
    misconception: str
    symptom: str
    killed: bool
    tests: tuple[str, ...] = ()    # the suite's tests that fail on it, in file order (the report's "by")


@dataclass(frozen=True)
class Survivor:
    id: str
    function: str
    diff: str
    possibly_equivalent: bool | None = None   # no call (nor, in a kit, for a survivor without a witness,
                                              # the course tests) tells it from a correct implementation;
                                              # None: not asked
    witness: dict | None = None   # the call that does (ol.grading.witnesses.Witness's fields), when one was found


@dataclass(frozen=True)
class MutantLine:
    """One counted generated mutant as the result lists it (the HTML page
    places it on its line; the floors count it by function)."""

    id: str
    function: str
    line: int
    killed: bool
    killed_by: str | None = None   # the first test that failed on it; None when none did or a crash killed it
    diff: str = ""
    possibly_equivalent: bool | None = None   # student kit, survivors only (None: not asked): as Survivor's
    feature: str = ""   # the chapter's feature its witness exercises (ol.grading.features); "" for none

    def to_json(self) -> dict:
        """The fields in order; possibly_equivalent only when it was asked."""
        data = dataclasses.asdict(self)
        if self.possibly_equivalent is None:
            del data["possibly_equivalent"]
        return data


@dataclass
class CheckResult:
    """What `ol check` found; `reason` is set when the check stopped early.

    to_json() is the one record everything outside ol.grading reads (ol check
    --json, ol grade's records, Gradescope); from_json() reads it back."""

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
    confinement: str = ""  # "confined", "confined-by-uid" or "unconfined" (ol.grading.sandbox.confine)
    memory_bound: str = ""  # the memory bound per run in force (ol.grading.sandbox.memory)
    time_limit: float = 0.0   # the processor seconds each run was given (CheckRequest.time_limit);
                              # a timeout's detail says it in words, this says it as a number
    course_tests: dict[str, int] = field(default_factory=dict)   # {"passed": n, "total": n}
    killed_by: dict[str, str] = field(default_factory=dict)      # variant id -> first test that failed on it
    mutants: list[MutantLine] = field(default_factory=list)      # every counted mutant
    carried_over: int = 0     # catches taken from the last check (their tests' code unchanged), not run again
    course_tests_kept: bool = False   # the course tests' pass taken from the last check (the same code)
    mutants_of: str = "the reference"  # what the mutants change: "your own code" in a student kit (ol.grading.local)
    floors: list[dict] = field(default_factory=list)     # each public function's floor (ol.grading.floors.Floor),
                                                         # then each feature's (the entries of `features`)
    features: list[dict] = field(default_factory=list)   # each feature of the chapter: id, title, share, caught,
                                                         # counted, needed, met (ol.grading.features)
    rejected: list[dict] = field(default_factory=list)   # each test failing on a correct implementation, once:
                                                         # test, failure, implementations (ol.grading.rejected);
                                                         # left out of the grade (the catalog's `rejected` policy)
    tests: int = 0            # the tests of the suite (as collected on the reference)
    graded_tests: int = 0     # those that passed on every correct run: the ones that grade
    course_failure: dict | None = None   # the course tests failed and the suite was graded all the same:
                                         # {"reason", "problems", "output"}, what a check stopped there gives
    not_imported: list[str] = field(default_factory=list)   # a student kit: variants of the student's code that
                                         # did not import, counted but never caught (ol.grading.local)

    def to_json(self) -> dict:
        """The record of `ol check --json`: the fields in JSON_FIELDS' order, and "error": None
        (a check that could not run writes not_run_json instead)."""
        data = {name: copy.deepcopy(getattr(self, name)) for name in JSON_FIELDS}   # the record owns its lists
        data["pitfalls"] = [dataclasses.asdict(p) for p in self.pitfalls]
        data["survivors"] = [dataclasses.asdict(s) for s in self.survivors]
        data["mutants"] = [m.to_json() for m in self.mutants]
        return {**data, "error": None}

    @classmethod
    def from_json(cls, record: dict) -> CheckResult:
        """A result read back from its record; keys it does not know are ignored
        (a record of ol grade holds its own), missing ones take the defaults."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {"module": "", "threshold": 0.0,    # null takes the default too
                  **{name: copy.deepcopy(record[name]) for name in known if record.get(name) is not None}}
        values["pitfalls"] = [PitfallOutcome(**_known(PitfallOutcome, {**p, "tests": tuple(p.get("tests") or ())}))
                              for p in record.get("pitfalls") or []]
        values["survivors"] = [Survivor(**_known(Survivor, s)) for s in record.get("survivors") or []]
        values["mutants"] = [MutantLine(**_known(MutantLine, m)) for m in record.get("mutants") or []]
        return cls(**values)


# The record's fields in the order `ol check --json` has always printed them:
# outside checks read them by these names (a kit test holds them to the dataclass).
JSON_FIELDS = ("module", "passed", "score", "threshold", "killed", "counted", "pitfalls", "survivors",
               "reason", "problems", "output", "excluded", "seconds", "confinement", "course_tests", "killed_by",
               "mutants", "carried_over", "course_tests_kept", "mutants_of", "floors", "rejected", "memory_bound",
               "tests", "graded_tests", "course_failure", "not_imported", "features", "time_limit")


def not_run_json(module: str, error: str) -> dict:
    """The record of a check that could not run (a usage error, or a fault of the grader)."""
    return {"module": module, "passed": False, "score": None, "error": error}


def _known(kind, record: dict) -> dict:
    names = {f.name for f in dataclasses.fields(kind)}
    return {key: value for key, value in record.items() if key in names}


@dataclass(frozen=True)
class CheckRequest:
    """What a check is asked to do; check_module decides from it how runs are
    confined, whether the suite is collected once, and whether the catches of
    the last check are kept."""

    tests: Path | None = None       # default: the student's folder for the module
    ref_deps: bool | str = False    # where the course tests take the module's needs from (ol.core.deps)
    course_tests: bool = True       # False: skip step 2 (ol verify grades the model answer)
    isolated: bool = False          # collect the suite afresh in every run, as the instructor's grade does
    require_confinement: bool = False   # refuse to run unconfined (the instructor's side); implies isolated
    confinement: str = "auto"       # "auto" (the strongest this host allows), confine.CONFINED or BY_UID
    fresh: bool = False             # grade every mutant again: neither read nor write .ol/verdicts
    workers: int = 2
    time_limit: float = DEFAULT_TIME_LIMIT
    memory_limit: int | None = None     # MiB per run, all its processes together (None: confine.Limits')
    verdicts: Path | None = None    # where the catches are kept (None: ROOT/.ol/verdicts/MODULE.json; tests name one)


def check_module(root: Path, module_id: str, request: CheckRequest = CheckRequest(), *,
                 session: GradingSession | None = None,
                 on_event: OnEvent | None = None) -> CheckResult:
    """Grade the tests `request.tests` (default: the student's folder for the module).

    time_limit is processor seconds: it bounds the course tests, collecting
    the suite and every run of it, each the same (nothing a run is given
    depends on another run: README.md here).  Decided here, from the
    request and the host (README.md in this folder says what each
    guarantees):

    - confinement: confine.choose_confinement(request.confinement); unconfined is
      refused when the request requires confinement or names one
      (OlError "refusing to grade unconfined"), and otherwise announced to
      on_event as Unconfined(why): feedback only;
    - sharing: "shared" (the suite collected once: the student's fast local
      check) only when confined, neither isolated nor requiring
      confinement, and where the collector can clone3 its runs
      (clone.usable()); "isolated" (every run collects it afresh: the
      instructor's grade) otherwise;
    - the verdict cache (ol.grading.verdict_cache: a re-check runs only what an
      edit can change): read and written only by a shared check that is not
      fresh, so an isolated grade never reads .ol/verdicts.

    Raises GradingFault (exit 2, no score) when the grader itself fails.
    """
    confinement, why = confine.choose_confinement(request.confinement)
    require_confinement(confinement, why, allowed=not request.require_confinement and request.confinement == "auto")
    if confinement == confine.UNCONFINED and on_event is not None:
        on_event(Unconfined(why))
    isolated = (request.isolated or request.require_confinement or confinement != confine.CONFINED
                or not clone.usable()[0])
    session = session or GradingSession(root, module_id)
    verdicts = None if isolated or request.fresh else (
        request.verdicts or session.root / ".ol" / "verdicts" / f"{session.module.id}.json")
    limits = confine.Limits(memory=request.memory_limit << 20) if request.memory_limit is not None else None
    result = _check(session, request, confinement=confinement, sharing="isolated" if isolated else "shared",
                    verdict_cache=verdicts, limits=limits, on_event=on_event)
    if session.survivors_have_witnesses:
        with_witnesses(session, result)
    return result


def with_witnesses(session: GradingSession, result: CheckResult) -> None:
    """Give each survivor its witness, or possibly_equivalent=True when no course-test call tells it
    from the reference; then each counted mutant its feature, and each feature its floor
    (ol.grading.features), which the suite must meet to pass.  The features rest on every counted
    mutant's witness (found once per mutant set and cached): a search that fails is a fault of the
    grader where the module has features, and costs only the witnesses where it has none.  In a
    student kit the code replayed is the student's own: there the suite does not pass, and the
    problem says why."""
    if result.reason is not None:
        return
    features = session.grading.features
    surviving = {s.id for s in result.survivors}
    try:
        found = find_witnesses(session, list(session.mutants.counted) if features else
                               [m for m in session.mutants.counted if m.id in surviving])
    except (GradingFault, OSError) as error:
        if features and not session.reference.is_trusted:
            said = str(error).strip().splitlines()
            result.passed = False
            result.problems.append(
                f"the chapter's features cannot be judged: the course tests' calls could not be replayed on a copy "
                f"of your {session.reference.origin} ({said[-1] if said else 'no reason given'}); the local check "
                "loads copies of it under other names to find the call that shows each change: let it import so")
            return
        if features:
            raise GradingFault(f"the features of {session.module.id} cannot be judged: {error}") from None
        print(f"ol: the survivors are shown without witnesses: {error}", file=sys.stderr)
        return
    result.survivors = [
        dataclasses.replace(s, witness=dataclasses.asdict(found[s.id]) if found.get(s.id) else None,
                            possibly_equivalent=s.id in found and found[s.id] is None)
        for s in result.survivors]
    if not features:
        return
    result.mutants = [dataclasses.replace(m, feature=found[m.id].feature if found.get(m.id) else "")
                      for m in result.mutants]
    result.features = feature_floors(features, result.mutants)
    result.floors = [f for f in result.floors if "id" not in f] + [
        {"function": f["title"], **f} for f in result.features]
    result.passed = result.passed and all(f["met"] for f in result.features)


def refusing_unconfined(confinement: str, allowed: bool) -> bool:
    """Whether a grade must not run in `confinement` (confine.choose_confinement's): unconfined, and not allowed to be."""
    return confinement == confine.UNCONFINED and not allowed


def require_confinement(confinement: str, why: str, *, allowed: bool = False, advice: str = "") -> None:
    """Raise OlError when refusing_unconfined: the words every command uses,
    with `why` (what confinement lacks here) and the command's own advice."""
    if refusing_unconfined(confinement, allowed):
        raise OlError(f"refusing to grade unconfined: {why}" + (f"; {advice}" if advice else ""))


def _check(session: GradingSession, request: CheckRequest, *, confinement: str, sharing: str, verdict_cache: Path | None,
           limits: confine.Limits | None, on_event: OnEvent | None,
           then: Callable[[Grader], None] | None = None) -> CheckResult:
    """The check's steps (the module's docstring), in the confinement and sharing check_module chose;
    then(grader), when given, runs more in the same scheduler after a check that went to its end."""
    tests, ref_deps, course_tests = request.tests, request.ref_deps, request.course_tests
    workers, time_limit = request.workers, request.time_limit
    started = time.monotonic()
    root, module, grading = session.root, session.module, session.grading
    tests = Path(tests).resolve() if tests is not None else root / module.student_tests
    result = CheckResult(module=module.id, threshold=grading.threshold, confinement=confinement, time_limit=time_limit)
    result.excluded = {"message_only": len(session.mutants.message_only), "equivalent": len(session.mutants.equivalent)}

    def stop(reason: str, problems: list[str], output: str = "") -> CheckResult:
        result.reason, result.problems, result.output = reason, problems, output
        result.seconds = time.monotonic() - started
        return result

    stage = _Stages(on_event)
    check_fixtures(session)
    if course_tests:
        student, overrides = session.student_variant(ref_deps)
    if not tests.is_dir():
        return stop(f"no test folder {_shown(tests, root)}: ./ol start {module.id} creates it with a starter test", [])
    snapshot = TestFolder(tests).snapshot()   # read once: the static check judges the bytes that run
    violations = check_student_tests(root, session.catalog, module, snapshot)   # what ol tests --mine shows too
    refused, fatal = refused_files(violations, snapshot, root)
    cache = VerdictCache(verdict_cache, session, snapshot, time_limit=time_limit, memory_limit=request.memory_limit) \
        if verdict_cache is not None else None
    code = code_digest(student.source, overrides, ref_deps) if course_tests else ""
    kept_course = cache.course_passed(code) if cache is not None and course_tests else None
    stage("fixtures, the static check, the verdict cache")

    course_first = sharing == "shared"   # the local check: your code first, fast feedback
    try:
        with session.scheduler({"student": snapshot}, course=course_tests and kept_course is None, workers=workers,
                               confinement=result.confinement, sharing=sharing,
                               limits=limits, left_out=frozenset(refused)) as scheduler:
            result.memory_bound = scheduler.memory_bound()
            grader = Grader(session, scheduler, time_limit=time_limit, on_event=on_event)
            stage("the sandboxes' start (the warm processes' imports)")

            def course(beside: Callable[[], CourseRun] | None = None) -> CheckResult | None:
                """The course tests on the student's code (their result from `beside`
                where they were started beside the suite): the reason to stop, or None."""
                if kept_course is not None:
                    result.course_tests, result.course_tests_kept = kept_course, True
                    return None
                run = beside() if beside is not None else grader.course_tests(student, overrides)
                stage("the course tests")
                result.course_tests = {"passed": len(run.passed), "total": len(run.outcomes)}
                if not run.ok:
                    slow = [f"the course tests took longer than {time_limit:.0f} s on your code: look for a loop"]
                    failure = {"reason": _course_reason(module.id, ref_deps),
                               "problems": (slow if run.timed_out else []) + (
                                   run.failed or ([] if run.timed_out else ["pytest could not run them"])),
                               "output": run.output}
                    if session.suite_needs_passing_code:
                        return stop(**failure)
                    result.course_failure = failure     # each part stands on its own: the suite is graded next
                elif cache is not None:
                    cache.keep_course_pass(code, result.course_tests)
                return None

            def suite() -> CheckResult | None:
                """The student's suite against every variant: the reason to stop, or None."""
                nonlocal verdicts, by, carried_over, catches
                if fatal:
                    return stop("your tests do things graded tests may not (they were not run)",
                                [str(v) for v in violations])
                result.rejected = [refusal_entry(session.suite_path(snapshot.path), file, said)
                                   for file, said in sorted(refused.items())]   # in file order
                try:
                    variants = session.pitfall_variants() + session.mutant_variants()
                    # a pitfall is never carried over: it runs again, cut where the last check saw the rest
                    keys = [v.key for v in variants if not is_pitfall(v.key)]
                    carried = {key: Verdict(key, FAILED, (test,), 0.0, "caught before, its test unchanged")
                               for key, test in (cache.carried(keys) if cache is not None else {}).items()}
                    seen = cache.pitfalls_seen([v.key for v in variants if is_pitfall(v.key)]) if cache is not None else {}
                    verdicts = grader.suite(variants, carried=carried, seen=seen)
                    stage("the suite on every variant", runs=grader.runs, correct=grader.correct_runs,
                          again=grader.runs_again, cut=grader.runs_cut, collect=scheduler.collect_seconds)
                    carried_over = sum(1 for key in carried if verdicts.get(key) is carried[key])
                    result.tests = len(grader.collected)
                    result.graded_tests = result.tests - len(grader.left_out)
                    if grader.left_out:
                        found = rejected_tests(grader, session, grader.left_out)
                        stage("the left-out tests' pytest report")
                        result.rejected += found.entries
                        own = [e for e in found.entries if e["status"] != NOT_RUN]   # not collateral of a crash
                        if grading.rejected == "not graded":
                            return stop("your tests fail on a correct implementation", found.lines, found.output)
                        if len(own) > grading.max_rejected:
                            return stop(f"{len(own)} of your tests fail on a correct implementation (a suite is "
                                        f"graded with at most {grading.max_rejected} left out)", found.lines +
                                        [f"fix them, or remove them: each test left out tells the grade "
                                         f"something of what a correct implementation does, so only "
                                         f"{grading.max_rejected} may be"], found.output)
                    by = grader.by
                    catches = {key: v.failed[0] for key, v in verdicts.items()
                               if v.caught and v.failed and not is_pitfall(key)}
                except SuiteProblem as problem:
                    if grader.left_out:   # every test left out: say why, each
                        found = rejected_tests(grader, session, grader.left_out)
                        result.rejected += found.entries
                        return stop(problem.reason, found.lines, found.output)
                    return stop(problem.reason, problem.lines + [str(v) for v in violations], problem.output)
                except SuiteBroke as broke:
                    return stop("your tests broke the grader's connection", [str(broke), (
                        "graded tests may not write into descriptors they did not open; the suite is not graded")])
                return None

            verdicts: dict[str, Verdict] = {}
            by: dict[str, tuple[str, ...]] = {}
            carried_over = 0
            catches: dict[str, str] | None = None   # {variant key: the test that caught it}: what the verdict
                                                    # cache keeps, once the suite is graded
            if course_first and course_tests and kept_course is None and not session.suite_needs_passing_code:
                # the local check, whose suite is graded whatever the course tests say: they run
                # beside the suite's first runs (one run of theirs would leave the other slots idle)
                beside = grader.course_tests_beside(student, overrides)
                stopped = suite()
                stopped = course(beside) or stopped
            elif course_first:
                stopped = (course() if course_tests else None) or suite()
            else:   # the instructor's grade: the student's code runs only after every run of the suite
                stopped = suite()
                stopped = (course() if course_tests else None) or stopped
            if cache is not None and catches is not None:   # with the course tests' pass, once both are in
                cache.save(catches, grader.seen)
            if stopped is not None:
                return stopped
            if then is not None:
                then(grader)
    except SandboxFault as fault:
        raise GradingFault(f"the grader failed: {fault}") from None

    pitfalls = [(p, verdicts.get(pitfall_key(p.id))) for p in session.mutants.pitfalls]
    mutants = [(m, verdicts.get(m.id)) for m in session.mutants.counted]
    result.pitfalls = [PitfallOutcome(p.id, p.misconception, p.symptom, bool(v and v.caught),
                                      by.get(pitfall_key(p.id), ())) for p, v in pitfalls]
    result.survivors = [Survivor(m.id, m.function, m.diff) for m, v in mutants if not (v and v.caught)]
    result.killed_by = {key: v.failed[0] for key, v in verdicts.items() if v.caught and v.failed}
    result.not_imported = sorted(key for key, v in verdicts.items() if v.detail == NOT_IMPORTED)
    result.carried_over = carried_over
    result.mutants = [MutantLine(m.id, m.function, m.line, bool(v and v.caught), result.killed_by.get(m.id), m.diff)
                      for m, v in mutants]
    # Pitfalls are graded on their own (each must be caught, and ol grade gives them their own points);
    # the score counts the generated mutants alone, so no pitfall counts twice.
    result.counted = len(mutants)
    result.killed = sum(bool(v and v.caught) for _, v in mutants)
    result.score = result.killed / result.counted if result.counted else 1.0
    if isinstance(grading.rejected, float):   # the catalog's penalty per test (or file) left out by its own fault
        own = [e for e in result.rejected if e["status"] != NOT_RUN]
        result.score = max(0.0, result.score - grading.rejected * len(own))
    floors = function_floors(grading.floors, [m.to_json() for m in result.mutants], session.contract)
    result.floors = [f.as_dict() for f in floors]
    result.passed = (result.score >= grading.threshold and all(o.killed for o in result.pitfalls)
                     and all(f.met for f in floors) and result.course_failure is None)
    result.seconds = time.monotonic() - started
    return result


def refused_files(violations: list[Violation], suite: Snapshot, root: Path) -> tuple[dict[str, list[Violation]], list]:
    """The static check's verdict: ({file relative to the test folder: its
    violations} for each file left out, [the violations that stop the suite]).
    Every violation stops the suite when no test file would be left to grade."""
    refused: dict[str, list[Violation]] = {}
    fatal = [v for v in violations if v.scope != FILE]
    for violation in violations:
        if violation.scope == FILE:
            path = Path(violation.path) if Path(violation.path).is_absolute() else root / violation.path
            refused.setdefault(path.resolve().relative_to(suite.path.resolve()).as_posix(), []).append(violation)
    remaining = [name for name in suite.test_files() if name not in refused]
    if refused and not remaining:
        return {}, list(violations)
    return refused, fatal


def refusal_entry(suite_path: str, file: str, violations: list[Violation]) -> dict:
    """A file left out, as an entry of CheckResult.rejected (REFUSED: it was never run)."""
    return {"test": f"{suite_path}/{file}", "status": REFUSED, "implementations": [],
            "failure": "\n".join(f"line {v.line}: {v.message}" for v in violations)}


class _Stages:
    """Where a check's time goes: each call marks the end of a stage, told to
    on_event as StageEnded(name, its length, counts...) (bench/bench_check.py
    --profile adds them up)."""

    def __init__(self, on_event: OnEvent | None):
        self.on_event, self.last = on_event, time.monotonic()

    def __call__(self, name: str, **counts) -> None:
        now = time.monotonic()
        if self.on_event is not None:
            self.on_event(StageEnded(name, now - self.last, **counts))
        self.last = now


def _course_reason(module_id: str, ref_deps: bool | str) -> str:
    from ol.core.deps import flag

    return ("course tests fail on your code: fix them first (./ol tests "
            f"{module_id}{flag(ref_deps)})")


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def check_fixtures(session: GradingSession) -> None:
    """Every golden fixture of the module matches its own provenance; a
    broken one is the course's fault, never the student's."""
    import sys

    support = str(session.root / "course" / "tests")
    sys.path.insert(0, support)
    try:
        from golden import FixtureError, load_fixture
    except ImportError:
        return
    finally:
        sys.path.remove(support)
    for fixture in session.module.fixtures:
        if fixture.endswith(".npz"):
            try:
                load_fixture(session.root / fixture)
            except FixtureError as error:
                raise GradingFault(f"a golden fixture of {session.module.id} is broken (not your code): {error}") from None


def check_model_answer(session: GradingSession, tests: Path, *,
                       workers: int = 2) -> tuple[CheckResult, list[str]]:
    """ol verify's grade of the model answer `tests` (isolated, no course
    tests), and the ids of the reviewed equivalent mutants it catches (a
    caught one is not equivalent), in one scheduler: the correct implementations
    graded once, the pitfalls and counted mutants with repeats, then the
    equivalents without.  No equivalents are run when the check stops early."""
    request = CheckRequest(tests=tests, course_tests=False, isolated=True, workers=workers)
    confinement, _ = confine.choose_confinement(request.confinement)
    caught: list[str] = []

    def equivalents(grader: Grader) -> None:
        variants = session.mutant_variants("equivalent")
        if variants:
            caught.extend(key for key, verdict in grader.suite(variants, correct=False).items() if verdict.caught)

    result = _check(session, request, confinement=confinement, sharing="isolated", verdict_cache=None, limits=None, on_event=None,
                    then=equivalents)
    return result, caught


__all__ = ["DEFAULT_TIME_LIMIT", "JSON_FIELDS", "CheckResult", "MutantLine", "PitfallOutcome", "Survivor",
           "CheckRequest", "check_fixtures", "check_model_answer", "check_module", "not_run_json",
           "refusing_unconfined", "require_confinement"]
