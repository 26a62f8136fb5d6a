"""`ol gradescope MODULE --out autograder.zip`: a Gradescope autograder, and
what it runs for each submission.

The zip holds what Gradescope's documented layout expects at its root:

    setup.sh         run once as root when Gradescope builds the image (Ubuntu
                     22.04): Python 3.11, a C compiler and bubblewrap from
                     Ubuntu's archive, then the kit and its Python packages
                     from PyPI into /autograder/venv; no other download
    run_autograder   run for each submission: grades <root>/submission and
                     writes <root>/results/results.json (--root DIR, default
                     /autograder; the zip unpacks to <root>/source)
    autograder.json  the module and the points of each part
    kit/             the course kit (no student's work)

results.json (Gradescope's specification): "score", "output", and "tests",
each with "name", "score", "max_score", "output", "visibility": the course
tests, the mutation grade of the student's own tests, and one entry per
pitfall naming its misconception.  Points per part come from the catalog's
[module.grading.points] (default 40, 50, 10).  A submission that cannot be
graded still gets a results.json: score 0 and the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import traceback
import zipfile
from pathlib import Path

from ol.exits import ERROR, OK

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y python3.11 python3.11-venv python3.11-dev build-essential bubblewrap
python3.11 -m venv /autograder/venv
/autograder/venv/bin/python -m pip install --upgrade pip
/autograder/venv/bin/python -m pip install '/autograder/source/kit[dev]'
# the mutant set depends only on the kit: build it now, once, not per submission
/autograder/venv/bin/python /autograder/source/run_autograder.py --prepare
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission: ./run_autograder [--root DIR] (default /autograder).
here="$(cd "$(dirname "$0")" && pwd)"
root=/autograder
if [ "${1:-}" = "--root" ] && [ -n "${2:-}" ]; then root="$2"; fi
python="${OL_PYTHON:-$root/venv/bin/python}"
[ -x "$python" ] || python="$(command -v python3.11 || command -v python3)"
exec "$python" "$here/run_autograder.py" --root "$root"
"""

RUN_AUTOGRADER_PY = """\
# The autograder's entry point: the kit's ol.grade.gradescope.run_autograder.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "kit" / "python"))
from ol.grade.gradescope import autograder_main  # noqa: E402

sys.exit(autograder_main(sys.argv[1:]))
"""


# ---- building the bundle ---------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Instructor: build a Gradescope autograder (setup.sh, run_autograder and the kit) "
                          "that grades one module's submissions as ol grade does.")
    parser.add_argument("module", metavar="MODULE", help="a graded module id, e.g. L7.3")
    parser.add_argument("--out", type=Path, metavar="ZIP", default=Path("autograder.zip"),
                        help="the zip to write (default autograder.zip)")
    parser.add_argument("--allow-unconfined", action="store_true",
                        help="grade even if bubblewrap cannot run in Gradescope's container (results say so)")


def run(args: argparse.Namespace, ctx) -> int:
    from ol.errors import OlError

    try:
        module = ctx.module(args.module)
        if module.grading is None:
            raise OlError(f"{module.id} has no graded tests: an autograder grades "
                          f"{', '.join(m.id for m in ctx.catalog.modules if m.grading)}")
        path = build_bundle(ctx.root, module.id, args.out, allow_unconfined=args.allow_unconfined)
    except (OlError, OSError) as error:
        print(f"ol gradescope: {error}", file=ctx.err)
        return ERROR
    print(f"ol gradescope {module.id}: wrote {path} ({path.stat().st_size // 1024} KiB); upload it as the "
          "autograder (Ubuntu 22.04 base image)", file=ctx.out)
    return OK


def build_bundle(root: Path, module_id: str, out: Path, *, allow_unconfined: bool = False) -> Path:
    from ol.catalog import load_catalog
    from ol.grade.kit import kit_files

    module = load_catalog(root).get(module_id)
    config = {"module": module.id, "points": module.grading.points, "allow_unconfined": allow_unconfined}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER),
                           ("run_autograder.py", RUN_AUTOGRADER_PY),
                           ("autograder.json", json.dumps(config, indent=2) + "\n")):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name in ("setup.sh", "run_autograder") else 0o644) << 16
            bundle.writestr(info, text)
        for name in kit_files(root):
            info = zipfile.ZipInfo(f"kit/{name}", date_time=(2026, 1, 1, 0, 0, 0))
            mode = (root / name).stat().st_mode & 0o777
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, (root / name).read_bytes())
    tmp.replace(out)
    return out


# ---- the autograder's run -----------------------------------------------------------------


