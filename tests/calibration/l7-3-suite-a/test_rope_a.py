"""L7.3 graded tests, student A: parametrized fixed cases against a float64
complex-multiplication oracle (chapter section 13)."""

import math

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin

ATOL = 1e-6


def ladder(r, base=10000.0):
    """theta_i = base^(-2i/r) in float32, as section 4 describes it."""
    return (1.0 / (base ** (np.arange(0, r, 2, dtype=np.float64) / r))).astype(np.float32)


def hf_angles(positions, inv_freq):
    """One float32 product per angle (section 6), then float64 for cos/sin."""
    p = np.asarray(positions, dtype=np.float32)[..., None]
    return (p * np.asarray(inv_freq, dtype=np.float32)).astype(np.float64)


def pair_slots(r, layout):
    """Indices of the first and second members of each pair inside x[..., :r]."""
    if layout == "half":
        return np.arange(r // 2), np.arange(r // 2, r)
    return np.arange(0, r, 2), np.arange(1, r, 2)


def oracle(x, positions, inv_freq, layout, rotary_dim=None, scaling=1.0, direction=1.0):
    """Rotate x by complex multiplication in float64: pair (a, b) -> (a + ib) e^{i p theta} s."""
    x = np.asarray(x, dtype=np.float64)
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    first, second = pair_slots(r, layout)
    z = x[..., first] + 1j * x[..., second]
    z = z * np.exp(1j * direction * hf_angles(positions, inv_freq)) * scaling
    out = x.copy()
    out[..., first] = z.real
    out[..., second] = z.imag
    return out


def random_x(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# --------------------------------------------------------------------------
# apply_rope against the oracle: both layouts, partial rotary, both dtypes

CASES = [
    # (x shape,        positions,             head_dim r)
    ((8,), 3, None),
    ((5, 8), np.arange(1, 6), None),
    ((2, 3, 5, 8), np.arange(5) + 7, None),
    ((2, 3, 4, 12), np.array([1, 2, 9, 40]), 4),
    ((3, 16), np.array([5, 11, 17]), 8),
    ((4, 10), np.array([2, 3, 4, 5]), 2),
    ((2, 6), np.array([13, 1]), 6),
    ((3, 2), np.array([0, 1, 7]), None),  # a single pair is the whole head
]


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("shape,positions,rotary_dim", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_apply_rope_matches_oracle(layout, shape, positions, rotary_dim, dtype):
    head_dim = shape[-1]
    r = head_dim if rotary_dim is None else rotary_dim
    inv_freq = ladder(r, base=100.0)
    x = random_x(shape, dtype, seed=head_dim + r)
    cos, sin = rope_cos_sin(positions, inv_freq)
    y = apply_rope(Tensor(x), cos, sin, layout, rotary_dim)
    assert y.shape == x.shape
    assert y.dtype == x.dtype
    np.testing.assert_allclose(y.data, oracle(x, positions, inv_freq, layout, rotary_dim), rtol=0, atol=ATOL)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_partial_rotary_tail_is_untouched(layout):
    x = random_x((3, 4, 10), seed=3)
    cos, sin = rope_cos_sin(np.arange(1, 5), ladder(4))
    y = apply_rope(Tensor(x), cos, sin, layout, rotary_dim=4)
    np.testing.assert_array_equal(y.data[..., 4:], x[..., 4:])
    assert not np.allclose(y.data[..., :4], x[..., :4])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rotary_dim", [None, 4])
def test_layout_defaults_to_half(dtype, rotary_dim):
    positions = np.array([1, 6, 20])
    inv_freq = ladder(4 if rotary_dim else 8, base=100.0)
    x = random_x((2, 3, 8), dtype, seed=40)
    cos, sin = rope_cos_sin(positions, inv_freq)
    y = apply_rope(Tensor(x), cos, sin, rotary_dim=rotary_dim)
    assert y.shape == x.shape and y.dtype == x.dtype
    np.testing.assert_allclose(y.data, oracle(x, positions, inv_freq, "half", rotary_dim), rtol=0, atol=ATOL)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("positions", [0, np.zeros(4, np.int64)])
def test_position_zero_is_the_identity(layout, dtype, positions):
    cos, sin = rope_cos_sin(positions, ladder(8))
    np.testing.assert_array_equal(cos, np.ones_like(cos))
    np.testing.assert_array_equal(sin, np.zeros_like(sin))
    x = random_x((2, 4, 8), dtype, seed=41)
    y = apply_rope(Tensor(x), cos, sin, layout)
    assert y.dtype == x.dtype
    np.testing.assert_allclose(y.data, x, rtol=0, atol=1e-7)


# --------------------------------------------------------------------------
# the hand example of section 10

HAND = {
    "half": [0.540302, -0.010000, 0.841471, 0.999950],
    "interleaved": [0.540302, 0.841471, -0.010000, 0.999950],
}


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_hand_example(layout):
    cos, sin = rope_cos_sin(1, [1.0, 0.01])
    assert cos.dtype == np.float32 and sin.dtype == np.float32
    assert cos.shape == (2,) and sin.shape == (2,)
    x = Tensor(np.array([1, 0, 0, 1], np.float32))
    np.testing.assert_allclose(apply_rope(x, cos, sin, layout).data, HAND[layout], rtol=0, atol=1e-6)


# --------------------------------------------------------------------------
# attention_scaling multiplies both tables, and so scores by s^2


@pytest.mark.parametrize("scaling", [0.5, 1.1386, 3.0])
def test_attention_scaling_scales_both_tables(scaling):
    positions = np.array([[1, 4, 9], [2, 30, 100]])
    inv_freq = ladder(8)
    cos1, sin1 = rope_cos_sin(positions, inv_freq)
    cos_s, sin_s = rope_cos_sin(positions, inv_freq, attention_scaling=scaling)
    assert cos_s.shape == positions.shape + (4,) and sin_s.shape == positions.shape + (4,)
    np.testing.assert_allclose(cos_s, cos1 * np.float32(scaling), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sin_s, sin1 * np.float32(scaling), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(cos_s.astype(np.float64) ** 2 + sin_s.astype(np.float64) ** 2,
                               np.full(cos_s.shape, scaling**2), rtol=1e-5)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("scaling", [0.5, 1.1386])
def test_attention_scaling_scales_output_and_scores(layout, scaling):
    positions = np.arange(2, 8)
    inv_freq = ladder(8)
    q = random_x((6, 8), seed=10)
    k = random_x((6, 8), seed=11)
    cos, sin = rope_cos_sin(positions, inv_freq, scaling)
    qr = apply_rope(Tensor(q), cos, sin, layout).data
    kr = apply_rope(Tensor(k), cos, sin, layout).data
    np.testing.assert_allclose(qr, oracle(q, positions, inv_freq, layout, scaling=scaling), rtol=0, atol=2e-6)
    cos1, sin1 = rope_cos_sin(positions, inv_freq)
    q1 = apply_rope(Tensor(q), cos1, sin1, layout).data
    k1 = apply_rope(Tensor(k), cos1, sin1, layout).data
    scores, scores1 = qr @ kr.T, q1 @ k1.T
    np.testing.assert_allclose(scores, scaling**2 * scores1, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# large positions stay precise (float32 angle, as Hugging Face computes it)

LARGE = np.array([0, 1, 2047, 2048, 2049, 2051, 4097, 8191, 16385, 32767, 40001, 65535])


@pytest.mark.parametrize("base,r", [(10000.0, 64), (1000000.0, 128)])
def test_large_position_tables(base, r):
    inv_freq = ladder(r, base)
    cos, sin = rope_cos_sin(LARGE, inv_freq)
    assert cos.dtype == np.float32 and cos.shape == (len(LARGE), r // 2)
    angle = hf_angles(LARGE, inv_freq)
    np.testing.assert_allclose(cos, np.cos(angle), rtol=0, atol=3e-7)
    np.testing.assert_allclose(sin, np.sin(angle), rtol=0, atol=3e-7)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_large_position_rotation(layout):
    positions = np.array([2049, 30001, 65535])
    inv_freq = ladder(16)
    x = random_x((2, 3, 16), seed=5)
    cos, sin = rope_cos_sin(positions, inv_freq)
    y = apply_rope(Tensor(x), cos, sin, layout)
    np.testing.assert_allclose(y.data, oracle(x, positions, inv_freq, layout), rtol=0, atol=2e-6)


# --------------------------------------------------------------------------
# the gradient is the inverse rotation


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("head_dim,rotary_dim", [(8, None), (12, 8), (6, 2)])
def test_gradient_is_inverse_rotation(layout, head_dim, rotary_dim):
    r = head_dim if rotary_dim is None else rotary_dim
    positions = np.array([1, 5, 23])
    inv_freq = ladder(r, base=50.0)
    x = Tensor(random_x((2, 3, head_dim), seed=20), requires_grad=True)
    g = random_x((2, 3, head_dim), seed=21)
    cos, sin = rope_cos_sin(positions, inv_freq)
    apply_rope(x, cos, sin, layout, rotary_dim).backward(g)
    assert x.grad is not None and x.grad.shape == x.shape
    np.testing.assert_allclose(x.grad, oracle(g, positions, inv_freq, layout, rotary_dim, direction=-1.0),
                               rtol=0, atol=ATOL)
    back = apply_rope(Tensor(g), cos, -sin, layout, rotary_dim).data
    np.testing.assert_allclose(x.grad, back, rtol=0, atol=ATOL)


# --------------------------------------------------------------------------
# a RopeSpec drives rope_cos_sin and apply_rope (section 11)


@pytest.mark.parametrize("pairs", [1, 4, 16])
def test_rope_spec_defaults(pairs):
    inv_freq = ladder(2 * pairs)
    spec = RopeSpec(inv_freq)
    assert spec.layout == "half"
    assert spec.attention_scaling == 1.0
    assert spec.rotary_dim == 2 * pairs and isinstance(spec.rotary_dim, int)
    np.testing.assert_array_equal(spec.inv_freq, inv_freq)


# every field away from its default: interleaved, scaling != 1, head wider than rotary_dim
SPECS = [
    # (layout,        scaling, rotary_dim, head_dim)
    ("interleaved", 1.1386, 4, 10),
    ("interleaved", 0.5, 8, 12),
    ("interleaved", 2.0, 2, 6),
]


@pytest.mark.parametrize("layout,scaling,rotary_dim,head_dim", SPECS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rope_spec_matches_oracle(layout, scaling, rotary_dim, head_dim, dtype):
    inv_freq = ladder(rotary_dim, base=100.0)
    spec = RopeSpec(inv_freq, attention_scaling=scaling, layout=layout, rotary_dim=rotary_dim)
    assert (spec.layout, spec.attention_scaling, spec.rotary_dim) == (layout, scaling, rotary_dim)
    positions = np.array([0, 3, 11, 250, 4099])
    cos, sin = spec.cos_sin(positions)
    assert cos.dtype == np.float32 and cos.shape == (5, rotary_dim // 2) and sin.shape == cos.shape
    angle = hf_angles(positions, inv_freq)
    np.testing.assert_allclose(cos, scaling * np.cos(angle), rtol=0, atol=2 * scaling * 3e-7)
    np.testing.assert_allclose(sin, scaling * np.sin(angle), rtol=0, atol=2 * scaling * 3e-7)
    x = random_x((2, 3, 5, head_dim), dtype, seed=head_dim)
    y = spec.apply(Tensor(x), positions)
    assert y.shape == x.shape and y.dtype == x.dtype
    np.testing.assert_allclose(y.data, oracle(x, positions, inv_freq, layout, rotary_dim, scaling=scaling),
                               rtol=0, atol=2 * scaling * ATOL)


# --------------------------------------------------------------------------
# bad input raises the exception type of the contract (section 11's table).
# Each case gets otherwise valid arguments, so that only the one fault is wrong.

GOOD_X = Tensor(random_x((2, 4, 8), seed=30))
GOOD_COS, GOOD_SIN = rope_cos_sin(np.arange(1, 5), ladder(8))


def bad_tables(kind):
    c, s = GOOD_COS.copy(), GOOD_SIN.copy()
    if kind == "mismatched":  # sin [1, S, r/2] still broadcasts to x[..., :r/2]; only the shapes differ
        return c, s[None]
    if kind == "wrong width":  # 1 wide still broadcasts to x[..., :r/2]; only the width is wrong
        return c[..., :1], s[..., :1]
    if kind == "not broadcastable":
        return c[:3], s[:3]
    if kind == "enlarges":  # [1, 1, S, r/2] would turn x[..., :r/2] [2, S, r/2] into [1, 2, S, r/2]
        return c[None, None], s[None, None]
    if kind == "nan":
        c[1, 2] = np.nan
        return c, s
    if kind == "inf":
        s[0, 0] = np.inf
        return c, s
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["mismatched", "wrong width", "not broadcastable", "enlarges", "nan", "inf"])
def test_bad_tables_raise_value_error(kind):
    cos, sin = bad_tables(kind)
    with pytest.raises(ValueError):
        apply_rope(GOOD_X, cos, sin, "half")


@pytest.mark.parametrize("which", ["both", "cos", "sin"])
def test_non_float_tables_raise_type_error(which):
    cos = GOOD_COS.astype(np.int64) if which in ("both", "cos") else GOOD_COS
    sin = GOOD_SIN.astype(np.int64) if which in ("both", "sin") else GOOD_SIN
    with pytest.raises(TypeError):
        apply_rope(GOOD_X, cos, sin, "half")


@pytest.mark.parametrize("rotary_dim", [3, 0, -2, 10])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_bad_rotary_dim_raises_value_error(rotary_dim, layout):
    # tables r // 2 wide, so the width check cannot be what raises
    width = max(rotary_dim // 2, 0)
    positions = np.arange(1, 5)
    cos, sin = rope_cos_sin(positions, ladder(2 * width)) if width else (GOOD_COS[..., :0], GOOD_SIN[..., :0])
    with pytest.raises(ValueError):
        apply_rope(GOOD_X, cos, sin, layout, rotary_dim)


def test_odd_head_dim_without_rotary_dim_raises_value_error():
    x = Tensor(random_x((4, 5), seed=31))
    cos, sin = rope_cos_sin(np.arange(1, 5), ladder(4))
    with pytest.raises(ValueError):
        apply_rope(x, cos, sin, "half")


def test_rotary_dim_not_int_raises_type_error():
    with pytest.raises(TypeError):
        apply_rope(GOOD_X, GOOD_COS, GOOD_SIN, "half", 8.0)


def test_x_not_tensor_or_0d_raises():
    with pytest.raises(TypeError):
        apply_rope(GOOD_X.data, GOOD_COS, GOOD_SIN, "half")
    with pytest.raises(ValueError):
        apply_rope(Tensor(np.float32(1.0)), GOOD_COS, GOOD_SIN, "half")


def test_unknown_layout_raises_value_error():
    with pytest.raises(ValueError):
        apply_rope(GOOD_X, GOOD_COS, GOOD_SIN, "neox")
    with pytest.raises(ValueError):
        RopeSpec(ladder(8), layout="rotate_half")


@pytest.mark.parametrize("rotary_dim", [6, 10, 2])
def test_rope_spec_rotary_dim_mismatch_raises_value_error(rotary_dim):
    # even and positive, so the mismatch with 2 * len(inv_freq) = 8 is the only fault
    with pytest.raises(ValueError):
        RopeSpec(ladder(8), rotary_dim=rotary_dim)


@pytest.mark.parametrize("positions", [-1, np.array([0, 1, -3]), 2.5, np.array([1.0, 2.25]),
                                       np.array([1.0, np.nan]), np.array([np.inf])])
def test_bad_positions_raise_value_error(positions):
    with pytest.raises(ValueError):
        rope_cos_sin(positions, ladder(8))


@pytest.mark.parametrize("positions", ["3", ["a", "b"], True, np.array([True, False])])
def test_non_numeric_positions_raise_type_error(positions):
    with pytest.raises(TypeError):
        rope_cos_sin(positions, ladder(8))


@pytest.mark.parametrize("inv_freq", [np.ones((2, 2), np.float32), np.float32(0.5), np.array([], np.float32),
                                      np.array([1.0, np.nan]), np.array([np.inf, 0.1])])
def test_bad_inv_freq_raises_value_error(inv_freq):
    with pytest.raises(ValueError):
        rope_cos_sin(np.arange(3), inv_freq)


def test_non_numeric_inv_freq_raises_type_error():
    with pytest.raises(TypeError):
        rope_cos_sin(np.arange(3), np.array(["a", "b"]))


@pytest.mark.parametrize("scaling", [0.0, -1.0, math.inf, math.nan])
def test_bad_attention_scaling_raises_value_error(scaling):
    with pytest.raises(ValueError):
        rope_cos_sin(np.arange(3), ladder(8), scaling)


@pytest.mark.parametrize("scaling", ["2", None])
def test_non_numeric_attention_scaling_raises_type_error(scaling):
    with pytest.raises(TypeError):
        rope_cos_sin(np.arange(3), ladder(8), scaling)


# --------------------------------------------------------------------------
# float32's limits (section 6, "What float32 can carry") and the rows of
# section 11's table that come from them

LAST_POSITION = 2**24 - 1
F32_MAX = float(np.finfo(np.float32).max)  # 2**128 - 2**104


@pytest.mark.parametrize("positions", [2**24, np.array([0, 2**24 + 1]), 1e39, np.array([2**64 - 1], np.uint64),
                                       2**70, np.array([3.0, 2.0**24])])
def test_positions_from_2_24_raise_value_error(positions):
    with pytest.raises(ValueError):
        rope_cos_sin(positions, ladder(8))


@pytest.mark.parametrize("inv_freq", [np.array([1.0, 1e39]), np.array([-(2.0**105), 0.1]), np.array([2.0**104 * 1.5])])
def test_frequencies_larger_than_2_104_raise_value_error(inv_freq):
    with pytest.raises(ValueError):
        rope_cos_sin(np.arange(3), inv_freq)


@pytest.mark.parametrize("scaling", [2.0**-127, 1e-45, 1e39, 2.0**128])
def test_scaling_outside_float32_normal_range_raises_value_error(scaling):
    with pytest.raises(ValueError):
        rope_cos_sin(np.arange(3), ladder(8), scaling)


def test_bool_scaling_and_rotary_dim_raise_type_error():
    with pytest.raises(TypeError):
        rope_cos_sin(np.arange(3), ladder(8), True)
    cos, sin = rope_cos_sin(np.arange(4), ladder(2))  # one pair: tables fit rotary_dim=2, were True read as 1
    with pytest.raises(TypeError):
        apply_rope(GOOD_X, cos, sin, "half", True)


@pytest.mark.parametrize("big", [1e39, -1e39])
@pytest.mark.parametrize("which", ["cos", "sin"])
def test_tables_beyond_x_dtype_raise_value_error(big, which):
    cos, sin = GOOD_COS.astype(np.float64), GOOD_SIN.astype(np.float64)
    (cos if which == "cos" else sin)[1, 1] = big
    with pytest.raises(ValueError):
        apply_rope(GOOD_X, cos, sin, "half")  # GOOD_X is float32
    y = apply_rope(Tensor(GOOD_X.data.astype(np.float64)), cos, sin, "half")  # fine in float64
    assert np.all(np.isfinite(y.data))


@pytest.mark.parametrize("layout", [None, ["half"], ("half",), 0])
def test_non_string_layout_raises_value_error(layout):
    with pytest.raises(ValueError):
        apply_rope(GOOD_X, GOOD_COS, GOOD_SIN, layout)
    with pytest.raises(ValueError):
        RopeSpec(ladder(8), layout=layout)


@pytest.mark.parametrize("rotary_dim", [8.0, "8", True, np.float64(8.0)])
def test_rope_spec_rotary_dim_not_int_raises_type_error(rotary_dim):
    with pytest.raises(TypeError):
        RopeSpec(ladder(8), rotary_dim=rotary_dim)


def test_rope_spec_bad_fields_fail_at_construction():
    with pytest.raises(ValueError):
        RopeSpec(np.array([1.0, 1e39]))
    with pytest.raises(ValueError):
        RopeSpec(ladder(8), attention_scaling=1e39)
    with pytest.raises(TypeError):
        RopeSpec(ladder(8), attention_scaling=True)


def test_rope_spec_keeps_its_own_read_only_copy():
    mine = ladder(8).astype(np.float64)
    spec = RopeSpec(mine, rotary_dim=np.int64(8))
    assert spec.rotary_dim == 8 and type(spec.rotary_dim) is int
    positions = np.array([1, 9, 300])
    cos, sin = spec.cos_sin(positions)
    mine *= 3.0
    assert spec.inv_freq.dtype == np.float32
    np.testing.assert_array_equal(spec.inv_freq, ladder(8))
    np.testing.assert_array_equal(spec.cos_sin(positions)[0], cos)
    np.testing.assert_array_equal(spec.cos_sin(positions)[1], sin)
    with pytest.raises(ValueError):
        spec.inv_freq[0] = 0.0


LIMITS = [
    # (positions,                      inv_freq,                        scaling)
    (np.array([0, 1, LAST_POSITION]), ladder(8), 1.0),
    (np.array([1, LAST_POSITION]), np.array([2.0**104, -(2.0**104), 1.0], np.float32), 1.0),
    (np.array([3, LAST_POSITION]), ladder(4), 2.0**-126),
    (np.array([3, LAST_POSITION]), ladder(4), F32_MAX),
]


@pytest.mark.parametrize("positions,inv_freq,scaling", LIMITS)
def test_the_limits_are_accepted_with_finite_tables(positions, inv_freq, scaling):
    cos, sin = rope_cos_sin(positions, inv_freq, scaling)
    assert np.all(np.isfinite(cos)) and np.all(np.isfinite(sin))
    angle = hf_angles(positions, inv_freq)
    # compare cos / s with cos(angle): a subnormal table entry adds up to 2**-149 / s = 1.2e-7 of rounding
    np.testing.assert_allclose(cos / np.float64(scaling), np.cos(angle), rtol=0, atol=4e-7)
    np.testing.assert_allclose(sin / np.float64(scaling), np.sin(angle), rtol=0, atol=4e-7)
    spec = RopeSpec(inv_freq, attention_scaling=scaling)
    np.testing.assert_array_equal(spec.cos_sin(positions)[0], cos)


def test_tables_at_the_largest_float32_are_accepted():
    big = np.float32(F32_MAX)
    y = apply_rope(Tensor(np.array([[1.0, 0.0]], np.float32)), np.array([[big]]), np.array([[big]]), "half")
    np.testing.assert_array_equal(y.data, [[big, big]])
