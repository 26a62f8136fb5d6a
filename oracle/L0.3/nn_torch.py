"""Build fixtures/L0.3/nn_torch.npz: golden outputs and gradients of the five
ops of L0.3 from torch 2.13.0 (CPU) and Hugging Face transformers 5.19.0:
F.linear, F.softmax, F.silu, transformers' LlamaRMSNorm and F.embedding.

Run from anywhere (needs the oracle extra: pip install -e '.[oracle]'):

    python oracle/L0.3/nn_torch.py              # rewrites fixtures/L0.3/nn_torch.npz
    python oracle/L0.3/nn_torch.py --out DIR    # writes DIR/nn_torch.npz instead

Forwards in float32, as a model runs them; gradients from torch's autograd in
float64 on the same inputs widened (backward(g) with a random g), so they are
the exact derivative to float64 rounding (for RMSNorm, of LlamaRMSNorm's
formula: the module itself computes in float32 whatever its input).  One thread; two runs give
byte-identical files.

Keys (OP is linear, softmax, silu, rms_norm or embedding):

  OP/x, OP/out        f32[...]   input and float32 output (embedding: OP/ids i64 and OP/weight)
  OP/g                f64[...]   the upstream gradient of the backward
  OP/dx               f64[...]   d(sum(out * g))/dx in float64 (and OP/dweight for linear,
                                 rms_norm and embedding)
  linear/weight       f32[5, 8]           rms_norm/weight  f32[16]   rms_norm/eps  f64[]
  softmax/axis        i64[]      the axis softmax runs along (one case each of the last and the first)
  softmax0/...        the same keys for axis 0
  __provenance__      0-d str    JSON: generator, command, versions, environment, seeds, and
                                 every key's shape, dtype and sha256
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers.models.llama.modeling_llama import LlamaRMSNorm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/L0.3/nn_torch.npz", generator="oracle/L0.3/nn_torch.py")
SEEDS = fixture_file.Seeds({name: 300 + i for i, name in enumerate((
    "linear/x", "linear/weight", "linear/g", "softmax/x", "softmax/g", "softmax0/x", "softmax0/g",
    "silu/x", "silu/g", "rms_norm/x", "rms_norm/weight", "rms_norm/g", "embedding/weight", "embedding/g"))})
EPS = 1e-5


def grads(function, inputs: dict[str, np.ndarray], g: np.ndarray) -> dict[str, np.ndarray]:
    """d(sum(function(**inputs) * g)) / d(each input), by torch in float64."""
    leaves = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in inputs.items()}
    function(**leaves).backward(torch.from_numpy(g))
    return {name: leaf.grad.numpy().copy() for name, leaf in leaves.items()}


def build() -> dict[str, np.ndarray]:
    fixture_file.check_versions(FIXTURE, {"torch": torch.__version__, "transformers": transformers.__version__})
    a = {}
    f64 = lambda key, shape: SEEDS.normal(key, shape).astype(np.float64)  # noqa: E731

    # linear: x [2, 3, 8] @ weight [5, 8]^T
    x, w = SEEDS.normal("linear/x", (2, 3, 8)), SEEDS.normal("linear/weight", (5, 8))
    a["linear/x"], a["linear/weight"], a["linear/g"] = x, w, f64("linear/g", (2, 3, 5))
    a["linear/out"] = F.linear(torch.from_numpy(x), torch.from_numpy(w)).numpy().copy()
    d = grads(lambda x, w: F.linear(x, w), {"x": x, "w": w}, a["linear/g"])
    a["linear/dx"], a["linear/dweight"] = d["x"], d["w"]

    # softmax along the last axis (a row with -inf entries, a row of large numbers) and along axis 0
    x = SEEDS.normal("softmax/x", (4, 7)) * np.float32(3)
    x[1, 4:] = -np.inf          # masked: weight 0
    x[2] += np.float32(1000)    # exp(x) alone would overflow
    a["softmax/x"], a["softmax/axis"], a["softmax/g"] = x, np.array(-1, np.int64), f64("softmax/g", (4, 7))
    a["softmax/out"] = F.softmax(torch.from_numpy(x), dim=-1).numpy().copy()
    finite = np.where(np.isfinite(x), x.astype(np.float64), -1e300)  # float64 -inf stand-in with a finite gradient
    a["softmax/dx"] = grads(lambda x: F.softmax(x, dim=-1), {"x": finite}, a["softmax/g"])["x"]
    x0 = SEEDS.normal("softmax0/x", (5, 3))
    a["softmax0/x"], a["softmax0/axis"], a["softmax0/g"] = x0, np.array(0, np.int64), f64("softmax0/g", (5, 3))
    a["softmax0/out"] = F.softmax(torch.from_numpy(x0), dim=0).numpy().copy()
    a["softmax0/dx"] = grads(lambda x: F.softmax(x, dim=0), {"x": x0}, a["softmax0/g"])["x"]

    # silu, with large negative and positive entries
    x = np.concatenate([SEEDS.normal("silu/x", (60,)) * np.float32(4),
                        np.array([-200.0, -90.0, 90.0, 200.0], np.float32)])
    a["silu/x"], a["silu/g"] = x, f64("silu/g", (64,))
    a["silu/out"] = F.silu(torch.from_numpy(x)).numpy().copy()
    a["silu/dx"] = grads(F.silu, {"input": x}, a["silu/g"])["input"]

    # rms_norm: transformers' LlamaRMSNorm over the last axis
    x, w = SEEDS.normal("rms_norm/x", (2, 3, 16)) * np.float32(2), SEEDS.normal("rms_norm/weight", (16,))
    a["rms_norm/x"], a["rms_norm/weight"], a["rms_norm/eps"] = x, w, np.array(EPS, np.float64)
    a["rms_norm/g"] = f64("rms_norm/g", (2, 3, 16))
    norm = LlamaRMSNorm(16, eps=EPS)
    norm.weight.data = torch.from_numpy(w)
    a["rms_norm/out"] = norm(torch.from_numpy(x)).detach().numpy().copy()

    def rms_norm64(x, w):  # LlamaRMSNorm's formula; the module itself computes in float32 whatever x is
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS))

    d = grads(rms_norm64, {"x": x, "w": w}, a["rms_norm/g"])
    a["rms_norm/dx"], a["rms_norm/dweight"] = d["x"], d["w"]

    # embedding: ids [2, 4] with a repeated id, into weight [10, 6]
    ids = np.array([[1, 3, 3, 9], [0, 9, 3, 5]], np.int64)
    weight = SEEDS.normal("embedding/weight", (10, 6))
    a["embedding/ids"], a["embedding/weight"], a["embedding/g"] = ids, weight, f64("embedding/g", (2, 4, 6))
    a["embedding/out"] = F.embedding(torch.from_numpy(ids), torch.from_numpy(weight)).numpy().copy()
    a["embedding/dweight"] = grads(lambda w: F.embedding(torch.from_numpy(ids), w), {"w": weight},
                                   a["embedding/g"])["w"]

    return fixture_file.with_provenance(a, {
        **FIXTURE.header(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "environment": fixture_file.environment(),
        "random": SEEDS.record(),
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
