"""Kit tests of L7.3x, RoPE as a production operator (tinyllm.ops and
tinyllm.modern.rope_tables in the reference tree).

- The two oracles reproduce their committed fixtures exactly:
  oracle/L7.3x/axial_physicsnemo.py (NVIDIA physicsnemo 2.2.2, installed by
  .ci/run without its dependencies) and oracle/L7.3x/mrope_hf.py (transformers'
  Qwen2-VL).  CI installs both, so nothing here skips.
- The numbers the chapter states as facts: float16 and bfloat16 positions,
  float16 angles past 2048.
- Both backends give the same bits at the benchmark's size, for every dtype.
- The registry imports a backend only when it is asked for.
- The ops package skeleton is the same in the student's tree and the
  reference; the chapter names every course test and fixture.

The course tests (course/tests/L7.3x) run on the reference, and a fresh stub
fails each of them, in tests/core/test_runner.py.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from helpers.fixture_checks import assert_regenerates_exactly, run_oracle
from ol.core.overlay import install_overlay, remove_overlay
from helpers.reference import reference_mapping

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "course" / "reference" / "python"
ORACLES = {  # fixture -> its oracle script
    REPO / "fixtures" / "L7.3x" / "axial_physicsnemo.npz": REPO / "oracle" / "L7.3x" / "axial_physicsnemo.py",
    REPO / "fixtures" / "L7.3x" / "mrope_hf.npz": REPO / "oracle" / "L7.3x" / "mrope_hf.py",
}
MAX_BYTES = 1_000_000

sys.path.insert(0, str(REPO / "course" / "tests"))
from golden import load_fixture  # noqa: E402


@pytest.fixture(scope="module")
def ref():
    """The reference tinyllm, imported in this process over the student's
    skeleton through ol's overlay; removed again after this file's tests."""
    mapping = reference_mapping()
    saved = {n: sys.modules.pop(n) for n in list(sys.modules) if n == "tinyllm" or n.startswith("tinyllm.")}
    finder = install_overlay(mapping)
    try:
        yield importlib.import_module
    finally:
        remove_overlay(finder)
        for name in [n for n in sys.modules if n == "tinyllm" or n.startswith("tinyllm.")]:
            del sys.modules[name]
        sys.modules.update(saved)


# ---- the oracles reproduce the committed fixtures ------------------------------


@pytest.fixture(scope="module", params=list(ORACLES), ids=lambda p: p.name)
def regenerated(request, tmp_path_factory):
    """(committed fixture, the same fixture written now by its oracle into a temporary folder)."""
    fixture, oracle = request.param, ORACLES[request.param]
    out = tmp_path_factory.mktemp("oracle")
    run_oracle(oracle, out, REPO)
    return fixture, out / fixture.name


@pytest.mark.slow
def test_oracle_regenerates_the_committed_arrays_and_provenance(regenerated):
    committed_path, fresh_path = regenerated
    assert_regenerates_exactly(committed_path, fresh_path, f"python {ORACLES[committed_path].relative_to(REPO)}")


@pytest.mark.parametrize("fixture", list(ORACLES), ids=lambda p: p.name)
def test_fixture_is_small_loads_and_every_key_is_documented(fixture):
    assert fixture.stat().st_size < MAX_BYTES, f"{fixture} is {fixture.stat().st_size} bytes"
    loaded = load_fixture(fixture)
    docstring = ORACLES[fixture].read_text()
    undocumented = [key for key in loaded if key not in docstring]
    assert not undocumented, f"keys missing from the docstring of {ORACLES[fixture].name}: {undocumented}"


def test_physicsnemo_fixture_records_the_pinned_versions_and_the_source_file():
    provenance = load_fixture(REPO / "fixtures" / "L7.3x" / "axial_physicsnemo.npz").provenance
    assert provenance["versions"]["nvidia-physicsnemo"] == "2.2.2"
    assert provenance["versions"]["torch"].split("+")[0] == "2.13.0"
    assert provenance["source"]["file"] == "physicsnemo/nn/module/rope.py"
    assert re.fullmatch(r"[0-9a-f]{64}", provenance["source"]["sha256"])
    assert "must be divisible by 4" in provenance["errors"]["build_axial_rope_cos_sin_2d(4, 4, head_dim=18)"]


def test_the_test_setup_installs_the_physicsnemo_the_oracle_pins():
    pin = re.search(r'^PHYSICSNEMO = "([^"]+)"', ORACLES[REPO / "fixtures" / "L7.3x" / "axial_physicsnemo.npz"]
                    .read_text(), re.M).group(1)
    setup = (REPO / "tests" / "setup.sh").read_text()
    assert f"--no-deps nvidia-physicsnemo=={pin}" in setup, (
        f"tests/setup.sh (the README's test setup, run by .ci/run) must install nvidia-physicsnemo=={pin} with --no-deps"
    )
    assert "tests/setup.sh" in (REPO / ".ci" / "run").read_text()


# ---- the half-precision facts the chapter states (section 10) --------------------


def test_float16_and_bfloat16_hold_positions_exactly_only_up_to_2048_and_256():
    def rounded(values, dtype):
        with np.errstate(over="ignore"):  # 65520 overflows float16, on purpose
            return np.array(values, dtype=np.float64).astype(dtype).astype(np.float64).tolist()

    every = np.arange(0, 2049)
    assert rounded(every, np.float16) == every.tolist(), "float16: every integer up to 2048 is exact"
    assert rounded([2049, 2051, 4097, 65504, 65519, 65520], np.float16) == [2048, 2052, 4096, 65504, 65504, np.inf]
    every = np.arange(0, 257)
    assert rounded(every, ml_dtypes.bfloat16) == every.tolist(), "bfloat16: every integer up to 256 is exact"
    assert rounded([257, 1995, 8191, 15962], ml_dtypes.bfloat16) == [256, 1992, 8192, 15936]


def test_float16_angles_go_wrong_past_2048(ref):
    inv_freq = ref("tinyllm.modern.rope_tables").rope_inv_freq(64, 10000.0)  # Llama's ladder
    positions = np.arange(4097)
    exact = positions.astype(np.float32)[:, None] * inv_freq  # [P, 32]: one float32 product
    through_half = positions.astype(np.float16).astype(np.float32)[:, None] * inv_freq
    error = np.abs(exact - through_half).max(axis=1)  # per position
    assert np.all(error[:2049] == 0), "positions up to 2048 give the same angles"
    assert error[2049] == 1.0, "2049 becomes 2048: pair 0 (frequency 1) is a whole radian off"
    assert np.all(error[2049:4096:2] > 0) and error.max() == 1.0, "in [2048, 4096) float16 steps by 2: odd ones move"


def test_bfloat16_frequencies_and_half_precision_tables_lose_the_angles(ref):
    inv_freq = ref("tinyllm.modern.rope_tables").rope_inv_freq(128, 10000.0)
    rounded = inv_freq.astype(ml_dtypes.bfloat16).astype(np.float32)

    def worst_angle_error(length, wrap=False):
        p = np.arange(length, dtype=np.float32)[:, None]
        error = (p * inv_freq).astype(np.float64) - p * rounded
        return float(np.abs((error + np.pi) % (2 * np.pi) - np.pi).max() if wrap else np.abs(error).max())

    assert worst_angle_error(512) == pytest.approx(0.625, abs=1e-3)
    assert worst_angle_error(2048) == pytest.approx(2.50, abs=1e-2)
    assert worst_angle_error(4096, wrap=True) > 3.1, "some angle is nearly pi off: no position information left"
    cos = np.cos(np.arange(4096, dtype=np.float32)[:, None] * inv_freq)
    assert np.abs(cos.astype(ml_dtypes.bfloat16).astype(np.float32) - cos).max() == pytest.approx(2.0**-9)
    assert np.abs(cos.astype(np.float16).astype(np.float32) - cos).max() == pytest.approx(2.0**-12)


def test_the_chapters_worked_example(ref):
    tables = ref("tinyllm.modern.rope_tables")
    chapter = (REPO / "course" / "chapters" / "L7.3x-production-rope.md").read_text()
    token = np.array([[1], [2]])  # row 1, column 2
    examples = {"per_axis": "(1, 0.1, 2, 0.2)", "shared": "(1, 0.3162, 0.2, 0.0632)"}
    for frequencies, printed in examples.items():
        cos, sin = tables.multi_axis_rope_cos_sin(token, (2, 2), 100.0, frequencies=frequencies)
        angles = np.arctan2(sin, cos)[0]
        assert printed in chapter
        np.testing.assert_allclose(angles, [float(v) for v in printed.strip("()").split(", ")], atol=5e-5)
    axial_cos, axial_sin = tables.axial_rope_cos_sin((2, 3), 8, 100.0)
    np.testing.assert_allclose(np.arctan2(axial_sin, axial_cos)[1, 2], [1, 0.1, 2, 0.2], atol=1e-6)


# ---- the backends at the benchmark's size ------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16], ids=lambda d: np.dtype(d).name)
def test_backends_give_the_same_bits_at_the_benchmark_size(ref, dtype):
    registry = ref("tinyllm.ops.registry")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 32, 512, 128)).astype(dtype)
    positions = rng.integers(0, 40960, size=(1, 512))
    outputs = {b: registry.get_op("rope", backend=b).forward(x, positions) for b in registry.backends("rope")}
    assert set(outputs) == {"numpy", "native"}
    for name, out in outputs.items():
        assert out.dtype == x.dtype and out.tobytes() == outputs["numpy"].tobytes(), f"{name} differs from numpy"


def test_registry_imports_a_backend_only_when_asked_for():
    code = (
        "import sys\n"
        "from tinyllm.ops.registry import backends, get_op\n"
        "assert backends('rope') == ('numpy', 'native')\n"
        "get_op('rope')\n"
        "assert 'tinyllm.ops.rope_native' not in sys.modules and 'tinyllm.native' not in sys.modules\n"
        "get_op('rope', backend='native')\n"
        "assert 'tinyllm.native' in sys.modules\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REFERENCE)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert run.returncode == 0, run.stderr


# ---- the skeleton, the catalog and the chapter --------------------------------------


def test_the_student_tree_is_the_reference_package_skeleton():
    tracked = subprocess.run(["git", "ls-files", "python/tinyllm"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.split()
    assert tracked and all(path.endswith("/__init__.py") for path in tracked), (
        f"the repository's student tree holds only package skeletons (ol start writes the rest), got {tracked}"
    )
    for path in tracked:
        reference = REFERENCE / Path(path).relative_to("python")
        assert (REPO / path).read_text() == reference.read_text(), f"{path} differs from {reference}"


def test_the_chapter_names_every_course_test_and_fixture():
    chapter = (REPO / "course" / "chapters" / "L7.3x-production-rope.md").read_text()
    tests = sorted({name for path in (REPO / "course" / "tests" / "L7.3x").glob("test_*.py")
                    for name in re.findall(r"^def (test_\w+)", path.read_text(), re.M)})
    assert len(tests) >= 20
    missing = [name for name in tests if f"`{name}`" not in chapter]
    assert not missing, f"the chapter's test table misses {missing}"
    for fixture in ("fixtures/L7.3/rope_hf.npz", "fixtures/L7.3x/axial_physicsnemo.npz", "fixtures/L7.3x/mrope_hf.npz"):
        assert fixture in chapter
