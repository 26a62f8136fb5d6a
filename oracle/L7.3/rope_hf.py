"""Build fixtures/L7.3/rope_hf.npz: golden RoPE values from Hugging Face
transformers 5.19.0 on torch 2.13.0 (CPU), and from Meta's complex-number form.

Run from anywhere (needs the oracle extra: pip install -e '.[oracle]'):

    python oracle/L7.3/rope_hf.py              # rewrites fixtures/L7.3/rope_hf.npz
    python oracle/L7.3/rope_hf.py --out DIR    # writes DIR/rope_hf.npz instead

Only tiny local configs are built; nothing is downloaded. Every random input
has its own numpy Generator and seed (SEEDS below). Two runs on one machine
give byte-identical files. The course tests read the file through
course/tests/golden.py, which checks it against the provenance stored inside.

HF's rotary modules return tables cat(freqs, freqs) of width r; the script
asserts both halves are equal and stores only [..., :r/2], so every table key
below is "half width" (one column per pair, as rope_cos_sin returns).

Keys (P: number of table positions; shapes as stored):

  llama/inv_freq          f32[32]        LlamaRotaryEmbedding(head_dim 64, theta 1e4).inv_freq
  llama/positions         i64[P]         0..4095, then 4096 .. 65535 (LLAMA_POSITIONS)
  llama/cos, llama/sin    f32[P, 32]     its forward at llama/positions
  yarn/inv_freq           f32[32]        LlamaRotaryEmbedding, rope_type yarn, factor 4,
                                         original_max_position_embeddings 4096, max 16384
  yarn/attention_scaling  f64[]          its attention_scaling (0.1 ln 4 + 1)
  yarn/positions          i64[P]         same positions as llama (YaRN has no dynamic update,
                                         so positions past 16384 use the same inv_freq)
  yarn/cos, yarn/sin      f32[P, 32]     its forward: cos and sin already times attention_scaling
  apply/positions         i64[2, 5]      per-row position ids; rows differ, row 1 has 65535
  apply/q, apply/k        f32[2, 3, 5, 64]  random q and k, [B, H, S, D]
  apply/cos, apply/sin    f32[2, 5, 32]  the llama module's per-row tables at apply/positions
  apply/q_out, apply/k_out  f32[2, 3, 5, 64]  llama apply_rotary_pos_emb(q, k, cos, sin,
                                         unsqueeze_dim=1)
  neox/inv_freq           f32[4]         GPTNeoXRotaryEmbedding, head_dim 16,
                                         partial_rotary_factor 0.5, theta 1e4
  neox/rotary_dim         i64[]          8: entries 0..7 rotate, 8..15 pass through
  neox/positions          i64[2, 5]      per-row position ids
  neox/cos, neox/sin      f32[2, 5, 4]   its per-row tables
  neox/q                  f32[2, 3, 5, 16]  random q, [B, H, S, D]
  neox/q_out              f32[2, 3, 5, 16]  gpt_neox apply_rotary_pos_emb (partial rotary)
  qwen3/inv_freq          f32[64]        Qwen3RotaryEmbedding(head_dim 128, theta 1e6).inv_freq
  qwen3/positions         i64[P]         0..1023, then 1024 .. 40959 (QWEN3_POSITIONS)
  qwen3/cos, qwen3/sin    f32[P, 64]     its forward at qwen3/positions
  qwen3/apply_positions   i64[2, 6]      per-row position ids; row 1 ends at 40959
  qwen3/apply_cos, qwen3/apply_sin  f32[2, 6, 64]  its per-row tables at apply_positions
  qwen3/q                 f32[2, 4, 6, 128]  random q: 4 query heads
  qwen3/k                 f32[2, 1, 6, 128]  random k: 1 key/value head (GQA)
  qwen3/q_out, qwen3/k_out  qwen3 apply_rotary_pos_emb(q, k, apply_cos, apply_sin,
                                         unsqueeze_dim=1); k's one head broadcasts
  meta/inv_freq           f32[32]        Meta's precompute_freqs_cis frequencies (dim 64, theta 1e4)
  meta/positions          i64[8]         start_pos 65528 .. 65535, one contiguous run
  meta/x                  f32[2, 8, 3, 64]  random x in Meta's layout [B, S, H, D]
  meta/out                f32[2, 8, 3, 64]  Meta's apply_rotary_emb: interleaved pairs
                                         (x[2i], x[2i+1]) as complex numbers times
                                         polar(1, p * inv_freq)
  __provenance__          0-d str        JSON: generator and command, versions, environment,
                                         every config, the seeds, and for every other key
                                         its shape, dtype and sha256 (C-order bytes)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import GPTNeoXConfig, LlamaConfig, Qwen3Config
from transformers.models.gpt_neox import modeling_gpt_neox as gpt_neox
from transformers.models.llama import modeling_llama as llama
from transformers.models.qwen3 import modeling_qwen3 as qwen3

# Run as a file, not as a package: put oracle/, this script's parent folder, on
# sys.path for the plumbing every oracle shares (oracle/fixture_file.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/L7.3/rope_hf.npz", generator="oracle/L7.3/rope_hf.py")

# One seed per random array: changing one input never shifts another.
SEEDS = fixture_file.Seeds({
    "apply/q": 7301,
    "apply/k": 7302,
    "neox/q": 7303,
    "qwen3/q": 7304,
    "qwen3/k": 7305,
    "meta/x": 7306,
})

# Every position up to the original context, then a spread up to 65535 (the
# float32 ulp of the angle there is 2**-8 ~ 0.004 rad).
HIGH_POSITIONS = [4096, 5000, 8191, 8192, 12345, 16383, 16384, 32767, 32768, 50000, 65534, 65535]
LLAMA_POSITIONS = np.concatenate([np.arange(4096), HIGH_POSITIONS]).astype(np.int64)
QWEN3_POSITIONS = np.concatenate(
    [np.arange(1024), [1024, 2047, 4096, 8191, 16384, 32767, 32768, 40958, 40959]]
).astype(np.int64)

# A tiny decoder: only the rotary settings matter, the rest keeps the config valid.
TINY = dict(num_hidden_layers=1, intermediate_size=64, vocab_size=16)
CONFIGS = {
    "llama": dict(
        TINY, hidden_size=256, num_attention_heads=4, head_dim=64, max_position_embeddings=65536,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    ),
    "yarn": dict(
        TINY, hidden_size=256, num_attention_heads=4, head_dim=64, max_position_embeddings=16384,
        rope_parameters={
            "rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
            "original_max_position_embeddings": 4096,
        },
    ),
    "neox": dict(  # head_dim = 64 / 4 = 16, rotary_dim = 16 * 0.5 = 8
        TINY, hidden_size=64, num_attention_heads=4, max_position_embeddings=2048,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
    ),
    "qwen3": dict(
        TINY, hidden_size=256, num_attention_heads=4, num_key_value_heads=1, head_dim=128,
        max_position_embeddings=40960,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
    ),
    "meta": dict(dim=64, theta=10000.0, end=65536),  # precompute_freqs_cis(dim, end, theta)
}


# ---- helpers ----------------------------------------------------------------


def hf_full_tables(rope: torch.nn.Module, positions: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin exactly as an HF rotary module returns them.

    positions: [B, S] -> tables [B, S, r] = cat(freqs, freqs) through cos / sin, float32.
    """
    dummy = torch.zeros(1, dtype=torch.float32)  # the tables come back in this dtype
    return rope(dummy, torch.from_numpy(positions))


