"""L7.10 The Gemma 3 text model (Gemma 3 270M, 1B, ...) from a config and float32 weights.

    token ids [B, S] -> embedding * sqrt(d) -> L x decoder layer -> norm -> tied head -> logits [B, S, vocab]

    decoder layer (four norms, two residuals):
        h   = x + norm(attention(norm(x)))        post_attention_layernorm after input_layernorm
        out = h + norm(mlp(norm(h)))              post_feedforward_layernorm after pre_feedforward_layernorm
    attention: q, k, v heads projected; q and k RMS-normed over each head (QK-norm); then
        L7.7's sliding_attention with the layer type's RopeSpec and window, scale
        query_pre_attn_scalar ** -0.5; o_proj
    mlp (GeGLU): down(gelu_tanh(gate(y)) * up(y))
    norm(x, w) = x / sqrt(mean(x^2) + eps) * (1 + w)       Gemma stores w - 1

Chapter: course/chapters/L7.10-gemma3.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from tinyllm.autograd import functional as F
from tinyllm.autograd.nn import embedding, linear, rms_norm
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope_scaling import rope_spec
from tinyllm.modern.sliding_window import LAYER_TYPES, layer_settings, sliding_attention

LAYER_WEIGHTS = (
    "input_layernorm.weight",
    "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
    "self_attn.q_norm.weight", "self_attn.k_norm.weight",
    "post_attention_layernorm.weight", "pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight",
    "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
)
GELU_TANH_C = math.sqrt(2 / math.pi)  # gelu(x) ~ x/2 (1 + tanh(C (x + 0.044715 x^3)))


def gemma_rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * (1 + weight) over the last axis."""
    return rms_norm(x, weight + 1.0, eps)


