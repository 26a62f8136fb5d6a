"""L0.2 functional ops on Tensors, each with its backward.

Build each op with Tensor.from_op(data, parents, backward, op): the forward
with numpy, and beside it a backward that maps the output gradient to one
gradient per input.  RoPE (L7.3) needs concat, stack and reshape to put
rotated pairs back in place.  Chapter: course/chapters/L0.2-functional.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tinyllm.autograd.tensor import Tensor


def concat(tensors: Sequence[Tensor], axis: int = -1) -> Tensor:
    """Join tensors along an existing axis, like np.concatenate.

    tensors: a non-empty list or tuple of Tensors whose shapes agree except
        along `axis`: [..., n_0], [..., n_1], ... -> [..., n_0 + n_1 + ...].
    Backward: the output gradient is cut back into pieces of sizes n_0, n_1, ...

    Raises:
        TypeError: tensors is not a list or tuple, or holds a non-Tensor.
        ValueError: tensors is empty; the shapes do not agree.
    """
    ...


def stack(tensors: Sequence[Tensor], axis: int = -1) -> Tensor:
    """Join same-shape tensors along a new axis, like np.stack.

    k tensors of shape S -> S with a new axis of size k inserted at `axis`.
    Backward: the output gradient indexed back along that axis.

    Raises:
        TypeError: tensors is not a list or tuple, or holds a non-Tensor.
        ValueError: tensors is empty; the shapes differ.
    """
    ...


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """x with a new shape holding the same number of entries, like np.reshape
    (one entry of shape may be -1).  Backward: the gradient reshaped to x's
    shape.  Raises ValueError if the sizes differ."""
    ...


def transpose(x: Tensor, axes: Sequence[int] | None = None) -> Tensor:
    """Permute x's axes, like np.transpose (None reverses them).  Backward: the
    gradient permuted by the inverse permutation."""
    ...
