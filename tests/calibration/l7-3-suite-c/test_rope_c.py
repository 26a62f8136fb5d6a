"""L7.3 graded tests, student C: one compact test per bullet of section 13."""

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin

rng = np.random.default_rng(1234)
THETA = (10000.0 ** -(np.arange(0, 8, 2) / 8)).astype(np.float32)  # r = 8, four pairs
POS = np.array([1, 2, 5, 17])


def oracle(x, pos, theta, layout="half", r=None, s=1.0, sign=1.0):
    """float64 complex multiplication; angle = float32(p) * float32(theta) as HF."""
    x = np.array(x, np.float64)
    r = r or x.shape[-1]
    i = np.arange(r // 2)
    a, b = (i, i + r // 2) if layout == "half" else (2 * i, 2 * i + 1)
    ang = (np.float32(pos)[..., None] * np.float32(theta)).astype(np.float64)
    z = (x[..., a] + 1j * x[..., b]) * s * np.exp(sign * 1j * ang)
    x[..., a], x[..., b] = z.real, z.imag
    return x


def rope(x, pos, theta, layout="half", r=None, s=1.0):
    cos, sin = rope_cos_sin(pos, theta, s)
    return apply_rope(Tensor(x), cos, sin, layout, r).data


def test_half_layout():
    x = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    np.testing.assert_allclose(rope(x, POS, THETA), oracle(x, POS, THETA), atol=1e-6)


def test_interleaved_layout():
    x = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    np.testing.assert_allclose(rope(x, POS, THETA, "interleaved"), oracle(x, POS, THETA, "interleaved"), atol=1e-6)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_partial_rotary(layout):
    x = rng.standard_normal((3, 4, 14)).astype(np.float32)
    np.testing.assert_allclose(rope(x, POS, THETA, layout, r=8), oracle(x, POS, THETA, layout, r=8), atol=1e-6)


def test_hand_example():
    cos, sin = rope_cos_sin(1, [1.0, 0.01])
    x = Tensor(np.array([1, 0, 0, 1], np.float32))
    assert np.allclose(apply_rope(x, cos, sin, "half").data, [0.540302, -0.010000, 0.841471, 0.999950], atol=1e-6)
    assert np.allclose(apply_rope(x, cos, sin, "interleaved").data, [0.540302, 0.841471, -0.010000, 0.999950], atol=1e-6)


def test_attention_scaling_scales_both_tables():
    s = 1.1386
    (c1, s1), (cs, ss) = rope_cos_sin(POS, THETA), rope_cos_sin(POS, THETA, s)
    np.testing.assert_allclose(cs, s * c1, rtol=1e-6)
    np.testing.assert_allclose(ss, s * s1, rtol=1e-6, atol=1e-7)
    q, k = rng.standard_normal((2, 4, 8)).astype(np.float32)
    scores = rope(q, POS, THETA, s=s) @ rope(k, POS, THETA, s=s).T
    np.testing.assert_allclose(scores, s**2 * (rope(q, POS, THETA) @ rope(k, POS, THETA).T), rtol=1e-5, atol=1e-5)


def test_large_positions_stay_precise():
    theta = (10000.0 ** -(np.arange(0, 64, 2) / 64)).astype(np.float32)
    pos = np.array([2049, 4097, 30000, 65535])
    cos, sin = rope_cos_sin(pos, theta)
    ang = (np.float32(pos)[:, None] * theta).astype(np.float64)
    np.testing.assert_allclose(cos, np.cos(ang), atol=3e-7)
    np.testing.assert_allclose(sin, np.sin(ang), atol=3e-7)


@pytest.mark.parametrize("layout,r", [("half", None), ("interleaved", None), ("half", 8), ("interleaved", 8)])
def test_gradient_is_inverse_rotation(layout, r):
    x = Tensor(rng.standard_normal((4, 10 if r else 8)).astype(np.float32), requires_grad=True)
    g = rng.standard_normal(x.shape).astype(np.float32)
    cos, sin = rope_cos_sin(POS, THETA)
    apply_rope(x, cos, sin, layout, r).backward(g)
    np.testing.assert_allclose(x.grad, oracle(g, POS, THETA, layout, r, sign=-1.0), atol=1e-6)


def test_easy_to_forget():
    # float64 keeps its shape and dtype, layout defaults to "half", position 0 is the identity
    x = rng.standard_normal((4, 8))
    pos = np.array([0, 3, 9, 40])
    cos, sin = rope_cos_sin(pos, THETA)
    y = apply_rope(Tensor(x), cos, sin)
    assert y.shape == x.shape and y.dtype == np.float64
    np.testing.assert_allclose(y.data, oracle(x, pos, THETA), atol=1e-6)
    np.testing.assert_allclose(y.data[0], x[0], atol=1e-12)
    # a single pair (rotary_dim = 2) is valid
    x = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(rope(x, POS, THETA[:1], "interleaved", r=2), oracle(x, POS, THETA[:1], "interleaved", r=2), atol=1e-6)


def test_rope_spec():
    spec = RopeSpec(THETA)
    assert (spec.layout, spec.attention_scaling, spec.rotary_dim) == ("half", 1.0, 8)
    s, theta = 1.1386, THETA[:2]  # interleaved, scaled, head of 10 wider than rotary_dim 4
    spec = RopeSpec(theta, attention_scaling=s, layout="interleaved", rotary_dim=4)
    ang = (np.float32(POS)[:, None] * theta).astype(np.float64)
    cos, sin = spec.cos_sin(POS)
    np.testing.assert_allclose(cos, s * np.cos(ang), atol=1e-6)
    np.testing.assert_allclose(sin, s * np.sin(ang), atol=1e-6)
    x = rng.standard_normal((3, 4, 10)).astype(np.float32)
    np.testing.assert_allclose(spec.apply(Tensor(x), POS).data, oracle(x, POS, theta, "interleaved", 4, s), atol=2e-6)
    with pytest.raises(ValueError):
        RopeSpec(THETA, rotary_dim=6)
    mine = THETA.copy()  # the spec keeps its own read-only copy
    spec = RopeSpec(mine)
    before = spec.cos_sin(POS)[1]
    mine[:] = 1.0
    np.testing.assert_array_equal(spec.cos_sin(POS)[1], before)
    with pytest.raises(ValueError):
        spec.inv_freq[0] = 1.0


def test_bad_input_raises():
    x = Tensor(np.ones((4, 8), np.float32))
    cos, sin = rope_cos_sin(POS, THETA)
    c5, s5 = rope_cos_sin(POS, np.linspace(1.0, 0.01, 5))
    # each case wrong in one way only: tables r // 2 wide for a bad r, tables that still broadcast otherwise
    bad_apply = [
        (ValueError, dict(rotary_dim=3, cos=cos[:, :1], sin=sin[:, :1])),
        (ValueError, dict(rotary_dim=0, cos=cos[:, :0], sin=sin[:, :0])), (ValueError, dict(rotary_dim=10, cos=c5, sin=s5)),
        (ValueError, dict(sin=sin[:1])), (ValueError, dict(cos=cos[:, :1], sin=sin[:, :1])),
        (ValueError, dict(cos=cos[:3], sin=sin[:3])), (ValueError, dict(cos=cos * np.inf)),
        (ValueError, dict(layout="meta")),
    ]
    for exc, kw in bad_apply:
        args = dict(x=x, cos=cos, sin=sin) | kw
        with pytest.raises(exc):
            apply_rope(**args)
    for exc, pos, theta in [(ValueError, -1, THETA), (ValueError, [1.5], THETA), (TypeError, "3", THETA),
                            (ValueError, POS, THETA[None, :]), (ValueError, [2**24], THETA), (ValueError, POS, [2.0**105])]:
        with pytest.raises(exc):
            rope_cos_sin(pos, theta)
    for exc, s in [(ValueError, 2.0**-127), (ValueError, 1e39), (TypeError, True)]:
        with pytest.raises(exc):
            rope_cos_sin(POS, THETA, s)
    with pytest.raises(TypeError):
        apply_rope(x, cos, sin, rotary_dim=True)


def test_float32_limits_are_accepted():
    # position 2**24 - 1, frequency 2**104, scalings 2**-126 and float32's largest: finite tables
    pos = np.array([3, 2**24 - 1])
    for theta, s in [([2.0**104, 1.0], 1.0), (THETA, 2.0**-126), (THETA, float(np.finfo(np.float32).max))]:
        cos, sin = rope_cos_sin(pos, theta, s)
        ang = (np.float32(pos)[:, None] * np.float32(theta)).astype(np.float64)
        np.testing.assert_allclose(cos / np.float64(s), np.cos(ang), atol=5e-7)
        np.testing.assert_allclose(sin / np.float64(s), np.sin(ang), atol=5e-7)
