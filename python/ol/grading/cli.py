"""`ol check MODULE`: the command-line face of ol.grading.check."""

from __future__ import annotations

import argparse
import json
import os

from ol.errors import OlError

OK, NOT_PASSED, USAGE = 0, 1, 2


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run the module's course tests on your code, then grade your own tests "
        "(python/tests/<module>/) by mutation: they must pass on correct implementations and "
        "fail on as many broken copies of the reference as the module's threshold asks, "
        "catching every pitfall. Exit 0 passed, 1 not passed, 2 usage error."
    )
    parser.add_argument("module", metavar="MODULE", help="a graded module id, e.g. L7.3")
    parser.add_argument("--ref-deps", action="store_true",
                        help="run the course tests with the module's needs taken from the reference")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    parser.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1, metavar="N",
                        help="mutants run N at a time (default: the number of cores)")
    parser.add_argument("--time-limit", type=_positive_float, default=60.0, metavar="SECONDS",
                        help="longest your suite may take on a correct implementation (default 60)")


def run(args: argparse.Namespace, ctx) -> int:
    # One BLAS thread per process: the workers are forked, and the suite's
    # timing must not depend on how many run at once.  Set before numpy loads.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    from ol.grading.check import check_module
    from ol.grading.report import ProgressBar, to_json, to_text
    from ol.state import CHECKED

    try:
        module = ctx.module(args.module)
        progress = ProgressBar(total=0, stream=ctx.err)
        try:
            result = check_module(ctx.root, module.id, ref_deps=args.ref_deps, workers=args.jobs,
                                  time_limit=args.time_limit, on_event=progress)
        finally:
            progress.close()
    except OlError as error:
        if args.json:
            print(json.dumps({"module": args.module, "passed": False, "reason": str(error)}), file=ctx.out)
        else:
            print(f"ol check: {error}", file=ctx.err)
        return USAGE
    if result.passed:
        ctx.store.record(module, CHECKED, ref_deps=args.ref_deps)
    print(to_json(result) if args.json else to_text(result), file=ctx.out, end="" if not args.json else "\n")
    return OK if result.passed else NOT_PASSED


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text}")
    return value
