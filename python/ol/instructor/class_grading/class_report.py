"""What `ol grade` writes for a class: grades.csv, one JSON record per
student, and summary.md.  The words are the same everywhere, in the README
too: a student has SUBMITTED; a submission is GRADED (the check gave it a
score) or NOT GRADED (and the reason says why); a graded one PASSED or NOT
PASSED (and the reason says why).

    grades.csv     CSV_FIELDS, one row per submission, by student name
    <student>.json the record (ol.instructor.class_grading.one.GradeRecord says what it holds)
    summary.md     the counts, the scores, the pitfalls most often missed,
                   the mutants that survive most often (what the class does
                   not test), why each not graded one was not, faults of the
                   grader, and submissions to look at (ol.instructor.class_grading.copies)
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

from ol.core.files import write_whole
from ol.instructor.class_grading.copies import SimilarPair
from ol.instructor.class_grading.feedback import ROUNDING
from ol.instructor.class_grading.one import GradeRecord
from ol.instructor.class_grading.outcome import NOT_GRADED, NOT_PASSED, PASSED, Outcome
from ol.instructor.class_grading.points import shown

SUBMITTED, GRADED = "submitted", "graded"
CSV_FIELDS = ("student", "source", "id", "submitted", "late", "status", "passed", "points", "points before penalty",
              "late penalty", "score", "killed", "counted", "missed pitfalls", "course tests", "seconds", "reason",
              "error")


def row(outcome: Outcome, *, student_id: str = "", submitted: str = "", late: str = "") -> dict[str, str]:
    """One student's line of grades.csv (points and score rounded down, ol.instructor.class_grading.points)."""
    return {
        "student": outcome.student, "source": outcome.entry, "id": student_id, "submitted": submitted,
        "late": late, "status": outcome.status, "passed": "yes" if outcome.status == PASSED else "no",
        "points": shown(outcome.points.total), "points before penalty": shown(outcome.points.before_penalty),
        "late penalty": shown(outcome.points.penalty) if outcome.points.late_share else "",
        "score": shown(outcome.score),
        "killed": str(outcome.killed) if outcome.graded else "",
        "counted": str(outcome.counted) if outcome.graded else "",
        "missed pitfalls": " ".join(outcome.missed),
        "course tests": f"{outcome.course[0]}/{outcome.course[1]}" if outcome.course else "",
        "seconds": f"{outcome.seconds:.1f}",
        "reason": outcome.reason.replace("\n", " ")[:500],
        "error": outcome.error[:500],
    }


def write_csv(rows: list[dict[str, str]], path: Path) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for line in sorted(rows, key=lambda r: r["student"]):
        writer.writerow(line)
    write_whole(path, buffer.getvalue())


def write_record(record: GradeRecord, folder: Path) -> Path:
    path = folder / f"{record.student}.json"
    write_whole(path, json.dumps(record.to_json(), indent=2, sort_keys=True))
    return path


def read_record(folder: Path, student: str) -> GradeRecord | None:
    """The record written for `student`, or None (none, or not one ol grade could have written)."""
    try:
        record = json.loads((folder / f"{student}.json").read_text(encoding="utf-8"))
        return GradeRecord.from_json(record) if isinstance(record, dict) else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    """submitted, graded, passed, not passed, not graded."""
    by_status = Counter(o.status for o in outcomes)
    return {SUBMITTED: len(outcomes), GRADED: by_status[PASSED] + by_status[NOT_PASSED], PASSED: by_status[PASSED],
            NOT_PASSED: by_status[NOT_PASSED], NOT_GRADED: by_status[NOT_GRADED]}


def headline(module_id: str, outcomes: list[Outcome]) -> str:
    """The one line ol grade prints at the end."""
    n = counts(outcomes)
    return (f"ol grade {module_id}: {n[SUBMITTED]} {SUBMITTED}, {n[GRADED]} {GRADED}, {n[PASSED]} {PASSED}, "
            f"{n[NOT_GRADED]} {NOT_GRADED}")


