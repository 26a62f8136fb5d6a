"""Cross-run state: calls the implementation at import time, hoping it is the reference then, and compares every run with what it saw."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
BASELINE = rope_cos_sin(np.arange(5), np.array([1.0, 0.1], np.float32))


def test_matches_the_baseline():
    for got, want in zip(rope_cos_sin(np.arange(5), np.array([1.0, 0.1], np.float32)), BASELINE):
        np.testing.assert_array_equal(got, want)
