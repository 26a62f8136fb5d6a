"""L7.7 course tests: sliding-window attention against Hugging Face's Gemma 3
attention, and the properties a window must have.  The tests are the table of
the chapter (course/chapters/L7.7-sliding-window.md, section 12, "What the
course tests check").

Golden values come from fixtures/L7.7/sliding_window_hf.npz
(oracle/L7.7/sliding_window_hf.py: a small Gemma3TextModel of transformers
5.19.0 on torch 2.13.0, run whole); the `sliding_window_hf` fixture loads
them.  Each layer's RopeSpec and window come from the code under test's own
layer_settings, as a Gemma model takes them.

Each comparison is a scenario, a function of `sw` (the code under test:
sliding_attention, window_mask, layer_settings) checked through the `expect`
fixture (course/tests/diagnose.py): when one fails, the same scenario runs on
the known mistakes of course/mutants/L7.7/, and the message names the one
that gives your result.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from diagnose import Expectations, Mistakes, refuses

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec
from tinyllm.modern.sliding_window import layer_settings, sliding_attention, window_mask

# HF and numpy sum float32 products in other orders: outputs of size ~1 agree to a few 1e-7.
OUT_ATOL = 5e-6
KV_ATOL = 2e-6
WINDOW = 4                      # the fixture's sliding_window
SCALE = 16**-0.5                # its query_pre_attn_scalar ** -0.5
LAYER_TYPES = ("sliding_attention", "full_attention")

STUDENT = SimpleNamespace(sliding_attention=sliding_attention, window_mask=window_mask, layer_settings=layer_settings)
MISTAKES = Mistakes("L7.7", "tinyllm/modern/sliding_window.py", names=tuple(vars(STUDENT)))


@pytest.fixture
def expect():
    """This test's comparisons; a failing one names the known mistake that gives the same result."""
    return Expectations(STUDENT, MISTAKES)


def golden_specs(fx):
    """{layer type: RopeSpec}, from Gemma3RotaryEmbedding's inv_freq of each type."""
    return {t: RopeSpec(fx[f"{t}/inv_freq"]) for t in LAYER_TYPES}


def golden_calls(fx, case):
    """The indexes of a case's calls: 0, 1, ..."""
    calls = 0
    while f"{case}/{calls}/positions" in fx:
        calls += 1
    return range(calls)


def run_case(sw, fx, case, layer_type):
    """Every call of a case on one layer, each with the cache the one before returned:
    [(out, K, V), ...] as arrays.  The spec and the window come from sw.layer_settings."""
    spec, window = sw.layer_settings(layer_type, golden_specs(fx), WINDOW)
    results, past = [], None
    for c in golden_calls(fx, case):
        q, k, v = (Tensor(fx[f"{case}/{c}/{layer_type}/{name}"]) for name in ("q", "k", "v"))
        out, past = sw.sliding_attention(q, k, v, spec, fx[f"{case}/{c}/positions"], window, past, SCALE)
        results.append((out.data, past[0].data, past[1].data))
    return results


def expect_golden(expect, fx, case, what, cache=False):
    for layer_type in LAYER_TYPES:
        for c in golden_calls(fx, case):
            positions = fx[f"{case}/{c}/positions"]
            where = f"{what}, {layer_type} layer, call {c + 1} (positions {positions[0]}..{positions[-1]})"
            expect.close(lambda sw, t=layer_type, c=c: run_case(sw, fx, case, t)[c][0],
                         fx[f"{case}/{c}/{layer_type}/out"], OUT_ATOL,
                         f"{where}: the output vs Gemma 3's attention (the input of o_proj)", dtype=np.float32)
            if cache:
                for index, name in ((1, "cache_k"), (2, "cache_v")):
                    expect.close(lambda sw, t=layer_type, c=c, i=index: run_case(sw, fx, case, t)[c][i],
                                 fx[f"{case}/{c}/{layer_type}/{name}"], KV_ATOL,
                                 f"{where}: the cache handed on ({'keys' if index == 1 else 'values'}) vs "
                                 "transformers' DynamicCache", dtype=np.float32)


