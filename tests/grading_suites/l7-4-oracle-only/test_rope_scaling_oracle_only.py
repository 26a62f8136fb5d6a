"""An L7.4 suite of oracle comparisons only: calibration suite b without its
rope_spec tests (issue 19, item 4).  It checks rope_parameters closely and
never calls rope_spec, half of the contract; it scored 0.83 and passed before
the grade had a floor per public function."""

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyllm.modern.rope_scaling import rope_parameters

# deterministic and quiet: the same examples on every run
props = settings(max_examples=60, deadline=None, derandomize=True, database=None)


def ladder(base, r):
    return base ** (-np.arange(0, r, 2) / r)


def oracle(p, head_dim, n=None, m=None):
    kind = p.get("rope_type", "default")
    base = p["rope_theta"]
    r = int(head_dim * p.get("partial_rotary_factor", 1.0))
    theta = ladder(base, r)
    f = p.get("factor")
    if f is None and kind in ("yarn", "longrope"):
        f = m / p["original_max_position_embeddings"]
    if kind == "default":
        return theta, 1.0
    if kind == "linear":
        return theta / f, 1.0
    if kind == "dynamic":
        k = f * max(m if n is None else n, m) / m - f + 1
        return ladder(base * k ** (r / (r - 2)), r), 1.0
    big_l = p["original_max_position_embeddings"]
    if kind == "longrope":
        s = p.get("attention_factor")
        if s is None:
            s = math.sqrt(1 + math.log(f) / math.log(big_l)) if f > 1 else 1.0
        ext = p["long_factor"] if n is not None and n > big_l else p["short_factor"]
        return theta / np.asarray(ext, float), s
    if kind == "llama3":
        lo, hi = p["low_freq_factor"], p["high_freq_factor"]
        lam = 2 * np.pi / theta
        sigma = (big_l / lam - lo) / (hi - lo)
        out = np.where(lam > big_l / lo, theta / f, (1 - sigma) * theta / f + sigma * theta)
        return np.where(lam < big_l / hi, theta, out), 1.0
    # yarn
    def temp(m_):
        return 0.1 * m_ * math.log(f) + 1 if f > 1 else 1.0

    if p.get("attention_factor") is not None:
        s = p["attention_factor"]
    elif p.get("mscale") and p.get("mscale_all_dim"):
        s = temp(p["mscale"]) / temp(p["mscale_all_dim"])
    else:
        s = temp(1)
    pos = [r * math.log(big_l / (2 * math.pi * t)) / (2 * math.log(base))
           for t in (p.get("beta_fast") or 32, p.get("beta_slow") or 1)]
    if p.get("truncate", True):
        pos = [math.floor(pos[0]), math.ceil(pos[1])]
    lo, hi = max(pos[0], 0), min(pos[1], r - 1)
    hi = hi + 0.001 if hi == lo else hi
    ramp = np.clip((np.arange(r // 2) - lo) / (hi - lo), 0, 1)
    return theta - (theta - theta / f) * ramp, s


def agrees(p, head_dim, n=None, m=None):
    kept = copy.deepcopy(p)
    inv, s = rope_parameters(p, head_dim, seq_len=n, max_position_embeddings=m)
    assert p == kept
    want, want_s = oracle(p, head_dim, n, m)
    assert inv.dtype == np.float32 and inv.shape == want.shape
    np.testing.assert_allclose(inv, want, rtol=1e-6, atol=0)
    assert s == pytest.approx(want_s, rel=1e-12, abs=0)
    return inv, s


# ---- strategies --------------------------------------------------------------------------------

BASES = st.sampled_from([100.0, 10000.0, 500000.0, 1e6])
HEADS = st.sampled_from([(8, 1.0), (16, 1.0), (64, 1.0), (128, 1.0), (80, 0.4), (96, 0.5), (128, 0.75)])
FACTORS = st.sampled_from([0.5, 1.0, 2.0, 3.0, 8.0, 40.0])
LENGTHS = st.integers(16, 200000)


@st.composite
def yarn_block(draw):
    p = {"rope_type": "yarn", "rope_theta": draw(BASES), "original_max_position_embeddings": draw(LENGTHS)}
    if draw(st.booleans()):
        p["factor"] = draw(FACTORS)
    for key, values in (("beta_fast", [None, 0, 8.0, 32.0, 64.0]), ("beta_slow", [None, 0, 0.5, 1.0, 2.0]),
                        ("truncate", [True, False]), ("attention_factor", [None, 1.25]),
                        ("mscale", [None, 0, 0.7, 1.0]), ("mscale_all_dim", [None, 0, 0.5, 1.0])):
        if draw(st.booleans()):
            p[key] = draw(st.sampled_from(values))
    return p


# ---- every type against the oracle ---------------------------------------------------------------


@props
@given(BASES, HEADS, FACTORS)
def test_default_and_linear(base, head, factor):
    d, rho = head
    agrees({"rope_theta": base, "partial_rotary_factor": rho}, d)
    agrees({"rope_type": "default", "rope_theta": base, "partial_rotary_factor": rho}, d)
    inv, _ = agrees({"rope_type": "linear", "rope_theta": base, "factor": factor, "partial_rotary_factor": rho}, d)
    plain, _ = rope_parameters({"rope_theta": base, "partial_rotary_factor": rho}, d)
    np.testing.assert_allclose(inv * factor, plain, rtol=2e-6)


@props
@given(BASES, HEADS, FACTORS, st.integers(100, 10000), st.one_of(st.none(), st.integers(1, 300000)))
def test_dynamic(base, head, factor, m, n):
    d, rho = head
    p = {"rope_type": "dynamic", "rope_theta": base, "factor": factor, "partial_rotary_factor": rho}
    inv, _ = agrees(p, d, n, m)
    if n is None or n <= m:
        np.testing.assert_allclose(inv, ladder(base, int(d * rho)), rtol=1e-6)


@props
@given(yarn_block(), HEADS, st.integers(1000, 300000))
def test_yarn(p, head, m):
    d, rho = head
    inv, s = agrees({**p, "partial_rotary_factor": rho}, d, None, m)
    f = p.get("factor") or m / p["original_max_position_embeddings"]
    theta = ladder(p["rope_theta"], int(d * rho))
    lo, hi = np.minimum(theta, theta / f), np.maximum(theta, theta / f)
    assert np.all((inv >= lo * (1 - 2e-6)) & (inv <= hi * (1 + 2e-6)))


@props
@given(HEADS, st.sampled_from([None, 0, 1, 2047, 2048, 2049, 131072]),
       st.sampled_from([{"factor": 32.0}, {}, {"factor": 1.0}, {"factor": 0.5}, {"factor": 2.0},
                        {"factor": 4.0, "attention_factor": 1.3}]), st.integers(0, 10 ** 6))
def test_longrope(head, n, extra, seed):
    d, rho = head
    pairs = int(d * rho) // 2
    rng = np.random.default_rng(seed)
    p = {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 2048,
         "partial_rotary_factor": rho, "short_factor": list(1 + rng.random(pairs)),
         "long_factor": list(1 + 50 * rng.random(pairs)), **extra}
    agrees(p, d, n, 65536)


@props
@given(st.sampled_from([(1.0, 4.0), (1.0, 2.0), (2.0, 3.0), (0.5, 8.0)]), FACTORS, BASES, HEADS,
       st.sampled_from([1024, 4096, 8192]))
def test_llama3(bands, factor, base, head, big_l):
    d, rho = head
    p = {"rope_type": "llama3", "rope_theta": base, "factor": factor, "low_freq_factor": bands[0],
         "high_freq_factor": bands[1], "original_max_position_embeddings": big_l, "partial_rotary_factor": rho}
    agrees(p, d)


def test_hand_example():
    b = {"rope_theta": 10000.0}
    assert np.allclose(rope_parameters({**b, "rope_type": "yarn", "factor": 4.0,
                                        "original_max_position_embeddings": 1024}, 8)[0],
                       [1.0, 0.075, 0.005, 0.00025], rtol=1e-6, atol=0)
    assert np.allclose(rope_parameters({**b, "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                        "high_freq_factor": 4.0, "original_max_position_embeddings": 1024}, 8)[0],
                       [1.0, 0.1, 0.003086762, 0.000125], rtol=1e-6, atol=0)
    lr = {**b, "rope_type": "longrope", "original_max_position_embeddings": 1024,
          "short_factor": [1, 1, 2, 2], "long_factor": [1, 2, 4, 8]}
    assert np.allclose(rope_parameters(lr, 8, seq_len=1024, max_position_embeddings=4096)[0],
                       [1.0, 0.1, 0.005, 0.0005], rtol=1e-6, atol=0)


def test_yarn_ramp_edges():
    base = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0}
    agrees({**base, "original_max_position_embeddings": 80}, 16)                         # low below 0
    agrees({**base, "original_max_position_embeddings": 10 ** 9, "beta_fast": 10 ** 7}, 8)  # high past r - 1
    agrees({**base, "original_max_position_embeddings": 4096, "beta_fast": 3.0, "beta_slow": 3.0,
            "truncate": False}, 32)                                                        # zero width


# ---- bad input (section 13's list) -----------------------------------------------------------------

BLOCKS = {
    "linear": {"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0},
    "dynamic": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0},
    "yarn": {"rope_type": "yarn", "rope_theta": 1e4, "original_max_position_embeddings": 4096},
    "longrope": {"rope_type": "longrope", "rope_theta": 1e4, "original_max_position_embeddings": 4096,
                 "short_factor": [1.0] * 4, "long_factor": [1.0] * 4},
    "llama3": {"rope_type": "llama3", "rope_theta": 1e4, "factor": 4.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 4096},
    "default": {"rope_type": "default", "rope_theta": 1e4},
}


@pytest.mark.parametrize("kind", list(BLOCKS))
def test_each_needed_field_missing(kind):
    for key in BLOCKS[kind]:
        if key == "rope_type":
            continue
        block = {k: v for k, v in BLOCKS[kind].items() if k != key}
        with pytest.raises(ValueError):
            rope_parameters(block, 8, seq_len=5000, max_position_embeddings=None if kind != "dynamic" else 4096)


@pytest.mark.parametrize("block, head_dim, kwargs", [
    ({"rope_type": "rope", "rope_theta": 1e4}, 8, {}),
    ({**BLOCKS["linear"], "factor": 0}, 8, {}),
    ({**BLOCKS["linear"], "factor": -0.5}, 8, {}),
    ({**BLOCKS["default"], "rope_theta": 0}, 8, {}),
    ({**BLOCKS["default"], "rope_theta": -2.0}, 8, {}),
    ({**BLOCKS["default"], "partial_rotary_factor": 1.1}, 8, {}),
    ({**BLOCKS["default"], "partial_rotary_factor": 0.5}, 6, {}),
    ({**BLOCKS["default"], "partial_rotary_factor": 0.1}, 8, {}),
    ({**BLOCKS["llama3"], "low_freq_factor": 4.0}, 8, {}),
    ({**BLOCKS["llama3"], "low_freq_factor": 7.0}, 8, {}),
    ({**BLOCKS["longrope"], "short_factor": [1.0] * 3}, 8, {"max_position_embeddings": 8192}),
    ({**BLOCKS["longrope"], "long_factor": [1.0] * 5}, 8, {"max_position_embeddings": 8192}),
    (BLOCKS["dynamic"], 8, {"seq_len": 9000}),
    (BLOCKS["yarn"], 8, {}),
    (BLOCKS["longrope"], 8, {}),
])
def test_bad_values(block, head_dim, kwargs):
    with pytest.raises(ValueError):
        rope_parameters(block, head_dim, **kwargs)



def test_the_smallest_rotary_dims():
    agrees({"rope_theta": 1e4}, 2)                                                      # r = 2, one pair
    agrees({"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}, 4, 9000, 4096)   # dynamic's least r
    agrees({"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0, "original_max_position_embeddings": 4096,
            "truncate": False}, 32)                                                     # a ramp not rounded
