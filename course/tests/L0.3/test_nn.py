"""L0.3 course tests: linear, softmax, silu, rms_norm and embedding against
torch's (fixtures/L0.3/nn_torch.npz, oracle/L0.3/nn_torch.py: forwards in
float32, gradients by torch's autograd in float64), and every backward against
float64 central differences.  The eight tests are the table of the chapter
(course/chapters/L0.3-nn-ops.md, section 8)."""

import numpy as np
import pytest

from tinyllm.autograd import nn
from tinyllm.autograd.tensor import Tensor

# float32 forwards: torch and numpy round the same formula in different orders
# (and torch's exp and rsqrt are not numpy's): a few ulp of values of size 1-10.
FORWARD_ATOL = 2e-6
# float64 gradients against torch's float64 autograd: only rounding apart.
GRADIENT_ATOL = 1e-12


def forward_and_gradients(op, inputs, g):
    """op's float32 output, and the float64 gradients d sum(op(...) * g) / d input."""
    out = op(*[Tensor(a) for a in inputs])
    tensors = [Tensor(np.asarray(a, np.float64), requires_grad=True) for a in inputs]
    op(*tensors).backward(g)
    return out, [t.grad for t in tensors]


def check_golden(name, op, inputs, grad_keys, nn_torch):
    out, grads = forward_and_gradients(op, inputs, nn_torch[f"{name}/g"])
    assert out.dtype == np.float32, f"{name}: float32 in must give float32 out, got {out.dtype}"
    np.testing.assert_allclose(out.data, nn_torch[f"{name}/out"], rtol=0, atol=FORWARD_ATOL,
                               err_msg=f"{name}: the float32 forward differs from torch's")
    for key, grad in zip(grad_keys, grads):
        assert grad is not None, f"{name}: no gradient reached {key[1:]}"
        np.testing.assert_allclose(grad, nn_torch[f"{name}/{key}"], rtol=0, atol=GRADIENT_ATOL,
                                   err_msg=f"{name}: the float64 gradient {key} differs from torch's autograd")


def test_linear_golden(nn_torch):
    check_golden("linear", nn.linear, [nn_torch["linear/x"], nn_torch["linear/weight"]], ["dx", "dweight"], nn_torch)


def test_softmax_golden(nn_torch):
    # Row 1 holds -inf entries (a mask: weight exactly 0), row 2 numbers near 1000 (exp alone overflows).
    x = nn_torch["softmax/x"]
    check_golden("softmax", lambda t: nn.softmax(t, axis=-1), [x], ["dx"], nn_torch)
    assert np.all(nn.softmax(Tensor(x), axis=-1).data[1, 4:] == 0), "softmax: a -inf score must get weight 0"
    check_golden("softmax0", lambda t: nn.softmax(t, axis=0), [nn_torch["softmax0/x"]], ["dx"], nn_torch)


def test_silu_golden(nn_torch):
    # The last four entries are -200, -90, 90, 200: exp(-x) overflows for the first two.
    with np.errstate(over="raise", invalid="raise"):  # no warning may escape: silu hides its own overflow
        check_golden("silu", nn.silu, [nn_torch["silu/x"]], ["dx"], nn_torch)


def test_rms_norm_golden(nn_torch):
    eps = float(nn_torch["rms_norm/eps"])
    check_golden("rms_norm", lambda x, w: nn.rms_norm(x, w, eps), [nn_torch["rms_norm/x"], nn_torch["rms_norm/weight"]],
                 ["dx", "dweight"], nn_torch)


def test_embedding_golden(nn_torch):
    ids, weight = nn_torch["embedding/ids"], nn_torch["embedding/weight"]  # id 3 occurs three times, 9 twice
    out = nn.embedding(Tensor(weight), ids)
    assert out.shape == (2, 4, 6) and out.dtype == np.float32
    np.testing.assert_array_equal(out.data, nn_torch["embedding/out"], err_msg="embedding: rows read differ")
    w = Tensor(weight.astype(np.float64), requires_grad=True)
    nn.embedding(w, ids).backward(nn_torch["embedding/g"])
    np.testing.assert_allclose(w.grad, nn_torch["embedding/dweight"], rtol=0, atol=GRADIENT_ATOL,
                               err_msg="embedding: each row's gradient must be the sum over the places it was read")
    nested = nn.embedding(Tensor(weight), ids.tolist())  # a nested list of ints works too
    np.testing.assert_array_equal(nested.data, nn_torch["embedding/out"])


