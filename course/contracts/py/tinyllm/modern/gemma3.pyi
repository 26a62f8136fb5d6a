"""L7.10 The Gemma 3 text model (Gemma 3 270M, 1B, ...) from a config and float32 weights.

    token ids [B, S] -> embedding * sqrt(d) -> L x decoder layer -> norm -> tied head -> logits [B, S, vocab]

    decoder layer (four norms, two residuals):
        h   = x + norm(attention(norm(x)))          input_layernorm, then post_attention_layernorm
        out = h + norm(mlp(norm(h)))                pre_feedforward_layernorm, then post_feedforward_layernorm
    attention: q, k, v = the projections of the normed x, split into heads; q and k
        each RMS-normed over their head (QK-norm: self_attn.q_norm, self_attn.k_norm);
        then L7.7's sliding_attention with the layer type's RopeSpec and window
        (L7.7's layer_settings) and scale query_pre_attn_scalar ** -0.5; then o_proj.
    mlp (GeGLU): down_proj(gelu_tanh(gate_proj(y)) * up_proj(y))
    every norm: norm(x, w) = x / sqrt(mean(x^2) + eps) * (1 + w) over the last axis
        (Gemma's weights hold w, not 1 + w)

Weights are a dict of numpy arrays under Hugging Face's names:

    model.embed_tokens.weight                           [vocab, d]   also the output head (tied)
    model.layers.{i}.input_layernorm.weight             [d]
    model.layers.{i}.self_attn.q_proj.weight            [H * D, d]   (k_proj, v_proj: [KV * D, d])
    model.layers.{i}.self_attn.o_proj.weight            [d, H * D]
    model.layers.{i}.self_attn.q_norm.weight            [D]          (k_norm: [D])
    model.layers.{i}.post_attention_layernorm.weight    [d]
    model.layers.{i}.pre_feedforward_layernorm.weight   [d]
    model.layers.{i}.post_feedforward_layernorm.weight  [d]
    model.layers.{i}.mlp.gate_proj.weight               [m, d]       (up_proj: [m, d]; down_proj: [d, m])
    model.norm.weight                                   [d]

Build it from L0.3 (linear, rms_norm, embedding), L7.7 (sliding_attention,
layer_settings) and L7.4 (rope_spec with layer_type).  Chapter:
course/chapters/L7.10-gemma3.md.
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
    "self_attn.q_norm.weight", "self_attn.k_norm.weight",
    "post_attention_layernorm.weight", "pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight",
    "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
)


def gemma_rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """Gemma's RMSNorm: x / sqrt(mean(x^2) + eps) * (1 + weight), over the last axis.

    x [..., d], weight [d]; the same shape and dtype as x (1 + weight in
    weight's dtype, as transformers adds 1.0 in float32).  Gradients reach
    x and weight.
    """
    ...


def gelu_tanh(x: Tensor) -> Tensor:
    """GELU with the tanh approximation (PyTorch's gelu(approximate="tanh"),
    transformers' "gelu_pytorch_tanh"):

        gelu_tanh(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))

    elementwise, any shape, x's dtype, with its backward.  Raises TypeError
    when x is not a Tensor.
    """
    ...


def mlp(x: Tensor, gate: Tensor, up: Tensor, down: Tensor) -> Tensor:
    """GeGLU: linear(gelu_tanh(linear(x, gate)) * linear(x, up), down).

    x [..., d]; gate, up: [m, d]; down: [d, m].  Returns [..., d].
    """
    ...


def decoder_layer(x: Tensor, layer: Mapping[str, Tensor], rope: RopeSpec, window, positions, n_heads: int,
                  n_kv_heads: int, head_dim: int, eps: float, scale: float,
                  past=None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """One Gemma 3 decoder layer (the module docstring's picture).

    x: Tensor [B, S, d]; layer: the thirteen Tensors of LAYER_WEIGHTS under
    those names; rope, window: the layer's RopeSpec and window (L7.7's
    layer_settings); positions, past: as L7.7's sliding_attention takes them;
    n_heads, n_kv_heads, head_dim: H, KV and D; eps: every norm's; scale:
    the scores' factor, query_pre_attn_scalar ** -0.5.
    Returns (out [B, S, d], the cache sliding_attention handed on).
    """
    ...


class Gemma3:
    """A Gemma 3 text decoder (transformers' Gemma3ForCausalLM) from a
    config.json and its weights.

    Gemma3(config, weights)
        config: a config.json as a dict, as transformers 5.19.0 writes it.
            Read: hidden_size, num_hidden_layers, num_attention_heads,
            num_key_value_heads, head_dim, rms_norm_eps, vocab_size,
            query_pre_attn_scalar, sliding_window, layer_types (each needed,
            not None), rope_parameters with one block per layer type (L7.4's
            rope_spec(config, layer_type=...)), hidden_activation (absent:
            "gelu_pytorch_tanh", the only one), tie_word_embeddings (absent:
            true, the only value), attn_logit_softcapping and
            final_logit_softcapping (absent or None: Gemma 3 has none).
            Not changed.
        weights: name -> float32 numpy array, the names in the module
            docstring; others are ignored.  Used as given (not copied).

    Attributes: config (a copy), n_layers, n_heads, n_kv_heads, head_dim,
    eps, scale (query_pre_attn_scalar ** -0.5), layer_types (a tuple), and
    settings: one (RopeSpec, window) per layer, from layer_settings.

    Raises ValueError: a needed config key missing or None; another
    hidden_activation; softcapping given; tie_word_embeddings false;
    layer_types not one known type per layer; weights missing a tensor (the
    message names some); and what rope_spec and layer_settings raise.
    """

    config: dict
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    eps: float
    scale: float
    layer_types: tuple
    settings: list

    def __init__(self, config: Mapping, weights: Mapping[str, np.ndarray]) -> None:
        ...

    def forward(self, token_ids, positions, past=None) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """The logits of token_ids at `positions`, after the tokens of `past`.

        token_ids: integers [B, S], each below vocab_size.
        positions: S consecutive integers (0 .. S - 1 for a whole sequence;
            after a cache, they go on from where the last call stopped).
        past: None, or the list this method returned for the earlier tokens.
        Returns (logits [B, S, vocab] float32, present): present holds each
        layer's cache as sliding_attention hands it on (a sliding layer's
        only its last sliding_window - 1 keys and values).  The embeddings
        are scaled by sqrt(hidden_size), rounded to float32 first as
        transformers does.

        Raises ValueError: token_ids not 2-D; past not one entry per layer.
        """
        ...
