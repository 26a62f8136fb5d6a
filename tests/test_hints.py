"""The chapters' hints work (issue 19).

Section 13 of the L7.3 and L7.4 chapters ("your graded tests") tells a student
which inputs catch which broken copies of the reference.  Each hint that
suggests an input is listed in HINTS with the mistake it is for, and checked:

- its words are in that section, so a hint reworded or dropped shows up here;
- the mistake is one the grader counts: a mutant mutmut generates from the
  reference (written as its one-line edit, which must give exactly that
  mutant's source, neither message-only nor reviewed as equivalent), or a
  pitfall or misconception of course/mutants/<module>/;
- the suggested input, run on that mistake and on the reference, gives
  different results (a different value at the chapter's tolerance, a
  different dtype, or a different exception, or one raises and one returns);
- where the hint adds a twist to a plainer input (a random vector instead of
  ones, partial_rotary_factor below 1, a block wrong in one way only), the
  plainer input does not tell them apart: the twist is what the hint is for.

The reference and its mutants run in a subprocess with PYTHONPATH set to the
reference tree, so this file never imports (or is confused by) the student's
`tinyllm`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from ol.catalog import load_catalog
from ol.grading.mutants import build_mutant_set

REPO = Path(__file__).resolve().parents[1]
REFERENCE_TREE = REPO / "course" / "reference" / "python"
CATALOG = load_catalog(REPO)
GRADED_SECTION = 13  # "Your graded tests" in both chapters


@dataclass(frozen=True)
class Hint:
    """One hint: `says`, words of the module's section 13; `call`, the input it
    suggests, as an expression over the module's public names (and np, Tensor,
    and gradient(f, x, g) for L7.3); `mistake`, what it is for: a generated
    mutant as its edit "old => new" of the reference (the new text keeps the old
    one's indentation), or the id of a pitfall or misconception; `plain`, a
    plainer input that does not catch it."""

    module: str
    says: str
    call: str
    mistake: str
    plain: str | None = None

    @property
    def id(self) -> str:
        words = re.sub(r"[^a-z0-9]+", "-", self.says.lower()).strip("-")
        return f"{self.module}:{words[:50]}:{zlib.crc32((self.call + self.mistake).encode()) % 10**4:04d}"


X4 = "Tensor(np.array([[0.3, -1.2, 0.7, 2.0]], np.float32))"
ONES4 = "Tensor(np.ones((1, 4), np.float32))"
TABLES = "*rope_cos_sin([5], [1.0, 0.01])"
YARN = "{'rope_type': 'yarn', 'rope_theta': 1e4, 'factor': 4.0, 'original_max_position_embeddings': 4096"
LONGROPE = ("{'rope_type': 'longrope', 'rope_theta': 1e4, 'original_max_position_embeddings': 2048, "
            "'short_factor': [1.0, 1.5, 2.0, 2.5], 'long_factor': [1.0, 3.0, 9.0, 27.0]")
LLAMA3_1 = ("{'rope_type': 'llama3', 'rope_theta': 5e5, 'factor': 8.0, 'low_freq_factor': 1.0, "
            "'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192}")

HINTS = [
    # ---- L7.3 ------------------------------------------------------------------------------
    Hint("L7.3", "a random vector is better than $(1, 1, 1, 1)$", f"apply_rope({X4}, {TABLES})",
         "        a, b = rot[..., : r // 2], rot[..., r // 2 :] => "
         "        a, b = rot[..., : r // 3], rot[..., r // 2 :]", plain=f"apply_rope({ONES4}, {TABLES})"),
    Hint("L7.3", "in the interleaved layout", f"apply_rope({X4}, {TABLES}, 'interleaved')", "s07",
         plain=f"apply_rope({X4}, {TABLES}, 'half')"),
    Hint("L7.3", "and with partial rotary",
         f"apply_rope(Tensor(np.array([[0.3, -1.2, 0.7, 2.0, 5.0, -3.0]], np.float32)), {TABLES}, 'half', 4)", "s03",
         plain=f"apply_rope({X4}, {TABLES}, 'half', 4)"),
    Hint("L7.3", "that `attention_scaling` multiplies **both** tables", "rope_cos_sin([5], [1.0, 0.01], 1.5)", "s05",
         plain="rope_cos_sin([5], [1.0, 0.01], 1.0)"),
    Hint("L7.3", "an unknown layout", f"apply_rope({X4}, {TABLES}, 'rotate')",
         "    if not isinstance(layout, str) or layout not in LAYOUTS: => "
         "    if not isinstance(layout, str) and layout not in LAYOUTS:",
         plain=f"apply_rope({X4}, {TABLES}, 'interleaved')"),
    Hint("L7.3", "Use positions other than 0", f"apply_rope({X4}, {TABLES})",
         "    a_out = a * cos - b * sin  # [..., r/2] =>    a_out = a * cos + b * sin  # [..., r/2]",
         plain=f"apply_rope({X4}, *rope_cos_sin([0], [1.0, 0.01]))"),
    Hint("L7.3", "a float64 angle is about $10^{-3}$ away near 65535", "rope_cos_sin([65535], [0.7, 0.01])", "m01",
         plain="rope_cos_sin([3], [0.7, 0.01])"),
    Hint("L7.3", "backward with a random upstream `g`",
         f"gradient(lambda x: apply_rope(x, {TABLES}), {X4}, np.array([[0.5, -1.0, 2.0, 0.3]], np.float32))", "s06",
         plain=f"apply_rope({X4}, {TABLES})"),
    Hint("L7.3", "`RopeSpec(inv_freq)` has the defaults (half layout, scaling 1.0",
         "(lambda s: (s.attention_scaling, s.layout, s.rotary_dim))(RopeSpec(np.array([1.0, 0.01])))",
         "    attention_scaling: float = 1.0 =>     attention_scaling: float = 2.0",
         plain="(lambda s: (s.attention_scaling, s.layout, s.rotary_dim))(RopeSpec(np.array([1.0, 0.01]), 1.0, "
               "'half', 4))"),
    Hint("L7.3", "a spec that changes every field at once (interleaved layout, a scaling other than 1, a head wider "
                 "than `rotary_dim`)",
         "RopeSpec(np.array([1.0, 0.01]), 1.25, 'interleaved', 4).apply(Tensor(np.array([[0.3, -1.2, 0.7, 2.0, 5.0, "
         "-3.0]], np.float32)), [7])",
         "        return apply_rope(x, cos, sin, self.layout, self.rotary_dim) => "
         "        return apply_rope(x, cos, sin, self.layout, None)",
         plain=f"RopeSpec(np.array([1.0, 0.01])).apply({X4}, [7])"),
    Hint("L7.3", "a `rotary_dim` that does not match `inv_freq` raises", "RopeSpec(np.array([1.0, 0.01]), rotary_dim=6)",
         "        rotary_dim = 2 * inv_freq.size if self.rotary_dim is None else self.rotary_dim => "
         "        rotary_dim = 2 * inv_freq.size if (self.rotary_dim is None) or True else self.rotary_dim",
         plain="RopeSpec(np.array([1.0, 0.01]), rotary_dim=4)"),
    Hint("L7.3", "change your array after building the spec: the spec's tables stay the same",
         "(lambda a: (lambda s: (a.__setitem__(0, 5.0), s.cos_sin([3]))[1])(RopeSpec(a)))(np.array([1.0, 0.01], "
         "np.float32))",
         '        object.__setattr__(self, "inv_freq", inv_freq) => '
         '        object.__setattr__(self, "XXinv_freqXX", inv_freq)',
         plain="RopeSpec(np.array([1.0, 0.01], np.float32)).cos_sin([3])"),
    Hint("L7.3", "write into `spec.inv_freq`: it raises",
         "(lambda s: s.inv_freq.__setitem__(0, 2.0))(RopeSpec(np.array([1.0, 0.01])))",
         "        inv_freq.setflags(write=False)  # frozen all the way down => "
         "        inv_freq.setflags(write=True)  # frozen all the way down",
         plain="RopeSpec(np.array([1.0, 0.01])).inv_freq"),
    Hint("L7.3", "pass tables that would fit it (`rotary_dim // 2` wide)",
         f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0]), rotary_dim=3)",
         "    if r <= 0 or r % 2 or r > head_dim: =>     if r <= 0 or r % 3 or r > head_dim:",
         plain=f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0, 0.1]), rotary_dim=3)"),
    Hint("L7.3", "oversized `rotary_dim`", f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0, 0.1, 0.01]), rotary_dim=6)",
         "    if r <= 0 or r % 2 or r > head_dim: =>     if r <= 0 or r % 2 and r > head_dim:",
         plain=f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0, 0.1]), rotary_dim=6)"),
    Hint("L7.3", "a position of $2^{24}$", "rope_cos_sin([2**24], [1.0])",
         "    if np.any(positions >= POSITION_LIMIT): =>     if np.any(positions > POSITION_LIMIT):",
         plain="rope_cos_sin([2**24 + 10], [1.0])"),
    Hint("L7.3", "a frequency larger than $2^{104}$", "rope_cos_sin([1], [2.0**105])",
         "INV_FREQ_LIMIT = 2.0**104 => INV_FREQ_LIMIT = 2.0**105", plain="rope_cos_sin([1], [2.0**110])"),
    Hint("L7.3", "frequency $2^{104}$", "rope_cos_sin([1], [2.0**104])",
         "    if not np.all(np.abs(inv_freq) <= INV_FREQ_LIMIT):  # also false for nan => "
         "    if not np.all(np.abs(inv_freq) < INV_FREQ_LIMIT):  # also false for nan",
         plain="rope_cos_sin([1], [1.0])"),
    Hint("L7.3", "a scaling below $2^{-126}$", "rope_cos_sin([1], [1.0], 2.0**-127)",
         "FLOAT32_TINY = 2.0**-126 => FLOAT32_TINY = 2.0**-127", plain="rope_cos_sin([1], [1.0], 0.0)"),
    Hint("L7.3", "scalings $2^{-126}$ and `np.finfo(np.float32).max`", "rope_cos_sin([1], [1.0], 2.0**-126)",
         "    if not FLOAT32_TINY <= attention_scaling <= FLOAT32_MAX:  # also false for nan => "
         "    if not FLOAT32_TINY < attention_scaling <= FLOAT32_MAX:  # also false for nan",
         plain="rope_cos_sin([1], [1.0], 1.0)"),
    Hint("L7.3", "scalings $2^{-126}$ and `np.finfo(np.float32).max`",
         "rope_cos_sin([1], [1.0], float(np.finfo(np.float32).max))",
         "    if not FLOAT32_TINY <= attention_scaling <= FLOAT32_MAX:  # also false for nan => "
         "    if not FLOAT32_TINY <= attention_scaling < FLOAT32_MAX:  # also false for nan",
         plain="rope_cos_sin([1], [1.0], 1.0)"),
    Hint("L7.3", "`True` as a scaling or a `rotary_dim`", "rope_cos_sin([1], [1.0], True)",
         "    if isinstance(attention_scaling, bool) or not isinstance(attention_scaling, numbers.Real): => "
         "    if isinstance(attention_scaling, bool) and not isinstance(attention_scaling, numbers.Real):",
         plain="rope_cos_sin([1], [1.0], 1.0)"),
    Hint("L7.3", "`True` as a scaling or a `rotary_dim`",
         f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0, 0.1]), rotary_dim=True)",
         "    return isinstance(value, numbers.Integral) and not isinstance(value, bool) => "
         "    return isinstance(value, numbers.Integral) or not isinstance(value, bool)",
         plain=f"apply_rope({ONES4}, *rope_cos_sin([1], [1.0, 0.1]), rotary_dim=4)"),
    Hint("L7.3", "the output keeps `x`'s shape **and dtype**", f"apply_rope({X4}, {TABLES}).data",
         "    return cos.astype(x.dtype), sin.astype(x.dtype) =>     return cos.astype(None), sin.astype(x.dtype)",
         plain=f"apply_rope(Tensor(np.array([[0.3, -1.2, 0.7, 2.0]])), {TABLES}).data"),
    Hint("L7.3", '`layout` defaults to `"half"`', f"apply_rope({X4}, {TABLES})",
         'def apply_rope(x: Tensor, cos, sin, layout: str = "half", rotary_dim: int | None = None) -> Tensor: => '
         'def apply_rope(x: Tensor, cos, sin, layout: str = "XXhalfXX", rotary_dim: int | None = None) -> Tensor:',
         plain=f"apply_rope({X4}, {TABLES}, 'half')"),
    Hint("L7.3", "position 0 is valid", "rope_cos_sin([0], [1.0, 0.01])",
         "    if np.any(positions < 0): =>     if np.any(positions <= 0):", plain="rope_cos_sin([5], [1.0, 0.01])"),
    Hint("L7.3", "`inv_freq` that is not 1-D", "rope_cos_sin([1], [[1.0]])",
         "    if inv_freq.ndim != 1 or inv_freq.size == 0: =>     if inv_freq.ndim != 1 and inv_freq.size == 0:",
         plain="rope_cos_sin([1], [1.0])"),
    Hint("L7.3", "fractional", "rope_cos_sin([1.5], [1.0])",
         "    whole = np.isfinite(positions) & (positions == np.trunc(positions)) => "
         "    whole = np.isfinite(positions) | (positions == np.trunc(positions))",
         plain="rope_cos_sin([2.0], [1.0])"),
    # ---- L7.4 ------------------------------------------------------------------------------
    Hint("L7.4", "a block without `rope_type` is plain RoPE", "rope_parameters({'rope_theta': 1e4}, 16)",
         '    rope_type = _given(p, "rope_type", "default") =>     rope_type = _given(p, "rope_type", "XXdefaultXX")',
         plain="rope_parameters({'rope_type': 'default', 'rope_theta': 1e4}, 16)"),
    Hint("L7.4", "a single pair ($r = 2$) is valid", "rope_parameters({'rope_theta': 1e4}, 2)",
         "    if partial_rotary_factor > 1 or r < 2 or r % 2: =>     if partial_rotary_factor > 1 or r <= 2 or r % 2:",
         plain="rope_parameters({'rope_theta': 1e4}, 16)"),
    Hint("L7.4", "`factor` 1, and a factor below 1, are valid",
         "rope_parameters({'rope_type': 'linear', 'rope_theta': 1e4, 'factor': 1.0}, 16)",
         "        if p.get(name) is not None and not p[name] > 0: => "
         "        if p.get(name) is not None and not p[name] > 1:",
         plain="rope_parameters({'rope_type': 'linear', 'rope_theta': 1e4, 'factor': 2.0}, 16)"),
    Hint("L7.4", "check $s$ for every type — 1.0 for default, linear, dynamic and llama3",
         f"rope_parameters({LLAMA3_1}, 128)[1]",
         "    return np.where(wavelength > original / low, theta / factor, kept_or_blended), 1.0  # long: / factor => "
         "    return np.where(wavelength > original / low, theta / factor, kept_or_blended), 2.0  # long: / factor",
         plain=f"rope_parameters({LLAMA3_1}, 128)[0]"),
    Hint("L7.4", "below $M$", "rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, 'factor': 2.0}, 16, "
                              "seq_len=1000, max_position_embeddings=4096)", "p08",
         plain="rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, 'factor': 2.0}, 16, seq_len=8192, "
               "max_position_embeddings=4096)"),
    Hint("L7.4", "two pairs ($r = 4$) are valid", "rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, "
                                                  "'factor': 2.0}, 4, seq_len=8192, max_position_embeddings=4096)",
         "    if r < 4: =>     if r <= 4:",
         plain="rope_parameters({'rope_type': 'dynamic', 'rope_theta': 1e4, 'factor': 2.0}, 16, seq_len=8192, "
               "max_position_embeddings=4096)"),
    Hint("L7.4", "with `truncate` false", f"rope_parameters({YARN}, 'truncate': False}}, 64)",
         '    if p.get("truncate", True):  # HF reads it for its truth: absent is true, None (like false) is not => '
         '    if p.get("XXtruncateXX", True):  # HF reads it for its truth: absent is true, None (like false) is not',
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "with other $\\beta$s", f"rope_parameters({YARN}, 'beta_fast': 16.0, 'beta_slow': 2.0}}, 64)",
         '    low = _pair_making(p.get("beta_fast") or 32, r, base, original)  # absent, None or 0: 32, as HF\'s `or` => '
         '    low = _pair_making(p.get("XXbeta_fastXX") or 32, r, base, original)  # absent, None or 0: 32, as HF\'s `or`',
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "with an explicit `attention_factor`", f"rope_parameters({YARN}, 'attention_factor': 1.25}}, 64)",
         '    attention = p.get("attention_factor")\n    if attention is None:\n        mscale => '
         '    attention = p.get("XXattention_factorXX")\n    if attention is None:\n        mscale',
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "only one given", f"rope_parameters({YARN}, 'factor': 40.0, 'mscale': 0.8}}, 64)",
         "        if mscale and mscale_all_dim:  # DeepSeek: a ratio of two temperatures => "
         "        if mscale or mscale_all_dim:  # DeepSeek: a ratio of two temperatures",
         plain=f"rope_parameters({YARN}, 'factor': 40.0, 'mscale': 1.0, 'mscale_all_dim': 0.5}}, 64)"),
    Hint("L7.4", "with `factor` absent or `None` (then from `max_position_embeddings`)",
         "rope_parameters({'rope_type': 'yarn', 'rope_theta': 1e4, 'original_max_position_embeddings': 2048}, 64, "
         "max_position_embeddings=8192)",
         '    return max_len / p["original_max_position_embeddings"] => '
         '    return max_len * p["original_max_position_embeddings"]',
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "with `factor` 1 and 0.5 (s = 1) and 2", f"rope_parameters({YARN}, 'factor': 2.0}}, 64)",
         "    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0 => "
         "    return 1.0 if factor <= 2 else 0.1 * mscale * math.log(factor) + 1.0",
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "a short $L$ where $\\ell$ would be negative",
         "rope_parameters({'rope_type': 'yarn', 'rope_theta': 1e4, 'factor': 4.0, "
         "'original_max_position_embeddings': 100}, 16)",
         "    low, high = max(low, 0), min(high, r - 1) =>     low, high = max(low, 1), min(high, r - 1)",
         plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "a base small enough that $h$ passes $r - 1$",
         "rope_parameters({'rope_type': 'yarn', 'rope_theta': 10.0, 'factor': 4.0, "
         "'original_max_position_embeddings': 1024}, 64)",
         "    low, high = max(low, 0), min(high, r - 1) =>     low, high = max(low, 0), min(high, r + 1)",
         # what the chapter used to suggest, "a long L with a large beta_fast": h depends on beta_slow alone
         plain="rope_parameters({'rope_type': 'yarn', 'rope_theta': 1e4, 'factor': 4.0, "
               "'original_max_position_embeddings': 1000000, 'beta_fast': 1000.0}, 64)"),
    Hint("L7.4", "a base small enough that $h$ passes $r - 1$",
         "rope_parameters({'rope_type': 'yarn', 'rope_theta': 10.0, 'factor': 4.0, "
         "'original_max_position_embeddings': 1024}, 64)", "m07", plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "a zero-width ramp (`beta_fast` equal to `beta_slow` with `truncate` false)",
         f"rope_parameters({YARN}, 'beta_fast': 5.0, 'beta_slow': 5.0, 'truncate': False}}, 32)",
         "        high += 0.001  # a ramp of width 0 would divide by 0 => "
         "        high -= 0.001  # a ramp of width 0 would divide by 0",
         plain=f"rope_parameters({YARN}, 'beta_fast': 16.0, 'beta_slow': 2.0, 'truncate': False}}, 32)"),
    Hint("L7.4", "one the clamp makes zero-wide",
         "rope_parameters({'rope_type': 'yarn', 'rope_theta': 1e4, 'factor': 4.0, "
         "'original_max_position_embeddings': 6}, 64)", "m08", plain=f"rope_parameters({YARN}}}, 64)"),
    Hint("L7.4", "exactly $L$", f"rope_parameters({LONGROPE}, 'factor': 4.0}}, 8, seq_len=2048)", "p04",
         plain=f"rope_parameters({LONGROPE}, 'factor': 4.0}}, 8, seq_len=100000)"),
    Hint("L7.4", "absent (from $M$), 1 and below 1 (s = 1) and 2", f"rope_parameters({LONGROPE}, 'factor': 2.0}}, 8)",
         "        attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original)) => "
         "        attention = 1.0 if factor <= 2 else math.sqrt(1 + math.log(factor) / math.log(original))",
         plain=f"rope_parameters({LONGROPE}, 'factor': 16.0}}, 8)"),
    Hint("L7.4", "with an explicit `attention_factor`",
         f"rope_parameters({LONGROPE}, 'factor': 2.0, 'attention_factor': 1.5}}, 8)",
         '    attention = p.get("attention_factor")\n    if attention is None:\n        attention = 1.0 if => '
         '    attention = p.get("XXattention_factorXX")\n    if attention is None:\n        attention = 1.0 if',
         plain=f"rope_parameters({LONGROPE}, 'factor': 2.0}}, 8)"),
    Hint("L7.4", "with partial rotary", f"rope_parameters({LONGROPE}, 'factor': 2.0, 'partial_rotary_factor': 0.5}}, 16)",
         "    r = int(head_dim * partial_rotary_factor) =>     r = int(head_dim / partial_rotary_factor)",
         plain=f"rope_parameters({LONGROPE}, 'factor': 2.0}}, 8)"),
    Hint("L7.4", "section 3's block where float32 steps drift",
         "rope_parameters({'rope_type': 'llama3', 'rope_theta': 1e4, 'factor': 40.0, 'low_freq_factor': 2.0, "
         "'high_freq_factor': 3.0, 'original_max_position_embeddings': 8192}, 128)", "m09",
         plain=f"rope_parameters({LLAMA3_1}, 128)"),
    Hint("L7.4", "no block, `null` block, empty block", "rope_spec({'head_dim': 64, 'rope_parameters': {}})",
         '    params = dict(config.get("rope_parameters") or config.get("rope_scaling") or {}) => '
         '    params = dict(config.get("rope_parameters") or config.get("rope_scaling") and {})',
         plain="rope_spec({'head_dim': 64, 'rope_parameters': {'rope_type': 'linear', 'factor': 2.0}})"),
    Hint("L7.4", "`rope_parameters` and `rope_scaling`",
         "rope_spec({'head_dim': 64, 'rope_scaling': {'rope_type': 'linear', 'factor': 2.0}})",
         '    params = dict(config.get("rope_parameters") or config.get("rope_scaling") or {}) => '
         '    params = dict(config.get("rope_parameters") or config.get("XXrope_scalingXX") or {})',
         plain="rope_spec({'head_dim': 64, 'rope_parameters': {'rope_type': 'linear', 'factor': 2.0}})"),
    Hint("L7.4", 'the legacy `"type"` and its precedence',
         "rope_spec({'head_dim': 64, 'rope_scaling': {'type': 'linear', 'factor': 2.0}})",
         '    params["rope_type"] = _given(params, "rope_type", params.get("type")) => '
         '    params["rope_type"] = _given(params, "rope_type", params.get("XXtypeXX"))',
         plain="rope_spec({'head_dim': 64, 'rope_scaling': {'rope_type': 'linear', 'factor': 2.0}})"),
    Hint("L7.4", 'the legacy `"type"` and its precedence',
         "rope_spec({'head_dim': 64, 'rope_scaling': {'rope_type': 'linear', 'type': 'dynamic', 'factor': 2.0}})",
         '    params["rope_type"] = _given(params, "rope_type", params.get("type")) => '
         '    params["rope_type"] = _given(params, "XXrope_typeXX", params.get("type"))',
         plain="rope_spec({'head_dim': 64, 'rope_scaling': {'type': 'linear', 'factor': 2.0}})"),
    Hint("L7.4", "the top-level fields and the block's precedence over them",
         "rope_spec({'head_dim': 64, 'rope_theta': 1e6, 'rope_parameters': {'rope_theta': 500.0}})",
         "        params[name] = _given(params, name, _given(config, name, default)) => "
         "        params[name] = _given(params, None, _given(config, name, default))",
         plain="rope_spec({'head_dim': 64, 'rope_theta': 500.0})"),
    Hint("L7.4", "the default base 10000", "rope_spec({'head_dim': 64})",
         'TOP_LEVEL_DEFAULTS = {"rope_theta": 10000.0, "partial_rotary_factor": None, '
         '"original_max_position_embeddings": None} => TOP_LEVEL_DEFAULTS = {"rope_theta": 10001.0, '
         '"partial_rotary_factor": None, "original_max_position_embeddings": None}',
         plain="rope_spec({'head_dim': 64, 'rope_theta': 10000.0})"),
    Hint("L7.4", "a `hidden_size` that `num_attention_heads` does not divide tells `//` from `/` only with "
                 "`partial_rotary_factor` below 1",
         "rope_spec({'hidden_size': 64, 'num_attention_heads': 3, 'partial_rotary_factor': 0.8})",
         "        head_dim = hidden_size // heads =>         head_dim = hidden_size / heads",
         plain="rope_spec({'hidden_size': 68, 'num_attention_heads': 3})"),
    Hint("L7.4", "`seq_len` and `max_position_embeddings` reaching the rule (a dynamic config",
         "rope_spec({'head_dim': 32, 'max_position_embeddings': 2048, 'rope_scaling': {'rope_type': 'dynamic', "
         "'factor': 2.0}}, seq_len=8192)",
         # mutmut writes the call it changes back with its own indentation
         'rope_parameters(\n        params, head_dim, seq_len=seq_len, max_position_embeddings=config.get('
         '"max_position_embeddings")\n    ) => rope_parameters(\n    params, head_dim, seq_len=None, '
         'max_position_embeddings=config.get("max_position_embeddings")\n)',
         plain="rope_spec({'head_dim': 64, 'rope_parameters': {'rope_type': 'linear', 'factor': 2.0}})"),
    Hint("L7.4", "the spec's four fields",
         "rope_spec({'head_dim': 64, 'max_position_embeddings': 8192, 'rope_scaling': {'type': 'yarn', "
         "'factor': 4.0, 'original_max_position_embeddings': 2048}}).attention_scaling",
         "    return RopeSpec(inv_freq, attention_scaling)  # layout \"half\": HF's rotate_half, RopeSpec's default => "
         "    return RopeSpec(inv_freq, )  # layout \"half\": HF's rotate_half, RopeSpec's default",
         plain="rope_spec({'head_dim': 64, 'max_position_embeddings': 8192, 'rope_scaling': {'type': 'yarn', "
               "'factor': 4.0, 'original_max_position_embeddings': 2048}}).inv_freq"),
    Hint("L7.4", "a missing `low_freq_factor` in an otherwise valid llama3 block, not an empty dict",
         "rope_parameters({'rope_type': 'llama3', 'rope_theta': 5e5, 'factor': 8.0, 'high_freq_factor': 4.0, "
         "'original_max_position_embeddings': 8192}, 128)",
         '    rope_type = _given(p, "rope_type", "default") =>     rope_type = _given(p, "XXrope_typeXX", "default")',
         plain="rope_parameters({'rope_type': 'llama3'}, 128)"),
    Hint("L7.4", "for each field a rule reads, `None` gives what absent gives",
         "rope_parameters({'rope_type': None, 'rope_theta': 1e4}, 16)", "m10",
         plain="rope_parameters({'rope_theta': 1e4}, 16)"),
]

# Runs in a subprocess with PYTHONPATH=course/reference/python.  stdin: {"module", "target",
# "atol", "rtol", "variants": {label: source}, "calls": [[label, expression], ...]}.  stdout: for each
# call, whether its outcome differs from the reference's on the same expression, and both outcomes.
_RUNNER = r"""
import json, math, sys, types, warnings
import numpy as np
from tinyllm.autograd.tensor import Tensor

job = json.load(sys.stdin)


def load(label, source):
    module = types.ModuleType(f"hint_{label}")
    module.__file__ = job["target"]
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{job['target']} ({label})", "exec"), module.__dict__)
    return module


def gradient(f, x, g):
    x = Tensor(x.data, requires_grad=True)
    f(x).backward(g)
    return x.grad


def outcome(module, expression):
    names = {name: getattr(module, name) for name in dir(module) if not name.startswith("_")}
    names.update(np=np, math=math, Tensor=Tensor, gradient=gradient)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return ("value", eval(expression, names))
    except Exception as error:
        return ("raised", type(error).__name__)


def leaves(value):
    if hasattr(value, "inv_freq") and hasattr(value, "layout"):  # a RopeSpec: its four fields
        return [np.asarray(value.inv_freq), value.attention_scaling, value.layout, value.rotary_dim]
    if isinstance(value, Tensor):
        return [value.data]
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


def differ(a, b):
    if a[0] != b[0] or a[0] == "raised":
        return a != b
    left, right = leaves(a[1]), leaves(b[1])
    if len(left) != len(right):
        return True
    for x, y in zip(left, right):
        if isinstance(x, (str, type(None))) or isinstance(y, (str, type(None))):
            if x != y:
                return True
            continue
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return True
        with np.errstate(all="ignore"):
            close = np.isclose(x.astype(np.float64), y.astype(np.float64), rtol=job["rtol"], atol=job["atol"],
                               equal_nan=True)
        if not close.all():
            return True
    return False


def said(result):
    return f"raised {result[1]}" if result[0] == "raised" else f"returned {result[1]!r}"[:300]


modules = {label: load(label, source) for label, source in job["variants"].items()}
report = []
for label, expression in job["calls"]:
    mine, reference = outcome(modules[label], expression), outcome(modules["reference"], expression)
    report.append({"differ": differ(mine, reference), "mistake": said(mine), "reference": said(reference)})
json.dump(report, sys.stdout)
"""

TOLERANCE = {"L7.3": {"atol": 1e-6, "rtol": 0.0},  # L7.3, section 13: float32 outputs at about 1e-6 absolute
             "L7.4": {"atol": 0.0, "rtol": 1e-6}}  # L7.4, section 13: inv_freq at rtol 1e-6, atol 0


def graded(module_id: str):
    module = CATALOG.get(module_id)
    return module, REPO / "course" / "reference" / "python" / module.grading.target


def section(module_id: str, number: int) -> str:
    text = (REPO / CATALOG.get(module_id).chapter).read_text(encoding="utf-8")
    parts = re.split(r"^## (\d+)\. .*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))[str(number)]


def planted_mistakes(module_id: str, reference: str) -> dict[str, str]:
    """The pitfalls and misconceptions of a module: id -> the reference with its edits."""
    found = {}
    for kind, name in (("pitfall", "pitfalls.toml"), ("misconception", "misconceptions.toml")):
        path = REPO / "course" / "mutants" / module_id / name
        for entry in tomllib.loads(path.read_text(encoding="utf-8")).get(kind, []) if path.exists() else []:
            source = reference
            for edit in entry["edit"]:
                assert reference.count(edit["old"]) == 1, f"{entry['id']}: an edit no longer applies"
                source = source.replace(edit["old"], edit["new"])
            found[entry["id"]] = source
    return found


def mistake_source(hint: Hint, reference: str, mistakes: dict[str, str]) -> str:
    if " => " not in hint.mistake:
        assert hint.mistake in mistakes, f"{hint.mistake} is no pitfall or misconception of {hint.module}"
        return mistakes[hint.mistake]
    old, new = hint.mistake.split(" => ")
    new = old[: len(old) - len(old.lstrip())] + new.lstrip()  # the changed text keeps its indentation
    assert reference.count(old) == 1, f"the reference no longer holds {old!r} once: update the hint's mutant"
    return reference.replace(old, new)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, list[dict]]:
    """For each hint, the subprocess's verdict on its call (and its plain input, if any)."""
    results = {}
    for module_id in sorted({hint.module for hint in HINTS}):
        module, target = graded(module_id)
        reference = target.read_text(encoding="utf-8")
        mistakes = planted_mistakes(module_id, reference)
        hints = [hint for hint in HINTS if hint.module == module_id]
        variants = {"reference": reference}
        calls = []
        for number, hint in enumerate(hints):
            variants[f"h{number}"] = mistake_source(hint, reference, mistakes)
            calls += [[f"h{number}", hint.call]] + ([[f"h{number}", hint.plain]] if hint.plain else [])
        job = {"target": str(target), "variants": variants, "calls": calls, **TOLERANCE[module_id]}
        done = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(job), capture_output=True, text=True,
                              cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REFERENCE_TREE)), timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        report = iter(json.loads(done.stdout))
        for hint in hints:
            results[hint.id] = [next(report)] + ([next(report)] if hint.plain else [])
    return results


