"""Record the grade of every suite the kit grades, as one JSON, so that a
change to the grader that must not change a grade (a refactor) is checked
by one diff:

    python tests/record_grades.py --out grades-before.json     # on the old code
    python tests/record_grades.py --out grades-after.json      # on the new code
    diff grades-before.json grades-after.json                  # nothing: no grade moved

Every suite is graded by the real `./ol check MODULE --tests DIR --json`,
in a scratch copy of this checkout (tests/helpers/kit.py's copy_checkout) whose
student tree holds the reference of every graded module, so that the course
tests pass and the whole command runs as a student's does.  The suites, and
the sharing each is graded with (the one the kit's tests grade it with):

    calibration/<folder>       tests/calibration/*: the honest suites     shared
    suite/<folder>             the other suites of tests/grading_suites   shared
    model-answer/<module>      the catalog's model answer, as ol verify   isolated
    gallery/<cheat>/<sharing>  tests/grading_suites/cheats/*, filled in   shared and isolated
                               as test_trust.py fills them in

One entry per suite, only what decides a grade (never times, nor which test
killed a mutant first, which depends on the shuffle):

    {"passed", "score", "killed", "counted", "pitfalls_caught": [ids],
     "survivors": [ids], "reason", "error", "exit"}

Slow: every suite against every mutant, 83 suites in about 40 minutes on two
busy cores.  --only SUBSTRING grades the suites whose key contains it.  Run
it under `nice -n 10` on a shared machine.

One entry is not steady from run to run: gallery/fork-bomb/shared (a fork
bomb in one run can use up the process limit that the collected suite's
user shares with it; one run of this script recorded 2 kills, the next a
grader fault).  The other gallery entries that kill anything
(capture-the-reference-at-import, vote-through-*) came out the same when
graded again; the calibration figures match test_calibration.py's record.

It lives here, not in bench/, because it measures no speed: it is a check of
grades, built from the kit tests' own suites and helpers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path[:0] = [str(TESTS.parent / "python"), str(TESTS)]   # this checkout's ol, as ./ol puts it first

from helpers.kit import ROOT, copy_checkout  # noqa: E402
from helpers.cheats import CHEATS, GALLERY, materialize  # noqa: E402
from helpers.classes import SUITE_PREFIX  # noqa: E402

# The suites of tests/grading_suites beside the gallery, and the module each grades.
OTHER_SUITES = {"l7-4-hand-example": "L7.4", "l7-4-oracle-only": "L7.4", "l7-5-no-cache": "L7.5", "l7-5-weak": "L7.5",
                "l7-7-weak": "L7.7", "shapes-and-errors": "L7.3"}
# The channel attacks (test_channels.py fills them in per module and mode, and asserts what they learn): not grades.
ATTACKS = {"channels", "guessing", "leftovers"}
CHECK_TIMEOUT = 3600   # seconds for one `ol check`; a hung grader is an entry with an error, not a hung script


def suites(scratch: Path, checkout: Path) -> list[tuple[str, str, Path, str]]:
    """(key, module, test folder, sharing) of every suite to grade."""
    from ol.core.catalog import load_catalog

    found = []
    for module, prefix in SUITE_PREFIX.items():
        for folder in sorted((TESTS / "calibration").glob(f"{prefix}*")):
            found.append((f"calibration/{folder.name}", module, folder, "shared"))
    beside = sorted(p.name for p in (TESTS / "grading_suites").iterdir() if p.is_dir()
                    and p != CHEATS and p.name not in ATTACKS and not p.name.startswith(("_", ".")))
    unknown = sorted(set(beside) - set(OTHER_SUITES))
    if unknown:
        raise SystemExit(f"record_grades.py: tests/grading_suites/{unknown[0]} is not in OTHER_SUITES: "
                         "add it with the module it grades")
    found += [(f"suite/{name}", OTHER_SUITES[name], TESTS / "grading_suites" / name, "shared") for name in beside]
    for module in load_catalog(ROOT).modules:
        if module.grading is not None:
            found.append((f"model-answer/{module.id}", module.id, ROOT / module.grading.model_answer, "isolated"))
    gallery = scratch / "gallery"
    gallery.mkdir()
    for cheat in GALLERY:
        folder = materialize(cheat, gallery, root=checkout)
        found += [(f"gallery/{cheat}/{sharing}", "L7.3", folder, sharing) for sharing in ("shared", "isolated")]
    return found


def student_checkout(dest: Path) -> Path:
    """A copy of this checkout whose student tree holds the reference of
    every graded module (the course tests pass on it)."""
    from ol.core.catalog import REFERENCE_TREE, STUDENT_TREE, load_catalog

    checkout = copy_checkout(dest)
    for module in load_catalog(ROOT).modules:
        if module.grading is not None:
            target = checkout / STUDENT_TREE / module.grading.target
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / REFERENCE_TREE / module.grading.target, target)
    return checkout


def grade(checkout: Path, module: str, tests: Path, sharing: str, jobs: int) -> dict:
    """`ol check MODULE --tests DIR --json` in the checkout: the entry of one suite."""
    command = [sys.executable, str(checkout / "ol"), "check", module, "--ref-deps", "--json", "--tests", str(tests),
               "--jobs", str(jobs), *(["--isolated"] if sharing == "isolated" else [])]
    try:
        r = subprocess.run(command, cwd=checkout, capture_output=True, text=True, timeout=CHECK_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"ol check took longer than {CHECK_TIMEOUT} s"}
    try:
        data = json.loads(r.stdout)
    except json.JSONDecodeError:
        return {"exit": r.returncode, "error": f"no JSON on stdout; stderr ends: {r.stderr[-500:]}"}
    return {
        "passed": data.get("passed"), "score": data.get("score"),
        "killed": data.get("killed"), "counted": data.get("counted"),
        "pitfalls_caught": sorted(p["id"] for p in data.get("pitfalls", []) if p["killed"]),
        "survivors": sorted(s["id"] for s in data.get("survivors", [])),
        "reason": data.get("reason"), "error": data.get("error"), "exit": r.returncode,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write ({suite: entry})")
    parser.add_argument("--only", default="", metavar="SUBSTRING", help="grade only the suites whose key contains it")
    parser.add_argument("--jobs", type=int, default=(os.cpu_count() or 1) + 1, help="ol check's --jobs")
    args = parser.parse_args(argv)
    from ol.grading.sandbox import confine

    confine.pin_blas_threads()   # as ./ol check does, for every ol it starts
    # /var/tmp, not /tmp: confined runs mount their own /tmp over the host's
    scratch = Path(tempfile.mkdtemp(prefix="ol-grades-", dir="/var/tmp"))
    try:
        checkout = student_checkout(scratch / "checkout")
        chosen = [s for s in suites(scratch, checkout) if args.only in s[0]]
        record = {}
        for number, (key, module, folder, sharing) in enumerate(chosen, start=1):
            started = time.monotonic()
            record[key] = grade(checkout, module, folder, sharing, args.jobs)
            entry = record[key]
            print(f"[{number}/{len(chosen)}] {key}: {entry.get('killed')}/{entry.get('counted')} "
                  f"passed={entry.get('passed')} {entry.get('reason') or entry.get('error') or ''} "
                  f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
        args.out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
