"""`ol grade MODULE SUBMISSIONS`: grade a class, on this machine or on Ray.

    ./ol grade L7.3 submissions/ --out graded/           # one submission at a time
    ./ol grade L7.3 submissions/ --out graded/ --jobs 2  # side by side
    ./ol grade L7.3 submissions/ --ray auto              # on an existing Ray cluster
    ./ol grade L7.3 submissions/ --manifest ids.csv --deadline 2026-03-01T23:59 --export canvas
    ./ol grade L7.3 submissions/ --deadline 2026-03-01T23:59 --late-penalty 10%/day --late-cap 50% --grace 15m
    ./ol grade L7.3 submissions/ --only bob carol         # grade these again, keep the others

Each submission is read safely (ol.core.submissions), screened
(ol.core.screening: what can be said without grading), and graded like
`ol check MODULE --ref-deps`, isolated and confined, in a private copy of
the checkout (ol.instructor.class_grading.one).  Submissions with the same files are graded once.
Results go to DIR: grades.csv, <student>.json and summary.md
(ol.instructor.class_grading.class_report), <student>.md and <student>.html (ol.instructor.class_grading.feedback),
grades-<platform>.csv (ol.instructor.class_grading.gradebook).  A second run keeps each record
whose files, checkout and options are unchanged, so an interrupted grading
resumes where it stopped; everything else is written again from the records.

Ctrl-C or SIGTERM ends every check under way (ol.instructor.class_grading.processes),
writes grades.csv and summary.md for what is graded so far, marked
incomplete (the rest "not graded yet", no export), and exits 130 or 143.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

from ol.core.arguments import positive_int, seconds
from ol.core.errors import OlError
from ol.core.exits import ERROR, INTERRUPTED, OK, TERMINATED
from ol.instructor.class_grading import gradebook
from ol.instructor.class_grading.one import GradeRecord


def _policy_type(parse, name: str):
    """One of gradebook's parsers of a class policy's text as an argparse type:
    its ValueError (what was expected, what came) becomes argparse's message."""
    def parsed(text: str):
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    parsed.__name__ = name
    return parsed


deadline = _policy_type(gradebook.parse_time, "deadline")               # an ISO 8601 time, as a datetime
late_penalty = _policy_type(gradebook.parse_late_penalty, "late_penalty")  # "10%/day": (share, seconds)
share = _policy_type(gradebook.parse_share, "share")                     # "50%": Fraction(1, 2)
duration = _policy_type(gradebook.parse_duration, "duration")            # "15m": 900.0


