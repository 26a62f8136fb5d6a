"""L7.3x The native backend of the RoPE op: the rotation runs in C.

The kernel is tl_rope_f32 (course module L9.6), called through its binding
tinyllm.native: tl_rope_f32(x, cos, sin, layout="half") takes float32
C-contiguous arrays, broadcasts the tables over x's leading axes as numpy does,
and returns a new float32 array.  Everything else (the checks, the tables, the
casts) is RopeOp's, shared with the numpy backend; the C computes the same
float32 products and sums in the same order, so both backends give the same
bits.  Chapter: course/chapters/L7.3x-production-rope.md, section 2.
"""

from __future__ import annotations

import numpy as np

from tinyllm.native import tl_rope_f32
from tinyllm.ops.rope import RopeOp


class NativeRopeOp(RopeOp):
    """The RoPE op with its rotation in C (tl_rope_f32, half layout)."""

    backend = "native"

    def rotate(self, x32: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        """RopeOp.rotate, by tl_rope_f32."""
        ...
