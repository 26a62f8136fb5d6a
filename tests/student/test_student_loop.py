"""Kit tests of the student's loop around `ol tests`: the static check that
`--mine` shows first, `ol watch`, `ol shell` and `ol diff --code-only`.

Each runs the real `./ol` in a temporary checkout where L7.3 is started and
the student's rope.py holds the reference's code.
"""

from __future__ import annotations

import queue
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers.kit import copy_checkout, explain, kill_group, processes_with, run_ol, sigint_as_at_a_terminal
from ol.student.code_only import code_only

ROPE = "python/tinyllm/modern/rope.py"
REFERENCE_ROPE = "course/reference/python/tinyllm/modern/rope.py"
TESTS = "python/tests/l7-3-rope"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    checkout = copy_checkout(tmp_path_factory.mktemp("checkout"))
    r = run_ol(checkout, "start", "L7.3", cwd=checkout)
    assert r.returncode == 0, explain(r)
    shutil.copy(checkout / REFERENCE_ROPE, checkout / ROPE)
    return checkout


# ---- ol tests --mine: the static check first ---------------------------------------------


def test_tests_mine_shows_what_check_would_refuse_and_runs_anyway(checkout, tmp_path):
    refused = checkout / TESTS / "test_refused.py"
    refused.write_text("import os\nfrom tinyllm.modern.rope import rope_cos_sin\n\n\n"
                       "def test_reads_a_file():\n    assert open is not None and os.sep\n")
    try:
        r = run_ol(checkout, "tests", "L7.3", "--mine", "--ref-deps", cwd=tmp_path)
    finally:
        refused.unlink()
    assert r.returncode == 0, f"the tests pass, so --mine passes: the check only informs\n{explain(r)}"
    assert f"{TESTS}/test_refused.py:1: imports os" in r.stdout, explain(r)
    assert f"{TESTS}/test_refused.py:6: uses open()" in r.stdout, explain(r)
    assert r.stdout.index("imports os") < r.stdout.index("2 passed"), "the findings come before the run"
    assert "would not grade them" in r.stdout, "and are recalled after it"

    r = run_ol(checkout, "tests", "L7.3", "--mine", "--ref-deps", cwd=tmp_path)
    assert r.returncode == 0 and "nothing it would refuse" in r.stdout, explain(r)


def test_tests_mine_names_a_folder_too_large_to_grade_and_runs_anyway(checkout, tmp_path):
    data = checkout / TESTS / "table.bin"
    with open(data, "wb") as file:       # sparse: past the 16 MiB a graded folder may hold
        file.truncate(64 << 20)
    try:
        r = run_ol(checkout, "tests", "L7.3", "--mine", "--ref-deps", cwd=tmp_path)
    finally:
        data.unlink()
    assert r.returncode == 0, f"the tests pass, so --mine passes: the check only informs\n{explain(r)}"
    assert "check would refuse to grade your tests" in r.stdout and "holds more than 16 MiB" in r.stdout, explain(r)
    assert "Traceback" not in r.stdout + r.stderr, explain(r)


# ---- ol watch ---------------------------------------------------------------------------


class Lines:
    """The lines a process prints, read on a thread, waited for by content."""

    def __init__(self, stream):
        self.seen: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, count: int = 1, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while sum(text in line for line in self.seen) < count:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {count} x {text!r} within {timeout} s:\n{''.join(self.seen)}") from None
            if line is None:
                raise AssertionError(f"the process ended before {count} x {text!r}:\n{''.join(self.seen)}")
            self.seen.append(line)


@pytest.mark.slow
def test_watch_runs_again_on_each_change_and_stops_on_ctrl_c(checkout):
    command = [str(checkout / "ol"), "watch", "L7.3", "--mine", "--ref-deps", "--", "-q"]
    watcher = subprocess.Popen(command, cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True, preexec_fn=sigint_as_at_a_terminal)
    lines = Lines(watcher.stdout)
    rope, starter = checkout / ROPE, next((checkout / TESTS).glob("test_*.py"))
    before = rope.read_text(), starter.read_text()
    try:
        lines.wait_for("waiting for a change")
        assert sum("your tests of L7.3: all 1 passed" in line for line in lines.seen) == 1
        assert "(Ctrl-C stops)" in lines.seen[-1]
        rope.write_text(before[0] + "# an edit\n")                  # the library
        lines.wait_for("modern/rope.py changed")
        lines.wait_for("your tests of L7.3: all 1 passed", count=2)
        lines.wait_for("waiting for a change", count=2)
        starter.write_text(before[1] + "\n\ndef test_more():\n    assert True\n")  # the tests
        lines.wait_for("changed")
        lines.wait_for("your tests of L7.3: all 2 passed")
        lines.wait_for("waiting for a change", count=3)
        watcher.send_signal(signal.SIGINT)
        assert watcher.wait(timeout=30) == 130, "".join(lines.seen)
        assert processes_with(str(checkout / TESTS)) == [], "no test run may outlive ol watch"
    finally:
        kill_group(watcher)
        rope.write_text(before[0])
        starter.write_text(before[1])


def test_watch_started_with_sigint_ignored_keeps_it_so_and_says_how_to_stop(checkout):
    """A script's `ol watch ... &` ignores SIGINT, so that a Ctrl-C meant for
    the command in the foreground leaves the watch running: ol keeps that,
    names the command that stops it, and stops on SIGTERM (exit 143)."""
    command = [str(checkout / "ol"), "watch", "L7.3", "--ref-deps", "--", "-q"]
    watcher = subprocess.Popen(command, cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    lines = Lines(watcher.stdout)
    try:
        lines.wait_for("waiting for a change")
        assert f"kill {watcher.pid} stops" in lines.seen[-1], "".join(lines.seen)
        watcher.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):
            watcher.wait(timeout=2)
        watcher.send_signal(signal.SIGTERM)
        assert watcher.wait(timeout=30) == 143, "".join(lines.seen)
    finally:
        kill_group(watcher)


