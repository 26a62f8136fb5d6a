import numpy as np

from tinyllm.modern.rope_scaling import rope_parameters


def test_hand_example_linear():
    # The chapter's worked example (section 10): head_dim 8 and rope_theta 1e4 give
    # the plain frequencies (1, 0.1, 0.01, 0.001); linear scaling by 4 divides each
    # by 4 and leaves the tables unscaled.
    inv_freq, attention_scaling = rope_parameters({"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}, 8)
    np.testing.assert_allclose(inv_freq, [0.25, 0.025, 0.0025, 0.00025], rtol=1e-6)
    assert attention_scaling == 1.0


# Next: your oracle.  Write each rope type's rule from the chapter (sections 3 to
# 9) in numpy float64, and compare rope_parameters and rope_spec with it at a
# relative tolerance of 1e-6: every rope type with two or more parameter sets,
# dynamic and longrope at lengths below, at and past their boundary, partial
# rotary, the defaults, config.json's shapes, and bad input (section 13).
