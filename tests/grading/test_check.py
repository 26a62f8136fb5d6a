"""Kit tests of the mutation grader (`ol check`): that it tells good suites
from weak ones, names a missed pitfall, survives hostile tests, and leaves the
repository as it found it.  Cheating suites, confinement and faults of the
grader itself: tests/end_to_end/test_trust.py; the mutants, the static check
and the verdict cache alone: test_mutants.py, test_static_check.py and
test_verdict_cache.py beside this file."""

from __future__ import annotations

import dataclasses
import signal
import json
import shutil
import struct
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from grading_suites.float16_blind import write_float16_blind_suite
from helpers.kit import ROOT, copy_checkout, explain, home_env, processes_with, run_ol, sampled_home, snapshot
from ol.core.catalog import load_catalog
from ol.core.test_folder import TestFolder
from ol.grading.check import (JSON_FIELDS, CheckRequest, CheckResult, MutantLine, PitfallOutcome, Survivor,
                              check_module)
from ol.grading.grader import PASSED, TIMEOUT, Grader, SuiteProblem
from ol.grading.html_report import to_html
from ol.grading.mutants import load_pitfalls
from ol.grading.protocol import RunRequest
from ol.grading.report import to_json, to_text
from ol.grading.scheduler import Run
from ol.grading.session import GradingSession
from ol.grading.variants import Variant

SUITES = ROOT / "tests" / "grading_suites"
REFERENCE_ROPE = ROOT / "course/reference/python/tinyllm/modern/rope.py"
MODEL_ANSWER = ROOT / "course/reference/python/tests/l7-3-rope"


def grade(folder: Path, session: GradingSession | None = None, **request):
    """The shared check of `folder` (no verdict cache), `request` naming CheckRequest's other fields."""
    return check_module(ROOT, "L7.3", CheckRequest(tests=folder, course_tests=False, fresh=True, **request),
                        session=session)


# ---- the grade discriminates -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_suite_of_shapes_and_errors_fails():
    result = grade(SUITES / "shapes-and-errors")
    assert result.reason is None, result.problems
    assert not result.passed
    assert result.score < result.threshold, f"a suite that checks no value scored {result.score:.3f}"
    assert not any(p.killed for p in result.pitfalls), "a suite that checks no value caught a pitfall"
    assert_the_record_round_trips(result)


def assert_the_record_round_trips(result: CheckResult) -> None:
    """CheckResult.to_json is the one contract with everything that reads a
    grade: every field is in it (a renamed field fails here, not in
    grades.csv), and from_json gives back the same result, alone or inside
    ol grade's record."""
    from ol.instructor.class_grading.one import GradeRecord

    data = json.loads(to_json(result))
    assert list(data) == [*JSON_FIELDS, "error"], "the --json record's fields and their order are a contract"
    assert {f.name for f in dataclasses.fields(CheckResult)} == set(JSON_FIELDS)
    assert CheckResult.from_json(data) == result
    # seconds, module and confinement are one key each in the record: ol grade's own say for both
    record = GradeRecord(student="ann", entry="ann.zip", module=result.module, names={"a.py": "mine.py"},
                         result=result, seconds=result.seconds, confinement=result.confinement)
    assert GradeRecord.from_json(json.loads(json.dumps(record.to_json()))) == record


def test_every_field_of_a_result_survives_its_json():
    """No field left at its default, so none can be dropped or renamed unseen."""
    result = CheckResult(
        module="L7.3", threshold=0.8, passed=True, score=0.9, killed=9, counted=10,
        pitfalls=[PitfallOutcome("s01", "a misconception", "a symptom", True, ("test_a.py::test_x",))],
        survivors=[Survivor("m1", "apply_rope", "-a\n+b", possibly_equivalent=False,
                            witness={"function": "apply_rope", "call": "apply_rope(x=...)", "expected": "1.0",
                                     "got": "2.0", "where": "out[0]", "feature": "half"})],
        reason="a reason", problems=["a problem"], output="pytest says", excluded={"equivalent": 2},
        seconds=3.5, confinement="confined", memory_bound="2048 MiB", time_limit=12.5,
        course_tests={"passed": 3, "total": 3},
        killed_by={"m2": "test_a.py::test_x"}, carried_over=4, course_tests_kept=True, mutants_of="your own code",
        mutants=[MutantLine("m1", "apply_rope", 12, False, None, "-a\n+b", possibly_equivalent=True),
                 MutantLine("m2", "rope_cos_sin", 30, True, "test_a.py::test_x", "-c\n+d", feature="tables")],
        floors=[{"function": "apply_rope", "share": 0.5, "caught": 1, "counted": 2, "needed": 1, "met": True}],
        rejected=[{"test": "test_a.py::test_y", "failure": "E assert", "implementations": ["reference"]}],
        tests=12, graded_tests=11, not_imported=["chaff:c01"],
        features=[{"id": "tables", "title": "the tables", "share": 0.5, "caught": 1, "counted": 1, "needed": 1,
                   "met": True}],
        course_failure={"reason": "course tests fail on your code", "problems": ["test_x"], "output": "E assert"})
    assert all(getattr(result, f.name) != (f.default_factory() if callable(f.default_factory) else f.default)
               for f in dataclasses.fields(CheckResult)), "give every field a value that is not its default"
    assert_the_record_round_trips(result)
    mutants = json.loads(to_json(result))["mutants"]
    assert list(mutants[0]) == ["id", "function", "line", "killed", "killed_by", "diff", "possibly_equivalent",
                                "feature"]
    assert list(mutants[1]) == ["id", "function", "line", "killed", "killed_by", "diff", "feature"], \
        "possibly_equivalent asked only of survivors"


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_suite_blind_to_float16_angles_fails_and_names_that_pitfall(tmp_path):
    result = grade(write_float16_blind_suite(tmp_path / "l7-3-rope"))
    assert result.reason is None, result.problems
    assert result.survivors == [], f"the suite should catch every generated mutant: {[s.id for s in result.survivors]}"
    assert [p.id for p in result.pitfalls if not p.killed] == ["s04"]
    assert result.score >= result.threshold and not result.passed, "a missed pitfall must fail the check"
    text = to_text(result)
    s04 = next(p for p in result.pitfalls if p.id == "s04")
    assert "MISSED  s04" in text and s04.misconception in text and s04.symptom in text
    assert "astype(np.float16)" not in text, "a pitfall is reported by its misconception, never by its diff"
    data = json.loads(to_json(result))
    assert data["passed"] is False and data["threshold"] == 0.8
    assert {p["id"]: p["killed"] for p in data["pitfalls"]}["s04"] is False
    assert set(data) >= {"passed", "score", "threshold", "killed", "counted", "pitfalls", "survivors"}


