"""The instructor's model answer to L7.3's graded tests.

A student-style suite: it imports only what the catalog allows, and judges
rope_cos_sin, apply_rope and RopeSpec by what they return and raise, against
an independent oracle: complex multiplication in numpy float64.  `ol verify
L7.3` checks it kills every counted mutant and every pitfall (score 1.0).
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin

LADDER = (1.0 / 10000 ** (np.arange(0, 8, 2) / 8)).astype(np.float32)  # r = 8

# float32's limits, as the chapter states them (section 11)
LAST_POSITION = 2**24 - 1           # positions are below 2**24
FREQ_LIMIT = 2.0**104               # |inv_freq| at most this
SCALING_RANGE = (2.0**-126, float(np.finfo(np.float32).max))  # attention_scaling from, to


# ---- the oracle ---------------------------------------------------------------


def angles_like_hf(positions, inv_freq):
    """float32(p) * float32(theta), one float32 product, then float64."""
    p = np.asarray(positions, np.float32)[..., None]
    return (p * np.asarray(inv_freq, np.float32)).astype(np.float64)


def oracle(x, positions, inv_freq, layout="half", rotary_dim=None, scaling=1.0, positions_axis=-2):
    """RoPE by complex multiplication in float64.  x: [..., D]; positions
    broadcast against x's leading axes when given an axis for the last of them."""
    x = np.asarray(x, np.float64)
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    angle = angles_like_hf(positions, inv_freq)            # P + (r/2,)
    rot = x[..., :r]
    if layout == "half":
        z = rot[..., : r // 2] + 1j * rot[..., r // 2 :]
    else:
        z = rot[..., 0::2] + 1j * rot[..., 1::2]
    z = z * np.exp(1j * angle) * scaling
    if layout == "half":
        out = np.concatenate([z.real, z.imag], axis=-1)
    else:
        out = np.stack([z.real, z.imag], axis=-1).reshape(rot.shape)
    return np.concatenate([out, x[..., r:]], axis=-1)


def rope(x, positions, inv_freq, layout="half", rotary_dim=None, scaling=1.0, table_view=lambda t: t):
    cos, sin = rope_cos_sin(positions, inv_freq, scaling)
    return apply_rope(Tensor(x), table_view(cos), table_view(sin), layout=layout, rotary_dim=rotary_dim)


def close(got, want, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, atol=atol, rtol=0)


# ---- rotation against the oracle ---------------------------------------------------


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [None, 2, 4, 6])
def test_matches_complex_oracle(layout, rotary_dim):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)  # [B, H, S, D]
    positions = np.array([0, 1, 17, 4097, 65535])
    r = rotary_dim or 8
    freqs = LADDER[: r // 2]
    got = rope(x, positions, freqs, layout, rotary_dim)
    assert got.shape == x.shape and got.dtype == np.float32
    close(got.data, oracle(x, positions, freqs, layout, rotary_dim))
    np.testing.assert_array_equal(got.data[..., r:], x[..., r:])


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_per_row_positions(layout):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4, 8))
    positions = np.array([[0, 5, 9, 2], [65535, 3, 1000, 7]])  # [B, S]
    got = rope(x, positions, LADDER, layout, table_view=lambda t: t[:, None])
    close(got.data, oracle(x, positions[:, None], LADDER, layout))


@pytest.mark.parametrize("shape", [(8,), (5, 8), (4, 5, 8)])
def test_any_leading_shape(shape):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    positions = 3 if len(shape) == 1 else np.arange(5) * 11
    for layout in ("half", "interleaved"):
        close(rope(x, positions, LADDER, layout).data, oracle(x, positions, LADDER, layout))
        close(rope(x, positions, LADDER[:2], layout, 4).data, oracle(x, positions, LADDER[:2], layout, 4))


@settings(max_examples=40, deadline=None)
@given(
    heads=st.integers(1, 3), seq=st.integers(1, 4), pairs=st.integers(1, 4), tail=st.integers(0, 3),
    layout=st.sampled_from(["half", "interleaved"]), data=st.data(),
)
def test_random_shapes_and_positions(heads, seq, pairs, tail, layout, data):
    positions = np.array(data.draw(st.lists(st.integers(0, 70000), min_size=seq, max_size=seq)))
    freqs = LADDER[:pairs]
    x = np.random.default_rng(heads * 100 + seq).standard_normal((heads, seq, 2 * pairs + tail)).astype(np.float32)
    got = rope(x, positions, freqs, layout, 2 * pairs)
    close(got.data, oracle(x, positions, freqs, layout, 2 * pairs), atol=3e-6)


