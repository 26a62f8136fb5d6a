"""Kit tests of ol.core.test_folder: the student's test folder as the
static check, the sandbox, the re-check and `ol grade` all read it, and
is_test_file against what pytest itself collects.  (The static check's two
former drifts: tests/grading/test_static_check.py.)"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from ol.core import test_folder
from ol.core.test_folder import SKIPPED_FOLDERS, SuiteUnreadable, TestFolder, is_test_file


def make(folder, files: dict[str, bytes]):
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return TestFolder(folder)


FILES = {"test_rope.py": b"def test_a(): pass\n", "conftest.py": b"", "data/table.csv": b"1,2\n",
         "sub/angles_test.py": b"def test_b(): pass\n", "sub/helpers.py": b"X = 1\n", "notes.txt": b"n"}


def test_the_skipped_folders_are_left_out_at_any_depth(tmp_path):
    caches = {f"{skipped}/test_cached.py": b"def test_c(): pass\n" for skipped in SKIPPED_FOLDERS}
    caches.update({f"sub/{skipped}/test_deep.py": b"" for skipped in SKIPPED_FOLDERS})
    folder = make(tmp_path, {**FILES, **caches})
    names = sorted(FILES)
    assert [folder.relative(p) for p in folder.files()] == names
    assert [folder.relative(p) for p in folder.python_files()] == [n for n in names if n.endswith(".py")]
    assert [folder.relative(p) for p in folder.test_files()] == ["sub/angles_test.py", "test_rope.py"]
    assert sorted(folder.read()) == names
    assert sorted(folder.read("python/tests/l7-3-rope")) == [f"python/tests/l7-3-rope/{n}" for n in names]
    assert folder.digests() == {name: hashlib.sha256(data).hexdigest() for name, data in FILES.items()}


def test_a_link_is_refused_by_name_and_never_followed(tmp_path):
    secret = tmp_path / "secret.py"
    secret.write_text("ANSWER = 42\n")
    folder = make(tmp_path / "tests", FILES)
    os.symlink(secret, tmp_path / "tests" / "test_link.py")
    assert "test_link.py" not in [p.name for p in folder.files()]
    with pytest.raises(SuiteUnreadable, match="test_link.py is a symbolic link"):
        folder.read()


def test_a_folder_over_the_bound_is_refused(tmp_path, monkeypatch):
    folder = make(tmp_path, FILES)
    total = sum(len(data) for data in FILES.values())
    monkeypatch.setattr(test_folder, "MAX_SUITE_BYTES", total)
    assert len(folder.read()) == len(FILES), "exactly the bound is taken"
    monkeypatch.setattr(test_folder, "MAX_SUITE_BYTES", total - 1)
    with pytest.raises(SuiteUnreadable, match="graded folders hold tests, not data"):
        folder.read()


def test_a_snapshot_holds_every_entry_by_kind_and_keeps_what_it_read(tmp_path):
    folder = make(tmp_path / "tests", FILES)
    os.symlink(tmp_path / "tests" / "conftest.py", tmp_path / "tests" / "test_link.py")
    snapshot = folder.snapshot()
    kinds = dict(snapshot.entries)
    assert kinds == {**{name: test_folder.FILE for name in FILES}, "data": test_folder.FOLDER,
                     "sub": test_folder.FOLDER, "test_link.py": test_folder.LINK}
    assert [name for name, _ in snapshot.entries] == [folder.relative(p) for p in folder.paths()]
    assert snapshot.test_files() == ["sub/angles_test.py", "test_rope.py"]
    (tmp_path / "tests" / "test_rope.py").write_bytes(b"def test_changed(): pass\n")
    assert snapshot.files["test_rope.py"] == FILES["test_rope.py"], "a snapshot is what was read, not the disk now"
    with pytest.raises(SuiteUnreadable, match="test_link.py is a symbolic link"):
        snapshot.read()


def test_a_file_past_the_bound_is_refused_before_it_is_read(tmp_path):
    folder = make(tmp_path, FILES)
    with open(tmp_path / "huge.bin", "wb") as file:     # sparse: reading it would take 64 GiB of memory
        file.truncate(64 << 30)
    with pytest.raises(SuiteUnreadable, match="graded folders hold tests, not data"):
        folder.snapshot()


def test_a_test_file_is_what_pytest_collects(tmp_path):
    """is_test_file, which the static check, the re-check and ol grade use,
    against pytest itself collecting a folder with its default settings."""
    names = ["test_a.py", "a_test.py", "test_.py", "testing.py", "test.py", "tests.py", "check_test.py",
             "mytest_b.py", "test_c.txt", "Test_d.py", "conftest.py", "helpers.py", "TEST_e.py", "f_test_.py"]
    folder = tmp_path / "suite"
    folder.mkdir()
    for number, name in enumerate(names):
        (folder / name).write_text(f"def test_{number}():\n    pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "suite"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    collected = {line.split("::")[0].removeprefix("suite/") for line in r.stdout.splitlines() if "::" in line}
    assert collected == {name for name in names if is_test_file(name)}
    assert collected >= {"test_a.py", "a_test.py"} and "testing.py" not in collected, collected