# ---- hostile and broken suites -----------------------------------------------------------


def write_suite(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    header = "import numpy as np\nfrom tinyllm.autograd.tensor import Tensor\nfrom tinyllm.modern.rope import apply_rope, rope_cos_sin\n\n"
    (folder / "test_student.py").write_text(header + textwrap.dedent(body))
    return folder


@pytest.mark.slow
@pytest.mark.needs_confinement
@pytest.mark.parametrize("sharing", ["shared", "isolated"])
def test_an_endless_test_costs_only_itself_and_the_tests_after_it_are_graded(sharing, tmp_path):
    """An endless loop first, on every implementation: it is stopped at its
    share of the run's processor time (a quarter), named as a timeout, and the
    tests after it in the same run are graded.  Before, the run ended there
    and every later test was "never reached": nothing could be graded."""
    suite = write_suite(tmp_path / "l7-3-rope", """
        def test_forever():
            while True:
                pass

        def test_tables():
            for position in (0, 3):
                cos, sin = rope_cos_sin(position, [1.0, 0.5])
                np.testing.assert_allclose(cos.data, np.cos(position * np.array([1.0, 0.5])), rtol=1e-6)

        def test_hand_example():
            for layout, expected in (("half", [0.540302, -0.010000, 0.841471, 0.999950]),
                                     ("interleaved", [0.540302, 0.841471, -0.010000, 0.999950])):
                cos, sin = rope_cos_sin(1, [1.0, 0.01])
                out = apply_rope(Tensor(np.array([1.0, 0.0, 0.0, 1.0])), cos, sin, layout)
                np.testing.assert_allclose(out.data, expected, atol=1e-6)
    """)
    session = GradingSession(ROOT, "L7.3")
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[::10])
    result = grade(suite, session=session, time_limit=2, isolated=sharing == "isolated")
    assert result.reason is None and result.score is not None and result.killed > 0, (result.reason, result.problems)
    assert [(e["test"].rsplit("::", 1)[1], e["status"]) for e in result.rejected] == [("test_forever", "timeout")]
    assert "(the time limit is 2 s; one test may use 0.5 s on each side)" in result.rejected[0]["failure"], result.rejected
    assert result.tests == 3 and result.graded_tests == 2


@pytest.mark.slow
@pytest.mark.needs_confinement
@pytest.mark.parametrize("sharing", ["shared", "isolated"])
def test_a_test_that_keeps_the_code_under_test_busy_costs_only_itself(sharing, tmp_path):
    """A test that makes the implementation compute without end: attention
    over 1500 tokens is a small request and a small answer on the tests'
    side and a 1500 x 1500 softmax on the other, so the tests' own share is
    never reached.  Before, the implementation's process met the run's limit
    and every later test was "never reached".  Now the test's calls have a
    share of their own there: the test is named as a timeout, the tests after
    it graded."""
    folder = tmp_path / "l7-5-attention"
    shutil.copytree(SUITES / "l7-5-weak", folder)      # honest tests, graded after the busy one
    (folder / "test_busy.py").write_text(textwrap.dedent("""
        import numpy as np

        from tinyllm.autograd.tensor import Tensor
        from tinyllm.modern.attention import attention
        from tinyllm.modern.rope import RopeSpec


        def test_busy_implementation():
            eye = Tensor(np.eye(2))
            x = Tensor(np.ones((1, 1500, 2)))
            while True:
                attention(x, eye, eye, eye, eye, RopeSpec(np.array([0.5])), np.arange(1500), 1, 1)
    """))
    session = GradingSession(ROOT, "L7.5")
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[::10])
    result = grade(folder, session=session, time_limit=2, isolated=sharing == "isolated")
    assert result.reason is None and result.score is not None and result.killed > 0, (result.reason, result.problems)
    assert [(e["test"].rsplit("::", 1)[1], e["status"]) for e in result.rejected] == \
        [("test_busy_implementation", "timeout")], result.rejected
    assert result.tests > 2 and result.graded_tests == result.tests - 1


@pytest.mark.slow
@pytest.mark.needs_confinement
@pytest.mark.parametrize("sharing", ["shared", "isolated"])
def test_a_graded_run_has_no_plugin_of_what_the_machine_happens_to_have_installed(sharing, tmp_path):
    """A fixture of a pytest plugin installed beside the grader (xdist's
    worker_id: the kit's tests extra installs it) is not there in a graded
    run, whose plugins are pytest's own and Hypothesis's wherever it is
    computed: the test that asks for it fails on the correct implementations
    and is left out, named by what pytest says.  Hypothesis's plugin is
    there: it fails a test that has @settings without @given, as it does
    under the student's own pytest."""
    import importlib.util

    assert importlib.util.find_spec("xdist"), "pytest-xdist is in the kit's tests extra: tests/setup.sh installs it"
    suite = write_suite(tmp_path / "l7-3-rope", """
        from hypothesis import given, settings, strategies as st

        def test_needs_a_plugin(worker_id):
            cos, sin = rope_cos_sin(0, [1.0])
            assert worker_id and cos.data[0] == 1.0

        @settings(max_examples=5)
        def test_settings_without_given():
            cos, sin = rope_cos_sin(0, [1.0])
            assert cos.data[0] == 1.0

        @given(st.integers(0, 50))
        def test_position_zero_is_the_identity(position):
            cos, sin = rope_cos_sin(0, [1.0, 0.5])
            out = apply_rope(Tensor(np.array([1.0, 2.0, 3.0, 4.0])), cos, sin, "half")
            np.testing.assert_allclose(out.data, [1.0, 2.0, 3.0, 4.0])
    """)
    session = GradingSession(ROOT, "L7.3")
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[::40])
    result = grade(suite, session=session, isolated=sharing == "isolated")
    assert result.reason is None and result.tests == 3 and result.graded_tests == 1, \
        (result.reason, result.problems, result.rejected)
    failures = {e["test"].rsplit("::", 1)[1]: (e["status"], e["failure"]) for e in result.rejected}
    assert failures["test_needs_a_plugin"] == ("failed", "fixture 'worker_id' not found"), failures
    status, failure = failures["test_settings_without_given"]   # "... Using `@settings` on a test without `@given`"
    assert status == "failed" and failure.startswith("hypothesis.errors.InvalidArgument"), failures


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_test_stopped_in_the_middle_of_a_call_leaves_the_next_tests_their_own_answers(tmp_path):
    """An endless loop of calls through the proxy is stopped at its share of
    the run's time, most likely between a request and its answer: the stop
    waits for the answer, so the tests after it get their own, and pass."""
    suite = write_suite(tmp_path / "l7-3-rope", """
        def test_forever_calling():
            while True:
                rope_cos_sin(3, [1.0, 0.5])

        def test_tables_after_it():
            for position in (0, 1, 2):
                cos, sin = rope_cos_sin(position, [1.0, 0.5])
                np.testing.assert_allclose(cos.data, np.cos(position * np.array([1.0, 0.5])), rtol=1e-6)
    """)
    session = GradingSession(ROOT, "L7.3")
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[::40])
    # One run at a time: the endless test's share is processor time, while the run's deadline is the
    # clock's (3x its limit); beside another pytest worker's checks, a second slot of its own starved
    # the reference's runs past that deadline before they reached the test after it.
    result = grade(suite, session=session, time_limit=3, workers=1)
    assert result.reason is None and result.graded_tests == 1, (result.reason, result.problems, result.rejected)
    assert [e["test"].rsplit("::", 1)[1] for e in result.rejected] == ["test_forever_calling"]


