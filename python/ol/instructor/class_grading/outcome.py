"""One graded submission as the class's reports read it: the only place in
ol.instructor.class_grading that reads a check's result (ol.instructor.class_grading.one.GradeRecord, whose
`result` is ol.grading.check.CheckResult: attributes, never JSON keys).

    outcome = read_outcome(record, module_points, catalog_pitfalls)
    outcome.status      PASSED, NOT_PASSED or NOT_GRADED
    outcome.reason      why it is not a pass, in one line of the student's words ("" when passed)
    outcome.details     lines that explain the reason (the course tests' first failure, ...)
    outcome.points      ol.instructor.class_grading.points.Points (the same rule for grades.csv and Gradescope)
    outcome.late        how late, and its penalty (set by ol grade from the deadlines: gradebook.LatePolicy)
    check_result(outcome)           the record as a CheckResult, for ol.grading.html_report

A record (ol.instructor.class_grading.one.GradeRecord) is the check's result, plus what
ol.instructor.class_grading adds: who, from which entry, the files' names, what was not taken,
when, why it was not graded, a fault of the grader.

Every text shown to a student goes through `in_student_words`: a checkout
path becomes the name the student gave the file, and no path of the grader's
machine is left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING

from ol.instructor.class_grading.points import Points, points, shown

if TYPE_CHECKING:
    from ol.grading.check import CheckResult
    from ol.instructor.class_grading.one import GradeRecord

PASSED, NOT_PASSED, NOT_GRADED = "passed", "not passed", "not graded"
FIRST_FAILURE_LINES = 12      # lines of the course tests' first failure kept


@dataclass(frozen=True)
class PitfallLine:
    id: str
    misconception: str
    symptom: str
    caught: bool | None       # None: the suite was not graded, so not run on it


@dataclass(frozen=True)
class SurvivorLine:
    id: str
    function: str
    diff: str
    witness: dict | None = None            # ol.grading.witnesses.Witness's fields (the course's words)
    possibly_equivalent: bool | None = None


@dataclass(frozen=True)
class Outcome:
    student: str
    entry: str                               # the entry of SUBMISSIONS it came from
    module: str
    status: str
    reason: str
    details: tuple[str, ...]
    points: Points
    score: Fraction | None
    killed: int
    counted: int
    threshold: float
    course: tuple[int, int] | None          # (passed, total) when the course tests ran
    pitfalls: tuple[PitfallLine, ...]
    survivors: tuple[SurvivorLine, ...]
    suite_output: str                        # pytest's report of the suite on a correct implementation it rejects
    floors: tuple[dict, ...]                 # each public function's floor (ol.grading.floors): function, caught, ...
    rejected: tuple[dict, ...]               # each test failing on a correct implementation: test, failure, ...
    ignored: tuple[str, ...]
    submitted: float | None
    seconds: float
    error: str                               # a fault of the grader, for the instructor ("" when none)
    confinement: str
    record: GradeRecord | None = field(default=None, compare=False, repr=False)   # what it was read from
    late: str = ""                           # how late, and the penalty in points.late_share ("" when on time)

    @property
    def graded(self) -> bool:
        return self.status != NOT_GRADED

    @property
    def missed(self) -> list[str]:
        return [p.id for p in self.pitfalls if p.caught is False]


def read_outcome(record: GradeRecord, table: dict[str, float], catalog_pitfalls: list[dict]) -> Outcome:
    """The record as an Outcome.  table: the module's points per part;
    catalog_pitfalls: [{"id", "misconception", "symptom"}] from the catalog,
    so that a submission the check stopped early still lists every pitfall."""
    names, result = record.names, record.result
    course = result.course_tests if result is not None else None
    course_pair = (int(course["passed"]), int(course["total"])) if course and course.get("total") else None
    error = record.error or ""
    graded = not record.not_graded and not error and result is not None and result.score is not None
    mutants_caught, counted = (int(result.killed), int(result.counted)) if result is not None else (0, 0)
    score = Fraction(mutants_caught, counted) if graded and counted else (Fraction(1) if graded else None)
    by_id = {p.id: p for p in result.pitfalls} if result is not None else {}
    listed = catalog_pitfalls or [{"id": p.id, "misconception": p.misconception, "symptom": p.symptom}
                                  for p in by_id.values()]
    pitfalls = tuple(PitfallLine(p["id"], p["misconception"], p["symptom"],
                                 bool(by_id[p["id"]].killed) if graded and p["id"] in by_id else None)
                     for p in listed)
    caught = sum(1 for p in pitfalls if p.caught)
    status = NOT_GRADED if not graded else PASSED if result.passed else NOT_PASSED
    threshold = float(result.threshold or 0.0) if result is not None else 0.0
    floors = tuple(dict(f) for f in result.floors) if graded else ()
    rejected = tuple({**entry, "test": in_student_words(str(entry.get("test", "")), names),
                      "failure": in_student_words(str(entry.get("failure") or ""), names)}
                     for entry in (result.rejected if result is not None else ()))
    if status == NOT_GRADED:
        reason, details = _not_graded(record, rejected, error)
    elif status == NOT_PASSED:
        reason, details = _not_passed(score, threshold, pitfalls, floors), ()
    else:
        reason, details = "", ()
    failure = result.course_failure if result is not None and not error and not record.not_graded else None
    if failure:      # the suite was graded (or refused) on its own: the course tests' failure comes first
        said, told = _course_failure(result, list(failure.get("problems") or []), failure.get("output") or "",
                                     record.module or result.module)
        reason = "; ".join(part for part in (said, reason if reason != "not passed" else "") if part)
        details = (*told, *details)
    if record.taken_from:      # files found deeper than the layout expects: say from where
        reason = "; ".join(part for part in (reason, record.taken_from) if part)
    return Outcome(
        student=record.student, entry=record.entry or record.student,
        module=record.module or (result.module if result is not None else ""), status=status,
        reason=in_student_words(reason, names),
        details=tuple(in_student_words(line, names) for line in details),
        points=points(table, course=course_pair, score=score, pitfalls=(caught, len(pitfalls)) if graded else None),
        score=score, killed=mutants_caught if graded else 0, counted=counted if graded else 0, threshold=threshold,
        course=course_pair, pitfalls=pitfalls,
        survivors=tuple(SurvivorLine(s.id, s.function, s.diff, s.witness, s.possibly_equivalent)
                        for s in result.survivors) if graded else (),
        suite_output=in_student_words(result.output, names) if result is not None and _rejected(result) else "",
        floors=floors, rejected=rejected,
        ignored=tuple(record.ignored), submitted=record.submitted,
        seconds=float(record.seconds or 0.0), error=error.replace("\n", " "),
        confinement=record.confinement or "", record=record,
    )


def in_student_words(text: str, names: dict[str, str]) -> str:
    """`text` with every checkout path named as the student named the file,
    and no absolute path of a checkout's copy (…/checkout/python/... becomes
    python/...) or of the sandbox's files (/kit/python/..., ol.grading.sandbox.confine)."""
    text = re.sub(r"(?:/[^\s/:'\"()\[\]]+)*/(?:checkout|kit)/", "", text)
    for path in sorted(names, key=len, reverse=True):
        text = text.replace(path, names[path])
    return text


