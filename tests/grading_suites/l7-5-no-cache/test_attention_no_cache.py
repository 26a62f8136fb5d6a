"""A suite that never hands attention a cache (issue 27, item 3).

Calibration suite a with every test that passes `past` taken out: the
oracle cases, offset positions, grouped heads, the spec's fields, float32,
gradients, the mask and the bad inputs without a cache.  It catches every
pitfall and most mutants, and never calls what L7.5 is titled for: the
key/value cache.  It must not pass (the cache is a feature with its floor).
"""

import math

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.attention import attention, causal_mask
from tinyllm.modern.rope import RopeSpec

TOL = 2e-6


def rope(x, pos, inv_freq, scale=1.0, layout="half"):
    """x [..., S, D] float64; pairs as complex numbers times e^(i p theta)."""
    r = 2 * len(inv_freq)
    ang = (np.asarray(pos, np.float32)[:, None] * np.asarray(inv_freq, np.float32)).astype(float)
    if layout == "half":
        ia = np.arange(r // 2)
        ib = ia + r // 2
    else:
        ia = np.arange(0, r, 2)
        ib = ia + 1
    z = (x[..., ia] + 1j * x[..., ib]) * np.exp(1j * ang) * scale
    y = x.copy()
    y[..., ia] = z.real
    y[..., ib] = z.imag
    return y


def reference(x, wq, wk, wv, wo, pos, H, KV, past=None, inv_freq=(1.0, 0.01), scale=1.0, layout="half"):
    B, S, d = x.shape
    D = wq.shape[0] // H
    q = (x @ wq.T).reshape(B, S, H, D).transpose(0, 2, 1, 3)
    k = (x @ wk.T).reshape(B, S, KV, D).transpose(0, 2, 1, 3)
    v = (x @ wv.T).reshape(B, S, KV, D).transpose(0, 2, 1, 3)
    q, k = rope(q, pos, inv_freq, scale, layout), rope(k, pos, inv_freq, scale, layout)
    if past is not None:
        k = np.concatenate([past[0], k], 2)
        v = np.concatenate([past[1], v], 2)
    P = k.shape[2] - S
    heads = np.zeros((B, H, S, D))
    for b in range(B):
        for h in range(H):
            g = h // (H // KV)
            for i in range(S):
                sc = np.array([q[b, h, i] @ k[b, g, j] / math.sqrt(D) for j in range(P + i + 1)])
                w = np.exp(sc - sc.max())
                w /= w.sum()
                heads[b, h, i] = w @ v[b, g, : P + i + 1]
    return heads.transpose(0, 2, 1, 3).reshape(B, S, H * D) @ wo.T, k, v


def weights(seed, d, H, KV, D):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 0.4, s) for s in ((H * D, d), (KV * D, d), (KV * D, d), (d, H * D))]


def call(x, w, spec, pos, H, KV, past=None):
    p = None if past is None else (Tensor(past[0]), Tensor(past[1]))
    out, (k, v) = attention(Tensor(x), *map(Tensor, w), spec, pos, H, KV, p)
    return out.data, k.data, v.data


CASES = [  # (H, KV, D, batch, positions)
    (4, 2, 4, 2, [3, 4, 5, 6]),
    (4, 1, 4, 1, [0, 1, 2]),
    (4, 4, 4, 1, [10, 11, 12, 13, 14]),
    (6, 3, 4, 2, [2, 3]),
    (2, 2, 6, 1, [7]),
]


@pytest.mark.parametrize("H, KV, D, B, pos", CASES)
def test_against_oracle(H, KV, D, B, pos):
    w = weights(H * 10 + KV, 8, H, KV, D)
    x = np.random.default_rng(1).normal(size=(B, len(pos), 8))
    inv = (1.0, 0.01) if D == 4 else (1.0, 0.1, 0.01)
    got = call(x, w, RopeSpec(np.array(inv, np.float32)), np.array(pos), H, KV)
    want = reference(x, *w, pos, H, KV, inv_freq=inv)
    for g, e in zip(got, want):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, atol=TOL)


@pytest.mark.parametrize("layout, scale, inv", [("interleaved", 1.0, (1.0, 0.01)), ("half", 1.25, (1.0, 0.01)),
                                                ("half", 1.0, (0.5,)), ("interleaved", 0.8, (0.3,))])
def test_spec_fields(layout, scale, inv):
    w = weights(11, 8, 4, 2, 4)
    x = np.random.default_rng(12).normal(size=(1, 3, 8))
    spec = RopeSpec(np.array(inv, np.float32), attention_scaling=scale, layout=layout)
    got = call(x, w, spec, np.array([4, 5, 6]), 4, 2)
    want = reference(x, *w, [4, 5, 6], 4, 2, inv_freq=inv, scale=scale, layout=layout)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, atol=TOL)