# An endless test that catches the OverTime ending it at its share of the run: the run's limit stops it.
OUTLIVES_ITS_SHARE = """
    def test_forever():
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
"""


@pytest.mark.slow
@pytest.mark.needs_confinement
@pytest.mark.parametrize("sharing", ["shared", "isolated"])
def test_a_run_that_reaches_its_time_limit_is_a_timeout_every_time(sharing, tmp_path):
    """An endless test on every correct run, ten times over: each run is a
    timeout, never "signal 9".  The reference's three runs a round (no
    alternate): what is tested is each run's end.  The test outlives its own
    share of the run's time (it catches the OverTime that ends it there), so
    the run's limit is what stops it."""
    suite = write_suite(tmp_path / "l7-3-rope", OUTLIVES_ITS_SHARE)
    session = GradingSession(ROOT, "L7.3")
    session.alternates = ()
    with session.scheduler({"student": TestFolder(suite).snapshot()}, course=False, sharing=sharing) as scheduler:
        statuses = []
        for _ in range(10):
            grader = Grader(session, scheduler, time_limit=1)
            with pytest.raises(SuiteProblem):   # no test passes: none can be graded
                grader.suite([])
            statuses += [(v.status, v.detail) for v in grader.correct_verdicts]
    assert len(statuses) == 30 and all(status == TIMEOUT for status, _ in statuses), \
        [s for s in statuses if s[0] != TIMEOUT][:3]


@pytest.mark.slow
@pytest.mark.needs_confinement
@pytest.mark.parametrize("sharing", ["shared", "isolated"])
def test_a_run_ends_at_its_processor_time_limit_though_it_is_pid_1(sharing, tmp_path):
    """A confined run is pid 1 of its own pid namespace, and the kernel drops
    an init's SIGXCPU unless the init handles it: the run's handler
    (confine.out_of_processor_time) ends it at its limit, as the signal ends
    any other process, not the SIGKILL a second later."""
    suite = write_suite(tmp_path / "l7-3-rope", OUTLIVES_ITS_SHARE)
    session = GradingSession(ROOT, "L7.3")
    with session.scheduler({"student": TestFolder(suite).snapshot()}, course=False, sharing=sharing) as scheduler:
        run = Run(1, RunRequest(suite="student", task="grade"), session.reference.request(), 1.0)
        outcome = scheduler.run([run])[run.id]
    assert outcome.exit == 128 + signal.SIGXCPU and outcome.cpu_seconds < 1.9, (outcome.exit, outcome.cpu_seconds)


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_one_test_failing_on_a_correct_implementation_costs_only_itself(tmp_path):
    """The model answer plus one test that only the reference passes (an error
    message matched word for word, which the alternate words otherwise): that
    test is left out, named with its failure, and the rest is graded as the
    model answer alone is."""
    suite = tmp_path / "l7-3-rope"
    shutil.copytree(MODEL_ANSWER, suite)
    (suite / "test_words.py").write_text(textwrap.dedent("""\
        import numpy as np
        import pytest
        from tinyllm.autograd.tensor import Tensor
        from tinyllm.modern.rope import apply_rope


        def test_the_reference_words_its_error():
            cos = sin = np.ones((3, 1), np.float32)
            with pytest.raises(ValueError, match=__MESSAGE__):
                apply_rope(Tensor(np.ones((3, 8), np.float32)), cos, sin, rotary_dim=3)
        """).replace("__MESSAGE__", repr(_reference_error())))
    session = sampled_l73()
    alone = grade(MODEL_ANSWER, session=session, isolated=True)
    result = grade(suite, session=session, isolated=True)
    assert result.reason is None and result.passed, (result.reason, result.problems)
    words = "tests/l7-3-rope/test_words.py::test_the_reference_words_its_error"
    assert [(e["test"], e["implementations"]) for e in result.rejected] == [(words, ["alternate:1"])], result.rejected
    assert "rotary_dim: expected an even number" in result.rejected[0]["failure"], result.rejected   # the alternate's
    assert (result.killed, result.counted, result.score) == (alone.killed, alone.counted, alone.score)
    assert result.graded_tests == result.tests - 1
    text = to_text(result)
    assert words in text and "Left out" in text, text


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_file_that_breaks_the_rules_or_does_not_parse_costs_only_itself(tmp_path):
    """The model answer plus a file that imports os and one that does not
    parse: both are named and left out, and the rest is graded as the model
    answer alone is (issue 28: one not-allowed import in one file, or one
    file that does not parse, no longer zeroes a suite)."""
    suite = tmp_path / "l7-3-rope"
    shutil.copytree(MODEL_ANSWER, suite)
    (suite / "test_reads.py").write_text("import os\n\n\ndef test_reads():\n    assert os.getcwd()\n")
    (suite / "test_typo.py").write_text("def test_typo(:\n    pass\n")
    session = sampled_l73()
    alone = grade(MODEL_ANSWER, session=session, isolated=True)
    result = grade(suite, session=session, isolated=True)
    assert result.reason is None and result.passed, (result.reason, result.problems)
    assert (result.killed, result.counted, result.score) == (alone.killed, alone.counted, alone.score)
    assert [(e["test"], e["status"]) for e in result.rejected] == [
        ("tests/l7-3-rope/test_reads.py", "refused"), ("tests/l7-3-rope/test_typo.py", "refused")], result.rejected
    assert "imports os" in result.rejected[0]["failure"] and "does not parse" in result.rejected[1]["failure"]
    text = to_text(result)
    assert "test_reads.py was not run: it breaks the rules" in text and "2 files not run" in text, text
    only_bad = tmp_path / "only-bad"
    only_bad.mkdir()
    shutil.copy(suite / "test_typo.py", only_bad)
    nothing = grade(only_bad, session=session, isolated=True)   # nothing left to grade: the suite is not graded
    assert nothing.reason == "your tests do things graded tests may not (they were not run)", nothing.reason


