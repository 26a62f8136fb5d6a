"""Chaff p03: dynamic NTK multiplies the base by the stretch itself, without
the exponent r / (r - 2).

A wrapper around any correct L7.4 implementation, `correct`: when dynamic
grows the base (seq_len > max_position_embeddings), inv_freq is the correct
plain ladder (rope_type "default") of rope_theta * kappa, where
kappa = factor * seq_len / max_position_embeddings - (factor - 1) is the
chapter's stretch.  Everything else is the correct implementation's (the
pitfall in course/mutants/L7.4/pitfalls.toml).
"""

import correct

_correct_rope_parameters = correct.rope_parameters  # rope_spec below swaps it out while it runs


def rope_parameters(rope_parameters, head_dim, *, seq_len=None, max_position_embeddings=None):
    result = _correct_rope_parameters(
        rope_parameters, head_dim, seq_len=seq_len, max_position_embeddings=max_position_embeddings)
    if rope_parameters.get("rope_type") != "dynamic" or not seq_len or seq_len <= max_position_embeddings:
        return result
    factor = rope_parameters["factor"]
    kappa = factor * seq_len / max_position_embeddings - (factor - 1)
    plain = dict(rope_parameters, rope_type="default", rope_theta=rope_parameters["rope_theta"] * kappa)
    inv_freq, _ = _correct_rope_parameters(plain, head_dim)
    return inv_freq, result[1]


def rope_spec(config, *, seq_len=None, layer_type=None):
    """The correct rope_spec, its numbers computed by rope_parameters above:
    the correct module's own rope_parameters is swapped for this one while it runs."""
    correct.rope_parameters = rope_parameters
    try:
        return correct.rope_spec(config, seq_len=seq_len, layer_type=layer_type)
    finally:
        correct.rope_parameters = _correct_rope_parameters

