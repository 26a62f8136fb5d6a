"""Chaff a02: the 1/sqrt(D) scale can be applied after the softmax, like any
other constant factor.

A wrapper around any correct L7.5 implementation, `correct`: attention is the
correct attention, whose softmax divides the scores it gets by D**-0.5 (so
they are unscaled) and multiplies the weights it gives by D**-0.5 (so each
row sums to 1/sqrt(D)).  L0.3's softmax, which the contract builds attention
from, is swapped for that one while the correct attention runs.  Everything
else is the correct implementation's (the pitfall in
course/mutants/L7.5/pitfalls.toml).

The pitfall's edit divides the scaled scores back the same way.  Scores
never scaled (q K^T alone) are the same numbers to float32 rounding, but not
always to the last bit: a chaff that only sees the scores a correct attention
has scaled could not give exactly what such an edit gives.
"""

from tinyllm.autograd import nn

import correct

_softmax = nn.softmax  # attention below swaps it out while it runs


def causal_mask(n_new, n_past, dtype):
    return correct.causal_mask(n_new, n_past, dtype)


def attention(x, wq, wk, wv, wo, rope, positions, n_heads, n_kv_heads, past=None):
    def after_the_softmax(scores, axis=-1):
        scale = (wq.shape[0] // n_heads) ** -0.5  # D**-0.5, D = wq.shape[0] // n_heads as the contract says
        return _softmax(scores / scale, axis=axis) * scale

    return _with_softmax(after_the_softmax, correct.attention, x, wq, wk, wv, wo, rope, positions, n_heads,
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
