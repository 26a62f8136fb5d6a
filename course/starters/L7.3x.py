import numpy as np

from tinyllm.modern.rope_tables import RopeTables, rope_inv_freq
from tinyllm.ops.registry import backends, get_op


def test_position_zero_turns_nothing():
    # At position 0 every angle is 0: the tables hold cos 1 and sin 0, and
    # every backend of the op returns x unchanged, in x's dtype.
    cos, sin = RopeTables(rope_inv_freq(8, 10000.0), max_seq_len=4)(1)
    assert cos.tolist() == [[1.0] * 4] and sin.tolist() == [[0.0] * 4]
    x = np.random.default_rng(0).standard_normal((2, 3, 1, 8)).astype(np.float16)
    for backend in backends("rope"):
        out = get_op("rope", backend=backend).forward(x, np.array([0]))
        assert out.dtype == np.float16
        assert np.array_equal(out, x)


# Next: an oracle of your own.  Rotate each pair (x[i], x[i + D/2]) as the
# complex number x[i] + 1j*x[i + D/2] times exp(1j * p * inv_freq[i]) in
# float64, and compare every backend with it (float32 tolerance), on [S] and
# [B, S] positions, in each dtype, and check the float16 and bfloat16
# positions the op must refuse.  For the tables: slices of RopeTables, and
# axial grids worked out by hand (chapter, section 8).
