"""Fixtures shared by the course tests: golden data and a gradient oracle."""

import sys
from pathlib import Path

import numpy as np
import pytest

COURSE_TESTS = Path(__file__).resolve().parent
REPO = COURSE_TESTS.parents[1]
sys.path.insert(0, str(COURSE_TESTS))  # for golden.py, whatever pytest's import mode


@pytest.fixture(scope="session")
def rope_hf():
    """The L7.3 golden arrays from Hugging Face (fixtures/L7.3/rope_hf.npz)."""
    from golden import load_fixture

    return load_fixture(REPO / "fixtures" / "L7.3" / "rope_hf.npz")


@pytest.fixture(scope="session")
def rope_scaling_hf():
    """The L7.4 golden values from Hugging Face's rope initialisation (fixtures/L7.4/rope_scaling_hf.npz)."""
    from golden import load_fixture

    return load_fixture(REPO / "fixtures" / "L7.4" / "rope_scaling_hf.npz")


@pytest.fixture(scope="session")
def axial_physicsnemo():
    """The L7.3x golden tables from NVIDIA physicsnemo 2.2.2 (fixtures/L7.3x/axial_physicsnemo.npz)."""
    from golden import load_fixture

    return load_fixture(REPO / "fixtures" / "L7.3x" / "axial_physicsnemo.npz")


@pytest.fixture(scope="session")
def mrope_hf():
    """The L7.3x golden M-RoPE values from Hugging Face's Qwen2-VL (fixtures/L7.3x/mrope_hf.npz)."""
    from golden import load_fixture

    return load_fixture(REPO / "fixtures" / "L7.3x" / "mrope_hf.npz")


@pytest.fixture(scope="session")
def nn_torch():
    """The L0.3 golden values from torch (fixtures/L0.3/nn_torch.npz)."""
    from golden import load_fixture

    return load_fixture(REPO / "fixtures" / "L0.3" / "nn_torch.npz")


@pytest.fixture(scope="session")
def attention_hf():
    """The L7.5 golden values from Hugging Face's LlamaAttention (fixtures/L7.5/attention_hf.npz)."""
    from golden import load_fixture

    return load_fixture(REPO / "fixtures" / "L7.5" / "attention_hf.npz")


@pytest.fixture(scope="session")
def llama_hf():
    """The L7.9 and L8.2 golden values from Hugging Face's LlamaForCausalLM (fixtures/L7.9/llama_hf.npz)."""
    from golden import load_fixture

    return load_fixture(REPO / "fixtures" / "L7.9" / "llama_hf.npz")


@pytest.fixture(scope="session")
def central_difference():
    """central_difference(loss, x0, eps=1e-6) -> d loss / d x at x0, by
    (loss(x + eps e_i) - loss(x - eps e_i)) / (2 eps) for every entry i, in
    float64.  loss takes a float64 array of x0's shape and returns a float."""

    def gradient(loss, x0, eps=1e-6):
        x0 = np.asarray(x0, dtype=np.float64)
        grad = np.zeros_like(x0)
        for i in np.ndindex(x0.shape):
            step = np.zeros_like(x0)
            step[i] = eps
            grad[i] = (loss(x0 + step) - loss(x0 - step)) / (2 * eps)
        return grad

    return gradient


@pytest.fixture(scope="session")
def sliding_window_hf():
    """The L7.7 golden values from Hugging Face's Gemma 3 attention (fixtures/L7.7/sliding_window_hf.npz)."""
    from golden import load_fixture

    return load_fixture(REPO / "fixtures" / "L7.7" / "sliding_window_hf.npz")


@pytest.fixture(scope="session")
def gemma3_hf():
    """The L7.10 golden values from Hugging Face's Gemma3ForCausalLM (fixtures/L7.10/gemma3_hf.npz)."""
    from golden import load_fixture

    return load_fixture(REPO / "fixtures" / "L7.10" / "gemma3_hf.npz")
