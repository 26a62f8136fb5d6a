"""L7.9 course tests: a tiny Llama built from a config.json dict and its
weights, against Hugging Face's LlamaForCausalLM (fixtures/L7.9/llama_hf.npz,
oracle/L7.9/llama_hf.py), and what the model must do with its config and its
cache.  The eight tests are the table of the chapter
(course/chapters/L7.9-llama.md, section 8).

Two models: "tied" is SmolLM2's shape in miniature (grouped-query attention,
tied embeddings, plain RoPE); "untied" has its own lm_head and Llama 3's RoPE
scaling in its config, which L7.4's rope_spec reads.
"""

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.llama import LAYER_WEIGHTS, Llama, decoder_layer, mlp
from tinyllm.modern.rope_scaling import rope_spec

# float32 through two layers, summed in another order than torch's: activations
# and logits of size up to ~40 (float32's spacing there is 4e-6) agree to ~3e-5.
ATOL = 1e-4


def weights_of(fx, model):
    prefix = f"{model}/weights/"
    return {key[len(prefix):]: fx[key] for key in fx if key.startswith(prefix)}


def config_of(fx, model):
    return dict(fx.provenance["configs"][model])


def layer0(fx, model):
    w = weights_of(fx, model)
    return {part: Tensor(w[f"model.layers.0.{part}"]) for part in LAYER_WEIGHTS}


def test_mlp_golden(llama_hf):
    layer = layer0(llama_hf, "tied")
    out = mlp(Tensor(llama_hf["tied/mlp_in"]), layer["mlp.gate_proj.weight"], layer["mlp.up_proj.weight"],
              layer["mlp.down_proj.weight"])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.data, llama_hf["tied/mlp_out"], rtol=0, atol=ATOL,
                               err_msg="mlp vs HF's LlamaMLP: down(silu(gate(x)) * up(x))")


@pytest.mark.parametrize("model", ["tied", "untied"])
def test_decoder_layer_golden(llama_hf, model):
    config = config_of(llama_hf, model)
    out, (k, v) = decoder_layer(Tensor(llama_hf[f"{model}/layer0_in"]), layer0(llama_hf, model), rope_spec(config),
                                np.arange(7), n_heads=4, n_kv_heads=2, eps=config["rms_norm_eps"])
    np.testing.assert_allclose(out.data, llama_hf[f"{model}/layer0_out"], rtol=0, atol=ATOL,
                               err_msg=f"{model}: decoder layer 0 vs HF's LlamaDecoderLayer (x + attn(norm(x)), "
                                       "then + mlp(norm(.)))")
    assert k.shape == v.shape == (2, 2, 7, 8), "the layer returns attention's (K, V)"


def test_logits_golden(llama_hf):
    model = Llama(config_of(llama_hf, "tied"), weights_of(llama_hf, "tied"))
    logits, present = model.forward(llama_hf["tied/input_ids"], np.arange(7))
    assert logits.shape == (2, 7, 64) and logits.dtype == np.float32
    np.testing.assert_allclose(logits.data, llama_hf["tied/logits"], rtol=0, atol=ATOL,
                               err_msg="tied: logits vs HF's LlamaForCausalLM (lm_head = the embedding matrix)")
    assert len(present) == 2 and all(k.shape == (2, 2, 7, 8) for k, _ in present)


def test_untied_and_scaled_rope_golden(llama_hf):
    # Its own lm_head, and rope_scaling of type llama3 in the config: rope_spec(config) must drive every layer.
    config = config_of(llama_hf, "untied")
    model = Llama(config, weights_of(llama_hf, "untied"))
    np.testing.assert_allclose(model.rope.inv_freq, rope_spec(config).inv_freq, rtol=0, atol=0,
                               err_msg="the model's RopeSpec is L7.4's rope_spec(config)")
    logits, _ = model.forward(llama_hf["untied/input_ids"], np.arange(7))
    np.testing.assert_allclose(logits.data, llama_hf["untied/logits"], rtol=0, atol=ATOL,
                               err_msg="untied, Llama 3 RoPE scaling: logits vs HF's")


