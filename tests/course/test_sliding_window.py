"""Kit tests of L7.7 (sliding-window attention) beside `ol verify`
(tests/instructor/test_verify.py) and its calibration (tests/end_to_end/test_calibration.py):

- its oracle regenerates the committed fixture exactly, and the fixture is
  small, records the pinned versions and holds only documented keys;
- the chapter names every course test, each pitfall beside the tests that
  catch it, and prints a worked example the reference reproduces;
- a model-sized call (Gemma 3 270M's layer: 4 query heads of 256 on one
  key/value head, window 512) past the window, in one call and through the
  cache in chunks, gives the same output: the trimmed cache and the mask by
  positions agree at the milestone's scale.
"""

from __future__ import annotations

import re
import sys
import tomllib

import numpy as np
import pytest

from helpers.fixture_checks import assert_regenerates_exactly, run_oracle
from helpers.kit import ROOT
from helpers.reference import reference_modules

sys.path.insert(0, str(ROOT / "course" / "tests"))
from golden import load_fixture  # noqa: E402

tensor, rope, sliding = reference_modules("tinyllm.autograd.tensor", "tinyllm.modern.rope",
                                          "tinyllm.modern.sliding_window")
FIXTURE = ROOT / "fixtures" / "L7.7" / "sliding_window_hf.npz"
ORACLE = ROOT / "oracle" / "L7.7" / "sliding_window_hf.py"
CHAPTER = ROOT / "course" / "chapters" / "L7.7-sliding-window.md"


@pytest.mark.slow
def test_oracle_regenerates_the_fixture_exactly(tmp_path):
    run_oracle(ORACLE, tmp_path, ROOT)
    assert_regenerates_exactly(FIXTURE, tmp_path / FIXTURE.name, "python oracle/L7.7/sliding_window_hf.py")


def test_fixture_is_small_pinned_and_documented():
    assert FIXTURE.stat().st_size < 100_000
    fx = load_fixture(FIXTURE)
    versions = fx.provenance["versions"]
    assert versions["transformers"] == "5.19.0" and versions["torch"].startswith("2.13.0"), versions
    layer_types = "(sliding_attention|full_attention)"
    documented = re.compile(rf"{layer_types}/inv_freq|(prompt|offset|mqa|cache)/\d+/"
                            rf"(positions|{layer_types}/(q|k|v|out|cache_k|cache_v))")
    assert [key for key in fx if not documented.fullmatch(key)] == []
    assert fx.provenance["config"]["sliding_window"] == 4 and len(fx.provenance["cases"]["cache"]["calls"]) == 4


def test_chapter_names_its_course_tests_and_each_pitfall_beside_the_tests_that_catch_it():
    text = CHAPTER.read_text(encoding="utf-8")
    tests = re.findall(r"^def (test_\w+)\(", (ROOT / "course/tests/L7.7/test_sliding_window.py").read_text(), re.M)
    assert len(tests) == 12 and "twelve" in text
    assert [name for name in tests if f"`{name}`" not in text] == []
    with open(ROOT / "course/mutants/L7.7/pitfalls.toml", "rb") as file:
        pitfalls = tomllib.load(file)["pitfall"]
    assert [p["id"] for p in pitfalls] == ["w01", "w02", "w03", "w04", "w05"]
    for pitfall in pitfalls:
        row = next(line for line in text.splitlines() if line.startswith(f"| {pitfall['id']} |"))
        assert all(f"`{test}`" in row for test in pitfall["caught_by"]), row


def test_worked_example_is_what_the_reference_computes():
    text = CHAPTER.read_text(encoding="utf-8")
    printed = re.search(r"out\s+: " + r", ".join([r"\(([\d.]+), ([\d.]+)\)"] * 3), text)
    x = tensor.Tensor(np.array([[[[1, 0], [0, 1], [1, 0]]]], np.float32))
    out, (k, v) = sliding.sliding_attention(x, x, x, rope.RopeSpec(np.array([np.pi / 2], np.float32)),
                                            np.arange(3), 2)
    np.testing.assert_allclose(out.data[0].ravel(), [float(g) for g in printed.groups()], atol=6e-7)
    np.testing.assert_allclose(k.data[0, 0], [[-1, 0]], atol=1e-6)
    np.testing.assert_allclose(v.data[0, 0], [[1, 0]], atol=0)


def test_chunks_through_the_cache_equal_one_call_at_gemma_scale():
    # 700 tokens of one Gemma 3 270M-shaped sliding layer, once whole and once as 600 + 99 + 1.
    rng = np.random.default_rng(7700)
    q, k, v = (rng.standard_normal((1, n, 700, 256), dtype=np.float32) for n in (4, 1, 1))
    spec = rope.RopeSpec((1.0 / 10000.0 ** (np.arange(0, 256, 2) / 256)).astype(np.float32))
    whole, (kept, _) = sliding.sliding_attention(*(tensor.Tensor(a) for a in (q, k, v)), spec, np.arange(700), 512)
    outs, past = [], None
    for a, b in ((0, 600), (600, 699), (699, 700)):
        out, past = sliding.sliding_attention(*(tensor.Tensor(t[:, :, a:b]) for t in (q, k, v)), spec,
                                              np.arange(a, b), 512, past)
        assert past[0].shape == (1, 1, 511, 256)
        outs.append(out.data)
    np.testing.assert_allclose(np.concatenate(outs, axis=1), whole.data, rtol=0, atol=2e-5)
    np.testing.assert_array_equal(past[0].data, kept.data)
