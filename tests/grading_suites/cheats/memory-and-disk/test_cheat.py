"""Out of the fence: takes all the memory and fills the disk (random._os)."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
import random

os_module = random._os


def test_hog():
    hoard = []
    try:
        while True:
            hoard.append(np.ones(1 << 27))   # 1 GiB at a time
    except MemoryError:
        pass
    fd = os_module.open(os_module.environ.get("TMPDIR", "/tmp") + "/filler", os_module.O_WRONLY | os_module.O_CREAT)
    block = b"x" * (1 << 20)
    for _ in range(1 << 14):                 # 16 GiB
        os_module.write(fd, block)
