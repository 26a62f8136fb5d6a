import numpy as np

from tinyllm.autograd import nn
from tinyllm.autograd.tensor import Tensor


def test_softmax_of_equal_scores_is_uniform_and_ignores_masked_ones():
    x = Tensor(np.array([[0.0, 0.0, 0.0, -np.inf]], np.float32))
    y = nn.softmax(x)
    np.testing.assert_allclose(y.data, [[1 / 3, 1 / 3, 1 / 3, 0.0]], rtol=1e-6)
    assert y.dtype == np.float32


# Next: each op against its formula in numpy float64 (chapter sections 2 to 6),
# and each backward against central differences (section 7): linear, softmax
# along another axis, silu for large |x|, rms_norm, embedding with a repeated id.