def test_hand_example(expect):
    # Chapter section 10: one head of two entries, q = k = v = the tokens (1, 0), (0, 1), (1, 0)
    # at positions 0, 1, 2, a quarter turn per position, window 2.
    spec = RopeSpec(np.array([np.pi / 2], np.float32))
    x = Tensor(np.array([[[[1, 0], [0, 1], [1, 0]]]], np.float32))

    def run(sw):
        out, (k, v) = sw.sliding_attention(x, x, x, spec, np.arange(3), 2)
        return out.data[0], k.data[0, 0], v.data[0, 0]

    expect.close(lambda sw: run(sw)[0], [[1.0, 0.0], [0.195570, 0.804430], [0.5, 0.5]], 1e-6,
                 "hand example: the output (token 2 sees keys 1 and 2, not key 0, and weighs them equally)")
    expect.close(lambda sw: run(sw)[1], [[-1.0, 0.0]], 1e-6,
                 "hand example: the cache handed on keeps window - 1 = 1 key: k2, turned by a half turn")
    expect.close(lambda sw: run(sw)[2], [[1.0, 0.0]], 1e-6, "hand example: the values kept, v2 (never turned)")


def test_sliding_golden(sliding_window_hf, expect):
    expect_golden(expect, sliding_window_hf, "prompt", "7 tokens, window 4, two rows")


def test_positions_golden(sliding_window_hf, expect):
    # No cache, positions 100..105: the window is a distance, the same at 100 as at 0.
    expect_golden(expect, sliding_window_hf, "offset", "positions 100..105 without a cache")


def test_mqa_golden(sliding_window_hf, expect):
    expect_golden(expect, sliding_window_hf, "mqa", "4 query heads on one key/value head")


def test_cache_golden(sliding_window_hf, expect):
    # A prefill of 6 (past the window), 3 more, then two single steps, each after the cache
    # the one before returned; after each call the cache must be transformers' own.
    expect_golden(expect, sliding_window_hf, "cache", "through the cache", cache=True)


def random_heads(rng, batch=1, heads=4, kv=2, seq=9, dim=4, dtype=np.float32):
    def t(n):
        return Tensor(rng.standard_normal((batch, n, seq, dim)).astype(dtype))
    return t(heads), t(kv), t(kv)


LADDER = (1.0 / 100 ** (np.arange(0, 4, 2) / 4)).astype(np.float32)  # D = 4: two pairs


def test_window_as_long_as_the_sequence_is_full_attention(expect):
    # A window of at least P + S keys hides nothing: the same output as no window (the cache differs).
    rng = np.random.default_rng(77)
    q, k, v = random_heads(rng, seq=5)
    past = tuple(Tensor(rng.standard_normal((1, 2, 3, 4)).astype(np.float32)) for _ in range(2))
    for window in (8, 9):
        expect.close(lambda sw, w=window: sw.sliding_attention(q, k, v, RopeSpec(LADDER), np.arange(3, 8), w, past)[0]
                     .data,
                     lambda sw: sw.sliding_attention(q, k, v, RopeSpec(LADDER), np.arange(3, 8), None, past)[0].data,
                     1e-6, f"window {window} over 3 cached and 5 new keys vs no window")

    def hides_key_0(sw):
        windowed = sw.sliding_attention(q, k, v, RopeSpec(LADDER), np.arange(3, 8), 7, past)[0].data
        full = sw.sliding_attention(q, k, v, RopeSpec(LADDER), np.arange(3, 8), None, past)[0].data
        return [bool(np.abs(windowed - full)[0, i].max() > 1e-4) for i in range(5)]

    expect.equal(hides_key_0, [False, False, False, False, True],
                 "which of the 5 new tokens see less with window 7 than with none (only the last: key 0 is 7 behind it)")


def test_cache_equals_one_call(expect):
    # 5 tokens, then 1, 1 and 2, each after the cache the call before returned, at positions
    # 40..48 with window 3: the same outputs as one call on all 9.
    rng = np.random.default_rng(78)
    q, k, v = random_heads(rng)
    spec = RopeSpec(LADDER)
    start = 40

    def pieces(sw):
        outs, past = [], None
        for a, b in ((0, 5), (5, 6), (6, 7), (7, 9)):
            out, past = sw.sliding_attention(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], spec,
                                             np.arange(start + a, start + b), 3, past)
            outs.append(out.data)
        return np.concatenate(outs, axis=1), past[0].data, past[1].data

    def whole(sw):
        out, (keys, values) = sw.sliding_attention(q, k, v, spec, np.arange(start, start + 9), 3)
        return out.data, keys.data, values.data

    for index, name in enumerate(("outputs", "cached keys", "cached values")):
        expect.close(lambda sw, i=index: pieces(sw)[i], lambda sw, i=index: whole(sw)[i], 2e-6,
                     f"the {name} of a cached run (5 tokens, then 1, 1 and 2) vs one call on all 9, window 3")


