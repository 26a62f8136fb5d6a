"""Chaff s06: the second entry of each pair is read as plain numbers; only the
first gets a gradient.

A wrapper around any correct L7.3 implementation, `correct`: apply_rope hands
the correct apply_rope a copy of x whose second entries of the rotated pairs
(x[r/2 + i] in the half layout, x[2i + 1] in the interleaved one) are
constants, Tensor(data), cut from autograd.  The forward is unchanged; those
entries of x get no gradient.  Everything else is the correct implementation's
(the pitfall in course/mutants/L7.3/pitfalls.toml).
"""

from tinyllm.autograd import functional as F
from tinyllm.autograd.tensor import Tensor

import correct


def rope_cos_sin(positions, inv_freq, attention_scaling=1.0):
    return correct.rope_cos_sin(positions, inv_freq, attention_scaling)


def apply_rope(x, cos, sin, layout="half", rotary_dim=None):
    correct.apply_rope(x, cos, sin, layout, rotary_dim)  # raises what the correct one raises
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    if layout == "interleaved":  # first and second entries side by side, then back to (x0, x1, x2, ...)
        pairs = F.stack([x[..., 0:r:2], Tensor(x.data[..., 1:r:2])], axis=-1)
        pieces = [F.reshape(pairs, x.shape[:-1] + (r,))]
    else:
        pieces = [x[..., : r // 2], Tensor(x.data[..., r // 2 : r])]
    if r < x.shape[-1]:
        pieces.append(x[..., r:])
    return correct.apply_rope(F.concat(pieces, axis=-1), cos, sin, layout, rotary_dim)


class RopeSpec(correct.RopeSpec):
    """The correct RopeSpec, whose tables and rotation come from the functions above."""

    def cos_sin(self, positions):
        return rope_cos_sin(positions, inv_freq=self.inv_freq, attention_scaling=self.attention_scaling)

    def apply(self, x, positions):
        cos_table, sin_table = self.cos_sin(positions)
        return apply_rope(x, cos_table, sin_table, layout=self.layout, rotary_dim=self.rotary_dim)
