"""The instructor's model answer to L7.7's graded tests.

A student-style suite: it imports only what the catalog allows, and judges
sliding_attention, window_mask and layer_settings by what they return and
raise, against an independent oracle: the chapter's rules written out in
numpy float64, query by query and key by key, with RoPE as complex
multiplication.  `ol verify L7.7` checks it kills every counted mutant and
every pitfall (score 1.0).
"""

import math

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec
from tinyllm.modern.sliding_window import layer_settings, sliding_attention, window_mask

LADDER = np.array([1.0, 0.1], np.float32)  # D = 4: two pairs
ATOL = 1e-9  # float64 inputs and the spec's own tables on both sides


# ---- the oracle: chapter sections 3 to 7, in float64 ------------------------------------------------


def rotate(x, positions, spec):
    """RoPE on x [..., S, D] float64: pair i (picked by the spec's layout, among its first
    rotary_dim entries) as a + ib, times cos + i sin from the spec's own float32 tables."""
    cos, sin = (np.asarray(t, np.float64) for t in spec.cos_sin(np.asarray(positions)))
    r = spec.rotary_dim
    a = np.arange(r // 2) if spec.layout == "half" else np.arange(0, r, 2)
    b = a + r // 2 if spec.layout == "half" else a + 1
    turned = (x[..., a] + 1j * x[..., b]) * (cos + 1j * sin)
    out = x.copy()
    out[..., a], out[..., b] = turned.real, turned.imag
    return out


def oracle(q, k, v, positions, window=None, past=None, scale=None, spec=None):
    """(out [B, S, H*D], K, V kept) in float64, one query and one key at a time."""
    spec = RopeSpec(LADDER) if spec is None else spec
    batch, heads, seq, dim = q.shape
    kv = k.shape[1]
    first = positions[0]
    q = rotate(q, positions, spec)
    k = rotate(k, positions, spec)
    if past is not None:
        k, v = np.concatenate([past[0], k], axis=2), np.concatenate([past[1], v], axis=2)
    n_past = k.shape[2] - seq
    scale = 1 / math.sqrt(dim) if scale is None else scale
    out = np.zeros((batch, seq, heads * dim))
    for b in range(batch):
        for h in range(heads):
            g = h // (heads // kv)
            for i in range(seq):
                p = first + i
                seen = [j for j in range(n_past + seq)
                        if first - n_past + j <= p and (window is None or p - (first - n_past + j) < window)]
                scores = np.array([q[b, h, i] @ k[b, g, j] * scale for j in seen])
                w = np.exp(scores - scores.max())
                out[b, i, h * dim:(h + 1) * dim] = (w / w.sum()) @ v[b, g, seen]
    if window is not None:
        keep = min(window - 1, k.shape[2])
        k, v = k[:, :, k.shape[2] - keep:], v[:, :, v.shape[2] - keep:]
    return out, k, v


def heads(seed, batch=1, n_heads=4, kv=2, seq=6, dim=4):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((batch, n, seq, dim)) for n in (n_heads, kv, kv)]


def run(q, k, v, spec, positions, window=None, past=None, scale=None):
    past = None if past is None else tuple(Tensor(p) for p in past)
    out, (kk, vv) = sliding_attention(Tensor(q), Tensor(k), Tensor(v), spec, positions, window, past, scale)
    return out, kk, vv


def assert_like_oracle(got, want, what):
    for name, a, b in zip(("output", "K", "V"), got, want):
        assert isinstance(a, Tensor), f"{what}: the {name} is not a Tensor"
        assert a.shape == b.shape, f"{what}: {name} shape {a.shape}, expected {b.shape}"
        np.testing.assert_allclose(a.data, b, rtol=0, atol=ATOL, err_msg=f"{what}: {name}")


# ---- the tests ----------------------------------------------------------------------------------------


def test_hand_example():
    x = np.array([[[[1.0, 0], [0, 1], [1, 0]]]])
    out, (k, v) = sliding_attention(Tensor(x), Tensor(x), Tensor(x), RopeSpec(np.array([np.pi / 2])), [0, 1, 2], 2)
    w = 1 / (1 + math.exp(math.sqrt(2)))
    np.testing.assert_allclose(out.data[0], [[1, 0], [w, 1 - w], [0.5, 0.5]], atol=1e-6)
    np.testing.assert_allclose(k.data[0, 0], [[-1, 0]], atol=1e-6)
    np.testing.assert_allclose(v.data[0, 0], [[1, 0]], atol=1e-12)


