"""L7.3 Rotary position embeddings (RoPE), as Hugging Face computes them.

Pair i of a head vector at position p is rotated by the angle p * inv_freq[i]:

    (a, b) -> (a cos - b sin, a sin + b cos)

Which entries form pair i is the layout:
    half         (a, b) = (x[i], x[i + r/2])     HF Llama, Qwen, GPT-NeoX
    interleaved  (a, b) = (x[2i], x[2i + 1])     RoFormer, Meta's Llama code
Only the first r = rotary_dim entries rotate; x[..., r:] passes through.

apply_rope is built from slicing, products with constant tables, concat and
stack, so its backward (the inverse rotation) comes from autograd.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from tinyllm.autograd import functional as F
from tinyllm.autograd.tensor import Tensor

LAYOUTS = ("half", "interleaved")

# The limits float32 sets.  HF computes the angle as one float32 product, so:
POSITION_LIMIT = 2**24  # positions are below it: float32 holds every whole number up to 2**24, not 2**24 + 1
INV_FREQ_LIMIT = 2.0**104  # |inv_freq| at most: (2**24 - 1) * 2**104 = 2**128 - 2**104, float32's largest number
FLOAT32_MAX = float(np.finfo(np.float32).max)  # 2**128 - 2**104, about 3.4e38
FLOAT32_TINY = 2.0**-126  # float32's smallest normal number, about 1.2e-38: below it precision drops


def rope_cos_sin(positions, inv_freq, attention_scaling=1.0) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of the angles positions[..., None] * inv_freq, times
    attention_scaling: two float32 arrays of shape positions.shape + (r/2,)."""
    positions = _positions_as_float32(positions)
    inv_freq = _inv_freq_as_float32(inv_freq)
    scale = _scaling_as_float32(attention_scaling)
    angles = positions[..., None] * inv_freq  # [..., r/2]: one float32 product, as HF computes it
    return np.cos(angles) * scale, np.sin(angles) * scale


