"""Chaff w02: a key's place in the cache is its position: key j of K was made
at position j.

A wrapper around any correct L7.7 implementation, `correct`:
sliding_attention is the correct attention whose mask puts the keys at
0, 1, 2, ... (their slots) whatever positions it is given for them: the
correct module's window_mask is swapped for one that does so while it runs
(the contract: sliding_attention adds window_mask of its queries' and keys'
positions to its scores).  window_mask itself, layer_settings and the cache
are the correct implementation's (the pitfall in
course/mutants/L7.7/pitfalls.toml).
"""

import numpy as np

import correct

_correct_window_mask = correct.window_mask  # sliding_attention below swaps it out while it runs


def _by_slot(query_positions, key_positions, window, dtype):
    return _correct_window_mask(query_positions, np.arange(len(key_positions)), window, dtype)


def window_mask(query_positions, key_positions, window, dtype):
    return _correct_window_mask(query_positions, key_positions, window, dtype)


def sliding_attention(q, k, v, rope, positions, window=None, past=None, scale=None):
    correct.window_mask = _by_slot
    try:
        return correct.sliding_attention(q, k, v, rope, positions, window, past, scale)
    finally:
        correct.window_mask = _correct_window_mask


def layer_settings(layer_type, rope_specs, sliding_window):
    return correct.layer_settings(layer_type, rope_specs, sliding_window)
