"""Kit tests of the course tests' diagnosis (course/tests/diagnose.py).

- Each known mistake of L7.3 and L7.4 (the pitfalls and the misconceptions,
  among them the four issue 12 asks for), planted as the student's file,
  makes the first failing course test name it, and only it: under `ol tests`
  (the student's code in the test process) and under `ol check`'s course
  stage (the student's code behind a proxy in another sandbox).
- Unrelated bugs planted the same way name no mistake: the message says
  where the result differs instead.
- A mistake that breaks every golden case of a test is named once in that
  test's message, not once per case (issue 19: m01 was named 32 times).
- Broken modules under a correct rope.py are blamed on those modules.
- The diagnosis builds each pitfall exactly as the grader does.
- The diagnosis rules, on a miniature module: a mistake is named only if it
  fails the same comparison with the student's result and passes the earlier
  ones, never when the reference gives that result too; an edit that no
  longer applies is reported, not silently dropped.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from helpers.kit import ROOT
from ol.core.runner import run_course_tests
from ol.grading.mutants import load_pitfalls
from ol.instructor.verify import COURSE_TESTS_TIME_LIMIT

REFERENCE = ROOT / "course/reference/python"
REFERENCE_ROPE = REFERENCE / "tinyllm/modern/rope.py"
REFERENCE_FUNCTIONAL = REFERENCE / "tinyllm/autograd/functional.py"


def _load_diagnose():
    spec = importlib.util.spec_from_file_location("course_diagnose", ROOT / "course/tests/diagnose.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


diagnose = _load_diagnose()

# module -> the file under test, inside the reference tree
TARGETS = {"L7.3": "tinyllm/modern/rope.py", "L7.4": "tinyllm/modern/rope_scaling.py"}
CATALOGS = {module: diagnose.Mistakes(module, target, ()).catalog() for module, target in TARGETS.items()}
KNOWN = {module: {mistake.id: mistake for mistake in mistakes} for module, (mistakes, _) in CATALOGS.items()}

# What issue 12 asks the diagnosis to know for L7.3, beside the seven pitfalls.
ASKED_FOR = {
    "angles in float64": "m01",
    "tables not cast to x's dtype": "m02",
    "reading x.data, so that the gradient is lost": "m03",
    "the interleaved output left in half order": "s07",
}

# Bugs that are none of the known mistakes: (old text of the reference, new text).
UNRELATED = {
    "L7.3": {
        "position-plus-one": (
            "    angles = positions[..., None] * inv_freq  # [..., r/2]: one float32 product, as HF computes it",
            "    angles = (positions[..., None] + 1) * inv_freq"),
        "interleaved-pair-swapped": ("        a, b = rot[..., 0::2], rot[..., 1::2]",
                                     "        a, b = rot[..., 1::2], rot[..., 0::2]"),
        "scaling-squared": ("    return np.cos(angles) * scale, np.sin(angles) * scale",
                            "    return np.cos(angles) * scale * scale, np.sin(angles) * scale * scale"),
    },
    "L7.4": {
        "yarn-temperature-0.2": ("    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0",
                                 "    return 1.0 if factor <= 1 else 0.2 * mscale * math.log(factor) + 1.0"),
        "longrope-ext-squared": ("    return _ladder(base, r) / np.asarray(ext), attention",
                                 "    return _ladder(base, r) / np.asarray(ext) ** 2, attention"),
        "ladder-over-r-minus-2": ("    return 1.0 / base ** (np.arange(0, r, 2) / r)",
                                  "    return 1.0 / base ** (np.arange(0, r, 2) / (r - 2))"),
    },
}


def planted(module: str, old: str, new: str) -> str:
    reference = (REFERENCE / TARGETS[module]).read_text()
    assert reference.count(old) == 1, f"the reference no longer holds {old!r} once: update this test"
    return reference.replace(old, new)


def dotted(module: str) -> str:
    return TARGETS[module].removesuffix(".py").replace("/", ".")


def failure_sections(output: str) -> dict[str, str]:
    """pytest's failure report as {test item id: its section}, in order."""
    parts = re.split(r"^_{3,} (\S+) _{3,}$", output, flags=re.M)
    return {name: re.split(r"^=+ ", text, flags=re.M)[0] for name, text in zip(parts[1::2], parts[2::2])}