def test_watch_of_a_module_not_started_says_so(checkout, tmp_path):
    r = run_ol(checkout, "watch", "L7.4", cwd=tmp_path)
    assert r.returncode == 2 and "ol start L7.4" in r.stderr, explain(r)


# ---- ol shell ---------------------------------------------------------------------------


def test_shell_serves_tinyllm_as_the_tests_see_it(checkout, tmp_path):
    code = "import tinyllm.modern.rope as r, tinyllm.autograd.tensor as t; print(r.__file__); print(t.__file__)"
    r = run_ol(checkout, "shell", "L7.3", "--ref-deps", "-c", code, cwd=tmp_path)
    assert r.returncode == 0, explain(r)
    assert r.stdout.splitlines() == [str(checkout / ROPE), str(checkout / "course/reference/python/tinyllm/autograd/tensor.py")]

    r = run_ol(checkout, "shell", "L7.3", "-c", "pass", cwd=tmp_path)
    assert r.returncode == 2 and "--ref-deps" in r.stderr, f"without --ref-deps the needs are not started\n{explain(r)}"

    r = run_ol(checkout, "shell", "L7.3", "--ref-deps", "-c", "1 / 0", cwd=tmp_path)
    assert r.returncode == 1 and "ZeroDivisionError" in r.stderr and "boot" not in r.stderr, explain(r)
    r = run_ol(checkout, "shell", "L7.3", "--ref-deps", "-c", "raise SystemExit(3)", cwd=tmp_path)
    assert r.returncode == 3, explain(r)


def test_shell_prompt_has_the_library_ready(checkout, tmp_path):
    session = "cos, sin = rope.rope_cos_sin(1, np.array([1.0, 0.01]))\nprint(round(float(cos[0]), 6), Tensor, F.concat)\n"
    shell = subprocess.run([str(checkout / "ol"), "shell", "L7.3", "--ref-deps"], cwd=tmp_path, input=session,
                           capture_output=True, text=True, timeout=60)
    assert shell.returncode == 0, explain(shell)
    assert "tinyllm.modern.rope" in shell.stdout and "(yours)" in shell.stdout and "(the reference)" in shell.stdout
    assert "0.540302 <class 'tinyllm.autograd.tensor.Tensor'> <function concat" in shell.stdout, explain(shell)


# ---- ol diff --code-only ----------------------------------------------------------------


def test_diff_code_only_shows_the_code_that_differs(checkout, tmp_path):
    reference = (checkout / REFERENCE_ROPE).read_text()
    rope = checkout / ROPE
    rope.write_text(reference
                    .replace('"""cos and sin of the angles', '"""In my words: the cos and sin of the angles', 1)
                    .replace("# [..., r/2]: one float32 product, as HF computes it", "# one product")
                    .replace("    a_out = a * cos - b * sin", "    a_out = -(b * sin) + a * cos\n\n"))
    try:
        full = run_ol(checkout, "diff", "L7.3", "--ref-deps", cwd=tmp_path)
        code = run_ol(checkout, "diff", "L7.3", "--ref-deps", "--code-only", cwd=tmp_path)
    finally:
        shutil.copy(checkout / REFERENCE_ROPE, rope)
    assert full.returncode == 0 and code.returncode == 0, explain(full) + explain(code)
    assert "In my words" in full.stdout and "# one product" in full.stdout
    changed = [line for line in code.stdout.splitlines()
               if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert changed == ["-    a_out = -(b * sin) + a * cos", "+    a_out = a * cos - b * sin"], explain(code)
    assert "docstrings and comments left out" in code.stdout

    identical = run_ol(checkout, "diff", "L7.3", "--ref-deps", "--code-only", cwd=tmp_path)
    assert "apart from docstrings, comments and blank lines" in identical.stdout, explain(identical)


def test_code_only_drops_docstrings_and_comments_and_nothing_else():
    python = (
        '"""Module doc."""\n'
        "import math  # why\n\n\n"
        "class A:\n"
        '    """Class doc,\n    on two lines # not a comment."""\n'
        "    x = '# kept: inside a string'\n\n"
        "    def f(self):  # note\n"
        "        '''Doc.'''\n"
        "        return 'ü' + \"\"\"not a docstring\"\"\"\n"
        "def g(): \"\"\"doc\"\"\"; return 1\n"
    )
    assert code_only(python, ".py") == (
        "import math\n\n"
        "class A:\n"
        "    x = '# kept: inside a string'\n\n"
        "    def f(self):\n"
        "        return 'ü' + \"\"\"not a docstring\"\"\"\n\n"
        "def g(): return 1\n"
    )
    c = ('#include "a.h"  /* the header */\n\n'
         "// a line comment\n"
         'static const char *s = "/* not a comment */ // nor this";\n'
         "int f(void) {\n    return '/' /* slash */;\n}\n"
         "int g(void) { return 2; }\n")
    assert code_only(c, ".c") == (
        '#include "a.h"\n'
        'static const char *s = "/* not a comment */ // nor this";\n'
        "int f(void) {\n    return '/' ;\n}\n\n"
        "int g(void) { return 2; }\n"
    )
    assert code_only("def broken(:\n  # kept as it is\n", ".py") == "def broken(:\n  # kept as it is\n"
    assert code_only("a  # b\n", ".txt") == "a  # b\n"
