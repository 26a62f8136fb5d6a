"""L7.7 graded tests, student B: hypothesis draws shapes, windows, positions
and caches, and compares with a float64 oracle; bad input from the list of
section 13."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec
from tinyllm.modern.sliding_window import layer_settings, sliding_attention, window_mask


def turn(x, positions, freqs, gain=1.0, layout="half"):
    n = len(freqs)
    angles = (np.asarray(positions, np.float32)[:, None] * np.asarray(freqs, np.float32)).astype(np.float64)
    a = list(range(n)) if layout == "half" else list(range(0, 2 * n, 2))
    b = [i + n for i in a] if layout == "half" else [i + 1 for i in a]
    c = (x[..., a] + 1j * x[..., b]) * np.exp(1j * angles) * gain
    y = x.copy()
    y[..., a] = c.real
    y[..., b] = c.imag
    return y


def slow(q, k, v, positions, window, past=None, scale=None, freqs=(1.0, 0.2), gain=1.0, layout="half"):
    batch, heads, seq, dim = q.shape
    group = heads // k.shape[1]
    q = turn(q, positions, freqs, gain, layout)
    k = turn(k, positions, freqs, gain, layout)
    if past is not None:
        k = np.concatenate([past[0], k], axis=2)
        v = np.concatenate([past[1], v], axis=2)
    total = k.shape[2]
    made = positions[0] - (total - seq) + np.arange(total)
    factor = scale if scale is not None else dim ** -0.5
    out = np.empty((batch, seq, heads * dim))
    for b in range(batch):
        for h in range(heads):
            for i in range(seq):
                p = positions[0] + i
                ok = (made <= p) & ((p - made < window) if window is not None else True)
                s = k[b, h // group][ok] @ q[b, h, i] * factor
                e = np.exp(s - s.max())
                out[b, i, h * dim:(h + 1) * dim] = e @ v[b, h // group][ok] / e.sum()
    if window is not None:
        k, v = k[:, :, max(total - (window - 1), 0):], v[:, :, max(total - (window - 1), 0):]
    return out, k, v


shapes = st.tuples(st.integers(1, 2), st.sampled_from([(2, 1), (2, 2), (4, 2), (4, 1), (6, 3)]),
                   st.integers(1, 7))


@settings(max_examples=40, deadline=None)
@given(shapes, st.one_of(st.none(), st.integers(1, 9)), st.integers(0, 50), st.integers(0, 10_000))
def test_random_calls(shape, window, first, seed):
    batch, (heads, kv), seq = shape
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(batch, n, seq, 4)) for n in (heads, kv, kv))
    positions = np.arange(first, first + seq)
    out, (kk, vv) = sliding_attention(Tensor(q), Tensor(k), Tensor(v), RopeSpec(np.array([1.0, 0.2])), positions,
                                      window)
    want = slow(q, k, v, positions, window)
    assert isinstance(out, Tensor) and isinstance(kk, Tensor) and isinstance(vv, Tensor)
    for got, exp in zip((out, kk, vv), want):
        assert got.shape == exp.shape
        np.testing.assert_allclose(got.data, exp, atol=2e-6)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.integers(1, 5), st.integers(0, 10_000),
       st.booleans())
def test_random_caches(chunks, window, seed, as_list):
    rng = np.random.default_rng(seed)
    total = sum(chunks)
    q, k, v = (rng.normal(size=(1, n, total, 4)) for n in (4, 2, 2))
    spec = RopeSpec(np.array([1.0, 0.2]))
    past_got = past_want = None
    start = 0
    for size in chunks:
        cut = slice(start, start + size)
        positions = np.arange(7 + start, 7 + start + size)
        given_past = None if past_got is None else (list(past_got) if as_list else past_got)
        out, past_got = sliding_attention(Tensor(q[:, :, cut]), Tensor(k[:, :, cut]), Tensor(v[:, :, cut]), spec,
                                          positions, window, given_past)
        want = slow(q[:, :, cut], k[:, :, cut], v[:, :, cut], positions, window, past_want)
        np.testing.assert_allclose(out.data, want[0], atol=2e-6)
        np.testing.assert_allclose(past_got[0].data, want[1], atol=2e-6)
        np.testing.assert_allclose(past_got[1].data, want[2], atol=2e-6)
        past_want = want[1:]
        start += size


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 6), st.integers(0, 10_000))
def test_a_past_longer_than_the_window(window, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(1, n, 2, 4)) for n in (2, 1, 1))
    past = [rng.normal(size=(1, 1, 8, 4)) for _ in range(2)]
    out, _ = sliding_attention(Tensor(q), Tensor(k), Tensor(v), RopeSpec(np.array([1.0, 0.2])), [9, 10], window,
                               tuple(Tensor(p) for p in past))
    np.testing.assert_allclose(out.data, slow(q, k, v, [9, 10], window, past)[0], atol=2e-6)


@settings(max_examples=20, deadline=None)
@given(st.floats(0.05, 3.0), st.sampled_from(["half", "interleaved"]), st.floats(0.5, 2.0), st.integers(0, 10_000))
def test_spec_and_scale(scale, layout, gain, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(1, n, 4, 6)) for n in (2, 1, 1))
    spec = RopeSpec(np.array([0.9, 0.3], np.float32), attention_scaling=gain, layout=layout)  # 4 of 6 rotate
    out, (kk, _) = sliding_attention(Tensor(q), Tensor(k), Tensor(v), spec, np.arange(2, 6), 3, None, scale)
    want = slow(q, k, v, np.arange(2, 6), 3, None, scale, (0.9, 0.3), gain, layout)
    np.testing.assert_allclose(out.data, want[0], atol=2e-6)
    np.testing.assert_allclose(kk.data, want[1], atol=2e-6)


def test_default_scale_is_one_over_root_d():
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(1, n, 3, 4)) for n in (2, 2, 2))
    spec = RopeSpec(np.array([1.0, 0.2]))
    a = sliding_attention(Tensor(q), Tensor(k), Tensor(v), spec, [0, 1, 2], 2)[0].data
    b = sliding_attention(Tensor(q), Tensor(k), Tensor(v), spec, [0, 1, 2], 2, None, 0.5)[0].data
    np.testing.assert_allclose(a, b, atol=1e-12)


def test_float32_in_float32_out():
    rng = np.random.default_rng(2)
    q, k, v = (rng.normal(size=(1, n, 3, 4)).astype(np.float32) for n in (2, 1, 1))
    out, (kk, vv) = sliding_attention(Tensor(q), Tensor(k), Tensor(v), RopeSpec(np.array([1.0, 0.2])), [0, 1, 2], 2)
    assert out.dtype == kk.dtype == vv.dtype == np.float32


@given(st.lists(st.integers(-3, 12), min_size=1, max_size=5), st.integers(0, 12), st.one_of(st.none(), st.integers(1, 6)))
def test_window_mask_rule(queries, first_key, window):
    keys = np.arange(first_key, first_key + 6)
    mask = window_mask(np.array(queries), keys, window, np.float64)
    assert mask.shape == (len(queries), 6) and mask.dtype == np.float64
    for i, p in enumerate(queries):
        for j, key in enumerate(keys):
            visible = key <= p and (window is None or p - key < window)
            assert mask[i, j] == (0.0 if visible else -np.inf)


def test_hand_example():
    x = Tensor(np.array([[[[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]]]))
    out, (k, v) = sliding_attention(x, x, x, RopeSpec(np.array([math.pi / 2])), np.arange(3), 2)
    np.testing.assert_allclose(out.data[0, 2], [0.5, 0.5], atol=1e-6)
    np.testing.assert_allclose(out.data[0, 1], [0.195570, 0.804430], atol=1e-6)
    assert k.shape == (1, 1, 1, 2)


def test_layer_settings_both_types():
    local, world = RopeSpec(np.array([1.0, 0.3])), RopeSpec(np.array([1.0, 0.003]))
    specs = {"full_attention": world, "sliding_attention": local}
    assert layer_settings("sliding_attention", specs, 7)[1] == 7
    assert layer_settings("full_attention", specs, 7)[1] is None
    np.testing.assert_array_equal(layer_settings("sliding_attention", specs, 7)[0].inv_freq, local.inv_freq)
    np.testing.assert_array_equal(layer_settings("full_attention", specs, 7)[0].inv_freq, world.inv_freq)
    for bad in (("other", specs, 7), ("full_attention", {"full_attention": world}, 7), ("sliding_attention", specs, 0),
                ("sliding_attention", specs, True)):
        with pytest.raises(ValueError):
            layer_settings(*bad)


def test_gradients_against_differences():
    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=s) for s in ((1, 2, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2))]
    spec = RopeSpec(np.array([0.4]))
    w = [rng.normal(size=s) for s in ((1, 2, 4), (1, 1, 2, 2), (1, 1, 2, 2))]

    def loss(ts):
        o, (kk, vv) = sliding_attention(ts[0], ts[1], ts[2], spec, [2, 3], 3, (ts[3], ts[4]))
        return (o * w[0]).sum() + (kk * w[1]).sum() + (vv * w[2]).sum()

    ts = [Tensor(a, requires_grad=True) for a in arrays]
    loss(ts).backward()
    for i, a in enumerate(arrays):
        for idx in np.ndindex(a.shape):
            e = np.zeros_like(a)
            e[idx] = 1e-6
            up = loss([Tensor(x + e if j == i else x) for j, x in enumerate(arrays)]).data
            down = loss([Tensor(x - e if j == i else x) for j, x in enumerate(arrays)]).data
            assert abs(ts[i].grad[idx] - (up - down) / 2e-6) < 1e-6


ONE = Tensor(np.ones((1, 1, 2, 4)))


@pytest.mark.parametrize("kwargs, error", [
    (dict(q=np.ones((1, 2, 3, 4))), TypeError),
    (dict(rope=[1.0, 0.2]), TypeError),
    (dict(past=ONE), TypeError),
    (dict(q=Tensor(np.ones((1, 2, 3))), ), ValueError),
    (dict(k=Tensor(np.ones((1, 1, 4, 4)))), ValueError),
    (dict(v=Tensor(np.ones((1, 1, 3, 3)))), ValueError),
    (dict(q=Tensor(np.ones((1, 3, 3, 4))), k=Tensor(np.ones((1, 2, 3, 4))), v=Tensor(np.ones((1, 2, 3, 4)))), ValueError),
    (dict(rope=RopeSpec(np.ones(3))), ValueError),
    (dict(positions=[0, 1, 1]), ValueError),
    (dict(positions=[4]), ValueError),
    (dict(window=0), ValueError),
    (dict(window=False), ValueError),
    (dict(window=1.0), ValueError),
    (dict(scale=0.0), ValueError),
    (dict(scale=False), ValueError),
    (dict(past=(ONE, Tensor(np.ones((1, 1, 2, 3))))), ValueError),
    (dict(past=(Tensor(np.ones((1, 3, 2, 4))),) * 2), ValueError),
])
def test_refuses(kwargs, error):
    base = dict(q=Tensor(np.ones((1, 2, 3, 4))), k=Tensor(np.ones((1, 1, 3, 4))), v=Tensor(np.ones((1, 1, 3, 4))),
                rope=RopeSpec(np.array([1.0, 0.2])), positions=[0, 1, 2], window=2)
    base.update(kwargs)
    with pytest.raises(error):
        sliding_attention(**base)


@pytest.mark.parametrize("window", [1, np.int64(3), None])
def test_valid_edges(window):
    q = Tensor(np.ones((1, 1, 1, 4)))
    out, (kk, _) = sliding_attention(q, q, q, RopeSpec(np.array([1.0, 0.2])), [5], window)
    assert out.shape == (1, 1, 4) and kk.shape[2] == (1 if window is None else min(1, int(window) - 1))
