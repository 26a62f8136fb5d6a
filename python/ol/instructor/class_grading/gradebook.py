"""The gradebook side of a class: who each entry is (a manifest), when it was
submitted, when it was due, the late penalty, and a CSV a learning platform
imports as it is.

    manifest = read_manifest(Path("manifest.csv"))       # {entry: ManifestRow}
    deadline = parse_time("2026-03-01T23:59")              # a time without a zone is this machine's
    policy = LatePolicy(rate=Fraction(1, 10), interval=DAY, cap=Fraction(1, 2), grace=900)
    lateness = policy.lateness(submitted, deadline)        # Lateness: late?, by how long, the penalty's share
    write_export("canvas", rows, Path("graded/grades-canvas.csv"), column="L7.3 RoPE", assignment_id="4711")

The manifest is a CSV with a header: `entry` (the entry's name in
SUBMISSIONS, e.g. bob.zip, or the student name ol grade gave it), `id` (the
student's id on the platform: Canvas's SIS User ID, Moodle's ID number), and
optionally `name`, `submitted` (an ISO 8601 time; it wins over the entry's
file time) and `deadline` (an ISO 8601 time: this student's own deadline, an
extension; it wins over --deadline), and for the exports `login` (Canvas's SIS
Login ID), `section` (Canvas's Section) and `email` (Moodle's Email address).

The late penalty follows Canvas's late policy (Canvas Instructor Guide, "How
do I apply a Late Submission policy in the Gradebook?"): a share of the
maximum for each day (or hour) started after the deadline, so 1.3 days late
at 10%/day takes 20% of the maximum; at most `cap` of it; never below 0
points.  A submission within `grace` of its deadline is not late at all.

Exports (one row per student the manifest names; the points after any late
penalty, as grades.csv's `points`):

    canvas   the columns Canvas's gradebook importer reads (instructure/canvas-lms,
             lib/gradebook_importer.rb): `Student, ID, SIS User ID, SIS Login ID,
             Section` (the importer counts these five before the assignments and
             finds a student by ID, then SIS User ID, then SIS Login ID, then
             name: the manifest's id goes in SIS User ID, ID stays empty), then
             the assignment's column; then a row whose first cell is `Points
             Possible`, holding the maximum under the assignment.  A header
             "Name (N)", N a number, updates the assignment whose id is N (the
             importer's Assignment.title_and_id); any other header makes a new
             assignment: hence --assignment-id N
    moodle   Moodle's grade export layout, which its CSV import reads back (Moodle
             docs, "Grade import": the import format is the export format; map
             "ID number" to the user field useridnumber): `First name, Last name,
             ID number, Email address`, then the grade item's column
    plain    id, name, points, maximum, passed, late
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from pathlib import Path

from ol.core.errors import OlError
from ol.core.files import write_whole

EXPORTS = ("canvas", "moodle", "plain")
MANIFEST_COLUMNS = ("entry", "id")
MANIFEST_OPTIONAL = ("name", "submitted", "deadline", "login", "section", "email")
CANVAS_STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_POSSIBLE = "Points Possible"
MOODLE_USER_COLUMNS = ("First name", "Last name", "ID number", "Email address")
DAY, HOUR = 86400.0, 3600.0
INTERVALS = {"day": DAY, "hour": HOUR}


class ManifestError(OlError):
    """--manifest cannot be read; the message names the row and the column."""


@dataclass(frozen=True)
class ManifestRow:
    entry: str
    id: str
    name: str = ""
    submitted: float | None = None
    deadline: float | None = None      # this student's own deadline (an extension), seconds since the epoch
    login: str = ""
    section: str = ""
    email: str = ""


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


# ---- late work ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lateness:
    late: str                 # "yes", "no", or "" (no deadline, or no time)
    by: float = 0.0           # seconds after the deadline (0 when not late)
    share: Fraction = Fraction(0)    # the penalty, as a share of the maximum

    def said(self, policy: LatePolicy) -> str:
        """"late by 1 d 3 h: 20% of the maximum (10%/day, at most 50%)", or ""."""
        if self.late != "yes":
            return ""
        return f"late by {late_by(self.by)}: " + (f"{_percent(self.share)} of the maximum ({policy.said()})"
                                                   if policy.rate else "no late penalty")


@dataclass(frozen=True)
class LatePolicy:
    """--late-penalty RATE/INTERVAL, --late-cap, --grace (the module's docstring)."""

    rate: Fraction = Fraction(0)          # share of the maximum per interval started
    interval: float = DAY                 # DAY or HOUR
    cap: Fraction | None = None           # the most the penalty takes, as a share of the maximum
    grace: float = 0.0                    # seconds after the deadline that are not late

    def lateness(self, submitted: float | None, deadline: float | None) -> Lateness:
        """How late `submitted` is for `deadline` (both seconds since the epoch), and its penalty."""
        if deadline is None or submitted is None:
            return Lateness("")
        by = submitted - deadline
        if by <= self.grace:
            return Lateness("no")
        started = math.ceil(by / self.interval)          # a day (or hour) started counts whole, as Canvas counts
        share = min(self.rate * started, self.cap if self.cap is not None else Fraction(1), Fraction(1))
        return Lateness("yes", by, share)

    def said(self) -> str:
        unit = "day" if self.interval == DAY else "hour"
        parts = [f"{_percent(self.rate)}/{unit} started"]
        if self.cap is not None:
            parts.append(f"at most {_percent(self.cap)}")
        if self.grace:
            parts.append(f"after a grace of {late_by(self.grace)}")
        return ", ".join(parts)


def parse_late_penalty(text: str) -> tuple[Fraction, float]:
    """"10%/day" or "5%/hour": (the share, the interval in seconds)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%\s*/\s*(day|hour)\s*", text)
    if not match:
        raise ValueError(f"expected a percentage per day or per hour, such as 10%/day or 2%/hour, got {text!r}")
    share = _share(match.group(1), text)
    return share, INTERVALS[match.group(2)]


def parse_share(text: str) -> Fraction:
    """"50%": Fraction(1, 2); above 0% and at most 100%."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%\s*", text)
    if not match:
        raise ValueError(f"expected a percentage such as 50%, got {text!r}")
    return _share(match.group(1), text)


