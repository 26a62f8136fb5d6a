import numpy as np

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec
from tinyllm.modern.sliding_window import sliding_attention


def test_a_token_beyond_the_window_is_not_seen():
    # One head of two entries (chapter section 10): with window 2, token 2 sees keys 1 and 2 only,
    # whose scores are equal, so its output is the mean of v1 and v2.
    x = Tensor(np.array([[[[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]]]))
    out, (k, v) = sliding_attention(x, x, x, RopeSpec(np.array([np.pi / 2])), np.arange(3), 2)
    np.testing.assert_allclose(out.data[0, 2], [0.5, 0.5], atol=1e-6)
    assert k.shape == v.shape == (1, 1, 1, 2)  # the cache keeps window - 1 keys


# Next: your oracle (section 13): the chapter's rules in numpy float64, one query and one
# key at a time, RoPE as complex multiplication.  Compare with windows below, at and above
# the sequence, grouped heads, positions that do not start at 0, a cache, every RopeSpec
# field, the scale, gradients, layer_settings, and bad input.