@pytest.mark.parametrize("hint", HINTS, ids=lambda hint: hint.id)
def test_the_hint_is_in_its_chapter(hint):
    said = " ".join(section(hint.module, GRADED_SECTION).split())
    assert " ".join(hint.says.split()) in said, (
        f"{hint.module}'s section {GRADED_SECTION} no longer says {hint.says!r}: update HINTS with the hint's new words")


@pytest.mark.parametrize("hint", [hint for hint in HINTS if " => " in hint.mistake], ids=lambda hint: hint.id)
def test_the_hint_is_for_a_counted_mutant(hint):
    module, target = graded(hint.module)
    grading = module.grading
    mutants = build_mutant_set(target, REPO / grading.pitfalls, REPO / grading.equivalent)
    source = mistake_source(hint, target.read_text(encoding="utf-8"), {})
    assert source in {mutant.source for mutant in mutants.counted}, (
        f"{hint.mistake!r} is not a mutant the grader counts (mutmut does not generate it, or it is "
        "message-only or listed as equivalent)")


@pytest.mark.parametrize("hint", HINTS, ids=lambda hint: hint.id)
def test_the_input_tells_the_mistake_from_the_reference(hint, outcomes):
    call = outcomes[hint.id][0]
    assert call["differ"], (
        f"the hint {hint.says!r} suggests {hint.call}, but on the mistake it is for ({hint.mistake}) it gives "
        f"what the reference gives: {call['mistake']} vs {call['reference']}")
    if hint.plain:
        plain = outcomes[hint.id][1]
        assert not plain["differ"], (
            f"the plainer input {hint.plain} already catches {hint.mistake} ({plain['mistake']} vs "
            f"{plain['reference']}): the hint's twist is not what catches it; pick a mistake or a plainer input "
            "that shows why the hint matters")
