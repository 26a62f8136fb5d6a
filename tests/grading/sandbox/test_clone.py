"""Kit tests of ol.grading.sandbox.clone and the reporter's fork beside:
a run cloned so that its thread block holds its own id, as the C library
expects, and a child of the forker's parent."""

from __future__ import annotations

import ctypes
import os
import threading

import pytest

from ol.grading.sandbox import clone


@pytest.mark.needs_confinement
def test_the_collector_can_clone_its_runs_where_the_thread_block_holds_the_id(monkeypatch):
    """clone.usable() forks a child that compares the word clone.tid_field()
    found with its own id: here it is the id, and any other word is refused
    (the shared check would then be isolated)."""
    libc = ctypes.CDLL(None, use_errno=True)
    address = clone.tid_field(libc)
    assert ctypes.c_int32.from_address(address).value == threading.get_native_id()
    assert clone.usable() == (True, "")
    monkeypatch.setattr(clone, "tid_field", lambda libc: address - 4)
    clone.usable.cache_clear()
    try:
        usable, why = clone.usable()
    finally:
        clone.usable.cache_clear()
    assert not usable and "did not find its own id" in why, why


@pytest.mark.parametrize("call", ["clone3", "clone"])
def test_a_run_forked_beside_is_its_forkers_sibling_and_holds_its_own_id(call):
    """reporter.Beside forks as os.fork does, but the child is a child of
    the caller's parent (the reporter, which reaps it), and its thread block
    holds its own id.  Where clone3 is refused (Docker's default profile
    answers ENOSYS) it forks by clone, whose arguments differ by machine."""
    from ol.grading.sandbox.reporter import Beside

    read, write = os.pipe()
    forker = os.fork()
    if forker == 0:                       # plays the warm process
        code = 1
        try:
            beside = Beside()
            beside.clone3 = call == "clone3"
            pid, pidfd = beside.fork()
            if pid == 0:
                os._exit(7 if ctypes.c_int32.from_address(beside.tid).value == threading.get_native_id() else 8)
            os.write(write, pid.to_bytes(4, "little"))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    assert os.waitstatus_to_exitcode(os.waitpid(forker, 0)[1]) == 0
    pid = int.from_bytes(os.read(read, 4), "little")
    os.close(read)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7, "a child of this process, with its own id"
