"""L7.4 graded tests, student A: a careful student.  One float64 oracle per
rope type, written from sections 3 to 8; parametrized fixed cases for each
bullet of section 13; bad input from section 11's whole table, each case
wrong in one way only."""

import copy
import math

import numpy as np
import pytest

from tinyllm.modern.rope_scaling import rope_parameters, rope_spec

RTOL = 1e-6


# ---- oracle ----------------------------------------------------------------------------------


def rotary_dim(head_dim, p):
    return int(head_dim * p.get("partial_rotary_factor", 1.0))


def plain(base, r):
    return np.array([base ** (-2.0 * i / r) for i in range(r // 2)])


def factor_of(p, max_len):
    if p.get("factor") is not None:
        return p["factor"]
    return max_len / p["original_max_position_embeddings"]


def oracle_default(p, r, n, max_len):
    return plain(p["rope_theta"], r), 1.0


def oracle_linear(p, r, n, max_len):
    return plain(p["rope_theta"], r) / p["factor"], 1.0


def oracle_dynamic(p, r, n, max_len):
    length = max_len if n is None else max(n, max_len)
    kappa = p["factor"] * length / max_len - (p["factor"] - 1)
    return plain(p["rope_theta"] * kappa ** (r / (r - 2)), r), 1.0


def temperature(f, m):
    if f <= 1:
        return 1.0
    return 0.1 * m * math.log(f) + 1.0


def oracle_yarn(p, r, n, max_len):
    base, L, f = p["rope_theta"], p["original_max_position_embeddings"], factor_of(p, max_len)
    if p.get("attention_factor") is not None:
        s = p["attention_factor"]
    elif p.get("mscale") and p.get("mscale_all_dim"):
        s = temperature(f, p["mscale"]) / temperature(f, p["mscale_all_dim"])
    else:
        s = temperature(f, 1.0)

    def pair_for(turns):
        return r * math.log(L / (2 * math.pi * turns)) / (2 * math.log(base))

    lo = pair_for(p.get("beta_fast") or 32)
    hi = pair_for(p.get("beta_slow") or 1)
    if p.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo = max(lo, 0)
    hi = min(hi, r - 1)
    if lo == hi:
        hi = hi + 0.001
    theta = plain(base, r)
    out = []
    for i, t in enumerate(theta):
        gamma = min(max((i - lo) / (hi - lo), 0.0), 1.0)
        out.append(t * (1 - gamma) + t / f * gamma)
    return np.array(out), s


def oracle_longrope(p, r, n, max_len):
    L, f = p["original_max_position_embeddings"], factor_of(p, max_len)
    s = p.get("attention_factor")
    if s is None:
        s = 1.0 if f <= 1 else math.sqrt(1 + math.log(f) / math.log(L))
    use_long = n is not None and n > L
    ext = np.array(p["long_factor"] if use_long else p["short_factor"], dtype=float)
    return plain(p["rope_theta"], r) / ext, s


def oracle_llama3(p, r, n, max_len):
    f, lo, hi, L = p["factor"], p["low_freq_factor"], p["high_freq_factor"], p["original_max_position_embeddings"]
    out = []
    for t in plain(p["rope_theta"], r):
        wavelength = 2 * math.pi / t
        if wavelength < L / hi:
            out.append(t)
        elif wavelength > L / lo:
            out.append(t / f)
        else:
            sigma = (L / wavelength - lo) / (hi - lo)
            out.append((1 - sigma) * t / f + sigma * t)
    return np.array(out), 1.0


ORACLES = {"default": oracle_default, "linear": oracle_linear, "dynamic": oracle_dynamic,
           "yarn": oracle_yarn, "longrope": oracle_longrope, "llama3": oracle_llama3}


def expected(p, head_dim, seq_len=None, max_len=None):
    return ORACLES[p.get("rope_type", "default")](p, rotary_dim(head_dim, p), seq_len, max_len)


def assert_matches(p, head_dim, seq_len=None, max_len=None):
    original = copy.deepcopy(p)
    inv_freq, s = rope_parameters(p, head_dim, seq_len=seq_len, max_position_embeddings=max_len)
    assert p == original, "rope_parameters must not change its dict"
    want, want_s = expected(original, head_dim, seq_len, max_len)
    assert isinstance(inv_freq, np.ndarray)
    assert inv_freq.dtype == np.float32
    assert inv_freq.shape == (rotary_dim(head_dim, original) // 2,)
    np.testing.assert_allclose(inv_freq, want, rtol=RTOL, atol=0)
    assert s == pytest.approx(want_s, rel=1e-12, abs=0)


# ---- section 10: the worked example ------------------------------------------------------------


def test_worked_example():
    b = {"rope_theta": 10000.0}
    inv, s = rope_parameters({**b, "rope_type": "linear", "factor": 4.0}, 8)
    np.testing.assert_allclose(inv, [0.25, 0.025, 0.0025, 0.00025], rtol=RTOL)
    inv, s = rope_parameters({**b, "rope_type": "dynamic", "factor": 2.0}, 8, seq_len=2048, max_position_embeddings=1024)
    np.testing.assert_allclose(inv, [1.0, 0.06933613, 0.004807499, 0.0003333333], rtol=RTOL)
    inv, s = rope_parameters({**b, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}, 8)
    np.testing.assert_allclose(inv, [1.0, 0.075, 0.005, 0.00025], rtol=RTOL)
    assert s == pytest.approx(1.138629, abs=1e-6)
    lr = {**b, "rope_type": "longrope", "original_max_position_embeddings": 1024,
          "short_factor": [1, 1, 2, 2], "long_factor": [1, 2, 4, 8]}
    inv, s = rope_parameters(lr, 8, seq_len=1024, max_position_embeddings=4096)
    np.testing.assert_allclose(inv, [1.0, 0.1, 0.005, 0.0005], rtol=RTOL)
    assert s == pytest.approx(1.095445, abs=1e-6)
    inv, s = rope_parameters(lr, 8, seq_len=1025, max_position_embeddings=4096)
    np.testing.assert_allclose(inv, [1.0, 0.05, 0.0025, 0.000125], rtol=RTOL)
    inv, s = rope_parameters({**b, "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                              "high_freq_factor": 4.0, "original_max_position_embeddings": 1024}, 8)
    np.testing.assert_allclose(inv, [1.0, 0.1, 0.003086762, 0.000125], rtol=RTOL)
    assert s == 1


# ---- every type, two or more parameter sets, partial rotary ------------------------------------

THETA = {"rope_theta": 10000.0}


@pytest.mark.parametrize("head_dim, partial", [(64, 1.0), (128, 1.0), (80, 0.4), (96, 0.5), (2, 1.0)])
@pytest.mark.parametrize("p", [
    {"rope_type": "default", "rope_theta": 10000.0},
    {"rope_theta": 1000000.0},
    {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0},
    {"rope_type": "linear", "rope_theta": 500000.0, "factor": 8.0},
    {"rope_type": "linear", "rope_theta": 10000.0, "factor": 1.0},
    {"rope_type": "linear", "rope_theta": 10000.0, "factor": 0.5},
], ids=lambda p: p.get("rope_type", "none") + "-" + str(p.get("factor", "")))
def test_plain_and_linear(p, head_dim, partial):
    assert_matches({**p, "partial_rotary_factor": partial}, head_dim)


@pytest.mark.parametrize("seq_len", [None, 1, 1500, 3072, 3073, 7777, 200000])
@pytest.mark.parametrize("head_dim, partial, factor", [(64, 1.0, 2.0), (128, 0.5, 4.0), (8, 1.0, 3.0)])
def test_dynamic(seq_len, head_dim, partial, factor):
    assert_matches({"rope_type": "dynamic", "rope_theta": 10000.0, "factor": factor,
                    "partial_rotary_factor": partial}, head_dim, seq_len, 3072)


@pytest.mark.parametrize("head_dim, partial", [(64, 1.0), (128, 0.75)])
@pytest.mark.parametrize("extra, max_len", [
    ({}, None),
    ({"truncate": False}, None),
    ({"beta_fast": 16.0, "beta_slow": 2.0}, None),
    ({"beta_fast": 24.0, "beta_slow": 0.5, "truncate": False}, None),
    ({"beta_fast": 0, "beta_slow": 0}, None),
    ({"beta_fast": None, "beta_slow": None}, None),
    ({"attention_factor": 1.2}, None),
    ({"mscale": 0.9, "mscale_all_dim": 0.7}, None),
    ({"mscale": 0.9}, None),
    ({"mscale": 0.9, "mscale_all_dim": 0}, None),
    ({"factor": None}, 40000),
    ({"drop_factor": True}, 12000),
    ({"factor": 1.0}, None),
    ({"factor": 0.5}, None),
    ({"factor": 2.0}, None),
    ({"original_max_position_embeddings": 50}, None),
    ({"original_max_position_embeddings": 10 ** 10, "beta_fast": 10 ** 8}, None),
    ({"beta_fast": 8.0, "beta_slow": 8.0, "truncate": False}, None),
])
def test_yarn(extra, max_len, head_dim, partial):
    p = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 4096,
         "partial_rotary_factor": partial, **extra}
    if p.pop("drop_factor", False):
        del p["factor"]
    assert_matches(p, head_dim, None, max_len)


@pytest.mark.parametrize("seq_len", [None, 0, 100, 4096, 4097, 131072])
@pytest.mark.parametrize("extra, max_len", [
    ({"factor": 32.0}, None),
    ({}, 131072),
    ({"factor": 1.0}, None),
    ({"factor": 0.25}, None),
    ({"factor": 2.0}, None),
    ({"factor": 32.0, "attention_factor": 1.1}, None),
])
@pytest.mark.parametrize("head_dim, partial", [(16, 1.0), (32, 0.5)])
def test_longrope(seq_len, extra, max_len, head_dim, partial):
    p = {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 4096,
         "partial_rotary_factor": partial, "short_factor": [1.0, 1.1, 1.2, 1.5, 2.0, 2.0, 2.5, 3.0],
         "long_factor": [1.0, 1.5, 3.0, 6.0, 12.0, 24.0, 48.0, 64.0], **extra}
    assert_matches(p, head_dim, seq_len, max_len)


@pytest.mark.parametrize("p, head_dim", [
    ({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192}, 128),
    ({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192, "partial_rotary_factor": 0.5}, 128),
    ({"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 1024}, 8),
    ({"rope_type": "llama3", "rope_theta": 10000.0, "factor": 4.0, "low_freq_factor": 2.0, "high_freq_factor": 5.0,
      "original_max_position_embeddings": 3000}, 64),
])
def test_llama3(p, head_dim):
    assert_matches(p, head_dim)


# ---- rope_spec -----------------------------------------------------------------------------------


def spec_of(config, seq_len=None):
    before = copy.deepcopy(config)
    spec = rope_spec(config, seq_len=seq_len)
    assert config == before, "rope_spec must not change the config"
    return spec


def assert_spec(spec, p, head_dim, seq_len=None, max_len=None):
    want, s = expected(p, head_dim, seq_len, max_len)
    assert spec.layout == "half"
    assert spec.rotary_dim == rotary_dim(head_dim, p)
    np.testing.assert_allclose(spec.inv_freq, want, rtol=RTOL, atol=0)
    assert spec.attention_scaling == pytest.approx(s, rel=1e-12)


@pytest.mark.parametrize("config", [
    {"head_dim": 64},
    {"head_dim": 64, "rope_scaling": None},
    {"head_dim": 64, "rope_parameters": None},
    {"head_dim": 64, "rope_parameters": {}},
    {"hidden_size": 256, "num_attention_heads": 4},
    {"head_dim": None, "hidden_size": 512, "num_attention_heads": 8},
])
def test_spec_of_plain_configs(config):
    assert_spec(spec_of(config), THETA, 64)


def test_spec_head_dim_uses_integer_division():
    config = {"hidden_size": 86, "num_attention_heads": 4, "partial_rotary_factor": 0.75}  # 86 // 4 = 21
    with pytest.raises(ValueError):
        rope_spec(config)  # int(21 * 0.75) = 15 is odd
    config = {"hidden_size": 90, "num_attention_heads": 4, "partial_rotary_factor": 0.75}  # 90 // 4 = 22 -> 16
    assert_spec(spec_of(config), {**THETA, "partial_rotary_factor": 0.75}, 22)


def test_spec_blocks_and_legacy_keys():
    want = {"rope_type": "linear", "rope_theta": 2000.0, "factor": 3.0, "partial_rotary_factor": 0.5}
    assert_spec(spec_of({"head_dim": 64, "rope_parameters": dict(want)}), want, 64)
    assert_spec(spec_of({"head_dim": 64, "rope_theta": 2000.0, "partial_rotary_factor": 0.5,
                         "rope_scaling": {"type": "linear", "factor": 3.0}}), want, 64)
    assert_spec(spec_of({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "type": "yarn", "factor": 3.0,
                                                          "rope_theta": 2000.0, "partial_rotary_factor": 0.5}}),
                want, 64)
    # the block's own values win over the top level
    assert_spec(spec_of({"head_dim": 64, "rope_theta": 5.0, "partial_rotary_factor": 0.25,
                         "rope_parameters": dict(want)}), want, 64)


def test_spec_passes_lengths():
    dyn = {"head_dim": 32, "max_position_embeddings": 3000, "rope_scaling": {"type": "dynamic", "factor": 2.0}}
    for n in (None, 3000, 9000):
        assert_spec(spec_of(dyn, n), {**THETA, "rope_type": "dynamic", "factor": 2.0}, 32, n, 3000)
    lr = {"short_factor": [1.0, 1.5, 2.0, 2.5], "long_factor": [1.0, 4.0, 9.0, 16.0]}
    phi = {"head_dim": 8, "max_position_embeddings": 65536, "original_max_position_embeddings": 2048,
           "rope_scaling": {"type": "longrope", **lr}}
    want = {**THETA, "rope_type": "longrope", "original_max_position_embeddings": 2048, **lr}
    for n in (None, 2048, 2049):
        assert_spec(spec_of(phi, n), want, 8, n, 65536)
    yarn = {"head_dim": 64, "max_position_embeddings": 16384, "rope_theta": 1e6,
            "rope_scaling": {"type": "yarn", "original_max_position_embeddings": 4096}}
    assert_spec(spec_of(yarn), {"rope_type": "yarn", "rope_theta": 1e6, "original_max_position_embeddings": 4096},
                64, None, 16384)


# ---- section 11: bad input ----------------------------------------------------------------------

GOOD = {
    "linear": {"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0},
    "dynamic": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0},
    "yarn": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0, "original_max_position_embeddings": 4096},
    "longrope": {"rope_type": "longrope", "rope_theta": 1e4, "factor": 4.0, "original_max_position_embeddings": 4096,
                 "short_factor": [1.0] * 8, "long_factor": [2.0] * 8},
    "llama3": {"rope_type": "llama3", "rope_theta": 1e4, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
}
NEEDED = {
    "linear": ["rope_theta", "factor"],
    "dynamic": ["rope_theta", "factor"],
    "yarn": ["rope_theta", "original_max_position_embeddings"],
    "longrope": ["rope_theta", "original_max_position_embeddings", "short_factor", "long_factor"],
    "llama3": ["rope_theta", "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"],
}
MAX_LEN = {"dynamic": 4096}


@pytest.mark.parametrize("kind, field", [(k, f) for k, fields in NEEDED.items() for f in fields])
@pytest.mark.parametrize("how", ["absent", "None"])
def test_missing_field(kind, field, how):
    p = dict(GOOD[kind])
    if how == "absent":
        del p[field]
    else:
        p[field] = None
    rope_parameters(dict(GOOD[kind]), 16, max_position_embeddings=MAX_LEN.get(kind))  # the good one is fine
    with pytest.raises(ValueError):
        rope_parameters(p, 16, max_position_embeddings=MAX_LEN.get(kind, 16384 if field == "factor" else None))


@pytest.mark.parametrize("p, head_dim, kwargs", [
    ({"rope_type": "ntk", "rope_theta": 1e4}, 16, {}),
    ({"rope_type": "default"}, 16, {}),
    ({"rope_theta": 0.0}, 16, {}),
    ({"rope_theta": -1.0}, 16, {}),
    ({"rope_theta": float("nan")}, 16, {}),
    ({**GOOD["linear"], "factor": 0.0}, 16, {}),
    ({**GOOD["linear"], "factor": -1.0}, 16, {}),
    ({**GOOD["yarn"], "factor": -4.0}, 16, {}),
    ({"rope_theta": 1e4, "partial_rotary_factor": 1.25}, 16, {}),
    ({"rope_theta": 1e4, "partial_rotary_factor": 0.3}, 10, {}),   # r = 3
    ({"rope_theta": 1e4, "partial_rotary_factor": 0.05}, 16, {}),  # r = 0
    ({"rope_theta": 1e4}, 9, {}),
    ({"rope_theta": 1e4}, 1, {}),
    ({**GOOD["llama3"], "low_freq_factor": 4.0}, 16, {}),
    ({**GOOD["llama3"], "low_freq_factor": 4.5}, 16, {}),
    ({**GOOD["longrope"], "short_factor": [1.0] * 7}, 16, {}),
    ({**GOOD["longrope"], "long_factor": [1.0] * 9}, 16, {}),
    ({**GOOD["longrope"], "partial_rotary_factor": 0.5}, 16, {}),
    (GOOD["dynamic"], 16, {"seq_len": 10000}),
    ({k: v for k, v in GOOD["yarn"].items() if k != "factor"}, 16, {}),
    ({k: v for k, v in GOOD["longrope"].items() if k != "factor"}, 16, {}),
])
def test_bad_values(p, head_dim, kwargs):
    with pytest.raises(ValueError):
        rope_parameters(p, head_dim, **kwargs)


def test_bad_config():
    for config in ({"hidden_size": 4096}, {"num_attention_heads": 32}, {}):
        with pytest.raises(ValueError):
            rope_spec(config)
