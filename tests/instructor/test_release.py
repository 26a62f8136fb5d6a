"""ol release: a student kit of L7.3 and L7.4, set up with its README's first
command in a fresh venv and worked in as a student would.

The kit is built once for this file (under /var/tmp, not pytest's /tmp: a
Python under /tmp cannot be confined).  The student's code is the
instructor-side reference copied in, so every mutant the local check makes
is a mutant of the reference; the student's tests are the model answer, the
calibration suites, and weak suites that check shapes only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.kit import ROOT, copy_checkout, explain, run_ol
from ol.core.catalog import REFERENCE_TREE, load_catalog
from ol.grading.session import GradingSession
from ol.instructor.release import scan_kit

MODULES = ("L7.3", "L7.4")
RELEASED = (*MODULES, "L7.5")   # L7.5: its local check judges the chapter's features
CATALOG = load_catalog(ROOT)
WEAK_L7_4 = '''"""Shapes only: it never checks a value."""

import numpy as np

from tinyllm.modern.rope_scaling import rope_parameters, rope_spec


def test_default_gives_one_float32_frequency_per_pair():
    inv_freq, scaling = rope_parameters({"rope_theta": 10000.0}, 64)
    assert inv_freq.shape == (32,) and inv_freq.dtype == np.float32 and scaling == 1.0


def test_linear_keeps_the_shape():
    inv_freq, _ = rope_parameters({"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}, 64)
    assert inv_freq.shape == (32,)


def test_spec_rotates_the_whole_head():
    assert rope_spec({"head_dim": 64, "rope_theta": 10000.0}).rotary_dim == 64
'''


@dataclass
class Kit:
    root: Path
    env: dict
    scratch: Path

    def ol(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.root / "ol"), *args], cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def check(self, module: str, tests: Path) -> dict:
        r = self.ol("check", module, "--ref-deps", "--json", "--tests", str(tests))
        assert r.returncode in (0, 1), explain(r)
        return json.loads(r.stdout)


def readme_commands(readme: str) -> list[str]:
    """The commands of the README's ```bash blocks, in order, comments dropped."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", readme, re.S):
        for line in block.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


