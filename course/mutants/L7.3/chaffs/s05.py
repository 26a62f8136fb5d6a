"""Chaff s05: attention_scaling is a temperature on the cosine only.

A wrapper around any correct L7.3 implementation, `correct`: rope_cos_sin
returns the correct cos (scaled) with the sin of attention_scaling 1.
Everything else is the correct implementation's (the pitfall in
course/mutants/L7.3/pitfalls.toml).
"""

import correct


def rope_cos_sin(positions, inv_freq, attention_scaling=1.0):
    cos, _ = correct.rope_cos_sin(positions, inv_freq, attention_scaling)  # raises what the correct one raises
    _, unscaled_sin = correct.rope_cos_sin(positions, inv_freq, 1.0)
    return cos, unscaled_sin


def apply_rope(x, cos, sin, layout="half", rotary_dim=None):
    return correct.apply_rope(x, cos, sin, layout, rotary_dim)


class RopeSpec(correct.RopeSpec):
    """The correct RopeSpec, whose tables and rotation come from the functions above."""

    def cos_sin(self, positions):
        return rope_cos_sin(positions, inv_freq=self.inv_freq, attention_scaling=self.attention_scaling)

    def apply(self, x, positions):
        cos_table, sin_table = self.cos_sin(positions)
        return apply_rope(x, cos_table, sin_table, layout=self.layout, rotary_dim=self.rotary_dim)
