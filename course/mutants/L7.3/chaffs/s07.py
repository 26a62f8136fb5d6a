"""Chaff s07: the interleaved layout only changes which entries are read; the
output is written in half order.

A wrapper around any correct L7.3 implementation, `correct`: in the
interleaved layout, apply_rope takes the correct result and moves its rotated
entries from (a0, b0, a1, b1, ...) to (a0, a1, ..., b0, b1, ...).  Everything
else is the correct implementation's (the pitfall in
course/mutants/L7.3/pitfalls.toml).
"""

from tinyllm.autograd import functional as F

import correct


def rope_cos_sin(positions, inv_freq, attention_scaling=1.0):
    return correct.rope_cos_sin(positions, inv_freq, attention_scaling)


def apply_rope(x, cos, sin, layout="half", rotary_dim=None):
    out = correct.apply_rope(x, cos, sin, layout, rotary_dim)
    if layout != "interleaved":
        return out
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    pieces = [out[..., 0:r:2], out[..., 1:r:2]] + ([out[..., r:]] if r < x.shape[-1] else [])
    return F.concat(pieces, axis=-1)


class RopeSpec(correct.RopeSpec):
    """The correct RopeSpec, whose tables and rotation come from the functions above."""

    def cos_sin(self, positions):
        return rope_cos_sin(positions, inv_freq=self.inv_freq, attention_scaling=self.attention_scaling)

    def apply(self, x, positions):
        cos_table, sin_table = self.cos_sin(positions)
        return apply_rope(x, cos_table, sin_table, layout=self.layout, rotary_dim=self.rotary_dim)
