import numpy as np

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import apply_rope, rope_cos_sin


def test_hand_example_half_layout():
    # The chapter's worked example (section 10): r = 4, inv_freq = (1, 0.01),
    # position 1, x = (1, 0, 0, 1).  Half layout: the pairs are (x0, x2) and
    # (x1, x3), rotated by the angles 1 and 0.01.
    cos, sin = rope_cos_sin(1, np.array([1.0, 0.01]))
    x = Tensor(np.array([1.0, 0.0, 0.0, 1.0], dtype=np.float32))
    got = apply_rope(x, cos, sin, layout="half")
    np.testing.assert_allclose(got.data, [0.540302, -0.010000, 0.841471, 0.999950], atol=1e-6)


# Next: your oracle.  Build each pair as a complex number a + ib in numpy
# float64 (by the layout's rule), multiply by exp(1j * p * theta), split it
# back, and compare with apply_rope: both layouts, partial rotary, scaling,
# large positions, the gradient (the inverse rotation), and bad input.