@pytest.mark.parametrize("window", [None, 1, 2, 3, 5, 6, 7])
@pytest.mark.parametrize("kv", [1, 2, 4])
def test_matches_the_oracle(window, kv):
    # two rows, positions that do not start at 0, windows below, at and above the length
    q, k, v = heads(1, batch=2, kv=kv)
    positions = np.arange(9, 15)
    got = run(q, k, v, RopeSpec(LADDER), positions, window)
    assert_like_oracle(got, oracle(q, k, v, positions, window), f"{kv} key/value heads, window {window}")


@pytest.mark.parametrize("window", [None, 1, 2, 3, 4])
def test_through_the_cache(window):
    # 5 tokens, then 2, then 1, each call with the cache the one before handed on
    q, k, v = heads(2, seq=8)
    spec = RopeSpec(LADDER)
    past_got, past_want = None, None
    for a, b in ((0, 5), (5, 7), (7, 8)):
        positions = np.arange(20 + a, 20 + b)
        piece = (q[:, :, a:b], k[:, :, a:b], v[:, :, a:b])
        got = run(*piece, spec, positions, window, past_got)
        want = oracle(*piece, positions, window, past_want)
        assert_like_oracle(got, want, f"window {window}, tokens {a}..{b - 1}")
        past_got, past_want = (got[1].data, got[2].data), want[1:]
    whole = run(q, k, v, spec, np.arange(20, 28), window)
    np.testing.assert_allclose(got[0].data, whole[0].data[:, 7:], atol=ATOL)


def test_an_untrimmed_past_is_masked_by_position():
    # a past of 5 keys with window 3: the oldest ones are out of reach
    q, k, v = heads(3, seq=2)
    past = [np.random.default_rng(4).standard_normal((1, 2, 5, 4)) for _ in range(2)]
    got = run(q, k, v, RopeSpec(LADDER), [5, 6], 3, past)
    assert_like_oracle(got, oracle(q, k, v, [5, 6], 3, past), "a past longer than the window")


def test_past_as_a_list_and_scale():
    q, k, v = heads(5, seq=1)
    past = [np.random.default_rng(6).standard_normal((1, 2, 2, 4)) for _ in range(2)]
    out, (kk, vv) = sliding_attention(Tensor(q), Tensor(k), Tensor(v), RopeSpec(LADDER), [2], 2,
                                      [Tensor(p) for p in past], 0.3)
    assert_like_oracle((out, kk, vv), oracle(q, k, v, [2], 2, past, 0.3), "past as a list, scale 0.3")
    for scale in (1, 2.5):
        got = run(q, k, v, RopeSpec(LADDER), [2], None, past, scale)
        assert_like_oracle(got, oracle(q, k, v, [2], None, past, scale), f"scale {scale}")


def test_spec_fields_are_used():
    q, k, v = heads(7, seq=4)
    spec = RopeSpec(np.array([0.9], np.float32), attention_scaling=1.3, layout="interleaved")
    got = run(q, k, v, spec, np.arange(3, 7), 2)
    want = oracle(q, k, v, np.arange(3, 7), 2, spec=spec)
    assert_like_oracle(got, want, "an interleaved, scaled, partial RopeSpec")
    big = [scale * a for scale, a in zip((2, 2, 10), heads(9, seq=6, dim=8))]   # outputs of size 40, far positions
    spec = RopeSpec(1.0 / 10000 ** (np.arange(0, 8, 2, dtype=np.float32) / 8), attention_scaling=1.3)
    got = run(*big, spec, np.arange(50, 56), 3)
    assert_like_oracle(got, oracle(*big, np.arange(50, 56), 3, spec=spec), "large values, scaling 1.3")


def test_dtypes():
    q, k, v = (a.astype(np.float32) for a in heads(8, seq=3))
    out, kk, vv = run(q, k, v, RopeSpec(LADDER), np.arange(3), 2)
    assert out.dtype == kk.dtype == vv.dtype == np.float32
    want = oracle(*(a.astype(np.float64) for a in (q, k, v)), np.arange(3), 2)
    np.testing.assert_allclose(out.data, want[0], atol=1e-5)


