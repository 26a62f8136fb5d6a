"""Chaff w01: a window of W lets a token see the W tokens before it, so a key
W positions back is still in.

A wrapper around any correct L7.7 implementation, `correct`: window_mask is
the correct mask of a window one wider (distance <= W is distance < W + 1).
sliding_attention is the correct attention with its mask taken from
window_mask above: the correct module's own window_mask is swapped for this
one while it runs (the contract: window_mask is the mask sliding_attention
adds to its scores).  The cache it hands on is the correct one.  Everything
else is the correct implementation's (the pitfall in
course/mutants/L7.7/pitfalls.toml).
"""

import correct

_correct_window_mask = correct.window_mask  # sliding_attention below swaps it out while it runs


def window_mask(query_positions, key_positions, window, dtype):
    return _correct_window_mask(query_positions, key_positions, None if window is None else window + 1, dtype)


def sliding_attention(q, k, v, rope, positions, window=None, past=None, scale=None):
    correct.window_mask = window_mask
    try:
        return correct.sliding_attention(q, k, v, rope, positions, window, past, scale)
    finally:
        correct.window_mask = _correct_window_mask


def layer_settings(layer_type, rope_specs, sliding_window):
    return correct.layer_settings(layer_type, rope_specs, sliding_window)
