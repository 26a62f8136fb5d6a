"""L7.3x course tests, part 1: RoPE as a production operator (tinyllm.ops).

What each test checks, and why, is the table in section 12 of the chapter
(course/chapters/L7.3x-production-rope.md).  Every test runs on every backend
the contract names (BACKENDS), and the dtype tests on float32, float16 and
bfloat16.  The Qwen3 test reads fixtures/L7.3/rope_hf.npz (the `rope_hf`
fixture: transformers 5.19.0 on torch 2.13.0).
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import apply_rope, rope_cos_sin
from tinyllm.modern.rope_tables import rope_inv_freq
from tinyllm.ops import UnknownOpError, backends, get_op, ops

BACKENDS = ("numpy", "native")  # the contract's backends; the reference ("numpy") first
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}

# numpy's float32 cos/sin and torch's (MKL) differ by up to 2 ulp on the same
# angle: 2 ulp of a value near 1 is 1.2e-7 (fixtures/L7.3/README.md).
TABLE_ATOL = 2.5e-7

CASES = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def same_bits(a, b) -> bool:
    """Equal shape, dtype and bytes (so -0.0 != 0.0 and nan payloads count)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def assert_same_bits(got, want, what, hint):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}. {hint}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}. {hint}"
    if not same_bits(got, want):
        g, w = got.astype(np.float32), want.astype(np.float32)
        differ = g.view(np.uint32) != w.view(np.uint32)
        first = tuple(int(i) for i in np.argwhere(differ)[0])
        pytest.fail(f"{what}: {int(differ.sum())} of {differ.size} entries differ; the first at {first}: "
                    f"got {g[first]!r}, expected {w[first]!r}.\n  Look at: {hint}")


@st.composite
def rope_inputs(draw, per_row_positions=None):
    """x [B, H, S, D] float32 and integer positions [S] or [B, S]."""
    B, H, S = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 7))
    D = draw(st.sampled_from([2, 4, 6, 16, 64, 128]))
    per_row = draw(st.booleans()) if per_row_positions is None else per_row_positions
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    top = draw(st.sampled_from([7, 2049, 40959, 1_000_000]))
    positions = rng.integers(0, top + 1, size=(B, S) if per_row else (S,))
    positions.flat[-1] = top  # always the largest position
    x = (rng.standard_normal((B, H, S, D)) * draw(st.sampled_from([1e-3, 1.0, 1e3]))).astype(np.float32)
    theta = draw(st.sampled_from([10000.0, 500000.0, 1_000_000.0]))
    return x, positions, theta


# ---- the registry (chapter section 2) ----


def test_registry_lists_the_backends_and_names_the_known_ones():
    assert "rope" in ops()
    listed = backends("rope")
    assert listed[0] == "numpy" and set(BACKENDS) <= set(listed), (
        f"backends('rope') must list the reference 'numpy' first and 'native'; got {listed}"
    )
    assert get_op("rope").backend == "numpy", "backend=None gives the reference backend"
    for name in BACKENDS:
        op = get_op("rope", backend=name)
        assert op.backend == name and op.name == "rope"
    with pytest.raises(UnknownOpError) as caught:
        get_op("rope", backend="cuda")
    assert isinstance(caught.value, LookupError)
    assert all(s in str(caught.value) for s in ("'cuda'", "'numpy'", "'native'")), (
        f"the error must name the unknown backend and list the known ones, got: {caught.value}"
    )
    with pytest.raises(UnknownOpError) as caught:
        get_op("rotary")
    assert "'rotary'" in str(caught.value) and "'rope'" in str(caught.value), str(caught.value)
    with pytest.raises(UnknownOpError):
        backends("rotary")


# ---- the dtype contract (section 3) ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
@CASES
@given(case=rope_inputs())
def test_forward_returns_x_dtype_and_equals_forward_fp32_cast(backend, dtype, case):
    x, positions, theta = case
    x = x.astype(DTYPES[dtype])
    op = get_op("rope", backend=backend)
    out, out32 = op.forward(x, positions, theta=theta), op.forward_fp32(x, positions, theta=theta)
    assert out.dtype == x.dtype, f"forward must return x's dtype {x.dtype}, got {out.dtype}"
    assert out32.dtype == np.float32, f"forward_fp32 must return float32, got {out32.dtype}"
    assert out.shape == out32.shape == x.shape
    assert_same_bits(out, out32.astype(x.dtype), f"{backend} forward vs forward_fp32(...).astype({dtype})",
                     "forward computes in float32 (forward_fp32) and casts once at the end, with astype")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
