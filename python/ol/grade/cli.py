"""`ol grade MODULE SUBMISSIONS`: grade a class, on this machine or on Ray.

    ./ol grade L7.3 submissions/ --out graded/           # one submission at a time
    ./ol grade L7.3 submissions/ --out graded/ --jobs 2  # side by side
    ./ol grade L7.3 submissions/ --ray auto              # on an existing Ray cluster

Each submission is graded like `ol check MODULE --ref-deps`, isolated and
confined, in a private copy of the kit (ol.grade.one).  Results go to DIR as
grades.csv, <student>.json and summary.md (ol.grade.class_report).  A second
run skips each submission whose files and kit are unchanged, so an
interrupted grading resumes where it stopped.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from ol.errors import OlError
from ol.exits import ERROR, OK
from ol.grading.cli import _positive_int, _time_limit


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Instructor: grade a folder of submissions (one folder, .zip or .tar.gz per student) by the "
        "module's mutation grade, each in a private, confined copy of the kit. Writes DIR/grades.csv, "
        "DIR/<student>.json and DIR/summary.md. Exit 0 when every submission has its row (a row may "
        "hold an error), 2 when grading could not run."
    )
    parser.add_argument("module", metavar="MODULE", help="a graded module id, e.g. L7.3")
    parser.add_argument("submissions", metavar="SUBMISSIONS", type=Path, help="a folder with one entry per student")
    parser.add_argument("--out", type=Path, metavar="DIR", default=None,
                        help="where the results go (default: SUBMISSIONS-graded beside SUBMISSIONS)")
    parser.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                        help="submissions graded side by side on this machine (default: the cores divided by "
                             "each check's --workers)")
    parser.add_argument("--workers", type=_positive_int, default=None, metavar="W",
                        help="runs side by side within one check (default: one more than the cores divided by "
                             "--jobs, as ol check does)")
    parser.add_argument("--ray", metavar="ADDRESS", default=None,
                        help="grade each submission as a task on an existing Ray cluster ('auto', or host:port)")
    parser.add_argument("--time-limit", type=_time_limit, default=60.0, metavar="SECONDS",
                        help="a check's time limit for the course tests and a suite on a correct implementation")
    parser.add_argument("--allow-unconfined", action="store_true",
                        help="grade even where bubblewrap cannot run (the results then say so); by default "
                             "ol grade refuses")


def run(args: argparse.Namespace, ctx) -> int:
    from ol.grade.class_report import read_record, summary, write_csv, write_record
    from ol.grade.kit import copy_kit, kit_digest
    from ol.grade.submissions import read_submissions
    from ol.grading import confine
    from ol.grading.mutants import cache_path
    from ol.grading.session import GradingSession

    try:
        module = ctx.module(args.module)
        if module.grading is None:
            raise OlError(f"{module.id} has no graded tests; ol grade grades "
                          f"{', '.join(m.id for m in ctx.catalog.modules if m.grading)}")
        mode, why = confine.choose_mode()   # namespaces, or (root without them: Docker) one user per run
        confined = mode != confine.UNCONFINED
        if not confined and not args.allow_unconfined:
            raise OlError(f"refusing to grade unconfined: {why}; "
                          "or pass --allow-unconfined where confinement cannot work")
        submissions = read_submissions(args.submissions, module)
    except (OlError, FileNotFoundError) as error:
        print(f"ol grade: {error}", file=ctx.err)
        return ERROR
    if not submissions:
        print(f"ol grade: {args.submissions} holds no submission", file=ctx.err)
        return ERROR
    out = args.out or args.submissions.parent / f"{args.submissions.name}-graded"
    out.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count() or 1
    jobs = args.jobs or max(1, cores // (args.workers or cores))
    workers = args.workers or max(1, cores // jobs) + 1

    session = GradingSession(ctx.root, module.id)   # builds the mutant cache once; each copy starts from it
    cache = [cache_path(session.reference.source)]
    kit = hashlib.sha256(f"{kit_digest(ctx.root)} {module.id} {args.time_limit} {mode}".encode()).hexdigest()
    records, todo = [], []
    for submission in submissions:
        digest = hashlib.sha256(f"{kit} {submission.digest()}".encode()).hexdigest()
        base = {"student": submission.student, "module": module.id, "digest": digest,
                "ignored": submission.ignored, "confinement": mode}
        previous = read_record(out, submission.student)
        if previous is not None and previous.get("digest") == digest:
            records.append(previous)                       # unchanged since it was graded: keep it
        elif submission.error:
            record = {**base, "passed": False, "score": None, "seconds": 0.0,
                      "error": f"malformed submission: {submission.error}"}
            write_record(record, out)
            records.append(record)
        else:
            todo.append((submission, base))
    progress = _Progress(len(todo), len(submissions) - len(todo), parallel=jobs, stream=ctx.err)

    def finish(base: dict, result: dict) -> None:
        record = {**result, **base}
        write_record(record, out)
        records.append(record)
        progress.done(record)

    try:
        if args.ray:
            from ol.grade.cluster import CACHE, KIT, grade_on_ray

            with tempfile.TemporaryDirectory(prefix="ol-grade-kit-") as staging:
                copy_kit(ctx.root, Path(staging) / KIT)
                copy_kit(cache[0].parent, Path(staging) / CACHE, files=[cache[0].name])
                bases = {submission.student: base for submission, base in todo}
                grade_on_ray(args.ray, Path(staging), Path(staging) / KIT / "python" / "ol", module.id,
                             [(s.student, s.files) for s, _ in todo], workers=workers,
                             time_limit=args.time_limit, confined=confined,
                             on_done=lambda record: finish(bases[record["student"]], record))
        else:
            from ol.grade.one import grade_one

            with tempfile.TemporaryDirectory(prefix="ol-grade-") as scratch, ThreadPoolExecutor(jobs) as pool:
                futures = {pool.submit(grade_one, ctx.root, module.id, submission.files,
                                       workdir=Path(scratch) / submission.student, workers=workers,
                                       time_limit=args.time_limit, mutant_cache=cache, confined=confined):
                           base for submission, base in todo}
                for future in as_completed(futures):
                    finish(futures[future], future.result())
    except OlError as error:
        progress.close()
        print(f"ol grade: {error}", file=ctx.err)
        return ERROR
    progress.close()
    write_csv(records, out / "grades.csv")
    (out / "summary.md").write_text(summary(module.id, records), encoding="utf-8")
    passed = sum(1 for r in records if r.get("passed"))
    errors = sum(1 for r in records if r.get("error"))
    print(f"ol grade {module.id}: {len(records)} submissions, {passed} passed, {errors} not graded "
          f"(errors); results in {out}", file=ctx.out)
    return OK


class _Progress:
    """A one-line bar on stderr: students done, and the time left estimated
    from the mean time per submission so far."""

    def __init__(self, total: int, skipped: int, parallel: int, stream=sys.stderr, width: int = 30):
        self.total, self.skipped, self.parallel, self.width = total, skipped, max(1, parallel), width
        self.stream, self.count, self.seconds = stream, 0, []
        self.started = time.monotonic()
        self.active = hasattr(stream, "isatty") and stream.isatty()
        if skipped:
            print(f"ol grade: {skipped} submission(s) unchanged since they were graded: kept", file=stream)

    def done(self, record: dict) -> None:
        self.count += 1
        self.seconds.append(float(record.get("seconds") or 0.0))
        left = self.total - self.count
        per = (time.monotonic() - self.started) / self.count
        eta = per * left
        filled = int(self.width * self.count / max(self.total, 1))
        line = (f"\r  grading [{'#' * filled}{'.' * (self.width - filled)}] {self.count}/{self.total} "
                f"submissions, about {_duration(eta)} left")
        if self.active:
            self.stream.write(line)
            self.stream.flush()
        else:
            print(f"ol grade: {record['student']} done ({self.count}/{self.total}, about {_duration(eta)} left)",
                  file=self.stream)

    def close(self) -> None:
        if self.active and self.count:
            self.stream.write("\r" + " " * (self.width + 60) + "\r")
            self.stream.flush()


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{math.ceil(seconds)} s"
    return f"{seconds / 60:.0f} min"
