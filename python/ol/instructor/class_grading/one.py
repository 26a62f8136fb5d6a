"""Grade one submission: a private copy of the instructor's checkout, the
student's files in it, `ol check MODULE --ref-deps --isolated --json` run there.

    base, screening = base_record(module, submission, grading_key="...", confinement="confined")
    graded = grade_one(checkout, "L7.3", submission.files, workdir=Path(...))   # when screening.reason is None
    record = graded.about(base)            # or not_graded_record(base, screening)
    record.to_json()                       # <student>.json; GradeRecord.from_json reads it back

The copy has its own mutant cache (seeded with the given cache files, which
the submission cannot touch: the set depends only on the checkout) and its own
temporary folder; the check confines every run of the student's code, and is
told to refuse to run unconfined.  Nothing of one submission can reach
another's copy or the instructor's checkout.  The same function runs on this
machine and as a Ray task (ol.instructor.class_grading.cluster), so a grade is the same on both.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ol.core.catalog import Module
from ol.core.screening import Screening, screen
from ol.core.submissions import Submission
from ol.grading.check import DEFAULT_TIME_LIMIT, CheckResult
from ol.grading.sandbox.confine import UNCONFINED
from ol.instructor.class_grading.checkout import copy_checkout
from ol.instructor.class_grading.processes import CheckProcesses

SUBMISSION_TIMEOUT = 1200.0   # seconds for one whole check; a check stops its own runs far earlier


@dataclass
class GradeRecord:
    """One submission's record (<student>.json): the check's own result, and
    what ol.instructor.class_grading adds to it.  ol.instructor.class_grading.outcome reads it, by attribute only.

    In JSON the check's fields (CheckResult.to_json) sit beside these at the
    top level; a check that did not run (screened out, or a fault) has
    result None and writes only "passed": false, "score": null of its own."""

    student: str                    # the name the class's files use
    entry: str = ""                 # the entry of SUBMISSIONS it came from (the JSON says "source")
    module: str = ""
    digest: str = ""                # of the grading key and the files: an unchanged record is kept
    names: dict[str, str] = field(default_factory=dict)      # checkout path -> the file's name in the submission
    ignored: list[str] = field(default_factory=list)         # names in the submission that were not taken
    submitted: float | None = None  # the entry's own time (seconds since the epoch)
    unparsable: list[dict] = field(default_factory=list)     # test files that do not parse: {"file", "problem"}
    no_tests: str | None = None     # what to say when no test file was taken (ol.core.screening)
    taken_from: str = ""            # where the files were found, when deeper than expected (ol.core.submissions)
    confinement: str = ""           # what the check had in force (ol.grading.sandbox.confine)
    result: CheckResult | None = None
    seconds: float = 0.0
    error: str | None = None        # a fault of the grader (not the student's): why, for the instructor
    not_graded: dict | None = None  # {"reason", "details"} when the check was not run (ol.core.screening)

    def to_json(self) -> dict:
        own = {IN_JSON.get(f.name, f.name): getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("result", "not_graded")}
        checked = self.result.to_json() if self.result is not None else {"passed": False, "score": None}
        return {**checked, **own, **({"not_graded": self.not_graded} if self.not_graded is not None else {})}

    @classmethod
    def from_json(cls, record: dict) -> GradeRecord:
        """The record read back; a record holds the check's result when the check ran to its end."""
        named = {f.name: IN_JSON.get(f.name, f.name) for f in dataclasses.fields(cls) if f.name != "result"}
        own = {name: record[key] for name, key in named.items() if key in record}
        own["names"], own["ignored"] = dict(own.get("names") or {}), list(own.get("ignored") or [])
        own["unparsable"] = list(own.get("unparsable") or [])
        own.setdefault("student", "")
        return cls(**own, result=CheckResult.from_json(record) if "threshold" in record else None)

    def about(self, base: GradeRecord) -> GradeRecord:
        """This grading's outcome with the submission's own fields taken from `base`."""
        return dataclasses.replace(self, **{name: getattr(base, name) for name in SUBMISSION_FIELDS})


# A field whose JSON name is not its own: the record says "source", as grades.csv's column
# does (outside checks read both by it); the code says entry (GLOSSARY.md).
IN_JSON = {"entry": "source"}

SUBMISSION_FIELDS = ("student", "entry", "module", "digest", "names", "ignored", "submitted", "unparsable",
                     "no_tests", "confinement", "taken_from")


