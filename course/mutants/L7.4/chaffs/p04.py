"""Chaff p04: LongRoPE's long factors start at the original context length
itself.

A wrapper around any correct L7.4 implementation, `correct`: for longrope at
seq_len equal to original_max_position_embeddings it returns the correct
result one position longer (the long factors).  Everything else is the
correct implementation's (the pitfall in course/mutants/L7.4/pitfalls.toml).
"""

import correct

_correct_rope_parameters = correct.rope_parameters  # rope_spec below swaps it out while it runs


def rope_parameters(rope_parameters, head_dim, *, seq_len=None, max_position_embeddings=None):
    result = _correct_rope_parameters(
        rope_parameters, head_dim, seq_len=seq_len, max_position_embeddings=max_position_embeddings)
    if rope_parameters.get("rope_type") != "longrope" or seq_len is None \
            or seq_len != rope_parameters["original_max_position_embeddings"]:
        return result
    return _correct_rope_parameters(
        rope_parameters, head_dim, seq_len=seq_len + 1, max_position_embeddings=max_position_embeddings)


def rope_spec(config, *, seq_len=None, layer_type=None):
    """The correct rope_spec, its numbers computed by rope_parameters above:
    the correct module's own rope_parameters is swapped for this one while it runs."""
    correct.rope_parameters = rope_parameters
    try:
        return correct.rope_spec(config, seq_len=seq_len, layer_type=layer_type)
    finally:
        correct.rope_parameters = _correct_rope_parameters

