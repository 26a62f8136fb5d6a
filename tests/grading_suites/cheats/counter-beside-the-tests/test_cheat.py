"""Telling mutants apart without calling them: counts runs in a file beside the test file (the kit's copy of the folder)."""

import numpy as np
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec, apply_rope, rope_cos_sin
def test_first_runs_only(request):
    counter = request.path.parent / "ol-run-counter"
    count = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(count))
    assert count <= 2