def hf_tables(rope: torch.nn.Module, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin from an HF rotary module, as it returns them, cut to half width.

    positions: [S] or [B, S] -> tables positions.shape + (r/2,), float32.
    """
    batched = positions.ndim == 2
    cos, sin = hf_full_tables(rope, positions if batched else positions[None])  # [B, S, r]
    half = cos.shape[-1] // 2
    for name, table in (("cos", cos), ("sin", sin)):
        assert table.dtype == torch.float32, f"{name} came back as {table.dtype}, expected float32"
        assert torch.equal(table[..., :half], table[..., half:]), (
            f"{type(rope).__name__} {name}: the two halves of the table differ; HF's layout changed"
        )
    cos, sin = cos[..., :half].numpy(), sin[..., :half].numpy()
    return (cos, sin) if batched else (cos[0], sin[0])


def as_f32(t: torch.Tensor) -> np.ndarray:
    assert t.dtype == torch.float32, t.dtype
    return t.detach().numpy().copy()


def hf_rotate(model, rope: torch.nn.Module, positions: np.ndarray, q: np.ndarray, k: np.ndarray):
    """model.apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1) with the full-width
    tables `rope` returns at per-row positions [B, S]; q, k: [B, H, S, D] -> (q_out, k_out)."""
    cos, sin = hf_full_tables(rope, positions)  # [B, S, r]
    q_out, k_out = model.apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(k), cos, sin, unsqueeze_dim=1)
    return as_f32(q_out), as_f32(k_out)


def hf_rotary(config_class, rotary_class, name: str) -> tuple[torch.nn.Module, dict]:
    """HF's rotary module for CONFIGS[name], and what goes into the provenance for its config."""
    config = config_class(**CONFIGS[name])
    rope = rotary_class(config)
    record = {
        "class": type(config).__name__,
        "kwargs": CONFIGS[name],
        "rope_parameters": dict(config.rope_parameters),  # as HF resolved them
    }
    return rope, record


