"""Build fixtures/L7.10/gemma3_hf.npz: golden logits, layer outputs and greedy
continuations of two small random Gemma 3 text models from Hugging Face
transformers 5.19.0's Gemma3ForCausalLM (eager, float32, torch 2.13.0 CPU).

Run from anywhere (needs the oracle extra: pip install -e '.[oracle]'):

    python oracle/L7.10/gemma3_hf.py              # rewrites fixtures/L7.10/gemma3_hf.npz
    python oracle/L7.10/gemma3_hf.py --out DIR    # writes DIR/gemma3_hf.npz instead

Two models (MODELS): "local", shaped like Gemma 3 270M (one key/value head,
five sliding layers then a full one, base 1e4 and 1e6, tied embeddings) but
tiny, with a window of 4 that the sequences pass; and "scaled", two key/value
heads, query_pre_attn_scalar unlike head_dim, and linear RoPE scaling on its
full layers.  Every weight is random, the norms' included (so Gemma's 1 + w
is not 1); nothing is downloaded; one thread; two runs give byte-identical
files.  L7.10's course tests build tinyllm's Gemma3 from M/config (the
provenance) and M/weights/*.

Keys, for every model M:

  M/weights/<name>     f32[...]          every parameter, under Hugging Face's name
  M/input_ids          i64[2, 9]         two sequences, longer than the window
  M/logits             f32[2, 9, 64]     model(input_ids).logits
  M/layer0_in          f32[2, 9, 32]     hidden states into layer 0 (the scaled embeddings)
  M/layer0_out         f32[2, 9, 32]     layer 0's output
  M/mlp_in, M/mlp_out  f32[2, 9, 32]     layer 0's Gemma3MLP on random input
  M/norm_in, M/norm_out  f32[2, 9, 32]   layer 0's input_layernorm on random input
  M/greedy_prompt      i64[6]            a prompt
  M/greedy             i64[8]            model.generate(do_sample=False, max_new_tokens=8), no
                                         end-of-sequence token
  __provenance__       0-d str           JSON: generator, command, versions, environment, seeds,
                                         each model's config.json (as a dict, as HF writes it),
                                         every key's shape, dtype and sha256
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import Gemma3ForCausalLM, Gemma3TextConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_file  # noqa: E402

FIXTURE = fixture_file.FixtureFile("fixtures/L7.10/gemma3_hf.npz", generator="oracle/L7.10/gemma3_hf.py")

COMMON = dict(hidden_size=32, num_attention_heads=4, head_dim=8, intermediate_size=24, vocab_size=64,
              rms_norm_eps=1e-6, max_position_embeddings=1024, bos_token_id=2, eos_token_id=1, pad_token_id=0,
              hidden_activation="gelu_pytorch_tanh", attn_implementation="eager")
MODELS = {
    "local": dict(COMMON, num_key_value_heads=1, num_hidden_layers=6, sliding_window=4, query_pre_attn_scalar=8,
                  layer_types=["sliding_attention"] * 5 + ["full_attention"],
                  rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                   "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}),
    "scaled": dict(COMMON, num_key_value_heads=2, num_hidden_layers=2, sliding_window=3, query_pre_attn_scalar=16,
                   layer_types=["sliding_attention", "full_attention"],
                   rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
                                    "full_attention": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}}),
}
SEEDS = fixture_file.Seeds({f"{model}/{what}": 71000 + 10 * i + j for i, model in enumerate(MODELS)
                            for j, what in enumerate(("weights", "input_ids", "mlp_in", "norm_in", "greedy_prompt"))})
WEIGHT_SCALE = 0.5  # random N(0, 0.25) weights, norms included
NEW_TOKENS = 8


def build_model(model: str) -> Gemma3ForCausalLM:
    hf = Gemma3ForCausalLM(Gemma3TextConfig(**MODELS[model])).eval()
    rng = np.random.default_rng(SEEDS[f"{model}/weights"])
    for _, parameter in sorted(hf.named_parameters()):  # tied: lm_head.weight is the embedding, listed once
        values = rng.standard_normal(tuple(parameter.shape), dtype=np.float32) * np.float32(WEIGHT_SCALE)
        parameter.copy_(torch.from_numpy(values))
    return hf


def run(model: str) -> tuple[dict[str, np.ndarray], dict]:
    hf = build_model(model)
    arrays = {f"{model}/weights/{name}": p.detach().numpy().copy() for name, p in sorted(hf.named_parameters())}
    rng = np.random.default_rng(SEEDS[f"{model}/input_ids"])
    ids = torch.from_numpy(rng.integers(0, 64, size=(2, 9)).astype(np.int64))
    layer = hf.model.layers[0]
    seen = {}
    hooks = [layer.register_forward_pre_hook(lambda m, args: seen.__setitem__("in", args[0].numpy().copy())),
             layer.register_forward_hook(lambda m, args, out: seen.__setitem__("out", out.numpy().copy()))]
    arrays[f"{model}/input_ids"] = ids.numpy()
    arrays[f"{model}/logits"] = hf(ids).logits.numpy().copy()
    for hook in hooks:
        hook.remove()
    arrays[f"{model}/layer0_in"], arrays[f"{model}/layer0_out"] = seen["in"], seen["out"]
    for what, module in (("mlp", layer.mlp), ("norm", layer.input_layernorm)):
        x = SEEDS.normal(f"{model}/{what}_in", (2, 9, 32))
        arrays[f"{model}/{what}_in"] = x
        arrays[f"{model}/{what}_out"] = module(torch.from_numpy(x)).numpy().copy()
    prompt = torch.from_numpy(np.random.default_rng(SEEDS[f"{model}/greedy_prompt"]).integers(0, 64, size=(1, 6)))
    hf.generation_config.eos_token_id = None
    generated = hf.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                            max_new_tokens=NEW_TOKENS, pad_token_id=None)
    arrays[f"{model}/greedy_prompt"] = prompt[0].numpy().astype(np.int64)
    arrays[f"{model}/greedy"] = generated[0, 6:].numpy().astype(np.int64)
    config = {key: value for key, value in hf.config.to_dict().items() if key in CONFIG_KEYS}
    return arrays, config


# The config.json fields tinyllm's Gemma3 reads, as HF writes them.
CONFIG_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "head_dim", "rms_norm_eps", "vocab_size", "max_position_embeddings", "query_pre_attn_scalar",
               "sliding_window", "layer_types", "rope_parameters", "hidden_activation", "tie_word_embeddings",
               "attn_logit_softcapping", "final_logit_softcapping", "bos_token_id", "eos_token_id")


def build() -> dict[str, np.ndarray]:
    fixture_file.check_versions(FIXTURE, {"torch": torch.__version__, "transformers": transformers.__version__})
    transformers.logging.set_verbosity_error()
    arrays, configs = {}, {}
    with torch.no_grad():
        for model in MODELS:
            model_arrays, configs[model] = run(model)
            arrays.update(model_arrays)
    return fixture_file.with_provenance(arrays, {
        **FIXTURE.header(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "environment": fixture_file.environment(),
        "random": {**SEEDS.record(), "weights": f"parameters in sorted(named_parameters()) order from the model's "
                                               f"weights seed, times {WEIGHT_SCALE}"},
        "configs": configs,
    })


if __name__ == "__main__":
    fixture_file.main(FIXTURE, build, __doc__)
