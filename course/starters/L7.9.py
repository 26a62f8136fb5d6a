import numpy as np

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.llama import mlp


def test_mlp_of_zero_is_zero():
    # silu(0) = 0, so SwiGLU maps 0 to 0 whatever its weights.
    rng = np.random.default_rng(0)
    gate, up, down = (Tensor(rng.standard_normal(shape)) for shape in ((6, 4), (6, 4), (4, 6)))
    out = mlp(Tensor(np.zeros((1, 2, 4))), gate, up, down)
    np.testing.assert_array_equal(out.data, np.zeros((1, 2, 4)))


# Next: a tiny Llama of your own in numpy float64 (chapter sections 2 to 6), and
# Llama's logits against it: tied and untied embeddings, a config with
# rope_scaling, a cache.
