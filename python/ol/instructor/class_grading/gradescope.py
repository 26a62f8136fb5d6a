"""`ol gradescope MODULE --out autograder.zip`: a Gradescope autograder, and
what it runs for each submission.

The zip holds what Gradescope's documented layout expects at its root:

    setup.sh           run once, as root, when Gradescope builds the image (Ubuntu
                       22.04): `setup.sh [--root DIR]` (default /autograder; the
                       zip is unpacked in DIR/source).  Installs python3.11 from
                       Ubuntu's archive if there is none (22.04's python3 is 3.10;
                       the course needs 3.11, and the system python3 that
                       Gradescope's own tools use is left alone), bubblewrap and
                       a C compiler;
                       then DIR/venv holding exactly requirements.lock; then the
                       module's mutant set, built once; then what the runs' own
                       users may read where namespaces are refused (the venv,
                       not DIR/source)
    run_autograder     run for each submission, after Gradescope copies it to
                       /autograder/run_autograder: `run_autograder [--root DIR]`.
                       It finds everything from DIR, never from where it lies, and
                       writes DIR/results/results.json whatever happens: when
                       Python cannot start, or is too old, the file says so
    run_autograder.py  the Python side: checkout/python's ol.instructor.class_grading.gradescope
    requirements.lock  every package a grade needs, at the version installed where
                       the bundle was built (ol.instructor.class_grading.pins)
    autograder.json    the module, the points per part, the feedback level
    checkout/          the instructor's checkout of the course (no student's work)

results.json (Gradescope's specification, gradescope/autograder_samples
docs/specs.md): "score" (the sum of the parts, ol.instructor.class_grading.points),
"output" (the top line: the verdict, the points and why it is not a pass),
and "tests": the course tests, the mutation grade and the pitfalls, whose
maximums always add up to the catalog's total, then one entry per pitfall,
"Misconception: ... (caught / not caught)", with a status and no points.  An
entry that was not run says so in its name and output, and has neither
score nor status: the specification's status is only "passed" or "failed",
and a part at 0 of its maximum would show as failed, red; without score and
status an entry marks neither.  A part not run names the points it stood
for ("Mutation grade (not run: 0 of 50 points)"), so the parts' points
still add up to the catalog's total.

What each entry shows follows --feedback, as in `ol grade` (ol.instructor.class_grading.feedback):

    entry                none              summary                         full
    output (the top)     verdict, points   + why, its first 3 details      + every detail
    course tests         how many pass     how many pass                   + the first failure
    mutation grade       (empty)           the score, the floors, the      the same (no line
                                           survivors by the function and   of the reference:
                                           call that would catch them      it stays secret)
                                           (their witnesses), the tests
                                           and files left out
    pitfalls             (empty)           how many caught                 how many caught
    one per misconception (none)           caught or not, the symptom      the same

and when: --visibility (visible, hidden, after_due_date, after_published:
the specification's values) is set on the mutation, pitfalls and
misconception entries; the course tests and the top output stay visible.
Gradescope hides a student's total while any entry is hidden from them.

The autograder applies no late penalty: Gradescope's own late due date,
extensions and late policy do (the README says so).  The output's last
line, and extra_data.confinement, name how every run of the student's code
was confined (confine.choose_confinement: with bubblewrap, or where Docker
refuses namespaces, as a user of its own per run).
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

from ol.core.arguments import seconds
from ol.core.exits import ERROR, OK
from ol.core.files import whole, write_whole
from ol.grading.check import DEFAULT_TIME_LIMIT

AUTOGRADER_PYTHON = "3.11"      # what setup.sh installs on Ubuntu 22.04, and the lock is made for

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image:
#     setup.sh [--root DIR]      (default /autograder; this bundle is unpacked in DIR/source)
# 1. python3.11 from Ubuntu's archive when there is none (Ubuntu 22.04's python3 is
#    3.10; the checkout needs 3.11; the system python3, which Gradescope's tools use, stays),
#    bubblewrap (every run of a student's code is confined in it) and a C compiler;
# 2. DIR/venv holding exactly source/requirements.lock: no resolution, no build, nothing
#    newer when PyPI changes; pip check proves the lock complete;
# 3. the module's mutant set, built once (it depends on the checkout alone);
# 4. where Docker refuses namespaces (its default seccomp profile), each run of a
#    student's code is an unprivileged user of its own: it may read the venv, and
#    never DIR/source (the checkout and its answers) nor DIR/results (Landlock refuses
#    them as well; this is the second fence).
set -euo pipefail
root=/autograder
if [ "${1:-}" = "--root" ] && [ -n "${2:-}" ]; then root="$2"; fi
python=python3.11
need=()
if ! command -v "$python" >/dev/null; then need+=(python3.11 python3.11-venv);
elif ! "$python" -c "import ensurepip, venv" 2>/dev/null; then need+=(python3.11-venv); fi
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v cc >/dev/null || need+=(build-essential)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
fi
"$python" -m venv "$root/venv"
"$root/venv/bin/python" -m pip install --no-deps --only-binary=:all: --no-input -r "$root/source/requirements.lock"
"$root/venv/bin/python" -m pip check
"$root/venv/bin/python" "$root/source/run_autograder.py" --root "$root" --prepare
chmod 0711 "$root"
chmod -R a+rX "$root/venv"
chmod -R go-rwx "$root/source"
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope copies this file to /autograder/run_autograder and runs the copy, once per
# submission:  run_autograder [--root DIR]   (default /autograder)
# Everything is found from DIR (DIR/source: this bundle; DIR/venv: what setup.sh made),
# never from where this file lies; DIR/results/results.json is written whatever happens.
root=/autograder
if [ "${1:-}" = "--root" ] && [ -n "${2:-}" ]; then root="$2"; fi
results="$root/results/results.json"
mkdir -p "$root/results" && chmod 0700 "$root/results" && rm -f "$results"
python="${OL_PYTHON:-$root/venv/bin/python}"
why=""
if [ -x "$python" ]; then
    "$python" "$root/source/run_autograder.py" --root "$root"
    status=$?
    [ -s "$results" ] || why="its Python stopped (exit $status) before writing the results"
else
    why="it is not set up: $python is missing (setup.sh makes it)"
fi
if [ -n "$why" ]; then
    why=${why//\\\\/\\\\\\\\}; why=${why//\\"/\\\\\\"}
    message="The autograder failed (not your work): $why. Tell your instructor."
    printf '{"score": 0, "output": "%s", "tests": []}\\n' "$message" > "$results"
fi
exit 0
"""

