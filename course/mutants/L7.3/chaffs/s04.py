"""Chaff s04: half precision is fine for the angles.

A wrapper around any correct L7.3 implementation, `correct`: rope_cos_sin
rounds the positions and the frequencies to float16, multiplies them in
float16 (positions past 65504 become inf), and takes the correct cos and sin
of those angles: the correct rope_cos_sin at position 1 with the angles as
frequencies (1 * angle is exact in float32).  An angle that is not finite
gives nan, as numpy's cos of inf does.  Everything else is the correct
implementation's (the pitfall in course/mutants/L7.3/pitfalls.toml).
"""

import numpy as np

import correct


def rope_cos_sin(positions, inv_freq, attention_scaling=1.0):
    cos, sin = correct.rope_cos_sin(positions, inv_freq, attention_scaling)  # raises what the correct one raises
    positions16 = np.asarray(positions).astype(np.float32).astype(np.float16)
    inv_freq16 = np.asarray(inv_freq).astype(np.float32).astype(np.float16)
    angles = (positions16[..., None] * inv_freq16).astype(np.float32)  # [..., r/2]
    if angles.size == 0:
        return cos, sin
    finite = np.isfinite(angles)
    cos16, sin16 = correct.rope_cos_sin(1, np.where(finite, angles, 0).ravel(), attention_scaling)
    cos16 = np.where(finite.ravel(), cos16, np.nan).astype(cos.dtype).reshape(cos.shape)
    sin16 = np.where(finite.ravel(), sin16, np.nan).astype(sin.dtype).reshape(sin.shape)
    return cos16, sin16


def apply_rope(x, cos, sin, layout="half", rotary_dim=None):
    return correct.apply_rope(x, cos, sin, layout, rotary_dim)


class RopeSpec(correct.RopeSpec):
    """The correct RopeSpec, whose tables and rotation come from the functions above."""

    def cos_sin(self, positions):
        return rope_cos_sin(positions, inv_freq=self.inv_freq, attention_scaling=self.attention_scaling)

    def apply(self, x, positions):
        cos_table, sin_table = self.cos_sin(positions)
        return apply_rope(x, cos_table, sin_table, layout=self.layout, rotary_dim=self.rotary_dim)