# ---- the sections: each returns (arrays, provenance record) ------------------


def llama_section():
    rope, record = hf_rotary(LlamaConfig, llama.LlamaRotaryEmbedding, "llama")
    assert rope.attention_scaling == 1.0
    cos, sin = hf_tables(rope, LLAMA_POSITIONS)
    arrays = {
        "llama/inv_freq": as_f32(rope.inv_freq),
        "llama/positions": LLAMA_POSITIONS,
        "llama/cos": cos,
        "llama/sin": sin,
    }
    return arrays, record


def yarn_section():
    rope, record = hf_rotary(LlamaConfig, llama.LlamaRotaryEmbedding, "yarn")
    cos, sin = hf_tables(rope, LLAMA_POSITIONS)  # already times attention_scaling
    arrays = {
        "yarn/inv_freq": as_f32(rope.inv_freq),
        "yarn/attention_scaling": np.array(rope.attention_scaling, dtype=np.float64),
        "yarn/positions": LLAMA_POSITIONS,
        "yarn/cos": cos,
        "yarn/sin": sin,
    }
    return arrays, record


def apply_section():
    """llama apply_rotary_pos_emb on [B, H, S, D] q and k with per-row positions."""
    rope, record = hf_rotary(LlamaConfig, llama.LlamaRotaryEmbedding, "llama")
    positions = np.array([[0, 1, 2, 3, 4], [7, 100, 4095, 65535, 3]], dtype=np.int64)  # [B, S]
    q = SEEDS.normal("apply/q", (2, 3, 5, 64))
    k = SEEDS.normal("apply/k", (2, 3, 5, 64))
    q_out, k_out = hf_rotate(llama, rope, positions, q, k)
    cos, sin = hf_tables(rope, positions)
    arrays = {
        "apply/positions": positions,
        "apply/q": q,
        "apply/k": k,
        "apply/cos": cos,
        "apply/sin": sin,
        "apply/q_out": q_out,
        "apply/k_out": k_out,
    }
    return arrays, record


def neox_section():
    """GPT-NeoX partial rotary: rotate q[..., :8] of 16, pass q[..., 8:] through."""
    rope, record = hf_rotary(GPTNeoXConfig, gpt_neox.GPTNeoXRotaryEmbedding, "neox")
    positions = np.array([[0, 1, 2, 3, 4], [2047, 100, 7, 1500, 3]], dtype=np.int64)  # [B, S]
    q = SEEDS.normal("neox/q", (2, 3, 5, 16))
    q_out, _ = hf_rotate(gpt_neox, rope, positions, q, q)  # k unused here
    cos, sin = hf_tables(rope, positions)  # [B, S, 4]
    rotary_dim = 2 * cos.shape[-1]
    assert rotary_dim == 8, rotary_dim
    arrays = {
        "neox/inv_freq": as_f32(rope.inv_freq),
        "neox/rotary_dim": np.array(rotary_dim, dtype=np.int64),
        "neox/positions": positions,
        "neox/cos": cos,
        "neox/sin": sin,
        "neox/q": q,
        "neox/q_out": q_out,
    }
    return arrays, record


