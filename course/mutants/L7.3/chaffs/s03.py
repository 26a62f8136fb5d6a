"""Chaff s03: partial rotary rotates the LAST rotary_dim entries of each head.

A wrapper around any correct L7.3 implementation, `correct`: with rotary_dim
r < head_dim, apply_rope moves the last r entries to the front, rotates them
there with the correct apply_rope, and moves them back, so the first
head_dim - r entries pass through.  Everything else is the correct
implementation's (the pitfall in course/mutants/L7.3/pitfalls.toml).
"""

from tinyllm.autograd import functional as F

import correct


def rope_cos_sin(positions, inv_freq, attention_scaling=1.0):
    return correct.rope_cos_sin(positions, inv_freq, attention_scaling)


def apply_rope(x, cos, sin, layout="half", rotary_dim=None):
    rotated = correct.apply_rope(x, cos, sin, layout, rotary_dim)  # raises what the correct one raises
    if rotary_dim is None or rotary_dim == x.shape[-1]:
        return rotated
    keep = x.shape[-1] - rotary_dim                        # the entries that should have rotated
    moved = F.concat([x[..., keep:], x[..., :keep]], axis=-1)  # [last r | first head_dim - r]
    out = correct.apply_rope(moved, cos, sin, layout, rotary_dim)
    return F.concat([out[..., rotary_dim:], out[..., :rotary_dim]], axis=-1)


class RopeSpec(correct.RopeSpec):
    """The correct RopeSpec, whose tables and rotation come from the functions above."""

    def cos_sin(self, positions):
        return rope_cos_sin(positions, inv_freq=self.inv_freq, attention_scaling=self.attention_scaling)

    def apply(self, x, positions):
        cos_table, sin_table = self.cos_sin(positions)
        return apply_rope(x, cos_table, sin_table, layout=self.layout, rotary_dim=self.rotary_dim)