def test_tied_head_is_the_embedding(llama_hf):
    # With tie_word_embeddings, a stray lm_head.weight in the dict is not the output projection.
    weights = dict(weights_of(llama_hf, "tied"), **{"lm_head.weight": np.zeros((64, 32), np.float32)})
    logits, _ = Llama(config_of(llama_hf, "tied"), weights).forward(llama_hf["tied/input_ids"], np.arange(7))
    np.testing.assert_allclose(logits.data, llama_hf["tied/logits"], rtol=0, atol=ATOL)
    untied = dict(config_of(llama_hf, "tied"), tie_word_embeddings=False)
    with pytest.raises(ValueError):  # untied without an lm_head.weight: nothing to project with
        Llama(untied, weights_of(llama_hf, "tied"))


def test_interleaved_weights_give_the_same_logits(llama_hf):
    # GGUF's layout at model scale: q/k rows of each head in the interleaved pair order, rotated interleaved.
    weights = weights_of(llama_hf, "tied")
    to_interleaved = np.concatenate([[i, 4 + i] for i in range(4)])  # head_dim 8: rows (a0, b0, a1, b1, ...)
    permuted = dict(weights)
    for name, heads in (("q_proj", 4), ("k_proj", 2)):
        for i in range(2):
            key = f"model.layers.{i}.self_attn.{name}.weight"
            permuted[key] = weights[key].reshape(heads, 8, 32)[:, to_interleaved].reshape(heads * 8, 32)
    model = Llama(config_of(llama_hf, "tied"), permuted, layout="interleaved")
    assert model.rope.layout == "interleaved"
    logits, _ = model.forward(llama_hf["tied/input_ids"], np.arange(7))
    np.testing.assert_allclose(logits.data, llama_hf["tied/logits"], rtol=0, atol=ATOL,
                               err_msg="interleaved q/k rows with layout='interleaved' vs HF's (half) logits")


def test_forward_with_past_equals_one_forward(llama_hf):
    model = Llama(config_of(llama_hf, "untied"), weights_of(llama_hf, "untied"))
    ids = llama_hf["untied/input_ids"]
    _, past = model.forward(ids[:, :4], np.arange(4))
    logits, present = model.forward(ids[:, 4:], np.arange(4, 7), past)
    np.testing.assert_allclose(logits.data, llama_hf["untied/logits"][:, 4:], rtol=0, atol=ATOL,
                               err_msg="3 tokens after a past of 4 vs one forward of all 7")
    assert all(k.shape[2] == 7 for k, _ in present), "present holds the past and the new tokens"


def test_config_and_validation(llama_hf):
    config, weights = config_of(llama_hf, "tied"), weights_of(llama_hf, "tied")
    model = Llama(config, weights)
    assert (model.n_layers, model.n_heads, model.n_kv_heads, model.eps) == (2, 4, 2, 1e-5)
    assert model.rope.layout == "half" and model.config == config and model.config is not config
    mha = dict(config, num_key_value_heads=None)
    wide = dict(weights)
    for i in range(2):  # one key/value head per query head: k_proj and v_proj as wide as q_proj
        for part in ("k_proj", "v_proj"):
            wide[f"model.layers.{i}.self_attn.{part}.weight"] = np.tile(weights[f"model.layers.{i}.self_attn.{part}.weight"], (2, 1))
    assert Llama(mha, wide).n_kv_heads == 4, "num_key_value_heads None: one key/value head per query head"
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "rms_norm_eps", "vocab_size"):
        with pytest.raises(ValueError):
            Llama({k: v for k, v in config.items() if k != key}, weights)
    with pytest.raises(ValueError):
        Llama(config, {k: v for k, v in weights.items() if k != "model.layers.1.mlp.up_proj.weight"})
    with pytest.raises(ValueError):
        Llama(config, weights, layout="neox")
    with pytest.raises(ValueError):
        model.forward(llama_hf["tied/input_ids"][0], np.arange(7))
    with pytest.raises(ValueError):
        model.forward(llama_hf["tied/input_ids"][:, :1], np.arange(7, 8), past=[])
