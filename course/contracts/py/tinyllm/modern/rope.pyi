"""L7.3 Rotary position embeddings (RoPE), as Hugging Face computes them.

Pair i of a head vector at position p is rotated by the angle p * inv_freq[i]:

    (a, b) -> (a cos(p theta_i) - b sin(p theta_i),  a sin(p theta_i) + b cos(p theta_i))

The layout says which two entries of x[..., :r] form pair i (r = rotary_dim):

    "half"         (x[i], x[i + r/2])    HF Llama, Mistral, Qwen, SmolLM2, GPT-NeoX
    "interleaved"  (x[2i], x[2i + 1])    RoFormer, Meta's original Llama code

and the rotated pair is written back to the same two entries.  Entries
x[..., r:] pass through unchanged (partial rotary).

Build apply_rope from Tensor indexing, products with the constant tables, and
F.concat / F.stack / F.reshape (tinyllm.autograd.functional): then autograd
gives the backward, which is the inverse rotation.  Chapter:
course/chapters/L7.3-rope.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyllm.autograd import functional as F
from tinyllm.autograd.tensor import Tensor


def rope_cos_sin(positions, inv_freq, attention_scaling=1.0) -> tuple[np.ndarray, np.ndarray]:
    """The cos and sin tables for `positions`.

    positions: integers >= 0 of any shape P: a number, [S], [B, S], ... (numpy
        integer arrays, Python ints, or floats holding whole numbers).
    inv_freq: 1-D, r/2 frequencies theta_i (one per pair).
    attention_scaling: a finite number > 0 (YaRN's temperature; 1.0 for plain
        RoPE).  Both tables are multiplied by it.

    Returns (cos, sin), two float32 numpy arrays of shape P + (r/2,):
        angle[..., i] = float32(positions[...]) * float32(inv_freq[i])
    computed as ONE float32 product, as Hugging Face computes it, then
        cos = cos(angle) * float32(attention_scaling)
        sin = sin(angle) * float32(attention_scaling)
    Do not compute the angles in float16 (wrong past position 2048) nor in
    float64 (about 1e-3 away from HF's angles near position 65535).

    Raises:
        TypeError: positions or inv_freq are not numbers (strings, objects,
            bools); attention_scaling is not a real number.
        ValueError: a position is negative, fractional, nan or inf; inv_freq
            is not 1-D, is empty, or is not finite; attention_scaling is not
            finite or not > 0.
    """
    ...


def apply_rope(x: Tensor, cos, sin, layout: str = "half", rotary_dim: int | None = None) -> Tensor:
    """Rotate the pairs of x[..., :r] by the angles whose cos and sin are given.

    x: Tensor [..., head_dim], float32 or float64; typically [B, H, S, head_dim].
    cos, sin: numpy arrays of the same shape, last axis r/2, that broadcast
        against x[..., :r/2] with numpy's rules without changing its shape:
        [S, r/2] tables serve x [B, H, S, D]; per-row tables [B, S, r/2]
        serve it as cos[:, None], sin[:, None].  They are cast to x's dtype.
    layout: "half" (pairs i, i + r/2) or "interleaved" (pairs 2i, 2i + 1).
    rotary_dim: r, even, 2 <= r <= head_dim; None means head_dim.

    Returns a Tensor of x's shape and dtype: x[..., :r] rotated pair by pair,
    x[..., r:] unchanged.  Gradients flow to x (the backward is the rotation
    by minus the angle).

    Raises:
        TypeError: x is not a Tensor; rotary_dim is not an int; cos or sin
            are not float arrays.
        ValueError: x is 0-d; layout is unknown; rotary_dim is odd, <= 0 or
            > head_dim (or head_dim is odd when rotary_dim is None); cos and
            sin differ in shape; their last axis is not r/2; they do not
            broadcast to x[..., :r/2] or would enlarge it; they hold nan or inf.
    """
    ...


@dataclass(frozen=True, eq=False)
class RopeSpec:
    """How one attention layer rotates its queries and keys (L7.5 and L7.6
    take one).

    inv_freq: [r/2] frequencies, as rope_cos_sin takes them.
    attention_scaling: multiplies both tables (1.0 for plain RoPE).
    layout: "half" or "interleaved".
    rotary_dim: r; None means 2 * len(inv_freq).  After construction it is
        always the int 2 * len(inv_freq).

    Construction validates the fields with the same rules and exceptions as
    rope_cos_sin and apply_rope, and raises ValueError if rotary_dim is not
    2 * len(inv_freq).
    """

    inv_freq: np.ndarray
    attention_scaling: float = 1.0
    layout: str = "half"
    rotary_dim: int | None = None

    def __post_init__(self) -> None:
        """Validate the fields and set rotary_dim (use object.__setattr__: the
        dataclass is frozen)."""
        ...

    def cos_sin(self, positions) -> tuple[np.ndarray, np.ndarray]:
        """rope_cos_sin(positions, self.inv_freq, self.attention_scaling)."""
        ...

    def apply(self, x: Tensor, positions) -> Tensor:
        """Rotate x ([..., S, head_dim]) at `positions` ([S], or any shape whose
        tables broadcast against x[..., :r/2]): apply_rope with this spec's
        tables, layout and rotary_dim."""
        ...