def autograder_main(argv: list[str]) -> int:
    """run_autograder: grade <root>/submission into <root>/results/results.json
    (or, with --prepare, build the mutant cache at image-build time)."""
    parser = argparse.ArgumentParser(prog="run_autograder")
    parser.add_argument("--root", type=Path, default=Path("/autograder"))
    parser.add_argument("--prepare", action="store_true")
    args = parser.parse_args(argv)
    source = Path(__file__).resolve().parents[4]             # <source>/kit/python/ol/grade/gradescope.py
    config = json.loads((source / "autograder.json").read_text())
    kit = source / "kit"
    if args.prepare:
        from ol.grading.session import GradingSession

        GradingSession(kit, config["module"])
        return OK
    results = args.root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        data = grade_submission(kit, config, args.root / "submission")
    except BaseException as error:  # an autograder must always leave results.json behind
        data = {"score": 0.0, "output": "The autograder failed (not your work): "
                f"{type(error).__name__}: {error}\n{traceback.format_exc()[-3000:]}", "tests": []}
    data["execution_time"] = round(time.monotonic() - started, 1)
    results.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return OK


def grade_submission(kit: Path, config: dict, submission: Path) -> dict:
    """results.json's content for the files in `submission`."""
    from ol.catalog import load_catalog
    from ol.grade.one import grade_one
    from ol.grade.submissions import Refused, _read_folder, take
    from ol.grading import confine

    module = load_catalog(kit).get(config["module"])
    points = config["points"]
    try:
        files, ignored = take(_read_folder(submission), module)
    except Refused as why:
        return _not_graded(f"Your submission could not be read: it {why}.")
    if not any(path.endswith(tuple(module.files)) for path in files):
        return _not_graded(f"Your submission has no {', '.join(module.files)} (expected at python/{module.files[0]} "
                           f"or at the top level as {Path(module.files[0]).name}).")
    confined = confine.choose_mode()[0] != confine.UNCONFINED   # namespaces, or one user per run (Docker)
    if not confined and not config.get("allow_unconfined"):
        return _not_graded("The autograder cannot confine your tests here (neither bubblewrap nor one user "
                           "per run works), so it refuses to grade; tell your instructor.")
    with tempfile.TemporaryDirectory(prefix="ol-autograder-") as scratch:
        record = grade_one(kit, module.id, files, workdir=Path(scratch) / "work", workers=os.cpu_count() or 1,
                           confined=confined, mutant_cache=sorted((Path.home() / ".cache" / "tinyllm-ol").glob("*.json")))
    return results_json(record, points, ignored)


def _not_graded(message: str) -> dict:
    return {"score": 0.0, "output": message, "tests": [
        {"name": "Submission", "score": 0.0, "max_score": 0.0, "output": message, "visibility": "visible",
         "status": "failed"}]}


def results_json(record: dict, points: dict, ignored: list[str] = ()) -> dict:
    """A check's --json as Gradescope's results.json."""
    tests = []
    course = record.get("course_tests") or {}
    course_fraction = course["passed"] / course["total"] if course.get("total") else 0.0
    tests.append({
        "name": "Course tests (your code against Hugging Face's numbers)",
        "score": round(points["course_tests"] * course_fraction, 2), "max_score": points["course_tests"],
        "output": (f"{course.get('passed', 0)} of {course.get('total', 0)} course tests pass."
                   if course else "The course tests did not run.") + _reason_if(record, "course tests"),
        "visibility": "visible",
    })
    graded = record.get("score") is not None
    score = record.get("score") or 0.0
    tests.append({
        "name": "Mutation grade (your own tests catch broken copies of the reference)",
        "score": round(points["mutation"] * score, 2), "max_score": points["mutation"],
        "output": (f"Your tests catch {record['killed']} of {record['counted']} faults (score {score:.2f}, "
                   f"threshold {record.get('threshold', 0):.2f}); {len(record.get('survivors', []))} "
                   "generated mutants survive." if graded else "Not graded." + _reason_if(record, "")),
        "visibility": "visible",
    })
    pitfalls = record.get("pitfalls", [])
    for pitfall in pitfalls:
        each = points["pitfalls"] / len(pitfalls)
        tests.append({
            "name": f"Pitfall {pitfall['id']}: {pitfall['misconception']}",
            "score": round(each if pitfall["killed"] else 0.0, 4), "max_score": round(each, 4),
            "output": "Caught by your tests." if pitfall["killed"] else f"Not caught. Symptom: {pitfall['symptom']}",
            "visibility": "visible",
        })
    total = round(sum(test["score"] for test in tests), 2)
    verdict = "PASSED" if record.get("passed") else "NOT PASSED"
    output = f"{verdict}: {total:g} of {round(sum(t['max_score'] for t in tests), 2):g} points."
    if record.get("error"):
        output += f"\nThe grader could not grade this submission: {record['error']}"
    if ignored:
        output += f"\nIgnored (not part of the module): {', '.join(ignored[:20])}"
    return {"score": total, "output": output, "tests": tests}


def _reason_if(record: dict, about: str) -> str:
    reason = record.get("reason") or record.get("error")
    if not reason or (about and about not in reason):
        return ""
    problems = "; ".join(record.get("problems", [])[:10])
    return f"\n{reason}" + (f": {problems}" if problems else "")