def _reference_error() -> str:
    """The reference's words for an odd rotary_dim, as a regular expression that only they match."""
    import re

    from helpers.reference import reference_modules

    rope, tensor = reference_modules("tinyllm.modern.rope", "tinyllm.autograd.tensor")
    table = np.ones((3, 1), np.float32)
    with pytest.raises(ValueError) as raised:
        rope.apply_rope(tensor.Tensor(np.ones((3, 8), np.float32)), table, table, rotary_dim=3)
    return "^" + re.escape(str(raised.value)) + "$"


def sampled_l73() -> GradingSession:
    session = GradingSession(ROOT, "L7.3")
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[::10])
    return session


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_an_endless_loop_at_import_does_not_hang_the_check(tmp_path):
    suite = write_suite(tmp_path / "l7-3-rope", """
        while True:
            pass

        def test_never_reached():
            pass
    """)
    result = grade(suite, time_limit=3)
    assert result.reason == "your tests could not be run"
    assert "collecting" in " ".join(result.problems)


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_suite_that_calls_the_code_at_import_is_collected_in_every_run_and_graded(tmp_path):
    """The shared check collects the suite once, with no variant loaded: a
    module-level call of the code under test cannot be answered there, so the
    collector says "isolate" (NotCollected) and the suite is collected afresh
    in every run instead.  It is graded as in the isolated check, never
    "does not collect"; a suite that fails to import for its own reasons is
    (the next test's sibling, test_an_endless_loop_at_import...)."""
    suite = write_suite(tmp_path / "l7-3-rope", """
        COS, SIN = rope_cos_sin(0, [1.0, 0.5])   # at import: no variant is loaded in the shared collector

        def test_at_position_zero_cos_is_one_and_sin_zero():
            np.testing.assert_allclose(COS.data, [1.0, 1.0])
            np.testing.assert_allclose(SIN.data, [0.0, 0.0], atol=1e-12)
    """)
    shutil.copytree(MODEL_ANSWER, suite, dirs_exist_ok=True)
    session = GradingSession(ROOT, "L7.3")
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[::20])
    shared = grade(suite, session=session)
    isolated = grade(suite, session=session, isolated=True)
    assert shared.reason is None and shared.passed and shared.graded_tests == shared.tests, (shared.reason,
                                                                                             shared.problems)
    assert (shared.killed, shared.score) == (isolated.killed, isolated.score)


@pytest.mark.needs_confinement
def test_system_exit_in_a_test_is_a_failure_not_an_escape(tmp_path):
    suite = write_suite(tmp_path / "l7-3-rope", """
        def test_quits():
            raise SystemExit(0)
    """)
    result = grade(suite)
    assert result.reason == "your tests fail on a correct implementation"
    assert "test_quits" in " ".join(result.problems)


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_each_test_rejecting_a_correct_implementation_is_shown_once_with_its_failure(tmp_path):
    """Two tests fail on both correct implementations: each is named once,
    with what pytest's short summary says of it and where it fails, in every
    report: the terminal, --json, the web page, and what ol grade hands back."""
    suite = write_suite(tmp_path / "l7-3-rope", """
        def test_fine():
            assert rope_cos_sin(0, [1.0])[0][0] == 1.0

        def test_typo():
            assert foo(1) == 1

        def test_wrong_value():
            cos, sin = rope_cos_sin([1], [1.0])
            assert float(cos[0][0]) == 0.5
    """)
    session = GradingSession(ROOT, "L7.3")   # the catalog's policy "not graded": no test of the suite counts
    session.grading = dataclasses.replace(session.grading, rejected="not graded")
    result = grade(suite, session=session)
    assert result.reason == "your tests fail on a correct implementation", result.problems
    cos_1 = float(np.float32(np.cos(1.0)))          # what the failed assertion compared, from numpy alone
    typo, wrong = (f"tests/l7-3-rope/test_student.py::{name}" for name in ("test_typo", "test_wrong_value"))
    assert [e["test"] for e in result.rejected] == [typo, wrong], result.rejected
    assert all(e["implementations"] == ["reference", "alternate:1"] for e in result.rejected), result.rejected
    assert result.rejected[0]["failure"] == "NameError: name 'foo' is not defined"
    assert result.rejected[1]["failure"].startswith(f"assert {cos_1!r} == 0.5"), result.rejected[1]

    text = to_text(result)
    block = text.split("\n\n")[0]                  # before pytest's own report
    for entry in result.rejected:
        assert block.count(entry["test"]) == 1, block
    assert "NameError: name 'foo' is not defined" in block and f"assert {cos_1!r} == 0.5" in block, block
    assert "(it fails on the reference and a second correct implementation (alternate:1))" in block, block
    data = json.loads(to_json(result))
    assert data["rejected"] == result.rejected
    page = to_html(result, REFERENCE_ROPE.read_text(), "rope.py")
    assert page.count(f"<code>{typo}</code> rejects a correct implementation") == 1
    assert "NameError: name &#x27;foo&#x27; is not defined" in page

    from ol.instructor.class_grading.feedback import markdown
    from ol.instructor.class_grading.gradescope import results_json
    from ol.instructor.class_grading.one import GradeRecord
    from ol.instructor.class_grading.outcome import check_result, read_outcome

    points = load_catalog(ROOT).get("L7.3").grading.points
    outcome = read_outcome(GradeRecord.from_json({**data, "student": "ann", "names": {}}), points, [])
    assert outcome.reason.startswith("your tests fail on a correct implementation: "
                                     f"{typo}: NameError: name 'foo' is not defined; {wrong}: assert"), outcome.reason
    assert sum(typo in line for line in outcome.details) == 1, outcome.details
    assert "    NameError: name 'foo' is not defined" in outcome.details
    assert any(line.startswith(f"{typo} failed on the reference and a second correct implementation")
               for line in outcome.details), outcome.details
    assert "NameError: name 'foo' is not defined" in markdown(outcome, points, "full")
    assert "NameError: name 'foo' is not defined" in results_json(outcome, points, "full")["output"]
    page = to_html(check_result(outcome), REFERENCE_ROPE.read_text(), "rope.py")
    assert page.count(f"<code>{typo}</code> rejects a correct implementation") == 1


