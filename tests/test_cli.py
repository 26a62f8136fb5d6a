"""Kit tests of the student's path through `./ol`, run as a student would.

Each test works in a temporary checkout (a copy of the files git tracks or
would track: exactly a fresh clone in CI) and runs the real `./ol`
executable with subprocess from a directory outside it.  The main scenario
(test_student_path) shares one checkout across its steps, in order.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from helpers.kit import ROOT, copy_checkout, explain, run_ol

STUDENT_ROPE = "python/tinyllm/modern/rope.py"
REFERENCE_ROPE = "course/reference/python/tinyllm/modern/rope.py"
STARTER = "python/tests/l7-3-rope/test_rope_oracle.py"
KNOWN_IDS = ("L0.1", "L0.2", "M00.2", "L7.3")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    return copy_checkout(tmp_path_factory.mktemp("checkout"))


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory) -> Path:
    """A working directory outside the checkout."""
    return tmp_path_factory.mktemp("elsewhere")


@pytest.mark.slow
def test_student_path(checkout, elsewhere):
    def ol(*args):
        return run_ol(checkout, *args, cwd=elsewhere)

    student = checkout / STUDENT_ROPE
    reference = (checkout / REFERENCE_ROPE).read_text()

    # 1. start writes the stub and the starter test, and says where to go next.
    assert not student.exists(), "the checkout should start without the student's rope.py"
    r = ol("start", "L7.3")
    assert r.returncode == 0, explain(r)
    stub = student.read_text()
    assert "raise NotImplementedError(\"L7.3: implement apply_rope in python/tinyllm/modern/rope.py" in stub
    for printed in ("course/chapters/L7.3-rope.md", "course/tests/L7.3", "python/tests/l7-3-rope", "R5"):
        assert printed in r.stdout, f"start should print {printed}\n{explain(r)}"
    assert "--ref-deps" in r.stdout, f"start should point to --ref-deps (the needs are not done)\n{explain(r)}"
    starter = (checkout / STARTER).read_text()
    assert "tinyllm.autograd.functional" in starter and "hypothesis" in starter, "allow-list in the starter"
    assert "0.540302, -0.010000, 0.841471, 0.999950" in starter, "the hand example in the starter"

    # 2. an edit survives a second start, which says it kept the file.
    student.write_text(stub + "\n# my edit\n")
    (checkout / STARTER).write_text(starter + "\n# my test edit\n")
    r = ol("start", "L7.3")
    assert r.returncode == 0, explain(r)
    assert student.read_text().endswith("# my edit\n"), "start must never overwrite the student's file"
    assert (checkout / STARTER).read_text().endswith("# my test edit\n"), "nor the student's tests"
    assert "kept" in r.stdout and STUDENT_ROPE in r.stdout, explain(r)

    # 3. the stub fails the course tests; without --ref-deps the unstarted needs stop the run.
    r = ol("tests", "L7.3", "--ref-deps")
    assert r.returncode == 1, explain(r)
    assert "NotImplementedError" in r.stdout and "failed" in r.stdout
    # The summary counts test items (each parametrized case is one) and names them by their ids.
    summary = re.search(r"^course tests of L7\.3: 0 passed, (\d+) failed: (.*) and (\d+) more\.$", r.stdout, re.M)
    assert summary, explain(r)
    failed, named, more = int(summary[1]), summary[2].split(", "), int(summary[3])
    items = re.findall(r"^FAILED \S+::(\S+)", r.stdout, re.M)  # pytest's own list, one line per item
    assert failed == len(items) == len(named) + more and named == items[:len(named)], explain(r)
    r = ol("tests", "L7.3")
    assert r.returncode == 2, explain(r)
    assert "--ref-deps" in r.stderr and "L0.1" in r.stderr, explain(r)

    # 4. diff is refused while the course tests fail.
    r = ol("diff", "L7.3", "--ref-deps")
    assert r.returncode != 0, explain(r)
    assert "refused" in r.stderr and "do not pass" in r.stderr, explain(r)
    assert "reference:" not in r.stdout, "no diff may be shown before passing"
    r = ol("list")
    assert re.search(r"^L7\.3\s+R5\s+started\s", r.stdout, re.M), explain(r)

    # 5. the reference's code (plus a note) in the student's file passes.
    student.write_text(reference + "# my note\n")
    r = ol("tests", "L7.3", "--ref-deps")
    assert r.returncode == 0, explain(r)
    r = ol("tests", "L7.3", "--ref-deps", "--", "-k", "test_hand_example", "-q")
    assert r.returncode == 0 and "1 passed" in r.stdout, explain(r)
    r = ol("tests", "L7.3", "--ref-deps", "--mine")
    assert r.returncode == 0 and "1 passed" in r.stdout, f"the starter test passes on correct code\n{explain(r)}"
    r = ol("list")
    assert re.search(r"^L7\.3\s+R5\s+course tests passing", r.stdout, re.M), explain(r)

    # 6. now diff shows the student's file against the reference.
    r = ol("diff", "L7.3", "--ref-deps")
    assert r.returncode == 0, explain(r)
    assert f"--- student: {STUDENT_ROPE}" in r.stdout, explain(r)
    assert f"+++ reference: {REFERENCE_ROPE}" in r.stdout, explain(r)
    assert "\n-# my note\n" in r.stdout, explain(r)

    # 7. reset backs the code up, prints where, and writes a fresh stub; the tests stay.
    r = ol("reset", "L7.3")
    assert r.returncode == 0, explain(r)
    assert student.read_text() == stub, "reset writes the same fresh stub as start"
    backup = Path(re.search(r"^backup: (.+)$", r.stdout, re.M).group(1))
    assert backup.is_absolute() and checkout in backup.parents, explain(r)
    assert (backup / STUDENT_ROPE).read_text() == reference + "# my note\n", "the backup holds the old code"
    assert (checkout / STARTER).read_text().endswith("# my test edit\n"), "reset leaves the student's tests"
    assert "left as they are" in r.stdout, explain(r)

    # 8. a second reset never overwrites the first backup.
    student.write_text(stub + "# second attempt\n")
    r = ol("reset", "L7.3")
    second = Path(re.search(r"^backup: (.+)$", r.stdout, re.M).group(1))
    assert second != backup and (backup / STUDENT_ROPE).read_text() == reference + "# my note\n", explain(r)
    assert (second / STUDENT_ROPE).read_text() == stub + "# second attempt\n"

    # 9. list shows every module's state, without running anything.
    r = ol("list")
    assert r.returncode == 0, explain(r)
    assert re.search(r"^L7\.3\s+R5\s+started\s", r.stdout, re.M), explain(r)
    for module_id in ("L0.1", "L0.2", "M00.2"):
        assert re.search(rf"^{re.escape(module_id)}\s+R\d\s+not started", r.stdout, re.M), explain(r)

    # 10. the stub fails the course tests again (the state follows).
    r = ol("tests", "L7.3", "--ref-deps", "--", "-x", "-q")
    assert r.returncode == 1, explain(r)


@pytest.mark.parametrize("verb", ["start", "tests", "diff", "reset"])
def test_unknown_module_exits_2_and_names_the_known_ones(checkout, elsewhere, verb):
    r = run_ol(checkout, verb, "L9.99", cwd=elsewhere)
    assert r.returncode == 2, explain(r)
    assert "L9.99" in r.stderr and all(i in r.stderr for i in KNOWN_IDS), explain(r)


@pytest.mark.parametrize("args", [[], ["--help"], ["start", "--help"], ["tests", "--help"],
                                  ["diff", "--help"], ["list", "--help"], ["reset", "--help"]])
def test_help_explains_the_workflow(checkout, elsewhere, args):
    r = run_ol(checkout, *args, cwd=elsewhere)
    assert r.returncode == 0, explain(r)
    text = r.stdout
    if len(args) < 2:
        for step in ("start", "tests", "check", "diff", "list", "reset"):
            assert f"ol {step}" in text or f"{step} " in text, f"{step} missing\n{text}"
    else:
        assert f"ol {args[0]}" in text and "MODULE" in text or args[0] == "list", text


@pytest.mark.parametrize("args", [["tests"], ["frobnicate"], ["list", "--", "-x"], ["start", "L7.3", "--bogus"]])
def test_usage_errors_exit_2(checkout, elsewhere, args):
    r = run_ol(checkout, *args, cwd=elsewhere)
    assert r.returncode == 2, explain(r)
    assert r.stderr.strip(), "a usage error says what was wrong"


def test_the_summary_counts_test_items_and_names_them_by_id():
    import io

    from ol.core.command import Context
    from ol.core.runner import TestOutcome, TestRun
    from ol.student.tests_cli import summarize

    file = "course/tests/L7.3/test_rope.py"
    outcomes = [TestOutcome(f"{file}::test_hand_example", "passed"),
                TestOutcome(f"{file}::test_gradcheck_both_layouts_and_partial[half-None]", "failed")]
    outcomes += [TestOutcome(f"{file}::test_validation[case-{i}]", "failed" if i < 22 else "passed") for i in range(33)]
    out = io.StringIO()
    summarize(Context(ROOT, out=out), TestRun(1, tuple(outcomes)), "course tests of L7.3")
    assert out.getvalue().splitlines()[-1] == (
        "course tests of L7.3: 12 passed, 23 failed: test_gradcheck_both_layouts_and_partial[half-None], "
        "test_validation[case-0], test_validation[case-1], test_validation[case-2] and 19 more."
    )


def test_a_verb_whose_code_is_missing_says_so(monkeypatch, capsys):
    """Every verb's module is imported only when it runs (cli.VERBS); a verb
    whose module is absent explains itself and exits 2, and --help still lists it."""
    from ol import cli

    monkeypatch.setitem(cli.VERBS, "frobnicate", ("ol.no_such_module", "a verb not written yet"))
    assert cli.main(["frobnicate", "L7.3"], root=ROOT) == 2
    assert "not available yet" in capsys.readouterr().err
    assert cli.main(["--help"], root=ROOT) == 0
    assert "a verb not written yet" in capsys.readouterr().out


def test_sigterm_unwinds_main_only_while_it_runs(capsys):
    """main turns SIGTERM into an unwinding exit (143) while it runs and puts
    the caller's handler back when it returns: a test that calls it leaves
    pytest's own process as it was (a SIGTERM meant for a check once raised
    ol's exception inside pytest)."""
    import signal

    from ol import cli

    heard = []
    previous = signal.signal(signal.SIGTERM, lambda *_: heard.append("caller"))
    try:
        original_build_parser = cli.build_parser

        def terminated_while_parsing(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)
            return original_build_parser(*args, **kwargs)

        cli.build_parser = terminated_while_parsing
        try:
            assert cli.main(["list"], root=ROOT) == 143
        finally:
            cli.build_parser = original_build_parser
        assert "terminated" in capsys.readouterr().err and heard == []
        assert cli.main(["--help"], root=ROOT) == 0
        os.kill(os.getpid(), signal.SIGTERM)
        assert heard == ["caller"]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_module_that_cannot_be_stubbed_says_so(tmp_path):
    """A catalog entry whose contract is not in the checkout: start refuses
    clearly and writes nothing."""
    checkout = copy_checkout(tmp_path / "checkout")
    catalog = checkout / "course/catalog.toml"
    catalog.write_text(catalog.read_text() + (
        '\n[[module]]\nid = "X9.9"\ntitle = "C kernel"\nrung = "R5"\nneeds = []\n'
        'files = ["tinyllm/native/k.c"]\ncontracts = ["course/contracts/c/k.h"]\n'
        'chapter = "course/chapters/X9.9.md"\ncourse_tests = "course/tests/X9.9"\n'
        'student_tests = "python/tests/x9-9"\nfixtures = []\n'))
    r = run_ol(checkout, "start", "X9.9", cwd=tmp_path)
    assert r.returncode == 2 and "X9.9 cannot be started yet" in r.stderr, explain(r)
    assert not (checkout / "python/tinyllm/native/k.c").exists()
    assert not (checkout / "python/tests/x9-9").exists()


