"""L7.10 course tests: the Gemma 3 text model against Hugging Face's
Gemma3ForCausalLM.  The tests are the table of the chapter
(course/chapters/L7.10-gemma3.md, section 9, "What the course tests check").

Golden values come from fixtures/L7.10/gemma3_hf.npz (oracle/L7.10/gemma3_hf.py,
transformers 5.19.0 on torch 2.13.0): two small random models, "local"
(shaped like Gemma 3 270M: one key/value head, five sliding layers to one
full one, a window of 4 that the sequences pass) and "scaled" (two key/value
heads, query_pre_attn_scalar unlike head_dim, linear RoPE scaling on its full
layers), every weight random, the norms' too.
"""

import copy

import numpy as np
import pytest

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.gemma3 import LAYER_WEIGHTS, Gemma3, decoder_layer, gelu_tanh, gemma_rms_norm, mlp
from tinyllm.modern.rope_scaling import rope_spec
from tinyllm.modern.sliding_window import layer_settings

# Float32 through up to six layers, summed in other orders than torch's: logits of
# size ~15 agree to about 1e-5; one layer's outputs to a few 1e-6, the MLP's (of size ~30) to 1e-6 relative.
ATOL = 5e-5
LAYER_ATOL = 1e-5
MODELS = ("local", "scaled")


def config_of(fx, model):
    return copy.deepcopy(fx.provenance["configs"][model])


def weights_of(fx, model):
    prefix = f"{model}/weights/"
    return {key[len(prefix):]: value for key, value in fx.items() if key.startswith(prefix)}


def layer0(fx, model):
    w = weights_of(fx, model)
    return {part: Tensor(w[f"model.layers.0.{part}"]) for part in LAYER_WEIGHTS}


def generate(model, prompt, n):
    """Greedy ids with the cache: each new token at the position after the last."""
    logits, past = model.forward([list(prompt)], np.arange(len(prompt)))
    new = []
    for step in range(n):
        new.append(int(np.argmax(logits.data[0, -1])))
        logits, past = model.forward([[new[-1]]], [len(prompt) + step], past)
    return new


def test_gemma_rms_norm_golden(gemma3_hf):
    layer = layer0(gemma3_hf, "local")
    out = gemma_rms_norm(Tensor(gemma3_hf["local/norm_in"]), layer["input_layernorm.weight"], 1e-6)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.data, gemma3_hf["local/norm_out"], rtol=0, atol=2e-6,
                               err_msg="gemma_rms_norm vs HF's Gemma3RMSNorm: x / rms(x) * (1 + w)")


def test_gelu_tanh_values_and_gradient(central_difference):
    x = np.array([-3.0, -1.0, -0.1, 0.0, 0.5, 2.0, 6.0])
    want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    t = Tensor(x, requires_grad=True)
    out = gelu_tanh(t)
    np.testing.assert_allclose(out.data, want, rtol=1e-14, atol=0, err_msg="gelu_tanh's values")
    g = np.arange(1.0, 8.0)
    out.backward(g)
    np.testing.assert_allclose(t.grad, central_difference(lambda a: float((gelu_tanh(Tensor(a)).data * g).sum()), x),
                               rtol=1e-6, atol=1e-9, err_msg="gelu_tanh's gradient vs central differences")
    with pytest.raises(TypeError):
        gelu_tanh(x)


def test_mlp_golden(gemma3_hf):
    layer = layer0(gemma3_hf, "local")
    out = mlp(Tensor(gemma3_hf["local/mlp_in"]), layer["mlp.gate_proj.weight"], layer["mlp.up_proj.weight"],
              layer["mlp.down_proj.weight"])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.data, gemma3_hf["local/mlp_out"], rtol=2e-6, atol=LAYER_ATOL,
                               err_msg="mlp vs HF's Gemma3MLP: down(gelu_tanh(gate(x)) * up(x))")


@pytest.mark.parametrize("model", MODELS)
def test_decoder_layer_golden(gemma3_hf, model):
    config = config_of(gemma3_hf, model)
    specs = {t: rope_spec(config, layer_type=t) for t in ("sliding_attention", "full_attention")}
    rope, window = layer_settings(config["layer_types"][0], specs, config["sliding_window"])
    out, (k, v) = decoder_layer(Tensor(gemma3_hf[f"{model}/layer0_in"]), layer0(gemma3_hf, model), rope, window,
                                np.arange(9), config["num_attention_heads"], config["num_key_value_heads"],
                                config["head_dim"], config["rms_norm_eps"], config["query_pre_attn_scalar"] ** -0.5)
    np.testing.assert_allclose(out.data, gemma3_hf[f"{model}/layer0_out"], rtol=0, atol=LAYER_ATOL,
                               err_msg=f"{model}: decoder layer 0 (sliding) vs HF's Gemma3DecoderLayer")
    assert k.shape == v.shape == (2, config["num_key_value_heads"], config["sliding_window"] - 1, 8), \
        "a sliding layer hands on its last sliding_window - 1 keys"


