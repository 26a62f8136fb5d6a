"""The instructor's model answer to L7.5's graded tests.

A student-style suite: it imports only what the catalog allows, and judges
attention and causal_mask by what they return and raise, against an
independent oracle: the chapter's formulas written out in numpy float64, head
by head and query by query, with RoPE as complex multiplication.  `ol verify
L7.5` checks it kills every counted mutant and every pitfall (score 1.0).
"""

import math

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.attention import attention, causal_mask
from tinyllm.modern.rope import RopeSpec

LADDER = np.array([1.0, 0.1], np.float32)  # head_dim 4: two pairs
ATOL = 2e-6  # float64 inputs; only RoPE's tables are float32 (cos and sin of the same float32 angles)


# ---- the oracle: chapter sections 3 to 7, in float64 ----------------------------------------------


def rotate(x, positions, inv_freq, scaling=1.0, layout="half"):
    """RoPE on x [..., S, D] (float64): pair i of the first 2 len(inv_freq) entries times
    e^(i p theta_i), the angle a float32 product as HF computes it."""
    r = 2 * len(inv_freq)
    angle = (np.asarray(positions, np.float32)[:, None] * np.asarray(inv_freq, np.float32)).astype(np.float64)
    a_index = np.arange(r // 2) if layout == "half" else np.arange(0, r, 2)
    b_index = a_index + r // 2 if layout == "half" else a_index + 1
    turned = (x[..., a_index] + 1j * x[..., b_index]) * np.exp(1j * angle) * scaling
    out = x.copy()
    out[..., a_index], out[..., b_index] = turned.real, turned.imag
    return out


def oracle(x, wq, wk, wv, wo, positions, n_heads, n_kv, past=None, inv_freq=LADDER, scaling=1.0, layout="half"):
    """(out, K, V) in float64, one head and one query at a time."""
    batch, seq, _ = x.shape
    dim = wq.shape[0] // n_heads

    def heads(w, n):
        return (x @ w.T).reshape(batch, seq, n, dim).transpose(0, 2, 1, 3)

    q = rotate(heads(wq, n_heads), positions, inv_freq, scaling, layout)
    k = rotate(heads(wk, n_kv), positions, inv_freq, scaling, layout)
    v = heads(wv, n_kv)
    if past is not None:
        k, v = np.concatenate([past[0], k], axis=2), np.concatenate([past[1], v], axis=2)
    n_past = k.shape[2] - seq
    out = np.zeros((batch, seq, n_heads * dim))
    for b in range(batch):
        for h in range(n_heads):
            g = h // (n_heads // n_kv)
            for i in range(seq):
                visible = n_past + i + 1
                scores = k[b, g, :visible] @ q[b, h, i] / math.sqrt(dim)
                weights = np.exp(scores - scores.max())
                out[b, i, h * dim:(h + 1) * dim] = (weights / weights.sum()) @ v[b, g, :visible]
    return out @ wo.T, k, v


def layer(seed, d=8, n_heads=4, n_kv=2, dim=4):
    rng = np.random.default_rng(seed)
    return [0.5 * rng.standard_normal(shape) for shape in
            ((n_heads * dim, d), (n_kv * dim, d), (n_kv * dim, d), (d, n_heads * dim))]


def run(x, weights, spec, positions, n_heads, n_kv, past=None):
    past = None if past is None else tuple(Tensor(p) for p in past)
    out, (k, v) = attention(Tensor(x), *[Tensor(w) for w in weights], spec, positions, n_heads, n_kv, past)
    return out, k, v


def assert_like_oracle(got, want, what):
    for name, a, b in zip(("output", "K", "V"), got, want):
        assert isinstance(a, Tensor), f"{what}: the {name} is not a Tensor"
        assert a.shape == b.shape, f"{what}: {name} shape {a.shape}, expected {b.shape}"
        np.testing.assert_allclose(a.data, b, rtol=0, atol=ATOL, err_msg=f"{what}: {name}")


# ---- the tests ---------------------------------------------------------------------------------------


def test_hand_example():
    # Chapter section 10: x0 = (1, 0), x1 = (0, 1), identity projections, a quarter turn per position.
    eye = Tensor(np.eye(2))
    out, (k, v) = attention(Tensor(np.array([[[1.0, 0], [0, 1]]])), eye, eye, eye, eye,
                            RopeSpec(np.array([np.pi / 2])), np.array([0, 1]), 1, 1)
    np.testing.assert_allclose(k.data[0, 0], [[1, 0], [-1, 0]], atol=1e-6)
    np.testing.assert_allclose(v.data[0, 0], [[1, 0], [0, 1]], atol=1e-12)
    w = 1 / (1 + math.exp(math.sqrt(2)))
    np.testing.assert_allclose(out.data[0], [[1, 0], [w, 1 - w]], atol=1e-6)


@pytest.mark.parametrize("n_kv", [1, 2, 4])
def test_matches_the_oracle(n_kv):
    # 4 query heads on 1 (multi-query), 2 (grouped) and 4 (multi-head) key/value heads,
    # two rows, positions that do not start at 0.
    weights = layer(1, n_kv=n_kv)
    x = np.random.default_rng(2).standard_normal((2, 5, 8))
    positions = np.arange(7, 12)
    got = run(x, weights, RopeSpec(LADDER), positions, 4, n_kv)
    assert_like_oracle(got, oracle(x, *weights, positions, 4, n_kv), f"{n_kv} key/value heads")


def test_with_a_cache():
    weights = layer(3)
    rng = np.random.default_rng(4)
    first, second = rng.standard_normal((1, 3, 8)), rng.standard_normal((1, 2, 8))
    spec = RopeSpec(LADDER)
    _, k, v = run(first, weights, spec, np.arange(3), 4, 2)
    want_first = oracle(first, *weights, np.arange(3), 4, 2)
    np.testing.assert_allclose(k.data, want_first[1], atol=ATOL)
    got = run(second, weights, spec, np.array([3, 4]), 4, 2, past=(k.data, v.data))
    assert_like_oracle(got, oracle(second, *weights, [3, 4], 4, 2, past=want_first[1:]), "after 3 cached tokens")
    whole = np.concatenate([first, second], axis=1)
    np.testing.assert_allclose(got[0].data, run(whole, weights, spec, np.arange(5), 4, 2)[0].data[:, 3:], atol=ATOL)


def test_past_may_be_a_list():
    weights = layer(5)
    x = np.random.default_rng(6).standard_normal((1, 1, 8))
    past = [np.random.default_rng(7).standard_normal((1, 2, 2, 4)) for _ in range(2)]
    out, (k, v) = attention(Tensor(x), *[Tensor(w) for w in weights], RopeSpec(LADDER), [2], 4, 2,
                            [Tensor(p) for p in past])
    assert_like_oracle((out, k, v), oracle(x, *weights, [2], 4, 2, past=past), "past as a list")


def test_spec_fields_are_used():
    # Interleaved pairs, a scaling, and a head wider than the rotary dim (2 of 4 rotate).
    weights = layer(8)
    x = np.random.default_rng(9).standard_normal((1, 4, 8))
    spec = RopeSpec(np.array([0.9], np.float32), attention_scaling=1.3, layout="interleaved")
    got = run(x, weights, spec, np.arange(5, 9), 4, 2)
    want = oracle(x, *weights, np.arange(5, 9), 4, 2, inv_freq=[0.9], scaling=1.3, layout="interleaved")
    assert_like_oracle(got, want, "an interleaved, scaled, partial RopeSpec")


def test_dtypes():
    weights = [w.astype(np.float32) for w in layer(10)]
    x = np.random.default_rng(11).standard_normal((1, 3, 8)).astype(np.float32)
    out, k, v = run(x, weights, RopeSpec(LADDER), np.arange(3), 4, 2)
    assert out.dtype == k.dtype == v.dtype == np.float32
    want = oracle(x.astype(np.float64), *[w.astype(np.float64) for w in weights], np.arange(3), 4, 2)
    np.testing.assert_allclose(out.data, want[0], atol=1e-5)


def test_causal_mask():
    assert np.array_equal(causal_mask(3, 0, np.float64), np.array([[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]]))
    got = causal_mask(2, 2, np.float32)
    assert got.dtype == np.float32 and np.array_equal(got, np.array([[0, 0, 0, -np.inf], [0, 0, 0, 0]], np.float32))


def test_gradients():
    # float64 central differences of sum(out * g) + sum(K * gk) + sum(V * gv) for every input.
    rng = np.random.default_rng(12)
    weights = layer(13, d=4, n_heads=2, n_kv=1, dim=2)
    x, past = rng.standard_normal((1, 2, 4)), [rng.standard_normal((1, 1, 1, 2)) for _ in range(2)]
    spec = RopeSpec(np.array([0.6], np.float32))
    g = [rng.standard_normal(shape) for shape in ((1, 2, 4), (1, 1, 3, 2), (1, 1, 3, 2))]
    inputs = [x, *weights, *past]

    def total(arrays):
        out, (k, v) = attention(arrays[0], *arrays[1:5], spec, [1, 2], 2, 1, tuple(arrays[5:]))
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
    args = dict(x=Tensor(np.ones((1, 3, 8))), wq=Tensor(np.ones((8, 8))), wk=Tensor(np.ones((4, 8))),
                wv=Tensor(np.ones((4, 8))), wo=Tensor(np.ones((8, 8))), rope=RopeSpec(LADDER),
                positions=np.arange(3), n_heads=2, n_kv_heads=1, past=None)
    args.update(changes)
    return args


PAST = Tensor(np.zeros((1, 1, 2, 4)))


@pytest.mark.parametrize("changes", [
    {}, dict(n_heads=1, n_kv_heads=1, wk=Tensor(np.ones((4, 8))), wq=Tensor(np.ones((4, 8))), wo=Tensor(np.ones((8, 4)))),
    dict(rope=RopeSpec(LADDER[:1])), dict(positions=[0, 1, 2]), dict(past=(PAST, PAST)),
    dict(n_heads=np.int64(2)),
])
def test_valid_edges_run(changes):
    out, (k, v) = attention(**valid(**changes))
    assert out.shape == (1, 3, 8) and k.shape[2] == 3 + (2 if "past" in changes else 0)


@pytest.mark.parametrize("error, changes", [
    (TypeError, dict(x=np.ones((1, 3, 8)))),
    (TypeError, dict(wq=np.ones((8, 8)))),
    (TypeError, dict(wk=np.ones((4, 8)))),
    (TypeError, dict(wv=np.ones((4, 8)))),
    (TypeError, dict(wo=np.ones((8, 8)))),
    (TypeError, dict(rope=LADDER)),
    (ValueError, dict(n_heads=0)),
    (ValueError, dict(n_kv_heads=0)),
    (ValueError, dict(n_heads=-2)),
    (ValueError, dict(n_kv_heads=True)),
    (ValueError, dict(n_heads=2.0)),
    (ValueError, dict(n_heads=3)),
    (ValueError, dict(x=Tensor(np.ones((3, 8))))),
    (ValueError, dict(x=Tensor(np.ones((1, 1, 3, 8))))),
    (ValueError, dict(wq=Tensor(np.ones((8, 7))))),
    (ValueError, dict(wk=Tensor(np.ones((8, 8))))),
    (ValueError, dict(wk=Tensor(np.ones((4, 7))))),
    (ValueError, dict(wv=Tensor(np.ones((8, 8))))),
    (ValueError, dict(wv=Tensor(np.ones((4, 7))))),
    (ValueError, dict(wo=Tensor(np.ones((8, 7))))),
    (ValueError, dict(wo=Tensor(np.ones((7, 8))))),
    (ValueError, dict(wq=Tensor(np.ones((1, 8))))),
    (ValueError, dict(rope=RopeSpec(np.ones(3)))),
    (ValueError, dict(positions=np.arange(4))),
    (ValueError, dict(positions=np.arange(3)[None])),
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
        attention(**valid(**changes))
