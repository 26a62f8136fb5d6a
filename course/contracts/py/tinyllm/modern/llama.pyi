"""L7.9 The Llama model (SmolLM2, Llama 2 and 3, ...) from a config and float32 weights.

    token ids [B, S] -> embedding -> L x decoder layer -> RMSNorm -> lm_head -> logits [B, S, vocab]

    decoder layer (pre-norm, two residuals):
        h   = x + attention(rms_norm(x, input_layernorm))                  L7.5, RoPE from L7.4's rope_spec
        out = h + mlp(rms_norm(h, post_attention_layernorm))
    mlp (SwiGLU): down_proj(silu(gate_proj(y)) * up_proj(y))

Weights are a dict of numpy arrays under Hugging Face's names:

    model.embed_tokens.weight                      [vocab, d]
    model.layers.{i}.input_layernorm.weight        [d]
    model.layers.{i}.self_attn.q_proj.weight       [H * D, d]   (k_proj, v_proj: [KV * D, d])
    model.layers.{i}.self_attn.o_proj.weight       [d, H * D]
    model.layers.{i}.post_attention_layernorm.weight   [d]
    model.layers.{i}.mlp.gate_proj.weight          [m, d]       (up_proj: [m, d]; down_proj: [d, m])
    model.norm.weight                              [d]
    lm_head.weight                                 [vocab, d]   only when the embeddings are not tied

Build it from L0.3 (linear, silu, rms_norm, embedding), L7.5 (attention)
and L7.4 (rope_spec).  Chapter: course/chapters/L7.9-llama.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec

# The tensors of one decoder layer, under model.layers.{i}.
LAYER_WEIGHTS = (
    "input_layernorm.weight",
    "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
    "post_attention_layernorm.weight",
    "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
)


def mlp(x: Tensor, gate: Tensor, up: Tensor, down: Tensor) -> Tensor:
    """SwiGLU: linear(silu(linear(x, gate)) * linear(x, up), down).

    x [..., d]; gate, up: [m, d]; down: [d, m].  Returns [..., d].
    """
    ...


def decoder_layer(x: Tensor, layer: Mapping[str, Tensor], rope: RopeSpec, positions, n_heads: int,
                  n_kv_heads: int, eps: float, past=None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """One decoder layer: x + attention(rms_norm(x)), then + mlp(rms_norm(.)).

    x: Tensor [B, S, d]; layer: the nine Tensors of LAYER_WEIGHTS under those
    names; rope, positions, n_heads, n_kv_heads, past: as L7.5's attention
    takes them; eps: rms_norm's (both norms).
    Returns (out [B, S, d], (K, V)): the layer's output and what attention
    returned as its cache.
    """
    ...


class Llama:
    """A Llama decoder built from a config.json and its weights.

    Llama(config, weights, layout="half")
        config: a config.json as a dict.  Read: hidden_size,
            num_hidden_layers, num_attention_heads, rms_norm_eps, vocab_size
            (each needed), num_key_value_heads (absent or None: one per
            query head), tie_word_embeddings (default False), and the RoPE
            fields L7.4's rope_spec(config) reads.  Not changed.
        weights: name -> numpy float array, the names in the module
            docstring.  lm_head.weight is needed unless tie_word_embeddings;
            with it, the output projection IS the embedding matrix.  Other
            names are ignored.  Used as given (not copied).
        layout: the RoPE layout the q_proj and k_proj rows of `weights` are
            in: "half" (Hugging Face's) or "interleaved" (GGUF's, Meta's).
            rope_spec gives the half layout; the model's spec is it with
            this layout.

    Attributes: config (a copy of the dict), n_layers, n_heads, n_kv_heads,
    eps, rope (the RopeSpec every layer uses).

    Raises ValueError for a config missing a needed key, for weights missing
    a tensor (the message names some), and for a layout other than the two.
    """

    config: dict
    n_layers: int
    n_heads: int
    n_kv_heads: int
    eps: float
    rope: RopeSpec

    def __init__(self, config: Mapping, weights: Mapping[str, np.ndarray], layout: str = "half") -> None:
        ...

    def forward(self, token_ids, positions, past=None) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """The logits of token_ids at `positions`, after the tokens of `past`.

        token_ids: integers [B, S], each below vocab_size.
        positions: integers [S] (0 .. S - 1 for a whole sequence).
        past: None, or the list this method returned for the earlier tokens.
        Returns (logits [B, S, vocab] in the weights' dtype, present): present
        holds one (K, V) per layer, the cache including these tokens.

        Raises ValueError: token_ids not 2-D; past not one entry per layer.
        """
        ...