@pytest.mark.needs_confinement
def test_the_report_names_every_test_that_fails_on_a_pitfall_in_file_order(tmp_path):
    """The pitfall table's "by": not the first test that happened to catch it
    (the runs stop there, in an order of their own), but every test of the
    suite that fails on it, as pytest's own run of the suite on it says."""
    session = GradingSession(ROOT, "L7.3")
    session.mutants = dataclasses.replace(session.mutants, counted=())   # the pitfalls alone
    folder = ROOT / "tests/calibration/l7-3-suite-c"
    result = grade(folder, session=session)
    assert result.reason is None and all(p.killed for p in result.pitfalls), result.problems
    with session.scheduler({"student": TestFolder(folder).snapshot()}, course=False) as scheduler:
        variants = session.pitfall_variants()
        runs = [Run(n, RunRequest(suite="student", task="pytest"), v.request(), 60.0) for n, v in enumerate(variants)]
        outcomes = scheduler.run(runs)
    expected = {}
    for number, variant in enumerate(variants):
        said = next(line["outcomes"] for line in outcomes[number].notes if "outcomes" in line)
        expected[variant.key.split(":", 1)[1]] = tuple(t for t, o in said.items() if o in ("failed", "error"))
    assert {p.id: p.tests for p in result.pitfalls} == expected
    assert any(len(tests) > 1 for tests in expected.values()), "a pitfall more than one test catches"
    page = to_html(result, REFERENCE_ROPE.read_text(), "rope.py")
    for pitfall in result.pitfalls:
        row = page.split(f"<tr class=\"killed\"><td>{pitfall.id}</td>", 1)[1].split("</tr>", 1)[0]
        count = f"by {len(pitfall.tests)} test{'s' if len(pitfall.tests) != 1 else ''}</summary><ul>"
        assert row.split(count, 1)[1].split("</ul>")[0] == "".join(f"<li><code>{t}</code></li>" for t in pitfall.tests)


@pytest.mark.needs_confinement
def test_a_run_started_beside_shares_the_slots_and_is_told_apart():
    """The local check starts the course tests beside the suite's first runs
    (Scheduler.start_beside): that run goes on in the call's slots, is
    neither among the call's outcomes nor seen by its callbacks, and says
    what a run of its own says."""
    session = GradingSession(ROOT, "L7.3")
    folder = ROOT / "tests/calibration/l7-3-suite-c"
    with session.scheduler({"student": TestFolder(folder).snapshot()}, course=True, workers=2) as scheduler:
        grader = Grader(session, scheduler, time_limit=60)
        alone = grader.course_tests(session.reference)
        waiting = grader.course_tests_beside(session.reference)
        variants = session.pitfall_variants()[:4]
        runs = [Run(100 + n, RunRequest(suite="student", task="pytest"), v.request(), 60.0)
                for n, v in enumerate(variants)]
        seen = set()
        outcomes = scheduler.run(runs, on_done=lambda run, outcome: seen.add(run.id),
                                 on_notes=lambda run, notes: seen.add(run.id) and None)
        assert set(outcomes) == seen == {run.id for run in runs}
        beside = waiting()
    assert alone.ok and alone.passed and beside.ok
    assert beside.outcomes == alone.outcomes


@pytest.mark.needs_confinement
def test_a_check_interrupted_while_it_sends_a_setup_ends_at_once(monkeypatch, tmp_path):
    """Ctrl-C or SIGTERM can land while the observer sends a warm process its
    setup.  Before, the unwinding told that process to quit and gave it 5 s,
    but it was still reading the rest of its setup: the check took those 5 s,
    past the 2 s that ol grade gives a check it stops, and ol grade took
    seconds more to stop (7.1 s seen).  A process that never said it is ready
    is now killed at once."""
    from ol.grading.sandbox import warm_link as sandbox_module

    whole = sandbox_module.send_message

    def half_a_setup_then_interrupt(sock, header, buffers=()):
        if header.get("op") != "setup":
            return whole(sock, header, buffers)
        body = json.dumps(header, separators=(",", ":")).encode()
        sizes = [memoryview(b).nbytes for b in buffers]
        sock.sendall(struct.pack(f">II{len(sizes)}Q", len(body), len(sizes), *sizes) + body)   # no files follow
        raise KeyboardInterrupt

    started = []
    monkeypatch.setattr(sandbox_module, "send_message", half_a_setup_then_interrupt, raising=True)
    real_init = sandbox_module.Sandbox.__init__

    def recorded(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        started.append(self)

    monkeypatch.setattr(sandbox_module.Sandbox, "__init__", recorded)
    session = GradingSession(ROOT, "L7.3")
    suite = write_suite(tmp_path / "l7-3-rope", "def test_nothing():\n    pass\n")
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with session.scheduler({"student": TestFolder(suite).snapshot()}, course=False):
            pass
    took = time.monotonic() - began
    assert started and all(sandbox.process.poll() is not None for sandbox in started)
    assert took < 4.0, f"the interrupted check took {took:.1f} s to end its sandboxes"


def test_a_variant_that_hangs_or_kills_its_process_counts_as_caught(tmp_path):
    suite = write_suite(tmp_path / "l7-3-rope", """
        def test_hand_example():
            cos, sin = rope_cos_sin(1, [1.0, 0.01])
            out = apply_rope(Tensor(np.array([1.0, 0, 0, 1])), cos, sin)
            assert np.allclose(out.data, [0.540302, -0.01, 0.841471, 0.99995], atol=1e-6)
    """)
    reference = REFERENCE_ROPE.read_text()
    spins = reference.replace('    """Rotate the pairs', '    while True:\n        pass\n    """Rotate the pairs', 1)
    exits = reference.replace("    positions = _positions_as_float32(positions)",
                              "    import os\n    os._exit(3)\n    positions = _positions_as_float32(positions)", 1)
    assert spins != reference and exits != reference
    session = GradingSession(ROOT, "L7.3")
    with session.scheduler({"student": TestFolder(suite).snapshot()}, course=False) as scheduler:
        grader = Grader(session, scheduler, time_limit=3)
        verdicts = grader.suite([Variant("spins", spins, "rope.py"), Variant("exits", exits, "rope.py")])
        assert {v.status for v in grader.correct_verdicts} == {PASSED} and not grader.left_out
    assert verdicts["spins"].status == TIMEOUT and verdicts["spins"].caught
    assert verdicts["exits"].caught and verdicts["exits"].failed[0].endswith("test_hand_example")


def test_only_the_courses_own_code_killed_unasked_is_a_fault_of_the_grader():
    """SIGKILL of a process serving the course's code (nobody asked) is the
    grader's fault; of one serving the student's code (their rope.py, or in
    a student kit the "reference" and mutants made of it) it is behaviour."""
    from ol.grading.scheduler import RunOutcome
    from ol.grading.session import GradingFault

    killed = RunOutcome(1, exit=1, impl_exit=128 + 9)
    for untrusted in (Variant("student", "", "rope.py"), Variant("reference", "", "rope.py", trusted=False),
                      Variant("mutant-1", "", "rope.py", trusted=False)):
        Grader._check_implementation(untrusted, killed)
    for course in (Variant("reference", "", "rope.py"), Variant("alternate:1", "", "rope.py")):
        with pytest.raises(GradingFault, match="internal fault of the grader"):
            Grader._check_implementation(course, killed)
    Grader._check_implementation(Variant("reference", "", "rope.py"), dataclasses.replace(killed, impl_stopped=True))


@pytest.mark.needs_confinement
def test_runs_cannot_reach_the_repository_nor_start_what_outlives_them(tmp_path):
    target = ROOT / "python" / "tinyllm" / "__init__.py"
    before = target.read_bytes()
    suite = write_suite(tmp_path / "l7-3-rope", f"""
        import os, pathlib, subprocess, sys

        def test_the_repository_is_not_there():
            for path in ({str(target)!r}, {str(REFERENCE_ROPE)!r}):
                assert not pathlib.Path(path).exists(), path
            root = pathlib.Path({str(ROOT)!r})
            if root in pathlib.Path(sys.prefix).parents:   # a venv in the checkout: only the way to it is there
                assert os.listdir(root) == [pathlib.Path(sys.prefix).relative_to(root).parts[0]]
            else:
                assert not root.exists(), root

        def test_no_network():
            import socket
            try:
                socket.create_connection(("1.1.1.1", 53), timeout=1)
            except OSError:
                return
            raise AssertionError("reached the network")

        def test_an_unprivileged_user_with_a_private_tmp():
            assert os.getuid() != 0
            assert oct(os.stat(os.environ["TMPDIR"]).st_mode & 0o777) == "0o700"

        def test_a_program_started_here_dies_with_the_run():
            subprocess.Popen(["sleep", "31415"], start_new_session=True)
    """)
    session = GradingSession(ROOT, "L7.3")   # straight to the runs: the static check would refuse os
    for sharing in ("shared", "isolated"):
        with session.scheduler({"student": TestFolder(suite).snapshot()}, course=False, sharing=sharing) as scheduler:
            grader = Grader(session, scheduler, time_limit=20)
            grader.suite([])
            verdicts = grader.correct_verdicts
        assert [(v.status, v.failed) for v in verdicts] == [(PASSED, ())] * 5, (sharing, verdicts)
        assert target.read_bytes() == before
        assert not processes_with("sleep 31415"), f"a process started by a run outlived the check ({sharing})"


# ---- the student's path through ./ol check ----------------------------------------------


@pytest.fixture(scope="module")
def finished_checkout(tmp_path_factory):
    """A checkout where the student has written rope.py (the reference's code)."""
    checkout = copy_checkout(tmp_path_factory.mktemp("checkout"))
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    r = run_ol(checkout, "start", "L7.3", "--ref-deps", cwd=elsewhere)
    assert r.returncode == 0, explain(r)
    shutil.copy2(checkout / "course/reference/python/tinyllm/modern/rope.py", checkout / "python/tinyllm/modern/rope.py")
    return checkout, elsewhere


def student_tests(checkout: Path, files: dict[str, str]) -> None:
    folder = checkout / "python/tests/l7-3-rope"
    shutil.rmtree(folder)
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))


