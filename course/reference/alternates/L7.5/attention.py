"""L7.5 attention, a second correct implementation written differently from the
reference (course/reference/python/tinyllm/modern/attention.py).

`ol check` runs a student's tests on it as well as on the reference: a test
that passes only on one implementation's internals rejects a correct one.

The differences: the reference copies each key/value head out to the query
heads that read it (an index map h -> h // G); this one never copies them.
It groups the query heads instead, q [B, KV, G, S, D] against k [B, KV, 1,
T, D], and lets the matrix product broadcast over the G heads of a group.
Its mask comes from comparing key and query indexes (np.where), not from
np.triu.  Same contract, same results to float32 rounding.
"""

from __future__ import annotations

import math

import numpy as np

from tinyllm.autograd import functional as F
from tinyllm.autograd.nn import linear, softmax
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec


def causal_mask(n_new, n_past, dtype):
    key = np.arange(n_past + n_new)[None, :]
    query = np.arange(n_new)[:, None] + n_past
    return np.where(key > query, -np.inf, 0.0).astype(dtype)


def attention(x, wq, wk, wv, wo, rope, positions, n_heads, n_kv_heads, past=None):
    if not all(isinstance(t, Tensor) for t in (x, wq, wk, wv, wo)):
        raise TypeError("attention: x, wq, wk, wv and wo must all be Tensors")
    if not isinstance(rope, RopeSpec):
        raise TypeError("attention: rope must be a RopeSpec")
    for count in (n_heads, n_kv_heads):
        if type(count) is bool or not isinstance(count, (int, np.integer)) or count <= 0:
            raise ValueError("attention: head counts must be positive ints")
    group, leftover = divmod(int(n_heads), int(n_kv_heads))
    if leftover:
        raise ValueError("attention: n_heads must be a multiple of n_kv_heads")
    if len(x.shape) != 3:
        raise ValueError("attention: x must be 3-D")
    b, s, d = x.shape
    dim = wq.shape[0] // n_heads
    if dim < 1 or wq.shape != (n_heads * dim, d) or wo.shape != (d, n_heads * dim) \
            or wk.shape != (n_kv_heads * dim, d) or wv.shape != (n_kv_heads * dim, d):
        raise ValueError("attention: weight shapes do not match the heads")
    if rope.rotary_dim > dim:
        raise ValueError("attention: the RopeSpec is wider than a head")
    positions = np.asarray(positions)
    if positions.shape != (s,):
        raise ValueError("attention: one position per new token")
    if past is not None:
        if not isinstance(past, (tuple, list)) or len(past) != 2 or not all(isinstance(t, Tensor) for t in past):
            raise TypeError("attention: past must be a pair of Tensors")
        pk, pv = past
        if len(pk.shape) != 4 or pk.shape[:2] != (b, n_kv_heads) or pk.shape[3] != dim or pv.shape != pk.shape:
            raise ValueError("attention: past k and v must be [B, KV, P, D] alike")

    def heads(t, n):  # [B, S, n * D] -> [B, n, S, D]
        return F.transpose(F.reshape(t, (b, s, n, dim)), (0, 2, 1, 3))

    k = rope.apply(heads(linear(x, wk), n_kv_heads), positions)
    v = heads(linear(x, wv), n_kv_heads)
    if past is not None:
        k = F.concat([past[0], k], axis=2)
        v = F.concat([past[1], v], axis=2)
    total = k.shape[2]
    q = rope.apply(heads(linear(x, wq), n_heads), positions)             # [B, H, S, D], h = kv * G + g
    q = F.reshape(q, (b, n_kv_heads, group, s, dim))                     # [B, KV, G, S, D]
    kt = F.reshape(F.transpose(k, (0, 1, 3, 2)), (b, n_kv_heads, 1, dim, total))
    scores = (q @ kt) * (1.0 / math.sqrt(dim))                           # [B, KV, G, S, T]
    scores = scores + causal_mask(s, total - s, x.dtype)
    mixed = softmax(scores, axis=-1) @ F.reshape(v, (b, n_kv_heads, 1, total, dim))  # [B, KV, G, S, D]
    joined = F.reshape(F.transpose(mixed, (0, 3, 1, 2, 4)), (b, s, n_heads * dim))
    return linear(joined, wo), (k, v)