@pytest.fixture(scope="module")
def kit():
    scratch = Path(tempfile.mkdtemp(prefix="ol-release-", dir="/var/tmp"))
    try:
        out = scratch / "kit"
        r = run_ol(ROOT, "release", *RELEASED, "--out", str(out), cwd=scratch)
        assert r.returncode == 0, explain(r)
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(out / ".venv")], check=True)
        env = dict(os.environ, PATH=f"{out / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
        env.pop("PYTHONPATH", None)
        first = readme_commands((out / "README.md").read_text())[0]
        assert first == "python -m pip install -e '.[dev]' && ./ol start L7.3 --ref-deps", first
        done = subprocess.run(["bash", "-c", first], cwd=out, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, explain(done)
        yield Kit(out, env, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.slow
def test_the_kit_is_its_own_repository_and_holds_no_file_of_the_answers(kit):
    git = lambda *args: subprocess.run(["git", *args], cwd=kit.root, capture_output=True, text=True,  # noqa: E731
                                       check=True).stdout
    assert len(git("log", "--oneline").splitlines()) == 1
    tracked = set(git("ls-files").splitlines())
    for module_id in RELEASED:
        grading = CATALOG.get(module_id).grading
        withheld = [f"{REFERENCE_TREE}/{grading.target}", *grading.alternates, grading.equivalent,
                    str(Path(grading.pitfalls).parent / "misconceptions.toml")]
        assert not [p for p in withheld if (kit.root / p).exists()], withheld
        assert not (kit.root / grading.model_answer).exists()
        assert f"{grading.chaffs}/{ {'L7.3': 's01', 'L7.4': 'p01'}.get(module_id, 'a01')}.py" in tracked
        pitfalls = (kit.root / grading.pitfalls).read_text()
        assert "misconception" in pitfalls and "[[pitfall.edit]]" not in pitfalls and "old =" not in pitfalls
    assert not [p for p in tracked if p.startswith(("tests/", "bench/", "oracle/", ".ci/"))]
    assert {"L7.3x", "L9.6"}.isdisjoint(m.id for m in load_catalog(kit.root).modules)   # not released, not needed
    assert (kit.root / "course/release.toml").is_file() and "python/tinyllm/modern/rope.py" not in tracked


@pytest.mark.slow
def test_the_scan_finds_no_answer_in_the_kit_and_one_planted_in_a_chapter(kit, tmp_path):
    withheld = [CATALOG.get(m) for m in RELEASED]
    leaks, public = scan_kit(ROOT, kit.root, withheld)
    assert leaks == [], leaks
    assert set(public) <= {f"{REFERENCE_TREE}/tinyllm/modern/rope_scaling.py"}, public   # the course tests' ladder

    copy = tmp_path / "kit"
    shutil.copytree(kit.root, copy, ignore=shutil.ignore_patterns(".venv", ".git"))
    reference = (ROOT / REFERENCE_TREE / "tinyllm/modern/rope.py").read_text()
    apply_rope = reference[reference.index("def apply_rope("):reference.index("@dataclass")].rstrip()
    planted = apply_rope.replace("a_out", "first").replace("b_out", "second")   # other names: the same tree
    chapter = copy / CATALOG.get("L7.3").chapter
    chapter.write_text(chapter.read_text() + "\n\n## A worked solution\n\n```python\n" + planted + "\n```\n")
    files = [str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()]
    leaks, _ = scan_kit(ROOT, copy, withheld, files)
    assert [(leak.path, leak.original) for leak in leaks] == [(CATALOG.get("L7.3").chapter, "apply_rope")], leaks


def test_release_refuses_a_course_whose_chapter_holds_the_answer(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    reference = (checkout / REFERENCE_TREE / "tinyllm/modern/rope_scaling.py").read_text()
    llama3 = reference[reference.index("def _llama3("):reference.index("# rope type ->")].rstrip()
    chapter = checkout / CATALOG.get("L7.4").chapter
    chapter.write_text(chapter.read_text() + "\n```python\n" + llama3 + "\n```\n")
    r = run_ol(checkout, "release", "L7.4", "--out", str(tmp_path / "kit"), cwd=tmp_path)
    assert r.returncode == 2, explain(r)
    assert "would hand out the answers" in r.stderr and "_llama3" in r.stderr, explain(r)
    assert not (tmp_path / "kit").exists()


@pytest.mark.slow
def test_a_withheld_need_comes_from_the_students_own_file(kit):
    r = kit.ol("start", "L7.4", "--ref-deps")
    assert r.returncode == 0, explain(r)
    shutil.copy2(ROOT / REFERENCE_TREE / "tinyllm/modern/rope_scaling.py", kit.root / "python/tinyllm/modern")
    r = kit.ol("tests", "L7.4", "--ref-deps", "--", "-x", "-q")
    assert r.returncode == 1, explain(r)   # L7.3 is still the stub ol start wrote
    assert "and your own L7.3" in r.stdout and "L7.3: implement" in r.stdout, explain(r)


@pytest.mark.slow
def test_every_readme_command_works_and_the_local_check_catches_every_chaff(kit):
    for name in ("rope.py", "rope_scaling.py", "attention.py"):   # every released module's code, as a student's
        shutil.copy2(ROOT / REFERENCE_TREE / "tinyllm/modern" / name, kit.root / "python/tinyllm/modern")
    for module_id in RELEASED:
        answer = ROOT / CATALOG.get(module_id).grading.model_answer
        shutil.copytree(answer, kit.root / CATALOG.get(module_id).student_tests, dirs_exist_ok=True)
    commands = readme_commands((kit.root / "README.md").read_text())[1:]
    assert {c.split()[1] for c in commands} == {"start", "tests", "check", "submit", "diff", "list"}, commands
    for command in commands:
        assert command.startswith("./ol "), command
        r = kit.ol(*command.split()[1:])
        if command.split()[1] == "diff":
            assert r.returncode == 1 and "is not released yet" in r.stderr, explain(r)
        else:
            assert r.returncode == 0, (command, explain(r))
        if command.split()[1] == "check":   # the model answer: every chaff caught
            pitfalls = len(GradingSession(ROOT, command.split()[2]).mutants.pitfalls)
            assert "PASSED: your tests catch" in r.stdout and f"and {pitfalls}/{pitfalls} pitfalls" in r.stdout, explain(r)
            assert "changes to your own code" in r.stdout and "MISSED" not in r.stdout, explain(r)


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_ol_submit_writes_the_archive_ol_grade_gives_the_folders_points(kit, tmp_path):
    """The student's archive, made in the kit, and the student's folder (the
    kit's python/, runner and all) graded in one class by the instructor:
    the same files taken, so the same row."""
    import csv

    shutil.copy2(ROOT / REFERENCE_TREE / "tinyllm/modern/rope.py", kit.root / "python/tinyllm/modern")
    tests = kit.root / CATALOG.get("L7.3").student_tests
    shutil.copytree(ROOT / CATALOG.get("L7.3").grading.model_answer, tests, dirs_exist_ok=True)
    r = kit.ol("submit", "L7.3")
    assert r.returncode == 0, explain(r)
    archive = kit.root / "L7.3-submission.zip"
    assert "wrote L7.3-submission.zip" in r.stdout and "the course tests run: 53 of 53 pass" in r.stdout, explain(r)
    with zipfile.ZipFile(archive) as z:
        names = sorted(z.namelist())
    expected = sorted(["python/tinyllm/modern/rope.py", *(f"{CATALOG.get('L7.3').student_tests}/{p.name}"
                                                          for p in tests.iterdir() if p.is_file())])
    assert names == expected and all(f"  {name}" in r.stdout.splitlines() for name in names), (names, r.stdout)
    again = kit.ol("submit", "L7.3")
    assert again.returncode == 0, "ol submit replaces the archive it wrote"
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    shutil.copytree(kit.root / "python", submissions / "ann" / "python",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy2(archive, submissions / "ann-zip.zip")
    r = run_ol(ROOT, "grade", "L7.3", str(submissions), "--out", str(tmp_path / "graded"), cwd=tmp_path,
               timeout=1800)
    assert r.returncode == 0, explain(r)
    with open(tmp_path / "graded" / "grades.csv", newline="") as f:
        rows = {row["source"]: row for row in csv.DictReader(f)}
    same = ("status", "points", "score", "killed", "counted", "course tests", "reason")
    assert (rows["ann-zip.zip"]["status"], rows["ann-zip.zip"]["points"]) == ("passed", "100.00"), \
        rows["ann-zip.zip"]["reason"]
    assert {k: rows["ann-zip.zip"][k] for k in same} == {k: rows["ann"][k] for k in same}, rows
    assert json.loads((tmp_path / "graded" / "ann-zip.json").read_text())["ignored"] == []


# The weakest calibration suite of each module (test_calibration.py grades all three, in this
# repository): if it passes the kit's check, against the kit's own mutants, the others do too.
WEAKEST = {"L7.3": "c", "L7.4": "b"}


@pytest.mark.slow
@pytest.mark.parametrize("module_id, suite", [(m, WEAKEST[m]) for m in MODULES])
def test_the_calibration_suites_pass_the_local_check(kit, module_id, suite):
    folder = ROOT / "tests" / "calibration" / f"{module_id.lower().replace('.', '-')}-suite-{suite}"
    result = kit.check(module_id, folder)
    assert result["passed"] and all(p["killed"] for p in result["pitfalls"]), (result["reason"], result["problems"])
    assert result["mutants_of"] == "your own code" and result["excluded"]["equivalent"] == 0, result
    assert 0 < len(result["survivors"]) <= 40 and result["counted"] > 250, result   # the reference's 8 and 5 equivalents
    assert all(s["possibly_equivalent"] in (True, False) for s in result["survivors"]), result["survivors"]


@pytest.mark.slow
@pytest.mark.parametrize("module_id", MODULES)
def test_a_suite_of_shape_checks_fails_the_local_check(kit, module_id, tmp_path):
    if module_id == "L7.3":
        folder = ROOT / "tests" / "grading_suites" / "shapes-and-errors"
    else:
        folder = tmp_path / "shapes-only"
        folder.mkdir()
        (folder / "test_shapes.py").write_text(WEAK_L7_4)
    result = kit.check(module_id, folder)
    assert result["reason"] is None and not result["passed"], result
    assert result["score"] < result["threshold"] and not all(p["killed"] for p in result["pitfalls"]), result


@pytest.mark.slow
def test_the_local_check_judges_the_chapters_features_as_ol_grade_does(kit):
    """A suite that never calls attention with a cache: ol grade fails it (the
    key/value cache feature is below its floor), and so must the kit, or a
    student passes at home and fails in class.  Before, the kit passed it at
    0.88: its survivors had no witnesses, so it had no features to judge."""
    for name in ("rope.py", "attention.py"):
        shutil.copy2(ROOT / REFERENCE_TREE / "tinyllm/modern" / name, kit.root / "python/tinyllm/modern")
    result = kit.check("L7.5", ROOT / "tests" / "grading_suites" / "l7-5-no-cache")
    assert result["reason"] is None and not result["passed"] and result["score"] >= result["threshold"], result
    assert "kv-cache" in {f["id"] for f in result["features"] if not f["met"]}, result["features"]
    cache_witnesses = [s["witness"] for s in result["survivors"] if (s.get("witness") or {}).get("feature") == "kv-cache"]
    assert cache_witnesses and all("past=(Tensor(" in w["call"] for w in cache_witnesses), cache_witnesses
    assert all(s["witness"]["function"] == "attention" for s in result["survivors"] if s.get("witness"))
    assert sum(1 for s in result["survivors"] if s.get("witness")) >= len(result["survivors"]) - 2, result["survivors"]


@pytest.mark.slow
def test_a_suite_that_rejects_the_students_own_code_is_not_graded(kit, tmp_path):
    folder = tmp_path / "wrong"
    folder.mkdir()
    (folder / "test_wrong.py").write_text(
        "from tinyllm.modern.rope import rope_cos_sin\n\n\n"
        "def test_cos_at_position_one():\n    assert rope_cos_sin(1, [1.0])[0][0] == 0.5\n")
    result = kit.check("L7.3", folder)
    assert result["reason"] == "your tests fail on a correct implementation" and result["score"] is None, result
    assert any("on your own code" in line for line in result["problems"]), result["problems"]


@pytest.mark.slow
def test_diff_refuses_until_the_solutions_are_released(kit):
    r = kit.ol("diff", "L7.3", "--ref-deps")
    assert r.returncode == 1 and "reference of L7.3 is not released yet" in r.stderr, explain(r)
    r = run_ol(ROOT, "release", "L7.3", "--solutions", "--out", str(kit.root), cwd=kit.scratch)
    assert r.returncode == 0, explain(r)
    log = subprocess.run(["git", "log", "--oneline"], cwd=kit.root, capture_output=True, text=True).stdout
    assert len(log.splitlines()) == 2 and "Solutions of L7.3" in log, log
    r = kit.ol("diff", "L7.3", "--ref-deps")
    assert r.returncode == 0 and "identical to the reference" in r.stdout, explain(r)
    r = kit.ol("diff", "L7.4", "--ref-deps")
    assert r.returncode == 1 and "reference of L7.4 is not released yet" in r.stderr, explain(r)
    leaks, _ = scan_kit(ROOT, kit.root, [CATALOG.get("L7.4")])
    assert leaks == [], leaks   # the student's copies under python/ are not the kit's files
