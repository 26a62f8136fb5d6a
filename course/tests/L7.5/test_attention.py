"""L7.5 course tests: grouped-query causal attention with RoPE against Hugging
Face's LlamaAttention, and the properties attention must have.  The twelve
tests are the table of the chapter (course/chapters/L7.5-attention.md,
section 12, "What the course tests check").

Golden values come from fixtures/L7.5/attention_hf.npz (oracle/L7.5/attention_hf.py,
transformers 5.19.0 on torch 2.13.0); the `attention_hf` fixture loads them.

Each comparison is a scenario, a function of `att` (the code under test:
attention, causal_mask) checked through the `expect` fixture
(course/tests/diagnose.py): when one fails, the same scenario runs on the
known mistakes of course/mutants/L7.5/, and the message names the one that
gives your result.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from diagnose import Expectations, Mistakes, refuses

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.attention import attention, causal_mask
from tinyllm.modern.rope import RopeSpec

# HF and numpy sum the float32 products in different orders: outputs of size
# ~10 agree to a few 1e-6; keys and values (one projection, one rotation) to ~1e-6.
OUT_ATOL = 2e-5
KV_ATOL = 5e-6

STUDENT = SimpleNamespace(attention=attention, causal_mask=causal_mask)
MISTAKES = Mistakes("L7.5", "tinyllm/modern/attention.py", names=tuple(vars(STUDENT)))


@pytest.fixture
def expect():
    """This test's comparisons; a failing one names the known mistake that gives the same result."""
    return Expectations(STUDENT, MISTAKES)


def golden_case(fx, case):
    """(x, weights, RopeSpec, positions, n_kv_heads) of a fixture case; weights as Tensors."""
    weights = tuple(Tensor(fx[f"{case}/{name}"]) for name in ("wq", "wk", "wv", "wo"))
    spec = RopeSpec(fx[f"{case}/inv_freq"], float(fx[f"{case}/attention_scaling"]))
    n_kv = fx[f"{case}/wk"].shape[0] // 8
    return Tensor(fx[f"{case}/x"]), weights, spec, fx[f"{case}/positions"], n_kv


def expect_golden(expect, fx, case, what, past_case=False):
    x, weights, spec, positions, n_kv = golden_case(fx, case)

    def run(att):
        past = None
        if past_case:
            _, past = att.attention(Tensor(fx["cache/prefill_x"]), *weights, spec, fx["cache/prefill_positions"], 4,
                                    n_kv)
        out, (k, v) = att.attention(x, *weights, spec, positions, 4, n_kv, past)
        return out.data, k.data, v.data

    expect.close(lambda att: run(att)[0], fx[f"{case}/out"], OUT_ATOL, f"{what}: the output vs HF's LlamaAttention",
                 dtype=np.float32)
    expect.close(lambda att: run(att)[1], fx[f"{case}/k"], KV_ATOL,
                 f"{what}: the returned keys K (rotated, past ones first) vs HF's cache", dtype=np.float32)
    expect.close(lambda att: run(att)[2], fx[f"{case}/v"], KV_ATOL,
                 f"{what}: the returned values V (never rotated) vs HF's cache", dtype=np.float32)


def test_hand_example(expect):
    # Chapter section 10: one head of two entries, identity projections, the pair
    # turned by a quarter turn per position (inv_freq pi/2), tokens x0 = (1, 0), x1 = (0, 1).
    eye = Tensor(np.eye(2, dtype=np.float32))
    spec = RopeSpec(np.array([np.pi / 2], np.float32))
    x = Tensor(np.array([[[1, 0], [0, 1]]], np.float32))

    def run(att):
        out, (k, v) = att.attention(x, eye, eye, eye, eye, spec, np.arange(2), 1, 1)
        return out.data[0], k.data[0, 0], v.data[0, 0]

    expect.close(lambda att: run(att)[1], [[1, 0], [-1, 0]], 1e-6, "hand example: the keys, k1 turned a quarter turn")
    expect.close(lambda att: run(att)[2], [[1, 0], [0, 1]], 1e-6, "hand example: the values, never turned")
    expect.close(lambda att: run(att)[0], [[1.0, 0.0], [0.195570, 0.804430]], 1e-6,
                 "hand example: the output (token 0 sees only itself; token 1 weighs keys 0 and 1 by "
                 "softmax(-1/sqrt(2), 1/sqrt(2)) = (0.195570, 0.804430))")


