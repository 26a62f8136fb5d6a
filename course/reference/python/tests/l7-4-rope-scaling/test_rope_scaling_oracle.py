"""The instructor's model answer to L7.4's graded tests.

A student-style suite: it imports only what the catalog allows, and judges
rope_parameters and rope_spec by what they return and raise (a RopeSpec by its
fields), against an independent oracle: every rope type's rule from the
chapter, written out in numpy float64.  `ol verify L7.4` checks it kills every
counted mutant and every pitfall (score 1.0).
"""

import copy
import math

import numpy as np
import pytest

from tinyllm.modern.rope_scaling import rope_parameters, rope_spec

RTOL = 1e-6  # the contract: inv_freq within 1e-6 of HF's (float32 steps vs one float64 rounding)


# ---- the oracle: chapter sections 4 to 9, in float64 ---------------------------------------


def ladder(base, r):
    return np.array([base ** (-2 * i / r) for i in range(r // 2)])


def yarn_temperature(factor, mscale=1.0):
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def oracle(params, head_dim, seq_len=None, max_len=None):
    """(inv_freq float64, attention_scaling) by the chapter's rules."""
    # section 11: a None field is an absent one, except truncate (read for its truth)
    params = {name: value for name, value in params.items() if value is not None or name == "truncate"}
    kind = params.get("rope_type", "default")
    base = params["rope_theta"]
    r = int(head_dim * params.get("partial_rotary_factor", 1.0))
    theta = ladder(base, r)
    factor = params.get("factor")
    if kind in ("yarn", "longrope") and factor is None:
        factor = max_len / params["original_max_position_embeddings"]
    if kind == "default":
        return theta, 1.0
    if kind == "linear":
        return theta / factor, 1.0
    if kind == "dynamic":
        length = max(seq_len if seq_len is not None else max_len, max_len)
        stretch = factor * length / max_len - (factor - 1)
        return ladder(base * stretch ** (r / (r - 2)), r), 1.0
    if kind == "yarn":
        original = params["original_max_position_embeddings"]
        if params.get("attention_factor") is not None:
            s = params["attention_factor"]
        elif params.get("mscale") and params.get("mscale_all_dim"):
            s = yarn_temperature(factor, params["mscale"]) / yarn_temperature(factor, params["mscale_all_dim"])
        else:
            s = yarn_temperature(factor)

        def pair_index(turns):  # solve 2 pi base^(2i/r) = original / turns for i
            return r * math.log(original / (2 * math.pi * turns)) / (2 * math.log(base))

        low, high = pair_index(params.get("beta_fast") or 32), pair_index(params.get("beta_slow") or 1)
        if params.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, r - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(r // 2) - low) / (high - low), 0.0, 1.0)
        return theta * (1 - ramp) + theta / factor * ramp, s
    if kind == "longrope":
        original = params["original_max_position_embeddings"]
        s = params.get("attention_factor")
        if s is None:
            s = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
        long = seq_len is not None and seq_len > original
        return theta / np.array(params["long_factor" if long else "short_factor"], float), s
    # llama3
    factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
    original = params["original_max_position_embeddings"]
    out = []
    for t in theta:
        wavelength = 2 * math.pi / t
        if wavelength < original / high:
            out.append(t)
        elif wavelength > original / low:
            out.append(t / factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            out.append((1 - smooth) * t / factor + smooth * t)
    return np.array(out), 1.0


def check(params, head_dim, seq_len=None, max_len=None):
    """rope_parameters against the oracle: float32, r/2 values, within RTOL; s to 1e-12.
    The call gets a copy, and must leave it as it was."""
    given = copy.deepcopy(params)
    inv_freq, s = rope_parameters(given, head_dim, seq_len=seq_len, max_position_embeddings=max_len)
    assert given == params, "rope_parameters changed the dict it was given"
    want, want_s = oracle(params, head_dim, seq_len, max_len)
    assert isinstance(inv_freq, np.ndarray) and inv_freq.dtype == np.float32
    np.testing.assert_allclose(inv_freq, want, rtol=RTOL, atol=0)
    assert math.isclose(s, want_s, rel_tol=1e-12), (s, want_s)
    return inv_freq, s


def spec_matches(spec, inv_freq, s, rotary_dim):
    assert spec.layout == "half" and spec.rotary_dim == rotary_dim
    np.testing.assert_allclose(spec.inv_freq, inv_freq, rtol=RTOL, atol=0)
    assert math.isclose(spec.attention_scaling, s, rel_tol=1e-12)


# ---- the worked example (chapter section 10) ---------------------------------------------------

HAND = {"rope_theta": 10000.0}


def test_hand_examples():
    got = rope_parameters({**HAND, "rope_type": "linear", "factor": 4.0}, 8)
    np.testing.assert_allclose(got[0], [0.25, 0.025, 0.0025, 0.00025], rtol=RTOL)
    got = rope_parameters({**HAND, "rope_type": "dynamic", "factor": 2.0}, 8, seq_len=2048, max_position_embeddings=1024)
    np.testing.assert_allclose(got[0], [1.0, 0.06933613, 0.004807499, 0.001 / 3], rtol=RTOL)
    got = rope_parameters({**HAND, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}, 8)
    np.testing.assert_allclose(got[0], [1.0, 0.075, 0.005, 0.00025], rtol=RTOL)
    assert math.isclose(got[1], 1.1386294361, rel_tol=1e-9)
    lr = {**HAND, "rope_type": "longrope", "original_max_position_embeddings": 1024,
          "short_factor": [1, 1, 2, 2], "long_factor": [1, 2, 4, 8]}
    got = rope_parameters(lr, 8, seq_len=1024, max_position_embeddings=4096)
    np.testing.assert_allclose(got[0], [1.0, 0.1, 0.005, 0.0005], rtol=RTOL)
    assert math.isclose(got[1], math.sqrt(1.2), rel_tol=1e-12)
    got = rope_parameters(lr, 8, seq_len=1025, max_position_embeddings=4096)
    np.testing.assert_allclose(got[0], [1.0, 0.05, 0.0025, 0.000125], rtol=RTOL)
    got = rope_parameters({**HAND, "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                           "high_freq_factor": 4.0, "original_max_position_embeddings": 1024}, 8)
    np.testing.assert_allclose(got[0], [1.0, 0.1, 0.003086762, 0.000125], rtol=RTOL)


# ---- each rope type against the oracle ------------------------------------------------------------


@pytest.mark.parametrize("params, head_dim", [
    ({"rope_type": "default", "rope_theta": 10000.0}, 64),
    ({"rope_theta": 1_000_000.0}, 128),                                   # rope_type absent: default
    ({"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.4}, 80),
    ({"rope_type": "default", "rope_theta": 500.0, "partial_rotary_factor": 1.0}, 2),  # one pair
])
def test_default(params, head_dim):
    check(params, head_dim)


@pytest.mark.parametrize("factor, head_dim, partial", [(2.0, 64, 1.0), (8.0, 128, 1.0), (4.0, 96, 0.5),
                                                       (1.0, 16, 1.0), (0.5, 16, 1.0)])
def test_linear(factor, head_dim, partial):
    check({"rope_type": "linear", "rope_theta": 10000.0, "factor": factor, "partial_rotary_factor": partial},
          head_dim)


@pytest.mark.parametrize("seq_len", [None, 1, 2048, 4095, 4096, 4097, 8192, 12345, 131072])
@pytest.mark.parametrize("factor, head_dim, partial", [(2.0, 128, 1.0), (4.0, 64, 0.5), (3.0, 8, 1.0)])
def test_dynamic(seq_len, factor, head_dim, partial):
    params = {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": factor, "partial_rotary_factor": partial}
    inv_freq, _ = check(params, head_dim, seq_len, 4096)
    if seq_len is None or seq_len <= 4096:  # up to the trained length nothing changes
        np.testing.assert_allclose(inv_freq, ladder(10000.0, int(head_dim * partial)), rtol=RTOL)


def test_dynamic_needs_two_pairs():
    params = {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}
    check(params, 4, 8192, 4096)                     # r = 4: the least rotary dim dynamic takes
    with pytest.raises(ValueError):
        rope_parameters(params, 2, seq_len=8192, max_position_embeddings=4096)   # r = 2: r / (r - 2)


YARN_CASES = [
    # (fields, head_dim, max_position_embeddings)
    ({"factor": 4.0, "original_max_position_embeddings": 32768, "rope_theta": 1e6}, 128, 32768),   # Qwen2.5
    ({"factor": 4.0, "original_max_position_embeddings": 4096}, 64, 16384),
    ({"factor": 2.0, "original_max_position_embeddings": 4096, "truncate": False}, 64, None),
    ({"factor": 8.0, "original_max_position_embeddings": 2048, "beta_fast": 16.0, "beta_slow": 2.0,
      "truncate": False, "attention_factor": 1.25}, 96, None),
    ({"factor": 8.0, "original_max_position_embeddings": 2048, "beta_fast": 16.0, "beta_slow": 2.0}, 96, None),
    ({"factor": 40.0, "original_max_position_embeddings": 4096, "mscale": 1.0, "mscale_all_dim": 0.5}, 64, None),
    ({"factor": 40.0, "original_max_position_embeddings": 4096, "mscale": 0.8}, 64, None),  # one mscale: ignored
    ({"factor": 40.0, "original_max_position_embeddings": 4096, "mscale": 0, "mscale_all_dim": 1.0}, 64, None),
    ({"factor": None, "original_max_position_embeddings": 2048, "partial_rotary_factor": 0.8}, 80, 16384),
    ({"original_max_position_embeddings": 2048}, 64, 6144),                                 # factor absent: 3
    ({"factor": 1.0, "original_max_position_embeddings": 4096}, 64, None),                  # s = 1
    ({"factor": 0.5, "original_max_position_embeddings": 4096}, 64, None),                  # s = 1
    ({"factor": 4.0, "original_max_position_embeddings": 100}, 16, None),                   # low < 0: clamped
    ({"factor": 4.0, "original_max_position_embeddings": 10 ** 8, "beta_fast": 1e6}, 8, None),  # high > r - 1
    ({"factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 5.0, "beta_slow": 5.0,
      "truncate": False}, 32, None),                                                        # low == high
    ({"factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 0, "beta_slow": None}, 64, None),
    ({"factor": 4.0, "original_max_position_embeddings": 1024, "rope_theta": 10.0}, 64, None),  # high passes r - 1
    ({"factor": 4.0, "original_max_position_embeddings": 6}, 64, None),     # the clamp makes the ramp zero-wide
    ({"factor": 4.0, "original_max_position_embeddings": 4096, "truncate": None}, 64, None),   # None: no rounding
]


@pytest.mark.parametrize("fields, head_dim, max_len", YARN_CASES)
def test_yarn(fields, head_dim, max_len):
    check({"rope_type": "yarn", "rope_theta": 10000.0, **fields}, head_dim, None, max_len)


LONG_SHORT = {"short_factor": [1.0, 1.5, 2.0, 2.5], "long_factor": [1.0, 3.0, 9.0, 27.0]}


@pytest.mark.parametrize("seq_len", [None, 0, 1, 2047, 2048, 2049, 100000])
@pytest.mark.parametrize("fields, max_len", [
    ({"factor": 16.0}, None),
    ({}, 32768),                              # factor = 32768 / 2048 = 16
    ({"factor": 2.0}, None),                  # s = sqrt(1 + ln 2 / ln 2048)
    ({"factor": 2.0, "attention_factor": 1.5}, None),
    ({"factor": 1.0}, None),                  # s = 1
    ({"factor": 0.5}, None),                  # s = 1
])
def test_longrope(seq_len, fields, max_len):
    params = {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 2048,
              **LONG_SHORT, **fields}
    check(params, 8, seq_len, max_len)


def test_longrope_partial_and_phi3_shape():
    rng = np.random.default_rng(1)
    params = {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 4096,
              "partial_rotary_factor": 0.75, "short_factor": list(1 + rng.random(48)),
              "long_factor": list(1 + 60 * rng.random(48))}
    for seq_len in (None, 4096, 4097):
        check(params, 128, seq_len, 131072)


@pytest.mark.parametrize("fields, head_dim", [
    ({"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
      "rope_theta": 500000.0}, 128),                                                      # Llama 3.1
    ({"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
      "rope_theta": 500000.0}, 64),                                                       # Llama 3.2
    ({"factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 2.0, "original_max_position_embeddings": 2048,
      "partial_rotary_factor": 0.8}, 80),
    ({"factor": 8.0, "low_freq_factor": 2.0, "high_freq_factor": 6.0, "original_max_position_embeddings": 1024}, 8),
    ({"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 1024}, 8),
])
def test_llama3(fields, head_dim):
    check({"rope_type": "llama3", "rope_theta": 10000.0, **fields}, head_dim)


def test_float64_where_float32_steps_drift():
    # section 3: factor 40 and the band 2 .. 3 over 8192 positions; float32 steps land ~3e-6 away
    check({"rope_type": "llama3", "rope_theta": 10000.0, "factor": 40.0, "low_freq_factor": 2.0,
           "high_freq_factor": 3.0, "original_max_position_embeddings": 8192}, 128)


# ---- missing, None and empty (chapter section 11) ------------------------------------------------


@pytest.mark.parametrize("params, head_dim, max_len", [
    ({"rope_type": None, "rope_theta": 1e4}, 64, None),
    ({"rope_theta": 1e4, "partial_rotary_factor": None}, 64, None),
    ({"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0, "partial_rotary_factor": None}, 16, None),
    ({"rope_type": "yarn", "rope_theta": 1e4, "factor": None, "original_max_position_embeddings": 2048}, 64, 8192),
    ({"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0, "original_max_position_embeddings": 2048,
      "attention_factor": None, "mscale": None, "mscale_all_dim": 0.5}, 64, None),
    ({"rope_type": "longrope", "rope_theta": 1e4, "factor": None, "attention_factor": None,
      "original_max_position_embeddings": 2048, **LONG_SHORT}, 8, 8192),
])
def test_none_is_absent(params, head_dim, max_len):
    inv_freq, s = check(params, head_dim, None, max_len)
    absent = {name: value for name, value in params.items() if value is not None}
    want, want_s = rope_parameters(absent, head_dim, max_position_embeddings=max_len)
    np.testing.assert_array_equal(inv_freq, want)
    assert s == want_s


def test_truncate_none_turns_the_rounding_off():
    yarn = {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0, "original_max_position_embeddings": 4096}
    off = rope_parameters({**yarn, "truncate": False}, 64)[0]
    np.testing.assert_allclose(check({**yarn, "truncate": None}, 64)[0], off, rtol=RTOL)
    assert not np.allclose(rope_parameters(yarn, 64)[0], off, rtol=RTOL, atol=0)


def test_rope_spec_none_and_empty():
    linear = ladder(10000.0, 64) / 2
    for config, want in [
        ({"head_dim": 64, "rope_type": None}, ladder(10000.0, 64)),
        ({"head_dim": 64, "rope_theta": None, "rope_scaling": {"type": "linear", "factor": 2.0}}, linear),
        ({"head_dim": 64, "rope_theta": 500.0, "rope_parameters": {"rope_type": "linear", "factor": 2.0,
                                                                    "rope_theta": None}}, ladder(500.0, 64) / 2),
        ({"head_dim": 64, "rope_scaling": {"rope_type": None, "type": "linear", "factor": 2.0}}, linear),
        ({"head_dim": 64, "rope_parameters": {}, "rope_scaling": {"type": "linear", "factor": 2.0}}, linear),
        ({"head_dim": 64, "rope_parameters": None, "rope_scaling": {"type": "linear", "factor": 2.0}}, linear),
        ({"head_dim": 64, "rope_theta": 500.0, "rope_parameters": {}}, ladder(500.0, 64)),
        ({"head_dim": 64, "partial_rotary_factor": None}, ladder(10000.0, 64)),
        ({"head_dim": 64, "partial_rotary_factor": None, "rope_parameters": {"rope_theta": 1e4,
                                                                             "partial_rotary_factor": 0.5}},
         ladder(10000.0, 32)),
        ({"head_dim": None, "hidden_size": 256, "num_attention_heads": 4}, ladder(10000.0, 64)),
    ]:
        before = copy.deepcopy(config)
        spec_matches(rope_spec(config), want, 1.0, 2 * len(want))
        assert config == before


# ---- rope_spec: config.json as a dict ------------------------------------------------------------


def test_rope_spec_plain_configs():
    plain = ladder(10000.0, 64)
    for config in ({"head_dim": 64}, {"head_dim": 64, "rope_scaling": None},
                   {"hidden_size": 256, "num_attention_heads": 4}, {"head_dim": 64, "rope_parameters": {}},
                   {"head_dim": None, "hidden_size": 512, "num_attention_heads": 8}):
        spec_matches(rope_spec(config), plain, 1.0, 64)
    # hidden_size // num_attention_heads is integer division: 43 // 2 = 21, 21 * 0.75 -> 15 is odd
    with pytest.raises(ValueError):
        rope_spec({"hidden_size": 43, "num_attention_heads": 2, "partial_rotary_factor": 0.75})


def test_rope_spec_reads_both_blocks_and_top_level_fields():
    old = {"head_dim": 64, "rope_theta": 500.0, "partial_rotary_factor": 0.5,
           "rope_scaling": {"type": "linear", "factor": 2.0}}
    new = {"head_dim": 64, "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0,
                                               "partial_rotary_factor": 0.5}}
    for config in (old, new):
        before = copy.deepcopy(config)
        spec_matches(rope_spec(config), ladder(500.0, 32) / 2, 1.0, 32)
        assert config == before
    # the block's own fields win over the top level's
    spec = rope_spec({"head_dim": 64, "rope_theta": 1e6, "partial_rotary_factor": 0.25,
                      "rope_parameters": {"rope_type": "default", "rope_theta": 500.0, "partial_rotary_factor": 0.5}})
    spec_matches(spec, ladder(500.0, 32), 1.0, 32)
    # rope_type wins over the legacy type when both are there
    spec = rope_spec({"head_dim": 16, "rope_scaling": {"rope_type": "linear", "type": "dynamic", "factor": 2.0}})
    spec_matches(spec, ladder(10000.0, 16) / 2, 1.0, 16)


def test_rope_spec_scaled_models():
    # YaRN, as Qwen2.5's model card writes it
    qwen = {"hidden_size": 3584, "num_attention_heads": 28, "max_position_embeddings": 32768,
            "rope_theta": 1000000.0, "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768,
                                                       "type": "yarn"}}
    want = oracle({"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0,
                   "original_max_position_embeddings": 32768}, 128)
    spec_matches(rope_spec(qwen), *want, 128)
    # LongRoPE with the original length at the top level and no factor (Phi-3's shape)
    phi3 = {"hidden_size": 256, "num_attention_heads": 32, "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
            "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.1, 1.2, 1.3],
                             "long_factor": [1.0, 4.0, 16.0, 64.0]}}
    params = {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 4096,
              **{k: phi3["rope_scaling"][k] for k in ("short_factor", "long_factor")}}
    for seq_len in (None, 4096, 4097):
        spec_matches(rope_spec(phi3, seq_len=seq_len), *oracle(params, 8, seq_len, 131072), 8)
    # dynamic through the spec: seq_len and max_position_embeddings reach it
    dyn = {"head_dim": 32, "max_position_embeddings": 2048, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    spec_matches(rope_spec(dyn, seq_len=8192),
                 *oracle({"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}, 32, 8192, 2048), 32)
    # the block's original length wins over a top-level one
    yarn = {"head_dim": 64, "original_max_position_embeddings": 1024, "max_position_embeddings": 8192,
            "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}}
    want = oracle({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                   "original_max_position_embeddings": 4096}, 64)
    spec_matches(rope_spec(yarn), *want, 64)


# ---- bad input ---------------------------------------------------------------------------------

GOOD = {
    "linear": {"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0},
    "dynamic": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0},
    "yarn": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0, "original_max_position_embeddings": 4096},
    "longrope": {"rope_type": "longrope", "rope_theta": 1e4, "original_max_position_embeddings": 4096,
                 "factor": 4.0, "short_factor": [1.0] * 4, "long_factor": [2.0] * 4},
    "llama3": {"rope_type": "llama3", "rope_theta": 1e4, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
}


def drop(kind, name):
    return {k: v for k, v in GOOD[kind].items() if k != name}


@pytest.mark.parametrize("params, head_dim, kwargs", [
    ({"rope_type": "su", "rope_theta": 1e4}, 8, {}),
    ({"rope_type": "default"}, 8, {}),
    ({"rope_type": "default", "rope_theta": None}, 8, {}),
    ({"rope_type": "default", "rope_theta": 0.0}, 8, {}),
    ({"rope_type": "default", "rope_theta": -1e4}, 8, {}),
    (drop("linear", "factor"), 8, {}),
    ({**GOOD["linear"], "factor": None}, 8, {}),
    ({**GOOD["linear"], "factor": 0.0}, 8, {}),
    ({**GOOD["linear"], "factor": -2.0}, 8, {}),
    ({**GOOD["linear"], "factor": float("nan")}, 8, {}),
    (drop("dynamic", "factor"), 8, dict(max_position_embeddings=4096)),
    (GOOD["dynamic"], 8, dict(seq_len=8192)),                         # no max_position_embeddings
    ({**GOOD["yarn"], "factor": 0.0}, 8, {}),
    (drop("yarn", "original_max_position_embeddings"), 8, {}),
    (drop("yarn", "factor"), 8, {}),                                  # and no max_position_embeddings
    (drop("longrope", "factor"), 8, {}),
    (drop("longrope", "short_factor"), 8, {}),
    (drop("longrope", "long_factor"), 8, {}),
    (drop("longrope", "original_max_position_embeddings"), 8, {}),
    ({**GOOD["longrope"], "short_factor": [1.0] * 3}, 8, {}),
    ({**GOOD["longrope"], "long_factor": [1.0] * 5}, 8, {}),
    ({**GOOD["longrope"], "long_factor": [1.0] * 8}, 8, {}),
    (drop("llama3", "factor"), 8, {}),
    (drop("llama3", "low_freq_factor"), 8, {}),
    (drop("llama3", "high_freq_factor"), 8, {}),
    (drop("llama3", "original_max_position_embeddings"), 8, {}),
    ({**GOOD["llama3"], "low_freq_factor": 4.0}, 8, {}),
    ({**GOOD["llama3"], "low_freq_factor": 6.0}, 8, {}),
    ({**GOOD["llama3"], "high_freq_factor": None}, 8, {}),
    ({"rope_theta": 1e4, "partial_rotary_factor": 1.5}, 8, {}),
    ({"rope_theta": 1e4, "partial_rotary_factor": 0.5}, 6, {}),       # r = 3, odd
    ({"rope_theta": 1e4, "partial_rotary_factor": 0.1}, 8, {}),       # r = 0
    ({"rope_theta": 1e4, "partial_rotary_factor": 0.0}, 8, {}),
    ({"rope_theta": 1e4, "partial_rotary_factor": -1.0}, 8, {}),
    ({"rope_theta": 1e4}, 1, {}),
    ({"rope_theta": 1e4}, 7, {}),
])
def test_bad_input_raises_value_error(params, head_dim, kwargs):
    with pytest.raises(ValueError):
        rope_parameters(params, head_dim, **kwargs)


def test_rope_spec_bad_input():
    with pytest.raises(ValueError):
        rope_spec({"hidden_size": 4096})
    with pytest.raises(ValueError):
        rope_spec({"num_attention_heads": 32})
    with pytest.raises(ValueError):
        rope_spec({"hidden_size": None, "num_attention_heads": 32})
    with pytest.raises(ValueError):
        rope_spec({"hidden_size": 4096, "num_attention_heads": None})
    with pytest.raises(ValueError):
        rope_spec({"head_dim": 64, "rope_scaling": {"type": "ntk", "factor": 2.0}})


def test_valid_edges_do_not_raise():
    rope_parameters({"rope_theta": 1e4, "partial_rotary_factor": 1.0}, 8)       # the whole head
    rope_parameters({"rope_theta": 1e4}, 2)                                     # one pair
    rope_parameters({**GOOD["linear"], "factor": 1.0}, 8)                        # factor 1
    rope_parameters({**GOOD["llama3"], "low_freq_factor": 3.99}, 8)              # low just below high
    rope_parameters({**GOOD["dynamic"], "factor": 1.0}, 8, max_position_embeddings=4096)


GEMMA = {"head_dim": 64, "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
         "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                             "full_attention": {"rope_type": "linear", "rope_theta": 1e6, "factor": 8.0}}}


def test_rope_spec_per_layer_type():
    before = copy.deepcopy(GEMMA)
    spec_matches(rope_spec(GEMMA, layer_type="sliding_attention"), ladder(1e4, 64), 1.0, 64)
    spec_matches(rope_spec(GEMMA, layer_type="full_attention"), ladder(1e6, 64) / 8, 1.0, 64)
    assert GEMMA == before
    # the top level fills a nested block as it fills a flat one
    filled = {"head_dim": 64, "rope_theta": 500.0, "layer_types": ["full_attention"],
              "rope_parameters": {"full_attention": {"rope_type": "default"}}}
    spec_matches(rope_spec(filled, layer_type="full_attention"), ladder(500.0, 64), 1.0, 64)
    # a flat block serves every layer type; keys that are not listed layer types do not nest it
    flat = {"head_dim": 64, "layer_types": ["full_attention"], "rope_parameters": {"rope_theta": 500.0}}
    spec_matches(rope_spec(flat, layer_type="sliding_attention"), ladder(500.0, 64), 1.0, 64)
    spec_matches(rope_spec(flat), ladder(500.0, 64), 1.0, 64)
    unlisted = {"head_dim": 64, "layer_types": None,
                "rope_parameters": {"rope_theta": 500.0, "full_attention": {"rope_theta": 3.0}}}
    spec_matches(rope_spec(unlisted, layer_type="full_attention"), ladder(500.0, 64), 1.0, 64)
    legacy = {"head_dim": 64, "layer_types": ["full_attention"],
              "rope_scaling": {"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 100.0}}}
    spec_matches(rope_spec(legacy, layer_type="full_attention"), ladder(100.0, 64) / 2, 1.0, 64)


@pytest.mark.parametrize("config, layer_type", [
    (GEMMA, None), (GEMMA, "chunked_attention"), (GEMMA, "layer_types"),
    ({**GEMMA, "rope_parameters": {**GEMMA["rope_parameters"], "full_attention": None}}, "full_attention"),
])
def test_rope_spec_per_layer_type_refuses(config, layer_type):
    with pytest.raises(ValueError):
        rope_spec(copy.deepcopy(config), layer_type=layer_type)
