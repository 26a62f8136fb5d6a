"""The chapter texts agree with the catalog and with the reference code.

- L7.3's worked example: the cos/sin values and the two output vectors printed
  in course/chapters/L7.3-rope.md are what the reference computes, to the
  printed six decimals.
- L7.4's worked example: the inv_freq and attention_scaling printed for each
  rope type in course/chapters/L7.4-rope-scaling.md are what the reference
  computes, to the printed digits.
- Every chapter named in the catalog for L0.1, L0.2, M00.2, L7.3 and L7.4
  exists and names its module's course-test path.
- The L7.3 chapter names all fourteen course tests and the seven pitfall ids,
  each pitfall beside the course test(s) that catch it; the L7.4 chapter
  names every test of its course-test file and every pitfall of its
  pitfalls.toml beside the course tests its `caught_by` lists.
- The mistakes the L7.4 chapter warns against by name ("misconception m07")
  are exactly the misconceptions.toml entries that say which section warns
  (`section`) and which course tests must fail on them (`caught_by`, which
  `ol verify` checks): each is named in its own section, none elsewhere
  unknown.

The reference runs in a subprocess with PYTHONPATH=course/reference/python, so
this file never imports (or is confused by) the student's `tinyllm`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "course" / "reference" / "python"
CATALOG = REPO / "course" / "catalog.toml"
MODULES = ("L0.1", "L0.2", "M00.2", "L7.3", "L7.4")

COURSE_TESTS = (
    "test_hand_example",
    "test_cos_sin_table_golden",
    "test_cos_sin_attention_scaling_golden",
    "test_half_layout_golden",
    "test_interleaved_layout_golden",
    "test_partial_rotary_golden",
    "test_scores_depend_only_on_relative_position",
    "test_rotation_preserves_length_and_position_zero_is_identity",
    "test_layouts_are_a_permutation_of_each_other",
    "test_interleaved_matches_rotate_pairs",
    "test_gradcheck_both_layouts_and_partial",
    "test_gradient_is_the_inverse_rotation",
    "test_rope_spec_fields",
    "test_validation",
)

# pitfall id -> the course tests that catch it (seed 003, section 5)
PITFALLS = {
    "s01": ("test_half_layout_golden",),
    "s02": ("test_hand_example", "test_cos_sin_table_golden"),
    "s03": ("test_partial_rotary_golden",),
    "s04": ("test_cos_sin_table_golden", "test_scores_depend_only_on_relative_position"),
    "s05": ("test_cos_sin_attention_scaling_golden",),
    "s06": ("test_gradcheck_both_layouts_and_partial",),
    "s07": ("test_interleaved_layout_golden",),
}

# The six printed decimals allow a rounding error of 5e-7; float32 adds a little.
PRINTED_TOLERANCE = 5e-7 + 1e-7

_REFERENCE_SCRIPT = r"""
import json, sys
import numpy as np
import tinyllm
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import apply_rope, rope_cos_sin