def test_hand_example():
    cos, sin = rope_cos_sin(1, [1.0, 0.01])
    x = Tensor(np.array([1.0, 0.0, 0.0, 1.0], np.float32))
    close(apply_rope(x, cos, sin).data, [0.540302, -0.010000, 0.841471, 0.999950], atol=1e-6)
    close(apply_rope(x, cos, sin, "interleaved").data, [0.540302, 0.841471, -0.010000, 0.999950], atol=1e-6)


def test_float64_input_stays_float64():
    x = np.random.default_rng(4).standard_normal((3, 8))
    got = rope(x, [1, 2, 3], LADDER)
    assert got.dtype == np.float64
    close(got.data, oracle(x, [1, 2, 3], LADDER), atol=1e-6)


# ---- the tables -------------------------------------------------------------------------


def test_tables_are_float32_hf_angles_even_from_float64_inputs():
    positions = np.array([0, 1, 2047, 2049, 40000, 65535])
    freqs64 = 1.0 / 10000 ** (np.arange(0, 64, 2) / 64)  # float64 on purpose
    cos, sin = rope_cos_sin(positions, freqs64)
    assert cos.dtype == np.float32 and sin.dtype == np.float32
    assert cos.shape == (6, 32)
    angle = angles_like_hf(positions, freqs64)
    close(cos, np.cos(angle), atol=2e-7)
    close(sin, np.sin(angle), atol=2e-7)


def test_default_scaling_is_one_and_scaling_multiplies_both_tables():
    positions, freqs = np.array([0, 3, 1000]), LADDER
    cos, sin = rope_cos_sin(positions, freqs)
    angle = angles_like_hf(positions, freqs)
    close(cos, np.cos(angle), atol=2e-7)
    close(sin, np.sin(angle), atol=2e-7)
    for s in (0.5, 1.1386294, 3.0):
        cos_s, sin_s = rope_cos_sin(positions, freqs, s)
        close(cos_s, np.cos(angle) * s, atol=1e-6)
        close(sin_s, np.sin(angle) * s, atol=1e-6)
    x = np.random.default_rng(5).standard_normal((3, 8))
    close(rope(x, positions, freqs, scaling=1.5).data, oracle(x, positions, freqs, scaling=1.5), atol=4e-6)


def test_accepts_integral_floats_unsigned_ints_and_one_pair():
    cos_f, _ = rope_cos_sin(np.array([0.0, 2.0, 7.0]), [1.0])
    cos_u, _ = rope_cos_sin(np.array([0, 2, 7], np.uint16), np.array([1], np.int64))
    close(cos_f, np.cos([[0.0], [2.0], [7.0]]), atol=2e-7)
    np.testing.assert_array_equal(cos_f, cos_u)
    x = np.array([[3.0, 4.0]])
    close(rope(x, [2], [0.5]).data, oracle(x, [2], [0.5]))


def test_empty_positions_give_empty_tables():
    cos, sin = rope_cos_sin(np.zeros(0, np.int64), LADDER)
    assert cos.shape == (0, 4) and sin.shape == (0, 4)


# ---- properties -----------------------------------------------------------------------


def test_position_zero_is_identity_and_lengths_are_kept():
    x = np.random.default_rng(6).standard_normal((4, 8)).astype(np.float32)
    for layout in ("half", "interleaved"):
        out = rope(x, [0, 0, 0, 0], LADDER, layout).data
        np.testing.assert_array_equal(out, x)
        out = rope(x, [1, 9, 300, 65535], LADDER, layout).data
        close(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1), atol=1e-5)


def test_relative_scores_at_large_positions():
    rng = np.random.default_rng(7)
    freqs = (1.0 / 10000 ** (np.arange(0, 64, 2) / 64)).astype(np.float32)
    q, k = rng.standard_normal(64), rng.standard_normal(64)
    for layout in ("half", "interleaved"):
        base = rope(q, 7, freqs, layout).data @ rope(k, 3, freqs, layout).data
        shifted = rope(q, 3007, freqs, layout).data @ rope(k, 3003, freqs, layout).data
        assert abs(base - shifted) < 1e-2