def base_record(module: Module, submission: Submission, *, grading_key: str,
                confinement: str) -> tuple[GradeRecord, Screening]:
    """What a record says of a submission besides the check's own result,
    and what can be said before grading.  The digest covers the checkout, the
    options that change a grade and the files, so an unchanged record can be
    kept."""
    screening = screen(module, submission)
    what = submission.digest() if not submission.refused else f"refused {submission.refused}"
    base = GradeRecord(student=submission.student, entry=submission.entry, module=module.id,
                       digest=hashlib.sha256(f"{grading_key} {what}".encode()).hexdigest(),
                       names=submission.names, ignored=submission.ignored, submitted=submission.submitted,
                       unparsable=screening.unparsable, no_tests=screening.no_tests, confinement=confinement,
                       taken_from=submission.taken_from)
    return base, screening


def not_graded_record(base: GradeRecord, screening: Screening) -> GradeRecord:
    """The record of a submission the check is not run on."""
    return dataclasses.replace(base, seconds=0.0, error=None,
                               not_graded={"reason": screening.reason, "details": screening.details})


def grade_one(checkout: Path, module_id: str, files: dict[str, bytes], *, workdir: Path, workers: int = 2,
              time_limit: float = DEFAULT_TIME_LIMIT, mutant_cache: list[Path] = (), confinement: str = "auto",
              timeout: float = SUBMISSION_TIMEOUT, processes: CheckProcesses | None = None) -> GradeRecord:
    """The check's --json result read back, with its seconds and error (None
    when graded); `GradeRecord.about(base)` adds the submission's own fields.

    confinement: how the check must confine its runs (confine.CONFINED
    or confine.BY_UID, as confine.choose_confinement() found it here), "auto" for
    the strongest the machine it runs on allows (a Ray worker), refusing to
    run unconfined; or confine.UNCONFINED (ol grade --allow-unconfined).
    processes: the grading's CheckProcesses, which an interrupt ends
    (ol.instructor.class_grading.processes.Interrupted is then raised, never a record)."""
    started = time.monotonic()
    workdir = Path(workdir)
    copy, home, tmp = workdir / "checkout", workdir / "home", workdir / "tmp"
    try:
        copy_checkout(Path(checkout), copy)
        try:
            for path, data in files.items():
                target = copy / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        except OSError as error:     # submissions.py refuses what it knows of; the disk may still say no
            return _error(started, f"could not write the submission's file {path}: {error.strerror or error}")
        for folder in (home, tmp, home / ".cache" / "tinyllm-ol"):
            folder.mkdir(parents=True, exist_ok=True)
        for cached in mutant_cache or ():   # the module's mutant set, built once for the class
            if Path(cached).is_file():
                shutil.copy2(cached, home / ".cache" / "tinyllm-ol" / Path(cached).name)
        command = [sys.executable, str(copy / "ol"), "check", module_id, "--ref-deps", "--isolated", "--json",
                   "--jobs", str(workers), "--time-limit", str(time_limit)]
        if confinement != UNCONFINED:
            command.append("--require-confinement")
        if confinement not in ("auto", UNCONFINED):
            command += ["--confinement", confinement]
        env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "OL_"))}
        env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), TMPDIR=str(tmp))
        try:
            done = (processes or CheckProcesses()).run(command, cwd=copy, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return _error(started, f"grading took longer than {timeout:.0f} s and was stopped")
        record = _parse(done)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    record.seconds = round(time.monotonic() - started, 2)
    return record


def _parse(done: subprocess.CompletedProcess) -> GradeRecord:
    """`ol check --json` prints one JSON object, even when it cannot grade."""
    try:
        data = json.loads(done.stdout)
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except ValueError:
        why = (done.stderr.strip() or done.stdout.strip())[-2000:]
        return GradeRecord(student="", error=f"ol check exited {done.returncode}: {why}")
    result = CheckResult.from_json(data) if "threshold" in data else None
    error = data.get("error") or None
    if done.returncode not in (0, 1) and not error:
        error = f"ol check exited {done.returncode}: {done.stderr.strip()[-2000:]}"
    return GradeRecord(student="", module=str(data.get("module") or ""), result=result, error=error,
                       confinement=result.confinement if result is not None else "")


def _error(started: float, message: str) -> GradeRecord:
    return GradeRecord(student="", error=message, seconds=round(time.monotonic() - started, 2))