@pytest.mark.slow
def test_ol_check_passes_the_model_answer_with_json(finished_checkout):
    checkout, elsewhere = finished_checkout
    student_tests(checkout, {p.name: p.read_text() for p in MODEL_ANSWER.glob("*.py")})
    r = run_ol(checkout, "check", "L7.3", "--ref-deps", "--json", cwd=elsewhere)
    assert r.returncode == 0, explain(r)
    data = json.loads(r.stdout)
    assert data["passed"] is True and data["score"] == 1.0 and data["killed"] == data["counted"]
    assert data["threshold"] == 0.8 and len(data["pitfalls"]) == 7 and data["survivors"] == []
    listed = run_ol(checkout, "list", cwd=elsewhere)
    assert "checked" in listed.stdout, explain(listed)


def test_ol_check_refuses_tests_that_break_the_rules_and_the_repository_stays_unchanged(finished_checkout):
    checkout, elsewhere = finished_checkout
    rope = checkout / "python/tinyllm/modern/rope.py"
    student_tests(checkout, {"test_rope_oracle.py": f"""
        import os
        from tinyllm.modern.rope import rope_cos_sin

        def test_peeks():
            assert "apply_rope" in open({str(rope)!r}).read()

        def test_leaves():
            os._exit(0)
    """})
    before = snapshot(checkout)
    r = run_ol(checkout, "check", "L7.3", "--ref-deps", "--json", cwd=elsewhere)
    assert r.returncode == 1, explain(r)
    data = json.loads(r.stdout)
    assert data["passed"] is False and data["reason"]
    problems = "\n".join(data["problems"])
    assert "test_rope_oracle.py:2: imports os" in problems and "test_rope_oracle.py:6: uses open()" in problems, problems
    assert snapshot(checkout) == before


@pytest.mark.needs_confinement
def test_ol_check_survives_a_test_that_writes_into_the_repository(finished_checkout):
    checkout, elsewhere = finished_checkout
    rope = checkout / "python/tinyllm/modern/rope.py"
    # no banned name: it reaches the file system through pytest's own Path
    student_tests(checkout, {"test_rope_oracle.py": f"""
        from tinyllm.modern.rope import rope_cos_sin

        def test_vandal(request):
            type(request.path)({str(rope)!r}).write_text("broken")
    """})
    before = snapshot(checkout)
    r = run_ol(checkout, "check", "L7.3", "--ref-deps", cwd=elsewhere)
    assert r.returncode == 1, explain(r)
    assert "test_vandal" in r.stdout and "rejects a correct implementation" in r.stdout, explain(r)
    assert snapshot(checkout) == before


def test_ol_check_usage_errors(finished_checkout):
    checkout, elsewhere = finished_checkout
    r = run_ol(checkout, "check", "L9.9", cwd=elsewhere)
    assert r.returncode == 2 and "L7.3" in r.stderr, explain(r)
    r = run_ol(checkout, "check", "L0.1", cwd=elsewhere)
    assert r.returncode == 2 and "no graded tests" in r.stderr, explain(r)