def test_gradcheck_float64(central_difference):
    rng = np.random.default_rng(31)
    x, w = rng.standard_normal((2, 3, 5)), rng.standard_normal((4, 5))
    norm_w = rng.standard_normal(5)
    ids = np.array([[0, 2, 2], [3, 1, 0]])
    table = rng.standard_normal((4, 5))
    cases = {
        "linear": (lambda a, b: nn.linear(a, b), [x, w]),
        "softmax(axis=-1)": (lambda a: nn.softmax(a, axis=-1), [x]),
        "softmax(axis=1)": (lambda a: nn.softmax(a, axis=1), [x]),
        "silu": (nn.silu, [x * 3]),
        "rms_norm": (lambda a, b: nn.rms_norm(a, b, 1e-5), [x, norm_w]),
        "embedding": (lambda t: nn.embedding(t, ids), [table]),
    }
    for name, (op, arrays) in cases.items():
        out = op(*[Tensor(a) for a in arrays])
        g = rng.standard_normal(out.shape)
        tensors = [Tensor(a, requires_grad=True) for a in arrays]
        op(*tensors).backward(g)
        for i, (t, a) in enumerate(zip(tensors, arrays)):
            def loss(values, i=i):
                args = [Tensor(v) for v in arrays]
                args[i] = Tensor(values)
                return float(np.sum(g * op(*args).data))

            assert t.grad is not None and t.grad.dtype == np.float64, f"{name}: input {i} got no float64 gradient"
            np.testing.assert_allclose(t.grad, central_difference(loss, a), rtol=1e-6, atol=1e-6,
                                       err_msg=f"{name}: the gradient of input {i} differs from central differences")


def test_dtypes_and_shapes_are_kept():
    rng = np.random.default_rng(32)
    for dtype in (np.float32, np.float64):
        x = Tensor(rng.standard_normal((2, 3, 4)).astype(dtype))
        w = Tensor(rng.standard_normal((5, 4)).astype(dtype))
        outs = {"linear": nn.linear(x, w), "softmax": nn.softmax(x), "silu": nn.silu(x),
                "rms_norm": nn.rms_norm(x, Tensor(np.ones(4, dtype)), 1e-5), "embedding": nn.embedding(w, [[1, 0]])}
        shapes = {"linear": (2, 3, 5), "softmax": (2, 3, 4), "silu": (2, 3, 4), "rms_norm": (2, 3, 4),
                  "embedding": (1, 2, 4)}
        for name, out in outs.items():
            assert isinstance(out, Tensor) and out.dtype == dtype and out.shape == shapes[name], (
                f"{name} on {np.dtype(dtype).name}: got a {type(out).__name__} {getattr(out, 'dtype', '')} "
                f"{getattr(out, 'shape', '')}, expected {np.dtype(dtype).name} {shapes[name]}")
    np.testing.assert_allclose(nn.softmax(x, axis=-1).data.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(nn.rms_norm(x, Tensor(np.ones(4)), 0.0 + 1e-12).data,
                               x.data / np.sqrt((x.data**2).mean(-1, keepdims=True) + 1e-12), rtol=1e-12)


t = Tensor(np.ones((2, 4), np.float32))
BAD = {
    "linear-x-not-a-Tensor": (TypeError, lambda: nn.linear(np.ones((2, 4)), Tensor(np.ones((3, 4))))),
    "linear-weight-not-a-Tensor": (TypeError, lambda: nn.linear(t, np.ones((3, 4)))),
    "linear-n_in-differs": (ValueError, lambda: nn.linear(t, Tensor(np.ones((3, 5))))),
    "linear-weight-1-d": (ValueError, lambda: nn.linear(t, Tensor(np.ones(4)))),
    "softmax-not-a-Tensor": (TypeError, lambda: nn.softmax(np.ones(3))),
    "silu-not-a-Tensor": (TypeError, lambda: nn.silu([1.0, 2.0])),
    "rms_norm-weight-wrong-size": (ValueError, lambda: nn.rms_norm(t, Tensor(np.ones(3)), 1e-5)),
    "rms_norm-eps-zero": (ValueError, lambda: nn.rms_norm(t, Tensor(np.ones(4)), 0.0)),
    "rms_norm-eps-negative": (ValueError, lambda: nn.rms_norm(t, Tensor(np.ones(4)), -1e-5)),
    "rms_norm-eps-nan": (ValueError, lambda: nn.rms_norm(t, Tensor(np.ones(4)), float("nan"))),
    "rms_norm-eps-bool": (ValueError, lambda: nn.rms_norm(t, Tensor(np.ones(4)), True)),
    "rms_norm-x-not-a-Tensor": (TypeError, lambda: nn.rms_norm(np.ones((2, 4)), Tensor(np.ones(4)), 1e-5)),
    "embedding-float-ids": (TypeError, lambda: nn.embedding(Tensor(np.ones((5, 2))), np.array([1.0]))),
    "embedding-bool-ids": (TypeError, lambda: nn.embedding(Tensor(np.ones((5, 2))), np.array([True]))),
    "embedding-id-too-large": (ValueError, lambda: nn.embedding(Tensor(np.ones((5, 2))), [0, 5])),
    "embedding-negative-id": (ValueError, lambda: nn.embedding(Tensor(np.ones((5, 2))), [-1])),
    "embedding-weight-1-d": (ValueError, lambda: nn.embedding(Tensor(np.ones(5)), [0])),
    "embedding-weight-not-a-Tensor": (TypeError, lambda: nn.embedding(np.ones((5, 2)), [0])),
}


@pytest.mark.parametrize("case", BAD)
def test_validation(case):
    error, call = BAD[case]
    with pytest.raises(error):
        call()
