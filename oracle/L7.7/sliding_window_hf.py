"""Build fixtures/L7.7/sliding_window_hf.npz: golden values of Hugging Face
transformers 5.19.0's Gemma 3 attention (Gemma3TextModel, eager, float32,
torch 2.13.0 CPU): its sliding_attention layers (window 4, RoPE base 1e4)
and full_attention layers (base 1e6), without a cache, at offset positions,
and through a DynamicCache past the window.

Run from anywhere (needs the oracle extra: pip install -e '.[oracle]'):

    python oracle/L7.7/sliding_window_hf.py              # rewrites fixtures/L7.7/sliding_window_hf.npz
    python oracle/L7.7/sliding_window_hf.py --out DIR    # writes DIR/sliding_window_hf.npz instead

A small random Gemma 3 (hidden 32, 4 query heads of 8, layer_types
[sliding_attention, full_attention], sliding_window 4, query_pre_attn_scalar
16) runs whole, so that its masks, its rotary tables and its cache are
transformers' own.  Hooks record what each layer's attention sees and gives:
the query and key heads after q_norm and k_norm (before RoPE), the value
heads, and the input of o_proj (the heads side by side).  Nothing is
downloaded; two runs give byte-identical files.

A *case* is one model and a sequence of calls (CASES); call c of case C, for
each layer type T:

  C/c/T/q        f32[B, H, S, 8]     the query heads after q_norm, before RoPE
  C/c/T/k, C/c/T/v  f32[B, KV, S, 8] the key heads after k_norm (before RoPE), the value heads
  C/c/T/out      f32[B, S, H*8]      the attention's output before o_proj
  C/c/T/cache_k, C/c/T/cache_v  f32[B, KV, P', 8]  the layer's DynamicCache after the call
                                     (cache cases only): sliding layers keep the last 3
  C/c/positions  i64[S]              the call's position_ids

and for every layer type T:

  T/inv_freq     f32[4]              Gemma3RotaryEmbedding's inv_freq for T
  __provenance__ 0-d str             JSON: generator, command, versions, environment, seeds,
                                     the config, each case's calls, every key's shape, dtype, sha256
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import Gemma3TextConfig
from transformers.cache_utils import DynamicCache
from transformers.models.gemma3 import modeling_gemma3 as gemma3

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/L7.7/sliding_window_hf.npz", generator="oracle/L7.7/sliding_window_hf.py")

HIDDEN, HEADS, HEAD_DIM, WINDOW, QUERY_SCALAR = 32, 4, 8, 4, 16
LAYER_TYPES = ["sliding_attention", "full_attention"]
ROPE = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}
# case -> (n_kv_heads, batch, [(first position, new tokens), ...], whether the calls share a DynamicCache)
CASES = {
    "prompt": (2, 2, [(0, 7)], False),          # a window smaller than the sequence
    "offset": (2, 1, [(100, 6)], False),        # positions 100..105 without a cache
    "mqa": (1, 1, [(0, 6)], False),             # one key/value head
    "cache": (2, 1, [(0, 6), (6, 3), (9, 1), (10, 1)], True),   # prefill past the window, a chunk, two steps
}
SEEDS = fixture_file.Seeds({f"{case}/{c}/x": 7700 + 10 * i + c for i, case in enumerate(CASES)
                            for c in range(len(CASES[case][2]))})
WEIGHT_SEED = 7790
WEIGHT_SCALE = np.float32(0.35)


def config(n_kv: int) -> Gemma3TextConfig:
    return Gemma3TextConfig(
        hidden_size=HIDDEN, num_attention_heads=HEADS, num_key_value_heads=n_kv, head_dim=HEAD_DIM,
        intermediate_size=64, vocab_size=16, num_hidden_layers=len(LAYER_TYPES), layer_types=list(LAYER_TYPES),
        sliding_window=WINDOW, query_pre_attn_scalar=QUERY_SCALAR, max_position_embeddings=4096,
        rope_parameters={t: dict(p) for t, p in ROPE.items()}, attn_implementation="eager")


def model_for(n_kv: int) -> gemma3.Gemma3TextModel:
    """The small Gemma 3 with seeded weights: every parameter from its own seed, norms included
    (QK-norm's weights are not zero, so its (1 + w) is not 1)."""
    model = gemma3.Gemma3TextModel(config(n_kv)).eval()
    for index, (name, parameter) in enumerate(sorted(model.named_parameters())):
        rng = np.random.default_rng(WEIGHT_SEED + 100 * n_kv + index)
        values = rng.standard_normal(tuple(parameter.shape), dtype=np.float32) * WEIGHT_SCALE
        parameter.copy_(torch.from_numpy(values))
    return model


def record(model) -> tuple[dict, list]:
    """Hooks on each layer's attention: {layer type: {q, k, v, out}} of the last call."""
    seen: dict[str, dict[str, np.ndarray]] = {t: {} for t in LAYER_TYPES}
    handles = []
    for layer, layer_type in zip(model.layers, LAYER_TYPES):
        attn, store = layer.self_attn, seen[layer_type]

        def keep(name, store=store):
            return lambda module, inputs, output: store.__setitem__(name, output.detach().numpy().copy())

        def heads(module, inputs, output, store=store, attn=attn):
            b, s, _ = output.shape
            store["v"] = output.view(b, s, -1, attn.head_dim).transpose(1, 2).detach().numpy().copy()

        handles += [attn.q_norm.register_forward_hook(keep("q")), attn.k_norm.register_forward_hook(keep("k")),
                    attn.v_proj.register_forward_hook(heads),
                    attn.o_proj.register_forward_pre_hook(
                        lambda module, inputs, store=store: store.__setitem__("out", inputs[0].detach().numpy().copy()))]
    return seen, handles


def run(case: str, models: dict) -> dict[str, np.ndarray]:
    n_kv, batch, calls, cached = CASES[case]
    model = models[n_kv]
    seen, handles = record(model)
    cache = DynamicCache(config=model.config) if cached else None
    arrays = {}
    for c, (first, n_new) in enumerate(calls):
        x = SEEDS.normal(f"{case}/{c}/x", (batch, n_new, HIDDEN))
        positions = np.arange(first, first + n_new, dtype=np.int64)
        model(inputs_embeds=torch.from_numpy(x), position_ids=torch.from_numpy(positions)[None],
              past_key_values=cache, use_cache=cached)
        arrays[f"{case}/{c}/positions"] = positions
        for index, layer_type in enumerate(LAYER_TYPES):
            for name in ("q", "k", "v", "out"):
                arrays[f"{case}/{c}/{layer_type}/{name}"] = seen[layer_type][name]
            if cached:
                arrays[f"{case}/{c}/{layer_type}/cache_k"] = cache.layers[index].keys.numpy().copy()
                arrays[f"{case}/{c}/{layer_type}/cache_v"] = cache.layers[index].values.numpy().copy()
    for handle in handles:
        handle.remove()
    return arrays


def build() -> dict[str, np.ndarray]:
    fixture_file.check_versions(FIXTURE, {"torch": torch.__version__, "transformers": transformers.__version__})
    transformers.logging.set_verbosity_error()
    arrays = {}
    with torch.no_grad():
        models = {n_kv: model_for(n_kv) for n_kv in sorted({c[0] for c in CASES.values()})}
        rotary = models[2].rotary_emb
        for layer_type in LAYER_TYPES:
            arrays[f"{layer_type}/inv_freq"] = getattr(rotary, f"{layer_type}_inv_freq").numpy().copy()
            assert getattr(rotary, f"{layer_type}_attention_scaling") == 1.0
        for case in CASES:
            arrays.update(run(case, models))
    return fixture_file.with_provenance(arrays, {
        **FIXTURE.header(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "environment": fixture_file.environment(),
        "random": {**SEEDS.record(), "weights": f"parameter i of sorted(named_parameters()) from seed "
                                               f"{WEIGHT_SEED} + 100 * n_kv_heads + i, times {float(WEIGHT_SCALE)}"},
        "config": {"hidden_size": HIDDEN, "num_attention_heads": HEADS, "head_dim": HEAD_DIM,
                   "sliding_window": WINDOW, "query_pre_attn_scalar": QUERY_SCALAR, "layer_types": LAYER_TYPES,
                   "rope_parameters": ROPE, "attn_implementation": "eager"},
        "cases": {case: {"n_kv_heads": n_kv, "batch": batch, "calls": [list(call) for call in calls],
                         "dynamic_cache": cached}
                  for case, (n_kv, batch, calls, cached) in CASES.items()},
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