# ---- the parts --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.needs_confinement
@pytest.mark.parametrize("module_id, suite", [("L7.3", "shapes-and-errors"), ("L7.4", "l7-4-hand-example")])
def test_the_shared_check_gives_the_verdicts_of_isolated_runs(module_id, suite):
    """The local check collects a suite once and forks a run per variant; the
    instructor's collects it afresh in every run.  They must agree, on the
    pitfalls, every module- and class-level mutant (L7.4's
    table of rule functions among them) and a spread of function mutants,
    for a suite that catches some variants and misses others."""
    session = GradingSession(ROOT, module_id)
    chosen = [m for m in session.mutant_variants() if m.key.split(":")[0] in ("<module>", "RopeSpec")]
    chosen += session.mutant_variants()[::15]
    variants = session.pitfall_variants() + chosen
    verdicts = {}
    for sharing in ("shared", "isolated"):
        with session.scheduler({"student": TestFolder(SUITES / suite).snapshot()}, course=False, sharing=sharing) as scheduler:
            grader = Grader(session, scheduler, time_limit=30)
            verdicts[sharing] = grader.suite(variants)
    differ = {key: (verdicts["shared"][key].status, verdicts["isolated"][key].status)
              for key in verdicts["isolated"] if verdicts["shared"][key].caught != verdicts["isolated"][key].caught}
    assert not differ, f"shared vs isolated verdicts differ: {differ}"
    assert len({v.caught for v in verdicts["isolated"].values()}) == 2, "the sample should hold caught and missed variants"


@pytest.mark.needs_confinement
def test_the_files_the_static_check_judged_are_the_files_that_run(tmp_path, monkeypatch):
    """The attack: a file passes the static check, then is swapped on disk for one
    that imports what graded tests may not, before the sandboxes are filled.
    Read again from disk, the swapped file would run (three tests); the check
    runs the one snapshot it judged (one test)."""
    import ol.grading.check as check

    folder = tmp_path / "l7-3-rope"
    folder.mkdir()
    judged = "def test_judged():\n    assert True\n"
    swapped = "import os\n\n\n" + "".join(f"def test_swapped_{n}():\n    assert os.sep\n\n\n" for n in range(3))
    (folder / "test_rope_oracle.py").write_text(judged)
    static_check = check.check_student_tests

    def judge_then_swap(*args, **kwargs):
        found = static_check(*args, **kwargs)
        (folder / "test_rope_oracle.py").write_text(swapped)
        return found

    monkeypatch.setattr(check, "check_student_tests", judge_then_swap)
    session = GradingSession(ROOT, "L7.3")
    session.mutants = dataclasses.replace(session.mutants, counted=session.mutants.counted[:3])
    result = grade(folder, session=session)
    assert (folder / "test_rope_oracle.py").read_text() == swapped, "the attack swapped the file"
    assert result.reason is None and result.tests == 1, (result.reason, result.problems, result.tests)
    assert not any("test_swapped" in entry["test"] for entry in result.rejected), result.rejected


# ---- failing loudly ------------------------------------------------------------------------