def apply_rope(x: Tensor, cos, sin, layout: str = "half", rotary_dim: int | None = None) -> Tensor:
    """Rotate the pairs of x[..., :rotary_dim] by the angles whose cos and sin
    are given; x[..., rotary_dim:] passes through.  Same shape and dtype as x."""
    if not isinstance(x, Tensor):
        raise TypeError(f"apply_rope: x must be a Tensor, got {type(x).__name__}; wrap arrays as Tensor(array)")
    if x.ndim < 1:
        raise ValueError("apply_rope: x must have a last axis of head entries, got a 0-d Tensor")
    _check_layout(layout)
    head_dim = x.shape[-1]
    r = _rotary_dim(rotary_dim, head_dim)
    cos, sin = _tables_for(x, cos, sin, r)

    rot, rest = x[..., :r], x[..., r:]
    if layout == "half":
        a, b = rot[..., : r // 2], rot[..., r // 2 :]
    else:
        a, b = rot[..., 0::2], rot[..., 1::2]
    a_out = a * cos - b * sin  # [..., r/2]
    b_out = a * sin + b * cos  # [..., r/2]
    if layout == "half":
        out = F.concat([a_out, b_out], axis=-1)  # a_0..a_{r/2-1}, b_0..b_{r/2-1}
    else:
        out = F.reshape(F.stack([a_out, b_out], axis=-1), rot.shape)  # a_0, b_0, a_1, b_1, ...
    return out if r == head_dim else F.concat([out, rest], axis=-1)


@dataclass(frozen=True, eq=False)
class RopeSpec:
    """How one attention layer rotates its queries and keys.

    inv_freq: [r/2] frequencies, kept as a read-only float32 copy (changing
    the caller's array later does not change the spec); attention_scaling
    multiplies both tables; layout: "half" or "interleaved"; rotary_dim: r
    (None means 2 * len(inv_freq)).  Bad fields raise at construction.
    """

    inv_freq: np.ndarray
    attention_scaling: float = 1.0
    layout: str = "half"
    rotary_dim: int | None = None

    def __post_init__(self) -> None:
        inv_freq = _inv_freq_as_float32(self.inv_freq)  # a new array: the caller's stays theirs
        inv_freq.setflags(write=False)  # frozen all the way down
        _scaling_as_float32(self.attention_scaling)
        _check_layout(self.layout)
        rotary_dim = 2 * inv_freq.size if self.rotary_dim is None else self.rotary_dim
        if not _is_int(rotary_dim):
            raise TypeError(
                f"RopeSpec: rotary_dim must be an int or None, got {rotary_dim!r} ({type(rotary_dim).__name__})"
            )
        if rotary_dim != 2 * inv_freq.size:
            raise ValueError(
                f"RopeSpec: rotary_dim={rotary_dim} does not match inv_freq, which has {inv_freq.size} "
                f"frequencies (one per pair); rotary_dim must be 2 * len(inv_freq) = {2 * inv_freq.size}"
            )
        object.__setattr__(self, "inv_freq", inv_freq)
        object.__setattr__(self, "rotary_dim", int(rotary_dim))

    def cos_sin(self, positions) -> tuple[np.ndarray, np.ndarray]:
        """The tables for these positions: float32, positions.shape + (r/2,)."""
        return rope_cos_sin(positions, self.inv_freq, self.attention_scaling)

    def apply(self, x: Tensor, positions) -> Tensor:
        """Rotate x ([..., S, head_dim]) at positions ([S], or any shape whose
        tables broadcast against x[..., :r/2])."""
        cos, sin = self.cos_sin(positions)
        return apply_rope(x, cos, sin, self.layout, self.rotary_dim)


# ---- validation: each helper names the argument and says what was expected ----


def _is_int(value) -> bool:
    """An integer, but not a bool (True is an int to Python, never a size here)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _positions_as_float32(positions) -> np.ndarray:
    positions = np.asarray(positions)
    if positions.dtype == object and all(type(p) is int for p in positions.flat):
        # numpy stores Python ints beyond int64 and uint64 as objects: positions far out of range
        raise ValueError(
            f"rope_cos_sin: positions must be whole numbers from 0 to 2**24 - 1 = {POSITION_LIMIT - 1} in an "
            f"integer or float array, got Python ints that numpy could only store as objects, the largest "
            f"{max(positions.flat, key=abs)}"
        )
    if positions.dtype.kind not in "iuf":
        raise TypeError(
            f"rope_cos_sin: positions must be integers (token indices), got dtype {positions.dtype}; "
            "pass e.g. np.arange(seq_len)"
        )
    whole = np.isfinite(positions) & (positions == np.trunc(positions))
    if not np.all(whole):
        raise ValueError(
            "rope_cos_sin: positions must be whole numbers (0, 1, 2, ...); got fractional or "
            f"non-finite values such as {positions[~whole][:3]}"
        )
    if np.any(positions < 0):
        raise ValueError(
            f"rope_cos_sin: positions must be >= 0, got minimum {positions.min()}; "
            "a token's position counts from 0 at the start of the sequence"
        )
    if np.any(positions >= POSITION_LIMIT):
        raise ValueError(
            f"rope_cos_sin: positions must be below 2**24 = {POSITION_LIMIT}, got {positions.max()}. The angle "
            "is computed in float32, as HF computes it, and float32 holds every whole number only up to 2**24: "
            "2**24 + 1 rounds to 2**24, so from there on neighbouring positions would share one angle. "
            "2**24 tokens is beyond any model's context; a larger position is a bug upstream"
        )
    return positions.astype(np.float32)


def _inv_freq_as_float32(inv_freq) -> np.ndarray:
    """A new float32 array of the frequencies (never the caller's array)."""
    inv_freq = np.asarray(inv_freq)
    if inv_freq.dtype.kind not in "iuf":
        raise TypeError(
            f"inv_freq must be an array of numbers (an integer or float dtype), got dtype {inv_freq.dtype}"
            + ("; numpy makes objects of None, of mixed types and of ints beyond int64" if inv_freq.dtype == object else "")
        )
    if inv_freq.ndim != 1 or inv_freq.size == 0:
        raise ValueError(
            f"inv_freq must be a non-empty 1-D array of r/2 frequencies, got shape {inv_freq.shape}"
        )
    if not np.all(np.abs(inv_freq) <= INV_FREQ_LIMIT):  # also false for nan
        raise ValueError(
            "inv_freq must be finite numbers of size at most 2**104 (about 2.0e31), got "
            f"{inv_freq[~(np.abs(inv_freq) <= INV_FREQ_LIMIT)][:3]}: an angle is the float32 product "
            "position * inv_freq with positions below 2**24, and (2**24 - 1) * 2**104 is float32's largest "
            "number, so a larger frequency could give an infinite angle (and nan tables). A model's "
            "frequencies are at most 1"
        )
    return inv_freq.astype(np.float32)


def _scaling_as_float32(attention_scaling) -> np.float32:
    if isinstance(attention_scaling, bool) or not isinstance(attention_scaling, numbers.Real):
        raise TypeError(
            f"attention_scaling must be a real number such as 1.0, got {attention_scaling!r} "
            f"({type(attention_scaling).__name__})"
        )
    if not FLOAT32_TINY <= attention_scaling <= FLOAT32_MAX:  # also false for nan
        raise ValueError(
            f"attention_scaling must be a number from 2**-126 (about 1.2e-38) to 3.4e38, float32's normal range, "
            f"got {attention_scaling}: both tables are multiplied by float32(attention_scaling), which outside "
            "that range is 0, inf or short of precision. It is 1.0 for plain RoPE and about 1.1 for YaRN"
        )
    return np.float32(attention_scaling)


def _check_layout(layout) -> None:
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ValueError(
            f"layout must be 'half' (pairs i, i + r/2: HF) or 'interleaved' (pairs 2i, 2i+1: Meta), "
            f"got {layout!r}"
        )


def _rotary_dim(rotary_dim, head_dim: int) -> int:
    r = head_dim if rotary_dim is None else rotary_dim
    if not _is_int(r):
        raise TypeError(f"apply_rope: rotary_dim must be an int or None, got {r!r} ({type(r).__name__})")
    if r <= 0 or r % 2 or r > head_dim:
        raise ValueError(
            f"apply_rope: rotary_dim must be even and in 2..head_dim={head_dim}, got {r}"
            + (" (x's last axis is odd: pass an even rotary_dim)" if rotary_dim is None else "")
        )
    return r


def _tables_for(x: Tensor, cos, sin, r: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin as arrays of x's dtype that broadcast to x[..., :r/2] without
    changing its shape."""
    cos, sin = np.asarray(cos), np.asarray(sin)
    if cos.shape != sin.shape:
        raise ValueError(f"apply_rope: cos {cos.shape} and sin {sin.shape} must have the same shape")
    if cos.dtype.kind != "f" or sin.dtype.kind != "f":
        raise TypeError(f"apply_rope: cos and sin must be float arrays, got {cos.dtype} and {sin.dtype}")
    target = x.shape[:-1] + (r // 2,)
    if cos.shape[-1:] != (r // 2,):
        raise ValueError(
            f"apply_rope: cos and sin must have r/2 = {r // 2} entries in their last axis (one per pair), "
            f"got shape {cos.shape}; build them with rope_cos_sin(positions, inv_freq) where len(inv_freq) = r/2"
        )
    try:
        broadcast = np.broadcast_shapes(cos.shape, target)
    except ValueError:
        raise ValueError(
            f"apply_rope: cos and sin of shape {cos.shape} do not broadcast to x[..., :r/2] of shape {target}; "
            "for x [B, H, S, D] use tables [S, r/2], or per-row tables [B, S, r/2] as cos[:, None]"
        ) from None
    if broadcast != target:
        raise ValueError(
            f"apply_rope: cos and sin of shape {cos.shape} would broadcast x[..., :r/2] of shape {target} up to "
            f"{broadcast}; give tables with at most x's leading axes (size 1 or equal to x's)"
        )
    largest = np.finfo(x.dtype).max  # the tables are cast to x's dtype
    if not (np.all(np.abs(cos) <= largest) and np.all(np.abs(sin) <= largest)):  # also false for nan
        raise ValueError(
            f"apply_rope: cos and sin must be finite numbers in x's dtype {x.dtype}, but "
            f"{'cos' if not np.all(np.abs(cos) <= largest) else 'sin'} holds nan, inf or a number beyond "
            f"{x.dtype}'s largest ({largest:.4g}); build the tables with rope_cos_sin"
        )
    return cos.astype(x.dtype), sin.astype(x.dtype)
