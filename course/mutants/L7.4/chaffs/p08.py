"""Chaff p08: dynamic NTK rescales for every sequence length, short ones
included.

A wrapper around any correct L7.4 implementation, `correct`: for dynamic at
seq_len < max_position_embeddings, inv_freq is the correct plain ladder
(rope_type "default") of the base the chapter's rule gives for that length,
rope_theta * kappa ** (r / (r - 2)) with
kappa = factor * seq_len / max_position_embeddings - (factor - 1) < 1.
For kappa <= 0 that base has no real value: the chaff raises ValueError there
(the pitfall's edit computes a complex base and keeps its real part).
Everything else is the correct implementation's (the pitfall in
course/mutants/L7.4/pitfalls.toml).
"""

import correct

_correct_rope_parameters = correct.rope_parameters  # rope_spec below swaps it out while it runs


def rope_parameters(rope_parameters, head_dim, *, seq_len=None, max_position_embeddings=None):
    inv_freq, attention_scaling = _correct_rope_parameters(
        rope_parameters, head_dim, seq_len=seq_len, max_position_embeddings=max_position_embeddings)
    if rope_parameters.get("rope_type") != "dynamic" or not seq_len or seq_len >= max_position_embeddings:
        return inv_freq, attention_scaling
    r = 2 * len(inv_freq)
    factor = rope_parameters["factor"]
    kappa = factor * seq_len / max_position_embeddings - (factor - 1)
    if kappa <= 0:
        raise ValueError(f"dynamic's base rope_theta * kappa ** (r / (r - 2)) has no real value at kappa = {kappa}")
    base = rope_parameters["rope_theta"] * kappa ** (r / (r - 2))
    plain = dict(rope_parameters, rope_type="default", rope_theta=base)
    shrunk, _ = _correct_rope_parameters(plain, head_dim)
    return shrunk, attention_scaling


def rope_spec(config, *, seq_len=None, layer_type=None):
    """The correct rope_spec, its numbers computed by rope_parameters above:
    the correct module's own rope_parameters is swapped for this one while it runs."""
    correct.rope_parameters = rope_parameters
    try:
        return correct.rope_spec(config, seq_len=seq_len, layer_type=layer_type)
    finally:
        correct.rope_parameters = _correct_rope_parameters