def _not_passed(score: Fraction, threshold: float, pitfalls: tuple[PitfallLine, ...], floors: tuple[dict, ...]) -> str:
    from ol.grading.floors import floor_line

    parts = []
    if float(score) < threshold:
        parts.append(f"score {shown(score)} below {threshold:.2f}")
    missed = [p.id for p in pitfalls if p.caught is False]
    if missed:
        parts.append(f"pitfall{'s' if len(missed) > 1 else ''} {', '.join(missed)} not caught")
    parts += [f"below a {'feature' if 'id' in f else 'function'}'s floor: {floor_line(f)}"
              for f in floors if not f.get("met")]
    return "; ".join(parts) or "not passed"


def _rejected(result: CheckResult) -> bool:
    return (result.reason or "").startswith("your tests fail on a correct implementation")


def _not_graded(record: GradeRecord, rejected: tuple[dict, ...], error: str) -> tuple[str, tuple[str, ...]]:
    """Why the check gave no score, from what it recorded (`rejected`: the
    result's rejected tests, already in the student's words)."""
    if record.not_graded:
        entry = record.not_graded
        return entry["reason"], tuple(entry.get("details") or ())
    if error or record.result is None:
        return ("the grader could not grade this submission (a fault of the grader, not of your work); "
                "your instructor has the details"), ()
    result = record.result
    reason = result.reason or "not graded"
    problems = [str(p) for p in result.problems]
    module = record.module or result.module
    if reason.startswith("course tests fail on your code"):
        return _course_failure(result, problems, result.output or "", module)
    if reason.startswith("your tests do things graded tests may not"):
        unparsable = record.unparsable
        if unparsable and all("does not parse" in p for p in problems if ": " in p):   # nothing else stopped it
            first = unparsable[0]
            return (f"your test file does not parse: {first['file']} {first['problem']}",
                    tuple(f"{u['file']} {u['problem']}" for u in unparsable))
        return (f"your tests do things graded tests may not, so they were not run: {_location(problems[0])}"
                if problems else reason), tuple(_location(p) for p in problems)
    if _rejected(result) and rejected:
        return _rejected_tests(reason, result, list(rejected), problems)
    if _rejected(result):
        lines = tuple(_location(p.removeprefix("your test rejects a correct implementation: ")) for p in problems)
        tests = list(dict.fromkeys(m.rstrip("):,") for p in problems for m in re.findall(r"[\w./-]+\.py::[^\s)]+", p)))
        from ol.grading.grader import TIMEOUT

        said = _timed_out(reason, result) if any(f" {TIMEOUT} on " in p for p in problems) else reason
        return (f"{said}: {', '.join(tests[:3])}" if tests else said), lines
    if record.no_tests and (reason.startswith("no test folder") or "found no tests" in " ".join(problems)):
        return record.no_tests, ()
    first = " ".join(problems[:2]) if problems and problems[0].endswith(":") else (problems[0] if problems else "")
    return (f"{reason}: {first}" if first else reason), tuple(problems)