def named(section: str) -> set[str]:
    """The ids of the mistakes a failure message names."""
    return set(re.findall(r"\((?:pitfall|misconception) (\w+)\); look at ", section))


def assert_names(mistake, section: str, where: str) -> None:
    """The section names this mistake, in its own words, and no other."""
    assert named(section) == {mistake.id}, f"{where}: should name {mistake.id} and only it:\n{section}"
    assert f"what you get by {mistake.by} ({mistake.kind} {mistake.id}); look at {mistake.look_at}." in section


def assert_names_nothing(module: str, section: str, where: str) -> None:
    """The section names no mistake, says so, and says what differs (for L7.3: at which position)."""
    assert not named(section), f"{where}: names a known mistake for an unrelated bug:\n{section}"
    assert f"None of the known mistakes of {module}" in section, section
    assert re.search(r"differ by more than|a difference of", section), f"says what differs:\n{section}"
    if module == "L7.3":
        assert re.search(r"entries differ by more than .*\n.*The largest difference is .*position \d", section), (
            f"says how many entries differ, and at which position the largest difference is:\n{section}")


def test_the_catalog_holds_every_pitfall_and_what_issue_12_asks_for():
    for module, (mistakes, problems) in CATALOGS.items():
        assert problems == [], f"{module}: every edit applies to the reference"
    assert [m for m in KNOWN["L7.3"] if m.startswith("s")] == [f"s0{i}" for i in range(1, 8)]
    assert [m for m in KNOWN["L7.4"] if m.startswith("p")] == [f"p0{i}" for i in range(1, 9)]
    known = KNOWN["L7.3"]
    for meaning, mistake_id in ASKED_FOR.items():
        assert mistake_id in known, f"{meaning!r} ({mistake_id}) is not in the catalog"
    assert "float64" in known["m01"].by and "dtype" in known["m02"].by and "x.data" in known["m03"].by
    assert "interleaved" in known["s07"].by and "half order" in known["s07"].by


@pytest.mark.parametrize("module", TARGETS)
def test_the_diagnosis_builds_each_pitfall_as_the_grader_does(module):
    reference = (REFERENCE / TARGETS[module]).read_text()
    graded = load_pitfalls(ROOT / f"course/mutants/{module}/pitfalls.toml", reference, TARGETS[module])
    built = {m.id: m.source for m in KNOWN[module].values() if m.kind == "pitfall"}
    assert {p.id: p.source for p in graded} == built


@pytest.mark.slow
@pytest.mark.parametrize("module, mistake_id", [(module, m) for module in TARGETS for m in KNOWN[module]])
def test_a_planted_mistake_is_named_by_the_first_failing_course_test(module, mistake_id):
    mistake = KNOWN[module][mistake_id]
    run = run_course_tests(ROOT, module, ref_deps=True, sources={dotted(module): mistake.source},
                           pytest_args=["-x"], capture=True)
    assert run.exit_code == 1 and len(run.failed) == 1, run.output[-3000:]
    sections = failure_sections(run.output)
    assert list(sections) == run.failed, run.output[-3000:]
    assert_names(mistake, sections[run.failed[0]], run.failed[0])


@pytest.mark.slow
@pytest.mark.parametrize("module, bug", [(module, bug) for module in TARGETS for bug in UNRELATED[module]])
def test_a_planted_unrelated_bug_names_no_mistake(module, bug):
    run = run_course_tests(ROOT, module, ref_deps=True, sources={dotted(module): planted(module, *UNRELATED[module][bug])},
                           pytest_args=["-x"], capture=True)
    assert run.exit_code == 1 and len(run.failed) == 1, run.output[-3000:]
    assert_names_nothing(module, failure_sections(run.output)[run.failed[0]], run.failed[0])


@pytest.mark.slow
@pytest.mark.parametrize("module", TARGETS)
def test_in_ol_checks_course_stage_behind_the_proxy_the_same_names_come_out(module):
    from ol.grading.grader import Grader
    from ol.grading.session import GradingSession
    from ol.grading.variants import Variant

    session = GradingSession(ROOT, module)
    variants = [Variant(f"mistake:{m.id}", m.source, session.reference.origin) for m in KNOWN[module].values()]
    variants += [Variant(f"unrelated:{bug}", planted(module, *edit), session.reference.origin)
                 for bug, edit in UNRELATED[module].items()]
    with session.scheduler({}, workers=2) as scheduler:
        runs = Grader(session, scheduler, time_limit=COURSE_TESTS_TIME_LIMIT).course_tests_of(variants)
    for variant in variants:
        run = runs[variant.key]
        first = next(name.rsplit("::", 1)[-1] for name, result in run.outcomes.items() if result != "passed")
        section = failure_sections(run.output)[first]
        if variant.key.startswith("mistake:"):
            assert_names(KNOWN[module][variant.key.split(":")[1]], section, f"{variant.key}, {first}")
        else:
            assert_names_nothing(module, section, f"{variant.key}, {first}")