def gelu_tanh(x: Tensor) -> Tensor:
    """GELU, tanh approximation (PyTorch's approximate="tanh"):
    x/2 (1 + tanh(u)), u = C (x + 0.044715 x^3).  Backward:
    d/dx = (1 + t)/2 + x/2 (1 - t^2) C (1 + 3 * 0.044715 x^2), t = tanh(u)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"gelu_tanh: x must be a Tensor, got {type(x).__name__}")
    a = x.data
    c = np.asarray(GELU_TANH_C, dtype=a.dtype)
    t = np.tanh(c * (a + np.asarray(0.044715, a.dtype) * a * a * a))

    def backward(g):
        return (g * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * c * (1 + 3 * 0.044715 * a * a)),)

    return Tensor.from_op(0.5 * a * (1 + t), (x,), backward, "gelu_tanh")


def mlp(x: Tensor, gate: Tensor, up: Tensor, down: Tensor) -> Tensor:
    """GeGLU: down(gelu_tanh(gate(x)) * up(x)).  x [..., d]; gate, up [m, d]; down [d, m]."""
    return linear(gelu_tanh(linear(x, gate)) * linear(x, up), down)


def _heads(t: Tensor, n: int, head_dim: int) -> Tensor:
    """[B, S, n * D] -> [B, n, S, D]."""
    batch, seq, _ = t.shape
    return F.transpose(F.reshape(t, (batch, seq, n, head_dim)), (0, 2, 1, 3))


def decoder_layer(x: Tensor, layer: Mapping[str, Tensor], rope, window, positions, n_heads: int, n_kv_heads: int,
                  head_dim: int, eps: float, scale: float, past=None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """One Gemma 3 block.  layer: the Tensors of LAYER_WEIGHTS by those names.
    Returns (out [B, S, d], the cache sliding_attention hands on)."""
    h = gemma_rms_norm(x, layer["input_layernorm.weight"], eps)
    q = gemma_rms_norm(_heads(linear(h, layer["self_attn.q_proj.weight"]), n_heads, head_dim),
                       layer["self_attn.q_norm.weight"], eps)                       # QK-norm, over each head
    k = gemma_rms_norm(_heads(linear(h, layer["self_attn.k_proj.weight"]), n_kv_heads, head_dim),
                       layer["self_attn.k_norm.weight"], eps)
    v = _heads(linear(h, layer["self_attn.v_proj.weight"]), n_kv_heads, head_dim)
    heads, cache = sliding_attention(q, k, v, rope, positions, window, past, scale)
    attended = linear(heads, layer["self_attn.o_proj.weight"])
    x = x + gemma_rms_norm(attended, layer["post_attention_layernorm.weight"], eps)
    y = mlp(gemma_rms_norm(x, layer["pre_feedforward_layernorm.weight"], eps), layer["mlp.gate_proj.weight"],
            layer["mlp.up_proj.weight"], layer["mlp.down_proj.weight"])
    return x + gemma_rms_norm(y, layer["post_feedforward_layernorm.weight"], eps), cache


NEEDED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
          "rms_norm_eps", "vocab_size", "query_pre_attn_scalar", "sliding_window", "layer_types")


class Gemma3:
    """A Gemma 3 text decoder (Gemma3ForCausalLM) from a config.json dict and its weights."""

    def __init__(self, config: Mapping, weights: Mapping[str, np.ndarray]):
        self.config = dict(config)
        missing = [key for key in NEEDED if self.config.get(key) is None]
        if missing:
            raise ValueError(f"Gemma3: config has no {', '.join(missing)}; a Gemma 3 config.json has "
                             + ", ".join(NEEDED))
        activation = self.config.get("hidden_activation", "gelu_pytorch_tanh")
        if activation != "gelu_pytorch_tanh":
            raise ValueError(f"Gemma3: hidden_activation {activation!r}; this model computes gelu_pytorch_tanh")
        for key in ("attn_logit_softcapping", "final_logit_softcapping"):
            if self.config.get(key) is not None:
                raise ValueError(f"Gemma3: {key} {self.config[key]!r}; Gemma 3 has none (Gemma 2 does)")
        if not self.config.get("tie_word_embeddings", True):
            raise ValueError("Gemma3: tie_word_embeddings is false; Gemma 3's head is its embedding matrix")
        self.n_layers = int(self.config["num_hidden_layers"])
        self.layer_types = tuple(self.config["layer_types"])
        if len(self.layer_types) != self.n_layers or not set(self.layer_types) <= set(LAYER_TYPES):
            raise ValueError(f"Gemma3: layer_types must give one of {', '.join(LAYER_TYPES)} for each of the "
                             f"{self.n_layers} layers, got {list(self.layer_types)}")
        self.n_heads = int(self.config["num_attention_heads"])
        self.n_kv_heads = int(self.config["num_key_value_heads"])
        self.head_dim = int(self.config["head_dim"])
        self.eps = float(self.config["rms_norm_eps"])
        self.scale = float(self.config["query_pre_attn_scalar"]) ** -0.5
        self.embed_scale = np.float32(float(self.config["hidden_size"]) ** 0.5)  # as HF: sqrt(d) in float32
        specs = {t: rope_spec(self.config, layer_type=t) for t in LAYER_TYPES}
        self.settings = [layer_settings(t, specs, int(self.config["sliding_window"])) for t in self.layer_types]

        names = ["model.embed_tokens.weight", "model.norm.weight",
                 *(f"model.layers.{i}.{part}" for i in range(self.n_layers) for part in LAYER_WEIGHTS)]
        absent = [name for name in names if name not in weights]
        if absent:
            raise ValueError(f"Gemma3: weights lack {len(absent)} tensors, e.g. {', '.join(absent[:3])}")
        tensor = {name: Tensor(np.asarray(weights[name])) for name in names}
        self.embed = tensor["model.embed_tokens.weight"]
        self.layers = [{part: tensor[f"model.layers.{i}.{part}"] for part in LAYER_WEIGHTS}
                       for i in range(self.n_layers)]
        self.norm = tensor["model.norm.weight"]

    def forward(self, token_ids, positions, past=None) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """token_ids [B, S] at consecutive positions [S], after the tokens of `past`
        (None, or what the previous call returned).  Returns (logits [B, S, vocab],
        one cache per layer: a sliding layer's holds its last sliding_window - 1 keys)."""
        token_ids = np.asarray(token_ids)
        if token_ids.ndim != 2:
            raise ValueError(f"Gemma3.forward: token_ids must be [B, S], got shape {token_ids.shape}")
        if past is not None and len(past) != self.n_layers:
            raise ValueError(f"Gemma3.forward: past must hold one (K, V) per layer ({self.n_layers}), got {len(past)}")
        x = embedding(self.embed, token_ids) * self.embed_scale      # [B, S, d]
        present = []
        for i, (layer, (rope, window)) in enumerate(zip(self.layers, self.settings)):
            x, cache = decoder_layer(x, layer, rope, window, positions, self.n_heads, self.n_kv_heads, self.head_dim,
                                     self.eps, self.scale, None if past is None else past[i])
            present.append(cache)
        return linear(gemma_rms_norm(x, self.norm, self.eps), self.embed), present
