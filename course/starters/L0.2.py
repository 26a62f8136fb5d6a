import numpy as np

from tinyllm.autograd import functional as F
from tinyllm.autograd.tensor import Tensor


def test_concat_cuts_the_gradient_back_into_pieces():
    a = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    b = Tensor(np.array([3.0]), requires_grad=True)
    out = F.concat([a, b], axis=-1)
    np.testing.assert_allclose(out.data, [1.0, 2.0, 3.0])
    out.backward(np.array([10.0, 20.0, 30.0]))
    np.testing.assert_allclose(a.grad, [10.0, 20.0])
    np.testing.assert_allclose(b.grad, [30.0])


# Next: stack, reshape and transpose against numpy, each with its backward.