def test_gqa_golden(attention_hf, expect):
    expect_golden(expect, attention_hf, "gqa", "4 query heads sharing 2 key/value heads, positions 0..5")


def test_positions_golden(attention_hf, expect):
    # No cache, positions 100..105: RoPE turns by the positions, the mask counts keys.
    expect_golden(expect, attention_hf, "offset", "positions 100..105 without a cache")


def test_cache_golden(attention_hf, expect):
    # 4 tokens at positions 0..3 first (their K, V passed back as past), then 3 new ones at 4..6.
    x, weights, spec, _, n_kv = golden_case(attention_hf, "cache")
    expect.close(lambda att: att.attention(Tensor(attention_hf["cache/prefill_x"]), *weights, spec,
                                           attention_hf["cache/prefill_positions"], 4, n_kv)[0].data,
                 attention_hf["cache/prefill_out"], OUT_ATOL, "the prefill (4 tokens, positions 0..3) vs HF")
    expect_golden(expect, attention_hf, "cache", "3 new tokens at positions 4..6 after 4 cached ones", past_case=True)


def test_mqa_and_mha_golden(attention_hf, expect):
    expect_golden(expect, attention_hf, "mqa", "multi-query attention: 4 query heads, 1 key/value head")
    expect_golden(expect, attention_hf, "mha", "multi-head attention: 4 query heads, 4 key/value heads")


def test_scaled_rope_golden(attention_hf, expect):
    # YaRN's tables carry attention_scaling s: q and k both grow by s, the scores by s^2.
    expect_golden(expect, attention_hf, "yarn", "a YaRN RopeSpec (attention_scaling "
                  f"{float(attention_hf['yarn/attention_scaling']):.4f}) at positions 1000..1004")


def random_layer(rng, d=16, heads=4, kv=2, head_dim=4, dtype=np.float32):
    w = lambda rows, cols: Tensor((0.4 * rng.standard_normal((rows, cols))).astype(dtype))  # noqa: E731
    return w(heads * head_dim, d), w(kv * head_dim, d), w(kv * head_dim, d), w(d, heads * head_dim)


LADDER = (1.0 / 100 ** (np.arange(0, 4, 2) / 4)).astype(np.float32)  # head_dim 4: two pairs


def test_cache_equals_one_call(expect):
    # Prefill 3 tokens, then 2 steps of 1 token, then 2 more at once: the same as one call on all 7.
    rng = np.random.default_rng(75)
    weights = random_layer(rng)
    x = rng.standard_normal((2, 7, 16)).astype(np.float32)
    spec = RopeSpec(LADDER)
    start = 40  # positions 40..46: not 0, so that a rotation at the wrong position shows

    def pieces(att):
        outs, past = [], None
        for a, b in ((0, 3), (3, 4), (4, 5), (5, 7)):
            out, past = att.attention(Tensor(x[:, a:b]), *weights, spec, np.arange(start + a, start + b), 4, 2, past)
            outs.append(out.data)
        return np.concatenate(outs, axis=1), past[0].data, past[1].data

    def whole(att):
        out, (k, v) = att.attention(Tensor(x), *weights, spec, np.arange(start, start + 7), 4, 2)
        return out.data, k.data, v.data

    for index, name in enumerate(("outputs", "keys", "values")):
        expect.close(lambda att, i=index: pieces(att)[i], lambda att, i=index: whole(att)[i], 2e-6,
                     f"the {name} of a cached run (3 tokens, then 1, 1 and 2) vs one call on all 7, positions 40..46")


