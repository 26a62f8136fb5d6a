"""L7.7 graded tests, student A: parametrized fixed cases against a float64
oracle; bad input from the whole table of section 11."""

import math

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec
from tinyllm.modern.sliding_window import layer_settings, sliding_attention, window_mask

TOL = 2e-6
INV = (1.0, 0.05)


def rope(x, pos, inv, scale=1.0, layout="half"):
    r = 2 * len(inv)
    ang = (np.asarray(pos, np.float32)[:, None] * np.asarray(inv, np.float32)).astype(float)
    ia = np.arange(r // 2) if layout == "half" else np.arange(0, r, 2)
    ib = ia + r // 2 if layout == "half" else ia + 1
    z = (x[..., ia] + 1j * x[..., ib]) * np.exp(1j * ang) * scale
    y = x.copy()
    y[..., ia], y[..., ib] = z.real, z.imag
    return y


def reference(q, k, v, pos, W=None, past=None, scale=None, inv=INV, rs=1.0, layout="half"):
    B, H, S, D = q.shape
    KV = k.shape[1]
    q, k = rope(q, pos, inv, rs, layout), rope(k, pos, inv, rs, layout)
    if past is not None:
        k, v = np.concatenate([past[0], k], 2), np.concatenate([past[1], v], 2)
    P = k.shape[2] - S
    kpos = np.arange(pos[0] - P, pos[0] + S)
    c = 1 / math.sqrt(D) if scale is None else scale
    out = np.zeros((B, S, H * D))
    for b in range(B):
        for h in range(H):
            g = h // (H // KV)
            for i in range(S):
                p = pos[0] + i
                js = [j for j in range(P + S) if kpos[j] <= p and (W is None or p - kpos[j] < W)]
                sc = np.array([q[b, h, i] @ k[b, g, j] * c for j in js])
                w = np.exp(sc - sc.max())
                out[b, i, h * D:(h + 1) * D] = (w / w.sum()) @ v[b, g, js]
    if W is not None:
        n = min(W - 1, k.shape[2])
        k, v = k[:, :, k.shape[2] - n:], v[:, :, v.shape[2] - n:]
    return out, k, v


def rand(seed, B, H, KV, S, D=4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(B, H, S, D)), rng.normal(size=(B, KV, S, D)), rng.normal(size=(B, KV, S, D))


def call(q, k, v, spec, pos, W=None, past=None, scale=None):
    p = None if past is None else (Tensor(past[0]), Tensor(past[1]))
    out, (kk, vv) = sliding_attention(Tensor(q), Tensor(k), Tensor(v), spec, pos, W, p, scale)
    return out, kk, vv


CASES = [  # (H, KV, B, first position, S, window)
    (4, 2, 2, 0, 7, 3),
    (4, 1, 1, 5, 6, 2),
    (4, 4, 1, 10, 5, 1),
    (6, 3, 2, 2, 4, 4),
    (2, 2, 1, 0, 5, None),
    (4, 2, 1, 30, 6, 9),
]


@pytest.mark.parametrize("H, KV, B, first, S, W", CASES)
def test_against_oracle(H, KV, B, first, S, W):
    q, k, v = rand(H * 10 + KV + S, B, H, KV, S)
    pos = list(range(first, first + S))
    got = call(q, k, v, RopeSpec(np.array(INV, np.float32)), pos, W)
    want = reference(q, k, v, pos, W)
    for a, b in zip(got, want):
        assert isinstance(a, Tensor) and a.shape == b.shape
        np.testing.assert_allclose(a.data, b, atol=TOL)


@pytest.mark.parametrize("W", [1, 2, 3, 5, None])
def test_cache_steps(W):
    q, k, v = rand(3, 1, 4, 2, 8)
    spec = RopeSpec(np.array(INV, np.float32))
    got_past = want_past = None
    for a, b in ((0, 4), (4, 5), (5, 8)):
        pos = list(range(12 + a, 12 + b))
        got = call(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], spec, pos, W, got_past)
        want = reference(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], pos, W, want_past)
        for x, y in zip(got, want):
            np.testing.assert_allclose(x.data, y, atol=TOL)
        got_past, want_past = (got[1].data, got[2].data), want[1:]


