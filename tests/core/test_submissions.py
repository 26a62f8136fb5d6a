"""Kit tests of ol.core.submissions and ol.core.archives: a class's folder
of submissions read, no grading.  Names unique, stable and traceable (bob/,
bob.zip, bob-2.zip); every bad archive is its student's row alone (a
non-UTF-8 name, a file that is also a folder, a 300-character name, a
million members read under a memory bound, a corrupt member, too many zip
members); which files are taken and which ignored."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

from helpers.classes import (MODEL_ANSWER, MODULE, REFERENCE_ROPE, ROPE, TESTS, suite_files, write_bomb, write_folder,
                             write_tar, write_zip)
from helpers.kit import ROOT
from ol.core.archives import MAX_MEMBERS
from ol.core.submissions import read_submissions, student_names, take


def test_names_are_unique_stable_and_a_made_name_never_meets_a_real_one():
    entries = ["bob", "bob.zip", "bob-2.zip", "Carol.tar.gz", "carol", "summary", "dee dee.zip", "x" * 300 + ".zip",
               "eve.zip"]
    names = student_names(entries)
    assert len(set(n.lower() for n in names.values())) == len(entries), names
    assert names["bob-2.zip"] == "bob-2" and names["eve.zip"] == "eve"     # plain and alone: kept as they are
    for entry in ("bob", "bob.zip", "Carol.tar.gz", "carol", "summary", "dee dee.zip", "x" * 300 + ".zip"):
        assert "+" in names[entry] and len(names[entry]) <= 69, (entry, names[entry])
    assert student_names(list(reversed(entries))) == names               # stable: the order does not matter
    assert student_names(["bob", "bob.zip", "bob-2.zip", "zed"])["bob"] == names["bob"]


def test_a_plain_tar_reads_as_its_gzipped_twin_and_is_named_by_its_stem(tmp_path):
    files = {"python/tinyllm/modern/rope.py": b"x = 1\n", "python/tests/l7-3-rope/test_a.py": b"def test_a():\n    pass\n"}
    write_tar(tmp_path / "ann.tar", files)
    write_tar(tmp_path / "ben.tar.gz", files)
    (tmp_path / "cy.tar").write_bytes(b"not a tarball" * 100)
    read = {s.entry: s for s in read_submissions(tmp_path, MODULE)}
    assert read["ann.tar"].files == read["ben.tar.gz"].files == files, read
    assert read["ann.tar"].student == "ann"
    assert read["cy.tar"].refused.startswith("cy.tar is not a readable .tar"), read["cy.tar"]


@pytest.fixture(scope="module")
def bad_class(tmp_path_factory) -> Path:
    """One good entry among bad archives, each bad in its own way."""
    folder = tmp_path_factory.mktemp("bad") / "submissions"
    rope = {ROPE: REFERENCE_ROPE.read_bytes()}
    write_folder(folder / "good", {**rope, **suite_files(MODEL_ANSWER)})
    with tarfile.open(folder / "latin1.tar.gz", "w:gz", encoding="latin-1", format=tarfile.GNU_FORMAT) as archive:
        info = tarfile.TarInfo("test_caf\xe9.py")       # latin-1 bytes: not UTF-8
        info.size = 1
        archive.addfile(info, io.BytesIO(b"\n"))
    write_zip(folder / "conflict.zip", {"rope.py": b"x = 1\n", "helpers": b"", "helpers/test_y.py": b"\n"})
    write_zip(folder / "long.zip", {"rope.py": b"x = 1\n", "test_" + "a" * 300 + ".py": b"\n"})
    write_zip(folder / "twice.zip", {"rope.py": b"x = 1\n"})
    with zipfile.ZipFile(folder / "twice.zip", "a") as archive:
        with pytest.warns(UserWarning):
            archive.writestr("rope.py", b"y = 2\n")
    write_zip(folder / "many.zip", {f"test_{n}.py": b"\n" for n in range(MAX_MEMBERS + 1)})
    write_bomb(folder / "bomb.tar.gz")
    data = bytearray(Path(folder / "good" / ROPE).read_bytes() * 4)
    write_zip(folder / "corrupt.zip", {"rope.py": bytes(data)})
    raw = bytearray((folder / "corrupt.zip").read_bytes())
    middle = len(raw) // 2
    raw[middle:middle + 64] = bytes(64)                     # damage the deflated bytes, not the directory
    (folder / "corrupt.zip").write_bytes(bytes(raw))
    write_tar(folder / "twins.tar.gz", {"tests/test_a.py": b"\n", "l7-3-rope/test_a.py": b"\n", "rope.py": b"\n"})
    return folder


BAD = {   # entry: what its refusal says
    "latin1.tar.gz": "not UTF-8", "conflict.zip": "both as a file and as a folder",
    "long.zip": "too long for a file system", "twice.zip": "holds rope.py twice",
    "many.zip": f"more than {MAX_MEMBERS} files and folders", "bomb.tar.gz": f"more than {MAX_MEMBERS} files",
    "corrupt.zip": "is not a readable zip", "twins.tar.gz": "which are the same file",
}


def test_every_bad_archive_is_refused_for_its_student_alone(bad_class):
    submissions = {s.entry: s for s in read_submissions(bad_class, MODULE)}
    assert set(submissions) == {"good", *BAD}
    assert submissions["good"].refused is None and ROPE in submissions["good"].files
    for entry, says in BAD.items():
        refused = submissions[entry].refused
        assert refused and refused.startswith(entry) and says in refused, (entry, refused)
        assert str(bad_class) not in refused, "the student is never shown the instructor's paths"


def test_a_bomb_of_a_million_members_is_refused_within_a_small_memory_bound(bad_class, tmp_path):
    """Read under an address-space limit of 400 MiB: reading the million
    members (what the grader did before) needs more, and dies."""
    program = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))
        sys.path.insert(0, {str(ROOT / "python")!r})
        from pathlib import Path
        from ol.core.catalog import load_catalog
        from ol.core.submissions import read_submissions
        module = load_catalog(Path({str(ROOT)!r})).get("L7.3")
        print(read_submissions(Path(sys.argv[1]), module)[0].refused)
    """)
    only_bomb = tmp_path / "one"
    only_bomb.mkdir()
    shutil.copy2(bad_class / "bomb.tar.gz", only_bomb / "bomb.tar.gz")
    done = subprocess.run([sys.executable, "-c", program, str(only_bomb)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"more than {MAX_MEMBERS} files and folders" in done.stdout


def test_which_files_are_taken_and_which_ignored():
    flat = {"rope.py": b"x = 1\n", "test_a.py": b"import helpers\n", "helpers.py": b"\n", "rope_final.py": b"\n",
            "tests/test_b.py": b"\n", "notes.txt": b"x", "__MACOSX/._rope.py": b"\0"}
    files, names, ignored, taken_from = take(flat, MODULE)
    assert set(files) == {ROPE, f"{TESTS}/test_a.py", f"{TESTS}/helpers.py", f"{TESTS}/test_b.py"}
    assert names[f"{TESTS}/test_b.py"] == "tests/test_b.py" and taken_from == ""
    assert ignored == ["__MACOSX/._rope.py", "notes.txt", "rope_final.py"]
    inside_a_folder = {f"ann/{TESTS}/test_a.py": b"\n", "ann/rope.py": b"x\n", "ann/src/other.py": b"\n"}
    files, names, ignored, taken_from = take(inside_a_folder, MODULE)
    assert set(files) == {ROPE, f"{TESTS}/test_a.py"} and names[ROPE] == "ann/rope.py"
    assert ignored == ["ann/src/other.py"] and taken_from == "", "one top folder is the usual zip of a folder"


def test_files_at_any_depth_are_taken_and_the_reason_says_from_where(tmp_path):
    """The instructor's tarball: Downloads/L7.3 submission/python/... (spaces
    and all) beside an unrelated file.  Every file named as the checkout names
    it is taken; none is listed as ignored; the row says from where."""
    top = "Downloads/L7.3 submission/"
    files = {ROPE: REFERENCE_ROPE.read_bytes(), **suite_files(MODEL_ANSWER)}
    folder = tmp_path / "class"
    folder.mkdir()
    write_tar(folder / "nested.tar.gz", {top + name: data for name, data in files.items()}
              | {"Downloads/todo.txt": b"submit\n"})
    write_folder(folder / "split", {"work/src/rope.py": REFERENCE_ROPE.read_bytes(),
                                    **suite_files(MODEL_ANSWER, "work/tests")})
    write_zip(folder / "twice.zip", {"a/rope.py": b"x = 1\n", "b/c/rope.py": b"x = 2\n"})
    taken = {s.entry: s for s in read_submissions(folder, MODULE)}
    nested = taken["nested.tar.gz"]
    assert nested.refused is None and nested.files == files, sorted(nested.files)
    assert nested.ignored == ["Downloads/todo.txt"], "no file the student named correctly is listed as ignored"
    assert nested.taken_from == f"files taken from {top}"
    split = taken["split"]
    assert split.files == files and split.taken_from == "rope.py taken from work/src/, tests taken from work/tests/"
    assert taken["twice.zip"].refused == "twice.zip holds two rope.py (a/rope.py and b/c/rope.py) and the grader " \
                                         "cannot tell which is your work; keep one"
