"""What `ol grade` writes for a class: grades.csv, one JSON per student, and
summary.md.

    grades.csv     student, passed, score, killed, counted, missed pitfalls,
                   course tests (passed/total), seconds, error, reason
    <student>.json the check's own --json, plus "student", "digest" (what
                   was graded: the files taken and the kit), "ignored" files
    summary.md     pass rate, a score histogram, the pitfalls most often
                   missed, the mutants that survive most often (what the class
                   does not test), and the students whose runs errored
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from pathlib import Path

CSV_FIELDS = ("student", "passed", "score", "killed", "counted", "missed pitfalls", "course tests", "seconds",
              "error", "reason")


def row(record: dict) -> dict[str, str]:
    """One student's line of grades.csv."""
    course = record.get("course_tests") or {}
    missed = [p["id"] for p in record.get("pitfalls", []) if not p.get("killed")]
    score = record.get("score")
    return {
        "student": record["student"],
        "passed": "yes" if record.get("passed") else "no",
        "score": "" if score is None else f"{math.floor(score * 100) / 100:.2f}",
        "killed": str(record.get("killed", "")) if score is not None else "",
        "counted": str(record.get("counted", "")) if score is not None else "",
        "missed pitfalls": " ".join(missed),
        "course tests": f"{course['passed']}/{course['total']}" if course else "",
        "seconds": f"{record.get('seconds', 0):.1f}",
        "error": (record.get("error") or "").replace("\n", " ")[:500],
        "reason": (record.get("reason") or "").replace("\n", " ")[:300],
    }


def write_csv(records: list[dict], path: Path) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for record in sorted(records, key=lambda r: r["student"]):
        writer.writerow(row(record))
    path.write_text(buffer.getvalue(), encoding="utf-8")


def write_record(record: dict, folder: Path) -> Path:
    path = folder / f"{record['student']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True), encoding="utf-8")
    tmp.replace(path)
    return path


def read_record(folder: Path, student: str) -> dict | None:
    try:
        record = json.loads((folder / f"{student}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def summary(module_id: str, records: list[dict]) -> str:
    """summary.md's text."""
    graded = [r for r in records if not r.get("error")]
    errored = sorted((r for r in records if r.get("error")), key=lambda r: r["student"])
    passed = [r for r in graded if r.get("passed")]
    lines = [f"# {module_id}: {len(records)} submissions", ""]
    share = f"{100 * len(passed) / len(records):.0f}%" if records else "-"
    lines += [f"- passed: {len(passed)} of {len(records)} ({share})",
              f"- graded: {len(graded)}; not graded (errors): {len(errored)}", ""]
    lines += ["## Scores", "", "| score | students | |", "|---|---|---|"]
    bins = Counter(min(9, int((r["score"] or 0) * 10)) for r in graded if r.get("score") is not None)
    stopped = sum(1 for r in graded if r.get("score") is None)
    for tenth in range(9, -1, -1):
        label = f"{tenth / 10:.1f}-{(tenth + 1) / 10:.1f}"
        lines.append(f"| {label} | {bins.get(tenth, 0)} | {'#' * bins.get(tenth, 0)} |")
    if stopped:
        lines.append(f"| not scored (course tests, rules or a rejected correct implementation) | {stopped} | |")
    missed = Counter(p["id"] for r in graded for p in r.get("pitfalls", []) if not p.get("killed"))
    misconception = {p["id"]: p.get("misconception", "") for r in graded for p in r.get("pitfalls", [])}
    lines += ["", "## Pitfalls most often missed", ""]
    lines += [f"- {pid} missed by {n}: {misconception.get(pid, '')}" for pid, n in missed.most_common()] or ["- none"]
    survivors = Counter(s["id"] for r in graded for s in r.get("survivors", []))
    where = {s["id"]: s for r in graded for s in r.get("survivors", [])}
    lines += ["", "## Mutants that survive most often (what the class does not test)", ""]
    for mutant, n in survivors.most_common(15):
        lines.append(f"- {n} students: `{mutant}` in {where[mutant].get('function', '')}")
        lines += ["", "  ```diff", *("  " + line for line in where[mutant].get("diff", "").splitlines()), "  ```", ""]
    if not survivors:
        lines.append("- none")
    lines += ["", "## Errors (not graded)", ""]
    lines += [f"- {r['student']}: {r['error'][:300]}" for r in errored] or ["- none"]
    return "\n".join(lines) + "\n"