RUN_AUTOGRADER_PY = """\
# The autograder's entry point: checkout/python's ol.instructor.class_grading.gradescope.autograder_main.
# Written for any Python 3, so that the wrong Python still leaves a results.json saying so.
import json
import os
import sys
import traceback

here = os.path.dirname(os.path.abspath(__file__))
root = sys.argv[sys.argv.index("--root") + 1] if "--root" in sys.argv else "/autograder"


def fail(message):
    os.makedirs(os.path.join(root, "results"), exist_ok=True)
    with open(os.path.join(root, "results", "results.json"), "w") as results:
        json.dump({"score": 0, "output": "The autograder failed (not your work): " + message +
                   " Tell your instructor.", "tests": []}, results)


if sys.version_info < (3, 11):
    fail("it runs on Python %s, and needs 3.11 or newer (setup.sh installs python3.11)." % sys.version.split()[0])
    sys.exit(0)
sys.path.insert(0, os.path.join(here, "checkout", "python"))
try:
    from ol.instructor.class_grading.gradescope import autograder_main
except BaseException:
    fail("it cannot load its grader: " + traceback.format_exc()[-2000:])
    sys.exit(0)
sys.exit(autograder_main(sys.argv[1:]))
"""


# ---- building the bundle ---------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    from ol.instructor.class_grading.feedback import DEFAULT_LEVEL, LEVELS

    parser.description = ("Instructor: build a Gradescope autograder (setup.sh, run_autograder, the checkout and "
                          "the exact versions of every package it grades with) that grades one module's "
                          "submissions as ol grade does.")
    parser.add_argument("module", metavar="MODULE", help="a graded module id, e.g. L7.3")
    parser.add_argument("--out", type=Path, metavar="ZIP", default=Path("autograder.zip"),
                        help="the zip to write (default autograder.zip)")
    parser.add_argument("--feedback", choices=LEVELS, default=DEFAULT_LEVEL,
                        help=f"what students see, as ol grade --feedback (default {DEFAULT_LEVEL})")
    parser.add_argument("--visibility", choices=VISIBILITIES, default="visible",
                        help="when students see the mutation grade, the pitfalls and each misconception (Gradescope's "
                             "values; the course tests and the top line are always visible; while an entry is "
                             "hidden Gradescope hides the student's total; default visible)")
    parser.add_argument("--time-limit", type=seconds, default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                        help="a check's time limit for the course tests and a suite on a correct implementation, "
                             f"as ol grade --time-limit (default {DEFAULT_TIME_LIMIT:.0f}; Gradescope stops the "
                             "whole run at its own limit, 10 minutes unless raised in the assignment's settings)")
    parser.add_argument("--allow-unconfined", action="store_true",
                        help="grade even if bubblewrap cannot run in Gradescope's container (results say so)")


