"""L7.4 RoPE scaling, a second correct implementation written differently from
the reference (course/reference/python/tinyllm/modern/rope_scaling.py).

`ol check` runs a student's tests on it as well as on the reference: a test
that passes only on 1.0 implementation's rounding, helper names or error
wording rejects a correct implementation.

The difference: the reference writes each rule as 1.0 vectorised formula and
a table of rules; this 1.0 reads the fields up front into 1.0 settings object,
dispatches with an if-chain, follows transformers' own order of operations
(YaRN through its "extrapolation factor", Llama 3 pair by pair as Meta's
apply_scaling does), computes the powers as exp(log), and drops the None
fields of a block before reading it (the reference asks for each field "absent
or None?" where it reads it).  All in float64, rounded once to float32, as the
contract asks: its inv_freq agrees with the reference to a float32 ulp.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tinyllm.modern.rope import RopeSpec

NEEDS = {
    "default": [],
    "linear": ["factor"],
    "dynamic": ["factor"],
    "yarn": ["original_max_position_embeddings"],
    "longrope": ["original_max_position_embeddings", "short_factor", "long_factor"],
    "llama3": ["factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"],
}


@dataclass
class _Settings:
    kind: str
    base: float
    dim: int
    fields: dict
    max_positions: int | None


def _without_nulls(fields: dict) -> dict:
    """The fields that are given: None (null in config.json) counts as absent."""
    return {key: value for key, value in fields.items() if value is not None}


def _settings(params: dict, head_dim: int, max_positions) -> _Settings:
    # truncate alone is read for its truth, as transformers does: None (like false) turns it off
    truncate = params.get("truncate", True)
    params = {**_without_nulls(params), "truncate": truncate}
    kind = params.get("rope_type", "default")
    if kind not in NEEDS:
        raise ValueError(f"rope_type: unknown {kind!r}; known: {sorted(NEEDS)}")
    for key in ["rope_theta"] + NEEDS[kind]:
        if params.get(key) is None:
            raise ValueError(f"{key}: required by rope_type {kind!r}")
    for key in ("rope_theta", "factor"):
        value = params.get(key)
        if value is not None and (value != value or value <= 0):  # nan or <= 0
            raise ValueError(f"{key}: expected a positive number, got {value!r}")
    share = params.get("partial_rotary_factor", 1.0)
    dim = int(head_dim * share)
    if share > 1:
        raise ValueError(f"partial_rotary_factor: expected at most 1, got {share}")
    if dim % 2 == 1 or dim < 2:
        raise ValueError(f"partial_rotary_factor: rotary dim {dim} (from head_dim {head_dim}) must be even, >= 2")
    return _Settings(kind, params["rope_theta"], dim, params, max_positions)


def _powers(base: float, dim: int) -> np.ndarray:
    """base ** (2i/dim), i = 0 .. dim/2 - 1, in float64, as exp(2i/dim * ln base)."""
    return np.exp(np.arange(0, dim, 2) / dim * math.log(base))


def _scale_factor(s: _Settings) -> float:
    if s.fields.get("factor") is not None:
        return s.fields["factor"]
    if s.max_positions is None:
        raise ValueError("max_position_embeddings: required when factor is absent")
    return s.max_positions / s.fields["original_max_position_embeddings"]


def rope_parameters(rope_parameters, head_dim, *, seq_len=None, max_position_embeddings=None):
    inv_freq, attention = _rule(_settings(rope_parameters, head_dim, max_position_embeddings), seq_len)
    return inv_freq.astype(np.float32), attention


def _rule(s: _Settings, seq_len):
    f = s.fields

    if s.kind == "default":
        return 1.0 / _powers(s.base, s.dim), 1.0

    if s.kind == "linear":
        return (1.0 / _powers(s.base, s.dim)) / f["factor"], 1.0

    if s.kind == "dynamic":
        if s.max_positions is None:
            raise ValueError("max_position_embeddings: dynamic scaling needs it")
        if s.dim <= 2:
            raise ValueError(f"partial_rotary_factor: dynamic scaling needs a rotary dim of 4 or more, got {s.dim}")
        length = s.max_positions if seq_len is None else max(seq_len, s.max_positions)
        grown = s.base * ((f["factor"] * length / s.max_positions) - (f["factor"] - 1)) ** (s.dim / (s.dim - 2))
        return 1.0 / _powers(grown, s.dim), 1.0

    if s.kind == "yarn":
        factor = _scale_factor(s)
        original = f["original_max_position_embeddings"]

        def temperature(scale, m=1.0):
            return 0.1 * m * math.log(scale) + 1.0 if scale > 1 else 1.0

        if f.get("attention_factor") is not None:
            attention = f["attention_factor"]
        elif f.get("mscale") and f.get("mscale_all_dim"):
            attention = float(temperature(factor, f["mscale"]) / temperature(factor, f["mscale_all_dim"]))
        else:
            attention = temperature(factor)

        def correction(rotations):
            return (s.dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(s.base))

        lo, hi = correction(f.get("beta_fast") or 32), correction(f.get("beta_slow") or 1)
        if f["truncate"]:
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, s.dim - 1)
        if hi == lo:
            hi += 0.001
        ramp = np.clip((np.arange(s.dim // 2) - lo) / (hi - lo), 0, 1)
        extrapolation = 1.0 - ramp
        powers = _powers(s.base, s.dim)
        inv_freq = (1.0 / (factor * powers)) * (1.0 - extrapolation) + (1.0 / powers) * extrapolation
        return inv_freq, attention

    if s.kind == "longrope":
        half = s.dim // 2
        for key in ("short_factor", "long_factor"):
            if len(f[key]) != half:
                raise ValueError(f"{key}: expected {half} numbers, 1.0 per rotating pair, got {len(f[key])}")
        factor = _scale_factor(s)
        original = f["original_max_position_embeddings"]
        attention = f.get("attention_factor")
        if attention is None:
            attention = math.sqrt(1 + math.log(factor) / math.log(original)) if factor > 1.0 else 1.0
        use_long = bool(seq_len) and seq_len > original
        ext = np.array(f["long_factor"] if use_long else f["short_factor"], dtype=np.float64)
        return 1.0 / (ext * _powers(s.base, s.dim)), attention

    # llama3
    low, high = f["low_freq_factor"], f["high_freq_factor"]
    if low >= high:
        raise ValueError(f"low_freq_factor ({low}) must be below high_freq_factor ({high})")
    factor, context = f["factor"], f["original_max_position_embeddings"]
    inv_freq = 1.0 / _powers(s.base, s.dim)
    out = []
    for theta in inv_freq:  # 1.0 pair at a time, as Meta's apply_scaling does
        wavelength = 2 * math.pi / theta
        if wavelength < context / high:
            out.append(theta)
        elif wavelength > context / low:
            out.append(theta / factor)
        else:
            smooth = (context / wavelength - low) / (high - low)
            out.append((1.0 - smooth) * theta / factor + smooth * theta)
    return np.array(out), 1.0


def rope_spec(config, *, seq_len=None, layer_type=None):
    top = _without_nulls(config)
    block = config.get("rope_parameters") or config.get("rope_scaling") or {}
    listed = set(config.get("layer_types") or [])
    if listed & set(block):  # one block per layer type
        if layer_type is None or layer_type not in block or layer_type not in listed:
            raise ValueError("rope_spec: this config has a rope block per layer type; name one with layer_type")
        if block[layer_type] is None:
            raise ValueError("rope_spec: no RoPE for this layer type")
        block = block[layer_type]
    given = {key: value for key, value in block.items() if value is not None or key == "truncate"}
    params = {("rope_type" if key == "type" else key): value for key, value in given.items()}
    if "rope_type" in given:  # both keys given: rope_type wins
        params["rope_type"] = given["rope_type"]
    for key in ("rope_theta", "partial_rotary_factor", "original_max_position_embeddings"):
        if key not in params and key in top:
            params[key] = top[key]
    if "rope_theta" not in params:
        params["rope_theta"] = 10000.0
    if "head_dim" in top:
        head_dim = top["head_dim"]
    elif "hidden_size" in top and "num_attention_heads" in top:
        head_dim = top["hidden_size"] // top["num_attention_heads"]
    else:
        raise ValueError("head_dim: absent, and hidden_size / num_attention_heads are not both given")
    inv_freq, scaling = rope_parameters(params, head_dim, seq_len=seq_len,
                                        max_position_embeddings=config.get("max_position_embeddings"))
    return RopeSpec(inv_freq=inv_freq, attention_scaling=scaling, layout="half")
