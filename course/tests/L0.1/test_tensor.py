"""L0.1 course tests: the Tensor's forward values against numpy and its
gradients against float64 central differences (the `central_difference`
fixture from course/tests/conftest.py)."""

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor


def grad_of(fn, *arrays):
    """Autograd's gradients of sum(fn(*tensors)) with respect to each input."""
    tensors = [Tensor(a, requires_grad=True) for a in arrays]
    fn(*tensors).sum().backward()
    for i, t in enumerate(tensors):
        assert t.grad is not None, f"input {i} got no .grad: is it connected to the output through Tensor ops?"
        assert t.grad.shape == t.shape, f"input {i}: .grad has shape {t.grad.shape}, expected {t.shape}"
    return [t.grad for t in tensors]


def check_gradients(fn, arrays, central_difference, what):
    """Compare autograd with central differences for every input of fn."""
    grads = grad_of(fn, *arrays)
    for i, grad in enumerate(grads):
        def loss(values, i=i):
            args = [Tensor(v) for v in arrays]
            args[i] = Tensor(values)
            return float(fn(*args).data.sum())

        expected = central_difference(loss, arrays[i])
        np.testing.assert_allclose(
            grad, expected, atol=1e-6,
            err_msg=f"{what}: d sum(out) / d input {i} from backward() differs from central differences",
        )


def test_data_dtypes():
    assert Tensor(np.zeros(3, np.float32)).data.dtype == np.float32, "float32 data must stay float32"
    assert Tensor(np.zeros(3, np.float64)).data.dtype == np.float64, "float64 data must stay float64"
    assert Tensor([1, 2, 3]).data.dtype == np.float64, "integers become float64"
    assert Tensor(2.5).data.shape == (), "a Python number becomes a 0-d array"
    with pytest.raises(TypeError):
        Tensor(np.zeros(3, np.float16))
    with pytest.raises(TypeError):
        Tensor(["a", "b"])


def test_shape_dtype_ndim_and_grad_start_empty():
    t = Tensor(np.zeros((2, 3), np.float32), requires_grad=True)
    assert (t.shape, t.dtype, t.ndim) == ((2, 3), np.float32, 2)
    assert t.grad is None, ".grad must be None until backward() reaches the tensor"
    assert t.requires_grad is True and Tensor(1.0).requires_grad is False


@pytest.mark.parametrize(
    "name, fn",
    [
        ("add", lambda a, b: a + b),
        ("sub", lambda a, b: a - b),
        ("mul", lambda a, b: a * b),
        ("div", lambda a, b: a / b),
        ("neg", lambda a: -a),
        ("radd", lambda a: 2.0 + a),
        ("rsub", lambda a: 2.0 - a),
        ("rmul", lambda a: 3.0 * a),
        ("rdiv", lambda b: 3.0 / b),
    ],
)
def test_arithmetic_forward_and_gradients(name, fn, central_difference):
    rng = np.random.default_rng(1)
    arrays = [rng.uniform(0.5, 2.0, (3, 4)) for _ in range(fn.__code__.co_argcount)]
    # the same expression on plain numpy arrays is the forward oracle
    np.testing.assert_allclose(fn(*map(Tensor, arrays)).data, fn(*arrays), err_msg=f"{name}: forward value")
    check_gradients(fn, arrays, central_difference, name)


def test_broadcasting_backward_sums_to_each_input_shape(central_difference):
    rng = np.random.default_rng(2)
    a, b, c = rng.standard_normal((4, 1, 3)), rng.standard_normal((5, 3)), rng.standard_normal(())
    out = (Tensor(a) * Tensor(b) + Tensor(c)).data
    assert out.shape == (4, 5, 3), f"broadcast shape: got {out.shape}, expected (4, 5, 3) like numpy"
    check_gradients(lambda x, y, z: x * y + z, [a, b, c], central_difference, "x * y + z with broadcasting")


def test_constants_get_no_gradient_and_python_numbers_keep_dtype():
    x = Tensor(np.ones(3, np.float32), requires_grad=True)
    table = np.arange(3, dtype=np.float32)
    y = x * table * 2.0
    assert y.dtype == np.float32, f"float32 * 2.0 must stay float32, got {y.dtype}"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, table * 2.0)
    assert x.grad.dtype == np.float32, ".grad must have the tensor's dtype"


def test_matmul_and_sum(central_difference):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_allclose((Tensor(a) @ Tensor(b)).data, a @ b)
    check_gradients(lambda x, y: x @ y, [a, b], central_difference, "batched matmul")
    check_gradients(lambda x: x.sum(axis=1), [a], central_difference, "sum(axis=1)")
    check_gradients(lambda x: x.sum(axis=(0, 2), keepdims=True), [a], central_difference, "sum(axis=(0, 2), keepdims)")
    with pytest.raises(ValueError):
        Tensor(np.ones(3)) @ Tensor(np.ones((3, 3)))


@pytest.mark.parametrize(
    "index",
    [np.s_[1], np.s_[:, 1:3], np.s_[..., ::2], np.s_[..., 1::2], np.s_[None, 0, ::-1],
     np.s_[np.array([0, 0, 2])], np.s_[:, np.array([3, 1, 3])]],
    ids=["int", "slice", "step-even", "step-odd", "none-and-reverse", "repeated-rows", "repeated-columns"],
)
def test_indexing_and_its_backward(index, central_difference):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4))
    np.testing.assert_array_equal(Tensor(a)[index].data, a[index], err_msg="indexing must match numpy")
    weights = rng.standard_normal(a[index].shape)
    check_gradients(lambda x: x[index] * weights, [a], central_difference, f"x[{index}]")


def test_shared_subexpressions_backward_in_topological_order(central_difference):
    # y = a*b is used twice and a is used three times: each gradient must be
    # complete before it is passed on.
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(3), rng.standard_normal(3)

    def fn(x, z):
        y = x * z
        return y * y + y * x - x

    check_gradients(fn, [a, b], central_difference, "y*y + y*x - x with y = x*z")
    deep = Tensor(np.ones(2), requires_grad=True)
    out = deep
    for _ in range(5000):  # a long chain must not hit Python's recursion limit
        out = out * 1.0
    out.sum().backward()
    np.testing.assert_array_equal(deep.grad, np.ones(2))


def test_backward_arguments_and_accumulation():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(ValueError):
        (x * 2.0).backward()  # not a single number: pass grad=
    (x * 2.0).backward(np.array([1.0, 10.0]))
    np.testing.assert_array_equal(x.grad, [2.0, 20.0])
    (x * 2.0).backward(np.array([1.0, 10.0]))
    np.testing.assert_array_equal(x.grad, [4.0, 40.0], err_msg="gradients must add up over backward() calls")
    with pytest.raises(ValueError):
        (x * 2.0).backward(np.ones(3))
    with pytest.raises(RuntimeError):
        Tensor(np.ones(2)).sum().backward()


def test_from_op_builds_a_new_op(central_difference):
    def exp(t):
        out = np.exp(t.data)
        return Tensor.from_op(out, (t,), lambda g: (g * out,), "exp")

    a = np.random.default_rng(6).standard_normal((2, 3))
    np.testing.assert_allclose(exp(Tensor(a)).data, np.exp(a))
    check_gradients(lambda x: exp(x) * x, [a], central_difference, "a custom op built with Tensor.from_op")
    assert exp(Tensor(a)).requires_grad is False, "an op on constants does not require grad"