def run(args: argparse.Namespace, ctx) -> int:
    from ol.core.errors import OlError

    try:
        module = ctx.module(args.module)
        ctx.catalog.graded(module.id, "an autograder")
        path = build_bundle(ctx.root, module.id, args.out, allow_unconfined=args.allow_unconfined,
                            feedback=args.feedback, visibility=args.visibility, time_limit=args.time_limit)
    except (OlError, OSError) as error:
        print(f"ol gradescope: {error}", file=ctx.err)
        return ERROR
    print(f"ol gradescope {module.id}: wrote {path} ({path.stat().st_size // 1024} KiB); upload it as the "
          "autograder (Ubuntu 22.04 base image)", file=ctx.out)
    return OK


def build_bundle(root: Path, module_id: str, out: Path, *, allow_unconfined: bool = False,
                 feedback: str = "full", visibility: str = "visible", time_limit: float = DEFAULT_TIME_LIMIT) -> Path:
    from ol.core.catalog import load_catalog
    from ol.instructor.class_grading.checkout import checkout_files
    from ol.instructor.class_grading.pins import lock_file

    module = load_catalog(root).get(module_id)
    config = {"module": module.id, "points": module.grading.points, "allow_unconfined": allow_unconfined,
              "feedback": feedback, "visibility": visibility, "time_limit": time_limit}
    lock = lock_file(root, AUTOGRADER_PYTHON)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with whole(out) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER),
                           ("run_autograder.py", RUN_AUTOGRADER_PY), ("requirements.lock", lock),
                           ("autograder.json", json.dumps(config, indent=2) + "\n")):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name in ("setup.sh", "run_autograder") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, text)
        for name in checkout_files(root):
            info = zipfile.ZipInfo(f"checkout/{name}", date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = ((root / name).stat().st_mode & 0o777) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, (root / name).read_bytes())
    return out


# ---- the autograder's run -----------------------------------------------------------------


def autograder_main(argv: list[str]) -> int:
    """run_autograder: grade <root>/submission into <root>/results/results.json
    (or, with --prepare, build the mutant set and its witnesses at image-build time)."""
    parser = argparse.ArgumentParser(prog="run_autograder")
    parser.add_argument("--root", type=Path, default=Path("/autograder"))
    parser.add_argument("--prepare", action="store_true")
    args = parser.parse_args(argv)
    source = Path(__file__).resolve().parents[5]             # <source>/checkout/python/ol/instructor/class_grading/gradescope.py
    checkout = source / "checkout"
    results = args.root / "results" / "results.json"
    started = time.monotonic()
    config: dict = {}
    try:
        config = json.loads((source / "autograder.json").read_text(encoding="utf-8"))
        if args.prepare:
            prepare(checkout, config["module"])
            return OK
        data = grade_submission(checkout, config, args.root / "submission")
    except BaseException as error:  # an autograder must always leave results.json behind
        if args.prepare:
            raise
        data = crashed(config.get("points"), f"{type(error).__name__}: {error}\n{traceback.format_exc()[-3000:]}")
    data["execution_time"] = round(time.monotonic() - started, 1)
    results.parent.mkdir(parents=True, exist_ok=True)
    write_whole(results, json.dumps(data, indent=2))
    return OK


