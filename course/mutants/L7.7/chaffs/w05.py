"""Chaff w05: a cache works as in L7.5: it keeps every key, and a cached key
is always visible; the window only shapes a prompt's mask.

A wrapper around any correct L7.7 implementation, `correct`:
sliding_attention without a cache is the correct windowed attention; with a
cache it is the correct attention with no window.  The cache it hands on is
the one the correct attention hands on without a window: every key.
Everything else is the correct implementation's (the pitfall in
course/mutants/L7.7/pitfalls.toml).
"""

import correct


def window_mask(query_positions, key_positions, window, dtype):
    return correct.window_mask(query_positions, key_positions, window, dtype)


def sliding_attention(q, k, v, rope, positions, window=None, past=None, scale=None):
    out, _ = correct.sliding_attention(q, k, v, rope, positions, window, past, scale)  # raises what it raises
    everything = correct.sliding_attention(q, k, v, rope, positions, None, past, scale)
    return (out if past is None else everything[0]), everything[1]


def layer_settings(layer_type, rope_specs, sliding_window):
    return correct.layer_settings(layer_type, rope_specs, sliding_window)
