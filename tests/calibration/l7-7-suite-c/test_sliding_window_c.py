"""L7.7 graded tests, student C: one compact test per bullet of section 13."""

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec
from tinyllm.modern.sliding_window import layer_settings, sliding_attention, window_mask

F = np.array([1.0, 0.1], np.float32)


def rot(x, pos, f=F, s=1.0, interleaved=False):
    n = len(f)
    ang = (np.float32(1) * np.asarray(pos, np.float32)[:, None] * np.asarray(f, np.float32)).astype(float)
    a = np.arange(0, 2 * n, 2) if interleaved else np.arange(n)
    b = a + 1 if interleaved else a + n
    z = (x[..., a] + 1j * x[..., b]) * np.exp(1j * ang) * s
    y = x.copy()
    y[..., a], y[..., b] = z.real, z.imag
    return y


def oracle(q, k, v, pos, W, past=None, scale=None, **kw):
    B, H, S, D = q.shape
    G = H // k.shape[1]
    q, k = rot(q, pos, **kw), rot(k, pos, **kw)
    if past:
        k, v = np.concatenate([past[0], k], 2), np.concatenate([past[1], v], 2)
    T = k.shape[2]
    kp = np.arange(pos[0] - (T - S), pos[0] + S)
    out = np.zeros((B, S, H * D))
    for b in range(B):
        for h in range(H):
            for i in range(S):
                m = (kp <= pos[0] + i) & (pos[0] + i - kp < (W or 10**9))
                s = np.array([q[b, h, i] @ kk for kk in k[b, h // G]]) * (scale or D ** -0.5)
                w = np.where(m, np.exp(s - s[m].max()), 0)
                out[b, i, h * D:(h + 1) * D] = w @ v[b, h // G] / w.sum()
    keep = T if W is None else min(W - 1, T)
    return out, k[:, :, T - keep:], v[:, :, T - keep:]


def attn(q, k, v, pos, W, past=None, scale=None, spec=None):
    return sliding_attention(Tensor(q), Tensor(k), Tensor(v), spec or RopeSpec(F), pos, W,
                             None if past is None else tuple(map(Tensor, past)), scale)


def close(got, want):
    out, (k, v) = got
    for a, b in zip((out, k, v), want):
        assert isinstance(a, Tensor) and a.shape == b.shape
        np.testing.assert_allclose(a.data, b, atol=2e-6)


R = np.random.default_rng(0)


@pytest.mark.parametrize("kv", [1, 2, 4])
@pytest.mark.parametrize("W", [1, 2, 3, 6, 8, None])
def test_oracle(kv, W):
    q, k, v = R.normal(size=(2, 4, 6, 4)), R.normal(size=(2, kv, 6, 4)), R.normal(size=(2, kv, 6, 4))
    close(attn(q, k, v, list(range(3, 9)), W), oracle(q, k, v, list(range(3, 9)), W))


def test_cache_chunks_and_steps():
    q, k, v = R.normal(size=(1, 2, 7, 4)), R.normal(size=(1, 1, 7, 4)), R.normal(size=(1, 1, 7, 4))
    got_past = want_past = None
    for a, b in ((0, 4), (4, 6), (6, 7)):
        got = attn(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], list(range(a, b)), 3, got_past)
        want = oracle(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], list(range(a, b)), 3, want_past)
        close(got, want)
        got_past, want_past = [got[1][0].data, got[1][1].data], want[1:]
    whole = attn(q, k, v, list(range(7)), 3)
    np.testing.assert_allclose(got[0].data, whole[0].data[:, 6:], atol=2e-6)
    first = attn(q[:, :, :6], k[:, :, :6], v[:, :, :6], list(range(6)), 3)
    out, _ = sliding_attention(Tensor(q[:, :, 6:]), Tensor(k[:, :, 6:]), Tensor(v[:, :, 6:]), RopeSpec(F), [6], 3,
                               list(first[1]))
    np.testing.assert_allclose(out.data, got[0].data, atol=2e-6)


def test_long_past():
    q, k, v = R.normal(size=(1, 2, 2, 4)), R.normal(size=(1, 1, 2, 4)), R.normal(size=(1, 1, 2, 4))
    past = [R.normal(size=(1, 1, 5, 4)) for _ in range(2)]
    close(attn(q, k, v, [5, 6], 2, past), oracle(q, k, v, [5, 6], 2, past))


def test_spec_fields_and_scale():
    spec = RopeSpec(np.array([0.8], np.float32), attention_scaling=1.5, layout="interleaved")
    q, k, v = R.normal(size=(1, 2, 3, 4)), R.normal(size=(1, 2, 3, 4)), R.normal(size=(1, 2, 3, 4))
    close(attn(q, k, v, [4, 5, 6], 2, scale=0.3, spec=spec),
          oracle(q, k, v, [4, 5, 6], 2, scale=0.3, f=[0.8], s=1.5, interleaved=True))


def test_float32():
    q = R.normal(size=(1, 1, 2, 4)).astype(np.float32)
    out, (k, v) = sliding_attention(Tensor(q), Tensor(q), Tensor(q), RopeSpec(F), [0, 1], 2)
    assert out.dtype == k.dtype == v.dtype == np.float32


def test_window_mask():
    m = window_mask(np.array([2, 3]), np.arange(4), 2, np.float32)
    assert m.dtype == np.float32
    assert np.array_equal(m, np.array([[-np.inf, 0, 0, -np.inf], [-np.inf, -np.inf, 0, 0]], np.float32))
    assert np.array_equal(window_mask(np.array([3]), np.arange(1, 4), None, np.float64), np.zeros((1, 3)))
    assert np.array_equal(window_mask(np.array([3]), np.arange(1, 4), 1, np.float64), [[-np.inf, -np.inf, 0]])
    assert np.array_equal(window_mask(np.array([3]), np.arange(1, 4), 3, np.float64), [[0, 0, 0]])


def test_layer_settings():
    a, b = RopeSpec(np.array([1.0, 0.5])), RopeSpec(np.array([1.0, 0.05]))
    d = {"sliding_attention": a, "full_attention": b}
    sa, fa = layer_settings("sliding_attention", d, 3), layer_settings("full_attention", d, 3)
    assert sa[1] == 3 and fa[1] is None
    assert np.array_equal(sa[0].inv_freq, a.inv_freq) and np.array_equal(fa[0].inv_freq, b.inv_freq)
    for args in (("x", d, 3), ("full_attention", {"full_attention": b}, 3), ("full_attention", d, 0)):
        with pytest.raises(ValueError):
            layer_settings(*args)


def test_gradients():
    xs = [R.normal(size=s) for s in ((1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 1, 2), (1, 1, 1, 2))]
    spec = RopeSpec(np.array([0.5]))

    def f(ts):
        o, (kk, vv) = sliding_attention(ts[0], ts[1], ts[2], spec, [1, 2], 2, (ts[3], ts[4]))
        return (o * o).sum() + (kk * 1.5).sum() + (vv * vv).sum()

    ts = [Tensor(x, requires_grad=True) for x in xs]
    f(ts).backward()
    for i, x in enumerate(xs):
        for idx in np.ndindex(x.shape):
            e = np.zeros_like(x)
            e[idx] = 1e-6
            num = (f([Tensor(y + e if j == i else y) for j, y in enumerate(xs)]).data
                   - f([Tensor(y - e if j == i else y) for j, y in enumerate(xs)]).data) / 2e-6
            assert abs(ts[i].grad[idx] - num) < 1e-6


def test_hand_example():
    x = Tensor(np.array([[[[1.0, 0], [0, 1], [1, 0]]]]))
    out, (k, v) = sliding_attention(x, x, x, RopeSpec(np.array([np.pi / 2])), [0, 1, 2], 2)
    np.testing.assert_allclose(out.data[0], [[1, 0], [0.19557, 0.80443], [0.5, 0.5]], atol=1e-5)
    np.testing.assert_allclose(k.data[0, 0], [[-1, 0]], atol=1e-6)


def base(**kw):
    d = dict(q=Tensor(np.ones((1, 2, 3, 4))), k=Tensor(np.ones((1, 1, 3, 4))), v=Tensor(np.ones((1, 1, 3, 4))),
             rope=RopeSpec(F), positions=[0, 1, 2], window=2)
    d.update(kw)
    return d


P = Tensor(np.ones((1, 1, 2, 4)))


@pytest.mark.parametrize("err, kw", [
    (TypeError, dict(q=np.ones((1, 2, 3, 4)))), (TypeError, dict(k=np.ones((1, 1, 3, 4)))),
    (TypeError, dict(v=np.ones((1, 1, 3, 4)))), (TypeError, dict(rope=F)), (TypeError, dict(past=P)),
    (TypeError, dict(past=(P, P.data))),
    (ValueError, dict(q=Tensor(np.ones((1, 2, 3))))), (ValueError, dict(k=Tensor(np.ones((1, 1, 3, 5))))),
    (ValueError, dict(v=Tensor(np.ones((1, 1, 2, 4))))),
    (ValueError, dict(q=Tensor(np.ones((1, 3, 3, 4))), k=Tensor(np.ones((1, 2, 3, 4))), v=Tensor(np.ones((1, 2, 3, 4))))),
    (ValueError, dict(rope=RopeSpec(np.ones(3)))), (ValueError, dict(positions=[0, 1])),
    (ValueError, dict(positions=[0, 1, 3])), (ValueError, dict(window=0)), (ValueError, dict(window=True)),
    (ValueError, dict(window=2.5)), (ValueError, dict(scale=-1)), (ValueError, dict(scale=True)),
    (ValueError, dict(past=(P, Tensor(np.ones((1, 1, 3, 4)))))), (ValueError, dict(past=(Tensor(np.ones((1, 2, 2, 4))),) * 2)),
])
def test_bad(err, kw):
    with pytest.raises(err):
        sliding_attention(**base(**kw))


@pytest.mark.parametrize("kw", [dict(window=1), dict(window=np.int64(2)), dict(positions=np.array([3, 4, 5])),
                                dict(q=Tensor(np.ones((1, 1, 3, 4))))])
def test_valid(kw):
    assert sliding_attention(**base(**kw))[0].shape[:2] == (1, 3)
