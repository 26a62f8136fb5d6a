"""Build fixtures/L7.3x/mrope_hf.npz: golden multimodal RoPE (M-RoPE) values
from Hugging Face transformers 5.19.0's Qwen2-VL on torch 2.13.0 (CPU).

Run from anywhere (needs the oracle extra: pip install -e '.[oracle]'):

    python oracle/L7.3x/mrope_hf.py              # rewrites fixtures/L7.3x/mrope_hf.npz
    python oracle/L7.3x/mrope_hf.py --out DIR    # writes DIR/mrope_hf.npz instead

In Qwen2-VL every token has three positions, (time, row, column): a text token
has the same number on all three, an image or video token has its frame, row
and column offsets from where the picture starts.  The rotary pairs are cut
into sections of 16, 24 and 24 (mrope_section): section a turns with axis a's
position, at the frequencies of ONE ladder over all 64 pairs.  That is
tinyllm's multi_axis_rope_cos_sin(..., frequencies="shared").

Only a tiny local config is built; nothing is downloaded.  Each random input
has its own seed (SEEDS).  Two runs give byte-identical files.  HF's tables
are cat(t, t) of width 128; the script asserts the halves are equal and stores
one column per pair, [..., :64].

Keys:

  mrope/inv_freq          f32[64]         Qwen2VLRotaryEmbedding(head_dim 128, theta 1e6).inv_freq
  mrope/theta             f64[]           1e6
  mrope/sections          i64[3]          mrope_section (16, 24, 24): pairs per axis (time, row, column)
  mrope/position_ids      i64[3, 2, 12]   [axis, batch, token]: row 0 is text, a 2 x 3 image, text;
                                          row 1 is text from 30000, then a 2-frame 2 x 2 video
  mrope/cos, mrope/sin    f32[2, 12, 64]  its forward (sections already recomposed), one column per pair
  mrope/q                 f32[2, 2, 12, 128]  random q, [B, H, S, D]: 2 query heads
  mrope/k                 f32[2, 1, 12, 128]  random k: 1 key/value head
  mrope/q_out, mrope/k_out  qwen2_vl apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1) (half layout)
  __provenance__          0-d str         JSON: command, versions, environment, config, seeds, and
                                          for every other key its shape, dtype and sha256
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers.models.qwen2_vl import modeling_qwen2_vl as qwen2_vl
from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig

# Run as a file, not as a package: put oracle/, this script's parent folder, on
# sys.path for the plumbing every oracle shares (oracle/fixture_file.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/L7.3x/mrope_hf.npz", generator="oracle/L7.3x/mrope_hf.py")

SEEDS = fixture_file.Seeds({"mrope/q": 7321, "mrope/k": 7322})

SECTIONS = [16, 24, 24]  # Qwen2-VL's mrope_section: 64 pairs, head_dim 128
CONFIG = dict(  # a tiny text model: only the rotary settings matter
    hidden_size=256, num_attention_heads=2, num_key_value_heads=1, num_hidden_layers=1,
    intermediate_size=64, vocab_size=16, max_position_embeddings=32768,
    bos_token_id=None, eos_token_id=None,
    rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": SECTIONS},
)


def position_ids() -> np.ndarray:
    """[3, 2, 12]: (time, row, column) of each token of two sequences."""
    rows = []
    # Sequence 0: 3 text tokens, a 2 x 3 image starting at 3, then text from max + 1 = 6.
    text = [(p, p, p) for p in range(3)]
    image = [(3, 3 + i, 3 + j) for i in range(2) for j in range(3)]
    rows.append(text + image + [(p, p, p) for p in range(6, 9)])
    # Sequence 1: 4 text tokens from 30000, then a video of 2 frames of 2 x 2 starting at 30004.
    start = 30004
    video = [(start + f, start + i, start + j) for f in range(2) for i in range(2) for j in range(2)]
    rows.append([(p, p, p) for p in range(30000, 30004)] + video)
    return np.array(rows, dtype=np.int64).transpose(2, 0, 1)  # [B, S, 3] -> [3, B, S]


def half_width(table: torch.Tensor, what: str) -> np.ndarray:
    """HF's [..., r] table cat(t, t) -> [..., r/2] float32."""
    half = table.shape[-1] // 2
    assert table.dtype == torch.float32, f"{what}: dtype {table.dtype}, expected float32"
    assert torch.equal(table[..., :half], table[..., half:]), f"{what}: the two halves differ; HF's layout changed"
    return table[..., :half].numpy().copy()


def mrope_section():
    cfg = Qwen2VLTextConfig(**CONFIG)
    rope = qwen2_vl.Qwen2VLRotaryEmbedding(cfg)
    assert list(rope.mrope_section) == SECTIONS and rope.attention_scaling == 1.0
    pid = position_ids()
    cos, sin = rope(torch.zeros(1, dtype=torch.float32), torch.from_numpy(pid))  # each [B, S, 128]
    q, k = SEEDS.normal("mrope/q", (2, 2, 12, 128)), SEEDS.normal("mrope/k", (2, 1, 12, 128))
    q_out, k_out = qwen2_vl.apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(k), cos, sin, unsqueeze_dim=1)
    arrays = {
        "mrope/inv_freq": rope.inv_freq.numpy().copy(),
        "mrope/theta": np.array(cfg.rope_parameters["rope_theta"], dtype=np.float64),
        "mrope/sections": np.array(SECTIONS, dtype=np.int64),
        "mrope/position_ids": pid,
        "mrope/cos": half_width(cos, "cos"),
        "mrope/sin": half_width(sin, "sin"),
        "mrope/q": q,
        "mrope/k": k,
        "mrope/q_out": q_out.numpy().copy(),
        "mrope/k_out": k_out.numpy().copy(),
    }
    record = {"class": "Qwen2VLTextConfig + Qwen2VLRotaryEmbedding", "kwargs": CONFIG,
              "rope_parameters": dict(cfg.rope_parameters)}
    return arrays, record


# ---- provenance and writing --------------------------------------------------


def build() -> dict[str, np.ndarray]:
    """Every array, plus __provenance__ describing them."""
    # The fixture records what the oracle extra's pins compute: exit on any other version.
    fixture_file.check_versions(FIXTURE, {"torch": torch.__version__, "transformers": transformers.__version__})
    with torch.no_grad():
        arrays, record = mrope_section()
    return fixture_file.with_provenance(arrays, {
        **FIXTURE.header(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        # Recorded for the record; cos and sin come from MKL's vector math on this CPU.
        "environment": fixture_file.environment(),
        "random": SEEDS.record(),
        "configs": {"mrope": record},
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