def _timed_out(reason: str, result: CheckResult) -> str:
    """"your tests fail on ..." as "your tests time out on ... (20 s)": the
    limit the check gave each run (CheckResult.time_limit; a record written
    before it was kept has none to name)."""
    said = reason.replace("fail", "time out", 1)
    return f"{said} ({result.time_limit:g} s)" if result.time_limit else said


MAX_NAMED = 3               # rejected tests named in the reason
FAILURE_LINES = 8           # lines of each rejected test's failure in the details


def _rejected_tests(reason: str, result: CheckResult, rejected: list[dict],
                    problems: list[str]) -> tuple[str, tuple[str, ...]]:
    """The reason names the first tests with the first line of their failure
    ("test_a.py::test_x: NameError: name 'foo' is not defined"); the details
    give each test once: the correct implementations it fails on, and its
    failure as pytest's short summary words it."""
    from ol.grading.grader import TIMEOUT
    from ol.grading.variants import describe

    said = _timed_out(reason, result) if any(e.get("status") == TIMEOUT for e in rejected) else reason
    named = [e["test"] + (f": {_first_line(e['failure'])}" if e.get("status") != "timeout" and e.get("failure") else "")
             for e in rejected[:MAX_NAMED]]
    more = f"; and {len(rejected) - MAX_NAMED} more" if len(rejected) > MAX_NAMED else ""
    details = []
    for entry in rejected:
        where = " and ".join(describe(key) for key in entry.get("implementations") or [])
        details.append(f"{entry['test']} {entry.get('status', 'failed')} on {where}" + (":" if entry["failure"] else ""))
        details += [f"    {line}" for line in entry["failure"].rstrip().splitlines()[:FAILURE_LINES]]
    details += [p for p in problems if "(no single test:" in p]
    return f"{said}: {'; '.join(named)}{more}", tuple(details)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _location(problem: str) -> str:
    """"python/tests/x/test_a.py:12: message" as "test_a.py line 12: message"
    (the path itself is mapped to the student's name by in_student_words)."""
    return re.sub(r"^(\S+\.py):(\d+): ", r"\1 line \2: ", problem)


