"""Chaff a04: query head h reads key/value head h % KV, as if the key/value
heads were dealt out in turn.

A wrapper around any correct L7.5 implementation, `correct`: attention
runs the correct attention with its query heads reordered, so that the head
in the slot that reads key/value head g (slots g * G .. g * G + G - 1, G =
H / KV) is a head h with h % KV = g, then puts the heads back in order before
wo.  The correct attention makes the turned queries (with wq in the place of
wk, the keys it returns are the turned queries) and attends over them as
given (`_attend`).  Everything else is the correct implementation's (the
pitfall in course/mutants/L7.5/pitfalls.toml).
"""

import numpy as np

from tinyllm.autograd import functional as F
from tinyllm.autograd.nn import linear
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec

import correct


def causal_mask(n_new, n_past, dtype):
    return correct.causal_mask(n_new, n_past, dtype)


def attention(x, wq, wk, wv, wo, rope, positions, n_heads, n_kv_heads, past=None):
    # the correct attention raises what it raises; its K, V [B, KV, P + S, D] are this one's
    _, (keys, values) = correct.attention(x, wq, wk, wv, wo, rope, positions, n_heads, n_kv_heads, past)
    queries = _turned(x, wq, wq, wo, rope, positions, n_heads, n_heads)          # [B, H, S, D]
    batch, _, seq, head_dim = queries.shape
    group = n_heads // n_kv_heads
    head = np.arange(n_heads)
    slot = head % n_kv_heads * group + head // n_kv_heads   # [H]: slot s reads key/value head s // G
    cached = keys.shape[2] - seq                                                 # P
    heads, _ = _attend(queries[:, np.argsort(slot)], keys[:, :, cached:], values[:, :, cached:], past, rope,
                       positions)                                                # [B, S, H * D], by slot
    by_slot = F.reshape(heads, (batch, seq, n_heads, head_dim))
    heads = F.reshape(by_slot[:, :, slot], (batch, seq, n_heads * head_dim))    # back in head order
    return linear(heads, wo), (keys, values)


def _turned(x, wq, w, wo, rope, positions, n_heads, n_kv_heads):
    """x w^T as n_kv_heads heads turned by rope at positions, [B, KV, S, D]:
    the keys the correct attention returns when w is its wk (and wv)."""
    return correct.attention(x, wq, w, w, wo, rope, positions, n_heads, n_kv_heads)[1][0]


def _attend(queries, keys, values, past, rope, positions):
    """(heads side by side before wo [B, S, H * D], (K, V)): the correct
    attention of queries [B, H, S, D] over past and the new keys and values
    [B, KV, S, D], all taken as they are, already turned.

    The correct attention gets them as each token's features [q | k | v],
    with weights that pick each one out (one entry 1, every other 0), a
    RopeSpec that turns by angle 0 (cos 1, sin 0) and an output projection
    that picks the heads out again: for finite numbers every step is exact,
    so the heads are what the correct attention computes from these pieces."""
    batch, n_heads, seq, head_dim = queries.shape
    n_kv_heads = keys.shape[1]
    features = F.concat([_side_by_side(queries), _side_by_side(keys), _side_by_side(values)], axis=-1)
    q_end, k_end = n_heads * head_dim, (n_heads + n_kv_heads) * head_dim
    pick = np.eye(features.shape[-1], dtype=features.dtype)                   # [width, width]
    out, cache = correct.attention(features, Tensor(pick[:q_end]), Tensor(pick[q_end:k_end]), Tensor(pick[k_end:]),
                                   Tensor(pick[:, :q_end]), _still(rope), positions, n_heads, n_kv_heads, past)
    return out[..., :q_end], cache


def _still(rope):
    """A RopeSpec of rope's layout and width that turns by angle 0: cos 1, sin 0."""
    return RopeSpec(np.zeros_like(rope.inv_freq), 1.0, rope.layout, rope.rotary_dim)


def _side_by_side(heads):
    """[B, n, S, D] -> [B, S, n * D]."""
    batch, n, seq, head_dim = heads.shape
    return F.reshape(F.transpose(heads, (0, 2, 1, 3)), (batch, seq, n * head_dim))
