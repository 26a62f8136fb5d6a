"""Kit tests of ol.core.files: a file is replaced whole or not at all.

Every file `ol` writes for a person or a later run (state, caches, reports,
grades, the Gradescope bundle) goes through write_whole or whole, so an
error half-way through a write must leave the old file as it was, and no
temporary file behind."""

from __future__ import annotations

import errno
import os
import stat
import zipfile
from pathlib import Path

import pytest

from ol.core.files import whole, write_whole

OLD = "the old grades, whole\n" * 100
NEW = "the new grades\n" * 1000


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_text_and_bytes_replace_the_file_and_leave_nothing_else(tmp_path):
    target = tmp_path / "grades.csv"
    target.write_text(OLD)
    write_whole(target, NEW)
    assert target.read_text(encoding="utf-8") == NEW
    write_whole(target, "café ✓".encode("utf-8") + b"\x00\xff")
    assert target.read_bytes() == "café ✓".encode("utf-8") + b"\x00\xff"
    write_whole(target, "café")
    assert target.read_bytes() == "café".encode("utf-8"), "text is written as UTF-8 whatever the locale"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv"]


def test_a_disk_full_half_way_leaves_the_old_file_whole_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "summary.md"
    target.write_text(OLD)
    real = Path.write_bytes

    def half_then_full(self, data):
        real(self, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", half_then_full)
    with pytest.raises(OSError, match="No space left"):
        write_whole(target, NEW)
    monkeypatch.undo()
    assert target.read_text() == OLD, "a failed write must not touch the old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.md"], "the temporary file must be removed"


@pytest.mark.parametrize("error", [ValueError("a bug in the writer"), KeyboardInterrupt()])
def test_an_error_or_interrupt_inside_whole_keeps_the_old_file(tmp_path, error):
    target = tmp_path / "bundle.zip"
    target.write_text(OLD)
    with pytest.raises(type(error)):
        with whole(target) as tmp:
            assert tmp.parent == tmp_path, "the temporary must be beside the file (same file system)"
            tmp.write_text(NEW)
            raise error
    assert target.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle.zip"]


def test_whole_hands_a_path_to_a_writer_that_wants_one(tmp_path):
    target = tmp_path / "autograder.zip"
    with whole(target) as tmp, zipfile.ZipFile(tmp, "w") as bundle:
        bundle.writestr("setup.sh", "#!/bin/sh\n")
        assert not target.exists(), "the file appears only once it is whole"
    with zipfile.ZipFile(target) as bundle:
        assert bundle.read("setup.sh") == b"#!/bin/sh\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["autograder.zip"]


def test_the_mode_is_the_one_asked_whatever_the_umask(tmp_path):
    previous = os.umask(0o077)            # a temporary file alone would be 0o600
    try:
        write_whole(tmp_path / "report.html", "<p>")
        write_whole(tmp_path / "state.json", "{}", mode=0o600)
        replaced = tmp_path / "was-private.csv"
        replaced.write_text(OLD)
        replaced.chmod(0o600)
        write_whole(replaced, NEW)
    finally:
        os.umask(previous)
    assert mode_of(tmp_path / "report.html") == 0o644
    assert mode_of(tmp_path / "state.json") == 0o600
    assert mode_of(replaced) == 0o644, "the file written takes the mode asked, not the old file's"


def test_a_missing_folder_is_an_error_and_nothing_is_written(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_whole(tmp_path / "no-such-folder" / "grades.csv", NEW)
    assert list(tmp_path.iterdir()) == []
