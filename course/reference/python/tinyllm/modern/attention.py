"""L7.5 Grouped-query causal self-attention, with RoPE from a RopeSpec.

S new tokens x [B, S, d] after P tokens whose keys and values are cached:

    q = RoPE(x Wq^T)  [B, H, S, D]      k = RoPE(x Wk^T), v = x Wv^T  [B, KV, S, D]
    K = [past k, k],  V = [past v, v]   [B, KV, P + S, D]
    scores = q K^T / sqrt(D)            query head h reads key/value head h // (H / KV)
    query i sees keys 0 .. P + i        the rest get -inf before the softmax
    out = softmax(scores) V, heads side by side, times Wo^T    [B, S, d]

q and k turn at the tokens' absolute positions; a key is cached already
rotated, so it is never turned again.  Chapter: course/chapters/L7.5-attention.md.
"""

from __future__ import annotations

import numbers

import numpy as np

from tinyllm.autograd import functional as F
from tinyllm.autograd.nn import linear, softmax
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec


def attention(x: Tensor, wq: Tensor, wk: Tensor, wv: Tensor, wo: Tensor, rope: RopeSpec, positions,
              n_heads: int, n_kv_heads: int, past=None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Causal self-attention of x's S tokens (after the P of `past`), with n_heads
    query heads sharing n_kv_heads key/value heads.  Returns (out [B, S, d],
    (K, V) [B, KV, P + S, D]); pass (K, V) as `past` to the next call."""
    batch, seq, head_dim = _check(x, wq, wk, wv, wo, rope, positions, n_heads, n_kv_heads, past)
    q = rope.apply(_split_heads(linear(x, wq), n_heads), positions)     # [B, H, S, D]
    k = rope.apply(_split_heads(linear(x, wk), n_kv_heads), positions)  # [B, KV, S, D]
    v = _split_heads(linear(x, wv), n_kv_heads)                         # [B, KV, S, D]
    if past is not None:
        k, v = F.concat([past[0], k], axis=2), F.concat([past[1], v], axis=2)  # [B, KV, P + S, D]
    n_past = k.shape[2] - seq

    kv_head = np.arange(n_heads) // (n_heads // n_kv_heads)  # [H]: the key/value head each query head reads
    keys, values = k[:, kv_head], v[:, kv_head]              # [B, H, P + S, D]
    scores = q @ F.transpose(keys, (0, 1, 3, 2)) * head_dim**-0.5 + causal_mask(seq, n_past, x.dtype)
    weights = softmax(scores, axis=-1)                       # [B, H, S, P + S]: each row sums to 1
    heads = F.transpose(weights @ values, (0, 2, 1, 3))      # [B, S, H, D]
    return linear(F.reshape(heads, (batch, seq, n_heads * head_dim)), wo), (k, v)


def causal_mask(n_new: int, n_past: int, dtype) -> np.ndarray:
    """[n_new, n_past + n_new]: 0 where query i may see key j (j <= n_past + i), -inf elsewhere."""
    return np.triu(np.full((n_new, n_past + n_new), -np.inf, dtype=dtype), k=n_past + 1)


def _split_heads(t: Tensor, n: int) -> Tensor:
    """[B, S, n * D] -> [B, n, S, D]."""
    batch, seq, width = t.shape
    return F.transpose(F.reshape(t, (batch, seq, n, width // n)), (0, 2, 1, 3))


# ---- validation: each check names the argument and says what was expected ----


def _check(x, wq, wk, wv, wo, rope, positions, n_heads, n_kv_heads, past) -> tuple[int, int, int]:
    """(B, S, D) once every argument is as the contract says."""
    for value in (x, wq, wk, wv, wo):
        if not isinstance(value, Tensor):
            raise TypeError("attention: x, wq, wk, wv and wo must be Tensors, got "
                            + ", ".join(type(t).__name__ for t in (x, wq, wk, wv, wo)))
    if not isinstance(rope, RopeSpec):
        raise TypeError(f"attention: rope must be a RopeSpec (L7.3), got {type(rope).__name__}")
    for value in (n_heads, n_kv_heads):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"attention: n_heads and n_kv_heads must be ints >= 1, got {n_heads!r} and {n_kv_heads!r}")
    if n_heads % n_kv_heads:
        raise ValueError(f"attention: n_heads={n_heads} must be a multiple of n_kv_heads={n_kv_heads}: "
                         "each key/value head serves the same number of query heads")
    if x.ndim != 3:
        raise ValueError(f"attention: x must be [B, S, d], got shape {x.shape}")
    batch, seq, d = x.shape
    head_dim = wq.shape[0] // n_heads
    expected = {"wq": (n_heads * head_dim, d), "wk": (n_kv_heads * head_dim, d),
                "wv": (n_kv_heads * head_dim, d), "wo": (d, n_heads * head_dim)}
    for name, w in (("wq", wq), ("wk", wk), ("wv", wv), ("wo", wo)):
        if w.shape != expected[name]:
            raise ValueError(f"attention: {name} must be {expected[name]} ([out, in], head_dim {head_dim}), "
                             f"got {w.shape}")
    if rope.rotary_dim > head_dim:  # also refuses head_dim 0: a spec rotates at least one pair
        raise ValueError(f"attention: rope rotates {rope.rotary_dim} entries, more than head_dim={head_dim}")
    if np.shape(positions) != (seq,):
        raise ValueError(f"attention: positions must be [S] = [{seq}], one per new token, "
                         f"got shape {np.shape(positions)}")
    if past is not None:
        if not (isinstance(past, (tuple, list)) and len(past) == 2 and all(isinstance(t, Tensor) for t in past)):
            raise TypeError("attention: past must be None or (k, v), two Tensors, as an earlier call returned")
        k, v = past
        if (k.shape[:2], k.shape[3:], v.shape) != ((batch, n_kv_heads), (head_dim,), k.shape):  # [B, KV, P, D] alike
            raise ValueError(f"attention: past k and v must both be [B, KV, P, D] = [{batch}, {n_kv_heads}, P, "
                             f"{head_dim}], got {k.shape} and {v.shape}")
    return batch, seq, head_dim
