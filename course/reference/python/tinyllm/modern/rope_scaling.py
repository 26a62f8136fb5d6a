"""L7.4 RoPE scaling: the frequencies and attention scaling of long-context
checkpoints, as transformers 5.19.0 computes them.

Every rope type starts from the plain ladder of L7.3 (r = rotary dim)

    theta_i = base ** (-2i / r),    i = 0 .. r/2 - 1

and changes it, and perhaps the factor s on both cos/sin tables:

    default   theta_i                                              s = 1
    linear    theta_i / factor                                     s = 1
    dynamic   the ladder of a larger base, grown with seq_len      s = 1
    yarn      per pair, a blend of theta_i and theta_i / factor    s = 0.1 ln(factor) + 1
    longrope  theta_i / ext_i, ext the short or long factor list   s = sqrt(1 + ln(factor) / ln(L))
    llama3    by wavelength: theta_i, theta_i / factor, or a blend s = 1

(L: original_max_position_embeddings, the length the model was first trained
on.)  The math is done in float64 and inv_freq is rounded once to float32; HF
computes in float32 steps, and on real checkpoints' configs the two agree to a
few float32 ulps.  A field that is None (null in config.json) counts as absent,
except truncate, which HF reads for its truth.  Chapter:
course/chapters/L7.4-rope-scaling.md.
"""

from __future__ import annotations

import math

import numpy as np

from tinyllm.modern.rope import RopeSpec


def rope_parameters(rope_parameters: dict, head_dim: int, *, seq_len: int | None = None,
                    max_position_embeddings: int | None = None) -> tuple[np.ndarray, float]:
    """(inv_freq, attention_scaling) for one rope_parameters dict: inv_freq
    float32 [r/2] with r = int(head_dim * partial_rotary_factor), and the
    factor both cos/sin tables are multiplied by."""
    p = rope_parameters
    rope_type = _given(p, "rope_type", "default")
    if rope_type not in RULES:  # the table at the end of the rope types below
        raise ValueError(
            f"rope_parameters['rope_type'] is {rope_type!r}, which is not a rope type this module knows; "
            f"expected one of {', '.join(RULES)}"
        )
    rule, required = RULES[rope_type]
    missing = [name for name in ("rope_theta",) + required if p.get(name) is None]
    if missing:
        raise ValueError(
            f"rope_parameters has no {', '.join(missing)}: rope_type {rope_type!r} needs "
            f"{', '.join(('rope_theta',) + required)}; copy them from the model's config.json"
        )
    for name in ("rope_theta", "factor"):
        if p.get(name) is not None and not p[name] > 0:
            raise ValueError(f"rope_parameters[{name!r}] must be a number > 0, got {p[name]!r}")
    r = _rotary_dim(head_dim, _given(p, "partial_rotary_factor", 1.0))
    inv_freq, attention_scaling = rule(p, r, seq_len, max_position_embeddings)
    return inv_freq.astype(np.float32), attention_scaling


def rope_spec(config: dict, *, seq_len: int | None = None, layer_type: str | None = None) -> RopeSpec:
    """L7.3's RopeSpec for a model's config.json (a dict): half layout,
    inv_freq and attention_scaling from rope_parameters, or from its block
    for `layer_type` when the config gives one block per layer type (Gemma 3)."""
    # transformers 5 writes rope_parameters; older config.json files write rope_scaling.  A
    # block that is absent, null or empty is no block (plain RoPE), as transformers reads it.
    params = dict(_block_of(config.get("rope_parameters") or config.get("rope_scaling") or {}, config, layer_type))
    # "type" is the legacy name of rope_type: it counts when rope_type is not given.
    params["rope_type"] = _given(params, "rope_type", params.get("type"))
    # Fields that older config.json files keep at the top level (Phi-3: the original length)
    # fill in what the block does not give; with no rope_theta anywhere, transformers' 10000.
    for name, default in TOP_LEVEL_DEFAULTS.items():
        params[name] = _given(params, name, _given(config, name, default))
    head_dim = _given(config, "head_dim")
    if head_dim is None:
        hidden_size, heads = config.get("hidden_size"), config.get("num_attention_heads")
        if hidden_size is None or heads is None:
            raise ValueError(
                "config has no head_dim, and no hidden_size and num_attention_heads to derive it from "
                f"(head_dim = hidden_size // num_attention_heads; got {hidden_size} and {heads})"
            )
        head_dim = hidden_size // heads
    inv_freq, attention_scaling = rope_parameters(
        params, head_dim, seq_len=seq_len, max_position_embeddings=config.get("max_position_embeddings")
    )
    return RopeSpec(inv_freq, attention_scaling)  # layout "half": HF's rotate_half, RopeSpec's default


