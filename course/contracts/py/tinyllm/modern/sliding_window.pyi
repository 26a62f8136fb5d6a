"""L7.7 Sliding-window attention: local layers that see only the last W tokens.

Gemma 3 (and Mistral, Gemma 2, ...) interleaves two kinds of attention layer:
full_attention layers, where a token sees every token before it (L7.5), and
sliding_attention layers, where it sees only the `window` most recent ones,
itself included.  With S new tokens at positions p0 .. p0 + S - 1, after P
cached tokens at positions p0 - P .. p0 - 1:

    q [B, H, S, D], k, v [B, KV, S, D]   projected heads (by the caller; Gemma also norms them)
    q, k = RoPE(q), RoPE(k) at positions                     values are never turned
    K = [past k, k], V = [past v, v]      [B, KV, P + S, D]  the key made at position p' ...
    query at p sees key p'  iff  p' <= p  and  p - p' < window          ... is seen from p
    scores = q K_g^T * scale (+ the mask)  [B, H, S, P + S]  query head h reads key/value head
                                                             h // (H / KV), as in L7.5
    out = softmax(scores) V_g, heads side by side           [B, S, H * D]  (the caller applies Wo)

The window is a distance in positions, and it counts the token itself: with
window 4 the token at position 9 sees positions 6, 7, 8 and 9.  The cache a
sliding layer hands on keeps only what a later token can still see: the last
window - 1 keys and values.  RoPE needs nothing new: every key is turned once,
at its own position, when it is made.  Build it from L0.3's softmax, L0.2's
concat, transpose and reshape, L0.1's @ and indexing, and L7.3's
RopeSpec.apply; autograd gives the backward.  Chapter:
course/chapters/L7.7-sliding-window.md.
"""

from __future__ import annotations

import numpy as np

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec

# The layer types of a Gemma 3 config's layer_types, as transformers names them.
LAYER_TYPES = ("sliding_attention", "full_attention")


def sliding_attention(q: Tensor, k: Tensor, v: Tensor, rope: RopeSpec, positions, window=None, past=None,
                      scale=None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Causal attention of S new tokens over the P cached ones and themselves,
    within a sliding window.

    q: Tensor [B, H, S, D]; k, v: Tensors [B, KV, S, D]: the new tokens' query,
        key and value heads, projected but not yet turned; float32 or float64.
        H a multiple of KV.
    rope: an L7.3 RopeSpec; it turns q and k (its layout, its scaling, its
        first rotary_dim <= D entries) at `positions`.
    positions: S consecutive integers p0, p0 + 1, ... (a list or an array):
        the new tokens' absolute positions.  The P keys of `past` were made at
        p0 - P .. p0 - 1.
    window: None (no window: every earlier key is visible, as in L7.5) or an
        int >= 1 (not a bool): the query at p sees the keys made at
        p - window + 1 .. p, and no other.
    past: None, or (k, v) as an earlier call returned them: two Tensors
        [B, KV, P, D], the keys already turned.  A tuple or a list.
    scale: the factor of the scores, a number > 0; None means D**-0.5.
        (Gemma 3 uses query_pre_attn_scalar**-0.5.)

    Returns (out, (K, V)):
        out: Tensor [B, S, H * D] in q's dtype: each query head's weighted
            values, heads side by side (head h at columns h*D .. h*D + D - 1).
        K, V: the cache to pass as `past` next: the past keys then the new
            ones, turned at their positions, and the values alike; with a
            window only the last window - 1 of them (none for window 1),
            without one all P + S.
    Gradients flow to q, k, v and to past's Tensors.

    Raises:
        TypeError: q, k or v is not a Tensor; rope is not a RopeSpec; past is
            neither None nor a pair of Tensors.
        ValueError: q or k is not 4-D; k and v are not both [B, KV, S, D] with
            q's B, S and D; H is not a multiple of KV; rope.rotary_dim > D;
            positions is not S consecutive integers (S >= 1); window is not
            None or an int >= 1 (or is a bool); scale is not None or a number
            > 0 (or is a bool); past's k or v is not [B, KV, P, D] (the same
            for both).
    """
    ...


def window_mask(query_positions, key_positions, window, dtype) -> np.ndarray:
    """The additive mask of sliding_attention: a numpy array [S, T] of
    `dtype`, 0 where the query at query_positions[i] may see the key made at
    key_positions[j] (key position <= query position, and their difference
    < window unless window is None), -inf elsewhere.  Added to the scores
    before the softmax; sliding_attention calls it with its queries' and
    keys' positions."""
    ...


def layer_settings(layer_type: str, rope_specs, sliding_window: int) -> tuple[RopeSpec, int | None]:
    """The RopeSpec and the window of one layer of a model with layer types.

    layer_type: "sliding_attention" or "full_attention" (an entry of a
        config's layer_types).
    rope_specs: a dict {layer type: RopeSpec} holding a RopeSpec for both
        layer types (L7.4's rope_spec(config, layer_type=...) for each).
    sliding_window: the config's sliding_window, an int >= 1 (not a bool).

    Returns (rope_specs[layer_type], sliding_window) for a sliding_attention
    layer and (rope_specs[layer_type], None) for a full_attention layer.

    Raises ValueError: layer_type is not one of LAYER_TYPES; rope_specs is not
    a dict with a RopeSpec for both; sliding_window is not an int >= 1.
    """
    ...
