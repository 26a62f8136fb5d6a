"""L7.5 graded tests, student B: hypothesis draws head counts, sizes, positions
and caches, and an oracle judges; properties of attention besides; bad input
from the graded-tests section's list."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.attention import attention, causal_mask
from tinyllm.modern.rope import RopeSpec


def turn(t, positions, freqs, s, layout):
    r = 2 * len(freqs)
    theta = np.float32(np.asarray(positions, np.float32)[:, None]) * np.asarray(freqs, np.float32)
    c, sn = np.cos(theta.astype(np.float64)) * s, np.sin(theta.astype(np.float64)) * s
    out = t.copy()
    a = t[..., : r // 2] if layout == "half" else t[..., 0:r:2]
    b = t[..., r // 2 : r] if layout == "half" else t[..., 1:r:2]
    ra, rb = a * c - b * sn, a * sn + b * c
    if layout == "half":
        out[..., : r // 2], out[..., r // 2 : r] = ra, rb
    else:
        out[..., 0:r:2], out[..., 1:r:2] = ra, rb
    return out


def oracle(x, W, positions, H, KV, freqs, s=1.0, layout="half", past=None):
    wq, wk, wv, wo = W
    B, S, _ = x.shape
    D = wq.shape[0] // H

    def split(w, n):
        return np.moveaxis((x @ w.T).reshape(B, S, n, D), 2, 1)

    q = turn(split(wq, H), positions, freqs, s, layout)
    k = turn(split(wk, KV), positions, freqs, s, layout)
    v = split(wv, KV)
    if past:
        k, v = np.concatenate([past[0], k], 2), np.concatenate([past[1], v], 2)
    T = k.shape[2]
    group = H // KV
    scores = np.einsum("bhid,bhjd->bhij", q, np.repeat(k, group, axis=1)) / np.sqrt(D)
    allowed = np.arange(T)[None, :] <= np.arange(S)[:, None] + (T - S)
    scores = np.where(allowed, scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bhid", w, np.repeat(v, group, axis=1))
    return np.moveaxis(o, 1, 2).reshape(B, S, H * D) @ wo.T, k, v


heads = st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 2), (4, 1), (6, 2), (6, 3), (4, 4)])


@settings(max_examples=25, deadline=None)
@given(hk=heads, dim=st.sampled_from([2, 4, 6]), batch=st.integers(1, 2), seq=st.integers(1, 5),
       start=st.integers(0, 500), cached=st.integers(0, 3), layout=st.sampled_from(["half", "interleaved"]),
       scale=st.sampled_from([1.0, 1.2]), part=st.booleans(), seed=st.integers(0, 10**6))
def test_random_against_oracle(hk, dim, batch, seq, start, cached, layout, scale, part, seed):
    H, KV = hk
    rng = np.random.default_rng(seed)
    d = 6
    W = [rng.normal(0, 0.5, sh) for sh in ((H * dim, d), (KV * dim, d), (KV * dim, d), (d, H * dim))]
    freqs = np.array([1.0, 0.05, 0.002][: (1 if part and dim > 2 else dim // 2)], np.float32)
    spec = RopeSpec(freqs, attention_scaling=scale, layout=layout)
    x = rng.normal(size=(batch, seq, d))
    past = [rng.normal(size=(batch, KV, cached, dim)) for _ in range(2)] if cached else None
    positions = np.arange(start + cached, start + cached + seq)
    out, (k, v) = attention(Tensor(x), *map(Tensor, W), spec, positions, H, KV,
                            None if past is None else tuple(map(Tensor, past)))
    want = oracle(x, W, positions, H, KV, freqs, scale, layout, past)
    for got, exp in zip((out.data, k.data, v.data), want):
        np.testing.assert_allclose(got, exp, atol=2e-6)


@settings(max_examples=10, deadline=None)
@given(seq=st.integers(2, 6), j=st.integers(0, 5), seed=st.integers(0, 1000))
def test_earlier_outputs_do_not_see_later_tokens(seq, j, seed):
    j = j % seq
    rng = np.random.default_rng(seed)
    W = [Tensor(rng.normal(size=sh)) for sh in ((8, 4), (4, 4), (4, 4), (4, 8))]
    x = rng.normal(size=(1, seq, 4))
    y = x.copy()
    y[0, j] += 3.0
    spec = RopeSpec(np.array([0.5], np.float32))
    a = attention(Tensor(x), *W, spec, np.arange(seq), 2, 1)[0].data
    b = attention(Tensor(y), *W, spec, np.arange(seq), 2, 1)[0].data
    np.testing.assert_array_equal(a[0, :j], b[0, :j])
    assert np.all(np.abs(a[0, j:] - b[0, j:]).max(axis=-1) > 0)


def test_one_call_equals_token_by_token():
    rng = np.random.default_rng(3)
    W = [Tensor(rng.normal(size=sh)) for sh in ((8, 6), (4, 6), (4, 6), (6, 8))]
    x = rng.normal(size=(2, 5, 6))
    spec = RopeSpec(np.array([1.0, 0.1], np.float32))
    whole, (K, V) = attention(Tensor(x), *W, spec, np.arange(9, 14), 2, 1)
    past, outs = None, []
    for i in range(5):
        o, past = attention(Tensor(x[:, i:i + 1]), *W, spec, [9 + i], 2, 1, past)
        outs.append(o.data)
    np.testing.assert_allclose(np.concatenate(outs, 1), whole.data, atol=1e-9)
    np.testing.assert_allclose(past[0].data, K.data, atol=1e-12)
    np.testing.assert_allclose(past[1].data, V.data, atol=1e-12)


def test_float32_in_float32_out():
    rng = np.random.default_rng(4)
    W = [Tensor(rng.normal(size=sh).astype(np.float32)) for sh in ((8, 6), (4, 6), (4, 6), (6, 8))]
    out, (k, v) = attention(Tensor(rng.normal(size=(1, 3, 6)).astype(np.float32)), *W,
                            RopeSpec(np.array([1.0, 0.1], np.float32)), np.arange(3), 2, 1)
    assert (out.dtype, k.dtype, v.dtype) == (np.float32,) * 3


@given(new=st.integers(1, 5), old=st.integers(0, 5))
def test_mask(new, old):
    for dtype in (np.float32, np.float64):
        m = causal_mask(new, old, dtype)
        want = np.where(np.arange(new + old)[None] > np.arange(new)[:, None] + old, -np.inf, 0.0).astype(dtype)
        assert m.dtype == dtype
        np.testing.assert_array_equal(m, want)


def test_worked_example():
    I2 = Tensor(np.eye(2))
    out, _ = attention(Tensor(np.array([[[1.0, 0], [0, 1]]])), I2, I2, I2, I2, RopeSpec(np.array([np.pi / 2])),
                       [0, 1], 1, 1)
    np.testing.assert_allclose(out.data[0], [[1, 0], [0.19557, 0.80443]], atol=1e-5)


def test_backward_matches_finite_differences():
    rng = np.random.default_rng(5)
    arrays = [rng.normal(size=s) for s in ((1, 2, 4), (4, 4), (2, 4), (2, 4), (4, 4), (1, 1, 1, 2), (1, 1, 1, 2))]
    spec = RopeSpec(np.array([0.4], np.float32))
    up = rng.normal(size=(1, 2, 4))

    def loss(ts):
        out, (k, v) = attention(ts[0], *ts[1:5], spec, [1, 2], 2, 1, (ts[5], ts[6]))
        return (out * up).sum() + k.sum() + (v * 2.0).sum()

    ts = [Tensor(a, requires_grad=True) for a in arrays]
    loss(ts).backward()
    for n in range(len(arrays)):
        est = np.zeros_like(arrays[n])
        for idx in np.ndindex(arrays[n].shape):
            vals = []
            for sign in (1, -1):
                moved = [a.copy() for a in arrays]
                moved[n][idx] += sign * 1e-6
                vals.append(loss([Tensor(a) for a in moved]).data)
            est[idx] = (vals[0] - vals[1]) / 2e-6
        np.testing.assert_allclose(ts[n].grad, est, atol=1e-5)


def ok_args():
    return dict(x=Tensor(np.ones((1, 2, 6))), wq=Tensor(np.ones((8, 6))), wk=Tensor(np.ones((4, 6))),
                wv=Tensor(np.ones((4, 6))), wo=Tensor(np.ones((6, 8))), rope=RopeSpec(np.array([1.0, 0.1])),
                positions=[0, 1], n_heads=2, n_kv_heads=1)


@pytest.mark.parametrize("key, value, error", [
    ("n_heads", 3, ValueError), ("n_heads", 0, ValueError), ("n_kv_heads", True, ValueError),
    ("wk", Tensor(np.ones((8, 6))), ValueError), ("wo", Tensor(np.ones((8, 6))), ValueError),
    ("wq", Tensor(np.ones((8, 5))), ValueError), ("wv", Tensor(np.ones((2, 6))), ValueError),
    ("rope", RopeSpec(np.ones(3)), ValueError), ("positions", [0], ValueError), ("x", Tensor(np.ones((2, 6))), ValueError),
    ("x", np.ones((1, 2, 6)), TypeError), ("rope", "half", TypeError), ("wv", np.ones((4, 6)), TypeError),
    ("past", Tensor(np.ones((1, 1, 2, 4))), TypeError),
    ("past", (Tensor(np.ones((1, 1, 2, 4))), Tensor(np.ones((1, 1, 1, 4)))), ValueError),
    ("past", (Tensor(np.ones((1, 3, 2, 4))), Tensor(np.ones((1, 3, 2, 4)))), ValueError),
])
def test_refuses(key, value, error):
    args = ok_args()
    args[key] = value
    with pytest.raises(error):
        attention(**args)


@pytest.mark.parametrize("key, value", [("n_heads", 1), ("rope", RopeSpec(np.array([1.0]))), ("positions", np.array([4, 5]))])
def test_accepts_edges(key, value):
    args = ok_args()
    args[key] = value
    if key == "n_heads":
        args["wq"], args["wo"] = Tensor(np.ones((4, 6))), Tensor(np.ones((6, 4)))
    out, _ = attention(**args)
    assert out.shape == (1, 2, 6)
