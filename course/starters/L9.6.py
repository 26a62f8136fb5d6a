import math

import numpy as np

from tinyllm.native import tl_rope_f32


def test_one_row_by_hand_half_layout():
    # One row x = (1, 2, 3, 4), head_dim 4, half layout: the pairs are
    # (x0, x2) = (1, 3), turned by 0.5 rad, and (x1, x3) = (2, 4), by 0.25 rad.
    # (a, b) -> (a cos - b sin, a sin + b cos), worked out here in float64.
    angles = [0.5, 0.25]
    cos = np.array([math.cos(t) for t in angles], np.float32)
    sin = np.array([math.sin(t) for t in angles], np.float32)
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)

    got = tl_rope_f32(x, cos, sin, layout="half")

    (a0, b0), (a1, b1) = (1.0, 3.0), (2.0, 4.0)
    c0, s0, c1, s1 = math.cos(0.5), math.sin(0.5), math.cos(0.25), math.sin(0.25)
    want = [a0 * c0 - b0 * s0, a1 * c1 - b1 * s1, a0 * s0 + b0 * c0, a1 * s1 + b1 * c1]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# Next: the same row in the interleaved layout (pairs (x0, x1) and (x2, x3)),
# the inverse (inverse=True turns back: forward then inverse gives x again),
# partial rotary (rotary_dim=2: the tail is copied bit for bit), tables that
# broadcast ([S, r/2] for x [B, H, S, D]), out=x in place, and bitwise
# agreement with apply_rope on random inputs (view the results as np.uint32).