cos, sin = rope_cos_sin(1, [1.0, 0.01])
x = Tensor(np.array([1, 0, 0, 1], np.float32))
json.dump({
    "tinyllm_file": tinyllm.__file__,
    "cos": [float(v) for v in cos],
    "sin": [float(v) for v in sin],
    "half": [float(v) for v in apply_rope(x, cos, sin, "half").data],
    "interleaved": [float(v) for v in apply_rope(x, cos, sin, "interleaved").data],
}, sys.stdout)
"""


def _catalog_modules() -> dict[str, dict]:
    with CATALOG.open("rb") as f:
        return {m["id"]: m for m in tomllib.load(f)["module"]}


def _chapter_text(module_id: str) -> str:
    return (REPO / _catalog_modules()[module_id]["chapter"]).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def reference_values() -> dict:
    env = dict(os.environ, PYTHONPATH=str(REFERENCE))
    done = subprocess.run(
        [sys.executable, "-c", _REFERENCE_SCRIPT],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, f"the reference failed to run:\n{done.stderr}"
    values = json.loads(done.stdout)
    assert Path(values["tinyllm_file"]).resolve().is_relative_to(REFERENCE.resolve()), (
        f"imported tinyllm from {values['tinyllm_file']}, not from the reference tree {REFERENCE}"
    )
    return values


# ---- parsing the worked example ------------------------------------------------

_NUMBER = r"(-?\d+\.\d+)"
_TABLE_LINE = re.compile(rf"^\s*(cos|sin) (1|0\.01)\s*=\s*{_NUMBER}\s*$", re.MULTILINE)
_OUTPUT_LINE = re.compile(r"^\s*(half|interleaved):\s*\(([^)]*)\)\s*$", re.MULTILINE)


def parse_worked_example(text: str) -> dict[str, list[float]]:
    """The printed numbers: cos/sin as [value at angle 1, value at angle 0.01],
    and the half and interleaved output vectors.  Each must be printed once."""
    found: dict[str, list[float | None]] = {"cos": [None, None], "sin": [None, None]}
    for fn, angle, value in _TABLE_LINE.findall(text):
        slot = 0 if angle == "1" else 1
        assert found[fn][slot] is None, f"{fn} {angle} is printed more than once"
        found[fn][slot] = float(value)
    for fn, values in found.items():
        for angle, value in zip(("1", "0.01"), values):
            assert value is not None, f"the chapter does not print a line '{fn} {angle} = ...'"

    outputs = _OUTPUT_LINE.findall(text)
    for layout in ("half", "interleaved"):
        rows = [v for name, v in outputs if name == layout]
        assert len(rows) == 1, f"expected one '{layout}: (...)' line, found {len(rows)}"
        found[layout] = [float(v) for v in rows[0].split(",")]
        assert len(found[layout]) == 4, f"the {layout} vector should have 4 entries: {rows[0]}"
    return found  # type: ignore[return-value]


def mismatches(printed: dict[str, list[float]], reference: dict) -> list[str]:
    """Every printed number that is not the reference value to six decimals."""
    problems = []
    for key in ("cos", "sin", "half", "interleaved"):
        for i, (shown, exact) in enumerate(zip(printed[key], reference[key], strict=True)):
            if abs(shown - exact) > PRINTED_TOLERANCE:
                problems.append(f"{key}[{i}]: the chapter prints {shown:.6f}, the reference gives {exact:.7f}")
    return problems


# ---- tests -------------------------------------------------------------------------


def test_worked_example_matches_the_reference(reference_values):
    printed = parse_worked_example(_chapter_text("L7.3"))
    assert mismatches(printed, reference_values) == []


def test_a_changed_number_in_the_worked_example_is_caught(reference_values):
    """The check above can fail: alter one printed digit, or swap the layouts."""
    text = _chapter_text("L7.3")
    line = "interleaved: (0.540302, 0.841471, -0.010000, 0.999950)"
    assert line in text
    altered = text.replace(line, "interleaved: (0.540302, 0.841471, -0.010000, 0.999951)")
    assert mismatches(parse_worked_example(altered), reference_values)
    swapped = text.replace(line, "interleaved: (0.540302, -0.010000, 0.841471, 0.999950)")
    assert mismatches(parse_worked_example(swapped), reference_values)
    flipped = re.sub(r"^sin 1    = 0\.841471$", "sin 1    = -0.841471", text, flags=re.MULTILINE)
    assert flipped != text and mismatches(parse_worked_example(flipped), reference_values)


@pytest.mark.parametrize("module_id", MODULES)
def test_chapter_exists_and_names_its_course_tests(module_id):
    module = _catalog_modules()[module_id]
    chapter = REPO / module["chapter"]
    assert chapter.is_file(), f"{module_id}: the catalog names {module['chapter']}, which does not exist"
    text = chapter.read_text(encoding="utf-8")
    assert module["course_tests"] in text, f"{chapter.name} does not name its course tests {module['course_tests']}"
    assert module_id in text.splitlines()[0], f"{chapter.name} does not open with its module id"
    for path in module["files"]:
        assert path in text, f"{chapter.name} does not name the file the student writes, {path}"


def test_rope_chapter_names_every_course_test():
    text = _chapter_text("L7.3")
    missing = [name for name in COURSE_TESTS if f"`{name}`" not in text]
    assert missing == [], f"the L7.3 chapter does not mention {missing}"


def test_rope_chapter_pairs_each_pitfall_with_its_catching_tests():
    lines = _chapter_text("L7.3").splitlines()
    for pitfall, catchers in PITFALLS.items():
        rows = [line for line in lines if re.search(rf"\b{pitfall}\b", line)]
        assert rows, f"the L7.3 chapter does not mention pitfall {pitfall}"
        assert any(all(f"`{name}`" in row for name in catchers) for row in rows), (
            f"no line of the L7.3 chapter names pitfall {pitfall} together with {catchers}"
        )


# ---- L7.4 ---------------------------------------------------------------------------

# the worked example's inputs (chapter section 10), by the name its result line carries
L74_EXAMPLES = {
    "linear": ({"rope_type": "linear", "factor": 4.0}, {}),
    "dynamic": ({"rope_type": "dynamic", "factor": 2.0}, {"seq_len": 2048, "max_position_embeddings": 1024}),
    "yarn": ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}, {}),
    "longrope short": ({"rope_type": "longrope", "original_max_position_embeddings": 1024,
                        "short_factor": [1, 1, 2, 2], "long_factor": [1, 2, 4, 8]},
                       {"seq_len": 1024, "max_position_embeddings": 4096}),
    "longrope long": ({"rope_type": "longrope", "original_max_position_embeddings": 1024,
                       "short_factor": [1, 1, 2, 2], "long_factor": [1, 2, 4, 8]},
                      {"seq_len": 1025, "max_position_embeddings": 4096}),
    "llama3": ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 1024}, {}),
}

_L74_SCRIPT = r"""
import json, sys
import tinyllm
from tinyllm.modern.rope_scaling import rope_parameters