def test_a_mistake_that_breaks_every_case_is_named_once():
    mistake = KNOWN["L7.4"]["m01"]  # inv_freq left in float64: every golden case has the wrong dtype
    run = run_course_tests(ROOT, "L7.4", ref_deps=True, sources={dotted("L7.4"): mistake.source},
                           pytest_args=["-k", "test_inv_freq_golden"], capture=True)
    assert run.failed == ["test_inv_freq_golden"], run.output[-3000:]
    section = failure_sections(run.output)["test_inv_freq_golden"]
    cases = re.search(r"(\d+) of (\d+) cases differ from HF", section)
    assert cases and cases[1] == cases[2] and int(cases[1]) >= 30, section[:3000]
    assert section.count("dtype float64, expected float32.") == int(cases[1]), "each case says what differs"
    assert section.count("(misconception m01)") == 1, f"m01 is named once for all the cases:\n{section[-3000:]}"
    assert "For every case above: Your result equals what you get by " + mistake.by in section, section[-3000:]


def test_each_validation_case_says_what_it_passed_and_what_it_should_raise():
    # rope_cos_sin without its check of attention_scaling: three cases of test_validation fail.
    source = planted("L7.3", "    if not FLOAT32_TINY <= attention_scaling <= FLOAT32_MAX:  # also false for nan",
                     "    if False:")
    run = run_course_tests(ROOT, "L7.3", ref_deps=True, sources={"tinyllm.modern.rope": source},
                           pytest_args=["-k", "test_validation"], capture=True)
    assert run.failed == ["test_validation[zero-scaling]", "test_validation[scaling-1e39]",
                          "test_validation[scaling-below-2**-126]"], run.output[-3000:]
    lines = [line.removeprefix("E").strip() for line in failure_sections(run.output)["test_validation[zero-scaling]"]
             .splitlines() if line.startswith("E ")]
    assert lines == ["Failed: rope_cos_sin([0, 1], [1.0], attention_scaling=0.0)",
                     "should raise ValueError, but returned (a numpy array of shape (2, 1), dtype float32, "
                     "a numpy array of shape (2, 1), dtype float32)"], lines


def test_broken_modules_under_a_correct_rope_are_blamed_on_those_modules():
    # The student's functional.concat halves the gradient it hands back; their rope.py is the reference's.
    old = "        return tuple(np.split(g, ends, axis=axis))"
    functional = REFERENCE_FUNCTIONAL.read_text()
    assert functional.count(old) == 1, "update this test: the reference concat changed"
    sources = {"tinyllm.modern.rope": REFERENCE_ROPE.read_text(),
               "tinyllm.autograd.functional": functional.replace(old, "        return tuple(p * 0.5 for p in np.split(g, ends, axis=axis))")}
    run = run_course_tests(ROOT, "L7.3", ref_deps=True, sources=sources, pytest_args=["-x"], capture=True)
    assert run.failed == ["test_gradcheck_both_layouts_and_partial[half-None]"], run.output[-3000:]
    section = failure_sections(run.output)[run.failed[0]]
    assert not named(section), section
    assert "the difference comes from the modules rope.py builds on" in section, section


# ---- the rules, on a miniature module ---------------------------------------------------------------

MINI_REFERENCE = '''\
import numpy as np


def double(x):
    return np.asarray(x, np.float64) * 2


def half(x):
    return np.asarray(x, np.float64) / 2
'''

