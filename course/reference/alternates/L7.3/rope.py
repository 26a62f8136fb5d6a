"""L7.3 RoPE, a second correct implementation written differently from the
reference (course/reference/python/tinyllm/modern/rope.py).

`ol check` runs a student's tests on it as well as on the reference: a test
that passes only on one implementation's internals (its helper names, its
error wording, its exact sequence of ops) rejects a correct implementation.

The difference: the reference slices each pair into (a, b) and rotates; this
one widens the tables to full rotary width and uses the "rotate_half" form

    out = x * cos_full + rotated(x) * sin_full,  rotated(a, b) = (-b, a)

with rotated(x) built per layout.  Same contract, same results bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyllm.autograd import functional as F
from tinyllm.autograd.tensor import Tensor

F32 = np.finfo(np.float32)


def rope_cos_sin(positions, inv_freq, attention_scaling=1.0):
    p = np.array(positions, copy=True)
    if p.dtype == object and p.size and all(isinstance(v, int) and not isinstance(v, bool) for v in p.ravel()):
        raise ValueError("positions: integers too large for numpy, expected 0 .. 2**24 - 1")
    if p.dtype.kind not in ("i", "u", "f"):
        raise TypeError(f"positions: expected integer token positions, got an array of {p.dtype}")
    if p.size and (not np.isfinite(p).all() or (p % 1 != 0).any()):
        raise ValueError("positions: expected whole numbers")
    if p.size and p.min() < 0:
        raise ValueError("positions: expected values >= 0")
    if p.size and p.max() > 2**24 - 1:
        raise ValueError("positions: expected values < 2**24, float32's range of exact whole numbers")
    freqs = np.array(inv_freq, copy=True)
    if freqs.dtype.kind not in ("i", "u", "f"):
        raise TypeError(f"inv_freq: expected numbers, got {freqs.dtype}")
    if freqs.ndim != 1 or len(freqs) < 1 or not np.isfinite(freqs).all():
        raise ValueError(f"inv_freq: expected a non-empty finite 1-D array, got shape {freqs.shape}")
    if np.abs(freqs.astype(np.float64)).max() > 2.0**104:
        raise ValueError("inv_freq: expected |inv_freq| <= 2**104, so that no float32 angle overflows")
    if isinstance(attention_scaling, bool) or not isinstance(attention_scaling, (int, float, np.integer, np.floating)):
        raise TypeError("attention_scaling: expected a number")
    if not float(F32.tiny) <= attention_scaling <= float(F32.max):
        raise ValueError("attention_scaling: expected a number in float32's normal range")
    s = float(attention_scaling)

    flat = np.multiply.outer(p.astype(np.float32).ravel(), freqs.astype(np.float32))  # [N, r/2] float32
    angles = flat.reshape(p.shape + (len(freqs),))
    scale = np.float32(s)
    return np.cos(angles) * scale, np.sin(angles) * scale


def apply_rope(x, cos, sin, layout="half", rotary_dim=None):
    if not isinstance(x, Tensor):
        raise TypeError("x: expected a Tensor")
    if x.ndim == 0:
        raise ValueError("x: expected at least one axis")
    if layout != "half" and layout != "interleaved":
        raise ValueError(f"layout: expected 'half' or 'interleaved', got {layout!r}")
    d = x.shape[-1]
    if rotary_dim is None:
        rotary_dim = d
    elif isinstance(rotary_dim, bool) or not isinstance(rotary_dim, (int, np.integer)):
        raise TypeError("rotary_dim: expected an int")
    if not (0 < rotary_dim <= d and rotary_dim % 2 == 0):
        raise ValueError(f"rotary_dim: expected an even number in 2..{d}, got {rotary_dim}")
    half = rotary_dim // 2

    cos, sin = np.asarray(cos), np.asarray(sin)
    if cos.shape != sin.shape:
        raise ValueError(f"cos, sin: expected equal shapes, got {cos.shape} and {sin.shape}")
    if cos.dtype.kind != "f" or sin.dtype.kind != "f":
        raise TypeError("cos, sin: expected float arrays")
    if cos.ndim == 0 or cos.shape[-1] != half:
        raise ValueError(f"cos, sin: expected a last axis of {half} (one per pair), got shape {cos.shape}")
    lead = x.shape[:-1]
    if cos.ndim > len(lead) + 1 or any(t not in (1, n) for t, n in zip(cos.shape[-2::-1], lead[::-1])):
        raise ValueError(f"cos, sin: shape {cos.shape} does not broadcast to {lead + (half,)}")
    with np.errstate(over="ignore"):  # a table beyond x's dtype becomes inf here, and is refused
        cos, sin = cos.astype(x.dtype), sin.astype(x.dtype)
    if not (np.isfinite(cos).all() and np.isfinite(sin).all()):
        raise ValueError("cos, sin: expected finite values in x's dtype")

    if layout == "half":
        cos_full = np.concatenate([cos, cos], axis=-1)
        sin_full = np.concatenate([sin, sin], axis=-1)
    else:
        cos_full = np.repeat(cos, 2, axis=-1)
        sin_full = np.repeat(sin, 2, axis=-1)

    x_rot = x[..., :rotary_dim]
    turned = x_rot * cos_full + _rotated(x_rot, layout) * sin_full
    if rotary_dim == d:
        return turned
    return F.concat([turned, x[..., rotary_dim:]], axis=-1)


def _rotated(x, layout):
    """Each pair (a, b) replaced by (-b, a), in place of the layout."""
    r = x.shape[-1]
    if layout == "half":
        return F.concat([-x[..., r // 2 :], x[..., : r // 2]], axis=-1)
    pairs = F.stack([-x[..., 1::2], x[..., 0::2]], axis=-1)  # [..., r/2, 2]
    return F.reshape(pairs, x.shape)


@dataclass(frozen=True, eq=False)
class RopeSpec:
    inv_freq: np.ndarray
    attention_scaling: float = 1.0
    layout: str = "half"
    rotary_dim: int | None = None

    def __post_init__(self):
        rope_cos_sin(np.zeros(0, np.int64), self.inv_freq, self.attention_scaling)  # validates both
        if self.layout not in ("half", "interleaved"):
            raise ValueError(f"layout: expected 'half' or 'interleaved', got {self.layout!r}")
        freqs = np.array(self.inv_freq, dtype=np.float32)  # our own copy, which nobody may write
        freqs.flags.writeable = False
        object.__setattr__(self, "inv_freq", freqs)
        expected = 2 * len(freqs)
        if self.rotary_dim is None:
            object.__setattr__(self, "rotary_dim", expected)
        elif isinstance(self.rotary_dim, bool) or not isinstance(self.rotary_dim, (int, np.integer)):
            raise TypeError(f"rotary_dim: expected an int, got {type(self.rotary_dim).__name__}")
        elif self.rotary_dim != expected:
            raise ValueError(f"rotary_dim: expected 2 * len(inv_freq) = {expected}, got {self.rotary_dim}")
        else:
            object.__setattr__(self, "rotary_dim", int(self.rotary_dim))

    def cos_sin(self, positions):
        return rope_cos_sin(positions, self.inv_freq, self.attention_scaling)

    def apply(self, x, positions):
        return apply_rope(x, *self.cos_sin(positions), layout=self.layout, rotary_dim=self.rotary_dim)
