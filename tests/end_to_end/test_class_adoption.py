"""A class as an instructor adopting the kit grades it (issue 28): late work
with a penalty, a grace and an extension, a submission nested deep in its
archive, wrong code whose tests still earn their grade, the Canvas file
for an existing assignment, and Ctrl-C (or SIGTERM) in the middle.

One small class, graded twice with the same options: first interrupted by
SIGINT once its first grading is done, then again to its end (resuming).
Six students, two gradings: five hand in the same files (the reference and
the model answer) in different ways and at different times, so they are
graded once and differ only in what the gradebook makes of them; one hands
in wrong code with the model answer's tests.
"""

from __future__ import annotations

import csv
import ctypes
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers.classes import (MODEL_ANSWER, MODULE, REFERENCE_ROPE, ROPE, TESTS, TIME_LIMIT, set_time, suite_files,
                             write_folder, write_tar)
from helpers.gradebooks import canvas_reads
from helpers.kit import ROOT, explain, home_env, processes_with, run_ol, sampled_home, sigint_as_at_a_terminal

DEADLINE = "2026-03-01T23:59:00+00:00"
ON_TIME = "2026-03-01T20:00:00+00:00"
LATE = "2026-03-03T10:00:00+00:00"           # 1 d 10 h after the deadline: two days started, 20%
EXTENSION = "2026-03-04T23:59:00+00:00"
IN_GRACE = "2026-03-02T00:09:00+00:00"       # 10 min late, within --grace 15m
NESTED = "Downloads/L7.3 submission/"
MANIFEST = ("entry,id,name,deadline\nann,s1,Ann A.,\nben.tar.gz,s2,Ben B.,\ncat,s3,Cat C.,\n"
            f"dan,s4,Dan D.,{EXTENSION}\neli,s5,Eli E.,\nfox,s6,Fox F.,\n")
COMMAND = ["grade", "L7.3", "submissions", "--out", "graded", "--jobs", "1", "--time-limit", TIME_LIMIT,
           "--manifest", "manifest.csv", "--deadline", DEADLINE, "--late-penalty", "10%/day", "--late-cap", "50%",
           "--grace", "15m", "--export", "canvas", "--assignment-id", "4711"]
SLOWLY = (b"\n\n@pytest.fixture(autouse=True)\ndef slowly():     # about 0.2 s of processor time before each test\n"
          b"    np.linalg.eigvals(np.ones((600, 600)) + np.eye(600))\n")
STOPPED_WITHIN = 5.0      # seconds from SIGINT or SIGTERM to ol grade's exit (measured: 0.2 to 1.5 s, quiet or under load)


