"""What the grading platforms read from ol's exports, as their own importers
read it: Canvas's gradebook CSV (canvas_reads) and Gradescope's results.json
(valid_results)."""

from __future__ import annotations

import csv
import io
import re

CANVAS_STUDENT_INFO = 5      # Student, ID, SIS User ID, SIS Login ID, Section (update_column_count)


def canvas_reads(text: str) -> tuple[list[tuple[str, str | None, str | None]], dict[tuple[str, str], list[str]]]:
    """What Canvas's gradebook importer (instructure/canvas-lms,
    lib/gradebook_importer.rb) takes from a CSV: ([(title, id, points possible)
    per assignment], {(how the student is found, the value): scores}).  Its rules:
    the header's first cells hold "Student" and "ID"; "SIS User ID" then "SIS
    Login ID" third and fourth make five student columns, the fifth holding
    "Section"; an assignment header "Title (N)" names assignment N
    (Assignment.title_and_id); a row whose first cell holds "Points Possible"
    gives each assignment its points; a student is found by ID, else SIS User
    ID, else SIS Login ID, else name."""
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    assert "Student" in header[0] and "ID" in header[1], header
    assert re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]), header
    assert "Section" in header[CANVAS_STUDENT_INFO - 1], "the last student column must be Section"
    titles = [re.fullmatch(r"(.*)\s\((\d+)\)", h) for h in header[CANVAS_STUDENT_INFO:]]
    assignments = [(m.group(1), m.group(2)) if m else (h, None) for m, h in zip(titles, header[CANVAS_STUDENT_INFO:])]
    possible = [None] * len(assignments)
    students = {}
    for row in rows[1:]:
        if "Points Possible" in row[0]:
            possible = row[CANVAS_STUDENT_INFO:]
            continue
        key = next((kind, row[i]) for kind, i in (("ID", 1), ("SIS User ID", 2), ("SIS Login ID", 3), ("name", 0))
                   if row[i])
        students[key] = row[CANVAS_STUDENT_INFO:]
    return [(*a, p) for a, p in zip(assignments, possible)], students


def valid_results(data: dict) -> None:
    """Gradescope's documented fields and types; a test is scored or informational."""
    assert isinstance(data["score"], (int, float)) and isinstance(data["output"], str)
    assert isinstance(data["tests"], list)
    for test in data["tests"]:
        assert isinstance(test["name"], str) and test.get("visibility", "visible") in (
            "hidden", "after_due_date", "after_published", "visible")
        if "max_score" in test:
            assert 0 <= test["score"] <= test["max_score"], test
        elif "status" in test:
            assert test["status"] in ("passed", "failed") and "score" not in test, test
        else:                                   # informational, neither passed nor failed: one not run
            assert re.search(r"\(not run(: 0 of [0-9.]+ points)?\)$", test["name"]) and "score" not in test, test
