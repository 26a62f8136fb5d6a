"""The reference Tensor (L0.1) keeps its graph only where a gradient can flow:
an inference forward frees each intermediate once the next op has used it,
which is what keeps Gemma 3 270M's forward near its weights and logits in
memory (bench/bench_llama.py's peak)."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from helpers.reference import reference_modules


def test_without_grad_a_result_keeps_no_intermediate_alive():
    (tensor,) = reference_modules("tinyllm.autograd.tensor")
    x = tensor.Tensor(np.ones(4))
    hidden = x * 2.0
    probe = weakref.ref(hidden)
    out = hidden + 1.0
    del hidden
    gc.collect()
    assert probe() is None, "a forward without requires_grad kept an intermediate alive"
    np.testing.assert_array_equal(out.data, np.full(4, 3.0))


def test_with_grad_the_graph_is_kept_and_backward_reaches_the_input():
    (tensor,) = reference_modules("tinyllm.autograd.tensor")
    x = tensor.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    hidden = x * x
    probe = weakref.ref(hidden)
    out = (hidden + 1.0).sum()
    del hidden
    gc.collect()
    assert probe() is not None, "the graph a backward needs was dropped"
    out.backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0])
