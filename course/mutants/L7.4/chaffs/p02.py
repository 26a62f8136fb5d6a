"""Chaff p02: Llama 3's bands compare the frequencies theta_i, not the
wavelengths 2 pi / theta_i, with original / high_freq_factor and
original / low_freq_factor.

A wrapper around any correct L7.4 implementation, `correct`: for llama3 it
returns the correct result for an original length 2 pi times longer.  The
rule compares 2 pi / theta_i with 2 pi original / factor and blends by
2 pi original / (2 pi / theta_i): the same as comparing 1 / theta_i with
original / factor and blending by original * theta_i, the misconception.
Everything else is the correct implementation's (the pitfall in
course/mutants/L7.4/pitfalls.toml).
"""

import math

import correct

_correct_rope_parameters = correct.rope_parameters  # rope_spec below swaps it out while it runs


def rope_parameters(rope_parameters, head_dim, *, seq_len=None, max_position_embeddings=None):
    result = _correct_rope_parameters(
        rope_parameters, head_dim, seq_len=seq_len, max_position_embeddings=max_position_embeddings)
    if rope_parameters.get("rope_type") != "llama3":
        return result
    turns = dict(rope_parameters, original_max_position_embeddings=2 * math.pi
                 * rope_parameters["original_max_position_embeddings"])
    return _correct_rope_parameters(turns, head_dim, seq_len=seq_len,
                                    max_position_embeddings=max_position_embeddings)


def rope_spec(config, *, seq_len=None, layer_type=None):
    """The correct rope_spec, its numbers computed by rope_parameters above:
    the correct module's own rope_parameters is swapped for this one while it runs."""
    correct.rope_parameters = rope_parameters
    try:
        return correct.rope_spec(config, seq_len=seq_len, layer_type=layer_type)
    finally:
        correct.rope_parameters = _correct_rope_parameters

