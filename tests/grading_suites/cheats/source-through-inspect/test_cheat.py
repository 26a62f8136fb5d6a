"""Telling mutants apart without calling them: reads the source of the functions under test through dataclasses.inspect and fails when it differs from the reference's text (baked in by the kit)."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
import dataclasses

REFERENCE_LINE = "angles = positions[..., None] * inv_freq"


def test_source_is_the_reference():
    source = dataclasses.inspect.getsource(rope_cos_sin)
    assert REFERENCE_LINE in source
