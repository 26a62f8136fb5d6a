"""A function run in a forked child of the test, for what a process cannot
undo once done (a seccomp filter, a Landlock restriction, a change of user):
the child does it and dies with it; the test gets its answer.

    answer = in_a_child(body)     # body() -> anything json.dumps takes

A child that raises (or dies before it answers) fails the test with what it
raised, never hangs it: the answer comes back on a pipe the child closes
by ending.
"""

from __future__ import annotations

import json
import os


def in_a_child(body):
    """body()'s JSON-able answer, computed in a forked child."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read)
            os.write(write, json.dumps({"answer": body()}).encode())
        except BaseException as error:   # noqa: BLE001  (the parent shows it)
            os.write(write, json.dumps({"error": repr(error)}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = json.loads(pipe.read() or b'{"error": "the child ended without a word"}')
    os.waitpid(pid, 0)
    assert "error" not in said, f"in the forked child: {said['error']}"
    return said["answer"]