def configure(parser: argparse.ArgumentParser) -> None:
    from ol.grading.check import DEFAULT_TIME_LIMIT
    from ol.instructor.class_grading.feedback import DEFAULT_LEVEL, LEVELS
    from ol.instructor.class_grading.gradebook import EXPORTS

    parser.description = (
        "Instructor: grade a folder of submissions (one folder, .zip, .tar or .tar.gz per student) by the "
        "module's mutation grade, each in a private, confined copy of the checkout. Writes DIR/grades.csv, "
        "DIR/summary.md, and per student <student>.json, <student>.md and <student>.html. Exit 0 when every "
        "submission has its row (a row may say it was not graded, and why), 2 when grading could not run."
    )
    parser.add_argument("module", metavar="MODULE", help="a graded module id, e.g. L7.3")
    parser.add_argument("submissions", metavar="SUBMISSIONS", type=Path, help="a folder with one entry per student")
    parser.add_argument("--out", type=Path, metavar="DIR", default=None,
                        help="where the results go (default: SUBMISSIONS-graded beside SUBMISSIONS)")
    parser.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                        help="submissions graded side by side on this machine (default: the cores divided by "
                             "each check's --workers)")
    parser.add_argument("--workers", type=positive_int, default=None, metavar="W",
                        help="runs side by side within one check (default: one more than the cores divided by "
                             "--jobs, as ol check does)")
    parser.add_argument("--ray", metavar="ADDRESS", default=None,
                        help="grade each submission as a task on an existing Ray cluster ('auto', or host:port)")
    parser.add_argument("--time-limit", type=seconds, default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                        help="a check's time limit for the course tests and a suite on a correct implementation")
    parser.add_argument("--feedback", choices=LEVELS, default=DEFAULT_LEVEL,
                        help="what each student is handed back: none (no files), summary (<student>.md: the "
                             "points, why not a pass, the pitfalls), full (also the diffs of surviving mutants, "
                             f"the course tests' first failure, and <student>.html; default {DEFAULT_LEVEL})")
    parser.add_argument("--manifest", type=Path, metavar="CSV", default=None,
                        help="a CSV with a header entry,id and optionally name, submitted, deadline, login, "
                             "section, email: each entry's student id on your platform, the time it was submitted "
                             "(ISO 8601; default: the entry's file time) and the student's own deadline (an "
                             "extension; default --deadline)")
    parser.add_argument("--deadline", type=deadline, metavar="TIME", default=None,
                        help="ISO 8601, e.g. 2026-03-01T23:59 (this machine's time zone unless given): grades.csv "
                             "says which submissions are late")
    parser.add_argument("--late-penalty", type=late_penalty, metavar="RATE", default=None,
                        help="e.g. 10%%/day or 2%%/hour: that share of the maximum for each day (hour) started after "
                             "the student's deadline, as Canvas's late policy counts; grades.csv's points are after it")
    parser.add_argument("--late-cap", type=share, metavar="PERCENT", default=None,
                        help="e.g. 50%%: the most a late penalty takes, as a share of the maximum (default 100%%)")
    parser.add_argument("--grace", type=duration, metavar="DURATION", default=0.0,
                        help="e.g. 15m: a submission this soon after its deadline is not late (s, m, h or d)")
    parser.add_argument("--assignment-id", metavar="N", default=None, type=_assignment_id,
                        help="--export canvas: the Canvas assignment's id, so the import updates that assignment "
                             "(its header becomes 'Name (N)') instead of making a new one")
    parser.add_argument("--only", nargs="+", metavar="NAME", default=None,
                        help="grade these students again (a student name or an entry's name) and keep every other "
                             "row as it was recorded")
    parser.add_argument("--export", choices=EXPORTS, default=None,
                        help="also write DIR/grades-<platform>.csv to upload (needs --manifest for the ids)")
    parser.add_argument("--similarity", type=_similarity, default=None, metavar="S",
                        help="summary.md lists pairs of submissions whose code or tests are at least this alike "
                             "after normalisation, most alike first (0 to 1; default 0.8)")
    parser.add_argument("--allow-unconfined", action="store_true",
                        help="grade even where bubblewrap cannot run (the results then say so); by default "
                             "ol grade refuses")


