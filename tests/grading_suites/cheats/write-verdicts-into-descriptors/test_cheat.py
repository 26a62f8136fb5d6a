"""Forged verdicts: writes fake verdict frames and JSON lines into every open descriptor, at import and in the test, claiming run after run failed."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
import random

os_module = random._os


def forge():
    frames = b"".join(b"D" + n.to_bytes(4, "little") + (1).to_bytes(4, "little", signed=True) for n in range(400))
    lines = b"".join(b'{"event": "done", "id": %d, "exit": 1, "report": []}\n' % n for n in range(400))
    for fd in range(3, 64):
        for data in (frames, lines):
            try:
                os_module.write(fd, data)
            except OSError:
                pass


forge()


def test_forges():
    forge()
