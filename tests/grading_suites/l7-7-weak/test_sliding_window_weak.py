"""A weak L7.7 suite, honest but narrow: its windows are never smaller than
the sequence a call sees, so the window never hides a key.  It checks the
output against an oracle, the mask, layer_settings and bad input, but it can
see neither the window's edge (pitfall w01) nor a cache that keeps and lets in
what the window no longer sees (w05), so `ol check` must fail it
(tests/end_to_end/test_calibration.py)."""

import math

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec
from tinyllm.modern.sliding_window import layer_settings, sliding_attention, window_mask


def plain_attention(q, k, v, positions, freqs):
    """Causal attention with no window, in float64, RoPE as complex numbers."""
    n = len(freqs)
    angle = (np.asarray(positions, np.float32)[:, None] * np.asarray(freqs, np.float32)).astype(float)

    def turn(x):
        z = (x[..., :n] + 1j * x[..., n:2 * n]) * np.exp(1j * angle)
        return np.concatenate([z.real, z.imag, x[..., 2 * n:]], axis=-1)

    q, k = turn(q), turn(k)
    batch, heads, seq, dim = q.shape
    group = heads // k.shape[1]
    out = np.zeros((batch, seq, heads * dim))
    for b in range(batch):
        for h in range(heads):
            for i in range(seq):
                s = k[b, h // group, : i + 1] @ q[b, h, i] / math.sqrt(dim)
                w = np.exp(s - s.max())
                out[b, i, h * dim:(h + 1) * dim] = w @ v[b, h // group, : i + 1] / w.sum()
    return out


@pytest.mark.parametrize("kv", [1, 2])
@pytest.mark.parametrize("window", [None, 5, 8])
def test_matches_causal_attention(kv, window):
    rng = np.random.default_rng(kv)
    q, k, v = (rng.normal(size=(1, n, 5, 4)) for n in (2, kv, kv))
    out, _ = sliding_attention(Tensor(q), Tensor(k), Tensor(v), RopeSpec(np.array([1.0, 0.1])), np.arange(5), window)
    np.testing.assert_allclose(out.data, plain_attention(q, k, v, np.arange(5), [1.0, 0.1]), atol=1e-6)


def test_offset_positions_with_a_long_window():
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(1, n, 4, 4)) for n in (2, 2, 2))
    out, _ = sliding_attention(Tensor(q), Tensor(k), Tensor(v), RopeSpec(np.array([1.0, 0.1])), np.arange(20, 24), 6)
    np.testing.assert_allclose(out.data, plain_attention(q, k, v, np.arange(20, 24), [1.0, 0.1]), atol=1e-6)


def test_mask_is_causal_inside_a_long_window():
    m = window_mask(np.arange(3), np.arange(3), 10, np.float32)
    assert m.dtype == np.float32
    assert np.array_equal(m == 0, np.tril(np.ones((3, 3), bool)))


def test_layer_settings():
    a, b = RopeSpec(np.array([1.0, 0.1])), RopeSpec(np.array([1.0, 0.01]))
    specs = {"sliding_attention": a, "full_attention": b}
    assert layer_settings("sliding_attention", specs, 4)[1] == 4
    assert layer_settings("full_attention", specs, 4)[1] is None
    assert np.array_equal(layer_settings("full_attention", specs, 4)[0].inv_freq, b.inv_freq)
    assert np.array_equal(layer_settings("sliding_attention", specs, 4)[0].inv_freq, a.inv_freq)


@pytest.mark.parametrize("changes", [dict(window=0), dict(positions=[0, 2, 3]), dict(scale=-1.0)])
def test_refuses(changes):
    args = dict(q=Tensor(np.ones((1, 1, 3, 4))), k=Tensor(np.ones((1, 1, 3, 4))), v=Tensor(np.ones((1, 1, 3, 4))),
                rope=RopeSpec(np.array([1.0, 0.1])), positions=[0, 1, 2], window=4)
    args.update(changes)
    with pytest.raises(ValueError):
        sliding_attention(**args)
