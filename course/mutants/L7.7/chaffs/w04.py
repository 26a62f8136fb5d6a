"""Chaff w04: a model has one RoPE base, so the local layers' spec serves the
global layers too.

A wrapper around any correct L7.7 implementation, `correct`: layer_settings
gives every layer type the RopeSpec the correct one gives a sliding_attention
layer, and the window the correct one gives the layer asked for.  Everything
else is the correct implementation's (the pitfall in
course/mutants/L7.7/pitfalls.toml).
"""

import correct


def window_mask(query_positions, key_positions, window, dtype):
    return correct.window_mask(query_positions, key_positions, window, dtype)


def sliding_attention(q, k, v, rope, positions, window=None, past=None, scale=None):
    return correct.sliding_attention(q, k, v, rope, positions, window, past, scale)


def layer_settings(layer_type, rope_specs, sliding_window):
    _, window = correct.layer_settings(layer_type, rope_specs, sliding_window)  # raises what it raises
    local, _ = correct.layer_settings("sliding_attention", rope_specs, sliding_window)
    return local, window