def prepare(checkout: Path, module_id: str) -> None:
    """At image-build time, once for every submission: the module's mutant set
    and every counted mutant's witness, cached in the home folder, where each
    submission's check finds them (the witnesses take about 5 s to find)."""
    from ol.grading.session import GradingFault, GradingSession
    from ol.grading.witnesses import cache_every_witness

    session = GradingSession(checkout, module_id)
    try:
        cache_every_witness(session)
    except (GradingFault, OSError) as error:   # each submission searches again: slower, not wrong
        print(f"ol: the witnesses were not cached at setup ({error}); each submission finds its own")


def crashed(table: dict | None, detail: str) -> dict:
    """results.json when the autograder itself failed: score 0, every part at 0 of its maximum."""
    output = ("The autograder failed (not your work); tell your instructor.\n\n```\n" + detail.strip() + "\n```")
    tests = [not_run_part(part, value, "Not run: the autograder failed.")
             for part, value in (table or {}).items() if part in _PART_TITLES]
    return {"score": 0.0, "output": output, "output_format": "md", "tests": tests}


def grade_submission(checkout: Path, config: dict, submission: Path) -> dict:
    """results.json's content for the files in `submission`, graded as ol grade grades them."""
    from ol.core.catalog import load_catalog
    from ol.core.screening import Screening
    from ol.core.submissions import read_submission
    from ol.grading.sandbox import confine
    from ol.grading.check import refusing_unconfined
    from ol.instructor.class_grading.checkout import catalog_pitfalls
    from ol.instructor.class_grading.one import base_record, grade_one, not_graded_record
    from ol.instructor.class_grading.outcome import read_outcome

    module = load_catalog(checkout).get(config["module"])
    entry = read_submission(submission, module, student="submission")
    confinement, why = confine.choose_confinement()   # namespaces; in Docker's default profile, one user of its own per run
    base, screening = base_record(module, entry, grading_key="gradescope", confinement=confinement)
    if screening.reason is None and refusing_unconfined(confinement, bool(config.get("allow_unconfined"))):
        screening = Screening("the autograder cannot confine your tests here (neither bubblewrap nor one user "
                              "per run works), so it does not grade them; tell your instructor", [why])
    if screening.reason is not None:
        record = not_graded_record(base, screening)
    else:
        with tempfile.TemporaryDirectory(prefix="ol-autograder-") as scratch:
            cache = sorted((Path.home() / ".cache" / "tinyllm-ol").glob("*.json"))
            record = grade_one(checkout, module.id, entry.files, workdir=Path(scratch) / "work",
                               workers=(os.cpu_count() or 1) + 1, confinement=confinement, mutant_cache=cache,
                               time_limit=float(config.get("time_limit") or DEFAULT_TIME_LIMIT)).about(base)
    if record.error:     # Gradescope shows the autograder's stdout to instructors only
        print(f"ol: the grader failed on this submission (not the student's work): {record.error}")
    outcome = read_outcome(record, config["points"], catalog_pitfalls(checkout, module))
    return results_json(outcome, config["points"], config.get("feedback", "full"),
                        visibility=config.get("visibility", "visible"))


CONFINEMENT_SAID = {   # how each run of the student's code was confined (ol.grading.sandbox.confine)
    "confined": "confined (confined: its own namespaces, in bubblewrap)",
    "confined-by-uid": "confined (confined-by-uid: namespaces are refused here, so each run as a user of its own, "
                       "under Landlock and seccomp)",
    "unconfined": "UNCONFINED (the instructor allowed it: neither bubblewrap nor one user per run works here)",
}
_PART_TITLES = {"course_tests": "Course tests (your code against Hugging Face's numbers)",
                "mutation": "Mutation grade (your own tests catch broken copies of the reference)",
                "pitfalls": "Pitfalls (your tests catch each classic mistake)"}


VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")   # Gradescope's specs.md
def not_run_part(part: str, maximum, output: str, visibility: str = "visible") -> dict:
    """A part that was not run: informational (no score, no status), its points said."""
    return {"name": f"{_PART_TITLES[part]} (not run: 0 of {float(maximum):g} points)", "output": output,
            "output_format": "md", "visibility": visibility}