def test_window_mask():
    inf = -np.inf
    got = window_mask(np.arange(3), np.arange(3), 2, np.float32)
    assert got.dtype == np.float32
    assert np.array_equal(got, [[0, inf, inf], [0, 0, inf], [inf, 0, 0]])
    assert np.array_equal(window_mask([6, 7], np.arange(4, 8), 3, np.float64), [[0, 0, 0, inf], [inf, 0, 0, 0]])
    assert np.array_equal(window_mask([6], np.arange(4, 7), None, np.float64), [[0, 0, 0]])
    assert np.array_equal(window_mask([4, 5], [4, 5], 1, np.float64), [[0, inf], [inf, 0]])
    assert np.array_equal(window_mask([100], [2, 99, 100], 5, np.float64), [[inf, 0, 0]])


def test_layer_settings():
    local, world = RopeSpec(np.array([1.0, 0.1])), RopeSpec(np.array([1.0, 0.001]))
    specs = {"sliding_attention": local, "full_attention": world}
    spec, window = layer_settings("sliding_attention", specs, 512)
    assert np.array_equal(spec.inv_freq, local.inv_freq) and window == 512
    spec, window = layer_settings("full_attention", specs, 512)
    assert np.array_equal(spec.inv_freq, world.inv_freq) and window is None
    assert layer_settings("sliding_attention", specs, 1)[1] == 1
    assert layer_settings("sliding_attention", specs, np.int64(3))[1] == 3


@pytest.mark.parametrize("bad", [
    dict(layer_type="chunked"), dict(layer_type=None),
    dict(rope_specs={"sliding_attention": RopeSpec(LADDER)}),
    dict(rope_specs={"full_attention": RopeSpec(LADDER)}),
    dict(rope_specs={"sliding_attention": RopeSpec(LADDER), "full_attention": LADDER}),
    dict(rope_specs=[RopeSpec(LADDER), RopeSpec(LADDER)]),
    dict(sliding_window=0), dict(sliding_window=-4), dict(sliding_window=True), dict(sliding_window=4.0),
    dict(sliding_window=None),
])
def test_layer_settings_refuses(bad):
    args = dict(layer_type="sliding_attention",
                rope_specs={"sliding_attention": RopeSpec(LADDER), "full_attention": RopeSpec(LADDER)},
                sliding_window=4)
    args.update(bad)
    with pytest.raises(ValueError):
        layer_settings(**args)


def test_gradients():
    rng = np.random.default_rng(12)
    inputs = [rng.standard_normal(shape) for shape in ((1, 2, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2),
                                                      (1, 1, 2, 2))]
    spec = RopeSpec(np.array([0.6], np.float32))
    g = [rng.standard_normal(shape) for shape in ((1, 2, 4), (1, 1, 2, 2), (1, 1, 2, 2))]

    def total(arrays):
        out, (k, v) = sliding_attention(*arrays[:3], spec, [2, 3], 3, tuple(arrays[3:]), 0.7)
        return sum((t * gt).sum() for t, gt in zip((out, k, v), g))

    tensors = [Tensor(a, requires_grad=True) for a in inputs]
    total(tensors).backward()
    for i, a in enumerate(inputs):
        numeric = np.zeros_like(a)
        for index in np.ndindex(a.shape):
            step = np.zeros_like(a)
            step[index] = 1e-6
            up = [Tensor(b + step if j == i else b) for j, b in enumerate(inputs)]
            down = [Tensor(b - step if j == i else b) for j, b in enumerate(inputs)]
            numeric[index] = (total(up).data - total(down).data) / 2e-6
        np.testing.assert_allclose(tensors[i].grad, numeric, atol=1e-6, err_msg=f"input {i}")


def valid(**changes):
    args = dict(q=Tensor(np.ones((1, 2, 3, 4))), k=Tensor(np.ones((1, 1, 3, 4))), v=Tensor(np.ones((1, 1, 3, 4))),
                rope=RopeSpec(LADDER), positions=np.arange(3), window=2, past=None, scale=None)
    args.update(changes)
    return args


PAST = Tensor(np.zeros((1, 1, 2, 4)))


