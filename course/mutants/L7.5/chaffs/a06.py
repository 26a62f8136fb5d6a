"""Chaff a06: the softmax normalises each key's column over the queries.

A wrapper around any correct L7.5 implementation, `correct`: attention is the
correct attention, its softmax taken over the axis before the one it asks for
(the queries of scores [..., S, P + S]).  L0.3's softmax, which the contract
builds attention from, is swapped for that one while the correct attention
runs.  Everything else is the correct implementation's (the pitfall in
course/mutants/L7.5/pitfalls.toml).
"""

from tinyllm.autograd import nn

import correct

_softmax = nn.softmax  # attention below swaps it out while it runs


def causal_mask(n_new, n_past, dtype):
    return correct.causal_mask(n_new, n_past, dtype)


def attention(x, wq, wk, wv, wo, rope, positions, n_heads, n_kv_heads, past=None):
    def over_the_queries(scores, axis=-1):
        return _softmax(scores, axis=axis % scores.ndim - 1)

    return _with_softmax(over_the_queries, correct.attention, x, wq, wk, wv, wo, rope, positions, n_heads,
                         n_kv_heads, past)


def _with_softmax(softmax, function, *args):
    """function(*args) with L0.3's softmax swapped for `softmax`, in tinyllm.autograd.nn
    and in the correct module (if it imported it by name)."""
    named = getattr(correct, "softmax", None) is _softmax
    nn.softmax = softmax
    if named:
        correct.softmax = softmax
    try:
        return function(*args)
    finally:
        nn.softmax = _softmax
        if named:
            correct.softmax = _softmax