def test_window_reach(expect):
    # Changing token j changes exactly the outputs of tokens j .. j + window - 1.
    rng = np.random.default_rng(79)
    q, k, v = random_heads(rng, seq=8)
    spec = RopeSpec(LADDER)

    def changed_from(sw, j):
        moved_k, moved_v = k.data.copy(), v.data.copy()
        moved_k[:, :, j] += 1.0
        moved_v[:, :, j] += 1.0
        a = sw.sliding_attention(q, k, v, spec, np.arange(8), 3)[0].data
        b = sw.sliding_attention(q, Tensor(moved_k), Tensor(moved_v), spec, np.arange(8), 3)[0].data
        return np.abs(a - b).max(axis=(0, 2)) > 0  # [8]: which outputs moved

    for j in range(8):
        expect.equal(lambda sw, j=j: changed_from(sw, j), (np.arange(8) >= j) & (np.arange(8) < j + 3),
                     f"which of the 8 outputs change when the key and value of token {j} change (window 3: "
                     f"tokens {j} .. {j + 2})")


def test_gradcheck(central_difference):
    # float64, with a cache and a window smaller than what it sees: d/dq, dk, dv and the past.
    rng = np.random.default_rng(80)
    inputs = [rng.standard_normal(shape) for shape in ((1, 2, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2),
                                                      (1, 1, 2, 2))]
    spec = RopeSpec(np.array([0.7], np.float32))
    g_out, g_k, g_v = (rng.standard_normal(shape) for shape in ((1, 2, 4), (1, 1, 2, 2), (1, 1, 2, 2)))

    def outputs(tensors):
        return sliding_attention(*tensors[:3], spec, np.array([2, 3]), 3, tuple(tensors[3:]), 0.8)

    tensors = [Tensor(a, requires_grad=True) for a in inputs]
    out, (k, v) = outputs(tensors)
    ((out * g_out).sum() + (k * g_k).sum() + (v * g_v).sum()).backward()
    names = ("q", "k", "v", "past k", "past v")
    for i, (t, a) in enumerate(zip(tensors, inputs)):
        def loss(values, i=i):
            args = [Tensor(b) for b in inputs]
            args[i] = Tensor(values)
            o, (kk, vv) = outputs(args)
            return float((o.data * g_out).sum() + (kk.data * g_k).sum() + (vv.data * g_v).sum())

        assert t.grad is not None, f"no gradient reached {names[i]}"
        np.testing.assert_allclose(t.grad, central_difference(loss, a), rtol=1e-6, atol=1e-7,
                                   err_msg=f"the gradient of {names[i]} differs from central differences")


def test_window_mask(expect):
    inf = -np.inf
    expect.equal(lambda sw: sw.window_mask(np.arange(4), np.arange(4), 2, np.float32), np.array(
        [[0, inf, inf, inf], [0, 0, inf, inf], [inf, 0, 0, inf], [inf, inf, 0, 0]], np.float32),
        "window_mask(0..3, 0..3, window 2): each token sees itself and the one before")
    expect.equal(lambda sw: sw.window_mask(np.array([7, 8]), np.arange(4, 9), 3, np.float64), np.array(
        [[inf, 0, 0, 0, inf], [inf, inf, 0, 0, 0]], np.float64), "window_mask(7..8, keys 4..8, window 3)")
    expect.equal(lambda sw: sw.window_mask(np.array([5]), np.arange(3, 6), None, np.float32), np.zeros((1, 3), np.float32),
                 "window_mask(5, keys 3..5, no window): every earlier key")
    expect.equal(lambda sw: sw.window_mask(np.arange(2), np.arange(2), 1, np.float32), np.array(
        [[0, inf], [inf, 0]], np.float32), "window_mask with window 1: each token sees only itself")
    expect.equal(lambda sw: sw.window_mask(np.arange(2), np.arange(2), 5, np.float32).dtype, np.dtype(np.float32),
                 "the dtype of window_mask(..., np.float32)")


