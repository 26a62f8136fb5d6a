"""Grading a class (`ol grade`, Ray, Gradescope): a folder of synthetic
submissions, each graded as `ol check --ref-deps` would in that student's own
checkout, in a private copy of the kit; the instructor's checkout and every
other submission untouched.

    reading          (no grading: tests/core/test_submissions.py, and the copy
                     finder tests/instructor/class_grading/test_copies.py)
    the class        one graded class (a module fixture, --jobs 1) covering
                     every case: passes, weak suites, a hang, a cheat, broken
                     code, a missing, a misplaced and an unparsable file, no
                     tests, empty,
                     identical and renamed copies; each row's status, reason,
                     points, source, submitted, late; the per-student files, the
                     HTML in Chromium, the export, --only, summary.md's copy finder,
                     and the README's sample, which is this run's output
    determinism      --jobs 2 gives the same rows (on part of the class); a
                     second run keeps them
    Ray              a local head on 127.0.0.1 only; its rows equal --jobs 1's
    Gradescope       the class's records as results.json (maximum constant, top
                     line, survivors); the bundle played as Gradescope plays it:
                     setup.sh --root with python3.11 installed by (a stand-in of)
                     apt-get, the lock installed, run_autograder copied to the
                     root and run from there, results.json in every case
"""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import zipfile
from fractions import Fraction
from pathlib import Path

import pytest

from helpers.cheats import MAX_CHEAT_SCORE, REACHING_OUT, assert_nothing_left, channel_suite, materialize
from helpers.classes import (CALIBRATION, CLASS_SAMPLE, MODEL_ANSWER, MODULE, REFERENCE_ROPE, ROPE, SUITES, TESTS,
                             TIME_LIMIT, class_env, renamed, set_time, suite_files, write_bomb, write_folder,
                             write_tar, write_zip)
from helpers.gradebooks import valid_results
from helpers.kit import DOCKER_DEFAULT, ROOT, explain, processes_with, run_ol, sampled_home, snapshot
from helpers.processes import command_line, files_of_run_users, run_users, vote_keys
from ol.core.archives import MAX_MEMBERS
from ol.instructor.class_grading.one import GradeRecord

DEADLINE = "2026-03-01T23:59:00+00:00"


# ---- reading submissions: fast, no grading ----------------------------------------------------------


# ---- the class -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def class_home(tmp_path_factory) -> Path:
    return sampled_home(tmp_path_factory.mktemp("home"), every=CLASS_SAMPLE)


@pytest.fixture(scope="module")
def synthetic_class(tmp_path_factory) -> Path:
    """Every case an instructor meets; EXPECTED says what each must grade to."""
    folder = tmp_path_factory.mktemp("class") / "submissions"
    folder.mkdir()
    rope = {ROPE: REFERENCE_ROPE.read_bytes()}
    model = {**rope, **suite_files(MODEL_ANSWER)}
    write_folder(folder / "ada", model)
    write_zip(folder / "bo.zip", {**rope, **suite_files(CALIBRATION / "l7-3-suite-a")}, top="bo-l7.3/")
    write_tar(folder / "cy.tar.gz", {**rope, **suite_files(CALIBRATION / "l7-3-suite-b")})
    flat = {"rope.py": REFERENCE_ROPE.read_bytes(), **suite_files(CALIBRATION / "l7-3-suite-c", prefix=".")}
    write_folder(folder / "dee", {name.lstrip("./"): data for name, data in flat.items()}
                 | {"notes.txt": b"x", "rope_final.py": b"# an older try\n"})
    weak = {**rope, **suite_files(SUITES / "shapes-and-errors")}
    write_folder(folder / "eve", weak)
    with zipfile.ZipFile(folder / "fay.zip", "w") as archive:
        archive.writestr(ROPE, REFERENCE_ROPE.read_bytes())
        archive.writestr("../../outside.py", b"print('escaped')\n")
    hang = {**rope, f"{TESTS}/test_hangs.py": (
        b"from tinyllm.modern.rope import rope_cos_sin\n\n\ndef test_forever():\n"
        b"    rope_cos_sin(0, [1.0])\n    while True:\n        pass\n")}
    write_folder(folder / "gus", hang)
    cheat = SUITES / "cheats" / "reexport-os-system" / "test_cheat.py"
    cheating = {**rope, f"{TESTS}/test_cheat.py": cheat.read_bytes().replace(b"__ROOT__", str(ROOT).encode())}
    write_folder(folder / "hal", cheating)
    broken = REFERENCE_ROPE.read_text().replace("np.sin(angles) * scale", "-np.sin(angles) * scale")
    write_folder(folder / "ivy", {ROPE: broken.encode(), **suite_files(MODEL_ANSWER)})
    write_folder(folder / "jo", {"src/rope_v2.py": REFERENCE_ROPE.read_bytes(), **suite_files(MODEL_ANSWER, "tests")})
    write_folder(folder / "kim", {**rope, f"{TESTS}/test_rope.py": b"import numpy as np\n\n\ndef test_x(:\n    pass\n"})
    write_zip(folder / "lee.zip", {"rope.py": REFERENCE_ROPE.read_bytes(),
                                   **suite_files(CALIBRATION / "l7-3-suite-a", prefix="tests")})   # = bo's files
    suite_b = (CALIBRATION / "l7-3-suite-b" / "test_rope_b.py").read_text()
    write_folder(folder / "max", {**rope, f"{TESTS}/test_mine.py": renamed(suite_b).encode()})
    (folder / "nat").mkdir()
    with tarfile.open(folder / "oz.tar.gz", "w:gz", encoding="latin-1", format=tarfile.GNU_FORMAT) as archive:
        info = tarfile.TarInfo("test_caf\xe9.py")
        info.size = 1
        archive.addfile(info, io.BytesIO(b"\n"))
    write_zip(folder / "pia.zip", {"rope.py": REFERENCE_ROPE.read_bytes(), "helpers": b"", "helpers/test_y.py": b"\n"})
    write_zip(folder / "quin.zip", {"rope.py": REFERENCE_ROPE.read_bytes(), "test_" + "q" * 300 + ".py": b"\n"})
    write_bomb(folder / "rex.tar.gz")
    write_folder(folder / "tia", {ROPE: REFERENCE_ROPE.read_bytes() + b"\ndef oops(:\n", **suite_files(MODEL_ANSWER)})
    write_folder(folder / "uma", {"rope.py": REFERENCE_ROPE.read_bytes(), "README.md": b"tests to come\n"})
    write_folder(folder / "bob", model)                                  # bob/, bob.zip and bob-2.zip: three students
    write_zip(folder / "bob.zip", weak)
    write_zip(folder / "bob-2.zip", cheating)
    write_folder(folder / "summary", model)                              # named like a result file
    for entry in folder.iterdir():
        set_time(entry, "2026-03-01T20:00:00+00:00")
    set_time(folder / "eve", "2026-03-02T09:30:00+00:00")               # late by its files' time
    return folder


