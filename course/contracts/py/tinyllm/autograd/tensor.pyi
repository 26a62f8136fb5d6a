"""L0.1 Tensor: an n-dimensional array over numpy with reverse-mode autograd.

Every operation returns a new Tensor that remembers its parents and how to
send a gradient back to them (Tensor.from_op).  t.backward() visits the graph
in reverse topological order, so each tensor's .grad is complete before it is
passed on to its parents.

Arithmetic broadcasts like numpy; the backward of a broadcast op sums the
gradient back to each input's shape.  Chapter: course/chapters/L0.1-tensor.md.
"""

from __future__ import annotations

import numpy as np


class Tensor:
    """A numpy array with a gradient.

    Tensor(data, requires_grad=False)
        data: anything np.asarray accepts.  float32 and float64 arrays keep
            their dtype; Python numbers, bools and integer arrays become
            float64; any other dtype (float16, complex, strings, objects)
            raises TypeError.
        requires_grad: True for the inputs you want gradients of.  A tensor
            made by an op requires grad if any of its parents does.

    Attributes:
        data: the numpy array.
        grad: None until backward() reaches this tensor; then a numpy array
            of the same shape and dtype as data.  Gradients add up over
            repeated backward() calls.
        requires_grad: bool.
    """

    data: np.ndarray
    grad: np.ndarray | None
    requires_grad: bool

    def __init__(self, data, requires_grad: bool = False) -> None:
        ...

    @property
    def shape(self) -> tuple[int, ...]:
        """data.shape"""
        ...

    @property
    def dtype(self) -> np.dtype:
        """data.dtype"""
        ...

    @property
    def ndim(self) -> int:
        """data.ndim"""
        ...

    def numpy(self) -> np.ndarray:
        """The data as a numpy array (no copy)."""
        ...

    @staticmethod
    def from_op(data: np.ndarray, parents: tuple[Tensor, ...], backward, op: str = "") -> Tensor:
        """The result of an op on `parents`: a new Tensor holding `data`.

        backward(grad) receives the gradient of the loss with respect to the
        result (a numpy array of data's shape) and returns a sequence with one
        entry per parent: that parent's gradient (a numpy array of the
        parent's shape), or None if the parent needs none.  It is called only
        during backward(), and only if some parent requires grad.  Every op in
        this module and in tinyllm.autograd.functional is built with from_op.
        """
        ...

    def backward(self, grad=None) -> None:
        """Fill .grad of this tensor and of every tensor it depends on that
        requires grad.

        grad: d(loss)/d(this tensor), same shape as data.  May be omitted only
            when this tensor holds a single number (then it is 1).

        Raises:
            RuntimeError: this tensor does not require grad.
            ValueError: grad is omitted for a tensor of more than one number,
                or has the wrong shape.
        """
        ...

    def __add__(self, other) -> Tensor:
        """self + other with numpy broadcasting; other may be a Tensor, a numpy
        array or a number (a constant: it gets no gradient).  A Python number
        takes self's dtype, so float32 + 2.0 stays float32."""
        ...

    def __radd__(self, other) -> Tensor: ...
    def __sub__(self, other) -> Tensor: ...
    def __rsub__(self, other) -> Tensor: ...
    def __mul__(self, other) -> Tensor: ...
    def __rmul__(self, other) -> Tensor: ...
    def __truediv__(self, other) -> Tensor: ...
    def __rtruediv__(self, other) -> Tensor: ...
    def __neg__(self) -> Tensor: ...

    def __matmul__(self, other) -> Tensor:
        """Matrix product over the last two axes, batched like np.matmul.
        Raises ValueError if either operand has fewer than 2 dimensions."""
        ...

    def sum(self, axis=None, keepdims: bool = False) -> Tensor:
        """Sum over `axis` (an int, a tuple, or None for all), like np.sum."""
        ...

    def __getitem__(self, index) -> Tensor:
        """numpy indexing: integers, slices with steps, Ellipsis, None and
        integer arrays.  The backward scatters the gradient into zeros of this
        tensor's shape, adding where an entry was read more than once."""
        ...
