"""The reference RoPE against an independent oracle, over random shapes,
layouts, rotary_dim and positions up to 2**24 - 1, the last one the contract
accepts (hypothesis).

The oracle is complex multiplication in numpy float64: pair (a, b) read as
a + ib by the layout's rule, times e^{i angle}.  Its angle is the one float32
product float32(p) * float32(theta) that HF and the reference compute; float64
angles would differ from it by ~1e-3 near position 65535 (hf_oracle notes).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers.reference import reference_modules

rope, tensor = reference_modules("tinyllm.modern.rope", "tinyllm.autograd.tensor")


def complex_oracle(x, angle, layout, r, scaling=1.0):
    """x [..., D] float64, angle [..., r/2] (broadcasting) -> RoPE of x."""
    rot = x[..., :r]
    a, b = (rot[..., : r // 2], rot[..., r // 2 :]) if layout == "half" else (rot[..., 0::2], rot[..., 1::2])
    z = (a + 1j * b) * np.exp(1j * angle) * scaling
    if layout == "half":
        out = np.concatenate([z.real, z.imag], axis=-1)
    else:
        out = np.stack([z.real, z.imag], axis=-1).reshape(rot.shape)
    return np.concatenate([out, x[..., r:]], axis=-1)


@st.composite
def rope_cases(draw):
    pairs = draw(st.integers(1, 8))
    r = 2 * pairs
    head_dim = r + draw(st.integers(0, 5))
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    seq = draw(st.integers(1, 5))
    positions = draw(hnp.arrays(np.int64, (seq,), elements=st.integers(0, 2**24 - 1)))
    theta = draw(st.sampled_from([10_000.0, 500_000.0, 1_000_000.0]))
    inv_freq = (1.0 / theta ** (np.arange(0, r, 2) / r)).astype(np.float32)
    x = draw(hnp.arrays(np.float64, lead + (seq, head_dim), elements=st.floats(-4, 4)))
    layout = draw(st.sampled_from(["half", "interleaved"]))
    scaling = draw(st.sampled_from([1.0, 1.1386294, 0.5]))
    return x, positions, inv_freq, layout, r, scaling


@settings(max_examples=200, deadline=None)
@given(rope_cases())
def test_apply_rope_and_tables_match_complex_multiplication(case):
    x, positions, inv_freq, layout, r, scaling = case
    cos, sin = rope.rope_cos_sin(positions, inv_freq, scaling)
    angle = (positions.astype(np.float32)[:, None] * inv_freq).astype(np.float64)
    # tables: float32 cos/sin of the float32 angle, to 2 ulp
    np.testing.assert_allclose(cos, np.cos(angle) * scaling, atol=2.5e-7 * scaling, rtol=0)
    np.testing.assert_allclose(sin, np.sin(angle) * scaling, atol=2.5e-7 * scaling, rtol=0)
    out = rope.apply_rope(tensor.Tensor(x), cos, sin, layout=layout, rotary_dim=r)
    assert out.shape == x.shape and out.dtype == np.float64
    # float64 x with float32 tables: the table error (2.5e-7 per entry) times |x| <= 4, twice
    np.testing.assert_allclose(out.data, complex_oracle(x, angle, layout, r, scaling), atol=4e-6, rtol=0)
    np.testing.assert_array_equal(out.data[..., r:], x[..., r:])


@settings(max_examples=50, deadline=None)
@given(rope_cases())
def test_backward_is_the_oracle_rotating_back(case):
    x, positions, inv_freq, layout, r, scaling = case
    cos, sin = rope.rope_cos_sin(positions, inv_freq)
    upstream = np.cos(np.arange(x.size, dtype=np.float64)).reshape(x.shape)
    xt = tensor.Tensor(x, requires_grad=True)
    rope.apply_rope(xt, cos, sin, layout=layout, rotary_dim=r).backward(upstream)
    angle = (positions.astype(np.float32)[:, None] * inv_freq).astype(np.float64)
    np.testing.assert_allclose(xt.grad, complex_oracle(upstream, -angle, layout, r), atol=4e-6, rtol=0)
