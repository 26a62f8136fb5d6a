"""The gradebook side of a class: who each entry is (a manifest), when it was
submitted, whether it was late, and a CSV a learning platform takes.

    manifest = read_manifest(Path("manifest.csv"))       # {entry: ManifestRow}
    deadline = parse_time("2026-03-01T23:59")              # a time without a zone is this machine's
    late(submitted, deadline)                              # "yes", "no", or "" (no deadline or no time)
    write_export("canvas", rows, Path("graded/grades-canvas.csv"), column="L7.3 RoPE")

The manifest is a CSV with a header: `entry` (the entry's name in
SUBMISSIONS, e.g. bob.zip, or the student name ol grade gave it), `id` (the
student's id on the platform), and optionally `name` and `submitted` (an ISO
8601 time; it wins over the entry's file time).

Exports (one row per student the manifest names; points as in grades.csv):

    canvas   Student, ID, SIS User ID, SIS Login ID, Section, <column>: Canvas's
             gradebook import (the manifest's id goes in ID; the other columns
             may stay empty; a new column name makes a new assignment)
    moodle   ID number, Full name, <column>: Moodle's "Import grades from CSV",
             mapping "ID number" to the user field of that name
    plain    id, name, points, maximum, passed, late
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ol.errors import OlError
from ol.files import write_whole

EXPORTS = ("canvas", "moodle", "plain")
MANIFEST_COLUMNS = ("entry", "id")
MANIFEST_OPTIONAL = ("name", "submitted")


class ManifestError(OlError):
    """--manifest cannot be read; the message names the row and the column."""


@dataclass(frozen=True)
class ManifestRow:
    entry: str
    id: str
    name: str = ""
    submitted: float | None = None


def parse_time(text: str) -> datetime:
    """An ISO 8601 time ("2026-03-01T23:59", "2026-03-01 23:59:00+01:00", a
    trailing Z); without a zone it is this machine's local time."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"expected an ISO 8601 time such as 2026-03-01T23:59 or 2026-03-01T23:59:00+01:00, "
                         f"got {text!r}") from None
    return moment.astimezone() if moment.tzinfo is None else moment


def shown_time(seconds: float | None) -> str:
    """A time as grades.csv writes it: ISO 8601 to the second, with this machine's offset."""
    if seconds is None:
        return ""
    return datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="seconds")


def late(submitted: float | None, deadline: datetime | None) -> str:
    if deadline is None or submitted is None:
        return ""
    return "yes" if submitted > deadline.timestamp() else "no"


def read_manifest(path: Path) -> dict[str, ManifestRow]:
    """{entry: row}; every problem is a ManifestError naming the line."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ManifestError(f"--manifest: cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip().lower() for name in reader.fieldnames or []]
    missing = [name for name in MANIFEST_COLUMNS if name not in header]
    if missing:
        raise ManifestError(f"--manifest: {path} has no column {', '.join(repr(m) for m in missing)} (its header: "
                            f"{', '.join(header) or 'none'}); expected a header {','.join(MANIFEST_COLUMNS)} "
                            f"and optionally {','.join(MANIFEST_OPTIONAL)}")
    rows: dict[str, ManifestRow] = {}
    for line, raw in enumerate(reader, start=2):
        row = {key.strip().lower(): (value or "").strip() for key, value in raw.items() if key is not None}
        where = f"--manifest: {path} line {line}"
        if not row.get("entry") or not row.get("id"):
            raise ManifestError(f"{where}: 'entry' and 'id' must both be given (got entry={row.get('entry')!r}, "
                                f"id={row.get('id')!r})")
        if row["entry"] in rows:
            raise ManifestError(f"{where}: the entry {row['entry']!r} is listed twice")
        submitted = None
        if row.get("submitted"):
            try:
                submitted = parse_time(row["submitted"]).timestamp()
            except ValueError as error:
                raise ManifestError(f"{where}, column submitted: {error}") from None
        rows[row["entry"]] = ManifestRow(row["entry"], row["id"], row.get("name", ""), submitted)
    return rows


@dataclass(frozen=True)
class ExportRow:
    id: str
    name: str
    points: str          # as grades.csv shows them
    maximum: str
    passed: str
    late: str


def write_export(kind: str, rows: list[ExportRow], path: Path, column: str) -> Path:
    """The rows as `kind` wants them (see the module's docstring)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if kind == "canvas":
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column])
        writer.writerows([row.name, row.id, "", "", "", row.points] for row in rows)
    elif kind == "moodle":
        writer.writerow(["ID number", "Full name", column])
        writer.writerows([row.id, row.name, row.points] for row in rows)
    elif kind == "plain":
        writer.writerow(["id", "name", "points", "maximum", "passed", "late"])
        writer.writerows([row.id, row.name, row.points, row.maximum, row.passed, row.late] for row in rows)
    else:
        raise ValueError(f"unknown export {kind!r}; expected one of {', '.join(EXPORTS)}")
    write_whole(path, buffer.getvalue())
    return path
