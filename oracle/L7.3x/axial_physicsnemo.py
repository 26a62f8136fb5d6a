"""Build fixtures/L7.3x/axial_physicsnemo.npz: golden RoPE tables and rotations
from NVIDIA physicsnemo 2.2.2's own functions and table providers, on torch
2.13.0 (CPU).

Run from anywhere:

    python oracle/L7.3x/axial_physicsnemo.py              # rewrites fixtures/L7.3x/axial_physicsnemo.npz
    python oracle/L7.3x/axial_physicsnemo.py --out DIR    # writes DIR/axial_physicsnemo.npz instead

It needs torch (the oracle extra: pip install -e '.[oracle]') and physicsnemo,
installed as .ci/run does it:

    python -m pip install --no-deps nvidia-physicsnemo==2.2.2
    python -m pip install warp-lang==1.19.0 s3fs==2026.9.0 jaxtyping==0.3.11 requests

--no-deps because physicsnemo's wheel requires torchvision>=0.25: pip would
pick the newest torchvision, which requires a newer torch and so replaces
torch 2.13.0; and the torchvision made for torch 2.13 (0.28.0) is built for
CUDA on PyPI and does not load against the CPU torch.  The packages after it
are what `import physicsnemo` and its RoPE module really need (warp-lang at the
top of the package, s3fs and requests in physicsnemo.core, jaxtyping in rope.py).

How physicsnemo is loaded: `import physicsnemo` (the real package and
physicsnemo.core.Module), then the file physicsnemo/nn/module/rope.py is run as
a module of its own.  `import physicsnemo.nn.module.rope` would first run
physicsnemo/nn/__init__.py, which imports every layer of the library, timm
among them, and timm imports torchvision, which fails on a CPU-only torch.  The
file's sha256 is recorded, so a different physicsnemo build is noticed.

Only tiny grids are built; nothing is downloaded. Each random input has its own
seed (SEEDS). Two runs give byte-identical files. physicsnemo's tables have one
column per channel, each pair's value written twice (repeat_interleave(2));
the script asserts the two copies are equal and stores one column per pair,
[..., 0::2], the shape axial_rope_cos_sin returns.  Its rotation pairs adjacent
channels (2k, 2k+1): tinyllm's layout="interleaved".

Keys (h, w: the grid; D: head_dim):

  axial_a/grid            i64[2]          (5, 7)
  axial_a/head_dim        i64[]           16
  axial_a/theta           f64[]           10000.0
  axial_a/cos, axial_a/sin  f32[5, 7, 8]  build_axial_rope_cos_sin_2d(5, 7, 16, theta), one column per pair
  axial_a/x               f32[2, 2, 5, 7, 16]  random x, [B, heads, h, w, D]
  axial_a/out             f32[2, 2, 5, 7, 16]  apply_rotary_pos_emb(x, cos, sin) with the full tables
  axial_b/grid            i64[2]          (12, 20)
  axial_b/head_dim        i64[]           64
  axial_b/theta           f64[]           100.0
  axial_b/cos, axial_b/sin  f32[12, 20, 32]  as axial_a
  axial_b/x, axial_b/out  f32[1, 2, 12, 20, 64]  as axial_a
  provider2d/grid         i64[2]          (5, 7): RotaryEmbedding2DTables(head_dim=16, latent_hw=(5, 7))
  provider2d/new_grid     i64[2]          (3, 9): then forward(latent_hw=(3, 9)), which rebuilds
  provider2d/cos, provider2d/sin  f32[3, 9, 8]  the rebuilt tables (forward() returns them afterwards too)
  rope1d/head_dim         i64[]           32
  rope1d/max_seq_len      i64[]           64
  rope1d/theta            f64[]           10000.0
  rope1d/cos, rope1d/sin  f32[64, 16]     RotaryEmbedding1DTables(32, 64, theta).forward(), one column per pair
  rope1d/seq_len          i64[]           40: forward(seq_len=40) returns the first 40 rows
  rope1d/x                f32[2, 3, 40, 32]  random x, [B, heads, S, D]
  rope1d/out              f32[2, 3, 40, 32]  apply_rotary_pos_emb(x, *forward(seq_len=40))
  __provenance__          0-d str         JSON: command, versions, environment, the loaded file and
                                          its sha256, configs, seeds, the errors physicsnemo raises
                                          (head_dim % 4, seq_len > max_seq_len), and for every other
                                          key its shape, dtype and sha256
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

import numpy as np
import torch

# Run as a file, not as a package: put oracle/, this script's parent folder, on
# sys.path for the plumbing every oracle shares (oracle/fixture_file.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/L7.3x/axial_physicsnemo.npz",
                                   generator="oracle/L7.3x/axial_physicsnemo.py")
PHYSICSNEMO = "2.2.2"  # .ci/run installs this version; tests/course/test_production_rope.py checks they agree
INSTALL = (
    f"python -m pip install --no-deps nvidia-physicsnemo=={PHYSICSNEMO} && "
    "python -m pip install warp-lang==1.19.0 s3fs==2026.9.0 jaxtyping==0.3.11 requests"
)

SEEDS = fixture_file.Seeds({"axial_a/x": 7311, "axial_b/x": 7312, "rope1d/x": 7313})

AXIAL = {  # case -> (grid (h, w), head_dim, theta)
    "axial_a": ((5, 7), 16, 10000.0),
    "axial_b": ((12, 20), 64, 100.0),
}
AXIAL_BATCH = {"axial_a": 2, "axial_b": 1}  # random x is [B, 2 heads, h, w, D]: small, since random bytes do not compress
PROVIDER2D = {"head_dim": 16, "latent_hw": (5, 7), "new_latent_hw": (3, 9), "theta": 10000.0}
ROPE1D = {"head_dim": 32, "max_seq_len": 64, "theta": 10000.0, "seq_len": 40}


# ---- loading physicsnemo ---------------------------------------------------------


def load_physicsnemo_rope():
    """(physicsnemo package, its nn/module/rope.py as a module, that file's path)."""
    try:
        import physicsnemo
    except ImportError as error:
        sys.exit(f"{FIXTURE.generator}: cannot import physicsnemo ({error}).\nInstall it as CI does:\n    {INSTALL}")
    path = Path(physicsnemo.__file__).parent / "nn" / "module" / "rope.py"
    spec = importlib.util.spec_from_file_location("physicsnemo_nn_module_rope", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return physicsnemo, module, path


# ---- helpers ----------------------------------------------------------------------


def per_pair(table: torch.Tensor, what: str) -> np.ndarray:
    """physicsnemo's [..., D] table (each pair's value twice) -> [..., D/2] float32."""
    assert table.dtype == torch.float32, f"{what}: dtype {table.dtype}, expected float32"
    assert torch.equal(table[..., 0::2], table[..., 1::2]), (
        f"{what}: channels 2k and 2k+1 differ; physicsnemo's layout changed"
    )
    return table[..., 0::2].numpy().copy()


def error_of(call) -> str:
    """'ValueError: message' for a call that must raise."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - recorded as it is
        return f"{type(error).__name__}: {error}"
    raise AssertionError("expected an error, the call returned")


# ---- the sections: each returns (arrays, provenance record) -----------------------


def axial_section(rope, case: str):
    (h, w), head_dim, theta = AXIAL[case]
    cos, sin = rope.build_axial_rope_cos_sin_2d(h, w, head_dim, theta=theta)  # each (h, w, D)
    x = SEEDS.normal(f"{case}/x", (AXIAL_BATCH[case], 2, h, w, head_dim))  # [B, heads, h, w, D]
    out = rope.apply_rotary_pos_emb(torch.from_numpy(x), cos, sin)  # tables broadcast over [B, heads]
    arrays = {
        f"{case}/grid": np.array([h, w], dtype=np.int64),
        f"{case}/head_dim": np.array(head_dim, dtype=np.int64),
        f"{case}/theta": np.array(theta, dtype=np.float64),
        f"{case}/cos": per_pair(cos, f"{case} cos"),
        f"{case}/sin": per_pair(sin, f"{case} sin"),
        f"{case}/x": x,
        f"{case}/out": out.numpy().copy(),
    }
    record = {"function": "build_axial_rope_cos_sin_2d + apply_rotary_pos_emb",
              "h": h, "w": w, "head_dim": head_dim, "theta": theta}
    return arrays, record


def provider2d_section(rope):
    cfg = PROVIDER2D
    provider = rope.RotaryEmbedding2DTables(head_dim=cfg["head_dim"], latent_hw=cfg["latent_hw"], theta=cfg["theta"])
    first_cos, first_sin = provider()
    built = rope.build_axial_rope_cos_sin_2d(*cfg["latent_hw"], cfg["head_dim"], theta=cfg["theta"])
    assert torch.equal(first_cos, built[0]) and torch.equal(first_sin, built[1]), "provider != builder"
    cos, sin = provider(latent_hw=cfg["new_latent_hw"])  # a new grid: rebuilt
    again_cos, _ = provider()
    assert again_cos.shape[:2] == cfg["new_latent_hw"] and torch.equal(again_cos, cos), "the rebuild is kept"
    arrays = {
        "provider2d/grid": np.array(cfg["latent_hw"], dtype=np.int64),
        "provider2d/new_grid": np.array(cfg["new_latent_hw"], dtype=np.int64),
        "provider2d/cos": per_pair(cos, "provider2d cos"),
        "provider2d/sin": per_pair(sin, "provider2d sin"),
    }
    record = {"class": "RotaryEmbedding2DTables", **cfg,
              "behaviour": "forward() equals build_axial_rope_cos_sin_2d; forward(latent_hw=new) rebuilds, "
                           "and forward() then returns the rebuilt tables"}
    return arrays, record


def rope1d_section(rope):
    cfg = ROPE1D
    provider = rope.RotaryEmbedding1DTables(head_dim=cfg["head_dim"], max_seq_len=cfg["max_seq_len"],
                                            theta=cfg["theta"])
    cos, sin = provider()  # (max_seq_len, D)
    cut_cos, cut_sin = provider(seq_len=cfg["seq_len"])
    assert torch.equal(cut_cos, cos[: cfg["seq_len"]]) and torch.equal(cut_sin, sin[: cfg["seq_len"]])
    x = SEEDS.normal("rope1d/x", (2, 3, cfg["seq_len"], cfg["head_dim"]))
    out = rope.apply_rotary_pos_emb(torch.from_numpy(x), cut_cos, cut_sin)
    arrays = {
        "rope1d/head_dim": np.array(cfg["head_dim"], dtype=np.int64),
        "rope1d/max_seq_len": np.array(cfg["max_seq_len"], dtype=np.int64),
        "rope1d/theta": np.array(cfg["theta"], dtype=np.float64),
        "rope1d/cos": per_pair(cos, "rope1d cos"),
        "rope1d/sin": per_pair(sin, "rope1d sin"),
        "rope1d/seq_len": np.array(cfg["seq_len"], dtype=np.int64),
        "rope1d/x": x,
        "rope1d/out": out.numpy().copy(),
    }
    record = {"class": "RotaryEmbedding1DTables + apply_rotary_pos_emb", **cfg}
    return arrays, record


def errors(rope) -> dict[str, str]:
    """What physicsnemo raises where the course's tables must raise too."""
    provider = rope.RotaryEmbedding1DTables(head_dim=32, max_seq_len=64)
    return {
        "build_axial_rope_cos_sin_2d(4, 4, head_dim=18)": error_of(lambda: rope.build_axial_rope_cos_sin_2d(4, 4, 18)),
        "RotaryEmbedding2DTables(head_dim=18, latent_hw=(4, 4))":
            error_of(lambda: rope.RotaryEmbedding2DTables(head_dim=18, latent_hw=(4, 4))),
        "RotaryEmbedding1DTables(32, max_seq_len=64)(seq_len=65)": error_of(lambda: provider(seq_len=65)),
    }


# ---- provenance and writing --------------------------------------------------------


def build() -> dict[str, np.ndarray]:
    """Every array, plus __provenance__ describing them."""
    physicsnemo, rope, rope_path = load_physicsnemo_rope()
    fixture_file.check_versions(
        FIXTURE,
        installed={"nvidia-physicsnemo": physicsnemo.__version__, "torch": torch.__version__},
        pinned={"nvidia-physicsnemo": PHYSICSNEMO, **fixture_file.oracle_pins("torch")},
        install=f"{fixture_file.ORACLE_INSTALL} && {INSTALL}",
    )
    arrays, configs = {}, {}
    with torch.no_grad():
        for case in AXIAL:
            section_arrays, configs[case] = axial_section(rope, case)
            arrays.update(section_arrays)
        for name, section in (("provider2d", provider2d_section), ("rope1d", rope1d_section)):
            section_arrays, configs[name] = section(rope)
            arrays.update(section_arrays)
        raised = errors(rope)
    return fixture_file.with_provenance(arrays, {
        **FIXTURE.header(),
        "install": INSTALL,
        "versions": {"nvidia-physicsnemo": physicsnemo.__version__, "torch": torch.__version__,
                     "warp-lang": importlib.metadata.version("warp-lang")},
        "source": {
            "file": "physicsnemo/nn/module/rope.py",
            "sha256": hashlib.sha256(rope_path.read_bytes()).hexdigest(),
            "loaded_as": "the file run as a module of its own after `import physicsnemo`; physicsnemo/nn/__init__.py "
                         "is not run (it imports timm, which imports torchvision, CUDA-only on PyPI)",
        },
        # Recorded for the record; the arrays should not depend on these.
        "environment": fixture_file.environment(),
        "random": SEEDS.record(),
        "configs": configs,
        "errors": raised,
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
