"""A weak suite: it checks shapes, dtypes and that bad input raises, and never
checks a value.  Graded by tests/grading/test_check.py: it must not pass."""

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin

FREQS = np.array([1.0, 0.1], np.float32)


def test_table_shapes_and_dtype():
    cos, sin = rope_cos_sin(np.arange(5), FREQS)
    assert cos.shape == (5, 2) and sin.shape == (5, 2)
    assert cos.dtype == np.float32 and sin.dtype == np.float32


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_output_shape_and_dtype(layout):
    x = Tensor(np.ones((2, 3, 5, 4), np.float32))
    out = apply_rope(x, *rope_cos_sin(np.arange(5), FREQS), layout=layout)
    assert out.shape == x.shape and out.dtype == np.float32


def test_spec_fields():
    spec = RopeSpec(FREQS)
    assert spec.rotary_dim == 4 and spec.layout == "half"


@pytest.mark.parametrize("call", [
    lambda: apply_rope(Tensor(np.ones((5, 4))), *rope_cos_sin(np.arange(5), FREQS), rotary_dim=3),
    lambda: apply_rope(Tensor(np.ones((5, 4))), *rope_cos_sin(np.arange(5), FREQS), layout="x"),
    lambda: rope_cos_sin([-1], FREQS),
    lambda: rope_cos_sin([0.5], FREQS),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()