def _share(number: str, text: str) -> Fraction:
    share = Fraction(number) / 100
    if not 0 < share <= 1:
        raise ValueError(f"expected a percentage above 0% and at most 100%, got {text!r}")
    return share


DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": HOUR, "d": DAY}


def parse_duration(text: str) -> float:
    """"15m", "90s", "2h", "1d": seconds (at least 0)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    if not match:
        raise ValueError(f"expected a duration such as 15m, 90s, 2h or 1d, got {text!r}")
    return float(match.group(1)) * DURATION_UNITS[match.group(2)]


def late_by(seconds: float) -> str:
    """A delay as people say it: "3 min", "1 d 3 h", "2 h 5 min"."""
    minutes = max(1, math.ceil(seconds / 60))
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{minutes} min" if minutes and not days else ""]
    return " ".join(p for p in parts if p) or "0 min"


def _percent(share: Fraction) -> str:
    return f"{float(share * 100):g}%"


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
        times = {}
        for column in ("submitted", "deadline"):
            try:
                times[column] = parse_time(row[column]).timestamp() if row.get(column) else None
            except ValueError as error:
                raise ManifestError(f"{where}, column {column}: {error}") from None
        rows[row["entry"]] = ManifestRow(row["entry"], row["id"], row.get("name", ""), times["submitted"],
                                         times["deadline"], row.get("login", ""), row.get("section", ""),
                                         row.get("email", ""))
    return rows


@dataclass(frozen=True)
class ExportRow:
    id: str
    name: str
    points: str          # as grades.csv shows them (after any late penalty)
    maximum: str
    passed: str
    late: str
    login: str = ""
    section: str = ""
    email: str = ""


def write_export(kind: str, rows: list[ExportRow], path: Path, column: str, assignment_id: str = "") -> Path:
    """The rows as `kind` wants them (see the module's docstring); with
    `assignment_id` Canvas's header names that assignment: "column (N)"."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if kind == "canvas":
        header = f"{column} ({assignment_id})" if assignment_id else column
        writer.writerow([*CANVAS_STUDENT_COLUMNS, header])
        maximum = rows[0].maximum if rows else ""
        writer.writerow([CANVAS_POINTS_POSSIBLE, "", "", "", "", maximum])
        writer.writerows([row.name, "", row.id, row.login, row.section, row.points] for row in rows)
    elif kind == "moodle":
        writer.writerow([*MOODLE_USER_COLUMNS, column])
        writer.writerows([*_first_and_last(row.name), row.id, row.email, row.points] for row in rows)
    elif kind == "plain":
        writer.writerow(["id", "name", "points", "maximum", "passed", "late"])
        writer.writerows([row.id, row.name, row.points, row.maximum, row.passed, row.late] for row in rows)
    else:
        raise ValueError(f"unknown export {kind!r}; expected one of {', '.join(EXPORTS)}")
    write_whole(path, buffer.getvalue())
    return path


def _first_and_last(name: str) -> tuple[str, str]:
    """A full name as Moodle's two columns: the first word, and the rest
    (the import matches students by ID number; the names are for reading)."""
    first, _, last = name.strip().partition(" ")
    return first, last.strip()
