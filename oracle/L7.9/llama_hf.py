"""Build fixtures/L7.9/llama_hf.npz: golden logits, layer outputs and greedy
continuations of two small random Llama models from Hugging Face transformers
5.19.0's LlamaForCausalLM (eager, float32, torch 2.13.0 CPU).

Run from anywhere (needs the oracle extra: pip install -e '.[oracle]'):

    python oracle/L7.9/llama_hf.py              # rewrites fixtures/L7.9/llama_hf.npz
    python oracle/L7.9/llama_hf.py --out DIR    # writes DIR/llama_hf.npz instead

Two models (MODELS): "tied", shaped like SmolLM2 (grouped-query attention,
tied embeddings, plain RoPE) but tiny, and "untied", with its own lm_head and
Llama 3's RoPE scaling in its config.json.  Weights are random, nothing is
downloaded; one thread; two runs give byte-identical files.  L7.9's course
tests build tinyllm's Llama from M/config (the provenance) and M/weights/*;
L8.2's compare its generation with M/greedy.

Keys, for every model M:

  M/weights/<name>     f32[...]          every parameter, under Hugging Face's name
  M/input_ids          i64[2, 7]         two sequences
  M/logits             f32[2, 7, 64]     model(input_ids).logits
  M/layer0_in          f32[2, 7, 32]     hidden states into layer 0 (the embeddings)
  M/layer0_out         f32[2, 7, 32]     layer 0's output
  M/mlp_in, M/mlp_out  f32[2, 7, 32]     layer 0's LlamaMLP on random input
  M/greedy_prompt      i64[5]            a prompt
  M/greedy             i64[8]            model.generate(do_sample=False, max_new_tokens=8), no
                                         end-of-sequence token
  __provenance__       0-d str           JSON: generator, command, versions, environment, seeds,
                                         each model's config.json (as a dict), every key's
                                         shape, dtype and sha256
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/L7.9/llama_hf.npz", generator="oracle/L7.9/llama_hf.py")

COMMON = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8, intermediate_size=48,
              num_hidden_layers=2, vocab_size=64, rms_norm_eps=1e-5, max_position_embeddings=1024,
              bos_token_id=1, eos_token_id=2)
MODELS = {
    "tied": dict(COMMON, tie_word_embeddings=True, rope_theta=10000.0),
    "untied": dict(COMMON, tie_word_embeddings=False, rope_theta=500000.0,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
}
SEEDS = fixture_file.Seeds({f"{model}/{what}": 7900 + 10 * i + j for i, model in enumerate(MODELS)
                            for j, what in enumerate(("weights", "input_ids", "mlp_in", "greedy_prompt"))})
WEIGHT_SCALE = 0.5  # random N(0, 0.25) weights: activations of order 1 through both layers
NEW_TOKENS = 8


def config_dict(model: str) -> dict:
    """The config.json a checkpoint of this model would ship, as a dict (HF's own to_dict)."""
    cfg = LlamaConfig(**MODELS[model])
    keep = ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size",
            "num_hidden_layers", "vocab_size", "rms_norm_eps", "max_position_embeddings", "tie_word_embeddings",
            "rope_parameters", "bos_token_id", "eos_token_id")
    return {key: cfg.to_dict()[key] for key in keep}


def build_model(model: str) -> tuple[LlamaForCausalLM, dict[str, np.ndarray]]:
    hf = LlamaForCausalLM(LlamaConfig(**MODELS[model], attn_implementation="eager")).eval()
    rng = np.random.default_rng(SEEDS[f"{model}/weights"])
    weights = {}
    for name, parameter in hf.named_parameters():  # tied: lm_head is not listed apart
        if name.endswith("norm.weight"):
            value = (1.0 + 0.1 * rng.standard_normal(parameter.shape)).astype(np.float32)
        else:
            value = (WEIGHT_SCALE * rng.standard_normal(parameter.shape)).astype(np.float32)
        parameter.copy_(torch.from_numpy(value))
        weights[name] = value
    return hf, weights


def build() -> dict[str, np.ndarray]:
    fixture_file.check_versions(FIXTURE, {"torch": torch.__version__, "transformers": transformers.__version__})
    transformers.logging.set_verbosity_error()
    arrays = {}
    with torch.no_grad():
        for model in MODELS:
            hf, weights = build_model(model)
            for name, value in weights.items():
                arrays[f"{model}/weights/{name}"] = value
            ids = np.random.default_rng(SEEDS[f"{model}/input_ids"]).integers(3, 64, (2, 7)).astype(np.int64)
            out = hf(torch.from_numpy(ids), output_hidden_states=True)
            arrays[f"{model}/input_ids"] = ids
            arrays[f"{model}/logits"] = out.logits.numpy().copy()
            arrays[f"{model}/layer0_in"] = out.hidden_states[0].numpy().copy()
            arrays[f"{model}/layer0_out"] = out.hidden_states[1].numpy().copy()
            mlp_in = SEEDS.normal(f"{model}/mlp_in", (2, 7, 32))
            arrays[f"{model}/mlp_in"] = mlp_in
            arrays[f"{model}/mlp_out"] = hf.model.layers[0].mlp(torch.from_numpy(mlp_in)).numpy().copy()
            prompt = np.random.default_rng(SEEDS[f"{model}/greedy_prompt"]).integers(3, 64, 5).astype(np.int64)
            hf.generation_config.eos_token_id = None  # exactly NEW_TOKENS plain argmax steps
            generated = hf.generate(torch.from_numpy(prompt)[None], attention_mask=torch.ones(1, 5, dtype=torch.long),
                                    do_sample=False, max_new_tokens=NEW_TOKENS, pad_token_id=None)
            arrays[f"{model}/greedy_prompt"] = prompt
            arrays[f"{model}/greedy"] = generated[0, 5:].numpy().astype(np.int64)
    return fixture_file.with_provenance(arrays, {
        **FIXTURE.header(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "environment": fixture_file.environment(),
        "random": {**SEEDS.record(), "weights": f"{WEIGHT_SCALE} * standard_normal, norms 1 + 0.1 * standard_normal, "
                                                "from one generator per model, in named_parameters order"},
        "configs": {model: config_dict(model) for model in MODELS},
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
