"""Build fixtures/L7.5/attention_hf.npz: golden outputs of Hugging Face
transformers 5.19.0's LlamaAttention (eager, float32, torch 2.13.0 CPU), with
grouped-query heads, RoPE from LlamaRotaryEmbedding and a DynamicCache.

Run from anywhere (needs the oracle extra: pip install -e '.[oracle]'):

    python oracle/L7.5/attention_hf.py              # rewrites fixtures/L7.5/attention_hf.npz
    python oracle/L7.5/attention_hf.py --out DIR    # writes DIR/attention_hf.npz instead

Small random weights (hidden 32, 4 query heads of 8), nothing downloaded; two
runs give byte-identical files.  Each case calls LlamaAttention.forward with
the rotary module's (cos, sin) at the case's positions and the additive causal
mask of L7.5's contract (key j visible to new token i iff j <= P + i, P the
cached tokens); the script first checks that transformers' own
create_causal_mask gives that same pattern for plain positions, with and
without a cache.

Keys, for every case C of CASES:

  C/x            f32[B, S, 32]     the new tokens' hidden states
  C/wq           f32[H*8, 32]      q_proj.weight (k_proj, v_proj: C/wk, C/wv [KV*8, 32]; o_proj: C/wo [32, H*8])
  C/positions    i64[S]            their positions (position_ids)
  C/inv_freq     f32[4]            the rotary module's inv_freq
  C/attention_scaling  f64[]       its attention_scaling (1 but for "yarn")
  C/out          f32[B, S, 32]     LlamaAttention's output
  C/k, C/v       f32[B, KV, P+S, 8]  the layer's cache after the call: rotated keys, values

and for the cache case "cache", which first runs a prefill:

  cache/prefill_x          f32[B, P, 32]   cache/prefill_positions  i64[P]
  cache/prefill_out        f32[B, P, 32]

  __provenance__  0-d str          JSON: generator, command, versions, environment, seeds,
                                   each case's n_heads, n_kv_heads and rope_parameters,
                                   and every key's shape, dtype and sha256
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import LlamaConfig
from transformers.cache_utils import DynamicCache
from transformers.masking_utils import create_causal_mask
from transformers.models.llama import modeling_llama as llama

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/L7.5/attention_hf.npz", generator="oracle/L7.5/attention_hf.py")

HIDDEN, HEADS, HEAD_DIM = 32, 4, 8
PLAIN = {"rope_type": "default", "rope_theta": 10000.0}
YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 512}
# case -> (n_kv_heads, batch, positions of the new tokens, rope_parameters); "cache" prefills positions 0..3 first
CASES = {
    "gqa": (2, 2, list(range(6)), PLAIN),
    "offset": (2, 2, list(range(100, 106)), PLAIN),
    "cache": (2, 2, [4, 5, 6], PLAIN),
    "mqa": (1, 1, list(range(5)), PLAIN),
    "mha": (4, 1, list(range(5)), PLAIN),
    "yarn": (2, 1, list(range(1000, 1005)), YARN),
}
PREFILL = 4
SEEDS = fixture_file.Seeds({f"{case}/{name}": 7500 + 10 * i + j for i, case in enumerate(CASES)
                            for j, name in enumerate(("x", "wq", "wk", "wv", "wo", "prefill_x"))})
WEIGHT_SCALE = np.float32(0.35)  # keeps the scores of order 1: softmax neither flat nor one-hot


def config(n_kv: int, rope_parameters: dict) -> LlamaConfig:
    return LlamaConfig(hidden_size=HIDDEN, num_attention_heads=HEADS, num_key_value_heads=n_kv, head_dim=HEAD_DIM,
                       intermediate_size=64, vocab_size=16, num_hidden_layers=1, max_position_embeddings=4096,
                       rope_parameters=dict(rope_parameters), attn_implementation="eager")


def contract_mask(n_new: int, n_past: int) -> torch.Tensor:
    """[1, 1, n_new, n_past + n_new]: 0 where key j <= n_past + i, float32's min elsewhere (HF's eager convention)."""
    visible = torch.arange(n_past + n_new)[None, :] <= torch.arange(n_new)[:, None] + n_past
    return torch.where(visible, 0.0, torch.finfo(torch.float32).min)[None, None]


def check_mask_convention() -> None:
    """transformers' own mask, for positions 0.. and after a cache, is the contract's pattern."""
    cfg = config(2, PLAIN)
    for n_past, n_new in ((0, 5), (3, 2)):
        cache = DynamicCache(config=cfg)
        if n_past:
            cache.update(torch.zeros(1, 2, n_past, HEAD_DIM), torch.zeros(1, 2, n_past, HEAD_DIM), 0)
        embeds = torch.zeros(1, n_new, HIDDEN)
        theirs = create_causal_mask(cfg, embeds, None, cache, position_ids=torch.arange(n_past, n_past + n_new)[None],
                                    allow_is_causal_skip=False)
        assert torch.equal(theirs == 0, contract_mask(n_new, n_past) == 0), (n_past, n_new, theirs)


def run(case: str) -> dict[str, np.ndarray]:
    n_kv, batch, positions, rope_parameters = CASES[case]
    cfg = config(n_kv, rope_parameters)
    module = llama.LlamaAttention(cfg, layer_idx=0).eval()
    rotary = llama.LlamaRotaryEmbedding(cfg)
    arrays = {}
    for name, proj, shape in (("wq", module.q_proj, (HEADS * HEAD_DIM, HIDDEN)), ("wk", module.k_proj, (n_kv * HEAD_DIM, HIDDEN)),
                              ("wv", module.v_proj, (n_kv * HEAD_DIM, HIDDEN)), ("wo", module.o_proj, (HIDDEN, HEADS * HEAD_DIM))):
        arrays[f"{case}/{name}"] = SEEDS.normal(f"{case}/{name}", shape) * WEIGHT_SCALE
        proj.weight.copy_(torch.from_numpy(arrays[f"{case}/{name}"]))
    cache = DynamicCache(config=cfg)

    def call(x: np.ndarray, pos: list[int], n_past: int) -> np.ndarray:
        hidden = torch.from_numpy(x)
        cos_sin = rotary(hidden, torch.tensor([pos]))
        out, _ = module(hidden, position_embeddings=cos_sin, attention_mask=contract_mask(len(pos), n_past),
                        past_key_values=cache)
        return out.numpy().copy()

    n_past = 0
    if case == "cache":
        prefill_x = SEEDS.normal(f"{case}/prefill_x", (batch, PREFILL, HIDDEN))
        arrays["cache/prefill_x"] = prefill_x
        arrays["cache/prefill_positions"] = np.arange(PREFILL, dtype=np.int64)
        arrays["cache/prefill_out"] = call(prefill_x, list(range(PREFILL)), 0)
        n_past = PREFILL
    x = SEEDS.normal(f"{case}/x", (batch, len(positions), HIDDEN))
    arrays[f"{case}/x"] = x
    arrays[f"{case}/positions"] = np.asarray(positions, dtype=np.int64)
    arrays[f"{case}/inv_freq"] = rotary.inv_freq.numpy().copy()
    arrays[f"{case}/attention_scaling"] = np.array(rotary.attention_scaling, dtype=np.float64)
    arrays[f"{case}/out"] = call(x, positions, n_past)
    keys, values = cache.layers[0].keys, cache.layers[0].values
    arrays[f"{case}/k"], arrays[f"{case}/v"] = keys.numpy().copy(), values.numpy().copy()
    return arrays


def build() -> dict[str, np.ndarray]:
    fixture_file.check_versions(FIXTURE, {"torch": torch.__version__, "transformers": transformers.__version__})
    transformers.logging.set_verbosity_error()
    arrays = {}
    with torch.no_grad():
        check_mask_convention()
        for case in CASES:
            arrays.update(run(case))
    return fixture_file.with_provenance(arrays, {
        **FIXTURE.header(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "environment": fixture_file.environment(),
        "random": SEEDS.record(),
        "weight_scale": float(WEIGHT_SCALE),
        "cases": {case: {"n_heads": HEADS, "n_kv_heads": n_kv, "head_dim": HEAD_DIM, "rope_parameters": rope,
                         "prefill": PREFILL if case == "cache" else 0}
                  for case, (n_kv, _, _, rope) in CASES.items()},
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
