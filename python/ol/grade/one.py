"""Grade one submission: a private copy of the kit, the student's files in it,
`ol check MODULE --ref-deps --isolated --json` run there.

    base, screening = base_record(module, submission, kit_key="...", confinement="confined")
    record = grade_one(kit, "L7.3", submission.files, workdir=Path(...))   # when screening.reason is None
    record = {**record, **base}            # or not_graded_record(base, screening)

The copy has its own mutant cache (seeded with the given cache files, which
the submission cannot touch: the set depends only on the kit) and its own
temporary folder; the check confines every run of the student's code, and is
told to refuse to run unconfined.  Nothing of one submission can reach
another's copy or the instructor's checkout.  The same function runs on this
machine and as a Ray task (ol.grade.cluster), so a grade is the same on both.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ol.catalog import Module
from ol.grade.kit import copy_kit
from ol.grade.precheck import Screening, screen
from ol.grade.submissions import Submission
from ol.grading.check import DEFAULT_TIME_LIMIT
from ol.grading.confine import UNCONFINED

SUBMISSION_TIMEOUT = 1200.0   # seconds for one whole check; a check stops its own runs far earlier


def base_record(module: Module, submission: Submission, *, kit_key: str, confinement: str) -> tuple[dict, Screening]:
    """What a record says of a submission besides the check's own result
    (ol.grade.outcome lists the fields), and what can be said before grading.
    The digest covers the kit, the options that change a grade and the files,
    so an unchanged record can be kept."""
    screening = screen(module, submission)
    what = submission.digest() if not submission.refused else f"refused {submission.refused}"
    base = {"student": submission.student, "source": submission.source, "module": module.id,
            "digest": hashlib.sha256(f"{kit_key} {what}".encode()).hexdigest(),
            "names": submission.names, "ignored": submission.ignored, "submitted": submission.submitted,
            "unparsable": screening.unparsable, "no_tests": screening.no_tests, "confinement": confinement}
    return base, screening


def not_graded_record(base: dict, screening: Screening) -> dict:
    """The record of a submission the check is not run on."""
    return {**base, "passed": False, "score": None, "seconds": 0.0, "error": None,
            "not_graded": {"reason": screening.reason, "details": screening.details}}


def grade_one(kit: Path, module_id: str, files: dict[str, bytes], *, workdir: Path, workers: int = 2,
              time_limit: float = DEFAULT_TIME_LIMIT, mutant_cache: list[Path] = (), confinement: str = "auto",
              timeout: float = SUBMISSION_TIMEOUT) -> dict:
    """The check's --json result, plus "seconds" and "error" (null when graded).

    confinement: the mode the check must confine its runs in (confine.CONFINED
    or confine.BY_UID, as confine.choose_mode() found it here), "auto" for
    the strongest the machine it runs on allows (a Ray worker), refusing to
    run unconfined; or confine.UNCONFINED (ol grade --allow-unconfined)."""
    started = time.monotonic()
    workdir = Path(workdir)
    copy, home, tmp = workdir / "kit", workdir / "home", workdir / "tmp"
    try:
        copy_kit(Path(kit), copy)
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
            done = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout,
                                  start_new_session=True)
        except subprocess.TimeoutExpired:
            return _error(started, f"grading took longer than {timeout:.0f} s and was stopped")
        record = _parse(done)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    record["seconds"] = round(time.monotonic() - started, 2)
    return record


def _parse(done: subprocess.CompletedProcess) -> dict:
    """`ol check --json` prints one JSON object, even when it cannot grade."""
    try:
        record = json.loads(done.stdout)
        if not isinstance(record, dict):
            raise ValueError("not an object")
    except ValueError:
        why = (done.stderr.strip() or done.stdout.strip())[-2000:]
        return {"passed": False, "score": None, "error": f"ol check exited {done.returncode}: {why}"}
    record.setdefault("error", None)
    if done.returncode not in (0, 1) and not record.get("error"):
        record["error"] = f"ol check exited {done.returncode}: {done.stderr.strip()[-2000:]}"
    return record


def _error(started: float, message: str) -> dict:
    return {"passed": False, "score": None, "error": message, "seconds": round(time.monotonic() - started, 2)}