@pytest.mark.parametrize("model", MODELS)
def test_logits_golden(gemma3_hf, model):
    gemma = Gemma3(config_of(gemma3_hf, model), weights_of(gemma3_hf, model))
    logits, present = gemma.forward(gemma3_hf[f"{model}/input_ids"], np.arange(9))
    assert logits.dtype == np.float32 and logits.shape == (2, 9, 64)
    np.testing.assert_allclose(logits.data, gemma3_hf[f"{model}/logits"], rtol=0, atol=ATOL,
                               err_msg=f"{model}: logits vs HF's Gemma3ForCausalLM")
    window = gemma.config["sliding_window"]
    assert [k.shape[2] for k, _ in present] == [window - 1 if t == "sliding_attention" else 9
                                                for t in gemma.layer_types]


def test_the_head_is_the_embedding(gemma3_hf):
    config, weights = config_of(gemma3_hf, "local"), weights_of(gemma3_hf, "local")
    zeroed = dict(weights, **{"model.embed_tokens.weight": np.zeros_like(weights["model.embed_tokens.weight"])})
    logits, _ = Gemma3(config, zeroed).forward(gemma3_hf["local/input_ids"], np.arange(9))
    np.testing.assert_array_equal(logits.data, 0.0, err_msg="with a zero embedding the tied head gives 0 logits")


@pytest.mark.parametrize("model", MODELS)
def test_cache_past_the_window_equals_one_forward(gemma3_hf, model):
    gemma = Gemma3(config_of(gemma3_hf, model), weights_of(gemma3_hf, model))
    ids = gemma3_hf[f"{model}/input_ids"]
    _, past = gemma.forward(ids[:, :5], np.arange(5))
    logits, _ = gemma.forward(ids[:, 5:8], np.arange(5, 8), past)
    last, _ = gemma.forward(ids[:, 8:], [8], _)
    np.testing.assert_allclose(np.concatenate([logits.data, last.data], axis=1), gemma3_hf[f"{model}/logits"][:, 5:],
                               rtol=0, atol=ATOL, err_msg="5 tokens, then 3 and 1 through the cache, vs one forward")


@pytest.mark.parametrize("model", MODELS)
def test_greedy_golden(gemma3_hf, model):
    gemma = Gemma3(config_of(gemma3_hf, model), weights_of(gemma3_hf, model))
    assert generate(gemma, gemma3_hf[f"{model}/greedy_prompt"], 8) == gemma3_hf[f"{model}/greedy"].tolist()


def test_config_and_validation(gemma3_hf):
    config, weights = config_of(gemma3_hf, "scaled"), weights_of(gemma3_hf, "scaled")
    gemma = Gemma3(config, weights)
    assert (gemma.n_layers, gemma.n_heads, gemma.n_kv_heads, gemma.head_dim, gemma.eps) == (2, 4, 2, 8, 1e-6)
    assert gemma.scale == 16**-0.5 and gemma.layer_types == ("sliding_attention", "full_attention")
    assert [window for _, window in gemma.settings] == [3, None]
    np.testing.assert_array_equal(gemma.settings[1][0].inv_freq,
                                  rope_spec(config, layer_type="full_attention").inv_freq)
    assert gemma.config == config and gemma.config is not config
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                "rms_norm_eps", "vocab_size", "query_pre_attn_scalar", "sliding_window", "layer_types"):
        with pytest.raises(ValueError):
            Gemma3({k: v for k, v in config.items() if k != key}, weights)
    for changes in ({"hidden_activation": "gelu"}, {"final_logit_softcapping": 30.0},
                    {"attn_logit_softcapping": 50.0}, {"tie_word_embeddings": False},
                    {"layer_types": ["sliding_attention"]}, {"layer_types": ["sliding_attention", "chunked"]}):
        with pytest.raises(ValueError):
            Gemma3(dict(config, **changes), weights)
    with pytest.raises(ValueError):
        Gemma3(config, {k: v for k, v in weights.items() if k != "model.layers.1.self_attn.k_norm.weight"})
    with pytest.raises(ValueError):
        gemma.forward(gemma3_hf["scaled/input_ids"][0], np.arange(9))
    with pytest.raises(ValueError):
        gemma.forward(gemma3_hf["scaled/input_ids"][:, :1], [9], past=[])