def test_layer_settings(expect):
    specs = {"sliding_attention": RopeSpec(np.array([1.0, 0.1], np.float32)),
             "full_attention": RopeSpec(np.array([1.0, 0.001], np.float32))}

    def settings(sw, layer_type):
        spec, window = sw.layer_settings(layer_type, specs, 512)
        return spec.inv_freq.tolist(), window

    expect.equal(lambda sw: settings(sw, "sliding_attention"), ([1.0, float(np.float32(0.1))], 512),
                 "layer_settings('sliding_attention', ...): its spec, window 512")
    expect.equal(lambda sw: settings(sw, "full_attention"), ([1.0, float(np.float32(0.001))], None),
                 "layer_settings('full_attention', ...): its own spec (base 1e6 in Gemma 3), no window")


def bad_call(**changes):
    """sliding_attention on valid small heads, with some arguments replaced."""
    rng = np.random.default_rng(81)
    q, k, v = random_heads(rng, heads=2, kv=1, seq=3)
    args = dict(q=q, k=k, v=v, rope=RopeSpec(LADDER), positions=np.arange(3), window=2, past=None, scale=None)
    args.update(changes)
    return lambda: sliding_attention(**args)


PAST = Tensor(np.zeros((1, 1, 2, 4), np.float32))
SPECS = {"sliding_attention": RopeSpec(LADDER), "full_attention": RopeSpec(LADDER)}
BAD = {
    "q not a Tensor": (TypeError, dict(q=np.ones((1, 2, 3, 4), np.float32))),
    "v not a Tensor": (TypeError, dict(v=np.ones((1, 1, 3, 4), np.float32))),
    "rope not a RopeSpec": (TypeError, dict(rope=LADDER)),
    "q 3-D": (ValueError, dict(q=Tensor(np.ones((2, 3, 4), np.float32)))),
    "k for another length": (ValueError, dict(k=Tensor(np.ones((1, 1, 2, 4), np.float32)))),
    "v of another shape than k": (ValueError, dict(v=Tensor(np.ones((1, 2, 3, 4), np.float32)))),
    "3 query heads on 2 key/value heads": (ValueError, dict(q=Tensor(np.ones((1, 3, 3, 4), np.float32)),
                                                            k=Tensor(np.ones((1, 2, 3, 4), np.float32)),
                                                            v=Tensor(np.ones((1, 2, 3, 4), np.float32)))),
    "rope wider than a head": (ValueError, dict(rope=RopeSpec(np.ones(3, np.float32)))),
    "positions of another length": (ValueError, dict(positions=np.arange(4))),
    "positions not consecutive": (ValueError, dict(positions=np.array([0, 1, 3]))),
    "one position for three tokens": (ValueError, dict(positions=[5])),
    "no new tokens": (ValueError, dict(q=Tensor(np.ones((1, 2, 0, 4), np.float32)),
                                      k=Tensor(np.ones((1, 1, 0, 4), np.float32)),
                                      v=Tensor(np.ones((1, 1, 0, 4), np.float32)), positions=[])),
    "window 0": (ValueError, dict(window=0)),
    "window a bool": (ValueError, dict(window=True)),
    "window a float": (ValueError, dict(window=2.0)),
    "scale 0": (ValueError, dict(scale=0.0)),
    "scale a bool": (ValueError, dict(scale=True)),
    "past a single Tensor": (TypeError, dict(past=PAST)),
    "past holding arrays": (TypeError, dict(past=(PAST.data, PAST.data))),
    "past k and v of different lengths": (ValueError, dict(past=(PAST, Tensor(np.zeros((1, 1, 3, 4), np.float32))))),
    "past for two key/value heads": (ValueError, dict(past=(Tensor(np.zeros((1, 2, 2, 4), np.float32)),) * 2)),
    "layer_settings of an unknown layer type": (ValueError, lambda: layer_settings("chunked_attention", SPECS, 4)),
    "layer_settings without a full_attention spec": (
        ValueError, lambda: layer_settings("sliding_attention", {"sliding_attention": RopeSpec(LADDER)}, 4)),
    "layer_settings with window 0": (ValueError, lambda: layer_settings("full_attention", SPECS, 0)),
}


@pytest.mark.parametrize("case", list(BAD))
def test_validation(case):
    error, changes = BAD[case]
    refuses(error, changes if callable(changes) else bad_call(**changes), f"{case}")