MANIFEST = "entry,id,name,submitted\nada,1001,Ada L.,\nbo.zip,1002,Bo M.,\neve,1005,Eve N.,\n" \
           "ivy,1009,Ivy O.,2026-03-02T08:00:00Z\nfay.zip,1006,Fay P.,\nghost.zip,1099,Nobody,\n"

EXPECTED = {   # student (or entry): (status, what the reason says; "" when it says nothing)
    "ada": ("passed", ""), "bo": ("passed", ""), "cy": ("passed", ""), "dee": ("passed", ""),
    "eve": ("not passed", "score 0."), "hal": ("not passed", "score 0."), "max": ("passed", ""),
    "lee": ("passed", ""),
    "fay": ("not graded", "your submission could not be read: fay.zip holds a path that leaves it (../../outside.py)"),
    "gus": ("not graded", f"your tests time out on a correct implementation ({TIME_LIMIT} s): "
                          f"{TESTS}/test_hangs.py::test_forever"),
    "ivy": ("not passed", "course tests fail on your code: 11 of 53 fail; first, test_hand_example: Your result "
                          "equals what you get by negating sin"),     # and its tests graded all the same
    "jo": ("not graded", f"no rope.py: expected {ROPE}, or rope.py in any folder; found src/rope_v2.py (named "
                         "otherwise)"),
    "kim": ("not graded", f"your test file does not parse: {TESTS}/test_rope.py line 4: "),
    "nat": ("not graded", "your submission is empty"),
    "oz": ("not graded", "oz.tar.gz holds a file name that is not UTF-8 (test_caf\ufffd.py)"),
    "pia": ("not graded", "pia.zip holds helpers both as a file and as a folder"),
    "quin": ("not graded", "quin.zip holds a file name too long for a file system"),
    "rex": ("not graded", f"rex.tar.gz holds more than {MAX_MEMBERS} files and folders"),
    "tia": ("not graded", "your rope.py does not parse: " + ROPE + " line "),
    "uma": ("not graded", f"no tests: expected test files in {TESTS}/, or test_*.py at the top; "
                          "found no other Python file"),
    "bob": ("passed", ""), "bob.zip": ("not passed", "pitfalls s0"), "bob-2.zip": ("not passed", "score 0."),
    "summary": ("passed", ""),
}