# ---- gradients ---------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [None, 4])
def test_gradient_is_the_inverse_rotation(layout, rotary_dim):
    rng = np.random.default_rng(8)
    x = Tensor(rng.standard_normal((2, 3, 8)), requires_grad=True)
    g = rng.standard_normal((2, 3, 8))
    positions = np.array([1, 50, 65535])
    r = rotary_dim or 8
    cos, sin = rope_cos_sin(positions, LADDER[: r // 2])
    apply_rope(x, cos, sin, layout, rotary_dim).backward(g)
    assert x.grad is not None
    # the adjoint of a rotation by +angle is the rotation by -angle; the tail's gradient is g itself
    close(x.grad, oracle(g, -positions.astype(np.float64), LADDER[: r // 2], layout, rotary_dim), atol=1e-6)


def test_gradient_of_a_loss_by_central_differences():
    rng = np.random.default_rng(9)
    x0, w = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    cos, sin = rope_cos_sin([2, 40, 900], LADDER[:2])
    for layout in ("half", "interleaved"):
        x = Tensor(x0, requires_grad=True)
        (apply_rope(x, cos, sin, layout, 4) * w).sum().backward()
        numeric = np.zeros_like(x0)
        for i in np.ndindex(x0.shape):
            e = np.zeros_like(x0)
            e[i] = 1e-6
            up = np.sum(w * apply_rope(Tensor(x0 + e), cos, sin, layout, 4).data)
            down = np.sum(w * apply_rope(Tensor(x0 - e), cos, sin, layout, 4).data)
            numeric[i] = (up - down) / 2e-6
        close(x.grad, numeric, atol=1e-6)


# ---- RopeSpec ------------------------------------------------------------------------------


def test_rope_spec_defaults_and_fields():
    spec = RopeSpec(LADDER)
    assert spec.attention_scaling == 1.0 and spec.layout == "half" and spec.rotary_dim == 8
    spec = RopeSpec(LADDER[:2], 1.25, "interleaved", 4)
    assert (spec.attention_scaling, spec.layout, spec.rotary_dim) == (1.25, "interleaved", 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.layout = "half"
    spec = RopeSpec(LADDER.astype(np.float64), rotary_dim=np.int64(8))
    assert spec.inv_freq.dtype == np.float32 and type(spec.rotary_dim) is int and spec.rotary_dim == 8


def test_rope_spec_keeps_its_own_read_only_copy_of_inv_freq():
    mine = LADDER.copy()
    spec = RopeSpec(mine)
    cos, sin = spec.cos_sin([3, 700])
    mine[:] = 0.5  # the caller's array changes: the spec must not
    np.testing.assert_array_equal(spec.inv_freq, LADDER)
    np.testing.assert_array_equal(spec.cos_sin([3, 700])[0], cos)
    np.testing.assert_array_equal(spec.cos_sin([3, 700])[1], sin)
    with pytest.raises(ValueError):  # numpy refuses to write a read-only array
        spec.inv_freq[0] = 2.0


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_spec_drives_apply_rope(layout):
    x = np.random.default_rng(10).standard_normal((2, 3, 8))
    positions = np.array([0, 12, 65535])
    spec = RopeSpec(LADDER[:2], 1.5, layout)  # rotary_dim 4 of 8: partial
    cos, sin = spec.cos_sin(positions)
    want_cos, want_sin = rope_cos_sin(positions, LADDER[:2], 1.5)
    np.testing.assert_array_equal(cos, want_cos)
    np.testing.assert_array_equal(sin, want_sin)
    close(spec.apply(Tensor(x), positions).data, oracle(x, positions, LADDER[:2], layout, 4, 1.5), atol=4e-6)


@pytest.mark.parametrize(
    "args, error",
    [
        ((LADDER, 1.0, "half", 6), ValueError),
        ((LADDER, 1.0, "half", 10), ValueError),
        ((LADDER, 1.0, "adjacent", None), ValueError),
        ((LADDER, 0.0, "half", None), ValueError),
        ((LADDER, "1.0", "half", None), TypeError),
        ((LADDER, True, "half", None), TypeError),
        ((LADDER, 1e39, "half", None), ValueError),
        ((LADDER, 1.0, "half", 8.0), TypeError),
        ((LADDER, 1.0, "half", "8"), TypeError),
        ((LADDER, 1.0, "half", True), TypeError),
        ((LADDER, 1.0, ["half"], None), ValueError),
        ((np.array([1.0, 1e39]), 1.0, "half", None), ValueError),
        ((LADDER[None], 1.0, "half", None), ValueError),
        (([], 1.0, "half", None), ValueError),
    ],
)
def test_rope_spec_rejects_bad_fields(args, error):
    with pytest.raises(error):
        RopeSpec(*args)


# ---- bad input ---------------------------------------------------------------------------


def tables(rows, width):
    """Finite float32 tables of shape [rows, width]: right for a rotary_dim of 2 * width,
    so a bad-input case has one thing wrong only."""
    return np.full((rows, width), 0.6, np.float32), np.full((rows, width), 0.8, np.float32)


def x_of(*shape):
    return Tensor(np.ones(shape, np.float32))


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: apply_rope(x_of(3, 8), *tables(3, 1), rotary_dim=3), id="odd-rotary_dim"),
        pytest.param(lambda: apply_rope(x_of(3, 8), *tables(3, 0), rotary_dim=0), id="zero-rotary_dim"),
        pytest.param(lambda: apply_rope(x_of(3, 8), *tables(3, 1), rotary_dim=-2), id="negative-rotary_dim"),
        pytest.param(lambda: apply_rope(x_of(3, 4), *tables(3, 3), rotary_dim=6), id="rotary_dim-above-head_dim"),
        pytest.param(lambda: apply_rope(x_of(3, 5), *tables(3, 2)), id="odd-head_dim"),
        pytest.param(lambda: apply_rope(x_of(3, 4), tables(3, 2)[0], tables(2, 2)[1]), id="cos-sin-shapes-differ"),
        pytest.param(lambda: apply_rope(x_of(3, 8), *tables(3, 2)), id="tables-too-narrow"),
        pytest.param(lambda: apply_rope(x_of(3, 4), *tables(3, 4)), id="tables-too-wide"),
        pytest.param(lambda: apply_rope(x_of(3, 4), *(t[0, 0] for t in tables(3, 2))), id="0-d-tables"),
        pytest.param(lambda: apply_rope(x_of(5, 4), *tables(3, 2)), id="tables-do-not-broadcast"),
        pytest.param(lambda: apply_rope(x_of(3, 4), *(t[None].repeat(2, 0) for t in tables(3, 2))),
                     id="tables-would-enlarge-x"),
        pytest.param(lambda: apply_rope(x_of(3, 4), tables(3, 2)[0] * np.nan, tables(3, 2)[1]), id="nan-in-cos"),
        pytest.param(lambda: apply_rope(x_of(3, 4), tables(3, 2)[0], np.full((3, 2), np.inf, np.float32)), id="inf-in-sin"),
        pytest.param(lambda: apply_rope(x_of(3, 4), *tables(3, 2), layout="adjacent"), id="unknown-layout"),
        pytest.param(lambda: apply_rope(Tensor(np.float32(1.0)), *tables(1, 1)), id="0-d-x"),
        pytest.param(lambda: rope_cos_sin([0, -1], LADDER), id="negative-position"),
        pytest.param(lambda: rope_cos_sin([0.0, 1.5], LADDER), id="fractional-position"),
        pytest.param(lambda: rope_cos_sin([0.0, np.nan], LADDER), id="nan-position"),
        pytest.param(lambda: rope_cos_sin([0.0, np.inf], LADDER), id="inf-position"),
        pytest.param(lambda: rope_cos_sin([0, 1], LADDER[None]), id="inv_freq-2d"),
        pytest.param(lambda: rope_cos_sin([0, 1], np.zeros(0)), id="inv_freq-empty"),
        pytest.param(lambda: rope_cos_sin([0, 1], [1.0, np.nan]), id="inv_freq-nan"),
        pytest.param(lambda: rope_cos_sin([0, 1], LADDER, 0.0), id="zero-scaling"),
        pytest.param(lambda: rope_cos_sin([0, 1], LADDER, -1.0), id="negative-scaling"),
        pytest.param(lambda: rope_cos_sin([0, 1], LADDER, np.inf), id="inf-scaling"),
        pytest.param(lambda: rope_cos_sin([0, 1], LADDER, np.nan), id="nan-scaling"),
        # beyond float32's limits (section 11)
        pytest.param(lambda: rope_cos_sin([0, LAST_POSITION + 1], LADDER), id="position-2**24"),
        pytest.param(lambda: rope_cos_sin(float(LAST_POSITION + 2), LADDER), id="float-position-2**24+1"),
        pytest.param(lambda: rope_cos_sin([1e39], LADDER), id="position-1e39"),
        pytest.param(lambda: rope_cos_sin(np.array([2**64 - 1], np.uint64), LADDER), id="position-uint64-max"),
        pytest.param(lambda: rope_cos_sin(2**70, LADDER), id="position-beyond-int64"),
        pytest.param(lambda: rope_cos_sin([0, -(2**70)], LADDER), id="position-below-int64"),
        pytest.param(lambda: rope_cos_sin([0, 1], [1.0, 2 * FREQ_LIMIT]), id="inv_freq-2**105"),
        pytest.param(lambda: rope_cos_sin([0, 1], [-2 * FREQ_LIMIT]), id="inv_freq-minus-2**105"),
        pytest.param(lambda: rope_cos_sin([0, 1], [1e39]), id="inv_freq-1e39"),
        pytest.param(lambda: rope_cos_sin([0, 1], LADDER, 1e39), id="scaling-1e39"),
        pytest.param(lambda: rope_cos_sin([0, 1], LADDER, SCALING_RANGE[0] / 2), id="scaling-2**-127"),
        pytest.param(lambda: apply_rope(x_of(3, 4), np.full((3, 2), 1e39), tables(3, 2)[1]), id="cos-1e39-for-float32-x"),
        pytest.param(lambda: apply_rope(x_of(3, 4), tables(3, 2)[0], np.full((3, 2), -1e39)), id="sin-1e39-for-float32-x"),
        pytest.param(lambda: apply_rope(x_of(3, 4), *tables(3, 2), layout=["half"]), id="layout-a-list"),
        pytest.param(lambda: apply_rope(x_of(3, 4), *tables(3, 2), layout=None), id="layout-None"),
    ],
)
def test_bad_values_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: apply_rope(np.ones((3, 4), np.float32), *tables(3, 2)), id="x-not-a-Tensor"),
        pytest.param(lambda: apply_rope(x_of(3, 4), *tables(3, 2), rotary_dim=4.0), id="float-rotary_dim"),
        pytest.param(lambda: apply_rope(x_of(3, 4), tables(3, 2)[0].astype(int), tables(3, 2)[1]), id="int-cos"),
        pytest.param(lambda: apply_rope(x_of(3, 4), tables(3, 2)[0], tables(3, 2)[1].astype(int)), id="int-sin"),
        pytest.param(lambda: rope_cos_sin(["0", "1"], LADDER), id="string-positions"),
        pytest.param(lambda: rope_cos_sin([0, 1], ["a", "b"]), id="string-inv_freq"),
        pytest.param(lambda: rope_cos_sin([0, 1], LADDER, "1.0"), id="string-scaling"),
        pytest.param(lambda: rope_cos_sin([0, 1], LADDER, True), id="bool-scaling"),
        pytest.param(lambda: rope_cos_sin(None, LADDER), id="None-positions"),
        pytest.param(lambda: apply_rope(x_of(3, 4), *tables(3, 2), rotary_dim=True), id="bool-rotary_dim"),
    ],
)
def test_bad_types_raise_type_error(call):
    with pytest.raises(TypeError):
        call()


