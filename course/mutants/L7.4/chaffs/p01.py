"""Chaff p01: YaRN's temperature 0.1 log(factor) + 1 takes the log in base 10.

A wrapper around any correct L7.4 implementation, `correct`: for YaRN,
attention_scaling is the correct one for the factor f ** (1 / ln 10), whose
natural log is log10(f) (in DeepSeek's ratio of two temperatures too); a
given attention_factor is kept as given.  inv_freq is the correct one.
Everything else is the correct implementation's (the pitfall in
course/mutants/L7.4/pitfalls.toml).
"""

import math

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
    base10 = dict(rope_parameters, factor=factor ** (1 / math.log(10)))
    _, attention_scaling = _correct_rope_parameters(
        base10, head_dim, seq_len=seq_len, max_position_embeddings=max_position_embeddings)
    return inv_freq, attention_scaling


def rope_spec(config, *, seq_len=None, layer_type=None):
    """The correct rope_spec, its numbers computed by rope_parameters above:
    the correct module's own rope_parameters is swapped for this one while it runs."""
    correct.rope_parameters = rope_parameters
    try:
        return correct.rope_spec(config, seq_len=seq_len, layer_type=layer_type)
    finally:
        correct.rope_parameters = _correct_rope_parameters