def test_cache_as_list_and_long_past():
    q, k, v = rand(4, 1, 2, 1, 2)
    past = [np.random.default_rng(5).normal(size=(1, 1, 6, 4)) for _ in range(2)]
    spec = RopeSpec(np.array(INV, np.float32))
    out, (kk, vv) = sliding_attention(Tensor(q), Tensor(k), Tensor(v), spec, [6, 7], 3, [Tensor(p) for p in past])
    want = reference(q, k, v, [6, 7], 3, past)
    np.testing.assert_allclose(out.data, want[0], atol=TOL)
    np.testing.assert_allclose(kk.data, want[1], atol=TOL)


def test_scale_and_spec_fields():
    q, k, v = rand(6, 1, 2, 2, 4)
    spec = RopeSpec(np.array([0.7], np.float32), attention_scaling=1.2, layout="interleaved")
    got = call(q, k, v, spec, [3, 4, 5, 6], 2, None, 0.4)
    want = reference(q, k, v, [3, 4, 5, 6], 2, None, 0.4, inv=(0.7,), rs=1.2, layout="interleaved")
    for x, y in zip(got, want):
        np.testing.assert_allclose(x.data, y, atol=TOL)


def test_float32():
    q, k, v = (a.astype(np.float32) for a in rand(7, 1, 2, 1, 3))
    out, kk, vv = call(q, k, v, RopeSpec(np.array(INV, np.float32)), [0, 1, 2], 2)
    assert out.dtype == kk.dtype == vv.dtype == np.float32