def qwen3_section():
    """Qwen3: theta 1e6, head_dim 128; 4 query heads share 1 key head."""
    rope, record = hf_rotary(Qwen3Config, qwen3.Qwen3RotaryEmbedding, "qwen3")
    cos, sin = hf_tables(rope, QWEN3_POSITIONS)
    apply_positions = np.array([[0, 1, 2, 3, 4, 5], [9, 1023, 32768, 40957, 40958, 40959]], dtype=np.int64)
    q = SEEDS.normal("qwen3/q", (2, 4, 6, 128))
    k = SEEDS.normal("qwen3/k", (2, 1, 6, 128))
    q_out, k_out = hf_rotate(qwen3, rope, apply_positions, q, k)  # k's one head broadcasts
    apply_cos, apply_sin = hf_tables(rope, apply_positions)
    arrays = {
        "qwen3/inv_freq": as_f32(rope.inv_freq),
        "qwen3/positions": QWEN3_POSITIONS,
        "qwen3/cos": cos,
        "qwen3/sin": sin,
        "qwen3/apply_positions": apply_positions,
        "qwen3/apply_cos": apply_cos,
        "qwen3/apply_sin": apply_sin,
        "qwen3/q": q,
        "qwen3/k": k,
        "qwen3/q_out": q_out,
        "qwen3/k_out": k_out,
    }
    return arrays, record


# Meta's llama/model.py, rewritten here line for line in torch: the interleaved
# layout, where pair i is the complex number x[2i] + i x[2i+1].


def meta_inv_freq(dim: int, theta: float) -> torch.Tensor:
    """The frequencies inside Meta's precompute_freqs_cis: float32 [dim/2]."""
    return 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))


def meta_freqs_cis(inv_freq: torch.Tensor, end: int) -> torch.Tensor:
    """The rest of precompute_freqs_cis: complex64 [end, dim/2] = polar(1, t * inv_freq)."""
    t = torch.arange(end, device=inv_freq.device)  # int64 positions 0..end-1
    freqs = torch.outer(t, inv_freq).float()  # [end, dim/2] angles, float32
    return torch.polar(torch.ones_like(freqs), freqs)


def meta_apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """Meta's apply_rotary_emb for one tensor (Meta runs these lines on xq and xk).

    x: [B, S, H, D]; freqs_cis: complex64 [S, D/2] -> [B, S, H, D].
    """
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))  # [B, S, H, D/2] complex
    shape = [d if i == 1 or i == x_.ndim - 1 else 1 for i, d in enumerate(x_.shape)]  # reshape_for_broadcast
    freqs_cis = freqs_cis.view(*shape)  # [1, S, 1, D/2]
    return torch.view_as_real(x_ * freqs_cis).flatten(3).type_as(x)  # pairs back to (re, im) entries


def meta_section():
    cfg = CONFIGS["meta"]
    start_pos, seqlen = 65528, 8
    inv_freq = meta_inv_freq(cfg["dim"], cfg["theta"])
    freqs_cis = meta_freqs_cis(inv_freq, cfg["end"])[start_pos : start_pos + seqlen]  # as Meta slices it
    x = SEEDS.normal("meta/x", (2, seqlen, 3, cfg["dim"]))
    out = meta_apply_rotary_emb(torch.from_numpy(x), freqs_cis)
    arrays = {
        "meta/inv_freq": as_f32(inv_freq),
        "meta/positions": np.arange(start_pos, start_pos + seqlen, dtype=np.int64),
        "meta/x": x,
        "meta/out": as_f32(out),
    }
    record = {"source": "Meta llama/model.py precompute_freqs_cis + apply_rotary_emb, rewritten in torch",
              "kwargs": cfg, "start_pos": start_pos, "seqlen": seqlen}
    return arrays, record


SECTIONS = {
    "llama": llama_section,
    "yarn": yarn_section,
    "apply": apply_section,
    "neox": neox_section,
    "qwen3": qwen3_section,
    "meta": meta_section,
}


# ---- provenance and writing --------------------------------------------------


def build() -> dict[str, np.ndarray]:
    """Every array, plus __provenance__ describing them."""
    # The fixture records what the oracle extra's pins compute: exit on any other version.
    fixture_file.check_versions(FIXTURE, {"torch": torch.__version__, "transformers": transformers.__version__})
    arrays, configs = {}, {}
    with torch.no_grad():
        for name, section in SECTIONS.items():
            section_arrays, configs[name] = section()
            arrays.update(section_arrays)
    return fixture_file.with_provenance(arrays, {
        **FIXTURE.header(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        # Recorded for the record; the arrays should not depend on these, but cos and sin
        # come from MKL's vector math on this CPU (see fixtures/L7.3/README.md).
        "environment": fixture_file.environment(),
        "random": SEEDS.record(),
        "configs": configs,
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
