"""Kit tests of ol.grading.sandbox.landlock: a process restricted to reading
beneath some folders and writing beneath others can do just that, and no
more, for good.  Each case runs in a forked child (a restriction cannot be
lifted), which reports what each access gave, before and after."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from helpers.forked import in_a_child
from ol.grading.sandbox import landlock, syscalls

pytestmark = pytest.mark.skipif(landlock.abi() < 1, reason="this kernel has no Landlock")

PR_SET_NO_NEW_PRIVS = 38


def outcome(action) -> int:
    """0 when action() worked, else the errno it failed with."""
    try:
        action()
    except OSError as error:
        return error.errno
    return 0


def accesses(folders: dict[str, Path]) -> dict[str, int]:
    return {
        "read readable": outcome(lambda: (folders["readable"] / "given.txt").read_bytes()),
        "list readable": outcome(lambda: os.listdir(folders["readable"])),
        "write readable": outcome(lambda: (folders["readable"] / "new.txt").write_bytes(b"x")),
        "write writable": outcome(lambda: (folders["writable"] / "new.txt").write_bytes(b"x")),
        "read writable": outcome(lambda: (folders["writable"] / "new.txt").read_bytes()),
        "read elsewhere": outcome(lambda: (folders["elsewhere"] / "secret.txt").read_bytes()),
        "list elsewhere": outcome(lambda: os.listdir(folders["elsewhere"])),
        "write /dev/null": outcome(lambda: Path(os.devnull).write_bytes(b"x")),
    }


def restricted(folders: dict[str, Path]) -> dict:
    """What each access gave before and after a restriction, in a forked child."""
    def body() -> dict:
        before = accesses(folders)
        for folder in (folders["readable"], folders["writable"]):
            (folder / "new.txt").unlink(missing_ok=True)
        assert syscalls.libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
        landlock.restrict(readable=[str(folders["readable"])], writable=[str(folders["writable"])])
        return {"before": before, "after": accesses(folders)}
    return in_a_child(body)


def test_a_restricted_process_reads_and_writes_only_where_it_was_let(tmp_path):
    folders = {name: tmp_path / name for name in ("readable", "writable", "elsewhere")}
    for folder in folders.values():
        folder.mkdir()
    (folders["readable"] / "given.txt").write_text("the run's own file")
    (folders["elsewhere"] / "secret.txt").write_text("the grader's")
    said = restricted(folders)
    assert set(said["before"].values()) == {0}, f"every access works before: {said['before']}"
    after = said["after"]
    assert after["read readable"] == after["list readable"] == 0, after
    assert after["write writable"] == after["read writable"] == after["write /dev/null"] == 0, after
    assert after["write readable"] == errno.EACCES, after
    assert after["read elsewhere"] == after["list elsewhere"] == errno.EACCES, after
    assert (folders["elsewhere"] / "secret.txt").read_text() == "the grader's", "this process is not restricted"


def test_landlock_missing_is_said_not_ignored(monkeypatch):
    monkeypatch.setattr(landlock, "abi", lambda: 0)
    with pytest.raises(landlock.LandlockError, match="not available"):
        landlock.restrict(readable=["/usr"], writable=[])
