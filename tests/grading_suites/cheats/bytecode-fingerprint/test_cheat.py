"""Telling mutants apart without calling them: a fingerprint of apply_rope's bytecode through an aliased getattr, compared with the reference's (baked in by the kit)."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
g = getattr
REFERENCE_FINGERPRINT = "__REFERENCE_FINGERPRINT__"


def fingerprint(function):
    code = g(g(function, "__co" + "de__"), "co_co" + "de")
    return str(int(np.frombuffer(code, np.uint8).astype(np.int64).dot(np.arange(len(code)) % 251)))


def test_is_the_reference():
    assert fingerprint(apply_rope) == REFERENCE_FINGERPRINT
