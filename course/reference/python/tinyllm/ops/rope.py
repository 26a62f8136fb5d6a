"""L7.3x RoPE as a production operator: the contract every backend keeps, and
the numpy backend (the reference).

    from tinyllm.ops.registry import get_op

    rope = get_op("rope")
    q = rope.forward(q, positions, theta=1_000_000.0)       # x's dtype
    q32 = rope.forward_fp32(q, positions, theta=1_000_000.0)  # float32: the gold path

x: numpy array [B, H, S, D] of float32, float16 or bfloat16 (ml_dtypes): the
    queries or the keys of one layer, one head vector per (b, h, s).
positions: integers >= 0, [S] (every sequence at the same positions) or
    [B, S] (each sequence its own: packed samples, a KV cache at different offsets).
theta: the RoPE base; 1e6 for Qwen3.

The math is the same for every backend, and all of it is float32:
    inv_freq = rope_inv_freq(D, theta)                    [D/2]
    cos, sin = rope_cos_sin(positions, inv_freq)          [S, D/2] or [B, S, D/2]
    a, b = x[..., :D/2], x[..., D/2:]                     HF's half layout: pair i is (x_i, x_{i+D/2})
    out = concat(a*cos - b*sin, a*sin + b*cos)            products and sums rounded one by one (no FMA)
forward is forward_fp32 cast to x's dtype (numpy's astype: round to nearest even).
Nothing mixes rows: out[b, h, s] depends on x[b, h, s] and its position only, so
the op is batch invariant bit for bit.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from tinyllm.modern.rope import rope_cos_sin
from tinyllm.modern.rope_tables import rope_inv_freq

DTYPES = ("float32", "float16", "bfloat16")  # what x may be; the math is float32 whatever it is

# Why positions are never stored in a half-precision float: the largest whole
# number up to which every integer is exact, and what the next one becomes.
_HALF_POSITIONS = {
    "float16": "every whole number is exact only up to 2048 (2049 becomes 2048; 65520 becomes inf)",
    "bfloat16": "every whole number is exact only up to 256 (257 becomes 256; 1995 becomes 1992)",
}


class RopeOp(ABC):
    """The RoPE operator's contract.  A backend subclasses it and supplies
    rotate(); checking the arguments, the tables and the dtype casts are here,
    shared, so every backend treats its input in exactly the same way."""

    name = "rope"
    backend = ""  # set by each backend: the name it has in the registry

    def forward(self, x: np.ndarray, positions, theta: float = 1_000_000.0) -> np.ndarray:
        """Rotate x [B, H, S, D] at `positions`; same shape and dtype as x.
        Equals forward_fp32(x, positions, theta).astype(x.dtype), bit for bit."""
        return self.forward_fp32(x, positions, theta).astype(x.dtype, copy=False)

    def forward_fp32(self, x: np.ndarray, positions, theta: float = 1_000_000.0) -> np.ndarray:
        """Rotate x [B, H, S, D] at `positions`, computing and returning float32.

        Raises TypeError if x is not a numpy array of float32, float16 or
        bfloat16, or if positions are not integers (float16 and bfloat16
        positions are refused with the reason); ValueError if x is not 4-D, D
        is odd, positions are not [S] or [B, S] matching x, or are negative
        or 2**24 or more; TypeError or ValueError if theta is not a finite
        number > 0.
        """
        _check_x(x)
        positions = _check_positions(positions, x.shape)
        x32 = np.ascontiguousarray(x, dtype=np.float32)  # [B, H, S, D]; no copy if x is float32 already
        cos, sin = rope_cos_sin(positions, rope_inv_freq(x.shape[-1], theta))  # [S, D/2] or [B, S, D/2]
        if positions.ndim == 2:
            cos, sin = cos[:, None], sin[:, None]  # [B, 1, S, D/2]: a sequence's heads share its positions
        return self.rotate(x32, cos, sin)

    @abstractmethod
    def rotate(self, x32: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        """The backend's kernel.  x32: float32, C-contiguous, [B, H, S, D];
        cos, sin: float32, C-contiguous, [S, D/2] or [B, 1, S, D/2].  Returns a
        new float32 array [B, H, S, D]: pair (x_i, x_{i+D/2}) becomes
        (x_i*cos_i - x_{i+D/2}*sin_i, x_i*sin_i + x_{i+D/2}*cos_i)."""

    def __repr__(self) -> str:
        return f"<{self.name} op, backend {self.backend!r}>"


class NumpyRopeOp(RopeOp):
    """The reference backend: the rotation in numpy, one ufunc per product and sum."""

    backend = "numpy"

    def rotate(self, x32: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        half = x32.shape[-1] // 2
        a, b = x32[..., :half], x32[..., half:]  # each [B, H, S, D/2]
        out = np.empty_like(x32)  # [B, H, S, D]
        out[..., :half] = a * cos - b * sin
        out[..., half:] = a * sin + b * cos
        return out


# ---- validation: each helper names the argument and says what was expected ----


def _check_x(x) -> None:
    if not isinstance(x, np.ndarray):
        hint = "; pass the Tensor's .data" if isinstance(getattr(x, "data", None), np.ndarray) else ""
        raise TypeError(f"rope: x must be a numpy array [B, H, S, D], got {type(x).__name__}{hint}")
    if x.dtype.name not in DTYPES:
        raise TypeError(
            f"rope: x must be float32, float16 or bfloat16 (ml_dtypes.bfloat16), got {x.dtype}; the op computes "
            "in float32 and returns x's dtype, so cast x to one of these first"
        )
    if x.ndim != 4:
        raise ValueError(
            f"rope: x must be [B, H, S, D] (batch, heads, sequence, head_dim), got shape {x.shape}; "
            "add the missing axes, e.g. x[None] for a single sequence"
        )
    if x.shape[-1] < 2 or x.shape[-1] % 2:
        raise ValueError(f"rope: the head dimension D = {x.shape[-1]} must be even (D/2 pairs), x has shape {x.shape}")


def _check_positions(positions, x_shape) -> np.ndarray:
    positions = np.asarray(positions)
    if positions.dtype.name in _HALF_POSITIONS:
        raise TypeError(
            f"rope: positions are {positions.dtype}, and in {positions.dtype} "
            f"{_HALF_POSITIONS[positions.dtype.name]}, so far-apart tokens would share one angle. "
            "Keep positions as integers (np.int64) and let the op convert them to float32 for the angles."
        )
    if positions.dtype.kind not in "iu":
        raise TypeError(
            f"rope: positions must be integer token indices (np.int64, ...), got dtype {positions.dtype}; "
            "pass e.g. np.arange(seq_len)"
        )
    B, _, S, _ = x_shape
    if positions.shape not in ((S,), (B, S)):
        raise ValueError(
            f"rope: positions must be [S] = ({S},) or [B, S] = ({B}, {S}) for x of shape {tuple(x_shape)}, "
            f"got shape {positions.shape}"
        )
    return positions
