import math

import numpy as np

from tinyllm.maths.rotation import rotate_pairs


def test_quarter_turn_is_counter_clockwise():
    # (1, 0) rotated by pi/2 lands on (0, 1).
    a, b = rotate_pairs(1.0, 0.0, math.pi / 2)
    np.testing.assert_allclose([a, b], [0.0, 1.0], atol=1e-12)


# Next: compare with complex multiplication (a + ib) * exp(i angle), and check
# lengths, the inverse rotation and broadcasting.
