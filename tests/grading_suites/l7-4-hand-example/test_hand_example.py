"""A weak L7.4 suite: two lines of the chapter's worked example and nothing
else.  It catches some mutants and misses many (tests/course/test_rope_scaling.py
grafts variants under it)."""

import numpy as np

from tinyllm.modern.rope_scaling import rope_parameters


def test_linear_and_yarn_hand_examples():
    inv_freq, _ = rope_parameters({"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}, 8)
    np.testing.assert_allclose(inv_freq, [0.25, 0.025, 0.0025, 0.00025], rtol=1e-6)
    inv_freq, s = rope_parameters({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                   "original_max_position_embeddings": 1024}, 8)
    np.testing.assert_allclose(inv_freq, [1.0, 0.075, 0.005, 0.00025], rtol=1e-6)
