"""Chaff p07: YaRN slows down the fast pairs; the ramp runs backwards.

A wrapper around any correct L7.4 implementation, `correct`: for YaRN,
inv_freq is the correct one for factor 1 / f, divided by f.  The correct
blend theta_i (1 - ramp_i) + theta_i / g * ramp_i at g = 1 / f, divided by f,
is theta_i / f * (1 - ramp_i) + theta_i * ramp_i: the ramp reversed (the ramp
does not depend on the factor).  attention_scaling is the correct one.
Everything else is the correct implementation's (the pitfall in
course/mutants/L7.4/pitfalls.toml).
"""

import correct

_correct_rope_parameters = correct.rope_parameters  # rope_spec below swaps it out while it runs


def rope_parameters(rope_parameters, head_dim, *, seq_len=None, max_position_embeddings=None):
    inv_freq, attention_scaling = _correct_rope_parameters(
        rope_parameters, head_dim, seq_len=seq_len, max_position_embeddings=max_position_embeddings)
    if rope_parameters.get("rope_type") != "yarn":
        return inv_freq, attention_scaling
    factor = rope_parameters.get("factor")
    if factor is None:  # the contract: max_position_embeddings / original_max_position_embeddings
        factor = max_position_embeddings / rope_parameters["original_max_position_embeddings"]
    inverted = dict(rope_parameters, factor=1 / factor)
    swapped, _ = _correct_rope_parameters(inverted, head_dim, seq_len=seq_len,
                                          max_position_embeddings=max_position_embeddings)
    return swapped / factor, attention_scaling


def rope_spec(config, *, seq_len=None, layer_type=None):
    """The correct rope_spec, its numbers computed by rope_parameters above:
    the correct module's own rope_parameters is swapped for this one while it runs."""
    correct.rope_parameters = rope_parameters
    try:
        return correct.rope_spec(config, seq_len=seq_len, layer_type=layer_type)
    finally:
        correct.rope_parameters = _correct_rope_parameters

