"""Chaff p06: partial_rotary_factor only tells apply_rope how much of the head
to rotate; the frequencies are made for the whole head.

A wrapper around any correct L7.4 implementation, `correct`: when
partial_rotary_factor is given, it returns the correct result without it
(for the whole head).  Everything else is the correct implementation's (the
pitfall in course/mutants/L7.4/pitfalls.toml).
"""

import correct

_correct_rope_parameters = correct.rope_parameters  # rope_spec below swaps it out while it runs


def rope_parameters(rope_parameters, head_dim, *, seq_len=None, max_position_embeddings=None):
    result = _correct_rope_parameters(
        rope_parameters, head_dim, seq_len=seq_len, max_position_embeddings=max_position_embeddings)
    if rope_parameters.get("partial_rotary_factor", 1.0) == 1.0:
        return result
    whole_head = {name: value for name, value in rope_parameters.items() if name != "partial_rotary_factor"}
    return _correct_rope_parameters(whole_head, head_dim, seq_len=seq_len,
                                    max_position_embeddings=max_position_embeddings)


def rope_spec(config, *, seq_len=None, layer_type=None):
    """The correct rope_spec, its numbers computed by rope_parameters above:
    the correct module's own rope_parameters is swapped for this one while it runs."""
    correct.rope_parameters = rope_parameters
    try:
        return correct.rope_spec(config, seq_len=seq_len, layer_type=layer_type)
    finally:
        correct.rope_parameters = _correct_rope_parameters