def test_causal_no_peeking(expect):
    # Changing token j changes nothing before it; each token sees itself.
    rng = np.random.default_rng(76)
    weights = random_layer(rng)
    x = rng.standard_normal((1, 6, 16)).astype(np.float32)
    spec = RopeSpec(LADDER)

    def changed_from(att, j):
        other = x.copy()
        other[:, j] += 1.0
        a = att.attention(Tensor(x), *weights, spec, np.arange(6), 4, 2)[0].data
        b = att.attention(Tensor(other), *weights, spec, np.arange(6), 4, 2)[0].data
        return np.abs(a - b).max(axis=(0, 2)) > 0  # [6]: which outputs moved

    for j in range(6):
        expect.equal(lambda att, j=j: changed_from(att, j), np.arange(6) >= j,
                     f"which of the 6 outputs change when token {j} changes (exactly tokens {j} and after)")


def test_interleaved_is_a_permutation_of_half(expect):
    # L7.3 section 5 at the scale of a layer: permute the rows of each q and k head from the
    # half to the interleaved pair order and rotate interleaved: the same output, keys permuted.
    rng = np.random.default_rng(77)
    wq, wk, wv, wo = random_layer(rng, head_dim=6)
    inv_freq = (1.0 / 100 ** (np.arange(0, 6, 2) / 6)).astype(np.float32)
    x = Tensor(rng.standard_normal((2, 5, 16)).astype(np.float32))
    to_interleaved = np.concatenate([[i, 3 + i] for i in range(3)])  # head rows (a0, b0, a1, b1, a2, b2)

    def rows(w, heads):
        return Tensor(w.data.reshape(heads, 6, 16)[:, to_interleaved].reshape(heads * 6, 16))

    def half(att):
        out, (k, _) = att.attention(x, wq, wk, wv, wo, RopeSpec(inv_freq), np.arange(3, 8), 4, 2)
        return out.data, k.data[..., to_interleaved]

    def interleaved(att):
        out, (k, _) = att.attention(x, rows(wq, 4), rows(wk, 2), wv, wo, RopeSpec(inv_freq, layout="interleaved"),
                                    np.arange(3, 8), 4, 2)
        return out.data, k.data

    expect.close(lambda att: interleaved(att)[0], lambda att: half(att)[0], 2e-6,
                 "the output with q/k rows permuted to the interleaved order and an interleaved RopeSpec")
    expect.close(lambda att: interleaved(att)[1], lambda att: half(att)[1], 1e-6,
                 "the keys of the interleaved run vs the half run's, permuted")


def test_gradcheck(central_difference):
    # float64, with a cache: d/dx, every weight and the past keys and values, against central differences.
    rng = np.random.default_rng(78)
    weights = [w.data.astype(np.float64) for w in random_layer(rng, d=4, heads=2, kv=1, head_dim=2)]
    x = rng.standard_normal((1, 2, 4))
    past = [rng.standard_normal((1, 1, 2, 2)) for _ in range(2)]
    spec = RopeSpec(np.array([0.7], np.float32))
    inputs = [x, *weights, *past]
    g_out, g_k, g_v = rng.standard_normal((1, 2, 4)), rng.standard_normal((1, 1, 4, 2)), rng.standard_normal((1, 1, 4, 2))

    def loss_of(tensors):
        out, (k, v) = attention(tensors[0], *tensors[1:5], spec, np.array([2, 3]), 2, 1, tuple(tensors[5:]))
        return out, k, v

    tensors = [Tensor(a, requires_grad=True) for a in inputs]
    out, k, v = loss_of(tensors)
    ((out * g_out).sum() + (k * g_k).sum() + (v * g_v).sum()).backward()
    names = ("x", "wq", "wk", "wv", "wo", "past k", "past v")
    for i, (t, a) in enumerate(zip(tensors, inputs)):
        def loss(values, i=i):
            args = [Tensor(b) for b in inputs]
            args[i] = Tensor(values)
            o, kk, vv = loss_of(args)
            return float((o.data * g_out).sum() + (kk.data * g_k).sum() + (vv.data * g_v).sum())

        assert t.grad is not None, f"no gradient reached {names[i]}"
        np.testing.assert_allclose(t.grad, central_difference(loss, a), rtol=1e-6, atol=1e-7,
                                   err_msg=f"the gradient of {names[i]} differs from central differences")


