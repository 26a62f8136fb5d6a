"""`ol submit MODULE`: the archive a student hands in, checked as the grader
takes it.  In a checkout of this repository (the kit, and the archive graded
to the folder's points by `ol grade`: tests/instructor/test_release.py)."""

from __future__ import annotations

import zipfile

import pytest

from helpers.kit import ROOT, copy_checkout, explain, run_ol
from ol.core.catalog import load_catalog
from ol.core.submissions import take

MODULE = load_catalog(ROOT).get("L7.3")
ROPE = "python/tinyllm/modern/rope.py"


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    checkout = copy_checkout(tmp_path_factory.mktemp("checkout"))
    r = run_ol(checkout, "start", "L7.3", "--ref-deps", cwd=checkout)
    assert r.returncode == 0, explain(r)
    return checkout


def test_the_archive_holds_what_the_grader_takes_and_says_what_costs_points(started):
    """The stub ol start wrote parses but fails the course tests: the archive
    is written (each part stands on its own), the problem listed, exit 1."""
    r = run_ol(started, "submit", "L7.3", cwd=started)
    assert r.returncode == 1, explain(r)
    assert "PROBLEM  the course tests fail on your code" in r.stdout, explain(r)
    assert "ok       the files at their paths: the grader takes exactly these" in r.stdout, explain(r)
    archive = started / "L7.3-submission.zip"
    with zipfile.ZipFile(archive) as z:
        files = {name: z.read(name) for name in z.namelist()}
    tests = sorted(p.relative_to(started).as_posix() for p in (started / MODULE.student_tests).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts)
    assert sorted(files) == sorted([ROPE, *tests]) and files[ROPE] == (started / ROPE).read_bytes()
    assert set(take(files, MODULE).files) == set(files), "read back as ol grade reads it, every file is taken"


def test_nothing_is_written_when_there_is_nothing_to_grade(started, tmp_path):
    rope = started / ROPE
    kept = rope.read_bytes()
    rope.write_bytes(kept + b"\ndef broken(:\n")
    try:
        r = run_ol(started, "submit", "L7.3", "--out", str(tmp_path / "x.zip"), cwd=started)
    finally:
        rope.write_bytes(kept)
    assert r.returncode == 1 and not (tmp_path / "x.zip").exists(), explain(r)
    assert f"PROBLEM  {ROPE} does not parse: line " in r.stdout and "nothing written" in r.stderr, explain(r)


def test_a_file_ol_submit_did_not_write_is_never_replaced(started, tmp_path):
    mine = tmp_path / "mine.zip"
    mine.write_bytes(b"my own notes\n")
    r = run_ol(started, "submit", "L7.3", "--out", str(mine), cwd=started)
    assert r.returncode == 2 and "exists and ol submit did not write it" in r.stderr, explain(r)
    assert mine.read_bytes() == b"my own notes\n"
