"""A thorough suite with one blind spot: every angle it uses is exact in
float16 (frequencies are powers of two, positions are small), so computing
the angles in half precision goes unnoticed.  Graded by tests/test_grading.py:
it catches every generated mutant but not pitfall s04, and must not pass."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin

LADDER = np.array([1.0, 0.5, 0.25, 0.125], np.float32)  # r = 8, exact in float16


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
    positions = np.array([0, 1, 17, 40, 63])
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
    positions = np.array([[0, 5, 9, 2], [63, 3, 48, 7]])  # [B, S]
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
    positions = np.array(data.draw(st.lists(st.integers(0, 64), min_size=seq, max_size=seq)))
    freqs = LADDER[:pairs]
    x = np.random.default_rng(heads * 100 + seq).standard_normal((heads, seq, 2 * pairs + tail)).astype(np.float32)
    got = rope(x, positions, freqs, layout, 2 * pairs)
    close(got.data, oracle(x, positions, freqs, layout, 2 * pairs), atol=3e-6)


def test_hand_example():
    cos, sin = rope_cos_sin(1, [1.0, 0.5])
    x = Tensor(np.array([1.0, 0.0, 0.0, 1.0], np.float32))
    c1, s1, c2, s2 = np.cos(1.0), np.sin(1.0), np.cos(0.5), np.sin(0.5)
    close(apply_rope(x, cos, sin).data, [c1, -s2, s1, c2], atol=1e-6)
    close(apply_rope(x, cos, sin, "interleaved").data, [c1, s1, -s2, c2], atol=1e-6)


def test_float64_input_stays_float64():
    x = np.random.default_rng(4).standard_normal((3, 8))
    got = rope(x, [1, 2, 3], LADDER)
    assert got.dtype == np.float64
    close(got.data, oracle(x, [1, 2, 3], LADDER), atol=1e-6)


# ---- the tables -------------------------------------------------------------------------


def test_tables_are_float32_hf_angles_even_from_float64_inputs():
    positions = np.array([0, 1, 20, 33, 48, 64])
    freqs64 = 2.0 ** -np.arange(8.0)  # float64 on purpose
    cos, sin = rope_cos_sin(positions, freqs64)
    assert cos.dtype == np.float32 and sin.dtype == np.float32
    assert cos.shape == (6, 8)
    angle = angles_like_hf(positions, freqs64)
    close(cos, np.cos(angle), atol=2e-7)
    close(sin, np.sin(angle), atol=2e-7)


def test_default_scaling_is_one_and_scaling_multiplies_both_tables():
    positions, freqs = np.array([0, 3, 60]), LADDER
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
        out = rope(x, [1, 9, 30, 64], LADDER, layout).data
        close(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1), atol=1e-5)


def test_relative_scores_at_large_positions():
    rng = np.random.default_rng(7)
    freqs = (2.0 ** -np.arange(8.0)).astype(np.float32)
    q, k = rng.standard_normal(16), rng.standard_normal(16)
    for layout in ("half", "interleaved"):
        base = rope(q, 7, freqs, layout).data @ rope(k, 3, freqs, layout).data
        shifted = rope(q, 57, freqs, layout).data @ rope(k, 53, freqs, layout).data
        assert abs(base - shifted) < 1e-2


# ---- gradients ---------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [None, 4])
def test_gradient_is_the_inverse_rotation(layout, rotary_dim):
    rng = np.random.default_rng(8)
    x = Tensor(rng.standard_normal((2, 3, 8)), requires_grad=True)
    g = rng.standard_normal((2, 3, 8))
    positions = np.array([1, 50, 63])
    r = rotary_dim or 8
    cos, sin = rope_cos_sin(positions, LADDER[: r // 2])
    apply_rope(x, cos, sin, layout, rotary_dim).backward(g)
    assert x.grad is not None
    # the adjoint of a rotation by +angle is the rotation by -angle; the tail's gradient is g itself
    close(x.grad, oracle(g, -positions.astype(np.float64), LADDER[: r // 2], layout, rotary_dim), atol=1e-6)


def test_gradient_of_a_loss_by_central_differences():
    rng = np.random.default_rng(9)
    x0, w = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    cos, sin = rope_cos_sin([2, 40, 60], LADDER[:2])
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


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_spec_drives_apply_rope(layout):
    x = np.random.default_rng(10).standard_normal((2, 3, 8))
    positions = np.array([0, 12, 63])
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
    ],
)
def test_bad_types_raise_type_error(call):
    with pytest.raises(TypeError):
        call()


def test_valid_edges_do_not_raise():
    apply_rope(x_of(3, 4), *tables(3, 2), rotary_dim=4)    # rotary_dim = head_dim
    apply_rope(x_of(3, 4), *tables(3, 1), rotary_dim=2)    # one pair
    rope_cos_sin([0], LADDER, 0.01)                         # small positive scaling