@CASES
@given(case=rope_inputs())
def test_every_backend_equals_the_textbook_rotation_bitwise(backend, dtype, case):
    # The textbook: L7.3's rope_cos_sin and apply_rope (half layout) on x converted to float32.
    x, positions, theta = case
    x = x.astype(DTYPES[dtype])
    cos, sin = rope_cos_sin(positions, rope_inv_freq(x.shape[-1], theta))
    if positions.ndim == 2:
        cos, sin = cos[:, None], sin[:, None]  # [B, 1, S, D/2]
    textbook = apply_rope(Tensor(x.astype(np.float32)), cos, sin, layout="half").data
    got = get_op("rope", backend=backend).forward_fp32(x, positions, theta=theta)
    assert_same_bits(got, textbook, f"{backend} forward_fp32 vs apply_rope(rope_cos_sin(positions, "
                     f"rope_inv_freq(D, theta))), x {x.shape} {dtype}, positions {positions.shape}",
                     "half layout (pairs i, i + D/2); tables from rope_cos_sin in float32; a*c - b*s and "
                     "a*s + b*c in float32 with no fused multiply-add; [B, S] positions broadcast over heads")


# ---- positions [S] and [B, S] (section 4) ----


@pytest.mark.parametrize("backend", BACKENDS)
@CASES
@given(case=rope_inputs(per_row_positions=False))
def test_positions_S_and_BS_with_identical_rows_agree(backend, case):
    x, positions, theta = case
    per_row = np.broadcast_to(positions, (x.shape[0], positions.size)).copy()  # [B, S], every row the same
    op = get_op("rope", backend=backend)
    assert_same_bits(op.forward_fp32(x, per_row, theta=theta), op.forward_fp32(x, positions, theta=theta),
                     f"{backend}: positions [B, S] with identical rows vs positions [S]",
                     "[S] positions serve every sequence; [B, S] gives row b its own positions")


@pytest.mark.parametrize("backend", BACKENDS)
def test_positions_BS_give_each_sequence_its_own(backend):
    rng = np.random.default_rng(7)
    x = np.broadcast_to(rng.standard_normal((1, 2, 3, 8)).astype(np.float32), (2, 2, 3, 8)).copy()  # equal rows
    op = get_op("rope", backend=backend)
    out = op.forward_fp32(x, np.array([[0, 1, 2], [5, 6, 7]]), theta=10000.0)
    assert not np.array_equal(out[0], out[1]), "rows at different positions must turn differently"
    assert_same_bits(out[1], op.forward_fp32(x[1:], np.array([5, 6, 7]), theta=10000.0)[0],
                     f"{backend}: row 1 of [B, S] positions vs that row alone", "positions[b] belong to x[b]")


# ---- batch invariance (section 5) ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
@CASES
@given(case=rope_inputs())
def test_batch_invariance_bitwise(backend, dtype, case):
    x, positions, theta = case
    x = x.astype(DTYPES[dtype])
    op = get_op("rope", backend=backend)
    whole = op.forward(x, positions, theta=theta)
    for b in range(x.shape[0]):
        alone = op.forward(x[b : b + 1], positions[b : b + 1] if positions.ndim == 2 else positions, theta=theta)
        assert_same_bits(whole[b : b + 1], alone, f"{backend} {dtype}: row {b} of a batch of {x.shape[0]} "
                         "vs that row alone", "nothing may depend on the batch: no per-batch tables, "
                         "reductions or block sizes that change with B")


# ---- Qwen3 (section 6) ----