def _block_of(block: dict, config: dict, layer_type: str | None) -> dict:
    """The block that holds layer_type's rope settings.  transformers nests the block
    by layer type when its keys are layer types the config lists (layer_types):
    {"sliding_attention": {...}, "full_attention": {...}}; a flat block serves
    every layer, whatever layer_type says."""
    nested = [key for key in block if key in (config.get("layer_types") or ())]
    if not nested:
        return block
    if layer_type not in nested:
        raise ValueError(f"config's rope_parameters has one block per layer type ({', '.join(nested)}): "
                         f"pass layer_type= one of them, got {layer_type!r}")
    if block[layer_type] is None:
        raise ValueError(f"config's rope_parameters[{layer_type!r}] is null: that layer type has no RoPE")
    return block[layer_type]


# ---- the rope types: each returns (inv_freq [r/2] float64, attention_scaling) ----


def _default(p, r, seq_len, max_len):
    return _ladder(p["rope_theta"], r), 1.0


def _linear(p, r, seq_len, max_len):
    # position m / factor at frequency theta  ==  position m at frequency theta / factor
    return _ladder(p["rope_theta"], r) / p["factor"], 1.0


def _dynamic(p, r, seq_len, max_len):
    # NTK-aware: raise the base so that theta_0 = 1 stays and the slowest pair is slowed by
    # exactly kappa = factor * seq_len / max_len - (factor - 1).  Up to max_len (and for
    # seq_len None) kappa = 1: nothing changes.
    if max_len is None:
        raise ValueError("rope_parameters: dynamic needs max_position_embeddings= (the trained length it scales from)")
    if r < 4:
        raise ValueError(
            f"rope_parameters: dynamic needs a rotary dim of at least 4, got r = {r}: its base grows by "
            "kappa ** (r / (r - 2)), and a single pair (r = 2) has no pair to slow"
        )
    seq_len = max(seq_len or max_len, max_len)
    factor = p["factor"]
    base = p["rope_theta"] * (factor * seq_len / max_len - (factor - 1)) ** (r / (r - 2))
    return _ladder(base, r), 1.0