def test_a_broken_fixture_is_the_courses_fault_with_the_command_that_rebuilds_it(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    fixture = checkout / "fixtures/L7.3/rope_hf.npz"
    fixture.write_bytes(fixture.read_bytes()[:1000])
    r = run_ol(checkout, "check", "L7.3", "--ref-deps", "--json", cwd=tmp_path)
    assert r.returncode == 2, explain(r)
    data = json.loads(r.stdout)
    assert data["score"] is None and "not your code" in data["error"], data
    assert "rope_hf.npz" in data["error"] and "python oracle/L7.3/rope_hf.py" in data["error"], data


@pytest.mark.slow
def test_a_rope_that_hangs_at_import_fails_the_course_tests_within_the_time_limit(finished_checkout):
    checkout, elsewhere = finished_checkout
    rope = checkout / "python/tinyllm/modern/rope.py"
    good = rope.read_text()
    rope.write_text(good + "\nwhile True:\n    pass\n")
    student_tests(checkout, {"test_rope_oracle.py": "import os\n\n\ndef test_x():\n    assert os.sep\n"})  # refused:
    try:                                                                       # the check stops right after
        started = time.monotonic()
        r = run_ol(checkout, "check", "L7.3", "--ref-deps", "--time-limit", "5", "--json", cwd=elsewhere)
        assert time.monotonic() - started < 60, "the course-test stage must stop at its time limit"
    finally:
        rope.write_text(good)
    assert r.returncode == 1, explain(r)
    data = json.loads(r.stdout)
    failure = data["course_failure"]
    assert failure["reason"].startswith("course tests fail on your code") and "longer than 5 s" in " ".join(
        failure["problems"])
    assert data["reason"].startswith("your tests do things graded tests may not"), "the suite is read on its own"


def test_a_test_file_that_is_not_utf8_is_named_not_a_traceback(finished_checkout):
    checkout, elsewhere = finished_checkout
    student_tests(checkout, {"test_rope_oracle.py": "def test_x():\n    assert True\n"})
    (checkout / "python/tests/l7-3-rope/test_latin1.py").write_bytes(b"# caf\xe9\ndef test_y():\n    pass\n")
    r = run_ol(checkout, "check", "L7.3", "--ref-deps", "--json", cwd=elsewhere)
    assert r.returncode == 1, explain(r)
    data = json.loads(r.stdout)
    [entry] = data["rejected"]                       # the file is left out, named; the rest is graded
    assert entry["test"].endswith("test_latin1.py") and entry["status"] == "refused", r.stdout
    assert entry["failure"].startswith("line 1: is not UTF-8 text"), r.stdout
    assert data["tests"] == 1 and data["error"] is None, r.stdout


@pytest.mark.slow
def test_a_broken_state_file_loses_no_result(finished_checkout):
    checkout, elsewhere = finished_checkout
    student_tests(checkout, {p.name: p.read_text() for p in MODEL_ANSWER.glob("*.py")})
    state = checkout / ".ol" / "state.json"
    state.parent.mkdir(exist_ok=True)
    state.write_bytes(b"\xff\xfe not json")
    r = run_ol(checkout, "check", "L7.3", "--ref-deps", cwd=elsewhere)
    assert r.returncode == 0 and "PASSED" in r.stdout, explain(r)
    assert "state.json.bak" in r.stderr, explain(r)
    assert json.loads(state.read_text())["modules"]["L7.3"]["state"] == "checked"


@pytest.mark.parametrize("limit", ["inf", "nan", "0", "-1", "1e9", "ten"])
def test_a_bad_time_limit_is_a_usage_error(finished_checkout, limit):
    checkout, elsewhere = finished_checkout
    r = run_ol(checkout, "check", "L7.3", "--time-limit", limit, cwd=elsewhere)
    assert r.returncode == 2 and "--time-limit" in r.stderr and "Traceback" not in r.stderr, explain(r)


# ---- a re-check keeps the course tests' pass (the verdict cache alone: test_verdict_cache.py) ----


@pytest.mark.slow
@pytest.mark.needs_confinement
def test_a_recheck_keeps_the_course_tests_pass_only_while_the_code_is_the_same(tmp_path):
    checkout, elsewhere = copy_checkout(tmp_path / "checkout"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run_ol(checkout, "start", "L7.3", "--ref-deps", cwd=elsewhere).returncode == 0
    rope = checkout / "python/tinyllm/modern/rope.py"
    reference = (checkout / "course/reference/python/tinyllm/modern/rope.py").read_text()
    rope.write_text(reference)
    student_tests(checkout, {p.name: p.read_text() for p in MODEL_ANSWER.glob("*.py")})

    home = sampled_home(tmp_path / "home", every=5)   # the course tests are what this is about, not the mutants

    def check(*extra):
        r = run_ol(checkout, "check", "L7.3", "--ref-deps", "--json", *extra, cwd=elsewhere, env=home_env(home))
        assert r.returncode in (0, 1), explain(r)
        return json.loads(r.stdout)

    cold = check()
    assert cold["passed"] and not cold["course_tests_kept"] and cold["course_tests"]["passed"] > 0
    warm = check()
    assert warm["course_tests_kept"] and warm["course_tests"] == cold["course_tests"]
    assert (warm["killed"], warm["counted"]) == (cold["killed"], cold["counted"])
    assert not check("--fresh")["course_tests_kept"], "--fresh runs the course tests again"
    # any edit of the code under test runs them again: here one that breaks the tables' scaling
    pitfalls = load_pitfalls(checkout / "course/mutants/L7.3/pitfalls.toml", reference, "rope.py")
    rope.write_text(next(p.source for p in pitfalls if p.id == "s05"))
    after = check()
    assert not after["course_tests_kept"] and not after["passed"]
    assert "course tests fail on your code" in after["course_failure"]["reason"], after
    # each part stands on its own: wrong code still has its tests graded, against the reference's mutants
    assert after["reason"] is None and (after["killed"], after["counted"]) == (cold["killed"], cold["counted"]), after
    assert after["course_tests"]["passed"] < after["course_tests"]["total"]
    # the report says both, and the pytest report that follows is the course tests' (not "your tests")
    r = run_ol(checkout, "check", "L7.3", "--ref-deps", "--html", cwd=elsewhere, env=home_env(home))
    assert f"your tests catch {cold['killed']}/{cold['counted']} generated mutants" in r.stdout, explain(r)
    assert "\nCourse tests: " in r.stdout and "make the course tests pass" in r.stdout, explain(r)
    assert "\nThe course tests on your code (pytest's report):\n" in r.stdout, explain(r)
    assert "Your tests on" not in r.stdout, explain(r)
    page = (checkout / ".ol/reports/L7.3-check.html").read_text()
    assert "<h2>The course tests on your code (pytest&#x27;s report)</h2>" in page and "Your tests on" not in page
    assert 'id="course-failure"' in page and f'<b id="killed">{cold["killed"]}/{cold["counted"]}</b>' in page


def test_a_run_killed_at_its_processor_time_limit_is_a_timeout_not_a_crash():
    """RLIMIT_CPU sends SIGXCPU at the limit and SIGKILL a second later; a run
    that is pid 1 of its own pid namespace never sees the SIGXCPU (the kernel
    drops a signal its init does not handle), so on a quiet machine the
    SIGKILL is what ends an endless test.  Killed after using its limit is a
    timeout; killed before it is a crash."""
    from ol.grading.grader import CRASHED
    from ol.grading.scheduler import RunOutcome

    limit = 3.0
    at_limit = RunOutcome(1, exit=128 + signal.SIGKILL, cpu_seconds=4.01, notes=[{"running": "t.py::test_forever"}])
    assert Grader.verdict("mutant-1", at_limit, limit).status == TIMEOUT
    early = dataclasses.replace(at_limit, cpu_seconds=0.2)
    assert Grader.verdict("mutant-1", early, limit).status == CRASHED
    impl_at_limit = RunOutcome(1, exit=1, impl_exit=128 + signal.SIGKILL, impl_cpu_seconds=3.5)
    assert Grader.verdict("mutant-1", impl_at_limit, limit).status == TIMEOUT


# ---- what check_module decides from its request ------------------------------------------


@pytest.mark.parametrize(("confinement", "request_fields", "sharing", "reads_verdicts"), [
    ("confined", {}, "shared", True),
    ("confined", {"fresh": True}, "shared", False),
    ("confined", {"isolated": True}, "isolated", False),
    ("confined", {"require_confinement": True}, "isolated", False),    # ol grade's check, the instructor's
    ("confined-by-uid", {}, "isolated", False),                        # shared needs namespaces
    ("unconfined", {}, "isolated", False),
])
def test_check_module_decides_sharing_and_the_verdict_cache(monkeypatch, confinement, request_fields, sharing,
                                                            reads_verdicts):
    """The rule lives in check.py: only a confined, shared, not fresh check
    keeps .ol/verdicts, so an isolated grade never reads them."""
    from ol.grading import check
    from ol.grading.sandbox import confine
    from ol.grading.events import Unconfined

    seen, events = {}, []
    monkeypatch.setattr(confine, "choose_confinement", lambda wanted="auto": (confinement, "" if confinement == "confined" else "why"))
    monkeypatch.setattr(check, "_check", lambda session, request, **decided:
                        seen.update(decided) or check.CheckResult("L7.3", 0.8))
    check.check_module(ROOT, "L7.3", CheckRequest(**request_fields), on_event=events.append)
    assert (seen["confinement"], seen["sharing"]) == (confinement, sharing)
    assert seen["verdict_cache"] == (ROOT / ".ol" / "verdicts" / "L7.3.json" if reads_verdicts else None)
    assert events == ([Unconfined("why")] if confinement == "unconfined" else [])


@pytest.mark.parametrize("request_fields", [{"require_confinement": True}, {"confinement": "confined"}])
def test_check_module_refuses_to_grade_unconfined_when_asked_to_confine(monkeypatch, request_fields):
    from ol.core.errors import OlError
    from ol.grading import check
    from ol.grading.sandbox import confine

    monkeypatch.setattr(confine, "choose_confinement", lambda wanted="auto": ("unconfined", "bwrap cannot run here"))
    monkeypatch.setattr(check, "_check", lambda *args, **kwargs: pytest.fail("graded unconfined"))
    with pytest.raises(OlError, match="^refusing to grade unconfined: bwrap cannot run here$"):
        check.check_module(ROOT, "L7.3", CheckRequest(**request_fields))
