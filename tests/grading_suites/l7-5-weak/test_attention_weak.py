"""A weak L7.5 suite, honest but narrow: multi-head attention only (as many
key/value heads as query heads), positions from 0, no cache, and a loose
tolerance.  It passes on correct code and catches much, but it can see
neither the key/value heads mapped by modulo (pitfall a04) nor keys rotated
by their index in the cache (a05), so `ol check` must fail it
(tests/end_to_end/test_calibration.py)."""

import numpy as np

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.attention import attention
from tinyllm.modern.rope import RopeSpec


def test_output_is_a_weighted_mix_of_values():
    rng = np.random.default_rng(0)
    weights = [Tensor(rng.normal(size=s)) for s in ((8, 8), (8, 8), (8, 8), (8, 8))]
    x = rng.normal(size=(1, 3, 8))
    out, (k, v) = attention(Tensor(x), *weights, RopeSpec(np.array([1.0, 0.1])), np.arange(3), 2, 2)
    assert out.shape == (1, 3, 8) and k.shape == v.shape == (1, 2, 3, 4)
    np.testing.assert_allclose(v.data, (x @ weights[2].data.T).reshape(1, 3, 2, 4).transpose(0, 2, 1, 3), atol=1e-3)


def test_first_token_sees_only_itself():
    eye = Tensor(np.eye(2))
    out, _ = attention(Tensor(np.array([[[1.0, 0.0], [0.0, 1.0]]])), eye, eye, eye, eye,
                       RopeSpec(np.array([np.pi / 2])), np.arange(2), 1, 1)
    np.testing.assert_allclose(out.data[0], [[1.0, 0.0], [0.1956, 0.8044]], atol=1e-3)