def _yarn(p, r, seq_len, max_len):
    base, original = p["rope_theta"], p["original_max_position_embeddings"]
    factor = _factor(p, max_len)
    attention = p.get("attention_factor")
    if attention is None:
        mscale, mscale_all_dim = p.get("mscale"), p.get("mscale_all_dim")
        if mscale and mscale_all_dim:  # DeepSeek: a ratio of two temperatures
            attention = _yarn_temperature(factor, mscale) / _yarn_temperature(factor, mscale_all_dim)
        else:
            attention = _yarn_temperature(factor, 1.0)
    # Pair i makes original / wavelength_i full turns over the original context.  Pairs
    # making more than beta_fast turns (i <= low) keep theta_i; pairs making fewer than
    # beta_slow (i >= high) are divided by factor; a linear ramp in i blends those between.
    low = _pair_making(p.get("beta_fast") or 32, r, base, original)  # absent, None or 0: 32, as HF's `or`
    high = _pair_making(p.get("beta_slow") or 1, r, base, original)
    if p.get("truncate", True):  # HF reads it for its truth: absent is true, None (like false) is not
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, r - 1)
    if low == high:
        high += 0.001  # a ramp of width 0 would divide by 0
    ramp = np.clip((np.arange(r // 2) - low) / (high - low), 0, 1)  # [r/2]: 0 keep ... 1 divide
    theta = _ladder(base, r)
    return theta * (1 - ramp) + theta / factor * ramp, attention


def _longrope(p, r, seq_len, max_len):
    base, original = p["rope_theta"], p["original_max_position_embeddings"]
    for name in ("short_factor", "long_factor"):
        if 2 * len(p[name]) != r:
            raise ValueError(
                f"rope_parameters[{name!r}] has {len(p[name])} entries; longrope needs one per pair, "
                f"r/2 = {r // 2} (r = int(head_dim * partial_rotary_factor) = {r})"
            )
    factor = _factor(p, max_len)
    attention = p.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
    # Longer than the original context: the long factors; else (and for seq_len None) the short ones.
    ext = p["long_factor"] if seq_len is not None and seq_len > original else p["short_factor"]
    return _ladder(base, r) / np.asarray(ext), attention


def _llama3(p, r, seq_len, max_len):
    factor, low, high = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
    original = p["original_max_position_embeddings"]
    if not low < high:
        raise ValueError(
            f"rope_parameters: low_freq_factor ({low}) must be < high_freq_factor ({high}): they bound the "
            "band of wavelengths original/high_freq_factor .. original/low_freq_factor that is blended"
        )
    theta = _ladder(p["rope_theta"], r)
    wavelength = 2 * math.pi / theta  # [r/2]: positions per full turn of each pair
    smooth = (original / wavelength - low) / (high - low)  # 0 at wavelength original/low, 1 at original/high
    blended = (1 - smooth) * theta / factor + smooth * theta
    kept_or_blended = np.where(wavelength < original / high, theta, blended)  # short wavelengths: unchanged
    return np.where(wavelength > original / low, theta / factor, kept_or_blended), 1.0  # long: / factor


# rope type -> (its rule, the fields it cannot do without besides rope_theta)
RULES = {
    "default": (_default, ()),
    "linear": (_linear, ("factor",)),
    "dynamic": (_dynamic, ("factor",)),
    "yarn": (_yarn, ("original_max_position_embeddings",)),
    "longrope": (_longrope, ("original_max_position_embeddings", "short_factor", "long_factor")),
    "llama3": (_llama3, ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")),
}


# Top-level fields of config.json that rope_spec copies into the block when it lacks them,
# and their value when the config has none either (None: absent).
TOP_LEVEL_DEFAULTS = {"rope_theta": 10000.0, "partial_rotary_factor": None, "original_max_position_embeddings": None}


# ---- helpers ---------------------------------------------------------------------


def _given(fields: dict, name: str, default=None):
    """fields[name], or `default` when it is absent or None: a null in config.json means
    "not given", wherever transformers would crash on it or reads it so too."""
    value = fields.get(name)
    return default if value is None else value


def _ladder(base, r: int) -> np.ndarray:
    """theta_i = base ** (-2i / r), i = 0 .. r/2 - 1: float64 [r/2]."""
    return 1.0 / base ** (np.arange(0, r, 2) / r)


def _pair_making(turns, r: int, base, original) -> float:
    """The (fractional) pair index i whose wavelength 2 pi base^(2i/r) fits `turns`
    times into `original` positions: solve 2 pi base^(2i/r) = original / turns."""
    return r * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(base))


def _yarn_temperature(factor, mscale) -> float:
    """YaRN's 0.1 * mscale * ln(factor) + 1; 1 when the context is not stretched."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def _factor(p, max_len):
    """factor, or when it is absent (Phi-3's config has none) max_position_embeddings /
    original_max_position_embeddings, as transformers computes it."""
    if p.get("factor") is not None:
        return p["factor"]
    if max_len is None:
        raise ValueError(
            "rope_parameters has no factor: pass max_position_embeddings= (from the model's config), "
            "and factor = max_position_embeddings / original_max_position_embeddings"
        )
    return max_len / p["original_max_position_embeddings"]


def _rotary_dim(head_dim, partial_rotary_factor) -> int:
    r = int(head_dim * partial_rotary_factor)
    if partial_rotary_factor > 1 or r < 2 or r % 2:
        raise ValueError(
            f"the rotary dim int(head_dim * partial_rotary_factor) = int({head_dim} * {partial_rotary_factor}) "
            f"= {r} must be even and >= 2, with partial_rotary_factor in (0, 1]"
        )
    return r