MINI_PITFALLS = '''\
[[pitfall]]
id = "s01"
by = "tripling instead of doubling"
look_at = "the factor in double"
misconception = "-"
symptom = "-"
caught_by = []

[[pitfall.edit]]
old = "    return np.asarray(x, np.float64) * 2"
new = "    return np.asarray(x, np.float64) * 3"

[[pitfall]]
id = "s02"
by = "tripling in double and halving badly"
look_at = "both functions"
misconception = "-"
symptom = "-"
caught_by = []

[[pitfall.edit]]
old = "    return np.asarray(x, np.float64) * 2"
new = "    return np.asarray(x, np.float64) * 3"

[[pitfall.edit]]
old = "    return np.asarray(x, np.float64) / 2"
new = "    return np.asarray(x, np.float64) / 4"
'''

MINI_MISCONCEPTIONS = '''\
[[misconception]]
id = "m01"
by = "doubling only from the second entry on"
look_at = "where double starts"

[[misconception.edit]]
old = "    return np.asarray(x, np.float64) * 2"
new = "    return np.asarray(x, np.float64) * np.r_[1, 2, 2]"

[[misconception]]
id = "m02"
by = "an edit that no longer applies"
look_at = "-"

[[misconception.edit]]
old = "    return x + x"
new = "    return x"
'''


@pytest.fixture
def mini(tmp_path):
    files = {"course/reference/python/mini.py": MINI_REFERENCE, "course/mutants/X/pitfalls.toml": MINI_PITFALLS,
             "course/mutants/X/misconceptions.toml": MINI_MISCONCEPTIONS}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return diagnose.Mistakes("X", "mini.py", ("double", "half"), repo=tmp_path)


def student(double_factor, half_divisor=2.0):
    return SimpleNamespace(double=lambda x: np.asarray(x, np.float64) * double_factor,
                           half=lambda x: np.asarray(x, np.float64) / half_divisor)


def failure(expect, *args, **kwargs) -> str:
    with pytest.raises(pytest.fail.Exception) as caught:
        expect.close(*args, **kwargs)
    return str(caught.value)


def test_a_mistake_is_named_with_its_words_and_edits_that_no_longer_apply_are_reported(mini):
    expect = diagnose.Expectations(student(3), mini)
    message = failure(expect, lambda m: m.double([1.0, 2.0, 3.0]), [2.0, 4.0, 6.0], 1e-9, "double([1, 2, 3])")
    assert message.splitlines()[0] == "double([1, 2, 3]): 3 of 3 entries differ by more than 1e-09."
    assert message.splitlines()[1] == "The largest difference is 3, at index (2,): got 9, expected 6."
    # s01 and s02 both triple in double: the only comparison so far cannot tell them apart.
    assert named(message) == {"s01", "s02"}, message
    assert ("Your result equals what you get by tripling instead of doubling (pitfall s01); "
            "look at the factor in double.") in message
    assert "misconception m02 in course/mutants/X/misconceptions.toml: edit 1's `old` text occurs 0 times" in message


def test_a_mistake_must_also_pass_the_earlier_comparisons_of_the_test(mini):
    expect = diagnose.Expectations(student(3), mini)
    expect.close(lambda m: m.half([4.0]), [2.0], 1e-9, "half([4])")  # passes; s02 would not
    message = failure(expect, lambda m: m.double([1.0, 2.0, 3.0]), [2.0, 4.0, 6.0], 1e-9, "double([1, 2, 3])")
    assert named(message) == {"s01"}, message


def test_a_mistake_the_student_does_not_reproduce_is_not_named(mini):
    expect = diagnose.Expectations(student(2.5), mini)
    message = failure(expect, lambda m: m.double([1.0, 2.0, 3.0]), [2.0, 4.0, 6.0], 1e-9, "double([1, 2, 3])")
    assert not named(message) and "None of the known mistakes of X (s01, s02, m01) gives this result" in message


def test_a_mistake_that_gives_the_reference_result_here_is_never_named(mini):
    # m01 equals the reference except at the first entry; compared only there, a failure must
    # point at the reference's own result (the student's matches it), not at m01, which agrees too.
    expect = diagnose.Expectations(student(2), mini)
    message = failure(expect, lambda m: m.double([5.0, 6.0])[1:], [7.0], 1e-9, "double([5, 6])[1:]")
    assert not named(message), message
    assert "equals what the course's reference mini.py gives on these inputs" in message


def test_a_result_within_the_tolerance_of_a_mistake_matches_it(mini):
    expect = diagnose.Expectations(student(3.000001), mini)
    assert named(failure(expect, lambda m: m.double([1.0]), [2.0], 1e-3, "double([1])")) == {"s01", "s02"}
    expect = diagnose.Expectations(student(3.01), mini)
    assert not named(failure(expect, lambda m: m.double([1.0]), [2.0], 1e-3, "double([1])"))


