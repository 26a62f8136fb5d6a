"""Grading a class (`ol grade`, Ray, Gradescope): a folder of synthetic
submissions, each graded as `ol check --ref-deps` would in that student's own
checkout, in a private copy of the kit; the instructor's checkout and every
other submission untouched.

    synthetic class   the model answer, the three calibration suites (folder,
                      zip, tar.gz and the flat layout), a weak suite, a
                      malformed zip, tests that hang, a cheating suite from the
                      trust gallery, code that fails the course tests
    determinism       --jobs 1 and --jobs 2 give the same rows (seconds aside);
                      a second run keeps every unchanged row
    Ray               a local head on 127.0.0.1 only; its rows equal --jobs 1's
    Gradescope        the bundle's run_autograder on a passing, a failing and a
                      malformed submission writes results.json as specified
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from kit import ROOT, explain, processes_with, run_ol, snapshot

REFERENCE_ROPE = ROOT / "course/reference/python/tinyllm/modern/rope.py"
MODEL_ANSWER = ROOT / "course/reference/python/tests/l7-3-rope"
CALIBRATION = ROOT / "tests/calibration"
SUITES = ROOT / "tests/grading_suites"
TESTS = "python/tests/l7-3-rope"
ROPE = "python/tinyllm/modern/rope.py"
TIME_LIMIT = "8"


def suite_files(folder: Path, prefix: str = TESTS) -> dict[str, bytes]:
    return {f"{prefix}/{p.relative_to(folder).as_posix()}": p.read_bytes() for p in folder.rglob("*.py")}


def write_folder(dest: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)


def write_zip(dest: Path, files: dict[str, bytes], top: str = "") -> None:
    with zipfile.ZipFile(dest, "w") as archive:
        for name, data in files.items():
            archive.writestr(top + name, data)


def write_tar(dest: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(dest, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def synthetic_class(tmp_path_factory) -> Path:
    """Nine submissions and what each must grade to."""
    folder = tmp_path_factory.mktemp("class") / "submissions"
    folder.mkdir()
    rope = {ROPE: REFERENCE_ROPE.read_bytes()}
    write_folder(folder / "ada", {**rope, **suite_files(MODEL_ANSWER)})
    write_zip(folder / "bo.zip", {**rope, **suite_files(CALIBRATION / "l7-3-suite-a")}, top="bo-l7.3/")
    write_tar(folder / "cy.tar.gz", {**rope, **suite_files(CALIBRATION / "l7-3-suite-b")})
    flat = {"rope.py": REFERENCE_ROPE.read_bytes(), **suite_files(CALIBRATION / "l7-3-suite-c", prefix=".")}
    write_folder(folder / "dee", {name.lstrip("./"): data for name, data in flat.items()} | {"notes.txt": b"x"})
    write_folder(folder / "eve", {**rope, **suite_files(SUITES / "shapes-and-errors")})
    with zipfile.ZipFile(folder / "fay.zip", "w") as archive:
        archive.writestr(ROPE, REFERENCE_ROPE.read_bytes())
        archive.writestr("../../outside.py", b"print('escaped')\n")
    write_folder(folder / "gus", {**rope, f"{TESTS}/test_hangs.py": (
        b"from tinyllm.modern.rope import rope_cos_sin\n\n\ndef test_forever():\n"
        b"    rope_cos_sin(0, [1.0])\n    while True:\n        pass\n")})
    cheat = SUITES / "cheats" / "reexport-os-system" / "test_cheat.py"
    write_folder(folder / "hal", {**rope, f"{TESTS}/test_cheat.py": cheat.read_bytes().replace(
        b"__ROOT__", str(ROOT).encode())})
    broken = REFERENCE_ROPE.read_text().replace("np.sin(angles) * scale", "-np.sin(angles) * scale")
    write_folder(folder / "ivy", {ROPE: broken.encode(), **suite_files(MODEL_ANSWER)})
    return folder


EXPECTED = {   # student: (passed, score floor or None when not scored, what the error or reason says)
    "ada": (True, 1.0, ""), "bo": (True, 0.8, ""), "cy": (True, 0.8, ""), "dee": (True, 0.8, ""),
    "eve": (False, 0.0, ""), "fay": (False, None, "malformed submission"),
    "gus": (False, None, "fail on a correct implementation"), "hal": (False, 0.0, ""),
    "ivy": (False, None, "course tests fail"),
}


def rows(out: Path) -> dict[str, dict]:
    with open(out / "grades.csv", newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def without_seconds(table: dict[str, dict]) -> dict[str, dict]:
    return {student: {k: v for k, v in row.items() if k != "seconds"} for student, row in table.items()}


@pytest.fixture(scope="module")
def graded(synthetic_class, tmp_path_factory):
    """The class graded with --jobs 1, with the instructor's checkout unchanged."""
    before = snapshot(ROOT, skip=(".git", ".ol", ".pytest_cache", ".hypothesis", "build"))
    out = tmp_path_factory.mktemp("graded") / "out"
    r = run_ol(ROOT, "grade", "L7.3", str(synthetic_class), "--out", str(out), "--jobs", "1",
               "--time-limit", TIME_LIMIT, cwd=out.parent, timeout=1800)
    assert r.returncode == 0, explain(r)
    assert snapshot(ROOT, skip=(".git", ".ol", ".pytest_cache", ".hypothesis", "build")) == before
    return out, r


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_every_row_of_the_class_is_right(graded):
    out, r = graded
    table = rows(out)
    assert sorted(table) == sorted(EXPECTED), table.keys()
    for student, (passed, floor, says) in EXPECTED.items():
        row, record = table[student], json.loads((out / f"{student}.json").read_text())
        assert (row["passed"] == "yes") is passed, (student, row)
        if floor is None:
            assert row["score"] == "", (student, row)
        else:
            assert float(row["score"]) >= floor if passed else float(row["score"]) < 0.8, (student, row)
        assert says in row["error"] + " " + row["reason"], (student, row)
        assert record["student"] == student and record["module"] == "L7.3" and record["digest"]
    assert table["ada"]["killed"] == table["ada"]["counted"] and table["ada"]["missed pitfalls"] == ""
    assert table["ada"]["course tests"].split("/")[0] == table["ada"]["course tests"].split("/")[1]
    assert "notes.txt" in json.loads((out / "dee.json").read_text())["ignored"]
    assert not (ROOT / "ol-cheat-was-here").exists() and not processes_with("31416")
    summary = (out / "summary.md").read_text()
    assert "- passed: 4 of 9" in summary and "fay" in summary.split("## Errors")[1]
    assert "Mutants that survive most often" in summary and "Pitfalls most often missed" in summary


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_grading_twice_or_side_by_side_gives_the_same_rows(graded, synthetic_class, tmp_path):
    out, _ = graded
    again = run_ol(ROOT, "grade", "L7.3", str(synthetic_class), "--out", str(out), "--time-limit", TIME_LIMIT,
                   cwd=tmp_path, timeout=600)
    assert again.returncode == 0 and "9 submission(s) unchanged" in again.stderr, explain(again)
    parallel = tmp_path / "parallel"
    r = run_ol(ROOT, "grade", "L7.3", str(synthetic_class), "--out", str(parallel), "--jobs", "2",
               "--time-limit", TIME_LIMIT, cwd=tmp_path, timeout=1800)
    assert r.returncode == 0, explain(r)
    assert without_seconds(rows(parallel)) == without_seconds(rows(out))


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
def ray_head(tmp_path):
    """A Ray head on 127.0.0.1 only, stopped afterwards with everything it started."""
    port = free_port()
    temp = Path(f"/tmp/olray-{os.getpid()}")
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
               RAY_USAGE_STATS_ENABLED="0", RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0")
    # `python -m`, not the `ray` script beside sys.executable: a venv that sees
    # ray through --system-site-packages has no such script of its own.
    head = subprocess.Popen([sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--node-ip-address=127.0.0.1",
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


@pytest.mark.slow
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
    local = {s: row for s, row in without_seconds(rows(graded[0])).items() if s in ("ada", "bo", "eve", "fay")}
    assert without_seconds(rows(out)) == local


# ---- Gradescope --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def autograder(tmp_path_factory) -> Path:
    """The bundle, unpacked as Gradescope would: <root>/source."""
    work = tmp_path_factory.mktemp("gradescope")
    bundle = work / "autograder.zip"
    r = run_ol(ROOT, "gradescope", "L7.3", "--out", str(bundle), cwd=work)
    assert r.returncode == 0, explain(r)
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder"} <= set(names), "both at the zip's root"
        archive.extractall(work / "source")
    for name in ("setup.sh", "run_autograder"):
        os.chmod(work / "source" / name, 0o755)
    return work


def run_autograder(autograder: Path, name: str, files: dict[str, bytes]) -> dict:
    root = autograder / name
    (root / "submission").mkdir(parents=True)
    write_folder(root / "submission", files)
    env = dict(os.environ, OL_PYTHON=sys.executable)
    done = subprocess.run([str(autograder / "source" / "run_autograder"), "--root", str(root)], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text())


def valid_results(data: dict) -> None:
    """Gradescope's documented fields and types."""
    assert isinstance(data["score"], (int, float)) and isinstance(data["output"], str)
    assert isinstance(data["tests"], list) and data["tests"]
    for test in data["tests"]:
        assert {"name", "score", "max_score", "output", "visibility"} <= set(test), test
        assert isinstance(test["score"], (int, float)) and isinstance(test["max_score"], (int, float))
        assert test["visibility"] in ("hidden", "after_due_date", "after_published", "visible")
        assert 0 <= test["score"] <= test["max_score"] or test["max_score"] == 0


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_the_gradescope_autograder_grades_a_passing_a_failing_and_a_malformed_submission(autograder):
    passing = run_autograder(autograder, "passing", {"rope.py": REFERENCE_ROPE.read_bytes(),
                                                     **{p.name: p.read_bytes() for p in MODEL_ANSWER.glob("*.py")}})
    valid_results(passing)
    names = [t["name"] for t in passing["tests"]]
    assert names[0].startswith("Course tests") and names[1].startswith("Mutation grade")
    assert sum(n.startswith("Pitfall s0") for n in names) == 7 and "Half precision" in " ".join(names)
    assert passing["score"] == 100.0 and passing["output"].startswith("PASSED")
    failing = run_autograder(autograder, "failing", {
        ROPE: REFERENCE_ROPE.read_bytes(), **suite_files(SUITES / "shapes-and-errors")})
    valid_results(failing)
    assert 0 < failing["score"] < passing["score"] and failing["output"].startswith("NOT PASSED")
    assert any(t["name"].startswith("Pitfall") and t["score"] == 0 and "Symptom" in t["output"] for t in failing["tests"])
    malformed = run_autograder(autograder, "malformed", {"README.md": b"my work is in another castle\n"})
    valid_results(malformed)
    assert malformed["score"] == 0 and "rope.py" in malformed["output"]
