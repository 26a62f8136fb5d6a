"""L7.3x The native backend of the RoPE op: the rotation runs in C.

The kernel is tl_rope_f32 (course module L9.6), called through its ctypes
binding tinyllm.native.  Everything else, the argument checks, the float32
tables and the casts, is RopeOp's, shared with the numpy backend; the C and
numpy compute the same float32 products and sums in the same order, so the two
backends give the same bits.
"""

from __future__ import annotations

import numpy as np

from tinyllm.native import tl_rope_f32
from tinyllm.ops.rope import RopeOp


class NativeRopeOp(RopeOp):
    """The RoPE op with its rotation in C (tl_rope_f32, half layout)."""

    backend = "native"

    def rotate(self, x32: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        # x32 [B, H, S, D]; cos, sin [S, D/2] or [B, 1, S, D/2]: the C walks the broadcast without copying
        return tl_rope_f32(x32, cos, sin, layout="half")
