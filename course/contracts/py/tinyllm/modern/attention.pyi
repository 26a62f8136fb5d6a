"""L7.5 Grouped-query causal self-attention, with RoPE from a RopeSpec.

S new tokens x [B, S, d], after P tokens whose keys and values an earlier
call returned (the cache; P = 0 without one).  H query heads share KV
key/value heads; each head has D = head_dim entries:

    q = rope(x Wq^T as H heads)  [B, H, S, D]          at the new tokens' positions
    k = rope(x Wk^T as KV heads) [B, KV, S, D]         the same positions
    v = x Wv^T as KV heads       [B, KV, S, D]         values are never rotated
    K = concat(past k, k), V = concat(past v, v)       [B, KV, P + S, D]
    scores = q K_g^T * D^-0.5   [B, H, S, P + S]       query head h reads key/value head
                                                       g = h // (H / KV): heads 0..H/KV-1
                                                       share head 0, and so on
    query i may see keys 0 .. P + i; every other score is -inf
    weights = softmax over the keys                    each row sums to 1
    out = (weights V_g, heads side by side) Wo^T       [B, S, d]

Everything in x's dtype (float32 for a model, float64 for a gradient check).
Build it from L0.3's linear and softmax, L0.2's reshape, transpose and
concat, L0.1's @ and indexing, and L7.3's RopeSpec.apply; then autograd
gives the backward.  Chapter: course/chapters/L7.5-attention.md.
"""

from __future__ import annotations

import numpy as np

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec


def attention(x: Tensor, wq: Tensor, wk: Tensor, wv: Tensor, wo: Tensor, rope: RopeSpec, positions,
              n_heads: int, n_kv_heads: int, past=None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Causal self-attention of x's S tokens, after the P tokens of `past`.

    x: Tensor [B, S, d], float32 or float64.
    wq: Tensor [n_heads * D, d]; wk, wv: Tensor [n_kv_heads * D, d];
        wo: Tensor [d, n_heads * D].  nn.Linear's [out, in] layout, as in a
        checkpoint; D = wq.shape[0] // n_heads.  Rows h*D .. h*D + D - 1 of
        wq (and of wk, wv for key/value head h) make head h.
    rope: an L7.3 RopeSpec; it turns q and k, in its layout, and rotates
        rope.rotary_dim <= D entries of each head.
    positions: integers [S]: the absolute position of each new token, the
        same for every row of the batch (P, P + 1, ... when decoding; any
        whole numbers RoPE accepts).
    n_heads, n_kv_heads: ints >= 1 (not bools), n_heads a multiple of
        n_kv_heads.  n_kv_heads == n_heads is plain multi-head attention;
        n_kv_heads == 1 is multi-query attention.
    past: None, or (k, v) as an earlier call returned them: two Tensors
        [B, n_kv_heads, P, D]; k already rotated (at its own positions).

    Returns (out, (K, V)):
        out: Tensor [B, S, d] in x's dtype.
        K, V: Tensors [B, n_kv_heads, P + S, D]: past k then the new keys,
            rotated at `positions`; past v then the new values.  Pass them as
            `past` to the next call.
    The mask counts keys, not positions: new token i sees the P cached keys
    and new keys 0 .. i.  Gradients flow to x, to all four weights and to
    past's Tensors.

    Raises:
        TypeError: x, wq, wk, wv or wo is not a Tensor; rope is not a RopeSpec;
            past is neither None nor a pair of Tensors.
        ValueError: n_heads or n_kv_heads is not an int >= 1 (or is a bool);
            n_heads is not a multiple of n_kv_heads; x is not 3-D; a weight's
            shape is not the one above (D = wq.shape[0] // n_heads, which must
            be >= 1); rope.rotary_dim > D; positions is not [S]; past's k or v
            is not [B, n_kv_heads, P, D] (the same P for both).
    """
    ...


def causal_mask(n_new: int, n_past: int, dtype) -> np.ndarray:
    """The additive mask of attention: a numpy array [n_new, n_past + n_new]
    of `dtype`, 0 where new token i may see key j (j <= n_past + i) and -inf
    elsewhere.  Added to the scores before the softmax."""
    ...
