"""Chaff a03: the causal mask starts one key later, so each token sees the
next one.

A wrapper around any correct L7.5 implementation, `correct`: causal_mask is
the correct mask for one more cached key, cut to its n_past + n_new keys (so
query i sees keys 0 .. n_past + i + 1).  attention is the correct attention,
its mask taken from causal_mask above: the correct module's own causal_mask
is swapped for this one while it runs (the contract: causal_mask is the mask
attention adds to its scores).  Everything else is the correct
implementation's (the pitfall in course/mutants/L7.5/pitfalls.toml).
"""

import correct

_correct_causal_mask = correct.causal_mask  # attention below swaps it out while it runs


def causal_mask(n_new, n_past, dtype):
    return _correct_causal_mask(n_new, n_past + 1, dtype)[:, : n_past + n_new]


def attention(x, wq, wk, wv, wo, rope, positions, n_heads, n_kv_heads, past=None):
    correct.causal_mask = causal_mask
    try:
        return correct.attention(x, wq, wk, wv, wo, rope, positions, n_heads, n_kv_heads, past)
    finally:
        correct.causal_mask = _correct_causal_mask
