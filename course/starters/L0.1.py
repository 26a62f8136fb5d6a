import numpy as np

from tinyllm.autograd.tensor import Tensor


def test_product_rule_by_hand():
    # loss = sum(x * y): d loss / dx = y and d loss / dy = x.
    x = Tensor(np.array([2.0, 3.0]), requires_grad=True)
    y = Tensor(np.array([5.0, 7.0]), requires_grad=True)
    (x * y).sum().backward()
    np.testing.assert_allclose(x.grad, [5.0, 7.0])
    np.testing.assert_allclose(y.grad, [2.0, 3.0])


# Next: compare every op's gradient with central differences, and check the
# dtype rules and the errors the contract lists.