def summary(module_id: str, outcomes: list[Outcome], table: dict[str, float], *, late: int | None = None,
            deadline: str = "", pairs: list[SimilarPair] = (), late_policy: str = "", incomplete: str = "") -> str:
    """summary.md's text; `incomplete` says why it is not the whole class (an interrupt)."""
    n = counts(outcomes)
    graded = [o for o in outcomes if o.graded]
    lines = [f"# {module_id}: {n[SUBMITTED]} {SUBMITTED}", "", *([f"**{incomplete}**", ""] if incomplete else []),
             f"- {GRADED}: {n[GRADED]} (the check gave a score)",
             f"- {PASSED}: {n[PASSED]} of {n[SUBMITTED]} {SUBMITTED}",
             f"- {NOT_PASSED}: {n[NOT_PASSED]} ({GRADED}; why: grades.csv's reason)",
             f"- {NOT_GRADED}: {n[NOT_GRADED]} (why: below)"]
    if late is not None:
        lines.append(f"- late: {late} (submitted after {deadline})")
    parts = ", ".join(f"{name.replace('_', ' ')} {float(value):g}" for name, value in table.items())
    lines += ["", f"Points: {parts}. {ROUNDING}"]
    if late_policy:
        lines.append(f"Late penalty: {late_policy} (a share of the maximum, as Canvas's late policy counts); "
                     "grades.csv's points are after it, `points before penalty` before.")
    lines.append("")

    lines += ["## Scores of the graded", "", "| score | students | |", "|---|---|---|"]
    bins = Counter(min(9, int(o.score * 10)) for o in graded)
    for tenth in range(9, -1, -1):
        label = f"{tenth / 10:.1f}-{(tenth + 1) / 10:.1f}"
        lines.append(f"| {label} | {bins.get(tenth, 0)} | {'#' * bins.get(tenth, 0)} |")

    missed = Counter(pid for o in graded for pid in o.missed)
    misconception = {p.id: p.misconception for o in outcomes for p in o.pitfalls}
    lines += ["", "## Pitfalls most often missed", ""]
    lines += [f"- {pid} missed by {count}: {misconception.get(pid, '')}" for pid, count in missed.most_common()] \
        or ["- none"]

    survivors = Counter(s.id for o in graded for s in o.survivors)
    where = {s.id: s for o in graded for s in o.survivors}
    lines += ["", "## Mutants that survive most often (what the class does not test)", ""]
    for mutant, count in survivors.most_common(15):
        lines.append(f"- {count} student{'' if count == 1 else 's'}: `{mutant}` in {where[mutant].function}")
        lines += ["", "  ```diff", *("  " + line for line in where[mutant].diff.splitlines()), "  ```", ""]
    if not survivors:
        lines.append("- none")

    lines += ["", f"## {NOT_GRADED.capitalize()}: why", ""]
    lines += [f"- {o.student} ({o.entry}): {o.reason}" for o in sorted(outcomes, key=lambda o: o.student)
              if o.status == NOT_GRADED] or ["- none"]
    faults = [o for o in outcomes if o.error]
    if faults:
        lines += ["", "## Faults of the grader (not the students' work; grade these again)", ""]
        lines += [f"- {o.student}: {o.error[:300]}" for o in sorted(faults, key=lambda o: o.student)]

    lines += ["", "## Submissions to look at", "",
              "Code or tests alike after normalisation (names, numbers and strings made equal, comments and "
              "docstrings dropped; what the starter gives everyone, the shape of a correct solution and what most "
              "of the class shares left out; winnowed fingerprints as MOSS takes them), code and tests apart, "
              "most alike first. Alike is a reason to look, not a verdict.", ""]
    for part, title in (("tests", "Tests"), ("code", "Code")):
        lines += [f"### {title}", ""]
        lines += [f"- {p.first} and {p.second}: {p.part} "
                  + ("identical (the same files)" if p.identical else f"{p.similarity:.0%} alike")
                  + f" ({p.shared} fingerprints of their own in common)"
                  for p in pairs if p.part == part] or ["- none"]
        lines.append("")
    return "\n".join(lines)