def rows(out: Path) -> dict[str, dict]:
    with open(out / "grades.csv", newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def by_source(out: Path) -> dict[str, dict]:
    """Rows by the entry they came from (bob, bob.zip, ...), the archive suffix dropped from the rest."""
    table = {}
    for row in rows(out).values():
        source = row["source"]
        key = source if source.startswith("bob") else re.sub(r"\.(zip|tar\.gz)$", "", source)
        table[key] = row
    return table


def without_seconds(table: dict[str, dict]) -> dict[str, dict]:
    return {student: {k: v for k, v in row.items() if k != "seconds"} for student, row in table.items()}


LATE_POLICY = ["--late-penalty", "10%/day", "--late-cap", "50%", "--grace", "15m"]
COMMAND = ["grade", "L7.3", "submissions", "--out", "graded", "--jobs", "1", "--time-limit", TIME_LIMIT,
           "--manifest", "manifest.csv", "--deadline", DEADLINE, *LATE_POLICY, "--export", "canvas"]


@pytest.fixture(scope="module")
def graded(synthetic_class, class_home, tmp_path_factory):
    """The class graded with --jobs 1 (every option of the gradebook on), with the
    instructor's checkout unchanged."""
    before = snapshot(ROOT, skip=(".git", ".ol", ".pytest_cache", ".hypothesis", "build"))
    work = synthetic_class.parent
    (work / "manifest.csv").write_text(MANIFEST)
    r = run_ol(ROOT, *COMMAND, cwd=work, env=class_env(class_home), timeout=2400)
    assert r.returncode == 0, explain(r)
    assert snapshot(ROOT, skip=(".git", ".ol", ".pytest_cache", ".hypothesis", "build")) == before
    return work / "graded", r


@pytest.mark.needs_confinement
def test_every_row_says_what_happened_and_why(graded):
    out, r = graded
    table = by_source(out)
    assert sorted(table) == sorted(EXPECTED), sorted(table)
    for source, (status, says) in EXPECTED.items():
        row = table[source]
        assert row["status"] == status, (source, row["status"], row["reason"])
        assert (row["passed"] == "yes") is (status == "passed")
        assert says in row["reason"], (source, says, row["reason"])
        assert (row["reason"] == "") is (status == "passed"), (source, row)
        assert (row["score"] == "") is (status == "not graded") and (row["killed"] == "") is (status == "not graded")
        assert row["error"] == "", (source, row)                        # no fault of the grader in this class
    assert table["eve"]["missed pitfalls"] and "s01, s02, s03, s04, s05, s06, s07 not caught" in table["eve"]["reason"]
    assert table["ada"]["killed"] == table["ada"]["counted"] and table["ada"]["points"] == "100.00"
    assert table["kim"]["course tests"] == "53/53", "a suite that does not parse still earns the course tests"
    assert table["ivy"]["killed"] == table["ivy"]["counted"], "wrong code still has its tests graded"
    assert "ol grade L7.3: 24 submitted, 13 graded, 8 passed, 11 not graded" in r.stdout, explain(r)
    assert "unchanged since they were graded" not in r.stderr, "a first run keeps nothing"
    assert not (ROOT / "ol-cheat-was-here").exists() and not processes_with("31416")


@pytest.mark.needs_confinement
def test_names_sources_and_the_same_files_graded_once(graded):
    out, _ = graded
    table = rows(out)
    bobs = {row["source"]: row for row in table.values() if row["source"].startswith("bob")}
    assert set(bobs) == {"bob", "bob.zip", "bob-2.zip"} and bobs["bob-2.zip"]["student"] == "bob-2"
    assert "+" in bobs["bob"]["student"] and "+" in bobs["bob.zip"]["student"]
    assert len({row["student"] for row in bobs.values()}) == 3
    own = ("student", "source", "id", "submitted", "late", "points", "late penalty")   # the gradebook's, not the grade
    same = lambda a, b: {k: v for k, v in a.items() if k not in own} == \
        {k: v for k, v in b.items() if k not in own}  # noqa: E731
    src = {row["source"]: row for row in table.values()}
    assert same(bobs["bob"], src["ada"]) and same(bobs["bob.zip"], src["eve"]) and same(bobs["bob-2.zip"], src["hal"])
    assert same(src["lee.zip"], src["bo.zip"]), "the same files get the same row"
    record = json.loads((out / f"{bobs['bob.zip']['student']}.json").read_text())
    assert record["source"] == "bob.zip" and record["digest"]
    assert json.loads((out / "dee.json").read_text())["ignored"] == ["notes.txt", "rope_final.py"]
    summary = next(row for row in table.values() if row["source"] == "summary")
    assert summary["student"] != "summary" and (out / "summary.md").read_text().startswith("# L7.3")


@pytest.mark.needs_confinement
def test_points_follow_the_stated_rule_rounded_down(graded):
    """points before penalty = 40 x course + 50 x caught/counted + 10 x pitfalls
    caught/7, each part rounded down to hundredths, computed here from the row's
    own counts; points = that less 10 per day started after the deadline."""
    out, _ = graded
    def floor2(x: Fraction) -> Fraction:
        return Fraction(int(x * 100), 100)
    for row in rows(out).values():
        passed, total = (int(n) for n in row["course tests"].split("/")) if row["course tests"] else (0, 1)
        expect = floor2(40 * Fraction(passed, total))
        if row["score"]:
            killed, counted = int(row["killed"]), int(row["counted"])
            missed = len(row["missed pitfalls"].split())
            expect += floor2(50 * Fraction(killed, counted)) + floor2(10 * Fraction(7 - missed, 7))
            assert row["score"] == f"{float(floor2(Fraction(killed, counted))):.2f}", row
        assert row["points before penalty"] == f"{float(expect):.2f}", row
        penalty = Fraction(row["late penalty"] or 0)
        assert penalty == (10 if row["late"] == "yes" else 0), row     # eve and ivy: less than a day late
        assert row["points"] == f"{float(max(0, expect - penalty)):.2f}", row


@pytest.mark.needs_confinement
def test_submitted_late_ids_and_the_export(graded):
    out, r = graded
    table = by_source(out)
    assert table["ada"]["submitted"] == "2026-03-01T20:00:00+00:00" and table["ada"]["late"] == "no"
    assert table["eve"]["submitted"] == "2026-03-02T09:30:00+00:00" and table["eve"]["late"] == "yes"
    assert table["ivy"]["submitted"] == "2026-03-02T08:00:00+00:00" and table["ivy"]["late"] == "yes"  # the manifest's
    assert table["ada"]["id"] == "1001" and table["cy"]["id"] == ""
    assert "ghost.zip" in r.stderr and "cy.tar.gz" in r.stderr          # listed but absent; present but unlisted
    with open(out / "grades-canvas.csv", newline="") as f:
        export = list(csv.reader(f))
    assert export[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"L7.3 {MODULE.title}"]
    assert export[1] == ["Points Possible", "", "", "", "", "100"]
    assert {line[2]: line[5] for line in export[2:]} == {
        "1001": table["ada"]["points"], "1002": table["bo"]["points"], "1005": table["eve"]["points"],
        "1009": table["ivy"]["points"], "1006": table["fay"]["points"]}
    assert "late: 2 (submitted after 2026-03-01T23:59+00:00)" in (out / "summary.md").read_text()


@pytest.mark.needs_confinement
def test_only_grades_the_named_again_and_keeps_the_rest(graded, synthetic_class, class_home):
    out, _ = graded
    work = synthetic_class.parent
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")}
    table = rows(out)
    r = run_ol(ROOT, "grade", "L7.3", "submissions", "--out", "graded", "--time-limit", TIME_LIMIT, "--manifest",
               "manifest.csv", "--deadline", DEADLINE, *LATE_POLICY, "--only", "fay.zip", "jo", "--export", "moodle",
               cwd=work, env=class_env(class_home), timeout=600)
    assert r.returncode == 0, explain(r)
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")}
    assert {name for name in after if after[name] != before[name]} == {"fay.json", "jo.json"}
    assert without_seconds(rows(out)) == without_seconds(table)
    with open(out / "grades-moodle.csv", newline="") as f:
        moodle = list(csv.reader(f))
    assert moodle[0] == ["First name", "Last name", "ID number", "Email address", f"L7.3 {MODULE.title}"]
    assert ["Ada", "L.", "1001", "", "100.00"] in moodle
    r = run_ol(ROOT, "grade", "L7.3", "submissions", "--out", "graded", "--only", "nobody", cwd=work, env=class_env(class_home))
    assert r.returncode == 2 and "--only: no submission named nobody" in r.stderr and "ada" in r.stderr, explain(r)
    r = run_ol(ROOT, "grade", "L7.3", "submissions", "--out", "graded", "--export", "plain", cwd=work, env=class_env(class_home))
    assert r.returncode == 2 and "--export plain needs --manifest" in r.stderr, explain(r)


@pytest.mark.needs_confinement
def test_each_student_gets_a_report_in_their_own_words(graded, synthetic_class):
    out, _ = graded
    for row in rows(out).values():
        for suffix in (".json", ".md", ".html"):
            assert (out / f"{row['student']}{suffix}").is_file(), (row["student"], suffix)
        text = (out / f"{row['student']}.md").read_text() + (out / f"{row['student']}.html").read_text()
        for host in (str(ROOT), str(synthetic_class), "/tmp/", "ol-grade-"):
            assert host not in text and host not in row["reason"], (row["student"], host)
    eve = (out / "eve.md").read_text()
    assert eve.startswith("# L7.3: eve\n\n**NOT PASSED: ") and "## Surviving mutants" in eve and "```diff" not in eve
    assert "Misconception: The sign of sin does not matter" in eve and "(not caught) Symptom:" in eve
    ivy = (out / "ivy.md").read_text()
    assert "(pitfall s02)" in ivy and "the first failure (test_hand_example):" in ivy
    assert "- ignored (not part of L7.3): notes.txt, rope_final.py" in (out / "dee.md").read_text()


@pytest.mark.needs_confinement
def test_feedback_levels_hand_back_less_or_more(graded, tmp_path):
    from ol.instructor.class_grading.checkout import catalog_pitfalls, graded_source
    from ol.instructor.class_grading.feedback import write_feedback
    from ol.instructor.class_grading.outcome import read_outcome

    out, _ = graded
    table, pitfalls = MODULE.grading.points, catalog_pitfalls(ROOT, MODULE)
    eve = read_outcome(GradeRecord.from_json(json.loads((out / "eve.json").read_text())), table, pitfalls)
    source, path = graded_source(ROOT, MODULE)
    written = {}
    for level in ("full", "summary", "none"):
        (tmp_path / level).mkdir()
        written[level] = write_feedback(eve, table, level, tmp_path / level, source, path)
    assert [p.name for p in written["full"]] == ["eve.md", "eve.html"] and written["none"] == []
    full, summary = (tmp_path / "full" / "eve.md").read_text(), (tmp_path / "summary" / "eve.md").read_text()
    assert "```diff" not in full + summary and not (tmp_path / "summary" / "eve.html").exists()
    for text in (full, summary):
        assert "score 0." in text.splitlines()[2] and "(not caught) Symptom:" in text
    write_feedback(eve, table, "none", tmp_path / "full", source, path)      # a later run hands back nothing
    assert not list((tmp_path / "full").iterdir())
    fault = read_outcome(GradeRecord.from_json({**json.loads((out / "eve.json").read_text()),
                                                "error": "the grader failed: boom"}),
                         table, pitfalls)
    assert fault.status == "not graded" and "a fault of the grader, not of your work" in fault.reason
    assert fault.error == "the grader failed: boom" and "boom" not in fault.reason


@pytest.mark.needs_confinement
def test_the_reports_open_in_a_browser(graded):
    from playwright.sync_api import sync_playwright

    out, _ = graded
    table = by_source(out)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        try:
            for source in ("ada", "eve", "jo"):
                page = browser.new_page()
                requested: list[str] = []
                page.on("request", lambda request: requested.append(request.url))
                path = out / f"{table[source]['student']}.html"
                page.goto(path.as_uri())
                if table[source]["score"]:
                    assert page.inner_text("#score") == table[source]["score"]
                    assert page.inner_text("#killed") == f"{table[source]['killed']}/{table[source]['counted']}"
                else:
                    assert "NOT GRADED" in page.inner_text("h1") and "no rope.py" in page.inner_text("header")
                assert requested == [path.as_uri()], requested
                page.close()
        finally:
            browser.close()


@pytest.mark.needs_confinement
def test_summary_uses_the_words_and_lists_copies_to_look_at(graded):
    out, _ = graded
    summary = (out / "summary.md").read_text()
    head = summary.split("\n\n")[1]
    assert head.splitlines() == ["- graded: 13 (the check gave a score)", "- passed: 8 of 24 submitted",
                                 "- not passed: 5 (graded; why: grades.csv's reason)", "- not graded: 11 (why: below)",
                                 "- late: 2 (submitted after 2026-03-01T23:59+00:00)"] or head
    assert "## Not graded: why" in summary and "- jo (jo): no rope.py" in summary
    look = summary.split("## Submissions to look at")[1]
    assert "- bo and lee: tests identical (the same files)" in look
    assert re.search(r"- cy and max: tests (9\d|100)% alike", look), look
    for honest in (("bo", "cy"), ("bo", "dee"), ("cy", "dee"), ("ada", "bo"), ("ada", "cy"), ("ada", "dee")):
        assert f"- {honest[0]} and {honest[1]}: tests" not in look, honest


# ---- the README's sample is this run's output ---------------------------------------------------

README_COLUMNS = ("student", "source", "submitted", "late", "status", "points", "points before penalty", "score",
                  "reason")
README_ROWS = ("ada", "eve", "fay", "gus", "ivy", "jo", "kim", "uma")


def readme_sample(out: Path, stdout: str) -> str:
    """The README's sample: the command, its last line, and some columns of some rows."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(README_COLUMNS)
    for student in README_ROWS:
        writer.writerow([rows(out)[student][column] for column in README_COLUMNS])
    command = " ".join(["./ol", *COMMAND]).replace(" --jobs 1", "")
    lines = [f"$ {command}", stdout.strip().replace(str(out), "graded"), "$ cat graded/grades.csv   # some columns",
             *buffer.getvalue().splitlines()]
    return "\n".join("    " + line for line in lines) + "\n"


@pytest.mark.needs_confinement
def test_the_readme_sample_is_this_run(graded):
    """OL_WRITE_README=1 writes the sample into README.md from this run."""
    out, r = graded
    sample = readme_sample(out, r.stdout.splitlines()[-1])
    readme = (ROOT / "README.md").read_text()
    begin, end = "<!-- sample: tests/end_to_end/test_class_grading.py -->\n\n", "\n<!-- end of sample -->"
    assert begin in readme and end in readme, "the README marks where its ol grade sample goes"
    before, rest = readme.split(begin)
    current, after = rest.split(end)
    if os.environ.get("OL_WRITE_README"):
        (ROOT / "README.md").write_text(before + begin + sample + end + after)
        current = sample
    assert current == sample, f"the README's sample is not this run's; OL_WRITE_README=1 rewrites it:\n{sample}"
    for word in ("submitted", "graded", "passed", "not graded"):
        assert word in current and word in (out / "summary.md").read_text()


@pytest.mark.needs_confinement
def test_grading_twice_or_side_by_side_gives_the_same_rows(graded, synthetic_class, class_home, tmp_path):
    """A second run keeps every row; --jobs 2 on part of the class (five
    gradings, two at a time, bob/ and bob.zip among them) gives its rows."""
    out, _ = graded
    work = synthetic_class.parent
    again = run_ol(ROOT, *COMMAND, cwd=work, env=class_env(class_home), timeout=600)
    assert again.returncode == 0 and "24 submission(s) unchanged" in again.stderr, explain(again)
    part = tmp_path / "part"
    part.mkdir()
    for name in ("bo.zip", "cy.tar.gz", "eve", "hal", "lee.zip", "fay.zip", "bob", "bob.zip"):
        source = synthetic_class / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, part / name)
    r = run_ol(ROOT, "grade", "L7.3", str(part), "--out", str(tmp_path / "parallel"), "--jobs", "2", "--time-limit",
               TIME_LIMIT, "--manifest", str(work / "manifest.csv"), "--deadline", DEADLINE, *LATE_POLICY, cwd=work,
               env=class_env(class_home), timeout=2400)
    assert r.returncode == 0, explain(r)
    parallel = without_seconds(rows(tmp_path / "parallel"))
    assert parallel == {student: row for student, row in without_seconds(rows(out)).items() if student in parallel}
    assert len(parallel) == 8


def test_refuses_to_grade_unconfined_unless_told(synthetic_class, tmp_path):
    env = dict(os.environ, PATH="/nonexistent-bin:" + os.path.dirname(sys.executable))
    r = run_ol(ROOT, "grade", "L7.3", str(synthetic_class), "--out", str(tmp_path / "o"), cwd=tmp_path, env=env)
    assert r.returncode == 2 and "refusing to grade unconfined" in r.stderr, explain(r)


# ---- Ray -------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_head(tmp_path, class_home):
    """A Ray head on 127.0.0.1 only (its workers grade with the class's sample of mutants),
    stopped afterwards with everything it started."""
    port = free_port()
    temp = Path(f"/tmp/olray-{os.getpid()}")
    env = dict(class_env(class_home), RAY_AUTH_MODE="disabled", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
               RAY_USAGE_STATS_ENABLED="0", RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0")
    # `ray` is ray.scripts.scripts: run as a module, it is found from a venv as well
    head = subprocess.Popen([sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
                             "--node-ip-address=127.0.0.1",
                             f"--port={port}", "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
                             f"--temp-dir={temp}"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        yield f"127.0.0.1:{port}", env
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(head.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        head.wait(timeout=10)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.needs_confinement
def test_a_class_graded_on_ray_gets_the_rows_of_this_machine(ray_head, graded, synthetic_class, tmp_path):
    address, env = ray_head
    subset = tmp_path / "four"
    subset.mkdir()
    for name in ("ada", "bo.zip", "eve", "fay.zip"):
        source = synthetic_class / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, subset / name)
    out = tmp_path / "ray-out"
    r = run_ol(ROOT, "grade", "L7.3", str(subset), "--out", str(out), "--ray", address, "--time-limit", TIME_LIMIT,
               cwd=tmp_path, env=env, timeout=1800)
    assert r.returncode == 0, explain(r)
    gradebook = ("id", "late", "points", "late penalty")       # the Ray run has no manifest nor deadline
    local = {s: {k: v for k, v in row.items() if k not in gradebook}
             for s, row in without_seconds(rows(graded[0])).items() if s in ("ada", "bo", "eve", "fay")}
    assert {s: {k: v for k, v in row.items() if k not in gradebook}
            for s, row in without_seconds(rows(out)).items()} == local


# ---- Gradescope --------------------------------------------------------------------------------


def maximum_of(test: dict) -> float:
    """A part's points: its max_score, or what a part not run says it stood for."""
    said = re.search(r"\(not run: 0 of ([0-9.]+) points\)$", test["name"])
    return test["max_score"] if "max_score" in test else float(said.group(1)) if said else 0.0


@pytest.mark.needs_confinement
def test_gradescope_shows_the_class_as_ol_grade_does(graded):
    """Each record of the class as results.json: the maximum always the
    catalog's total, the score the row's points, the top line the row's reason,
    the misconceptions by name, the survivors' diffs."""
    from ol.instructor.class_grading.checkout import catalog_pitfalls
    from ol.instructor.class_grading.gradescope import results_json
    from ol.instructor.class_grading.outcome import read_outcome

    out, _ = graded
    table = MODULE.grading.points
    for row in rows(out).values():
        record = json.loads((out / f"{row['student']}.json").read_text())
        data = results_json(read_outcome(GradeRecord.from_json(record), table, catalog_pitfalls(ROOT, MODULE)), table,
                            "full")
        valid_results(data)
        scored = [t for t in data["tests"] if "max_score" in t]
        assert sum(maximum_of(t) for t in data["tests"]) == 100, row["student"]
        assert not [t for t in data["tests"] if "(not run" in t["name"] and ("score" in t or "status" in t)], \
            "a part not run is neither scored nor failed: Gradescope shows 0 of its maximum in red"
        points = row["points before penalty"]        # Gradescope's own late policy applies there
        assert f"{data['score']:.2f}" == points and abs(sum(t["score"] for t in scored) - data["score"]) < 1e-9
        top = data["output"].splitlines()[0]
        said = f"{row['status'].upper()}: {points} of 100 points" + (f": {row['reason']}" if row["reason"] else "")
        cut = len(row["reason"]) == 500           # grades.csv keeps a reason's first 500 characters
        assert (top.startswith(said) if cut else top == said), (top, row)
        misconceptions = [t["name"] for t in data["tests"] if t["name"].startswith("Misconception: ")]
        assert len(misconceptions) == 7 and all(n.endswith(("(caught)", "(not caught)", "(not run)"))
                                                for n in misconceptions)
    eve = rows(out)["eve"]
    eve_record = GradeRecord.from_json(json.loads((out / "eve.json").read_text()))
    data = results_json(read_outcome(eve_record, table, catalog_pitfalls(ROOT, MODULE)), table, "full")
    mutation = data["tests"][1]["output"]
    assert "generated mutants survive" in mutation and "```diff" not in mutation and eve["score"] in mutation
    assert any(t["name"] == "Misconception: The sign of sin does not matter: rotating by -p*theta is as good as by "
               "+p*theta (not caught)" for t in data["tests"])
    quiet = results_json(read_outcome(eve_record, table, catalog_pitfalls(ROOT, MODULE)), table, "none")
    assert quiet["output"].splitlines()[0] == f"NOT PASSED: {eve['points before penalty']} of 100 points"
    assert "diff" not in json.dumps(quiet) and len(quiet["tests"]) == 3


@pytest.fixture(scope="module")
def gradescope_root(tmp_path_factory):
    """The bundle set up as Gradescope sets it up: unpacked in <root>/source,
    setup.sh --root <root> with no python3.11 on PATH (a stand-in apt-get puts
    a python3.11 there that runs this Python's own interpreter, as Ubuntu's
    /usr/bin/python3.11 would, and logs what it was asked), then run_autograder copied
    to <root>/run_autograder.  <root> is not under /tmp: each confined run
    gets an empty /tmp of its own, which would hide the autograder's venv."""
    work = tmp_path_factory.mktemp("gradescope")
    bundle = work / "autograder.zip"
    r = run_ol(ROOT, "gradescope", "L7.3", "--out", str(bundle), cwd=work)
    assert r.returncode == 0, explain(r)
    root = Path(tempfile.mkdtemp(prefix="ol-gradescope-", dir="/var/tmp"))
    try:
        with zipfile.ZipFile(bundle) as archive:
            assert {"setup.sh", "run_autograder", "run_autograder.py", "requirements.lock"} <= set(archive.namelist())
            archive.extractall(root / "source")
            for info in archive.infolist():             # zipfile does not restore modes; Gradescope does
                os.chmod(root / "source" / info.filename, info.external_attr >> 16 or 0o644)
        fake = root / "fake-bin"
        fake.mkdir()
        log = root / "apt.log"
        python = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
        ln, chmod = shutil.which("ln"), shutil.which("chmod")
        (fake / "apt-get").write_text(textwrap.dedent(f"""\
            #!{shutil.which("bash")}
            echo "$@" >> {log}
            for package in "$@"; do
                case "$package" in
                    python3.11) printf '#!/bin/sh\\nexec {python} "$@"\\n' > {fake}/python3.11
                                {chmod} +x {fake}/python3.11 ;;
                    bubblewrap) {ln} -sf {shutil.which("bwrap")} {fake}/bwrap ;;
                    build-essential) {ln} -sf {shutil.which("cc") or shutil.which("gcc")} {fake}/cc ;;
                esac
            done
            """))
        (fake / "apt-get").chmod(0o755)
        for tool in ("bash", "chmod"):   # Ubuntu's own, as on Gradescope's image
            (fake / tool).symlink_to(shutil.which(tool))
        home = root / "home"
        home.mkdir()
        env = {"PATH": str(fake), "HOME": str(home), "LANG": "C.UTF-8"}
        setup = subprocess.run([str(root / "source" / "setup.sh"), "--root", str(root)], env=env,
                               capture_output=True, text=True, timeout=1800)
        assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
        shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
        caches = sorted((home / ".cache" / "tinyllm-ol").glob("mutants-*.json"))
        assert caches, "setup.sh built no mutant set"
        assert list((home / ".cache" / "tinyllm-ol").glob("witnesses-L7.3-*.json")), "setup.sh found no witness"
        for path in caches:     # the class's sample, so that its points are ol grade's
            path.write_text(json.dumps(json.loads(path.read_text())[::CLASS_SAMPLE]))
        yield root, log.read_text(), home
    finally:
        shutil.rmtree(root, ignore_errors=True)


def play(root: Path, home: Path, files: dict[str, bytes], env: dict | None = None, under: list[str] = ()) -> dict:
    """One submission as Gradescope grades it: <root>/submission, the copy of
    run_autograder at <root> run from <root> (through the command `under`, as
    tests/helpers/docker_default.py), results.json read back."""
    shutil.rmtree(root / "submission", ignore_errors=True)
    write_folder(root / "submission", files)
    env = env or dict(os.environ, HOME=str(home))
    done = subprocess.run([*under, str(root / "run_autograder"), "--root", str(root)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((root / "results" / "results.json").read_text())
    valid_results(data)
    return data


def test_setup_installs_python_and_exactly_the_locked_packages(gradescope_root):
    root, apt_log, _ = gradescope_root
    assert "install" in apt_log and "python3.11 python3.11-venv" in apt_log, apt_log
    lock = [line for line in (root / "source" / "requirements.lock").read_text().splitlines()
            if line and not line.startswith("#")]
    assert {"numpy", "pytest", "hypothesis", "mutmut", "libcst"} <= {line.split("==")[0] for line in lock}
    freeze = subprocess.run([str(root / "venv" / "bin" / "python"), "-m", "pip", "freeze", "--all"],
                            capture_output=True, text=True, check=True).stdout
    installed = {re.sub(r"[-_.]+", "-", line.split("==")[0]).lower(): line.split("==")[1]
                 for line in freeze.splitlines() if "==" in line}
    for pin in lock:
        name, version = pin.split("==")
        assert installed.get(name) == version, (pin, installed.get(name))
    assert set(installed) - {pin.split("==")[0] for pin in lock} <= {"pip", "setuptools", "wheel"}, installed


@pytest.mark.needs_confinement
def test_gradescope_as_gradescope_runs_it(gradescope_root, graded):
    root, _, home = gradescope_root
    witnesses = {p: p.read_bytes() for p in (home / ".cache" / "tinyllm-ol").glob("witnesses-*.json")}
    passing = play(root, home, {"rope.py": REFERENCE_ROPE.read_bytes(),
                                **{p.name: p.read_bytes() for p in MODEL_ANSWER.glob("*.py")}})
    assert passing["score"] == 100.0 and passing["output"].startswith("PASSED: 100.00 of 100 points")
    failing = play(root, home, {ROPE: REFERENCE_ROPE.read_bytes(), **suite_files(SUITES / "shapes-and-errors")})
    eve = rows(graded[0])["eve"]
    eve_points = eve["points before penalty"]         # eve is late: Gradescope's own late policy applies there
    assert f"{failing['score']:.2f}" == eve_points, "the autograder and ol grade give the same points"
    assert failing["output"].startswith(f"NOT PASSED: {eve_points} of 100 points: {eve['reason']}")
    assert "generated mutants survive" in failing["tests"][1]["output"] and "```diff" not in json.dumps(failing)
    malformed = play(root, home, {"README.md": b"my work is in another castle\n"})
    assert malformed["score"] == 0 and "no rope.py: expected python/tinyllm/modern/rope.py" in malformed["output"]
    assert sum(maximum_of(t) for t in malformed["tests"]) == 100
    after = {p: p.read_bytes() for p in (home / ".cache" / "tinyllm-ol").glob("witnesses-*.json")}
    assert after == witnesses, "a submission searched for witnesses that setup.sh had found"


@pytest.mark.needs_confinement
def test_gradescope_writes_results_whatever_happens(gradescope_root, tmp_path):
    root, _, home = gradescope_root
    broken = play(root, home, {"rope.py": b"\n"}, env=dict(os.environ, HOME=str(home), OL_PYTHON="/bin/false"))
    assert broken["score"] == 0 and "its Python stopped (exit 1)" in broken["output"]
    missing = play(root, home, {"rope.py": b"\n"}, env=dict(os.environ, HOME=str(home),
                                                             OL_PYTHON=str(tmp_path / "no-python")))
    assert "it is not set up" in missing["output"]
    # Ubuntu 22.04's own Python (3.10): the entry point still writes why, in syntax 3.6 reads
    entry = (root / "source" / "run_autograder.py").read_text()
    ast.parse(entry, feature_version=(3, 6))
    script = str(root / "source" / "run_autograder.py")
    old = subprocess.run([sys.executable, "-c", "import sys; sys.version_info = (3, 10, 12, 'final', 0); "
                          "sys.version = '3.10.12'; sys.argv = ['run_autograder.py', '--root', sys.argv[1]]; "
                          f"exec(compile(open({script!r}).read(), {script!r}, 'exec'), "
                          f"{{'__file__': {script!r}, '__name__': '__main__'}})", str(tmp_path)],
                         capture_output=True, text=True)
    assert old.returncode == 0, old.stderr
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    assert data["score"] == 0 and "Python 3.10.12, and needs 3.11 or newer" in data["output"]
    # the grader itself crashes (here: its configuration is gone): results.json says so
    config = root / "source" / "autograder.json"
    config.rename(root / "autograder.json.away")
    try:
        crashed = play(root, home, {"rope.py": b"\n"})
    finally:
        (root / "autograder.json.away").rename(config)
    assert crashed["score"] == 0 and "The autograder failed (not your work)" in crashed["output"]
    assert "FileNotFoundError" in crashed["output"]


@pytest.mark.needs_confinement
def test_gradescope_where_namespaces_are_refused(gradescope_root, tmp_path):
    """The bundle as Gradescope runs it in a container with Docker's default
    profile (tests/helpers/docker_default.py: root, namespaces refused; bubblewrap
    cannot start).  The autograder confines each run as a user of its own
    and says so in results.json: the honest submission gets full marks;
    every cheat that reaches beyond its run (helpers.cheats.REACHING_OUT: the
    keyring ones and the results.json forger among them; ol grade meets the
    whole gallery in this confinement) passes nothing and gains nothing; no
    run writes into results/, and no process, file or key of a run is left.  Graded against
    every 20th mutant (and every pitfall), as the gallery is."""

    root, _, home = gradescope_root
    caches = sorted((home / ".cache" / "tinyllm-ol").glob("mutants-*.json"))
    saved = {path: path.read_bytes() for path in caches}
    before_keys = vote_keys()

    def graded(files: dict[str, bytes]) -> dict:
        data = play(root, home, files, under=DOCKER_DEFAULT)
        assert data["extra_data"]["confinement"] == "confined-by-uid", data
        assert "(confined-by-uid:" in data["output"], data["output"][-500:]
        assert sorted(p.name for p in (root / "results").iterdir()) == ["results.json"], "a run wrote into results/"
        assert "ol-cheat-forged-results" not in json.dumps(data)
        assert not run_users(), [command_line(p) for p in run_users()]
        assert not files_of_run_users("/tmp", "/var/tmp", "/dev/shm", str(root)), "files of a run's user left"
        return data

    try:
        for path in caches:
            path.write_text(json.dumps(json.loads(saved[path])[::4]))   # every 20th, of every 5th
        honest = graded({"rope.py": REFERENCE_ROPE.read_bytes(),
                         **{p.name: p.read_bytes() for p in MODEL_ANSWER.glob("*.py")}})
        assert honest["score"] == 100.0 and honest["output"].startswith("PASSED"), honest["output"][:2000]
        for cheat in REACHING_OUT:
            folder = materialize(cheat, tmp_path / "cheats", results=root / "results")
            data = graded({ROPE: REFERENCE_ROPE.read_bytes(), **suite_files(folder)})
            assert data["output"].startswith(("NOT PASSED", "NOT GRADED")), (cheat, data["output"][:2000])
            mutation = data["tests"][1]   # not run (no score) when the suite was not graded
            assert mutation.get("score", 0) <= MAX_CHEAT_SCORE * maximum_of(mutation), (cheat, mutation)
            assert_nothing_left(cheat)
    finally:
        for path, data in saved.items():
            path.write_bytes(data)
    assert vote_keys() == before_keys, "a run left a key in the kernel's keyrings"


@pytest.mark.needs_confinement
def test_gradescope_keeps_no_memo_in_access_times(gradescope_root, tmp_path):
    """Confined by uid in the bundle as Gradescope runs it: a suite whose
    first run leaves its digest in the access times of files it may read
    (tests/end_to_end/test_channels.py) learns nothing in any later run."""

    root, _, home = gradescope_root
    caches = sorted((home / ".cache" / "tinyllm-ol").glob("mutants-*.json"))
    saved = {path: path.read_bytes() for path in caches}
    try:
        for path in caches:
            path.write_text(json.dumps(json.loads(saved[path])[::4]))   # every 20th, of every 5th
        suite = channel_suite("L7.3", ["memo"], tmp_path, writers=False)
        data = play(root, home, {ROPE: REFERENCE_ROPE.read_bytes(), **suite_files(suite)}, under=DOCKER_DEFAULT)
    finally:
        for path, data_ in saved.items():
            path.write_bytes(data_)
    assert data["extra_data"]["confinement"] == "confined-by-uid", data
    assert data["output"].startswith(("NOT PASSED", "NOT GRADED")), data["output"][:2000]
    assert "test_a_judge" not in json.dumps(data["tests"][1:]), data["tests"][1:]