def test_hand_example():
    x = Tensor(np.array([[[[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]]]))
    out, (k, v) = sliding_attention(x, x, x, RopeSpec(np.array([np.pi / 2])), [0, 1, 2], 2)
    np.testing.assert_allclose(out.data[0], [[1, 0], [0.195570, 0.804430], [0.5, 0.5]], atol=1e-6)
    np.testing.assert_allclose(k.data[0, 0], [[-1, 0]], atol=1e-6)
    np.testing.assert_allclose(v.data[0, 0], [[1, 0]], atol=1e-6)


@pytest.mark.parametrize("qp, kp, W, want", [
    ([0, 1, 2, 3], [0, 1, 2, 3], 2, [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]),
    ([5, 6], [3, 4, 5, 6], 3, [[1, 1, 1, 0], [0, 1, 1, 1]]),
    ([2], [0, 1, 2], None, [[1, 1, 1]]),
    ([1, 2], [1, 2], 1, [[1, 0], [0, 1]]),
])
def test_window_mask(qp, kp, W, want):
    got = window_mask(np.array(qp), np.array(kp), W, np.float64)
    assert np.array_equal(got == 0, np.array(want, bool)) and np.all(got[~np.array(want, bool)] == -np.inf)
    assert window_mask(np.array(qp), np.array(kp), W, np.float32).dtype == np.float32


def test_layer_settings():
    a, b = RopeSpec(np.array([1.0, 0.1])), RopeSpec(np.array([1.0, 0.01]))
    specs = {"sliding_attention": a, "full_attention": b}
    s, w = layer_settings("sliding_attention", specs, 5)
    assert np.array_equal(s.inv_freq, a.inv_freq) and w == 5
    s, w = layer_settings("full_attention", specs, 5)
    assert np.array_equal(s.inv_freq, b.inv_freq) and w is None


def test_gradients():
    rng = np.random.default_rng(9)
    arrays = [rng.normal(size=s) for s in ((1, 2, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 1, 2), (1, 1, 1, 2))]
    spec = RopeSpec(np.array([0.5]))
    gs = [rng.normal(size=s) for s in ((1, 2, 4), (1, 1, 1, 2), (1, 1, 1, 2))]

    def f(ts):
        o, (kk, vv) = sliding_attention(ts[0], ts[1], ts[2], spec, [1, 2], 2, (ts[3], ts[4]), 0.9)
        return (o * gs[0]).sum() + (kk * gs[1]).sum() + (vv * gs[2]).sum()

    ts = [Tensor(a, requires_grad=True) for a in arrays]
    f(ts).backward()
    for i, a in enumerate(arrays):
        num = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            e = np.zeros_like(a)
            e[idx] = 1e-6
            plus = [Tensor(x + e if j == i else x) for j, x in enumerate(arrays)]
            minus = [Tensor(x - e if j == i else x) for j, x in enumerate(arrays)]
            num[idx] = (f(plus).data - f(minus).data) / 2e-6
        np.testing.assert_allclose(ts[i].grad, num, atol=1e-6)


def ok_args(**kw):
    a = dict(q=Tensor(np.ones((1, 2, 3, 4))), k=Tensor(np.ones((1, 1, 3, 4))), v=Tensor(np.ones((1, 1, 3, 4))),
             rope=RopeSpec(np.array(INV)), positions=[0, 1, 2], window=2, past=None, scale=None)
    a.update(kw)
    return a


P = Tensor(np.zeros((1, 1, 2, 4)))
SPECS = {"sliding_attention": RopeSpec(np.array(INV)), "full_attention": RopeSpec(np.array(INV))}


@pytest.mark.parametrize("err, kw", [
    (TypeError, dict(q=np.ones((1, 2, 3, 4)))),
    (TypeError, dict(k=np.ones((1, 1, 3, 4)))),
    (TypeError, dict(v=np.ones((1, 1, 3, 4)))),
    (TypeError, dict(rope=np.array(INV))),
    (TypeError, dict(past=P)),
    (TypeError, dict(past=(P, P, P))),
    (TypeError, dict(past=(P.data, P.data))),
    (ValueError, dict(q=Tensor(np.ones((2, 3, 4))))),
    (ValueError, dict(k=Tensor(np.ones((1, 3, 4))), v=Tensor(np.ones((1, 3, 4))))),
    (ValueError, dict(k=Tensor(np.ones((1, 1, 2, 4))), v=Tensor(np.ones((1, 1, 2, 4))))),
    (ValueError, dict(k=Tensor(np.ones((1, 1, 3, 2))), v=Tensor(np.ones((1, 1, 3, 2))))),
    (ValueError, dict(k=Tensor(np.ones((2, 1, 3, 4))), v=Tensor(np.ones((2, 1, 3, 4))))),
    (ValueError, dict(v=Tensor(np.ones((1, 2, 3, 4))))),
    (ValueError, dict(q=Tensor(np.ones((1, 3, 3, 4))), k=Tensor(np.ones((1, 2, 3, 4))), v=Tensor(np.ones((1, 2, 3, 4))))),
    (ValueError, dict(k=Tensor(np.ones((1, 0, 3, 4))), v=Tensor(np.ones((1, 0, 3, 4))))),
    (ValueError, dict(rope=RopeSpec(np.ones(3)))),
    (ValueError, dict(positions=[0, 1])),
    (ValueError, dict(positions=[0, 1, 2, 3])),
    (ValueError, dict(positions=[[0, 1, 2]])),
    (ValueError, dict(positions=[0, 2, 3])),
    (ValueError, dict(positions=[2, 1, 0])),
    (ValueError, dict(window=0)),
    (ValueError, dict(window=-3)),
    (ValueError, dict(window=2.0)),
    (ValueError, dict(window=True)),
    (ValueError, dict(scale=0)),
    (ValueError, dict(scale=-1.0)),
    (ValueError, dict(scale=True)),
    (ValueError, dict(scale="x")),
    (ValueError, dict(past=(Tensor(np.zeros((1, 1, 2, 5))),) * 2)),
    (ValueError, dict(past=(Tensor(np.zeros((1, 2, 2, 4))),) * 2)),
    (ValueError, dict(past=(Tensor(np.zeros((2, 1, 2, 4))),) * 2)),
    (ValueError, dict(past=(Tensor(np.zeros((1, 2, 4))),) * 2)),
    (ValueError, dict(past=(P, Tensor(np.zeros((1, 1, 3, 4)))))),
])
def test_bad_input(err, kw):
    with pytest.raises(err):
        sliding_attention(**ok_args(**kw))


@pytest.mark.parametrize("kw", [dict(window=1), dict(window=None), dict(window=np.int32(2)), dict(scale=3),
                                dict(past=(P, P)), dict(positions=np.arange(7, 10)),
                                dict(rope=RopeSpec(np.array([1.0])))])
def test_valid_edges(kw):
    out, (kk, vv) = sliding_attention(**ok_args(**kw))
    assert out.shape == (1, 3, 8)


@pytest.mark.parametrize("args", [
    ("windowed", SPECS, 4), ("sliding_attention", {"sliding_attention": SPECS["sliding_attention"]}, 4),
    ("full_attention", {"full_attention": SPECS["full_attention"]}, 4),
    ("sliding_attention", [SPECS["sliding_attention"]], 4),
    ("sliding_attention", SPECS, 0), ("sliding_attention", SPECS, 1.5), ("full_attention", SPECS, False),
])
def test_layer_settings_refuses(args):
    with pytest.raises(ValueError):
        layer_settings(*args)