def qwen3_tolerances(rope_hf, x_max):
    """(table atol, output atol) for our op against HF's Qwen3 outputs.

    Our rope_inv_freq(128, 1e6) equals HF's inv_freq except where torch's powf
    is 1 ulp off (index 37): there the angle p * f moves by up to p * |delta f|,
    and its float32 rounding by one more ulp of the angle.  On top come the 2 ulp
    of cos/sin (TABLE_ATOL).  A rotated entry a*c - b*s moves by at most
    2 * max|x| * (table error), plus the rounding of the products and the sum.
    """
    ours, hf = rope_inv_freq(128, 1e6).astype(np.float64), rope_hf["qwen3/inv_freq"].astype(np.float64)
    top = float(rope_hf["qwen3/apply_positions"].max())  # 40959
    delta = np.abs(ours - hf)
    moved = np.where(delta > 0, top * delta + np.spacing(np.float32(top * hf)), 0.0)
    table_atol = TABLE_ATOL + moved.max()
    return table_atol, 2 * x_max * table_atol + 4 * float(np.spacing(np.float32(x_max)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_qwen3_queries_and_keys_match_hf(backend, rope_hf):
    # Qwen3: theta 1e6, head_dim 128, 4 query heads share 1 key/value head; per-row positions up to 40959.
    positions = rope_hf["qwen3/apply_positions"]  # [2, 6]
    op = get_op("rope", backend=backend)
    ours, hf = rope_inv_freq(128, 1e6), rope_hf["qwen3/inv_freq"]
    np.testing.assert_array_max_ulp(ours, hf, maxulp=1)  # the ladder: at most 1 ulp from HF's
    for name, heads in (("q", 4), ("k", 1)):
        x, want = rope_hf[f"qwen3/{name}"], rope_hf[f"qwen3/{name}_out"]
        assert x.shape == (2, heads, 6, 128)
        _, atol = qwen3_tolerances(rope_hf, float(np.abs(x).max()))
        got = op.forward_fp32(x, positions, theta=1_000_000.0)
        diff = np.abs(got.astype(np.float64) - want)
        assert diff.max() <= atol, (
            f"{backend} {name} vs HF qwen3 apply_rotary_pos_emb: max |diff| {diff.max():.3g} > atol {atol:.3g} "
            f"at {np.unravel_index(diff.argmax(), diff.shape)}. Look at: theta (1e6), the half layout, "
            "per-row positions [B, S] shared by every head (4 for q, 1 for k)"
        )
        assert_same_bits(op.forward_fp32(x, positions), got, f"{backend} {name}: forward_fp32 without theta",
                         "theta defaults to 1_000_000.0, Qwen3's base")


# ---- half precision (section 10) ----


@pytest.mark.parametrize("backend", BACKENDS)
def test_float16_positions_go_wrong_past_2048(backend):
    # The same vector at positions 2046 .. 2051: every position turns it differently.
    op = get_op("rope", backend=backend)
    x = np.broadcast_to(np.arange(1, 9, dtype=np.float32), (1, 1, 6, 8)).copy()
    positions = np.arange(2046, 2052)
    exact = op.forward_fp32(x, positions, theta=10000.0)
    assert len({row.tobytes() for row in exact[0, 0]}) == 6, "six positions, six different rotations"
    # Held in float16, positions up to 2048 survive, and past it they snap to even numbers.
    snapped = positions.astype(np.float16).astype(np.int64)
    assert snapped.tolist() == [2046, 2047, 2048, 2048, 2050, 2052]
    wrong = op.forward_fp32(x, snapped, theta=10000.0)
    assert_same_bits(wrong[0, 0, :3], exact[0, 0, :3], f"{backend}: positions <= 2048", "exact in float16")
    assert same_bits(wrong[0, 0, 3], exact[0, 0, 2]), "2049 in float16 is 2048: the token gets 2048's angle"
    assert not same_bits(wrong[0, 0, 3], exact[0, 0, 3])
    # The angle of pair 0 (inv_freq 1) is off by a whole radian at 2049.
    assert np.float32(np.float16(2049)) * rope_inv_freq(8, 10000.0)[0] == np.float32(2048.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype, says", [(np.float16, "2048"), (ml_dtypes.bfloat16, "256"), (np.float32, "integer")])
def test_positions_held_in_floats_are_refused(backend, dtype, says):
    x = np.ones((1, 1, 3, 4), np.float32)
    with pytest.raises(TypeError) as caught:
        get_op("rope", backend=backend).forward(x, np.arange(3).astype(dtype))
    message = str(caught.value)
    assert np.dtype(dtype).name in message and says in message, (
        f"the error must name the dtype and say why positions cannot be held in it, got: {message}"
    )


# ---- the argument checks (section 11) ----


def bad(**change):
    args = {"x": np.ones((2, 2, 3, 4), np.float32), "positions": np.arange(3), "theta": 10000.0}
    args.update(change)
    return args


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "args, error",
    [
        pytest.param(bad(x=np.ones((2, 2, 3, 4))), TypeError, id="float64-x"),
        pytest.param(bad(x=np.ones((2, 2, 3, 4), np.int32)), TypeError, id="int-x"),
        pytest.param(bad(x=[[[[1.0, 2.0]]]]), TypeError, id="list-x"),
        pytest.param(bad(x=Tensor(np.ones((2, 2, 3, 4), np.float32))), TypeError, id="Tensor-x"),
        pytest.param(bad(x=np.ones((2, 3, 4), np.float32)), ValueError, id="3d-x"),
        pytest.param(bad(x=np.ones((2, 2, 3, 5), np.float32)), ValueError, id="odd-head-dim"),
        pytest.param(bad(positions=np.arange(4)), ValueError, id="S-mismatch"),
        pytest.param(bad(positions=np.zeros((3, 3), np.int64)), ValueError, id="B-mismatch"),
        pytest.param(bad(positions=np.zeros((2, 1, 3), np.int64)), ValueError, id="3d-positions"),
        pytest.param(bad(positions=np.array([0, -1, 2])), ValueError, id="negative-position"),
        pytest.param(bad(positions=np.array([True, False, True])), TypeError, id="bool-positions"),
        pytest.param(bad(theta=0.0), ValueError, id="zero-theta"),
        pytest.param(bad(theta=float("nan")), ValueError, id="nan-theta"),
        pytest.param(bad(theta="1e6"), TypeError, id="string-theta"),
    ],
)
def test_argument_errors(backend, args, error):
    with pytest.raises(error):
        get_op("rope", backend=backend).forward(args["x"], args["positions"], theta=args["theta"])
