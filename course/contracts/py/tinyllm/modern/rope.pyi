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

    positions: whole numbers from 0 to 2**24 - 1 of any shape P: a number, [S],
        [B, S], ... (numpy integer arrays, Python ints, or floats holding whole
        numbers).  Below 2**24 because float32 holds every whole number only up
        to 2**24 (2**24 + 1 rounds to 2**24): past it, different positions
        would share one angle.
    inv_freq: 1-D, r/2 frequencies theta_i (one per pair), each with
        |theta_i| <= 2**104: then |angle| <= (2**24 - 1) * 2**104 = 2**128 -
        2**104, float32's largest number, and no angle overflows.
    attention_scaling: a real number (not a bool) from 2**-126 to 2**128 -
        2**104 (float32's normal range, both ends included), YaRN's
        temperature; 1.0 for plain RoPE.  Both tables are multiplied by it.

    The limits are checked on the values given, before any conversion to
    float32 (float64 1e39 would become inf): the function never returns inf
    or nan.

    Returns (cos, sin), two float32 numpy arrays of shape P + (r/2,):
        angle[..., i] = float32(positions[...]) * float32(inv_freq[i])
    computed as ONE float32 product, as Hugging Face computes it, then
        cos = cos(angle) * float32(attention_scaling)
        sin = sin(angle) * float32(attention_scaling)
    Do not compute the angles in float16 (wrong past position 2048) nor in
    float64 (about 1e-3 away from HF's angles near position 65535).

    Raises:
        TypeError: positions or inv_freq are not numbers (strings, None,
            objects, bools); attention_scaling is not a real number, or is a
            bool.
        ValueError: a position is negative, fractional, nan or inf, or 2**24
            or more (Python ints too large for numpy's int64, such as 2**70,
            included); inv_freq is not 1-D, is empty, is not finite, or has an
            entry larger than 2**104 in size; attention_scaling is outside
            [2**-126, 2**128 - 2**104] (zero, negative, nan and inf included).
    """
    ...


def apply_rope(x: Tensor, cos, sin, layout: str = "half", rotary_dim: int | None = None) -> Tensor:
    """Rotate the pairs of x[..., :r] by the angles whose cos and sin are given.

    x: Tensor [..., head_dim], float32 or float64; typically [B, H, S, head_dim].
    cos, sin: numpy float arrays of the same shape, last axis r/2, that
        broadcast against x[..., :r/2] with numpy's rules without changing its
        shape: [S, r/2] tables serve x [B, H, S, D]; per-row tables [B, S, r/2]
        serve it as cos[:, None], sin[:, None].  They are cast to x's dtype,
        and must be finite there (a float64 1e39 is not, for a float32 x).
    layout: the string "half" (pairs i, i + r/2) or "interleaved" (pairs
        2i, 2i + 1).
    rotary_dim: r, an int (not a bool), even, 2 <= r <= head_dim; None means
        head_dim.

    Returns a Tensor of x's shape and dtype: x[..., :r] rotated pair by pair,
    x[..., r:] unchanged.  Gradients flow to x (the backward is the rotation
    by minus the angle).

    Raises:
        TypeError: x is not a Tensor; rotary_dim is not an int, or is a bool;
            cos or sin are not float arrays.
        ValueError: x is 0-d; layout is not one of the two strings; rotary_dim
            is odd, <= 0 or > head_dim (or head_dim is odd when rotary_dim is
            None); cos and sin differ in shape; their last axis is not r/2;
            they do not broadcast to x[..., :r/2] or would enlarge it; they hold
            nan or inf, or numbers beyond x's dtype's largest.
    """
    ...


@dataclass(frozen=True, eq=False)
class RopeSpec:
    """How one attention layer rotates its queries and keys (L7.5 and L7.6
    take one).

    inv_freq: [r/2] frequencies, as rope_cos_sin takes them.  After
        construction it is the spec's own read-only float32 copy: changing the
        caller's array later does not change the spec, and writing into
        spec.inv_freq raises ValueError (numpy's, for a read-only array).
    attention_scaling: multiplies both tables (1.0 for plain RoPE).
    layout: "half" or "interleaved".
    rotary_dim: r; None means 2 * len(inv_freq).  After construction it is
        always the int 2 * len(inv_freq).

    Construction validates every field, with the same rules and exceptions as
    rope_cos_sin and apply_rope, so a bad spec fails when it is built, never
    later in apply: TypeError if rotary_dim is not None and not an int (8.0,
    "8" and True included), ValueError if it is not 2 * len(inv_freq).
    """

    inv_freq: np.ndarray
    attention_scaling: float = 1.0
    layout: str = "half"
    rotary_dim: int | None = None

    def __post_init__(self) -> None:
        """Validate the fields, and set inv_freq to a read-only float32 copy and
        rotary_dim to its int (use object.__setattr__: the dataclass is
        frozen)."""
        ...

    def cos_sin(self, positions) -> tuple[np.ndarray, np.ndarray]:
        """rope_cos_sin(positions, self.inv_freq, self.attention_scaling)."""
        ...

    def apply(self, x: Tensor, positions) -> Tensor:
        """Rotate x ([..., S, head_dim]) at `positions` ([S], or any shape whose
        tables broadcast against x[..., :r/2]): apply_rope with this spec's
        tables, layout and rotary_dim."""
        ...
