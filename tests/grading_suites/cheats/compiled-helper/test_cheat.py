"""Around the allow-list: a harmless helper.py beside a compiled helper extension, which is what Python would import."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
from helper import expected


def test_uses_the_helper():
    assert expected() == 1
