"""`ol check MODULE`: the command-line face of ol.grading.check."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ol.core.arguments import MAX_TIME_LIMIT, html_file, module_args, positive_int, seconds, whole_number
from ol.core.deps import from_reference, policy_of
from ol.core.errors import OlError
from ol.core.exits import ERROR, NOT_PASSED, OK
from ol.grading.events import Event, Judged, Planned, Unconfined


def configure(parser: argparse.ArgumentParser) -> None:
    from ol.grading.check import DEFAULT_TIME_LIMIT

    parser.description = (
        "Run the module's course tests on your code, then grade your own tests "
        "(python/tests/<module>/) by mutation: they must pass on correct implementations and "
        "fail on as many broken copies of the reference as the module's threshold asks, "
        "catching every pitfall. Exit 0 passed, 1 not passed, 2 the check could not run "
        "(a usage error, or a fault of the grader: no score is given)."
    )
    module_args(parser)
    parser.add_argument("--tests", type=Path, metavar="DIR", default=None,
                        help="grade the tests in DIR instead of your own test folder")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    parser.add_argument("--html", nargs="?", const="", default=None, type=html_file, metavar="PATH",
                        help="also write the report as one self-contained web page: the score, the pitfalls, "
                             "and the graded source with every mutant on its line (default PATH: "
                             ".ol/reports/MODULE-check.html; an existing file is replaced only if ol wrote it)")
    parser.add_argument("--jobs", type=positive_int, default=(os.cpu_count() or 1) + 1, metavar="N",
                        help="runs N at a time (default: one more than the cores: a run's tests wait on "
                             "the code under test in another process part of the time)")
    parser.add_argument("--time-limit", type=seconds, default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                        help="processor time the course tests, or your suite on a correct implementation, may "
                             f"take (default {DEFAULT_TIME_LIMIT:.0f}, at most {MAX_TIME_LIMIT:.0f}; one test may take a "
                             "quarter of it, and its calls a quarter of the code under test's; a run that waits "
                             "rather than computes is stopped at 3 times that on the clock)")
    parser.add_argument("--memory-limit", type=_memory_limit, default=2048, metavar="MIB",
                        help="memory each run may use, all its processes together (default 2048 MiB)")
    parser.add_argument("--max-survivors", type=_survivors_shown, default=3, metavar="N",
                        help="surviving mutants shown with their diff, per function (default 3; 0: the "
                             "counts alone)")
    parser.add_argument("--all", action="store_true", help="show every surviving mutant's diff")
    parser.add_argument("--fresh", action="store_true",
                        help="grade every mutant again (by default a re-check keeps the catches of tests whose "
                             "code, and the helpers, fixtures and conftest they use, you have not changed since "
                             "the last check)")
    parser.add_argument("--require-confinement", action="store_true",
                        help="refuse to run unless every run can be confined (the instructor's side uses this)")
    parser.add_argument("--confinement", choices=("auto", "confined", "confined-by-uid"), default="auto",
                        help="how runs are confined: auto (the strongest this machine allows), confined "
                             "(bubblewrap and namespaces), confined-by-uid (as root where namespaces are "
                             "refused, as in Docker: each run as a user of its own, under Landlock)")
    parser.add_argument("--isolated", action="store_true",
                        help="collect your suite afresh in every run, as the instructor's grade does "
                             "(slower; the default collects it once and forks a clean run per mutant)")


def run(args: argparse.Namespace, ctx) -> int:
    from ol.grading.sandbox import confine

    confine.pin_blas_threads()   # before numpy loads
    from ol.core.state import CHECKED
    from ol.core.student_kit import released
    from ol.grading.check import CheckRequest, check_module
    from ol.grading.html_report import report_path
    from ol.grading.report import to_json, to_text

    try:
        module = ctx.module(args.module)
        html = None if args.html is None else report_path(Path(args.html) if args.html else None, ctx.root, module.id)
        request = CheckRequest(tests=args.tests, ref_deps=policy_of(args), isolated=args.isolated,
                               require_confinement=args.require_confinement, confinement=args.confinement,
                               fresh=args.fresh, workers=args.jobs, time_limit=args.time_limit,
                               memory_limit=args.memory_limit)
        progress = _RunsBar(ctx.err)

        def on_event(event: Event) -> None:
            if isinstance(event, Unconfined) and not args.json:
                ctx.warn(f"this check runs unconfined ({event.why}): it is feedback only; "
                         "the instructor's grade is computed confined")
            progress(event)

        try:
            checker = check_module
            if released(ctx.root, module.id):   # a student kit: graded against your own code (ol.grading.local)
                from ol.grading.local import check_in_kit as checker
            result = checker(ctx.root, module.id, request, on_event=on_event)
        finally:
            progress.close()
    except OlError as error:
        if args.json:
            from ol.grading.check import not_run_json

            print(json.dumps(not_run_json(args.module, str(error))), file=ctx.out)
        else:
            print(f"ol check: {error}", file=ctx.err)
        return ERROR if error.exit_code == 2 else NOT_PASSED
    text = to_json(result) if args.json else to_text(result, None if args.all else args.max_survivors)
    print(text, file=ctx.out, end="" if not args.json else "\n")
    if result.passed and args.tests is None:   # shown first: a state file that cannot be written loses nothing
        ctx.store.record(module, CHECKED, ref_deps=bool(from_reference(ctx.root, ctx.catalog.needs_closure(module),
                                                                        policy_of(args))))
    if html is not None:
        try:
            _write_html(ctx, module, result, html, stream=ctx.err if args.json else ctx.out)
        except OSError as error:
            print(f"ol check: --html: could not write {html}: {error.strerror or error}", file=ctx.err)
            return ERROR
    return OK if result.passed else NOT_PASSED


def _write_html(ctx, module, result, path: Path, stream) -> None:
    """Write the page for `result` to `path`, and say where it is (on
    `stream`: stderr when stdout holds the JSON)."""
    from ol.core.catalog import REFERENCE_TREE, STUDENT_TREE
    from ol.core.student_kit import released
    from ol.grading.html_report import to_html, write_report

    tree = STUDENT_TREE if released(ctx.root, module.id) else REFERENCE_TREE   # the file the mutants change
    source_path = f"{tree}/{module.grading.target}"
    source = (ctx.root / source_path).read_text(encoding="utf-8")
    write_report(path, to_html(result, source, source_path))
    print(f"The report as a web page: {path.as_uri()}", file=stream)


class _RunsBar:
    """on_event for check_module: the bar counts verdicts against the plan's runs."""

    def __init__(self, stream):
        from ol.core.progress import Bar

        self.bar, self.caught = Bar(total=1, stream=stream), 0

    def __call__(self, event: Event) -> None:
        if isinstance(event, Planned):
            self.bar.total = max(event.runs, 1)
        elif isinstance(event, Judged):
            self.caught += event.caught
            self.bar.advance(f"runs, {self.caught} caught")

    def close(self) -> None:
        self.bar.close()


def _survivors_shown(text: str) -> int:
    return whole_number(text, 0, "a whole number >= 0 (0: the counts alone)")


def _memory_limit(text: str) -> int:
    return whole_number(text, 256, "a whole number of MiB", "at least 256 MiB (a run imports numpy and pytest)")