@pytest.mark.parametrize("changes", [
    {}, dict(window=None), dict(window=1), dict(window=np.int64(2)), dict(positions=[5, 6, 7]),
    dict(past=(PAST, PAST)), dict(past=[PAST, PAST]), dict(scale=2), dict(scale=np.float64(0.5)),
    dict(rope=RopeSpec(LADDER[:1])),
    dict(q=Tensor(np.ones((1, 1, 3, 4)))),
    dict(q=Tensor(np.ones((1, 1, 1, 4))), k=Tensor(np.ones((1, 1, 1, 4))), v=Tensor(np.ones((1, 1, 1, 4))),
         positions=[4]),
])
def test_valid_edges_run(changes):
    out, (k, v) = sliding_attention(**valid(**changes))
    assert out.shape[:2] == (1, valid(**changes)["q"].shape[2])


@pytest.mark.parametrize("error, changes", [
    (TypeError, dict(q=np.ones((1, 2, 3, 4)))),
    (TypeError, dict(k=np.ones((1, 1, 3, 4)))),
    (TypeError, dict(v=np.ones((1, 1, 3, 4)))),
    (TypeError, dict(rope=LADDER)),
    (ValueError, dict(q=Tensor(np.ones((2, 3, 4))))),
    (ValueError, dict(q=Tensor(np.ones((1, 1, 2, 3, 4))))),
    (ValueError, dict(k=Tensor(np.ones((1, 3, 4))), v=Tensor(np.ones((1, 3, 4))))),
    (ValueError, dict(k=Tensor(np.ones((2, 1, 3, 4))), v=Tensor(np.ones((2, 1, 3, 4))))),
    (ValueError, dict(k=Tensor(np.ones((1, 1, 2, 4))), v=Tensor(np.ones((1, 1, 2, 4))))),
    (ValueError, dict(k=Tensor(np.ones((1, 1, 3, 5))), v=Tensor(np.ones((1, 1, 3, 5))))),
    (ValueError, dict(v=Tensor(np.ones((1, 1, 3, 5))))),
    (ValueError, dict(v=Tensor(np.ones((1, 2, 3, 4))))),
    (ValueError, dict(q=Tensor(np.ones((1, 3, 3, 4))), k=Tensor(np.ones((1, 2, 3, 4))),
                      v=Tensor(np.ones((1, 2, 3, 4))))),
    (ValueError, dict(k=Tensor(np.ones((1, 0, 3, 4))), v=Tensor(np.ones((1, 0, 3, 4))))),
    (ValueError, dict(rope=RopeSpec(np.ones(3)))),
    (ValueError, dict(positions=np.arange(4))),
    (ValueError, dict(positions=np.arange(2))),
    (ValueError, dict(positions=[5])),
    (ValueError, dict(q=Tensor(np.ones((1, 2, 0, 4))), k=Tensor(np.ones((1, 1, 0, 4))),
                      v=Tensor(np.ones((1, 1, 0, 4))), positions=[])),
    (ValueError, dict(positions=np.arange(3)[None])),
    (ValueError, dict(positions=[0, 2, 3])),
    (ValueError, dict(positions=[2, 1, 0])),
    (ValueError, dict(positions=[0, 0, 1])),
    (ValueError, dict(window=0)),
    (ValueError, dict(window=-1)),
    (ValueError, dict(window=True)),
    (ValueError, dict(window=2.0)),
    (ValueError, dict(window="2")),
    (ValueError, dict(scale=0)),
    (ValueError, dict(scale=-0.5)),
    (ValueError, dict(scale=True)),
    (ValueError, dict(scale="1")),
    (TypeError, dict(past=PAST)),
    (TypeError, dict(past=(PAST,))),
    (TypeError, dict(past=(PAST, PAST, PAST))),
    (TypeError, dict(past=(PAST, PAST.data))),
    (TypeError, dict(past=(PAST.data, PAST))),
    (ValueError, dict(past=(Tensor(np.zeros((1, 2, 4))),) * 2)),
    (ValueError, dict(past=(Tensor(np.zeros((2, 1, 2, 4))),) * 2)),
    (ValueError, dict(past=(Tensor(np.zeros((1, 2, 2, 4))),) * 2)),
    (ValueError, dict(past=(Tensor(np.zeros((1, 1, 2, 5))),) * 2)),
    (ValueError, dict(past=(PAST, Tensor(np.zeros((1, 1, 3, 4)))))),
])
def test_bad_input(error, changes):
    with pytest.raises(error):
        sliding_attention(**valid(**changes))