def _course_failure(result: CheckResult, failed: list[str], output: str, module: str) -> tuple[str, tuple[str, ...]]:
    """The course tests' failure in one line (with the diagnosis of the first
    failure), and the lines that explain it; `output` is pytest's report."""
    total = result.course_tests.get("total") or 0
    lines = first_failure(output)
    head = f"course tests fail on your code: {len(failed)} of {total} fail" if total else \
        "course tests fail on your code"
    if not lines:      # no report: they took too long, or pytest did not run
        return (f"{head}: {failed[0]}" if failed else head), (f"./ol tests {module} --ref-deps runs them",)
    diagnosis = next((line for line in lines if "(pitfall " in line or "(misconception " in line), None)
    first = failed[0] if failed else "?"
    summary = diagnosis or lines[0]
    return (f"{head}; first, {first}: {summary}",
            (f"the first failure ({first}):", *lines, f"./ol tests {module} --ref-deps runs them on your code"))


def first_failure(output: str) -> list[str]:
    """The assertion lines (pytest's `E` lines) of the first failure in a
    pytest report, without tracebacks of the code under test."""
    lines, inside = [], False
    for line in output.splitlines():
        if re.match(r"^_{3,} .+ _{3,}$", line):
            if inside:
                break
            inside = True
            continue
        if inside and line.startswith("E "):
            text = line[1:].strip()
            if text.startswith(("Raised in the code under test", "Traceback (most recent call last)")):
                break
            if text:
                lines.append(text.removeprefix("Failed: "))
            if len(lines) >= FIRST_FAILURE_LINES:
                break
    return lines


def check_result(outcome: Outcome):
    """The record as ol.grading.check's CheckResult (what html_report draws),
    in the student's words; a submission the check never saw is one the page
    shows as not graded, with the reason."""
    from ol.grading.check import CheckResult, PitfallOutcome, Survivor

    record = outcome.record
    names = record.names
    words = lambda text: in_student_words(text, names) if text else text   # noqa: E731
    result = CheckResult(module=outcome.module, threshold=outcome.threshold,
                         reason=outcome.reason if not outcome.graded else None,
                         problems=list(outcome.details), output=outcome.suite_output,
                         seconds=outcome.seconds, confinement=outcome.confinement,
                         rejected=[dict(entry) for entry in outcome.rejected])
    checked = record.result
    if checked is not None and checked.course_failure:
        result.course_tests = dict(checked.course_tests)
        result.course_failure = {**checked.course_failure, "problems": [
            words(p) for p in checked.course_failure.get("problems") or []], "output": ""}
    if not outcome.graded:
        return result
    result.floors = [dict(floor) for floor in outcome.floors]
    result.passed, result.score = outcome.status == PASSED, float(outcome.score)
    result.killed, result.counted = outcome.killed, outcome.counted
    result.tests, result.graded_tests = checked.tests, checked.graded_tests
    tests = {p.id: tuple(words(t) for t in p.tests) for p in checked.pitfalls}
    result.pitfalls = [PitfallOutcome(p.id, p.misconception, p.symptom, bool(p.caught), tests.get(p.id, ()))
                       for p in outcome.pitfalls]
    result.survivors = [Survivor(s.id, s.function, s.diff, s.possibly_equivalent, s.witness)
                        for s in outcome.survivors]
    result.excluded = dict(checked.excluded)
    result.course_tests = dict(checked.course_tests)
    result.killed_by = {key: words(test) for key, test in checked.killed_by.items()}
    result.mutants = [replace(m, killed_by=words(m.killed_by)) for m in checked.mutants]
    return result