examples = json.loads(sys.argv[1])
out = {}
for name, (fields, kwargs) in examples.items():
    inv_freq, s = rope_parameters({"rope_theta": 10000.0, **fields}, 8, **kwargs)
    out[name] = {"inv_freq": [float(v) for v in inv_freq], "s": float(s)}
json.dump({"tinyllm_file": tinyllm.__file__, "examples": out}, sys.stdout)
"""

# "yarn:           inv_freq = (1.0, 0.075, 0.005, 0.00025), s = 1.138629"; linear's line shows
# the division first: "inv_freq = (1.0, 0.1, 0.01, 0.001) / 4 = (0.25, ...), s = 1"
_L74_LINE = re.compile(
    r"^([a-z0-9]+(?: [a-z]+)?):\s+inv_freq = (?:\([^)]*\) / \d+ = )?\(([^)]*)\), s = ([0-9.]+)\s*$", re.MULTILINE
)


@pytest.fixture(scope="module")
def l74_reference() -> dict:
    env = dict(os.environ, PYTHONPATH=str(REFERENCE))
    done = subprocess.run(
        [sys.executable, "-c", _L74_SCRIPT, json.dumps(L74_EXAMPLES)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, f"the reference failed to run:\n{done.stderr}"
    values = json.loads(done.stdout)
    assert Path(values["tinyllm_file"]).resolve().is_relative_to(REFERENCE.resolve())
    return values["examples"]


def parse_l74_example(text: str) -> dict[str, tuple[list[float], float]]:
    """name -> (printed inv_freq, printed s); each name printed once."""
    found: dict[str, tuple[list[float], float]] = {}
    for name, values, s in _L74_LINE.findall(text):
        assert name not in found, f"the result line of {name!r} is printed more than once"
        found[name] = ([float(v) for v in values.split(",")], float(s))
    assert sorted(found) == sorted(L74_EXAMPLES), f"result lines found for {sorted(found)}"
    return found


def l74_mismatches(printed, reference) -> list[str]:
    """Every printed number that is not the reference's to its printed digits: up to 7
    significant digits (5e-7 relative) plus float32's rounding (6e-8)."""
    problems = []
    for name, (inv_freq, s) in printed.items():
        want = reference[name]
        for i, (shown, exact) in enumerate(zip(inv_freq, want["inv_freq"], strict=True)):
            if abs(shown - exact) > 6e-7 * abs(exact):
                problems.append(f"{name} inv_freq[{i}]: the chapter prints {shown}, the reference gives {exact:.9g}")
        if abs(s - want["s"]) > 6e-7:
            problems.append(f"{name} s: the chapter prints {s}, the reference gives {want['s']:.9g}")
    return problems


