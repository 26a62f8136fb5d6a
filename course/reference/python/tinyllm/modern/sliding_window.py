"""L7.7 Sliding-window attention: local layers that see only the last W tokens.

Attention over heads that are already projected (q [B, H, S, D], k and v
[B, KV, S, D]), after the P tokens whose keys and values are cached:

    q, k turned by RoPE at their positions p0 .. p0 + S - 1   (never v)
    K = [past k, k], V = [past v, v]                         keys at positions p0 - P .. p0 + S - 1
    query at p sees the key at p' iff  p' <= p  and  p - p' < W   (W = window; None: no window)
    out = softmax(q K^T * scale + mask) V, heads side by side     [B, S, H * D]
    the cache handed on: the last W - 1 keys and values, all of them without a window

The window is a distance in positions, and a key's slot in a trimmed cache is
not its position.  RoPE needs nothing new: each key was turned at its own
position when it was made.  layer_settings gives each layer type (Gemma 3's
sliding_attention and full_attention) its RopeSpec and its window.  Chapter:
course/chapters/L7.7-sliding-window.md.
"""

from __future__ import annotations

import numbers

import numpy as np

from tinyllm.autograd import functional as F
from tinyllm.autograd.nn import softmax
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec

LAYER_TYPES = ("sliding_attention", "full_attention")


def sliding_attention(q: Tensor, k: Tensor, v: Tensor, rope: RopeSpec, positions, window=None, past=None,
                      scale=None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Causal attention of S new tokens over the P cached ones and themselves,
    each query seeing the keys less than `window` positions behind it.
    Returns (out [B, S, H * D], (K, V)): the cache to pass as `past` next."""
    seq, head_dim, n_past = _check(q, k, v, rope, positions, window, past, scale)
    first = int(positions[0])
    q, k = rope.apply(q, positions), rope.apply(k, positions)             # each turned at its own position
    if past is not None:
        k, v = F.concat([past[0], k], axis=2), F.concat([past[1], v], axis=2)  # [B, KV, P + S, D]
    key_positions = np.arange(first - n_past, first + seq)               # [P + S]: where each key was made
    n_heads, n_kv_heads = q.shape[1], k.shape[1]
    kv_head = np.arange(n_heads) // (n_heads // n_kv_heads)               # [H]: query head h reads h // G
    scale = head_dim**-0.5 if scale is None else scale
    scores = q @ F.transpose(k[:, kv_head], (0, 1, 3, 2)) * scale          # [B, H, S, P + S]
    scores = scores + window_mask(np.arange(first, first + seq), key_positions, window, q.dtype)
    heads = F.transpose(softmax(scores) @ v[:, kv_head], (0, 2, 1, 3))  # [B, S, H, D]; softmax over the keys
    out = F.reshape(heads, (q.shape[0], seq, n_heads * head_dim))
    if window is not None:  # what the next token can still see: the last window - 1 keys
        keep = max(k.shape[2] - (window - 1), 0)
        k, v = k[:, :, keep:], v[:, :, keep:]
    return out, (k, v)


def window_mask(query_positions, key_positions, window, dtype) -> np.ndarray:
    """[S, T] additive mask: 0 where the query at p may see the key at p'
    (p' <= p, and p - p' < window unless window is None), -inf elsewhere."""
    distance = np.asarray(query_positions)[:, None] - np.asarray(key_positions)[None, :]  # [S, T]
    visible = distance >= 0
    if window is not None:
        visible &= distance < window
    return np.where(visible, 0.0, -np.inf).astype(dtype)


def layer_settings(layer_type: str, rope_specs, sliding_window: int) -> tuple[RopeSpec, int | None]:
    """(RopeSpec, window) of one layer: a sliding_attention layer gets its own
    spec and the sliding window, a full_attention layer its own spec and no window."""
    if layer_type not in LAYER_TYPES:
        raise ValueError(f"layer_settings: layer_type must be one of {', '.join(LAYER_TYPES)}, got {layer_type!r}")
    if not isinstance(rope_specs, dict) or not all(isinstance(rope_specs.get(t), RopeSpec) for t in LAYER_TYPES):
        raise ValueError("layer_settings: rope_specs must be a dict holding a RopeSpec for each of "
                         f"{', '.join(LAYER_TYPES)} (L7.4's rope_spec(config, layer_type=...))")
    if not _is_count(sliding_window):
        raise ValueError(f"layer_settings: sliding_window must be an int >= 1, got {sliding_window!r}")
    window = sliding_window if layer_type == "sliding_attention" else None
    return rope_specs[layer_type], window


# ---- validation: each check names the argument and says what was expected ----


def _is_count(value) -> bool:
    """An int >= 1 (numpy integers too), not a bool: a window."""
    return not isinstance(value, bool) and isinstance(value, numbers.Integral) and value >= 1


def _check(q, k, v, rope, positions, window, past, scale) -> tuple[int, int, int]:
    """(S, D, P) once every argument is as the contract says."""
    if not all(isinstance(value, Tensor) for value in (q, k, v)):
        raise TypeError("sliding_attention: q, k and v must be Tensors, got "
                        + ", ".join(type(value).__name__ for value in (q, k, v)))
    if not isinstance(rope, RopeSpec):
        raise TypeError(f"sliding_attention: rope must be a RopeSpec (L7.3), got {type(rope).__name__}")
    if q.ndim != 4:
        raise ValueError(f"sliding_attention: q must be [B, H, S, D], got shape {q.shape}")
    batch, n_heads, seq, head_dim = q.shape
    if (k.shape[:1], k.shape[2:], v.shape) != ((batch,), (seq, head_dim), k.shape):  # k, v: [B, KV, S, D] alike
        raise ValueError(f"sliding_attention: k and v must both be [B, KV, S, D] = [{batch}, KV, {seq}, {head_dim}], "
                         f"got {k.shape} and {v.shape}")
    if k.shape[1] < 1 or n_heads % k.shape[1]:
        raise ValueError(f"sliding_attention: the {n_heads} query heads must be a multiple of the "
                         f"{k.shape[1]} key/value heads")
    if rope.rotary_dim > head_dim:
        raise ValueError(f"sliding_attention: rope rotates {rope.rotary_dim} entries, more than D = {head_dim}")
    if np.shape(positions) != (seq,) or seq < 1 or not np.all(np.diff(positions) == 1):
        raise ValueError(f"sliding_attention: positions must be S = {seq} consecutive ints (p, p + 1, ...), "
                         f"got {positions!r}")
    if window is not None and not _is_count(window):
        raise ValueError(f"sliding_attention: window must be None or an int >= 1, got {window!r}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not scale > 0):
        raise ValueError(f"sliding_attention: scale must be a number > 0 or None (D**-0.5), got {scale!r}")
    if past is None:
        return seq, head_dim, 0
    if not (isinstance(past, (tuple, list)) and len(past) == 2 and all(isinstance(t, Tensor) for t in past)):
        raise TypeError("sliding_attention: past must be None or (k, v), two Tensors, as an earlier call returned")
    past_k, past_v = past
    if (past_k.shape[:2], past_k.shape[3:], past_v.shape) != ((batch, k.shape[1]), (head_dim,), past_k.shape):
        raise ValueError(f"sliding_attention: past k and v must both be [B, KV, P, D] = [{batch}, {k.shape[1]}, P, "
                         f"{head_dim}], got {past_k.shape} and {past_v.shape}")
    return seq, head_dim, past_k.shape[2]
