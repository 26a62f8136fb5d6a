"""Guesses its oracle (tests/end_to_end/test_channels.py): sixteen tests, each asserting
that one bit of a digest of what rope_cos_sin and apply_rope return is 0.
Each guess is right for about half the bits; were every test that fails on a
correct implementation simply left out, the right guesses would stay and
catch every mutant whose digest differs in one of them, with no oracle at
all."""

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import apply_rope, rope_cos_sin

LADDER = np.array([1.0, 0.1, 0.01, 0.001], np.float32)


def digest() -> int:
    x = np.random.default_rng(3).standard_normal((2, 5, 8))
    parts = []
    for layout in ("half", "interleaved"):
        for rotary_dim in (None, 4):
            cos, sin = rope_cos_sin(np.arange(5), LADDER[: (rotary_dim or 8) // 2], 1.25)
            out = apply_rope(Tensor(x), cos, sin, layout, rotary_dim).data
            parts.append(f"{float(((out + 0.5) ** 2 * (1 + np.arange(out.size) % 7).reshape(out.shape)).sum()):.3g}")
    value = 2166136261
    for byte in repr(parts).encode():
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return value


@pytest.mark.parametrize("bit", range(16))
def test_guess(bit):
    assert (digest() >> bit) & 1 == 0