def test_valid_edges_do_not_raise():
    apply_rope(x_of(3, 4), *tables(3, 2), rotary_dim=4)    # rotary_dim = head_dim
    apply_rope(x_of(3, 4), *tables(3, 1), rotary_dim=2)    # one pair
    rope_cos_sin([0], LADDER, 0.01)                         # small positive scaling


def test_float32_limits_are_accepted():
    rope_cos_sin([0, LAST_POSITION], LADDER)
    RopeSpec(np.array([FREQ_LIMIT, -FREQ_LIMIT]), SCALING_RANGE[0])
    RopeSpec(LADDER, SCALING_RANGE[1])
    big = np.float32(SCALING_RANGE[1])  # tables as large as x's dtype holds are still tables
    out = apply_rope(Tensor(np.array([[1.0, 0.0]], np.float32)), np.array([[big]]), np.array([[big]])).data
    np.testing.assert_array_equal(out, [[big, big]])


def test_tables_at_the_float32_limits_are_finite_hf_numbers():
    positions = np.array([0, 1, LAST_POSITION])
    for freqs, scaling in [(LADDER, 1.0), ([FREQ_LIMIT, -FREQ_LIMIT, 1.0], 1.0),
                           (LADDER, SCALING_RANGE[0]), (LADDER, SCALING_RANGE[1])]:
        cos, sin = rope_cos_sin(positions, freqs, scaling)
        angle = angles_like_hf(positions, freqs).astype(np.float32)  # the float32 products, exactly
        for got, want in ((cos, np.cos(angle)), (sin, np.sin(angle))):
            assert np.all(np.isfinite(got))
            close(got.astype(np.float64) / scaling, want.astype(np.float64), atol=3e-7)