def rows(out) -> dict[str, dict]:
    with open(out / "grades.csv", newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def adopted(tmp_path_factory):
    work = tmp_path_factory.mktemp("adopted")
    folder = work / "submissions"
    files = {ROPE: REFERENCE_ROPE.read_bytes(), **suite_files(MODEL_ANSWER)}
    for name, when in (("ann", ON_TIME), ("cat", LATE), ("dan", LATE), ("eli", IN_GRACE)):
        write_folder(folder / name, files)
        set_time(folder / name, when)
    write_tar(folder / "ben.tar.gz", {NESTED + name: data for name, data in files.items()}
              | {"Downloads/todo.txt": b"hand in L7.3\n"})
    set_time(folder / "ben.tar.gz", ON_TIME)
    wrong = REFERENCE_ROPE.read_text().replace("np.sin(angles) * scale", "-np.sin(angles) * scale")
    write_folder(folder / "fox", {**files, ROPE: wrong.encode()})
    set_time(folder / "fox", ON_TIME)
    (work / "manifest.csv").write_text(MANIFEST)
    scratch = work / "scratch"      # TMPDIR of ol grade: every check it starts has this in its command line
    scratch.mkdir()
    env = home_env(sampled_home(work / "home", every=5), TZ="UTC", TMPDIR=str(scratch),   # a sample of mutants
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    grading = subprocess.Popen([str(ROOT / "ol"), *COMMAND], cwd=work, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_at_a_terminal)
    said = []
    try:
        for line in grading.stderr:                   # ann's five are graded first (--jobs 1, in entry order)
            said.append(line)
            if "done (1/2" in line:
                break
        stopped_at = time.monotonic()
        grading.send_signal(signal.SIGINT)
        out, err = grading.communicate(timeout=60)
        stopped = time.monotonic() - stopped_at
    finally:
        if grading.poll() is None:
            grading.kill()
            grading.wait()
    interrupted = {"code": grading.returncode, "seconds": stopped, "stdout": out, "stderr": "".join(said) + err,
                   "rows": rows(work / "graded"), "summary": (work / "graded" / "summary.md").read_text(),
                   "canvas": (work / "graded" / "grades-canvas.csv").exists(),
                   "left": processes_with(str(scratch))}
    resumed = run_ol(ROOT, *COMMAND, cwd=work, env=env, timeout=1800)
    assert resumed.returncode == 0, explain(resumed)
    return interrupted, resumed, work / "graded"


@pytest.mark.needs_confinement
def test_ctrl_c_stops_ol_grade_within_seconds_with_the_results_so_far(adopted):
    interrupted, resumed, out = adopted
    assert interrupted["code"] == 130, interrupted
    assert interrupted["seconds"] < STOPPED_WITHIN, f"ol grade took {interrupted['seconds']:.1f} s to stop"
    assert not interrupted["left"], "a check outlived the interrupted grading"
    partial = interrupted["rows"]
    assert {s: partial[s]["status"] for s in partial} == {"ann": "passed", "ben": "passed", "cat": "passed",
                                                           "dan": "passed", "eli": "passed", "fox": "not graded"}
    assert partial["fox"]["reason"].startswith("not graded yet: ol grade was interrupted") and not partial["fox"]["points"]
    assert interrupted["summary"].splitlines()[2].startswith("**INCOMPLETE: ol grade was interrupted before it graded "
                                                             "1 of the 6 submissions")
    assert not interrupted["canvas"], "no export of an incomplete grading"
    assert "INCOMPLETE: 1 not graded yet" in interrupted["stdout"], interrupted
    assert "5 submission(s) unchanged since they were graded: kept" in resumed.stderr, explain(resumed)
    assert "INCOMPLETE" not in (out / "summary.md").read_text() and rows(out)["fox"]["status"] == "not passed"


@pytest.mark.needs_confinement
def test_a_late_submission_loses_the_penalty_and_an_extension_lifts_it(adopted):
    _, _, out = adopted
    table = rows(out)
    assert (table["ann"]["late"], table["ann"]["points"], table["ann"]["late penalty"]) == ("no", "100.00", "")
    cat = table["cat"]
    assert (cat["late"], cat["points before penalty"], cat["late penalty"], cat["points"]) == \
        ("yes", "100.00", "20.00", "80.00"), cat
    assert (table["dan"]["late"], table["dan"]["points"]) == ("no", "100.00"), "the manifest's extension"
    assert (table["eli"]["late"], table["eli"]["points"]) == ("no", "100.00"), "within the grace"
    md = (out / "cat.md").read_text()
    assert "**PASSED: 80.00 of 100 points**" in md
    assert "| late penalty | late by 1 d 10 h: 20% of the maximum (10%/day started, at most 50%, after a grace of " \
           "15 min) | -20.00 |" in md and "| total | | 80.00 of 100 |" in md
    assert "Late penalty: 10%/day started, at most 50%, after a grace of 15 min" in (out / "summary.md").read_text()
    assignments, students = canvas_reads((out / "grades-canvas.csv").read_text())
    assert assignments == [(f"L7.3 {MODULE.title}", "4711", "100")], "the import updates assignment 4711"
    assert {key[1]: scores[0] for key, scores in students.items()} == {
        "s1": "100.00", "s2": "100.00", "s3": "80.00", "s4": "100.00", "s5": "100.00", "s6": table["fox"]["points"]}


@pytest.mark.needs_confinement
def test_a_submission_nested_deep_in_its_archive_is_graded(adopted):
    _, _, out = adopted
    ben = rows(out)["ben"]
    assert (ben["status"], ben["points"]) == ("passed", "100.00"), ben
    assert ben["reason"] == f"files taken from {NESTED}", ben
    assert json.loads((out / "ben.json").read_text())["ignored"] == ["Downloads/todo.txt"]


@pytest.mark.needs_confinement
def test_wrong_code_still_has_its_tests_graded(adopted):
    """fox's rope.py negates sin: 11 course tests fail, and the model answer's
    tests, graded against the reference's mutants, catch every one of them."""
    _, _, out = adopted
    fox = rows(out)["fox"]
    assert fox["status"] == "not passed" and fox["reason"].startswith("course tests fail on your code: 11 of 53 "
                                                                      "fail"), fox
    assert fox["score"] == "1.00" and fox["killed"] == fox["counted"] and fox["course tests"] == "42/53", fox
    assert fox["points"] == "91.69", "31.69 for the course tests (40 x 42/53, rounded down), 50 and 10 for the tests"
    md = (out / "fox.md").read_text()
    assert "| mutation grade | score 1.00: your tests catch" in md and "(pitfall s02)" in md


@pytest.mark.needs_confinement
def test_sigterm_stops_ol_grade_within_seconds_with_the_results_so_far(tmp_path):
    """As Ctrl-C does (above), SIGTERM (what a batch system or `kill` sends) ends ol grade within
    STOPPED_WITHIN seconds, exit 143, with grades.csv and summary.md for the students graded so far.

    The kernel hands a process-directed signal to any thread that does not block it; here it goes,
    once the main thread waits, to the thread that waits on bea's check, whose slow tests take
    minutes: a main thread blocked until some check ends would stop only then (CI saw 5.3 s)."""
    folder = tmp_path / "submissions"
    good = {ROPE: REFERENCE_ROPE.read_bytes(), **suite_files(MODEL_ANSWER)}
    write_folder(folder / "amy", good)
    write_folder(folder / "bea", {**good, ROPE: REFERENCE_ROPE.read_text().replace("np.sin(angles) * scale",
                                                                                 "-np.sin(angles) * scale").encode(),
                                  f"{TESTS}/test_rope_oracle.py": good[f"{TESTS}/test_rope_oracle.py"] + SLOWLY})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = home_env(sampled_home(tmp_path / "home", every=5), TMPDIR=str(scratch),
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    grading = subprocess.Popen([str(ROOT / "ol"), "grade", "L7.3", "submissions", "--out", "graded", "--jobs", "1",
                                "--time-limit", TIME_LIMIT], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        for line in grading.stderr:
            if "done (1/2" in line:
                break
        wait_until_blocked(grading.pid)
        stopped_at = time.monotonic()
        signal_a_worker_thread(grading.pid, signal.SIGTERM)
        grading.communicate(timeout=60)
        stopped = time.monotonic() - stopped_at
    finally:
        if grading.poll() is None:
            grading.kill()
            grading.wait()
    assert grading.returncode == 143 and stopped < STOPPED_WITHIN, (grading.returncode, stopped)
    table = rows(tmp_path / "graded")
    assert table["amy"]["status"] == "passed" and table["bea"]["reason"].startswith("not graded yet"), table
    assert "INCOMPLETE" in (tmp_path / "graded" / "summary.md").read_text()
    assert not processes_with(str(scratch)), "a check outlived the grading"


def wait_until_blocked(pid: int, seconds: float = 30.0) -> None:
    """Return once process `pid`'s main thread waits on a lock (a futex), or after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/task/{pid}/wchan") as wchan:
            if wchan.read().startswith("futex"):
                return
        time.sleep(0.01)


def signal_a_worker_thread(pid: int, number: int) -> None:
    """Send `number` to one thread of process `pid` other than its main thread (tgkill(2)): where
    the kernel may deliver a signal sent to the process."""
    workers = sorted(int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid)
    assert workers, f"process {pid} runs no thread besides its main thread"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.tgkill(pid, workers[0], number) != 0:
        raise OSError(ctypes.get_errno(), f"tgkill({pid}, {workers[0]}, {number})")