def run(args: argparse.Namespace, ctx) -> int:
    from ol.core.command import Terminated
    from ol.core.submissions import read_submissions
    from ol.grading.sandbox import confine
    from ol.grading.check import require_confinement
    from ol.instructor.class_grading.gradebook import read_manifest

    try:
        module = ctx.module(args.module)
        ctx.catalog.graded(module.id, "ol grade")
        if args.export and args.manifest is None:
            raise OlError(f"--export {args.export} needs --manifest CSV: the file that gives each entry's student "
                          "id on your platform (a header entry,id)")
        if args.late_cap is not None and args.late_penalty is None:
            raise OlError("--late-cap caps a late penalty: give --late-penalty RATE too (e.g. 10%/day)")
        if args.assignment_id and args.export != "canvas":
            raise OlError("--assignment-id names a Canvas assignment: it goes with --export canvas")
        confinement, why = confine.choose_confinement()   # namespaces, or (root without them: Docker) one user per run
        require_confinement(confinement, why, allowed=args.allow_unconfined,
                            advice="or pass --allow-unconfined where confinement cannot work")
        manifest = read_manifest(args.manifest) if args.manifest else {}
        if args.late_penalty and args.deadline is None and not any(r.deadline for r in manifest.values()):
            raise OlError("--late-penalty needs a deadline: --deadline TIME, or a deadline column in --manifest")
        submissions = read_submissions(args.submissions, module)
        only = _only(args.only, submissions)
    except (OlError, FileNotFoundError) as error:
        print(f"ol grade: {error}", file=ctx.err)
        return ERROR
    if not submissions:
        print(f"ol grade: {args.submissions} holds no submission", file=ctx.err)
        return ERROR
    out = args.out or args.submissions.parent / f"{args.submissions.name}-graded"
    out.mkdir(parents=True, exist_ok=True)
    records: dict[str, GradeRecord] = {}
    try:
        _grade(args, ctx, module, submissions, only, out, confinement, records)
    except OlError as error:
        print(f"ol grade: {error}", file=ctx.err)
        return ERROR
    except (KeyboardInterrupt, Terminated) as stop:    # every check is ended: say what is graded so far
        print(f"ol grade: {'interrupted' if isinstance(stop, KeyboardInterrupt) else 'terminated'}: writing the "
              f"results of the {len(records)} submission(s) graded so far", file=ctx.err)
        pending = [s.student for s in submissions if s.student not in records]
        _write_results(args, ctx, module, submissions, records, manifest, out, pending=pending)
        return INTERRUPTED if isinstance(stop, KeyboardInterrupt) else TERMINATED
    return _write_results(args, ctx, module, submissions, records, manifest, out)


def _only(names: list[str] | None, submissions) -> set[str] | None:
    """The student names --only asks for (each NAME a student or an entry)."""
    if names is None:
        return None
    by_name = {s.student: s.student for s in submissions} | {s.entry: s.student for s in submissions}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        known = ", ".join(sorted(s.student for s in submissions)[:40])
        raise OlError(f"--only: no submission named {', '.join(unknown)}; the students are: {known}")
    return {by_name[name] for name in names}


