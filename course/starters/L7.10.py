import numpy as np

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.gemma3 import gemma_rms_norm


def test_a_zero_weight_norms_to_unit_rms():
    # Gemma stores w, and the norm multiplies by 1 + w: with w = 0 each row comes out
    # with a root mean square of 1 (up to eps).
    x = Tensor(np.array([[3.0, -4.0, 0.0, 5.0]]))
    out = gemma_rms_norm(x, Tensor(np.zeros(4)), 1e-6)
    np.testing.assert_allclose(np.sqrt((out.data**2).mean()), 1.0, atol=1e-6)


# Next: a tiny Gemma 3 of your own in numpy float64 (chapter sections 2 to 7):
# the scaled embedding, the four norms, QK-norm, GeGLU, and a sliding layer
# beside a full one, against Gemma3's logits, with and without a cache.
