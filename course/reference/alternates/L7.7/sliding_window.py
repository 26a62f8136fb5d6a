"""L7.7 sliding-window attention, a second correct implementation written
differently from the reference (course/reference/python/tinyllm/modern/sliding_window.py).

`ol check` runs a student's tests on it as well as on the reference: a test
that passes only on one implementation's internals rejects a correct one.

The differences: the reference copies each key/value head out to the query
heads that read it; this one groups the query heads, q [B, KV, G, S, D]
against k [B, KV, 1, T, D], and lets the matrix product broadcast.  Its mask
compares the oldest visible position of each query with each key's, and it
trims the cache by counting from the front.  Same contract, same results to
float32 rounding.
"""

from __future__ import annotations

import math

import numpy as np

from tinyllm.autograd import functional as F
from tinyllm.autograd.nn import softmax
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec

LAYER_TYPES = ("sliding_attention", "full_attention")


def _whole(value) -> bool:
    return type(value) is not bool and isinstance(value, (int, np.integer))


def window_mask(query_positions, key_positions, window, dtype):
    query = np.asarray(query_positions).reshape(-1, 1)
    key = np.asarray(key_positions).reshape(1, -1)
    oldest = query - (window - 1) if window is not None else np.full_like(query, np.iinfo(np.int64).min)
    return np.where((key <= query) & (key >= oldest), 0.0, -np.inf).astype(dtype)


def layer_settings(layer_type, rope_specs, sliding_window):
    if layer_type == "sliding_attention":
        local = True
    elif layer_type == "full_attention":
        local = False
    else:
        raise ValueError("layer_settings: unknown layer type")
    if type(rope_specs) is not dict and not isinstance(rope_specs, dict):
        raise ValueError("layer_settings: rope_specs must be a dict")
    for name in LAYER_TYPES:
        if not isinstance(rope_specs.get(name), RopeSpec):
            raise ValueError("layer_settings: a RopeSpec is needed for each layer type")
    if not _whole(sliding_window) or sliding_window <= 0:
        raise ValueError("layer_settings: sliding_window must be a positive int")
    return (rope_specs["sliding_attention"], int(sliding_window)) if local else (rope_specs["full_attention"], None)


def sliding_attention(q, k, v, rope, positions, window=None, past=None, scale=None):
    if not all(isinstance(t, Tensor) for t in (q, k, v)):
        raise TypeError("sliding_attention: q, k and v must be Tensors")
    if not isinstance(rope, RopeSpec):
        raise TypeError("sliding_attention: rope must be a RopeSpec")
    if len(q.shape) != 4 or len(k.shape) != 4:
        raise ValueError("sliding_attention: q and k must be 4-D")
    b, h, s, d = q.shape
    kv = k.shape[1]
    if k.shape[0] != b or k.shape[2] != s or k.shape[3] != d or tuple(v.shape) != tuple(k.shape):
        raise ValueError("sliding_attention: k and v must be [B, KV, S, D] alike")
    if kv == 0 or h % kv != 0:
        raise ValueError("sliding_attention: query heads must be a multiple of key/value heads")
    if rope.rotary_dim > d:
        raise ValueError("sliding_attention: the RopeSpec is wider than a head")
    pos = np.asarray(positions)
    if pos.ndim != 1 or len(pos) != s or s == 0 or any(pos[i + 1] - pos[i] != 1 for i in range(s - 1)):
        raise ValueError("sliding_attention: positions must be consecutive, one per new token")
    if window is not None and (not _whole(window) or window <= 0):
        raise ValueError("sliding_attention: window must be None or a positive int")
    if scale is not None and (type(scale) is bool or not isinstance(scale, (int, float, np.floating, np.integer))
                              or not scale > 0):
        raise ValueError("sliding_attention: scale must be positive")
    cached = 0
    if past is not None:
        if not isinstance(past, (tuple, list)) or len(past) != 2 or not all(isinstance(t, Tensor) for t in past):
            raise TypeError("sliding_attention: past must be a pair of Tensors")
        pk, pv = past
        if len(pk.shape) != 4 or pk.shape[0] != b or pk.shape[1] != kv or pk.shape[3] != d \
                or tuple(pv.shape) != tuple(pk.shape):
            raise ValueError("sliding_attention: past k and v must be [B, KV, P, D] alike")
        cached = pk.shape[2]

    start = int(pos[0])
    keys = rope.apply(k, pos)
    values = v
    if past is not None:
        keys = F.concat([past[0], keys], axis=2)
        values = F.concat([past[1], values], axis=2)
    total = cached + s
    group = h // kv
    factor = 1.0 / math.sqrt(d) if scale is None else float(scale)
    grouped = F.reshape(rope.apply(q, pos), (b, kv, group, s, d))                     # [B, KV, G, S, D]
    kt = F.reshape(F.transpose(keys, (0, 1, 3, 2)), (b, kv, 1, d, total))
    mask = window_mask(start + np.arange(s), start - cached + np.arange(total), window, q.dtype)
    weights = softmax((grouped @ kt) * factor + mask, axis=-1)                        # [B, KV, G, S, T]
    mixed = weights @ F.reshape(values, (b, kv, 1, total, d))                         # [B, KV, G, S, D]
    out = F.reshape(F.transpose(mixed, (0, 3, 1, 2, 4)), (b, s, h * d))
    if window is not None:
        drop = total - min(total, window - 1)
        keys, values = keys[:, :, drop:], values[:, :, drop:]
    return out, (keys, values)
