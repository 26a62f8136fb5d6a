"""L7.9 The Llama model (SmolLM2, Llama 2 and 3, ...) from a config and float32 weights.

    token ids [B, S] -> embedding -> L x decoder layer -> RMSNorm -> lm_head -> logits [B, S, vocab]

    decoder layer:  h   = x + attention(rms_norm(x))                      (L7.5, RoPE from L7.4's rope_spec)
                    out = h + down(silu(gate(rms_norm(h))) * up(rms_norm(h)))   (SwiGLU)

Weights are a dict of arrays under Hugging Face's names (model.embed_tokens.weight,
model.layers.{i}.self_attn.q_proj.weight, ...); with tie_word_embeddings the
output projection is the embedding matrix itself.  Chapter:
course/chapters/L7.9-llama.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from tinyllm.autograd.nn import embedding, linear, rms_norm, silu
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.attention import attention
from tinyllm.modern.rope import RopeSpec
from tinyllm.modern.rope_scaling import rope_spec

# The tensors of one decoder layer, under model.layers.{i}.
LAYER_WEIGHTS = (
    "input_layernorm.weight",
    "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
    "post_attention_layernorm.weight",
    "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
)


def mlp(x: Tensor, gate: Tensor, up: Tensor, down: Tensor) -> Tensor:
    """SwiGLU: down(silu(gate(x)) * up(x)).  x [..., d]; gate, up [m, d]; down [d, m]."""
    return linear(silu(linear(x, gate)) * linear(x, up), down)


def decoder_layer(x: Tensor, layer: Mapping[str, Tensor], rope: RopeSpec, positions, n_heads: int,
                  n_kv_heads: int, eps: float, past=None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """One pre-norm block: x + attention(norm(x)), then + mlp(norm(.)).
    layer: the nine tensors of LAYER_WEIGHTS by those names.  Returns (out [B, S, d], (K, V))."""
    attended, cache = attention(rms_norm(x, layer["input_layernorm.weight"], eps),
                                layer["self_attn.q_proj.weight"], layer["self_attn.k_proj.weight"],
                                layer["self_attn.v_proj.weight"], layer["self_attn.o_proj.weight"],
                                rope, positions, n_heads, n_kv_heads, past)
    h = x + attended
    normed = rms_norm(h, layer["post_attention_layernorm.weight"], eps)
    return h + mlp(normed, layer["mlp.gate_proj.weight"], layer["mlp.up_proj.weight"],
                   layer["mlp.down_proj.weight"]), cache


class Llama:
    """A Llama decoder.

    config: a config.json as a dict: hidden_size, num_hidden_layers,
        num_attention_heads, num_key_value_heads (default: num_attention_heads),
        rms_norm_eps, vocab_size, tie_word_embeddings (default False), and the
        RoPE fields L7.4's rope_spec reads.
    weights: name -> float array, Hugging Face's names; lm_head.weight only
        when the embeddings are not tied.
    layout: the RoPE layout of the q_proj/k_proj rows in `weights`: "half"
        (Hugging Face's) or "interleaved" (GGUF's, Meta's).
    """

    def __init__(self, config: Mapping, weights: Mapping[str, np.ndarray], layout: str = "half"):
        self.config = dict(config)
        for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "rms_norm_eps", "vocab_size"):
            if key not in self.config:
                raise ValueError(f"Llama: config has no {key!r}; a Llama config.json has hidden_size, "
                                 "num_hidden_layers, num_attention_heads, rms_norm_eps and vocab_size")
        self.n_layers = int(self.config["num_hidden_layers"])
        self.n_heads = int(self.config["num_attention_heads"])
        self.n_kv_heads = int(self.config.get("num_key_value_heads") or self.n_heads)
        self.eps = float(self.config["rms_norm_eps"])
        self.rope = dataclasses.replace(rope_spec(self.config), layout=layout)  # RopeSpec checks the layout

        names = ["model.embed_tokens.weight", "model.norm.weight",
                 *(f"model.layers.{i}.{part}" for i in range(self.n_layers) for part in LAYER_WEIGHTS)]
        tied = bool(self.config.get("tie_word_embeddings", False))
        if not tied:
            names.append("lm_head.weight")
        missing = [name for name in names if name not in weights]
        if missing:
            raise ValueError(f"Llama: weights lack {len(missing)} tensors, e.g. {', '.join(missing[:3])}"
                             + ("" if tied else " (tie_word_embeddings is false, so lm_head.weight is needed)"))
        tensor = {name: Tensor(np.asarray(weights[name])) for name in names}
        self.embed = tensor["model.embed_tokens.weight"]
        self.layers = [{part: tensor[f"model.layers.{i}.{part}"] for part in LAYER_WEIGHTS}
                       for i in range(self.n_layers)]
        self.norm = tensor["model.norm.weight"]
        self.lm_head = self.embed if tied else tensor["lm_head.weight"]

    def forward(self, token_ids, positions, past=None) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """token_ids [B, S] (ints below vocab_size) at `positions` [S], after
        the tokens cached in `past` (None, or what the previous call returned).
        Returns (logits [B, S, vocab], one (K, V) per layer)."""
        token_ids = np.asarray(token_ids)
        if token_ids.ndim != 2:
            raise ValueError(f"Llama.forward: token_ids must be [B, S], got shape {token_ids.shape}")
        if past is not None and len(past) != self.n_layers:
            raise ValueError(f"Llama.forward: past must hold one (K, V) per layer ({self.n_layers}), "
                             f"got {len(past)}")
        x = embedding(self.embed, token_ids)  # [B, S, d]
        present = []
        for i, layer in enumerate(self.layers):
            x, cache = decoder_layer(x, layer, self.rope, positions, n_heads=self.n_heads,
                                     n_kv_heads=self.n_kv_heads, eps=self.eps,
                                     past=None if past is None else past[i])
            present.append(cache)
        return linear(rms_norm(x, self.norm, self.eps), self.lm_head), present
