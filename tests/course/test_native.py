"""Kit tests of the native kernel tl_rope_f32 (course module L9.6).

- The C test driver tests/native/test_tl_rope.c, built with AddressSanitizer
  and UndefinedBehaviorSanitizer, runs clean; and the same build does report
  an off-by-one in the kernel and undefined behaviour, so a clean run means
  something.
- The binding (course/reference/python/tinyllm/native/) agrees with two
  oracles written here: the formula in numpy float32 (bit for bit) and
  complex multiplication in float64 (to rounding), over random shapes and
  broadcasts of the tables, positions up to 65535.
- The L9.6 course tests, which compare the C with the reference apply_rope,
  pass on the reference tree.
- (The binding's own argument checks, which run before any C, are in
  tests/course/test_bad_input.py, beside the reference's.)
- Without a working C compiler the install stops with a message saying what
  to install.

The binding is loaded from its file under a private name, so this process
never imports the reference `tinyllm` over the student's.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "course" / "reference" / "python"
KERNEL = REFERENCE / "tinyllm" / "native" / "tl_rope.c"
BINDING = REFERENCE / "tinyllm" / "native" / "__init__.py"
HEADER_DIR = REPO / "course" / "contracts" / "c"
DRIVER = REPO / "tests" / "native" / "test_tl_rope.c"


def load_binding(name: str = "tinyllm_native_under_test"):
    spec = importlib.util.spec_from_file_location(name, BINDING)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def native():
    return load_binding()


# ---- the C driver under the sanitizers ----

SANITIZE = [
    "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-g", "-O1", "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-ffp-contract=off",
]  # fmt: skip
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:abort_on_error=0",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
}
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:")


def c_compiler() -> list[str]:
    """$CC, else cc, gcc or clang; fails (never skips) when there is none."""
    for candidate in (os.environ.get("CC", ""), "cc", "gcc", "clang"):
        words = candidate.split()
        if words and shutil.which(words[0]):
            return words
    pytest.fail(
        "no C compiler found (tried $CC, cc, gcc, clang): the sanitizer build of the C driver needs one. "
        "Install gcc or clang (Debian/Ubuntu: apt-get install build-essential) or set CC."
    )


def sanitized_run(tmp_path: Path, kernel_source: str, *, driver_source: str | None = None):
    """Compile kernel_source with the driver (or another main) under ASan and
    UBSan, run it, and return the finished process."""
    kernel = tmp_path / "tl_rope.c"
    kernel.write_text(kernel_source)
    driver = DRIVER
    if driver_source is not None:
        driver = tmp_path / "main.c"
        driver.write_text(driver_source)
    exe = tmp_path / "test_tl_rope"
    command = [*c_compiler(), *SANITIZE, f"-I{HEADER_DIR}", str(kernel), str(driver), "-lm", "-o", str(exe)]
    built = subprocess.run(command, capture_output=True, text=True)
    assert built.returncode == 0, f"the sanitizer build failed:\n$ {' '.join(command)}\n{built.stderr}"
    return subprocess.run([str(exe)], capture_output=True, text=True, env={**os.environ, **SANITIZER_ENV}, timeout=300)


def test_c_driver_runs_clean_under_address_and_undefined_behaviour_sanitizers(tmp_path):
    run = sanitized_run(tmp_path, KERNEL.read_text())
    report = SANITIZER_REPORT.search(run.stderr)
    assert run.returncode == 0 and not report, (
        f"the C driver failed (exit {run.returncode}) under ASan/UBSan:\n{run.stdout}\n{run.stderr}"
    )
    assert run.stdout.startswith("OK:"), f"the driver did not report its checks:\n{run.stdout}"


def test_the_sanitizer_build_reports_an_off_by_one_in_the_kernel(tmp_path):
    source = KERNEL.read_text()
    loop = "for (int64_t i = 0; i < h; i++)"
    assert loop in source, "the kernel's pair loop changed; update this test's off-by-one"
    run = sanitized_run(tmp_path, source.replace(loop, "for (int64_t i = 0; i <= h; i++)"))
    assert run.returncode != 0 and SANITIZER_REPORT.search(run.stderr), (
        "a kernel that reads and writes one pair past the end passed under ASan: the sanitizer run proves nothing\n"
        + run.stderr[-2000:]
    )


def test_the_sanitizer_build_reports_undefined_behaviour(tmp_path):
    overflow = (
        "#include <limits.h>\n"
        "int main(int argc, char **argv) { (void)argv; int i = INT_MAX; i += argc; return i == 0; }\n"
    )
    run = sanitized_run(tmp_path, KERNEL.read_text(), driver_source=overflow)
    assert run.returncode != 0 and "runtime error:" in run.stderr, (
        "signed overflow passed under UBSan with these flags: the sanitizer run proves nothing\n" + run.stderr
    )


# ---- the install without a compiler ----


@pytest.mark.parametrize(
    "cc, says",
    [("/nonexistent/bin/cc", "needs a C compiler"), ("false", "could not build its native kernel")],
    ids=["no compiler", "compiler fails"],
)
def test_building_without_a_working_compiler_says_what_to_do(tmp_path, cc, says):
    command = [sys.executable, "setup.py", "-q", "build_ext", "--force",
               "--build-temp", str(tmp_path / "temp"), "--build-lib", str(tmp_path / "lib")]  # fmt: skip
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env={**os.environ, "CC": cc})
    output = run.stdout + run.stderr
    assert run.returncode != 0, f"the build with CC={cc} succeeded?\n{output}"
    assert says in output and "gcc or clang" in output, f"the message does not say what to do:\n{output[-3000:]}"


# ---- the binding against oracles written here ----


def inv_freq_for(r: int, base: float = 10000.0) -> np.ndarray:
    return (1.0 / base ** (np.arange(0, r, 2, dtype=np.float32) / np.float32(r))).astype(np.float32)


def pair_slices(layout: str, r: int):
    return (slice(0, r // 2), slice(r // 2, r)) if layout == "half" else (slice(0, r, 2), slice(1, r, 2))


def formula_oracle(x, cos, sin, layout, r, inverse):
    """(a, b) -> (a c - b s, a s + b c) in numpy float32, with s = -sin for the inverse."""
    s = -sin if inverse else sin
    ia, ib = pair_slices(layout, r)
    a, b = x[..., ia], x[..., ib]
    out = x.copy()
    out[..., ia] = a * cos - b * s
    out[..., ib] = a * s + b * cos
    return out


def complex_oracle(x, angles, layout, r, inverse):
    """(a + ib) e^{+-i angle} in float64, from the float32 angles."""
    ia, ib = pair_slices(layout, r)
    z = x[..., ia].astype(np.float64) + 1j * x[..., ib].astype(np.float64)
    z = z * np.exp((-1j if inverse else 1j) * angles.astype(np.float64))
    out = x.astype(np.float64)
    out[..., ia], out[..., ib] = z.real, z.imag
    return out


@st.composite
def broadcast_cases(draw):
    """x with 0 to 4 leading axes; tables whose leading axes are each either
    x's or 1 (a broadcast), with some leading 1s dropped."""
    lead = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=4)))
    table_lead = tuple(n if draw(st.booleans()) else 1 for n in lead)
    leading_ones = len(table_lead) - len(tuple(itertools.dropwhile(lambda n: n == 1, table_lead)))
    table_lead = table_lead[draw(st.integers(0, leading_ones)) :]
    head_dim = draw(st.integers(2, 40))
    r = 2 * draw(st.integers(1, head_dim // 2))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    positions = rng.integers(0, 65536, size=table_lead)
    if positions.size:
        positions.flat[0] = 65535
    angles = positions.astype(np.float32)[..., None] * inv_freq_for(r, draw(st.sampled_from([1e4, 5e5])))
    x = (rng.standard_normal(lead + (head_dim,)) * 10.0 ** draw(st.integers(-3, 3))).astype(np.float32)
    return dict(x=x, angles=angles, cos=np.cos(angles), sin=np.sin(angles), r=r,
                layout=draw(st.sampled_from(["half", "interleaved"])), inverse=draw(st.booleans()))  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(broadcast_cases())
def test_binding_agrees_with_the_formula_and_the_complex_product(native, case):
    x, cos, sin, r, layout, inverse = (case[k] for k in ("x", "cos", "sin", "r", "layout", "inverse"))
    where = f"x {x.shape}, tables {cos.shape}, r={r}, layout={layout}, inverse={inverse}"
    got = native.tl_rope_f32(x, cos, sin, layout=layout, rotary_dim=r, inverse=inverse)
    want = formula_oracle(x, cos, sin, layout, r, inverse)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), f"not the float32 formula bit for bit: {where}"
    exact = complex_oracle(x, case["angles"], layout, r, inverse)
    # float32 cos/sin are within 1 ulp of the true values, and each output is two rounded products and a sum.
    tolerance = 4e-7 * (np.abs(x).max(initial=0.0) + 1e-30)
    assert np.abs(got - exact).max(initial=0.0) <= tolerance, f"far from the complex product: {where}"
    y = x.copy()
    assert native.tl_rope_f32(y, cos, sin, layout=layout, rotary_dim=r, inverse=inverse, out=y) is y
    assert np.array_equal(y.view(np.uint32), got.view(np.uint32)), f"in place differs from out of place: {where}"


@pytest.mark.parametrize(
    "x_shape, table_shape, rows",  # rows: (row_shape, table_stride) as tl_rope.h describes them
    [
        ((2, 3, 5, 8), (5, 4), ([6, 5], [0, 1])),  # [S] shared by B*H heads: two axes after merging
        ((2, 3, 5, 8), (2, 1, 5, 4), ([2, 3, 5], [5, 0, 1])),  # per sequence, shared by H heads
        ((2, 3, 5, 8), (2, 3, 5, 4), ([30], [1])),  # a table row per row: one axis
        ((5, 3, 8), (5, 1, 4), ([5, 3], [1, 0])),  # token-major: each token's heads share a row
        ((8,), (4,), ([], [])),  # one row: ndim 0
        ((1, 3, 1, 8), (1, 4), ([3], [0])),  # length-1 axes drop out
    ],
)
def test_broadcast_becomes_few_axes_and_strides_without_copying_the_tables(native, x_shape, table_shape, rows):
    got = native._table_rows(x_shape, table_shape, table_shape, 8)
    assert got == rows, f"(row_shape, table_stride) for the C: got {got}, expected {rows}"


def test_tinyllm_native_lib_loads_another_build_of_tl_rope(tmp_path, monkeypatch, native):
    library = tmp_path / "libtl_rope_student.so"
    command = [*c_compiler(), "-std=c99", "-O2", "-ffp-contract=off", "-fPIC", "-shared", f"-I{HEADER_DIR}",
               str(KERNEL), "-o", str(library)]  # fmt: skip
    built = subprocess.run(command, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    monkeypatch.setenv("TINYLLM_NATIVE_LIB", str(library))
    other = load_binding("tinyllm_native_other_build")
    assert other.LIBRARY_PATH == str(library)
    x = np.random.default_rng(0).standard_normal((3, 16)).astype(np.float32)
    cos, sin = np.cos(np.ones((3, 8), np.float32)), np.sin(np.ones((3, 8), np.float32))
    assert np.array_equal(other.tl_rope_f32(x, cos, sin), native.tl_rope_f32(x, cos, sin))
    monkeypatch.setenv("TINYLLM_NATIVE_LIB", str(tmp_path / "missing.so"))
    with pytest.raises(ImportError, match="TINYLLM_NATIVE_LIB"):
        load_binding("tinyllm_native_missing_build")


# ---- the course tests of L9.6, on the reference tree ----


def test_l9_6_course_tests_pass_on_the_reference():
    env = {**os.environ, "PYTHONPATH": str(REFERENCE)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(REPO / "course" / "tests" / "L9.6")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, (
        f"course/tests/L9.6 failed on the reference:\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
    )
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]