def test_causal_mask(expect):
    inf = -np.inf
    expect.equal(lambda att: att.causal_mask(3, 0, np.float32), np.array(
        [[0, inf, inf], [0, 0, inf], [0, 0, 0]], np.float32), "causal_mask(3, 0): token i sees keys 0..i")
    expect.equal(lambda att: att.causal_mask(2, 3, np.float64), np.array(
        [[0, 0, 0, 0, inf], [0, 0, 0, 0, 0]], np.float64), "causal_mask(2, 3): after 3 cached keys")
    expect.equal(lambda att: att.causal_mask(1, 4, np.float32).dtype, np.dtype(np.float32),
                 "the dtype of causal_mask(1, 4, np.float32)")


def bad_call(**changes):
    """attention on a valid small layer, with some arguments replaced."""
    rng = np.random.default_rng(79)
    wq, wk, wv, wo = random_layer(rng, d=8, heads=2, kv=1, head_dim=4)
    args = dict(x=Tensor(np.ones((1, 3, 8), np.float32)), wq=wq, wk=wk, wv=wv, wo=wo, rope=RopeSpec(LADDER),
                positions=np.arange(3), n_heads=2, n_kv_heads=1, past=None)
    args.update(changes)
    return lambda: attention(**args)


PAST = Tensor(np.zeros((1, 1, 2, 4), np.float32))
# The same layer with head_dim 6: H * D = 12 is not d = 8, so a transposed wo [12, 8] has another
# shape than wo [8, 12] (with H * D = d, as above, a transposed wo would have the right one).
WIDE_HEADS = dict(wq=Tensor(np.ones((12, 8), np.float32)), wk=Tensor(np.ones((6, 8), np.float32)),
                  wv=Tensor(np.ones((6, 8), np.float32)))
BAD = {
    "x not a Tensor": (TypeError, dict(x=np.ones((1, 3, 8), np.float32))),
    "wq not a Tensor": (TypeError, dict(wq=np.ones((8, 8), np.float32))),
    "wo not a Tensor": (TypeError, dict(wo=np.ones((8, 8), np.float32))),
    "rope not a RopeSpec": (TypeError, dict(rope=LADDER)),
    "n_heads 0": (ValueError, dict(n_heads=0, n_kv_heads=1)),
    "n_kv_heads a bool": (ValueError, dict(n_kv_heads=True)),
    "n_heads a float": (ValueError, dict(n_heads=2.0)),
    "n_heads not a multiple of n_kv_heads": (ValueError, dict(n_heads=3, n_kv_heads=2)),
    "x 2-D": (ValueError, dict(x=Tensor(np.ones((3, 8), np.float32)))),
    "wq of the wrong width": (ValueError, dict(wq=Tensor(np.ones((8, 7), np.float32)))),
    "wk for two key/value heads": (ValueError, dict(wk=Tensor(np.ones((8, 8), np.float32)))),
    "wv of the wrong height": (ValueError, dict(wv=Tensor(np.ones((5, 8), np.float32)))),
    "wo transposed": (ValueError, dict(WIDE_HEADS, wo=Tensor(np.ones((8, 12), np.float32).T.copy()))),
    "head_dim 0": (ValueError, dict(wq=Tensor(np.ones((1, 8), np.float32)))),
    "rope wider than a head": (ValueError, dict(rope=RopeSpec(np.ones(3, np.float32)))),
    "positions of another length": (ValueError, dict(positions=np.arange(4))),
    "positions 2-D": (ValueError, dict(positions=np.arange(3)[None])),
    "past a single Tensor": (TypeError, dict(past=PAST)),
    "past of three": (TypeError, dict(past=(PAST, PAST, PAST))),
    "past holding arrays": (TypeError, dict(past=(PAST.data, PAST.data))),
    "past k and v of different lengths": (ValueError, dict(past=(PAST, Tensor(np.zeros((1, 1, 3, 4), np.float32))))),
    "past for two key/value heads": (ValueError, dict(past=(Tensor(np.zeros((1, 2, 2, 4), np.float32)),) * 2)),
    "past 3-D": (ValueError, dict(past=(Tensor(np.zeros((1, 2, 4), np.float32)),) * 2)),
}


@pytest.mark.parametrize("case", list(BAD))
def test_validation(case):
    error, changes = BAD[case]
    refuses(error, bad_call(**changes), f"attention with {case}")
