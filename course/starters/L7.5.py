import numpy as np

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.attention import attention
from tinyllm.modern.rope import RopeSpec


def test_the_first_token_sees_only_itself():
    # One head of two entries, identity projections: token 0 can attend to no one
    # but itself, so its output is its own value (chapter section 10).
    eye = Tensor(np.eye(2))
    x = Tensor(np.array([[[1.0, 0.0], [0.0, 1.0]]]))
    out, (k, v) = attention(x, eye, eye, eye, eye, RopeSpec(np.array([np.pi / 2])), np.array([0, 1]), 1, 1)
    np.testing.assert_allclose(out.data[0, 0], [1.0, 0.0], atol=1e-6)
    assert k.shape == v.shape == (1, 1, 2, 2)


# Next: your oracle (section 13): the chapter's formulas in numpy float64, one
# head and one query at a time, RoPE as complex multiplication.  Compare with
# grouped heads, positions that do not start at 0, a cache, every RopeSpec
# field, gradients, and bad input.
