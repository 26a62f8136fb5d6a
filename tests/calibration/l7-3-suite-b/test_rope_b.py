"""L7.3 graded tests, student B: properties over random shapes, positions and
layouts (hypothesis), checked against a float64 complex oracle."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin

# deterministic and quiet: the same examples on every run
props = settings(max_examples=30, deadline=None, derandomize=True, database=None)

LAYOUTS = st.sampled_from(["half", "interleaved"])
DTYPES = st.sampled_from([np.float32, np.float64])


@st.composite
def rope_case(draw, max_position=300, pairs=st.integers(1, 6), extra=st.integers(0, 3), min_position=0):
    """x of shape lead + (head_dim,), rotary_dim r, inv_freq [r/2], positions [S]."""
    pairs = draw(pairs)
    r = 2 * pairs
    head_dim = r + draw(extra)
    partial = draw(st.booleans()) or head_dim != r
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    seq = draw(st.integers(1, 5))
    positions = np.array(draw(st.lists(st.integers(min_position, max_position), min_size=seq, max_size=seq)))
    inv_freq = np.array(draw(st.lists(st.floats(1e-4, 2.0), min_size=pairs, max_size=pairs)), np.float32)
    seed = draw(st.integers(0, 2**31 - 1))
    dtype = draw(DTYPES)
    x = np.random.default_rng(seed).uniform(-2, 2, lead + (seq, head_dim)).astype(dtype)
    return x, positions, inv_freq, (r if partial else None)


def angles(positions, inv_freq):
    # Hugging Face's angle: one float32 product, then float64 for cos and sin
    return (np.asarray(positions, np.float32)[..., None] * np.asarray(inv_freq, np.float32)).astype(np.float64)


def rotate_oracle(x, positions, inv_freq, layout, rotary_dim, scale=1.0, sign=1):
    x = x.astype(np.float64)
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    head, tail = x[..., :r], x[..., r:]
    if layout == "half":
        z = head[..., : r // 2] + 1j * head[..., r // 2 :]
    else:
        z = head[..., 0::2] + 1j * head[..., 1::2]
    z = z * scale * np.exp(sign * 1j * angles(positions, inv_freq))
    if layout == "half":
        head = np.concatenate([z.real, z.imag], axis=-1)
    else:
        head = np.stack([z.real, z.imag], axis=-1).reshape(head.shape)
    return np.concatenate([head, tail], axis=-1)


@props
@given(rope_case(), LAYOUTS)
def test_apply_rope_is_the_complex_rotation(case, layout):
    x, positions, inv_freq, r = case
    cos, sin = rope_cos_sin(positions, inv_freq)
    y = apply_rope(Tensor(x), cos, sin, layout, r)
    assert y.shape == x.shape and y.dtype == x.dtype
    np.testing.assert_allclose(y.data, rotate_oracle(x, positions, inv_freq, layout, r), atol=2e-6, rtol=0)


@props
@given(rope_case(pairs=st.integers(2, 6)))
def test_layout_defaults_to_half(case):
    x, positions, inv_freq, r = case
    cos, sin = rope_cos_sin(positions, inv_freq)
    y = apply_rope(Tensor(x), cos, sin, rotary_dim=r)
    assert y.shape == x.shape and y.dtype == x.dtype
    np.testing.assert_allclose(y.data, rotate_oracle(x, positions, inv_freq, "half", r), atol=2e-6, rtol=0)


@props
@given(rope_case(max_position=0), LAYOUTS)
def test_position_zero_is_the_identity(case, layout):
    x, positions, inv_freq, r = case
    cos, sin = rope_cos_sin(positions, inv_freq)
    y = apply_rope(Tensor(x), cos, sin, layout, r)
    assert y.shape == x.shape and y.dtype == x.dtype
    np.testing.assert_allclose(y.data, x, atol=1e-7, rtol=0)


@props
@given(rope_case(pairs=st.just(1), min_position=1), LAYOUTS)
def test_a_single_pair_is_valid(case, layout):
    x, positions, inv_freq, r = case
    cos, sin = rope_cos_sin(positions, inv_freq)
    y = apply_rope(Tensor(x), cos, sin, layout, 2 if r is None else r)
    np.testing.assert_allclose(y.data, rotate_oracle(x, positions, inv_freq, layout, r), atol=2e-6, rtol=0)


@props
@given(rope_case(max_position=65535), LAYOUTS)
def test_large_positions_stay_precise(case, layout):
    x, positions, inv_freq, r = case
    positions = positions + 2048  # past float16's exact integers
    cos, sin = rope_cos_sin(positions, inv_freq)
    np.testing.assert_allclose(cos, np.cos(angles(positions, inv_freq)), atol=3e-7, rtol=0)
    np.testing.assert_allclose(sin, np.sin(angles(positions, inv_freq)), atol=3e-7, rtol=0)
    y = apply_rope(Tensor(x), cos, sin, layout, r)
    np.testing.assert_allclose(y.data, rotate_oracle(x, positions, inv_freq, layout, r), atol=2e-6, rtol=0)


@props
@given(rope_case(), LAYOUTS, st.floats(0.25, 4.0))
def test_attention_scaling_multiplies_both_tables(case, layout, s):
    x, positions, inv_freq, r = case
    cos, sin = rope_cos_sin(positions, inv_freq, attention_scaling=s)
    cos1, sin1 = rope_cos_sin(positions, inv_freq)
    np.testing.assert_allclose(cos, cos1 * np.float32(s), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sin, sin1 * np.float32(s), rtol=1e-6, atol=1e-7)
    y = apply_rope(Tensor(x), cos, sin, layout, r)
    np.testing.assert_allclose(y.data, rotate_oracle(x, positions, inv_freq, layout, r, scale=s), atol=1e-5, rtol=0)


@props
@given(rope_case(), LAYOUTS)
def test_gradient_is_the_inverse_rotation(case, layout):
    x, positions, inv_freq, r = case
    g = np.random.default_rng(7).standard_normal(x.shape).astype(np.float32)
    xt = Tensor(x, requires_grad=True)
    cos, sin = rope_cos_sin(positions, inv_freq)
    apply_rope(xt, cos, sin, layout, r).backward(g)
    np.testing.assert_allclose(xt.grad, rotate_oracle(g, positions, inv_freq, layout, r, sign=-1), atol=2e-6, rtol=0)


def test_hand_example():
    cos, sin = rope_cos_sin(1, [1.0, 0.01])
    x = Tensor(np.array([1, 0, 0, 1], np.float32))
    np.testing.assert_allclose(apply_rope(x, cos, sin, "half").data, [0.540302, -0.010000, 0.841471, 0.999950], atol=1e-6)
    np.testing.assert_allclose(apply_rope(x, cos, sin, "interleaved").data, [0.540302, 0.841471, -0.010000, 0.999950], atol=1e-6)


# ---- RopeSpec --------------------------------------------------------------

@props
@given(st.lists(st.floats(1e-4, 2.0), min_size=1, max_size=8))
def test_rope_spec_defaults(freqs):
    inv_freq = np.array(freqs, np.float32)
    spec = RopeSpec(inv_freq)
    assert spec.layout == "half" and spec.attention_scaling == 1.0
    assert spec.rotary_dim == 2 * len(freqs) and isinstance(spec.rotary_dim, int)


@props
@given(rope_case(extra=st.integers(1, 3)), st.floats(0.25, 4.0).filter(lambda v: v != 1.0), st.booleans())
def test_rope_spec_drives_apply_rope(case, s, explicit_r):
    """every field away from its default: interleaved, scaling != 1, head wider than rotary_dim"""
    x, positions, inv_freq, _ = case
    layout = "interleaved"
    r = 2 * len(inv_freq)
    spec = RopeSpec(inv_freq, attention_scaling=s, layout=layout, rotary_dim=r if explicit_r else None)
    assert spec.rotary_dim == r
    cos, sin = spec.cos_sin(positions)
    assert cos.dtype == np.float32 and cos.shape == positions.shape + (r // 2,)
    np.testing.assert_allclose(cos, s * np.cos(angles(positions, inv_freq)), atol=s * 6e-7, rtol=0)
    np.testing.assert_allclose(sin, s * np.sin(angles(positions, inv_freq)), atol=s * 6e-7, rtol=0)
    y = spec.apply(Tensor(x), positions)
    assert y.shape == x.shape and y.dtype == x.dtype
    np.testing.assert_allclose(y.data, rotate_oracle(x, positions, inv_freq, layout, r, scale=s), atol=1e-5, rtol=0)


@props
@given(st.lists(st.floats(1e-4, 2.0), min_size=1, max_size=8), st.floats(0.5, 4.0))
def test_rope_spec_keeps_its_own_read_only_copy(freqs, factor):
    mine = np.array(freqs, np.float32)
    spec = RopeSpec(mine)
    positions = np.arange(5) * 37
    cos, sin = spec.cos_sin(positions)
    mine *= factor
    mine += 1.0  # surely changed now
    np.testing.assert_array_equal(spec.cos_sin(positions)[0], cos)
    np.testing.assert_array_equal(spec.cos_sin(positions)[1], sin)
    with pytest.raises(ValueError):
        spec.inv_freq[0] = 1.0


@props
@given(st.integers(1, 8), st.integers(1, 10))
def test_rope_spec_rotary_dim_must_match_inv_freq(pairs, half_r):
    r = 2 * half_r  # even and positive: the mismatch is the only fault
    if r == 2 * pairs:
        r += 2
    with pytest.raises(ValueError):
        RopeSpec(np.ones(pairs, np.float32), rotary_dim=r)


# ---- bad input -----------------------------------------------------------

def good_inputs(head_dim=8, seq=3):
    x = Tensor(np.ones((2, seq, head_dim), np.float32))
    cos, sin = rope_cos_sin(np.arange(seq), np.linspace(1.0, 0.01, head_dim // 2))
    return x, cos, sin


@props
@given(st.integers(-10, 20).filter(lambda r: r <= 0 or r % 2 == 1 or r > 8), LAYOUTS)
def test_bad_rotary_dim(r, layout):
    x, _, _ = good_inputs()
    # tables r // 2 wide, so that they fit r and only r itself is wrong
    width = max(r // 2, 0)
    cos, sin = rope_cos_sin(np.arange(3), np.linspace(1.0, 0.01, max(width, 1)))
    cos, sin = cos[:, :width], sin[:, :width]
    with pytest.raises(ValueError):
        apply_rope(x, cos, sin, layout, r)


# each wrong in one way only: the others still fit x (2, 3, 8)
@pytest.mark.parametrize("make", [
    lambda c, s: (c, s[:1]),                   # different shapes ([1, 4] still broadcasts)
    lambda c, s: (c[:, :1], s[:, :1]),         # last axis not r/2 (1 wide still broadcasts)
    lambda c, s: (c[:2], s[:2]),               # S does not match
    lambda c, s: (c[None, None], s[None, None]),  # would enlarge x
    lambda c, s: (c * np.nan, s),              # nan
    lambda c, s: (c, s + np.inf),              # inf
])
def test_bad_tables(make):
    x, cos, sin = good_inputs()
    with np.errstate(all="ignore"):
        bad_cos, bad_sin = make(cos, sin)
    with pytest.raises(ValueError):
        apply_rope(x, bad_cos, bad_sin)


def test_unknown_layout():
    x, cos, sin = good_inputs()
    with pytest.raises(ValueError):
        apply_rope(x, cos, sin, "Half")


@props
@given(st.one_of(st.integers(-10**6, -1), st.floats(-1e6, 1e6).filter(lambda v: v != int(v)),
                 st.sampled_from([float("nan"), float("inf")])))
def test_bad_positions_value_error(p):
    with pytest.raises(ValueError):
        rope_cos_sin(np.array([0, p]), np.ones(2, np.float32))


@pytest.mark.parametrize("p", ["7", [1, "x"], False])
def test_non_numeric_positions_type_error(p):
    with pytest.raises(TypeError):
        rope_cos_sin(p, np.ones(2, np.float32))


def test_inv_freq_must_be_1d():
    with pytest.raises(ValueError):
        rope_cos_sin(np.arange(3), np.ones((2, 2), np.float32))


# ---- float32's limits (section 6) -------------------------------------------

LAST = 2**24 - 1
F32_MAX = float(np.finfo(np.float32).max)


@props
@given(st.one_of(st.integers(2**24, 2**62), st.floats(2.0**24, 1e300), st.integers(2**64, 2**200)))
def test_positions_from_2_24_raise(p):
    with pytest.raises(ValueError):
        rope_cos_sin(np.array([0, p]) if p < 2**63 else p, np.ones(2, np.float32))


@props
@given(st.floats(2.0**104, 1e300, exclude_min=True), st.booleans())
def test_frequencies_beyond_2_104_raise(f, negative):
    with pytest.raises(ValueError):
        rope_cos_sin(np.arange(3), np.array([0.5, -f if negative else f]))


@props
@given(st.one_of(st.floats(0.0, 2.0**-126, exclude_max=True), st.floats(F32_MAX, 1e300, exclude_min=True)))
def test_scaling_outside_float32_normal_range_raises(s):
    with pytest.raises(ValueError):
        rope_cos_sin(np.arange(3), np.ones(2, np.float32), s)


def test_true_is_not_a_scaling_nor_a_rotary_dim():
    with pytest.raises(TypeError):
        rope_cos_sin(np.arange(3), np.ones(2, np.float32), True)
    x, _, _ = good_inputs(head_dim=2)
    cos, sin = rope_cos_sin(np.arange(3), np.ones(1, np.float32))
    with pytest.raises(TypeError):
        apply_rope(x, cos, sin, "half", True)


@props
@given(st.sampled_from([2.0**104, -(2.0**104), 1.0, 0.3]), st.sampled_from([2.0**-126, 1.0, F32_MAX]),
       st.integers(0, LAST), LAYOUTS)
def test_the_limits_give_finite_tables(f, s, p, layout):
    inv_freq = np.array([f, 0.25], np.float32)
    positions = np.array([p, LAST])
    cos, sin = rope_cos_sin(positions, inv_freq, s)
    assert np.all(np.isfinite(cos)) and np.all(np.isfinite(sin))
    np.testing.assert_allclose(cos / np.float64(s), np.cos(angles(positions, inv_freq)), atol=5e-7, rtol=0)
    np.testing.assert_allclose(sin / np.float64(s), np.sin(angles(positions, inv_freq)), atol=5e-7, rtol=0)
