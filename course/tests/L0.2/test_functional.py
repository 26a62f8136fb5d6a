"""L0.2 course tests: concat, stack, reshape and transpose against numpy, and
their backward against float64 central differences (`central_difference`
fixture from course/tests/conftest.py)."""

import numpy as np
import pytest

from tinyllm.autograd import functional as F
from tinyllm.autograd.tensor import Tensor


def check_op(op, arrays, np_op, central_difference, what):
    """Forward equals numpy; d sum(w * out) / d input equals central differences."""
    out = op([Tensor(a) for a in arrays])
    expected = np_op(arrays)
    np.testing.assert_array_equal(out.data, expected, err_msg=f"{what}: forward must match numpy")
    weights = np.random.default_rng(0).standard_normal(expected.shape)
    tensors = [Tensor(a, requires_grad=True) for a in arrays]
    (op(tensors) * weights).sum().backward()
    for i, (t, a) in enumerate(zip(tensors, arrays)):
        def loss(values, i=i):
            args = [Tensor(v) for v in arrays]
            args[i] = Tensor(values)
            return float(np.sum(weights * op(args).data))

        assert t.grad is not None, f"{what}: input {i} got no gradient"
        np.testing.assert_allclose(
            t.grad, central_difference(loss, a), atol=1e-6,
            err_msg=f"{what}: gradient of input {i} (shape {a.shape}) differs from central differences",
        )


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis, central_difference):
    rng = np.random.default_rng(1)
    arrays = []
    for extra in range(3):  # sizes along `axis` differ: n, n + 1, n + 2
        shape = [2, 3, 4]
        shape[axis] += extra
        arrays.append(rng.standard_normal(shape))
    check_op(lambda ts: F.concat(ts, axis=axis), arrays, lambda xs: np.concatenate(xs, axis=axis),
             central_difference, f"concat(axis={axis})")


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack(axis, central_difference):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((3, 4)) for _ in range(3)]
    check_op(lambda ts: F.stack(ts, axis=axis), arrays, lambda xs: np.stack(xs, axis=axis),
             central_difference, f"stack(axis={axis})")


def test_reshape_and_transpose(central_difference):
    a = np.random.default_rng(3).standard_normal((2, 3, 4))
    check_op(lambda ts: F.reshape(ts[0], (4, -1)), [a], lambda xs: xs[0].reshape(4, -1), central_difference, "reshape")
    check_op(lambda ts: F.transpose(ts[0], (2, 0, 1)), [a], lambda xs: xs[0].transpose(2, 0, 1),
             central_difference, "transpose((2, 0, 1))")
    check_op(lambda ts: F.transpose(ts[0]), [a], lambda xs: xs[0].T, central_difference, "transpose()")


def test_interleave_pairs_round_trip(central_difference):
    # What RoPE's interleaved layout does: stack two halves on a new last axis,
    # then flatten the pairs: (a0, b0, a1, b1, ...).
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    check_op(lambda ts: F.reshape(F.stack(ts, axis=-1), (2, 6)), [a, b],
             lambda xs: np.stack(xs, axis=-1).reshape(2, 6), central_difference, "reshape(stack([a, b], -1))")


def test_errors():
    t = Tensor(np.ones((2, 3)))
    with pytest.raises(ValueError):
        F.concat([], axis=0)
    with pytest.raises(TypeError):
        F.concat([t, np.ones((2, 3))], axis=0)
    with pytest.raises(TypeError):
        F.stack(t, axis=0)
    with pytest.raises(ValueError):
        F.concat([t, Tensor(np.ones((3, 3)))], axis=1)
    with pytest.raises(ValueError):
        F.stack([t, Tensor(np.ones((2, 4)))])
    with pytest.raises(ValueError):
        F.reshape(t, (4, 2))