def _grade(args, ctx, module, submissions, only, out: Path, confinement: str,
           records: dict[str, GradeRecord]) -> None:
    """Fill `records` ({student: record}) for every submission: kept, screened
    out, or graded now, each run confined in `confinement`
    (confine.choose_confinement).  Interrupted, `records` holds what is done."""
    from ol.instructor.class_grading.checkout import checkout_digest
    from ol.instructor.class_grading.class_report import read_record, write_record
    from ol.instructor.class_grading.one import base_record, not_graded_record

    cores = os.cpu_count() or 1
    jobs = args.jobs or max(1, cores // (args.workers or cores))
    workers = args.workers or max(1, cores // jobs) + 1
    grading_key = hashlib.sha256(
        f"{checkout_digest(ctx.root)} {module.id} {args.time_limit} {confinement}".encode()).hexdigest()
    groups: dict[str, tuple] = {}        # digest -> (files, [base, ...]): the same files are graded once
    kept, missing = 0, []
    for submission in submissions:
        base, screening = base_record(module, submission, grading_key=grading_key, confinement=confinement)
        previous = read_record(out, submission.student)
        if only is not None and submission.student not in only:
            if previous is not None:
                records[submission.student] = previous
            else:
                missing.append(submission.student)
        elif only is None and previous is not None and previous.digest == base.digest:
            records[submission.student] = previous.about(base)     # unchanged since it was graded: keep it
            kept += 1
        elif screening.reason is not None:
            records[submission.student] = not_graded_record(base, screening)
            write_record(records[submission.student], out)
        else:
            groups.setdefault(base.digest, (submission.files, []))[1].append(base)
    if missing:
        print(f"ol grade: not graded yet, left out (run without --only to grade them): {', '.join(missing)}",
              file=ctx.err)
    progress = _GradingsBar(len(groups), kept, stream=ctx.err)

    def finish(digest: str, graded: GradeRecord) -> None:
        for base in groups[digest][1]:
            record = graded.about(base)
            record.confinement = graded.confinement or base.confinement   # what the check had in force
            write_record(record, out)
            records[base.student] = record
        progress.done(groups[digest][1][0].student)

    try:
        if groups:
            _run_groups(args, ctx, module, groups, jobs=jobs, workers=workers, confinement=confinement, finish=finish)
    finally:
        progress.close()


def _run_groups(args, ctx, module, groups: dict, *, jobs: int, workers: int, confinement: str, finish) -> None:
    from ol.grading.sandbox import confine
    from ol.grading.mutants import cache_path
    from ol.grading.session import GradingSession

    session = GradingSession(ctx.root, module.id)   # builds the mutant cache once; each copy starts from it
    cache = [cache_path(session.reference.source)]
    if module.grading.features:   # and every counted mutant's witness, which the features rest on
        from ol.grading.witnesses import cache_every_witness

        cache.append(cache_every_witness(session))
    if args.ray:
        from ol.instructor.class_grading.checkout import copy_checkout
        from ol.instructor.class_grading.cluster import CACHE, CHECKOUT, grade_on_ray

        with tempfile.TemporaryDirectory(prefix="ol-grade-checkout-") as staging:
            copy_checkout(ctx.root, Path(staging) / CHECKOUT)
            copy_checkout(cache[0].parent, Path(staging) / CACHE, files=[c.name for c in cache])
            grade_on_ray(args.ray, Path(staging), Path(staging) / CHECKOUT / "python" / "ol", module.id,
                         [(digest, files) for digest, (files, _) in groups.items()], workers=workers,
                         time_limit=args.time_limit,   # a worker confines as strongly as it can, never less
                         confinement=confine.UNCONFINED if confinement == confine.UNCONFINED else "auto",
                         on_done=lambda record: finish(record.student, record))
        return
    from ol.instructor.class_grading.one import grade_one
    from ol.instructor.class_grading.processes import CheckProcesses, completed_awake

    processes = CheckProcesses()
    with tempfile.TemporaryDirectory(prefix="ol-grade-") as scratch:
        pool = ThreadPoolExecutor(jobs)

        def one(files: dict[str, bytes]) -> GradeRecord:
            workdir = Path(tempfile.mkdtemp(dir=scratch, prefix="submission-"))   # never shared, whatever the names
            return grade_one(ctx.root, module.id, files, workdir=workdir, workers=workers,
                             time_limit=args.time_limit, mutant_cache=cache, confinement=confinement,
                             processes=processes)

        try:
            futures = {pool.submit(one, files): digest for digest, (files, _) in groups.items()}
            for future in completed_awake(futures):
                try:
                    result = future.result()
                except Exception as error:  # noqa: BLE001 (one submission's fault is its own row, never the class's)
                    result = GradeRecord(student="", error=f"the grader failed: {type(error).__name__}: {error}")
                finish(futures[future], result)
        except BaseException:            # Ctrl-C, SIGTERM: end every check, wait for none to finish
            processes.stop()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)   # stopped, each thread returns within a poll


NOT_GRADED_YET = ("not graded yet: ol grade was interrupted before it graded this submission; the same command "
                  "again grades it (and keeps what is graded)")


def _write_results(args, ctx, module, submissions, records: dict[str, GradeRecord], manifest: dict,
                   out: Path, pending: list[str] = ()) -> int:
    """grades.csv, summary.md, the feedback files and the export, all from the
    records; with `pending` (students an interrupt left ungraded) the results
    so far, marked incomplete, and no export."""
    from ol.core.files import write_whole
    from ol.instructor.class_grading.checkout import catalog_pitfalls, graded_source
    from ol.instructor.class_grading.class_report import headline, row, summary, write_csv
    from ol.instructor.class_grading.copies import THRESHOLD, similar_pairs
    from ol.instructor.class_grading.feedback import write_feedback
    from ol.instructor.class_grading.gradebook import DAY, ExportRow, LatePolicy, shown_time, write_export
    from ol.instructor.class_grading.outcome import PASSED, read_outcome
    from ol.instructor.class_grading.points import shown

    table = module.grading.points
    pitfalls = catalog_pitfalls(ctx.root, module)
    source, source_path = graded_source(ctx.root, module)
    rows, outcomes, export = [], [], []
    entries = {s.student: s for s in submissions}
    records = {**records, **{student: GradeRecord(student=student, entry=entries[student].entry, module=module.id,
                                                  not_graded={"reason": NOT_GRADED_YET, "details": []})
                             for student in pending}}
    policy = LatePolicy(*(args.late_penalty or (Fraction(0), DAY)), cap=args.late_cap, grace=args.grace)
    for student, record in sorted(records.items()):
        try:
            outcome = read_outcome(record, table, pitfalls)
        except Exception as error:   # a record one run shaped: its student's row, never the class's
            record = GradeRecord(student=student, entry=record.entry, module=module.id, submitted=record.submitted,
                                 error=f"the grader could not read this submission's result: "
                                       f"{type(error).__name__}: {error}")
            outcome = read_outcome(record, table, pitfalls)
        entry = manifest.get(entries[student].entry) or manifest.get(student)
        submitted = entry.submitted if entry and entry.submitted is not None else outcome.submitted
        due = entry.deadline if entry and entry.deadline is not None else (
            args.deadline.timestamp() if args.deadline else None)
        lateness = policy.lateness(submitted, due)
        outcome = dataclasses.replace(outcome, points=outcome.points.late(lateness.share), late=lateness.said(policy))
        outcomes.append(outcome)
        rows.append(row(outcome, student_id=entry.id if entry else "", submitted=shown_time(submitted),
                        late=lateness.late))
        if student in pending:
            rows[-1].update({"points": "", "points before penalty": "", "late penalty": ""})
            continue
        if entry:
            export.append(ExportRow(entry.id, entry.name or student, shown(outcome.points.total),
                                    f"{float(outcome.points.maximum):g}",
                                    "yes" if outcome.status == PASSED else "no", lateness.late,
                                    entry.login, entry.section, entry.email))
        try:
            write_feedback(outcome, table, args.feedback, out, source, source_path)
        except Exception as error:   # one student's feedback never costs the class its grades.csv
            said = error.strerror if isinstance(error, OSError) and error.strerror else f"{type(error).__name__}: {error}"
            print(f"ol grade: could not write {student}'s feedback in {out}: {said}", file=ctx.err)
    write_csv(rows, out / "grades.csv")
    texts = {s.student: _texts(module, s) for s in submissions if not s.refused and s.student in records}
    pairs = similar_pairs(texts, starter=_starter(ctx.root, module),
                          threshold=args.similarity if args.similarity is not None else THRESHOLD)
    extended = any(entry.deadline is not None for entry in manifest.values())
    deadline = " ".join(part for part in (args.deadline.isoformat(timespec="minutes") if args.deadline else "",
                                          "or the student's own in --manifest" if extended else "") if part)
    late_count = sum(1 for r in rows if r["late"] == "yes") if args.deadline or extended else None
    incomplete = (f"INCOMPLETE: ol grade was interrupted before it graded {len(pending)} of the "
                  f"{len(records)} submissions (\"not graded yet\" below and in grades.csv; no export was "
                  "written). The same command again grades them and keeps the rest.") if pending else ""
    write_whole(out / "summary.md", summary(module.id, outcomes, table, late=late_count, deadline=deadline,
                                            pairs=pairs, late_policy=policy.said() if policy.rate else "",
                                            incomplete=incomplete))
    if manifest:
        named = {e.entry for e in submissions} | set(entries)
        unknown = sorted(name for name in manifest if name not in named)
        if unknown:
            print(f"ol grade: --manifest lists entries that are not in {args.submissions}: {', '.join(unknown)}",
                  file=ctx.err)
        unlisted = sorted(s.entry for s in submissions if s.entry not in manifest and s.student not in manifest)
        if unlisted:
            print(f"ol grade: not in --manifest (no id; left out of any export): {', '.join(unlisted)}", file=ctx.err)
    if args.export and pending:
        print(f"ol grade: --export {args.export}: not written, the grading is incomplete", file=ctx.err)
    elif args.export:
        path = write_export(args.export, export, out / f"grades-{args.export}.csv",
                            column=f"{module.id} {module.title}", assignment_id=args.assignment_id or "")
        print(f"ol grade: wrote {path} ({_count(len(export), 'student')})", file=ctx.err)
    said = f"; INCOMPLETE: {len(pending)} not graded yet (run the same command again)" if pending else ""
    print(f"{headline(module.id, outcomes)}{said}; results in {out}", file=ctx.out)
    return OK


def _count(n: int, noun: str) -> str:
    """"1 student", "2 students"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _similarity(text: str) -> float:
    """--similarity: a share from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a similarity from 0 to 1 (0.8: 80% of their own fingerprints "
                                         f"in common), got {text!r}")
    return value


def _assignment_id(text: str) -> str:
    """--assignment-id: Canvas's assignment id, a whole number."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected the Canvas assignment's id, a whole number (it ends the "
                                         f"assignment's address: .../assignments/4711), got {text!r}")
    return text.strip()


def _texts(module, submission) -> dict[str, str]:
    """The code and the tests of a submission, as text, for the copy finder."""
    tests = module.student_tests.rstrip("/") + "/"
    code = [data for path, data in sorted(submission.files.items()) if not path.startswith(tests)]
    suite = [data for path, data in sorted(submission.files.items()) if path.startswith(tests) and path.endswith(".py")]
    return {"code": b"\n".join(code).decode("utf-8", "replace"), "tests": b"\n".join(suite).decode("utf-8", "replace")}


def _starter(root: Path, module) -> dict[str, str]:
    """What every student's work shares without copying: the stubs and the
    starter test `ol start` gives everyone, and the shape of a correct
    module file (the reference and its alternates)."""
    from ol.core.catalog import REFERENCE_TREE, load_catalog
    from ol.student.workspace import fresh_stubs, starter_test_text

    try:
        correct = [root / REFERENCE_TREE / module.grading.target, *(root / a for a in module.grading.alternates)]
        return {"code": "\n".join([*fresh_stubs(root, module).values(), *(p.read_text(encoding="utf-8")
                                                                          for p in correct)]),
                "tests": starter_test_text(root, module, load_catalog(root))}
    except (OlError, OSError, UnicodeDecodeError):
        return {}


class _GradingsBar:
    """Gradings done, and the time left estimated from the mean time per
    grading so far: a bar on a terminal, a line per grading elsewhere."""

    def __init__(self, total: int, kept: int, stream=sys.stderr):
        from ol.core.progress import Bar

        self.bar, self.stream, self.started = Bar(total, stream), stream, time.monotonic()
        if kept:
            print(f"ol grade: {kept} submission(s) unchanged since they were graded: kept", file=stream)

    def done(self, student: str) -> None:
        from ol.core.progress import duration

        left = self.bar.total - (self.bar.done + 1)
        eta = duration((time.monotonic() - self.started) / (self.bar.done + 1) * left)
        self.bar.advance(f"submissions, about {eta} left")
        if not self.bar.active:
            print(f"ol grade: {student} done ({self.bar.done}/{self.bar.total}, about {eta} left)", file=self.stream)

    def close(self) -> None:
        self.bar.close()
