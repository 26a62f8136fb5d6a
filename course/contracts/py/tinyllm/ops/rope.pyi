"""L7.3x RoPE as a production operator: the contract every backend keeps, and
the numpy backend (the reference).

    from tinyllm.ops.registry import get_op

    rope = get_op("rope")
    q = rope.forward(q, positions, theta=1_000_000.0)         # x's dtype
    q32 = rope.forward_fp32(q, positions, theta=1_000_000.0)  # float32: the gold path

x: numpy array [B, H, S, D] of float32, float16 or bfloat16 (ml_dtypes): the
    queries or the keys of one layer, one head vector per (b, h, s).
positions: integers >= 0, [S] (every sequence at the same positions) or
    [B, S] (each sequence its own).
theta: the RoPE base; 1e6 (Qwen3) by default.

The math is the same for every backend, and all of it is float32:
    inv_freq = rope_inv_freq(D, theta)                    [D/2]
    cos, sin = rope_cos_sin(positions, inv_freq)          [S, D/2] or [B, S, D/2]
    a, b = x[..., :D/2], x[..., D/2:]                     HF's half layout: pair i is (x_i, x_{i+D/2})
    out = concat(a*cos - b*sin, a*sin + b*cos)            each product and sum rounded (no FMA)
forward is forward_fp32 cast to x's dtype with astype (round to nearest even).
Nothing mixes rows, so the op is batch invariant bit for bit.  Chapter:
course/chapters/L7.3x-production-rope.md, sections 2 to 6 and 10.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from tinyllm.modern.rope import rope_cos_sin
from tinyllm.modern.rope_tables import rope_inv_freq

DTYPES = ("float32", "float16", "bfloat16")  # x.dtype.name must be one of these


class RopeOp(ABC):
    """The RoPE operator's contract.  A backend subclasses it, sets `backend`
    to its registry name, and supplies rotate(); forward and forward_fp32 (the
    argument checks, the tables, the casts) are written here once, for every
    backend."""

    name = "rope"
    backend = ""

    def forward(self, x: np.ndarray, positions, theta: float = 1_000_000.0) -> np.ndarray:
        """Rotate x [B, H, S, D] at `positions`: an array of x's shape and
        dtype, equal bit for bit to forward_fp32(x, positions, theta).astype(x.dtype).
        Raises what forward_fp32 raises."""
        ...

    def forward_fp32(self, x: np.ndarray, positions, theta: float = 1_000_000.0) -> np.ndarray:
        """Rotate x [B, H, S, D] at `positions`, computing in float32 and
        returning a new float32 array of x's shape.

        Steps: check x and positions; x32 = x as a C-contiguous float32 array;
        tables from rope_cos_sin(positions, rope_inv_freq(D, theta)); for [B, S]
        positions give the tables a heads axis, cos[:, None] -> [B, 1, S, D/2];
        return self.rotate(x32, cos, sin).

        Raises:
            TypeError: x is not a numpy.ndarray (a Tensor: pass its .data);
                x.dtype is not float32, float16 or bfloat16; positions are not
                integers.  Positions held in float16 or bfloat16 are refused
                with a message that names the dtype and says why: float16 holds
                every whole number exactly only up to 2048 (2049 becomes 2048),
                bfloat16 only up to 256 (257 becomes 256).
            ValueError: x is not 4-D; D is odd; positions are not [S] or [B, S]
                with x's S (and B); a position is negative, or 2**24 or more
                (rope_cos_sin's checks: float32 holds every whole number only
                up to 2**24).
            TypeError or ValueError: theta is not a finite number > 0
                (rope_inv_freq's checks).
        """
        ...

    @abstractmethod
    def rotate(self, x32: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        """The backend's kernel.  x32: float32, C-contiguous, [B, H, S, D];
        cos, sin: float32, C-contiguous, [S, D/2] or [B, 1, S, D/2].  Returns a
        new float32 array [B, H, S, D] in which pair (x_i, x_{i+D/2}) becomes
        (x_i*cos_i - x_{i+D/2}*sin_i, x_i*sin_i + x_{i+D/2}*cos_i)."""
        ...


class NumpyRopeOp(RopeOp):
    """The reference backend: the rotation in numpy, one ufunc per product and
    sum, so that it equals L7.3's apply_rope bit for bit."""

    backend = "numpy"

    def rotate(self, x32: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        """RopeOp.rotate, in numpy."""
        ...
