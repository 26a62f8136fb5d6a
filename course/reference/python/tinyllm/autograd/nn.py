"""L0.3 neural-network ops on Tensors: linear, softmax, silu, rms_norm, embedding.

What a Llama forward needs beyond L0.1's arithmetic and matmul and L0.2's
reshapes.  Each op computes its forward with numpy in x's dtype (float32 for
a model, float64 for a gradient check) and hands Tensor.from_op a backward
written out by hand: these five are used so often that one node each, with
its formula, beats a graph of small ones.
"""

from __future__ import annotations

import numbers

import numpy as np

from tinyllm.autograd.tensor import Tensor


def linear(x: Tensor, weight: Tensor) -> Tensor:
    """x @ weight.T: x [..., n_in], weight [n_out, n_in] (nn.Linear's layout) -> [..., n_out].

    Backward: dx = g @ weight, dweight = sum over every leading position of g^T x."""
    _check_tensors("linear", x=x, weight=weight)
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: x [..., n_in] and weight [n_out, n_in] must agree on n_in, "
                         f"got x {x.shape} and weight {weight.shape}")

    n_out, n_in = weight.shape
    rows = x.data.reshape(-1, n_in)  # [N, n_in], N = every leading position: one BLAS call, not N

    def backward(g):
        g_rows = g.reshape(-1, n_out)
        return (g_rows @ weight.data).reshape(x.shape), g_rows.T @ rows

    return Tensor.from_op((rows @ weight.data.T).reshape(*x.shape[:-1], n_out), (x, weight), backward, "linear")


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along `axis`, computed as exp(x - max) so that no
    exp overflows; -inf entries (masked) get weight 0.

    Backward: with y the output, dx = y * (g - sum(g * y, axis))."""
    _check_tensors("softmax", x=x)
    e = np.exp(x.data - x.data.max(axis=axis, keepdims=True))
    y = e / e.sum(axis=axis, keepdims=True)

    def backward(g):
        return (y * (g - (g * y).sum(axis=axis, keepdims=True)),)

    return Tensor.from_op(y, (x,), backward, "softmax")


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x) = x / (1 + exp(-x)) (SwiGLU's gate activation).

    Backward: with s = sigmoid(x), dx = g * s * (1 + x (1 - s))."""
    _check_tensors("silu", x=x)
    with np.errstate(over="ignore"):  # exp(-x) = inf for x << 0: then s = 0, exactly the limit
        s = 1 / (1 + np.exp(-x.data))

    def backward(g):
        return (g * s * (1 + x.data * (1 - s)),)

    return Tensor.from_op(x.data * s, (x,), backward, "silu")


def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """weight * x / sqrt(mean(x^2) + eps) over the last axis (Llama's RMSNorm).

    x [..., d], weight [d].  With r = 1 / sqrt(mean(x^2) + eps) and u = weight * g:
    dx = r u - x r^3 mean(u x),  dweight = sum over leading positions of g x r."""
    _check_tensors("rms_norm", x=x, weight=weight)
    if weight.ndim != 1 or x.ndim < 1 or x.shape[-1] != weight.shape[0]:
        raise ValueError(f"rms_norm: x [..., d] and weight [d] must agree on d, got x {x.shape} and weight {weight.shape}")
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps > 0:
        raise ValueError(f"rms_norm: eps must be a number > 0 (Llama's rms_norm_eps, such as 1e-5), got {eps!r}")
    r = 1 / np.sqrt((x.data * x.data).mean(axis=-1, keepdims=True) + eps)  # [..., 1]
    normed = x.data * r

    def backward(g):
        u = g * weight.data
        dx = r * u - x.data * r**3 * (u * x.data).mean(axis=-1, keepdims=True)
        return dx, (g * normed).reshape(-1, weight.shape[0]).sum(axis=0)

    return Tensor.from_op(weight.data * normed, (x, weight), backward, "rms_norm")


def embedding(weight: Tensor, ids) -> Tensor:
    """The rows of weight [vocab, d] at the token ids: ids of any shape I -> I + (d,).

    Backward: each row's gradient is added into the row it was read from
    (a token that occurs twice gets both)."""
    _check_tensors("embedding", weight=weight)
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids must be integers (token ids), got dtype {ids.dtype}")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be [vocab, d], got shape {weight.shape}")
    if ids.size and (ids.min() < 0 or ids.max() >= weight.shape[0]):
        raise ValueError(f"embedding: ids must lie in 0..{weight.shape[0] - 1} (the vocabulary), "
                         f"got {ids.min()}..{ids.max()}")

    def backward(g):
        grad = np.zeros_like(weight.data)
        np.add.at(grad, ids.reshape(-1), g.reshape(-1, weight.shape[1]))
        return (grad,)

    return Tensor.from_op(weight.data[ids], (weight,), backward, "embedding")


def _check_tensors(op: str, **arguments) -> None:
    for name, value in arguments.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}; wrap arrays as Tensor(array)")