def test_an_error_the_student_raises_keeps_its_traceback_and_gains_what_it_matches(mini):
    expect = diagnose.Expectations(student(np.r_[1, 2, 2]), mini)  # as m01: broadcasts against 3 entries only
    with pytest.raises(ValueError, match="could not be broadcast") as caught:
        expect.close(lambda m: m.double([1.0, 2.0]), [2.0, 4.0], 1e-9, "double([1, 2])")
    assert caught.value.__notes__[0].startswith("double([1, 2]):\nYour code raises the same error as what you get by "
                                                "doubling only from the second entry on (misconception m01)")
    expect = diagnose.Expectations(SimpleNamespace(double=lambda x: 1 / 0, half=None), mini)
    with pytest.raises(ZeroDivisionError) as caught:
        expect.close(lambda m: m.double([1.0]), [2.0], 1e-9, "double([1])")
    assert not getattr(caught.value, "__notes__", None), "no known mistake divides by zero: no note"


def test_cases_name_each_diagnosis_once_with_the_cases_it_explains(mini):
    expect = diagnose.Expectations(student(3, half_divisor=3), mini)  # double as s01 and s02 do; half as none does
    cases = diagnose.Cases()
    for x in (1.0, 2.0, 3.0):
        cases.check(f"double({x:g})", lambda x=x: expect.close(lambda m: m.double([x]), [2 * x], 1e-9, f"double([{x:g}])"))
    cases.check("double(0)", lambda: expect.close(lambda m: m.double([0.0]), [0.0], 1e-9, "double([0])"))  # passes
    cases.check("half(6)", lambda: expect.close(lambda m: m.half([6.0]), [3.0], 1e-9, "half([6])"))
    with pytest.raises(pytest.fail.Exception) as caught:
        cases.report("differ")
    message = str(caught.value)
    assert message.startswith("4 of 5 cases differ:\n"), message
    for case in ("double([1]): got 3", "double([2]): got 6", "double([3]): got 9", "half([6]): got 2"):
        assert case in message, message
    assert message.count("(pitfall s01)") == 1 and message.count("(pitfall s02)") == 1, message
    assert "For double(1), double(2), double(3): Your result equals what you get by tripling" in message, message
    assert "For half(6): None of the known mistakes of X (s01, s02, m01) gives this result" in message, message
    assert message.count("(The diagnosis left out:") == 1, f"a broken mistake file is reported once:\n{message}"
    assert diagnose.Cases().report("differ") is None  # nothing failed: no failure


# ---- where the entries sit ------------------------------------------------------------------------


def test_where_says_position_pair_and_member():
    where = diagnose.Where.heads(np.array([0, 5])[:, None], "half", rotary_dim=4)  # x [2, 1, 6]: 2 pairs, 2 pass through
    bad = np.zeros((2, 1, 6), bool)
    bad[1, 0, 3] = True  # half layout, r = 4: entry 3 is pair 1's b
    assert where.spread(bad) == "at position 5, in pair 1, only in the second entry of each pair (b)"
    assert where.describe((1, 0, 3), bad.shape) == "index (1, 0, 3): position 5, pair 1, b"
    bad[:] = False
    bad[:, :, 5] = True
    assert where.spread(bad) == "at every position, only in entries past rotary_dim, which pass through unchanged"
    assert where.describe((0, 0, 5), bad.shape) == "index (0, 0, 5): position 0, entry 5, past rotary_dim: it passes through"

    interleaved = diagnose.Where.heads(np.array([0, 5])[:, None], "interleaved", rotary_dim=4)
    assert interleaved.describe((1, 0, 3), bad.shape) == "index (1, 0, 3): position 5, pair 1, b"
    assert interleaved.describe((1, 0, 2), bad.shape) == "index (1, 0, 2): position 5, pair 1, a"

    tables = diagnose.Where.tables(np.arange(8))
    bad = np.ones((8, 4), bool)
    bad[0] = False
    assert tables.spread(bad) == "at every position but 0, in every pair"
    bad[:] = False
    bad[2:, 1] = True
    assert tables.spread(bad) == "at every position but 0, 1, in pair 1"