def test_float32():
    w = [a.astype(np.float32) for a in weights(13, 8, 4, 2, 4)]
    x = np.random.default_rng(14).normal(size=(1, 3, 8)).astype(np.float32)
    out, (k, v) = attention(Tensor(x), *map(Tensor, w), RopeSpec(np.array([1.0, 0.01], np.float32)), np.arange(3), 4, 2)
    assert out.dtype == k.dtype == v.dtype == np.float32
    want = reference(x.astype(float), *[a.astype(float) for a in w], [0, 1, 2], 4, 2)
    np.testing.assert_allclose(out.data, want[0], atol=1e-5)


@pytest.mark.parametrize("n_new, n_past, dtype", [(3, 0, np.float32), (2, 3, np.float64), (1, 4, np.float32), (4, 1, np.float64)])
def test_mask(n_new, n_past, dtype):
    m = causal_mask(n_new, n_past, dtype)
    assert m.shape == (n_new, n_past + n_new) and m.dtype == dtype
    for i in range(n_new):
        for j in range(n_past + n_new):
            assert m[i, j] == (0 if j <= n_past + i else -np.inf)


def test_hand_example():
    eye = Tensor(np.eye(2))
    out, (k, v) = attention(Tensor(np.array([[[1.0, 0.0], [0.0, 1.0]]])), eye, eye, eye, eye,
                            RopeSpec(np.array([math.pi / 2], np.float32)), [0, 1], 1, 1)
    np.testing.assert_allclose(out.data[0], [[1, 0], [0.195570, 0.804430]], atol=1e-6)
    np.testing.assert_allclose(k.data[0, 0], [[1, 0], [-1, 0]], atol=1e-6)


def test_gradients():
    rng = np.random.default_rng(15)
    w = weights(16, 4, 2, 1, 2)
    x = rng.normal(size=(1, 2, 4))
    spec = RopeSpec(np.array([0.9], np.float32))
    g = rng.normal(size=(1, 2, 4))
    inputs = [x, *w]

    def f(arrs):
        out, _ = attention(arrs[0], *arrs[1:5], spec, [2, 3], 2, 1)
        return (out * g).sum()

    ts = [Tensor(a, requires_grad=True) for a in inputs]
    f(ts).backward()
    for n, a in enumerate(inputs):
        num = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            e = np.zeros_like(a)
            e[idx] = 1e-6
            plus = [Tensor(b + e if m == n else b) for m, b in enumerate(inputs)]
            minus = [Tensor(b - e if m == n else b) for m, b in enumerate(inputs)]
            num[idx] = (f(plus).data - f(minus).data) / 2e-6
        np.testing.assert_allclose(ts[n].grad, num, atol=1e-6)


def base(**kw):
    a = dict(x=Tensor(np.zeros((1, 2, 8))), wq=Tensor(np.zeros((8, 8))), wk=Tensor(np.zeros((4, 8))),
             wv=Tensor(np.zeros((4, 8))), wo=Tensor(np.zeros((8, 8))), rope=RopeSpec(np.array([1.0, 0.01])),
             positions=[0, 1], n_heads=2, n_kv_heads=1, past=None)
    a.update(kw)
    return a


P = Tensor(np.zeros((1, 1, 3, 4)))
TABLE = [
    (TypeError, dict(x=np.zeros((1, 2, 8)))), (TypeError, dict(wq=np.zeros((8, 8)))),
    (TypeError, dict(wk=np.zeros((4, 8)))), (TypeError, dict(wv=np.zeros((4, 8)))),
    (TypeError, dict(wo=np.zeros((8, 8)))), (TypeError, dict(rope=(1.0, 0.01))),
    (ValueError, dict(n_heads=0)), (ValueError, dict(n_kv_heads=0)), (ValueError, dict(n_heads=2.0)),
    (ValueError, dict(n_kv_heads=False)), (ValueError, dict(n_heads=3)),
    (ValueError, dict(x=Tensor(np.zeros((2, 8))))),
    (ValueError, dict(wo=Tensor(np.zeros((8, 4))))),
    (ValueError, dict(wk=Tensor(np.zeros((8, 8))))), (ValueError, dict(wv=Tensor(np.zeros((4, 6))))),
    (ValueError, dict(wq=Tensor(np.zeros((8, 6))))),
    (ValueError, dict(rope=RopeSpec(np.ones(4)))),
    (ValueError, dict(positions=[0, 1, 2])),
]


@pytest.mark.parametrize("error, kw", TABLE)
def test_bad_input(error, kw):
    with pytest.raises(error):
        attention(**base(**kw))


@pytest.mark.parametrize("kw", [dict(), dict(n_heads=1, wq=Tensor(np.zeros((4, 8))), wo=Tensor(np.zeros((8, 4)))),
                                dict(rope=RopeSpec(np.array([1.0]))), dict(n_heads=np.int32(2))])
def test_valid_edges(kw):
    out, (k, v) = attention(**base(**kw))
    assert out.shape == (1, 2, 8)
