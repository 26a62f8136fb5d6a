"""Cross-run state: a thread started at import time (threading through typing.sys) keeps the first run's output in the collected process."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
import typing

threading = typing.sys.modules.get("threading") or typing.sys.modules["importlib"].import_module("threading")
VOTES = {}
keeper = threading.Thread(target=typing.sys.modules["time"].sleep, args=(3600,), daemon=True)
keeper.start()


def test_matches_the_first():
    cos, _ = rope_cos_sin(np.arange(3), np.array([1.0], np.float32))
    VOTES.setdefault("first", cos.tobytes())
    assert VOTES["first"] == cos.tobytes()
