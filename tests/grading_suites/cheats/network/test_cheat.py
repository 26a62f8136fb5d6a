"""Out of the fence: reaches the network to fetch an oracle (socket through typing.sys)."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
import typing


def test_fetch():
    socket = typing.sys.modules.get("socket")
    if socket is None:
        socket = typing.sys.modules["importlib"].import_module("socket")
    connection = socket.create_connection(("pypi.org", 443), timeout=3)
    connection.close()
