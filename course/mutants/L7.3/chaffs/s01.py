"""Chaff s01: the half layout pairs adjacent entries (x[2i], x[2i+1]), as in
the RoFormer paper.

A wrapper around any correct L7.3 implementation, `correct`: apply_rope asked
for the half layout rotates the interleaved pairs instead.  Everything else is
the correct implementation's (the pitfall in course/mutants/L7.3/pitfalls.toml).
"""

import correct


def rope_cos_sin(positions, inv_freq, attention_scaling=1.0):
    return correct.rope_cos_sin(positions, inv_freq, attention_scaling)


def apply_rope(x, cos, sin, layout="half", rotary_dim=None):
    misread = "interleaved" if isinstance(layout, str) and layout == "half" else layout
    return correct.apply_rope(x, cos, sin, misread, rotary_dim)


class RopeSpec(correct.RopeSpec):
    """The correct RopeSpec, whose tables and rotation come from the functions above."""

    def cos_sin(self, positions):
        return rope_cos_sin(positions, inv_freq=self.inv_freq, attention_scaling=self.attention_scaling)

    def apply(self, x, positions):
        cos_table, sin_table = self.cos_sin(positions)
        return apply_rope(x, cos_table, sin_table, layout=self.layout, rotary_dim=self.rotary_dim)
