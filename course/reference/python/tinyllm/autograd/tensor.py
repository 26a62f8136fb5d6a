"""L0.1 Tensor: an n-dimensional array over numpy with reverse-mode autograd.

Every operation builds a new Tensor that remembers its parents and a closure,
`_backward`, that adds the operation's vector-Jacobian product into each
parent's `.grad`. `backward()` visits the graph in reverse topological order,
so every node's `.grad` is complete before its own closure runs.

Broadcasting follows numpy. The backward of a broadcast op sums the incoming
gradient back to each input's shape (`_unbroadcast`).
"""

from __future__ import annotations

import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _as_float_array(data) -> np.ndarray:
    """numpy float32/float64 arrays keep their dtype; Python numbers and
    integer arrays become float64; anything else is a TypeError."""
    array = np.asarray(data)
    if array.dtype in FLOAT_DTYPES:
        return array
    if array.dtype.kind in "iub":
        return array.astype(np.float64)
    raise TypeError(
        f"Tensor data must be float32 or float64 numbers, got dtype {array.dtype}. "
        "Convert with np.asarray(data, dtype=np.float32) (or float64) first."
    )


def _unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum `grad` over the axes that broadcasting added or stretched, so the
    result has `shape`.  grad: broadcast(shape, other) -> shape."""
    extra_leading = grad.ndim - len(shape)
    if extra_leading > 0:
        grad = grad.sum(axis=tuple(range(extra_leading)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(axis=stretched, keepdims=True)
    return grad


class Tensor:
    """A numpy array with a gradient.

    Tensor(data, requires_grad=False)
        data: anything np.asarray accepts; float32 and float64 keep their dtype,
        integers become float64, other dtypes raise TypeError.
    .data: the numpy array.  .grad: None until backward() reaches this tensor,
    then a numpy array of the same shape and dtype as .data.
    """

    def __init__(self, data, requires_grad: bool = False, _parents: tuple = (), _op: str = ""):
        self.data = _as_float_array(data)
        self.requires_grad = bool(requires_grad) or any(p.requires_grad for p in _parents)
        self.grad: np.ndarray | None = None
        self._parents = _parents
        self._op = _op
        self._backward = lambda grad: None

    # ---- array facts ------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    def __len__(self) -> int:
        return len(self.data)

    def numpy(self) -> np.ndarray:
        """The data as a numpy array (no copy)."""
        return self.data

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"Tensor({self.data!r}{grad})"

    # ---- graph plumbing -----------------------------------------------------

    @staticmethod
    def from_op(data: np.ndarray, parents: tuple[Tensor, ...], backward, op: str = "") -> Tensor:
        """The result of an op on `parents`: a new tensor holding `data`.

        backward(grad) receives the gradient of the loss with respect to the
        result (same shape as data) and returns one gradient per parent, each
        of that parent's shape, or None for a parent that needs none.  It runs
        only if some parent requires grad.
        """
        parents = tuple(parents)
        # Without a parent that requires grad there is no backward: keep no parents, so
        # an inference forward frees each intermediate as soon as the next op has used it.
        out = Tensor(data, _parents=parents if any(p.requires_grad for p in parents) else (), _op=op)
        if out.requires_grad:
            def _backward(grad):
                for parent, parent_grad in zip(out._parents, backward(grad)):
                    if parent.requires_grad and parent_grad is not None:
                        parent._accumulate(parent_grad)
            out._backward = _backward
        return out

    def _accumulate(self, grad: np.ndarray) -> None:
        grad = np.asarray(grad, dtype=self.data.dtype)
        assert grad.shape == self.shape, f"grad shape {grad.shape} != tensor shape {self.shape}"
        self.grad = grad.copy() if self.grad is None else self.grad + grad

    def backward(self, grad=None) -> None:
        """Fill `.grad` of every tensor this one depends on.

        grad: the gradient of some scalar loss with respect to this tensor,
        same shape as .data.  It may be omitted only when this tensor holds a
        single number (then it is 1).  Gradients add up over repeated calls:
        set `.grad = None` to start again.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward() called on a tensor that does not require grad: "
                "create the inputs with Tensor(data, requires_grad=True)."
            )
        if grad is None:
            if self.data.size != 1:
                raise ValueError(
                    f"backward() without a gradient needs a single number, but this tensor has "
                    f"shape {self.shape}. Pass grad=np.ones_like(t.data) (or the upstream gradient)."
                )
            grad = np.ones_like(self.data)
        grad = np.asarray(grad, dtype=self.data.dtype)
        if grad.shape != self.shape:
            raise ValueError(f"backward(grad): grad has shape {grad.shape}, expected {self.shape}")

        self._accumulate(grad)
        for node in reversed(self._topological_order()):
            if node.grad is not None:
                node._backward(node.grad)

    def _topological_order(self) -> list[Tensor]:
        """Every tensor that needs a gradient and that this one depends on,
        parents before children (iterative depth-first search)."""
        order: list[Tensor] = []
        visited: set[int] = {id(self)}
        stack = [(self, iter(self._parents))]
        while stack:
            node, parents = stack[-1]
            parent = next(parents, None)
            if parent is None:
                stack.pop()
                order.append(node)
            elif parent.requires_grad and id(parent) not in visited:
                visited.add(id(parent))
                stack.append((parent, iter(parent._parents)))
        return order

    # ---- arithmetic (numpy broadcasting) ---------------------------------------

    def __add__(self, other) -> Tensor:
        other = _lift(other, self)
        return Tensor.from_op(
            self.data + other.data, (self, other),
            lambda g: (_unbroadcast(g, self.shape), _unbroadcast(g, other.shape)), "+",
        )

    def __mul__(self, other) -> Tensor:
        other = _lift(other, self)
        return Tensor.from_op(
            self.data * other.data, (self, other),
            lambda g: (_unbroadcast(g * other.data, self.shape), _unbroadcast(g * self.data, other.shape)), "*",
        )

    def __truediv__(self, other) -> Tensor:
        other = _lift(other, self)
        return Tensor.from_op(
            self.data / other.data, (self, other),
            lambda g: (
                _unbroadcast(g / other.data, self.shape),
                _unbroadcast(-g * self.data / other.data**2, other.shape),
            ), "/",
        )

    def __neg__(self) -> Tensor:
        return Tensor.from_op(-self.data, (self,), lambda g: (-g,), "neg")

    def __sub__(self, other) -> Tensor:
        other = _lift(other, self)
        return Tensor.from_op(
            self.data - other.data, (self, other),
            lambda g: (_unbroadcast(g, self.shape), _unbroadcast(-g, other.shape)), "-",
        )

    def __radd__(self, other) -> Tensor:
        return _lift(other, self) + self

    def __rsub__(self, other) -> Tensor:
        return _lift(other, self) - self

    def __rmul__(self, other) -> Tensor:
        return _lift(other, self) * self

    def __rtruediv__(self, other) -> Tensor:
        return _lift(other, self) / self

    def __matmul__(self, other) -> Tensor:
        """Matrix product over the last two axes (batched like np.matmul); both
        operands need at least 2 dimensions."""
        other = _lift(other, self)
        if self.ndim < 2 or other.ndim < 2:
            raise ValueError(f"@ needs operands with at least 2 dimensions, got {self.shape} @ {other.shape}")
        return Tensor.from_op(
            self.data @ other.data, (self, other),
            lambda g: (
                _unbroadcast(g @ np.swapaxes(other.data, -1, -2), self.shape),
                _unbroadcast(np.swapaxes(self.data, -1, -2) @ g, other.shape),
            ), "@",
        )

    def sum(self, axis=None, keepdims: bool = False) -> Tensor:
        """Sum over `axis` (None: all axes), like np.sum."""
        def backward(g):
            if not keepdims and axis is not None:
                g = np.expand_dims(g, axis)
            return (np.broadcast_to(g, self.shape),)
        return Tensor.from_op(self.data.sum(axis=axis, keepdims=keepdims), (self,), backward, "sum")

    # ---- indexing -------------------------------------------------------------

    def __getitem__(self, index) -> Tensor:
        """numpy indexing: integers, slices (with steps), Ellipsis, None and
        integer arrays.  The backward scatters the gradient back into a zero
        array of this tensor's shape, adding where an entry was read twice."""
        def backward(g):
            full = np.zeros_like(self.data)
            if _is_basic_index(index):
                full[index] = g  # a view: each entry is read at most once
            else:
                np.add.at(full, index, g)
            return (full,)

        return Tensor.from_op(self.data[index], (self,), backward, "[]")


def _lift(value, like: Tensor) -> Tensor:
    """Wrap a number or numpy array as a constant Tensor (no gradient).
    A Python number takes the dtype of `like`, so float32 * 2.0 stays float32."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (int, float)):
        return Tensor(np.asarray(value, dtype=like.dtype))
    return Tensor(value)


def _is_basic_index(index) -> bool:
    """True for integers, slices, Ellipsis and None (numpy "basic" indexing)."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(isinstance(p, (int, np.integer, slice, type(Ellipsis), type(None))) for p in parts)
