"""Chaff w03: the window is a setting of the model, so every layer slides.

A wrapper around any correct L7.7 implementation, `correct`: layer_settings
gives every layer type the correct layer's RopeSpec and the sliding window,
full_attention layers included.  Everything else is the correct
implementation's (the pitfall in course/mutants/L7.7/pitfalls.toml).
"""

import correct


def window_mask(query_positions, key_positions, window, dtype):
    return correct.window_mask(query_positions, key_positions, window, dtype)


def sliding_attention(q, k, v, rope, positions, window=None, past=None, scale=None):
    return correct.sliding_attention(q, k, v, rope, positions, window, past, scale)


def layer_settings(layer_type, rope_specs, sliding_window):
    spec, _ = correct.layer_settings(layer_type, rope_specs, sliding_window)  # raises what it raises
    return spec, sliding_window