def test_ol_acts_on_its_own_repo_through_a_symlink_whatever_is_installed(tmp_path):
    """A symlinked ./ol run from elsewhere, with decoy `ol` and `tinyllm`
    packages first on PYTHONPATH, still runs this checkout's code and tests it."""
    checkout = copy_checkout(tmp_path / "checkout")
    decoys = tmp_path / "decoys"
    for package in ("ol", "tinyllm", "tinyllm/maths"):
        (decoys / package).mkdir(parents=True)
        (decoys / package / "__init__.py").write_text("raise ImportError('a decoy was imported')\n")
    (decoys / "tinyllm/maths/rotation.py").write_text("raise ImportError('a decoy was imported')\n")
    link_dir = tmp_path / "bin"
    link_dir.mkdir()
    (link_dir / "ol").symlink_to(checkout / "ol")
    env = dict(os.environ, PYTHONPATH=str(decoys))

    r = run_ol(link_dir, "start", "M00.2", cwd=decoys, env=env)
    assert r.returncode == 0, explain(r)
    assert (checkout / "python/tinyllm/maths/rotation.py").exists(), "the symlink's target repo is used"
    shutil.copy(checkout / "course/reference/python/tinyllm/maths/rotation.py",
                checkout / "python/tinyllm/maths/rotation.py")
    r = run_ol(link_dir, "tests", "M00.2", cwd=decoys, env=env)
    assert r.returncode == 0, explain(r)
    assert "decoy" not in r.stdout + r.stderr


def test_list_survives_a_corrupt_state_file(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    state = checkout / ".ol/state.json"
    state.parent.mkdir()
    state.write_text("{not json")
    r = run_ol(checkout, "list", cwd=tmp_path)
    assert r.returncode == 0, explain(r)
    assert "not a valid state file" in r.stderr and "state.json.bak" in r.stderr, explain(r)
    assert (checkout / ".ol/state.json.bak").read_text() == "{not json", "the corrupt file is kept"


def test_a_reader_that_stops_reading_ends_ol_quietly():
    """`ol list | head -3`: once the reader has gone, ol stops without a
    traceback and exits as a shell reports a command SIGPIPE ended (141)."""
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)   # the reader is gone before ol writes its first line: every write fails
    try:
        done = subprocess.run([sys.executable, str(ROOT / "ol"), "list"], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""