def results_json(outcome, table: dict[str, float], level: str, visibility: str = "visible") -> dict:
    """An Outcome as Gradescope's results.json: three parts whose maximums add
    up to the catalog's total, then one line per misconception; what each
    shows by `level` and when by `visibility` (the module's docstring)."""
    from ol.instructor.class_grading.feedback import ROUNDING, part_lines, pitfall_title, top_line

    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}, got {visibility!r}")
    lines = {part: what for part, what, _ in part_lines(outcome, table)}
    said = level != "none"
    course_detail = said and level == "full" and outcome.reason.startswith("course tests fail")
    outputs = {
        "course_tests": f"{lines['course tests'].capitalize()}." + (_block(outcome.details) if course_detail else ""),
        "mutation": _mutation_output(outcome, lines["mutation grade"], level),
        "pitfalls": f"{lines['pitfalls'].capitalize()}." if said else "",
    }
    ran = {"course_tests": outcome.course is not None, "mutation": outcome.graded, "pitfalls": outcome.graded}
    tests = []
    for part, earned, maximum in outcome.points.parts(table):
        output = outputs[part] if said or part == "course_tests" else ""
        shown = "visible" if part == "course_tests" else visibility
        if not ran[part]:
            tests.append(not_run_part(part, maximum, output or "Not run.", shown))
            continue
        tests.append({"name": _PART_TITLES[part], "score": float(earned), "max_score": float(maximum),
                      "output": output, "output_format": "md", "visibility": shown})
    if said:
        for pitfall in outcome.pitfalls:
            entry = {"name": pitfall_title(pitfall), "visibility": visibility}
            if pitfall.caught is None:      # not run: neither passed nor failed
                entry["output"] = f"Not run: {outcome.reason}" if outcome.reason else "Not run."
            else:
                entry["status"] = "passed" if pitfall.caught else "failed"
                entry["output"] = f"Symptom: {pitfall.symptom}" if pitfall.caught is False else ""
            tests.append(entry)
    output = top_line(outcome, level)
    if said and outcome.details and not course_detail:
        output += _block(outcome.details if level == "full" else outcome.details[:3])
    if said and outcome.ignored:
        output += f"\n\nIgnored (not part of {outcome.module}): {', '.join(outcome.ignored[:20])}"
    output += f"\n\n{ROUNDING}"
    if outcome.confinement:
        output += f"\n\nYour code ran {CONFINEMENT_SAID.get(outcome.confinement, outcome.confinement)}."
    data = {"score": float(outcome.points.total), "output": output, "output_format": "md", "tests": tests,
            "extra_data": {"confinement": outcome.confinement or None}}
    if outcome.error:
        data["extra_data"]["grader_error"] = outcome.error
    return data


def _mutation_output(outcome, line: str, level: str) -> str:
    from ol.grading.floors import floor_line

    if level == "none":
        return ""
    if not outcome.graded:
        return f"Not run: {outcome.reason}"
    text = f"{line[0].upper()}{line[1:]}."
    # A graded suite with tests or files left out: each costs only itself (the rest is graded); say which, and why.
    if outcome.rejected:
        from ol.instructor.class_grading.feedback import left_out_sentence

        text += "\n\nLeft out of the grade (fix one to have it count again):\n" + "\n".join(
            f"- {left_out_sentence(entry)}" for entry in outcome.rejected)
    below = [floor_line(f) for f in outcome.floors if not f.get("met")]
    if below:
        text += ("\n\nBelow a floor (every public function and every feature of the chapter needs its share "
                 "caught): " + "; ".join(below) + ".")
    if outcome.survivors:
        from ol.instructor.class_grading.feedback import SURVIVORS_SAID, survivor_lines

        text += f"\n\n{len(outcome.survivors)} generated mutants survive: {SURVIVORS_SAID}\n\n" + \
            "\n".join(survivor_lines(outcome))
    return text


def _block(lines) -> str:
    return "\n\n```\n" + "\n".join(lines) + "\n```" if lines else ""
