"""L0.3 neural-network ops on Tensors: linear, softmax, silu, rms_norm, embedding.

What a Llama forward needs beyond L0.1 (arithmetic, @, sum, indexing) and
L0.2 (concat, stack, reshape, transpose).  Build each op with
Tensor.from_op(data, parents, backward, op): the forward with numpy, in x's
dtype (float32 stays float32, float64 stays float64), and beside it a
backward written out from the op's derivative.  Chapter:
course/chapters/L0.3-nn-ops.md.
"""

from __future__ import annotations

import numpy as np

from tinyllm.autograd.tensor import Tensor


def linear(x: Tensor, weight: Tensor) -> Tensor:
    """x @ weight.T, the layer every projection of a transformer is.

    x: Tensor [..., n_in] (any number of leading axes: [B, S, n_in] in a model).
    weight: Tensor [n_out, n_in], as torch's nn.Linear and Hugging Face store it.
    Returns a Tensor [..., n_out].
    Backward: dx = g @ weight; dweight = the sum over every leading position
        of the outer products g x^T, i.e. g_2d^T @ x_2d with both flattened to
        2-D over the leading axes.

    Raises:
        TypeError: x or weight is not a Tensor.
        ValueError: weight is not 2-D, or x's last axis is not weight's n_in.
    """
    ...


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along `axis`: each slice along it is positive and sums to 1.

    Computed as exp(x - max(x)) so that no exp overflows (x = 1000 is fine),
    which gives the same value.  Entries of -inf (masked scores) get weight
    exactly 0; a slice must hold at least one finite entry.
    Backward: with y the output, dx = y * (g - sum(g * y, axis)).

    Raises TypeError if x is not a Tensor.
    """
    ...


def silu(x: Tensor) -> Tensor:
    """SiLU, x * sigmoid(x) = x / (1 + exp(-x)), elementwise (SwiGLU's gate).

    Finite for every finite x: for x far below 0, exp(-x) overflows to inf and
    the result is -0.0 or 0.0, its limit (hide numpy's overflow warning).
    Backward: with s = sigmoid(x), dx = g * s * (1 + x * (1 - s)).

    Raises TypeError if x is not a Tensor.
    """
    ...


def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """Llama's RMSNorm over the last axis: weight * x / sqrt(mean(x^2) + eps).

    x: Tensor [..., d]; weight: Tensor [d]; eps: a number > 0 (a config's
    rms_norm_eps, e.g. 1e-5).  Computed in x's dtype, as Hugging Face's
    LlamaRMSNorm does for float32: the mean of the squares, plus eps, one
    reciprocal square root, times x, times weight.
    Backward, with r = 1 / sqrt(mean(x^2) + eps) and u = weight * g:
        dx = r * u - x * r^3 * mean(u * x)      (means over the last axis)
        dweight = the sum over every leading position of g * x * r

    Raises:
        TypeError: x or weight is not a Tensor.
        ValueError: weight is not [d] for x's last axis d; eps is not a
            number > 0 (0, negative, nan, a bool, a string).
    """
    ...


def embedding(weight: Tensor, ids) -> Tensor:
    """The rows of weight at the token ids: a lookup table.

    weight: Tensor [vocab, d]; ids: integers of any shape I (a numpy integer
        array or a nested list of ints), each in 0 .. vocab - 1.
    Returns a Tensor I + (d,): result[i...] = weight[ids[i...]].
    Backward: each row of g is added into the row of dweight it was read
    from; a token that occurs twice gets both rows' gradients.  Rows not read
    get 0.

    Raises:
        TypeError: weight is not a Tensor; ids are not integers (floats, bools
            and strings included).
        ValueError: weight is not 2-D; an id is negative or >= vocab.
    """
    ...
