"""L0.2 functional ops on Tensors: concat, stack, reshape, transpose.

Each op computes its forward with numpy and hands Tensor.from_op a closure that
maps the output gradient back to one gradient per input; the backward of each
op sits beside its forward.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tinyllm.autograd.tensor import Tensor


def _tensors(tensors: Sequence[Tensor], op: str) -> tuple[Tensor, ...]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, Sequence):
        raise TypeError(f"{op}(tensors, ...): tensors must be a list or tuple of Tensors, got {type(tensors).__name__}")
    if len(tensors) == 0:
        raise ValueError(f"{op}(tensors, ...): tensors is empty; pass at least one Tensor")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(tensors, ...): tensors[{i}] is a {type(t).__name__}, expected a Tensor")
    return tuple(tensors)


def concat(tensors: Sequence[Tensor], axis: int = -1) -> Tensor:
    """Join tensors along an existing axis, like np.concatenate.

    All shapes must match except along `axis`.  [..., n_0], [..., n_1], ... ->
    [..., n_0 + n_1 + ...].  Backward: the output gradient is cut back into
    pieces of sizes n_0, n_1, ...
    """
    tensors = _tensors(tensors, "concat")
    out = np.concatenate([t.data for t in tensors], axis=axis)
    ends = np.cumsum([t.shape[axis] for t in tensors])[:-1]

    def backward(g):
        return tuple(np.split(g, ends, axis=axis))

    return Tensor.from_op(out, tensors, backward, "concat")


def stack(tensors: Sequence[Tensor], axis: int = -1) -> Tensor:
    """Join same-shape tensors along a new axis, like np.stack.

    k tensors of shape S -> shape S with a new axis of size k inserted at
    `axis`.  Backward: the output gradient is indexed back along that axis.
    """
    tensors = _tensors(tensors, "stack")
    out = np.stack([t.data for t in tensors], axis=axis)

    def backward(g):
        return tuple(np.take(g, i, axis=axis) for i in range(len(tensors)))

    return Tensor.from_op(out, tensors, backward, "stack")


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """x with a new shape of the same size, like np.reshape (one entry may be -1).
    Backward: the gradient reshaped to x's shape."""
    return Tensor.from_op(np.reshape(x.data, shape), (x,), lambda g: (g.reshape(x.shape),), "reshape")


def transpose(x: Tensor, axes: Sequence[int] | None = None) -> Tensor:
    """Permute x's axes, like np.transpose (None reverses them).
    Backward: the gradient permuted by the inverse permutation."""
    perm = tuple(range(x.ndim))[::-1] if axes is None else tuple(axes)
    inverse = tuple(np.argsort(perm))
    return Tensor.from_op(np.transpose(x.data, perm), (x,), lambda g: (np.transpose(g, inverse),), "transpose")
