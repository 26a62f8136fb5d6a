"""Out of the fence: double-forks setsid grandchildren that should outlive the check."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
import random

os_module = random._os


def test_escape():
    if os_module.fork() == 0:
        os_module.setsid()
        if os_module.fork() == 0:
            os_module.execvp("sleep", ["sleep", "31417"])
        os_module._exit(0)
    assert True