def test_l74_worked_example_matches_the_reference(l74_reference):
    assert l74_mismatches(parse_l74_example(_chapter_text("L7.4")), l74_reference) == []


def test_a_changed_number_in_the_l74_worked_example_is_caught(l74_reference):
    text = _chapter_text("L7.4")
    line = "llama3:         inv_freq = (1.0, 0.1, 0.003086762, 0.000125), s = 1"
    assert line in text
    altered = text.replace(line, line.replace("0.003086762", "0.003086862"))
    assert l74_mismatches(parse_l74_example(altered), l74_reference)
    altered = text.replace("s = 1.138629", "s = 1.060206")  # YaRN's temperature with log10
    assert l74_mismatches(parse_l74_example(altered), l74_reference)


def test_l74_chapter_names_every_course_test_and_pairs_each_pitfall():
    module = _catalog_modules()["L7.4"]
    text = _chapter_text("L7.4")
    course_tests = sorted({
        match for path in (REPO / module["course_tests"]).glob("test_*.py")
        for match in re.findall(r"^def (test_\w+)\(", path.read_text(), re.MULTILINE)
    })
    assert len(course_tests) == 14
    missing = [name for name in course_tests if f"`{name}`" not in text]
    assert missing == [], f"the L7.4 chapter does not mention {missing}"
    with (REPO / module["grading"]["pitfalls"]).open("rb") as f:
        pitfalls = tomllib.load(f)["pitfall"]
    assert len(pitfalls) >= 6
    lines = text.splitlines()
    for pitfall in pitfalls:
        rows = [line for line in lines if line.startswith(f"| {pitfall['id']} |")]
        assert len(rows) == 1, f"the L7.4 chapter's pitfalls table has no row for {pitfall['id']}"
        assert all(f"`{name}`" in rows[0] for name in pitfall["caught_by"]), (
            f"the row of {pitfall['id']} does not name {pitfall['caught_by']}"
        )


def _sections(text: str) -> dict[int, str]:
    """section number -> its text, for the chapter's numbered sections."""
    parts = re.split(r"^## (\d+)\. .*$", text, flags=re.MULTILINE)
    return {int(number): body for number, body in zip(parts[1::2], parts[2::2])}


def test_l74_chapter_names_each_warning_in_its_section():
    module = _catalog_modules()["L7.4"]
    path = (REPO / module["grading"]["pitfalls"]).with_name("misconceptions.toml")
    with path.open("rb") as f:
        entries = tomllib.load(f)["misconception"]
    warnings = {entry["id"]: entry for entry in entries if "section" in entry}
    assert all(entry.get("caught_by") for entry in warnings.values()), "a warning names the course tests it fails"
    assert {"m07", "m08", "m09", "m10", "m11", "m12"} <= set(warnings), "issue 19's warnings are planted mistakes"
    text = _chapter_text("L7.4")
    named = set(re.findall(r"\bmisconception (m\d\d)", text))
    assert named - {entry["id"] for entry in entries} == set(), "the chapter names a misconception the file lacks"
    sections = _sections(text)
    for mistake_id, entry in warnings.items():
        assert f"misconception {mistake_id}" in sections[entry["section"]], (
            f"{mistake_id} says chapter section {entry['section']} warns against it, but that section does not "
            f"name it as \"misconception {mistake_id}\"")
